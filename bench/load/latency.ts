/**
 * End-to-end latency at a fixed rate: one connection produces `rate` records/s in batches every
 * millisecond (each record carries its intended send time, so a stalled sender does not hide
 * latency: no coordinated omission); another connection long-polls FETCH and records, per record,
 * the time from its intended send to its arrival at the consumer. Same machine, CLOCK_MONOTONIC.
 * Usage: bun latency.ts <port> <topic> <rate> <seconds> <recordBytes>
 * Prints one JSON line with p50/p99/p999/max in milliseconds and the achieved rate.
 */
import { BrokerConnection } from "../../src/client/connection.ts";
import { checkFetchedEntries, forEachFetchedRecord } from "../../src/client/fetched.ts";
import {
  decodeFetchResponse,
  decodeProduceResponse,
  encodeFetchRequest,
  encodeProduceRequest,
} from "../../src/protocol/messages.ts";
import { RecordBatchReader, RecordBatchWriter } from "../../src/record/batch.ts";

const [portText, topic, rateText, secondsText, recordBytesText] = process.argv.slice(2);
const port = Number(portText);
const rate = Number(rateText);
const seconds = Number(secondsText);
const recordBytes = Math.max(16, Number(recordBytesText ?? 100));
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
/** Half a MiB of records: well below the default batch limit of 1 MiB. */
const MAX_BATCH_RECORDS = Math.max(1, Math.floor((512 * 1024) / (recordBytes + 16)));

const producer = await BrokerConnection.connect({ host: "127.0.0.1", port, maxInFlight: 4096 });
const consumer = await BrokerConnection.connect({ host: "127.0.0.1", port });
const total = rate * seconds;
const perMs = rate / 1000;
const latenciesUs: number[] = [];
const writer = new RecordBatchWriter(1024 * 1024);
const reader = new RecordBatchReader();
const payload = new Uint8Array(recordBytes);
const view = new DataView(payload.buffer);

let consumed = 0;
const consuming = (async () => {
  let offset = 0;
  while (consumed < total) {
    const response = await consumer.send(
      (writer, id) =>
        encodeFetchRequest(writer, id, {
          topic: topic!,
          partition: 0,
          offset,
          maxBytes: 1024 * 1024,
          maxWaitMs: 1000,
        }),
      (reader) => decodeFetchResponse(reader),
    );
    const arrivedUs = nowUs();
    const checked = checkFetchedEntries(response.records, offset);
    forEachFetchedRecord(response.records, checked.batchBounds, offset, reader, (record) => {
      const sent = new DataView(
        record.bytes.buffer,
        record.bytes.byteOffset + record.valueStart,
        8,
      ).getFloat64(0, false);
      latenciesUs.push(arrivedUs - sent);
    });
    consumed += checked.nextFetchOffset - offset;
    offset = checked.nextFetchOffset;
  }
})();

const startUs = nowUs();
let sent = 0;
const acks: Promise<unknown>[] = [];
while (sent < total) {
  const dueUs = startUs + (sent / perMs) * 1000;
  const now = nowUs();
  if (now < dueUs) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.floor((dueUs - now) / 1000))));
    continue;
  }
  // Everything due by now goes in one batch (at most MAX_BATCH_RECORDS, so that a stalled sender's
  // backlog stays within the topic's 1 MiB batch limit); each record carries the time it was due.
  writer.begin();
  const timestamp = Date.now();
  let inBatch = 0;
  while (sent < total && startUs + (sent / perMs) * 1000 <= now && inBatch++ < MAX_BATCH_RECORDS) {
    view.setFloat64(0, startUs + (sent / perMs) * 1000, false);
    writer.add({ key: null, value: payload, timestamp });
    sent++;
  }
  const batch = writer.finish().slice();
  acks.push(
    producer.send(
      (writer, id) => encodeProduceRequest(writer, id, { topic: topic!, partition: 0, records: batch }),
      decodeProduceResponse,
    ),
  );
}
await Promise.all(acks);
await consuming;
const elapsedS = (nowUs() - startUs) / 1e6;
latenciesUs.sort((a, b) => a - b);
const at = (q: number) =>
  latenciesUs[Math.min(latenciesUs.length - 1, Math.floor(q * latenciesUs.length))]! / 1000;
console.log(
  JSON.stringify({
    records: latenciesUs.length,
    achievedRate: total / elapsedS,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    p999Ms: at(0.999),
    maxMs: latenciesUs.at(-1)! / 1000,
  }),
);
producer.close();
consumer.close();
process.exit(0);
