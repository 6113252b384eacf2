/**
 * Consumer load through the client library from offset 0 to `until`: every entry's CRCs checked and
 * every record decoded into a ConsumedRecord (offset, timestamp, key, value, headers). Mode
 * `records` (default): `for await (const record of consumer)`; mode `batches`:
 * `consumer.batches()` with `forEachConsumedRecord` per fetch. Bytes are value bytes.
 * Usage: bun client-consume.ts <port> <topic> <until> [records|batches]
 */
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer, forEachConsumedRecord } from "../../src/client/consumer.ts";
import { reportThroughput } from "../lib/load-result.ts";

const [portText, topic, untilText, mode] = process.argv.slice(2);
const until = Number(untilText);
const client = await BooblikClient.connect({ host: "127.0.0.1", port: Number(portText) });
const consumer = new Consumer(client, { topic: topic!, from: 0, stopAtEnd: true });
let records = 0;
let bytes = 0;
const start = performance.now();
if (mode === "batches") {
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
reportThroughput(records, bytes, elapsed);
