/**
 * An open-loop produce load (a separate process from the broker): N connections, each sending one
 * PRODUCE of one record at random times (exponential gaps, mean `meanGapMs` per connection), on its
 * own clock rather than when its last answer came, as independent producers do. Every answer is
 * checked (error code 0, else exit 1) and its latency from send taken.
 *
 * Usage: bun produce-open-loop.ts <port> <topic> <recordBytes> <connections> <seconds> <meanGapMs>
 * Prints one JSON line: records, recordsPerSecond, and the latency p50/p99/p99.9/max in ms.
 * A request is sent at its time even while earlier ones wait (several may be in flight).
 */
import { BooblikClient } from "../../src/client/client.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { PEER_VALUE } from "../lib/peer-tools.ts";

const [portText, topic, recordBytesText, connectionsText, secondsText, meanGapText] = process.argv.slice(2);
const port = Number(portText);
const recordBytes = Number(recordBytesText);
const connectionCount = Number(connectionsText);
const seconds = Number(secondsText);
const meanGapMs = Number(meanGapText);
if (![port, recordBytes, connectionCount, seconds, meanGapMs].every((n) => n > 0) || !topic) {
  console.error(
    "usage: bun produce-open-loop.ts <port> <topic> <recordBytes> <connections> <seconds> <meanGapMs>",
  );
  process.exit(2);
}
const value = new Uint8Array(recordBytes);
for (let i = 0; i < recordBytes; i++) value[i] = PEER_VALUE[i % PEER_VALUE.length]!;
const records = encodeBatch([{ key: null, value, timestamp: Date.now() }]);
const clients = await Promise.all(
  Array.from({ length: connectionCount }, () => BooblikClient.connect({ host: "127.0.0.1", port })),
);
const latenciesMs: number[] = [];
const startMs = performance.now();
const endMs = startMs + seconds * 1000;
let failed: unknown;

async function producer(client: BooblikClient): Promise<void> {
  const inFlight: Promise<void>[] = [];
  let dueMs = performance.now();
  for (;;) {
    dueMs += -Math.log(1 - Math.random()) * meanGapMs;
    if (dueMs >= endMs) break;
    const waitMs = dueMs - performance.now();
    if (waitMs > 0) await Bun.sleep(waitMs);
    const sentMs = performance.now();
    inFlight.push(
      client.produce(topic!, 0, records).then(
        () => {
          latenciesMs.push(performance.now() - sentMs);
        },
        (error: unknown) => {
          failed = error;
        },
      ),
    );
  }
  await Promise.all(inFlight);
}

await Promise.all(clients.map(producer));
for (const client of clients) client.close();
if (failed !== undefined) {
  console.error("produce failed:", failed);
  process.exit(1);
}
latenciesMs.sort((a, b) => a - b);
const at = (q: number) =>
  latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))] ?? Number.NaN;
console.log(
  JSON.stringify({
    records: latenciesMs.length,
    recordsPerSecond: latenciesMs.length / seconds,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    p999Ms: at(0.999),
    maxMs: latenciesMs.at(-1) ?? Number.NaN,
  }),
);
