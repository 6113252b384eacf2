/**
 * The console's own work, measured in-process where a shared machine's noise is small: the time of
 * one sampler tick (a sample, the topic listing with rates, serialization, a write to each stream)
 * with N open streams over an embedded broker of T topics × P partitions. A tick runs once a second
 * whatever the number of tabs, so its time per second is its share of one core. With --groups=G,
 * G consumer groups have committed every partition of every topic: each tick then also sums every
 * group's lag for the lag histories (whatever the view), and view=group streams show group-0.
 *
 * usage: bun bench/console-tick.bench.ts [--streams=10] [--view=topics] [--topics=10] [--partitions=4] [--groups=0] [--ticks=2000]
 * (BOOBLIK_BENCH_DIR: a directory on a real disk; tmpfs is refused)
 */
import { Broker } from "../src/broker/broker.ts";
import { ConsoleSampler, type StreamView } from "../src/console/sampler.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/console-tick.bench.ts [--streams=10] [--view=topics] [--topics=10] [--partitions=4] [--groups=0] [--ticks=2000]",
  options: { streams: "10", view: "topics", topics: "10", partitions: "4", groups: "0", ticks: "2000" },
});
const groupCount = args.number("groups");
const streamCount = args.number("streams");
const view = args.text("view") as StreamView;
const topicCount = args.number("topics");
const partitions = args.number("partitions");
const ticks = args.number("ticks");

const directory = measurementDirectory("console-tick");
console.log(describeMachine(directory.fileSystem));
const broker = Broker.open({ dataDir: directory.path });
for (let t = 0; t < topicCount; t++) broker.createTopic(`topic-${t}`, { partitions, durability: "append" });
for (let g = 0; g < groupCount; g++) {
  const entries = [];
  for (let t = 0; t < topicCount; t++)
    for (let p = 0; p < partitions; p++)
      entries.push({ topic: `topic-${t}`, partition: p, offset: 0, leaderEpoch: -1, metadata: null });
  for (let i = 0; i < entries.length; i += 256)
    await broker.offsets.commit(`group-${g}`, entries.slice(i, i + 256));
}
const server = {
  counters: { produceRecords: 0, produceBytes: 0, fetchRecords: 0, fetchBytes: 0, requests: 0, errors: 0 },
  connectionCount: 3,
  connectionsPerAddress: new Map([["127.0.0.1", 3]]),
};
// A clock one second ahead per tick: each tick lists the topics as a real one does (a listing is
// reused within half a second).
let clockMs = 0;
const sampler = new ConsoleSampler({ broker, server, ready: true }, () => clockMs);
const abort = new AbortController();
let received = 0;
for (let i = 0; i < streamCount; i++) {
  const stream = sampler.openStream(view, abort.signal, view === "group" ? "group-0" : "")!;
  void (async () => {
    for await (const chunk of stream) received += chunk.byteLength;
  })();
}
const durationsUs: number[] = [];
for (let i = 0; i < ticks; i++) {
  server.counters.produceRecords += 1000;
  clockMs += 1000;
  const start = performance.now();
  sampler.tick();
  durationsUs.push((performance.now() - start) * 1000);
  // Let the readers drain, as the second between two ticks does.
  await Bun.sleep(0);
}
if (sampler.openStreams !== streamCount) {
  console.error(
    `only ${sampler.openStreams} of ${streamCount} streams stayed open (readers too slow): no result`,
  );
  process.exit(1);
}
abort.abort();
sampler.stop();
await broker.close();
directory.remove();
durationsUs.sort((a, b) => a - b);
const at = (q: number) => durationsUs[Math.min(durationsUs.length - 1, Math.floor(q * durationsUs.length))]!;
console.log(
  `${streamCount} streams on view ${view}, ${topicCount} topics × ${partitions} partitions, ${groupCount} groups committing every partition, ${ticks} ticks: ` +
    `median ${at(0.5).toFixed(1)} µs, p99 ${at(0.99).toFixed(1)} µs, max ${at(1).toFixed(1)} µs per tick ` +
    `(one tick a second: ${(at(0.5) / 1e4).toFixed(4)} % of one core at the median); ${(received / ticks).toFixed(0)} bytes written per tick`,
);
