/**
 * What the web console costs the broker: produce throughput with 0 and with N open console streams
 * (each an open page: the browser keeps one server-sent-event stream per tab). Issue 16 asks for
 * less than 2 % drop with 10.
 *
 * One broker process (console on, metrics listener on 127.0.0.1), one topic of one partition; the
 * load is bench/load/produce.ts in its own process (pipelined PRODUCEs of pre-encoded RecordBatch
 * v2); the streams are read by this process, which does nothing else meanwhile. Variants are
 * interleaved (the order alternates round by round) and repeated; prints the median and range.
 *
 * usage: bun bench/console.bench.ts [--streams=10] [--view=topics] [--rounds=5] [--seconds=5]
 *        [--durability=append] [--record-bytes=100] [--batch-records=100] [--connections=2] [--inflight=8]
 * (BOOBLIK_BENCH_DIR: a directory on a real disk; tmpfs is refused)
 */
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, measurementDirectory } from "./lib/environment.ts";
import type { ThroughputResult } from "./lib/load-result.ts";
import { brokerCpuSeconds, freePort, runLoad, startBrokerProcess } from "./lib/processes.ts";
import { median } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/console.bench.ts [--streams=10] [--view=topics] [--rounds=5] [--seconds=5] [--durability=append] [--record-bytes=100] [--batch-records=100] [--connections=2] [--inflight=8]",
  options: {
    streams: "10",
    view: "topics",
    rounds: "5",
    seconds: "5",
    durability: "append",
    "record-bytes": "100",
    "batch-records": "100",
    connections: "2",
    inflight: "8",
  },
});
const streamCount = args.number("streams");
const view = args.text("view");
const rounds = args.number("rounds");
const seconds = args.number("seconds");
const durability = args.text("durability");
const recordBytes = args.number("record-bytes");
const batchRecords = args.number("batch-records");
const connections = args.number("connections");
const inflight = args.number("inflight");

const directory = measurementDirectory("console");
console.log(describeMachine(directory.fileSystem));
console.log(
  `produce: durability ${durability}, records of ${recordBytes} B, ${batchRecords} records a batch, ` +
    `${connections} connections × ${inflight} in flight, ${seconds} s a run; console streams: 0 vs ${streamCount} (view ${view}); ${rounds} rounds, interleaved`,
);

const metricsPort = freePort();
const broker = await startBrokerProcess(directory.path, [
  "--metrics-port",
  String(metricsPort),
  "--durability",
  durability,
]);
const base = `http://127.0.0.1:${metricsPort}/console/api`;

const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
await client.createTopic("console-bench", { partitions: 1 });
client.close();

async function openStreams(): Promise<number> {
  const overview = (await (await fetch(`${base}/overview`)).json()) as { streams: { open: number } };
  return overview.streams.open;
}

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/** Opens `count` streams and reads them until aborted; resolves once the broker counts them. */
async function holdStreams(count: number): Promise<{ close(): Promise<void>; bytes(): number }> {
  const abort = new AbortController();
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${base}/stream?view=${view}`, { signal: abort.signal });
    if (response.status !== 200) throw new Error(`stream ${i}: ${response.status} ${await response.text()}`);
    void (async () => {
      for await (const chunk of response.body!) bytes += chunk.byteLength;
    })().catch(() => undefined);
  }
  await waitFor(async () => (await openStreams()) === count, `${count} open streams`);
  return {
    bytes: () => bytes,
    close: async () => {
      abort.abort();
      await waitFor(async () => (await openStreams()) === 0, "the streams to close");
    },
  };
}

const produceScript = path.resolve(import.meta.dir, "load/produce.ts");
const loadArgs = [
  String(broker.port),
  "console-bench",
  String(recordBytes),
  String(batchRecords),
  String(connections),
  String(seconds),
  String(inflight),
];
// One run not counted: the first run warms the JIT of both processes and the page cache (a first
// try measured it 34 % below the second).
await runLoad(produceScript, loadArgs);
const results = new Map<number, number[]>([
  [0, []],
  [streamCount, []],
]);
/** Per round: throughput with the streams over throughput without, the two runs side by side. */
const ratios: number[] = [];
/** Broker CPU seconds per million records produced, per variant: less sensitive to a shared machine. */
const cpuPerMillion = new Map<number, number[]>([
  [0, []],
  [streamCount, []],
]);
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? [0, streamCount] : [streamCount, 0];
  const roundRates = new Map<number, number>();
  for (const streams of order) {
    const held = await holdStreams(streams);
    const cpuBefore = brokerCpuSeconds(broker.pid);
    const result = (await runLoad(produceScript, loadArgs)) as ThroughputResult;
    const cpuSeconds = brokerCpuSeconds(broker.pid) - cpuBefore;
    cpuPerMillion.get(streams)!.push(cpuSeconds / (result.records / 1e6));
    const streamed = held.bytes();
    await held.close();
    results.get(streams)!.push(result.recordsPerSecond);
    roundRates.set(streams, result.recordsPerSecond);
    console.log(
      `round ${round + 1}, ${String(streams).padStart(2)} streams: ${formatRate(result.recordsPerSecond)} records/s, ` +
        `broker CPU ${((cpuSeconds / result.records) * 1e6).toFixed(3)} s per million records` +
        (streams > 0 ? ` (the streams received ${(streamed / 1024).toFixed(0)} KiB)` : ""),
    );
  }
  ratios.push(roundRates.get(streamCount)! / roundRates.get(0)!);
}
// The console's own cost, without load: broker CPU over idle periods with 0 and N streams open
// (interleaved, as above). This is what the streams cost whatever the produce load.
const idleSeconds = seconds * 2;
const idleCpu = new Map<number, number[]>([
  [0, []],
  [streamCount, []],
]);
for (let round = 0; round < rounds; round++) {
  for (const streams of round % 2 === 0 ? [0, streamCount] : [streamCount, 0]) {
    const held = await holdStreams(streams);
    const cpuBefore = brokerCpuSeconds(broker.pid);
    await Bun.sleep(idleSeconds * 1000); // a measurement window, not a wait for a condition
    idleCpu.get(streams)!.push(((brokerCpuSeconds(broker.pid) - cpuBefore) / idleSeconds) * 1000);
    await held.close();
  }
}
await broker.stop();
directory.remove();

for (const [streams, values] of results) {
  console.log(
    `${String(streams).padStart(2)} streams: median ${formatRate(median(values))} records/s, range ${formatRate(Math.min(...values))}-${formatRate(Math.max(...values))}`,
  );
}
for (const [streams, values] of cpuPerMillion) {
  console.log(
    `${String(streams).padStart(2)} streams: broker CPU per million records produced: median ${median(values).toFixed(3)} s, range ${Math.min(...values).toFixed(3)}-${Math.max(...values).toFixed(3)}`,
  );
}
for (const [streams, values] of idleCpu) {
  console.log(
    `${String(streams).padStart(2)} streams, no load: broker CPU ${median(values).toFixed(1)} ms per second (median; range ${Math.min(...values).toFixed(1)}-${Math.max(...values).toFixed(1)}; ${idleSeconds} s windows; /proc ticks are 10 ms)`,
  );
}
console.log(
  `per round, ${streamCount} streams over 0: median ${median(ratios).toFixed(3)}, range ${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)}`,
);
const without = median(results.get(0)!);
const withStreams = median(results.get(streamCount)!);
console.log(
  `change of the median with ${streamCount} streams: ${(((withStreams - without) / without) * 100).toFixed(1)} %`,
);
