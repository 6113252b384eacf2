/**
 * Raw produce load generator (a separate process from the broker): pipelined PRODUCE requests of
 * pre-encoded RecordBatch v2 (null keys, random values of `recordBytes`, `batchRecords` per batch)
 * over N connections, `inflight` requests outstanding per connection, each sent as the client library
 * sends it (the frame header, then the batch without a copy). Bytes are the batches' bytes.
 * Usage: bun produce.ts <port> <topic> <recordBytes> <batchRecords> <connections> <seconds> [inflight]
 * Prints one JSON line: records, seconds, recordsPerSecond, megabytesPerSecond.
 */
import { BrokerConnection } from "../../src/client/connection.ts";
import { decodeProduceResponse, encodeProduceRequestHeader } from "../../src/protocol/messages.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { cpuSecondsSince, reportThroughput } from "../lib/load-result.ts";

const [portText, topic, recordBytesText, batchText, connectionsText, secondsText, inflightText] =
  process.argv.slice(2);
const port = Number(portText);
const recordBytes = Number(recordBytesText);
const batchRecords = Number(batchText);
const connectionCount = Number(connectionsText);
const seconds = Number(secondsText);
const inflight = Number(inflightText ?? 8);

const batches: Uint8Array[] = [];
const now = Date.now();
for (let b = 0; b < 8; b++) {
  const records = Array.from({ length: batchRecords }, () => ({
    key: null,
    value: crypto.getRandomValues(new Uint8Array(recordBytes)),
    timestamp: now,
  }));
  batches.push(encodeBatch(records));
}
const batchBytes = batches[0]!.length;

const connections = await Promise.all(
  Array.from({ length: connectionCount }, () =>
    BrokerConnection.connect({ host: "127.0.0.1", port, maxInFlight: inflight }),
  ),
);
let records = 0;
const cpuStart = process.cpuUsage();
const start = performance.now();
const end = start + seconds * 1000;
await Promise.all(
  connections.flatMap((connection) =>
    Array.from({ length: inflight }, async (_, lane) => {
      let i = lane;
      while (performance.now() < end) {
        const records_ = batches[i++ & 7]!;
        // The frame header, then the batch as it is (the client library's path: no copy of the
        // batch into the request frame).
        await connection.send(
          (writer, id) =>
            encodeProduceRequestHeader(writer, id, {
              topic: topic!,
              partition: 0,
              recordsBytes: records_.length,
            }),
          decodeProduceResponse,
          undefined,
          records_,
        );
        records += batchRecords;
      }
    }),
  ),
);
const elapsed = (performance.now() - start) / 1000;
for (const connection of connections) connection.close();
reportThroughput(records, (records / batchRecords) * batchBytes, elapsed, cpuSecondsSince(cpuStart));
