/**
 * Raw produce load generator (a separate process from the broker): pipelined PRODUCE requests of
 * pre-framed batches over N connections, `inflight` requests outstanding per connection.
 * Usage: bun produce.ts <port> <topic> <recordBytes> <batchRecords> <connections> <seconds> [inflight]
 * Prints one JSON line: records, seconds, recordsPerSecond, megabytesPerSecond.
 */
import { BrokerConnection } from "../../src/client/connection.ts";
import { RECORD_HEADER_BYTES } from "../../src/domain/limits.ts";
import { decodeProduceResponse, encodeProduceRequest } from "../../src/protocol/messages.ts";
import { RecordBatchBuilder } from "../../src/record/batch-builder.ts";
import { reportThroughput } from "../lib/load-result.ts";

const [portText, topic, recordBytesText, batchText, connectionsText, secondsText, inflightText] =
  process.argv.slice(2);
const port = Number(portText);
const recordBytes = Number(recordBytesText);
const batchRecords = Number(batchText);
const connectionCount = Number(connectionsText);
const seconds = Number(secondsText);
const inflight = Number(inflightText ?? 8);

const batches: Uint8Array[] = [];
for (let b = 0; b < 8; b++) {
  const builder = new RecordBatchBuilder(batchRecords * (recordBytes + RECORD_HEADER_BYTES));
  for (let r = 0; r < batchRecords; r++) builder.add(crypto.getRandomValues(new Uint8Array(recordBytes)));
  batches.push(builder.bytes().slice());
}

const connections = await Promise.all(
  Array.from({ length: connectionCount }, () =>
    BrokerConnection.connect({ host: "127.0.0.1", port, maxInFlight: inflight }),
  ),
);
let records = 0;
const start = performance.now();
const end = start + seconds * 1000;
await Promise.all(
  connections.flatMap((connection) =>
    Array.from({ length: inflight }, async (_, lane) => {
      let i = lane;
      while (performance.now() < end) {
        const records_ = batches[i++ & 7]!;
        await connection.send(
          (writer, id) =>
            encodeProduceRequest(writer, id, { topic: topic!, partition: 0, records: records_ }),
          decodeProduceResponse,
        );
        records += batchRecords;
      }
    }),
  ),
);
const elapsed = (performance.now() - start) / 1000;
for (const connection of connections) connection.close();
reportThroughput(records, records * (recordBytes + RECORD_HEADER_BYTES), elapsed);
