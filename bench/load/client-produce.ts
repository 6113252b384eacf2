/**
 * Producer load through the client library (the application's view): one Producer with the given
 * batching, fed record by record. Mode `write`: `write()` and `await drained()` when it returns
 * false; mode `accept`: `await accept()` per record.
 * Usage: bun client-produce.ts <port> <topic> <recordBytes> <seconds> <write|accept> <batchBytes> <maxInFlightBatches>
 * Records are bare values (no key, no header), timestamped by the producer. Bytes are value bytes.
 * Prints one JSON line: records, seconds, recordsPerSecond, megabytesPerSecond.
 */
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { cpuSecondsSince, reportThroughput } from "../lib/load-result.ts";

const [portText, topic, recordBytesText, secondsText, mode, batchBytesText, inFlightText] =
  process.argv.slice(2);
const recordBytes = Number(recordBytesText);
const client = await BooblikClient.connect({ host: "127.0.0.1", port: Number(portText) });
const producer = new Producer(client, {
  batchBytes: Number(batchBytesText),
  maxInFlightBatches: Number(inFlightText),
});
const values = Array.from({ length: 64 }, () => crypto.getRandomValues(new Uint8Array(recordBytes)));
let records = 0;
const cpuStart = process.cpuUsage();
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
reportThroughput(records, records * recordBytes, elapsed, cpuSecondsSince(cpuStart));
