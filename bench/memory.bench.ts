/**
 * Memory under sustained load: 100 partitions, two producers spreading batches over all of them, ten
 * fast consumers following with long polls and ten slow ones falling behind (bench/load/mixed.ts, a
 * separate process). The broker's RSS and anonymous RSS are sampled every second from /proc.
 *
 *   bun bench/memory.bench.ts [--seconds=180] [--rate=200000] [--write-mode=file|mapped]
 *
 * Target: anonymous RSS < 128 MiB and no growth trend (the slope over the second half of the run is
 * printed in MiB per minute). Chart: docs/charts/memory-<write mode>.svg. Acknowledge after append,
 * 100-byte records in batches of 100, 16 MiB segments, retention 64 MiB per partition.
 */
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { brokerMemory, runLoad, startBrokerProcess } from "./lib/processes.ts";
import { lineChart } from "./lib/svg.ts";

const args = parseBenchArgs({
  usage: "bun bench/memory.bench.ts [--seconds=180] [--rate=200000] [--write-mode=file|mapped]",
  options: { seconds: "180", rate: "200000", "write-mode": "file" },
});
const seconds = args.number("seconds");
const rate = args.number("rate");
const writeMode = args.text("write-mode");
const PARTITIONS = 100;

function slopePerMinute(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const meanX = points.reduce((s, [x]) => s + x, 0) / n;
  const meanY = points.reduce((s, [, y]) => s + y, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (const [x, y] of points) {
    numerator += (x - meanX) * (y - meanY);
    denominator += (x - meanX) ** 2;
  }
  return (numerator / denominator) * 60;
}

const directory = measurementDirectory("memory");
console.log(`# booblik memory benchmark\n\n${describeMachine(directory.fileSystem)}`);
console.log(
  `\n${PARTITIONS} partitions, ${rate} records/s of 100 B in batches of 100, 10 fast + 10 slow consumers, ` +
    `${seconds} s, write path ${writeMode}, acknowledge after append\n`,
);
const broker = await startBrokerProcess(path.join(directory.path, "broker"), ["--write-mode", writeMode]);
const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
try {
  await admin.createTopic("memory", {
    partitions: PARTITIONS,
    durability: "append",
    segmentBytes: 16 * 2 ** 20,
    retentionBytes: 64 * 2 ** 20,
  });
  const samples: { second: number; rss: number; anon: number; heap: number; buffers: number }[] = [];
  const load = runLoad(path.join(import.meta.dir, "load", "mixed.ts"), [
    String(broker.port),
    "memory",
    String(PARTITIONS),
    String(seconds),
    String(rate),
  ]);
  let done = false;
  void load.finally(() => {
    done = true;
  });
  const startMs = performance.now();
  while (!done) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const memory = await brokerMemory(broker.pid);
    // The broker's own view (STATS): how much of the anonymous memory is JS heap and array buffers.
    const stats = await admin.stats();
    samples.push({
      second: Math.round((performance.now() - startMs) / 1000),
      rss: memory.rssBytes / 2 ** 20,
      anon: memory.anonymousBytes / 2 ** 20,
      heap: Number(stats.memoryHeapUsedBytes) / 2 ** 20,
      buffers: Number(stats.memoryArrayBuffersBytes) / 2 ** 20,
    });
  }
  const result = (await load) as {
    produced: number;
    fastConsumed: number;
    slowConsumed: number;
    resets: number;
  };
  const secondHalf = samples.slice(Math.floor(samples.length / 2));
  const maxAnon = Math.max(...samples.map((s) => s.anon));
  const maxRss = Math.max(...samples.map((s) => s.rss));
  console.log("| second | RSS MiB | anon MiB | JS heap used MiB | array buffers MiB |");
  console.log("|---|---|---|---|---|");
  for (const sample of samples.filter((_, i) => i % 15 === 0 || i === samples.length - 1)) {
    console.log(
      `| ${sample.second} | ${sample.rss.toFixed(0)} | ${sample.anon.toFixed(0)} | ${sample.heap.toFixed(0)} | ${sample.buffers.toFixed(0)} |`,
    );
  }
  const peak = samples.reduce((a, b) => (b.anon > a.anon ? b : a));
  console.log(`
peak anonymous RSS at second ${peak.second}: ${peak.anon.toFixed(0)} MiB, of which JS heap ${peak.heap.toFixed(0)} MiB, array buffers ${peak.buffers.toFixed(0)} MiB`);
  console.log(
    `\nproduced ${result.produced} records; fast consumers read ${result.fastConsumed}, slow ${result.slowConsumed} ` +
      `(retention overtook slow consumers ${result.resets} times)` +
      `\nmax RSS ${maxRss.toFixed(0)} MiB, max anonymous RSS ${maxAnon.toFixed(0)} MiB (target < 128)` +
      `\nanonymous RSS slope over the second half: ${slopePerMinute(secondHalf.map((s) => [s.second, s.anon])).toFixed(2)} MiB/min; ` +
      `RSS slope ${slopePerMinute(secondHalf.map((s) => [s.second, s.rss])).toFixed(2)} MiB/min`,
  );
  fs.mkdirSync("docs/charts", { recursive: true });
  fs.writeFileSync(
    `docs/charts/memory-${writeMode}.svg`,
    lineChart({
      title: `Broker memory, 100 partitions, ${rate / 1000}K rec/s, write path ${writeMode}`,
      xLabel: "second",
      yLabel: "MiB",
      series: [
        { name: "RSS", points: samples.map((s) => [s.second, s.rss]) },
        { name: "anonymous RSS", points: samples.map((s) => [s.second, s.anon]) },
      ],
    }),
  );
  console.log(`chart: docs/charts/memory-${writeMode}.svg`);
} finally {
  admin.close();
  await broker.stop();
  directory.remove();
}
