/**
 * Producer load through the client library (the application's view): one Producer with default
 * batching, fed record by record. Mode `write` (default): `write()` and `await drained()` when it
 * returns false; mode `accept`: `await accept()` per record.
 * Usage: bun client-produce.ts <port> <topic> <recordBytes> <seconds> [write|accept]
 * Prints one JSON line: records, seconds, recordsPerSecond, megabytesPerSecond.
 */
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";

const [portText, topic, recordBytesText, secondsText, mode] = process.argv.slice(2);
const recordBytes = Number(recordBytesText);
const client = await BooblikClient.connect({ host: "127.0.0.1", port: Number(portText) });
const producer = new Producer(client, {
  ...(process.env.BATCH_BYTES ? { batchBytes: Number(process.env.BATCH_BYTES) } : {}),
  ...(process.env.IN_FLIGHT ? { maxInFlightBatches: Number(process.env.IN_FLIGHT) } : {}),
});
const values = Array.from({ length: 64 }, () => crypto.getRandomValues(new Uint8Array(recordBytes)));
let records = 0;
const start = performance.now();
const end = start + Number(secondsText) * 1000;
while (performance.now() < end) {
  if (mode === "accept") {
    for (let i = 0; i < 256; i++) {
      await producer.accept(topic!, values[i & 63]!, { partition: 0 });
      records++;
    }
  } else {
    for (let i = 0; i < 256; i++) {
      if (!producer.write(topic!, values[i & 63]!, { partition: 0 })) await producer.drained();
      records++;
    }
  }
}
await producer.flush();
const elapsed = (performance.now() - start) / 1000;
await producer.close();
client.close();
console.log(
  JSON.stringify({
    records,
    seconds: elapsed,
    recordsPerSecond: records / elapsed,
    megabytesPerSecond: (records * (recordBytes + 8)) / elapsed / 1e6,
  }),
);
process.exit(0);
