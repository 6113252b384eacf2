/**
 * Consumer load through the client library from offset 0 to `until`: every entry's CRCs checked and
 * every record decoded (walked by the shared RecordBatchReader: lengths, offset, timestamp, key and
 * value positions). Mode `records` (default): `for await (const record of consumer)`, a
 * ConsumedRecord object and a value view per record; mode `objects`: `consumer.batches()` with
 * `forEachConsumedRecord` (the same objects, no promise per record); mode `batches`:
 * `consumer.batches()` with `forEachFetchedRecord`, the reader's reused view per record (no
 * allocation per record); mode `iterate`: `for await (const batch of consumer.batches())` and
 * `for (const record of batch)`, the same objects from the batch's synchronous iterator (one promise
 * per fetch). Bytes are value bytes.
 * Usage: bun client-consume.ts <port> <topic> <until> [records|objects|batches|iterate]
 */
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer, forEachConsumedRecord } from "../../src/client/consumer.ts";
import { forEachFetchedRecord } from "../../src/client/fetched.ts";
import { RecordBatchReader } from "../../src/record/batch.ts";
import { cpuSecondsSince, reportThroughput } from "../lib/load-result.ts";

const [portText, topic, untilText, mode] = process.argv.slice(2);
const until = Number(untilText);
const client = await BooblikClient.connect({ host: "127.0.0.1", port: Number(portText) });
const consumer = new Consumer(client, { topic: topic!, from: 0, stopAtEnd: true });
let records = 0;
let bytes = 0;
const cpuStart = process.cpuUsage();
const start = performance.now();
if (mode === "batches") {
  const reader = new RecordBatchReader();
  for await (const batch of consumer.batches()) {
    records += forEachFetchedRecord(batch.records, batch.batchBounds, batch.fromOffset, reader, (view) => {
      if (view.valueLength > 0) bytes += view.valueLength;
    });
    if (records >= until) break;
  }
} else if (mode === "iterate") {
  for await (const batch of consumer.batches()) {
    for (const record of batch) {
      records++;
      bytes += record.value?.length ?? 0;
    }
    if (records >= until) break;
  }
} else if (mode === "objects") {
  for await (const batch of consumer.batches()) {
    forEachConsumedRecord(topic!, 0, batch, (record) => {
      records++;
      bytes += record.value?.length ?? 0;
    });
    if (records >= until) break;
  }
} else {
  for await (const record of consumer) {
    records++;
    bytes += record.value?.length ?? 0;
    if (records >= until) break;
  }
}
const elapsed = (performance.now() - start) / 1000;
client.close();
reportThroughput(records, bytes, elapsed, cpuSecondsSince(cpuStart));
