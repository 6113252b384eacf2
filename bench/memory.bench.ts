/**
 * Memory under sustained load: 100 partitions, two producers spreading batches over all of them, ten
 * fast consumers following with long polls and ten slow ones falling behind (bench/load/mixed.ts, a
 * separate process). The broker's RSS and anonymous RSS are sampled every second from /proc, with a
 * breakdown by mapping from /proc/<pid>/smaps (bench/lib/smaps.ts): the segment files mapped by the
 * `mapped` write path (resident and dirty page cache seen through the mappings), anonymous memory
 * (JS heap, malloc, buffers) and the binary's and libraries' file mappings.
 *
 *   bun bench/memory.bench.ts [--seconds=180] [--rate=200000] [--write-mode=file,mapped] [--rounds=1]
 *
 * Each round runs every write mode given, in turn (a fresh broker and data directory per run), so
 * that `file` and `mapped` meet the same machine. Target: anonymous RSS < 128 MiB and no growth
 * trend (the slope over the second half of each run is printed in MiB per minute). Charts:
 * docs/charts/memory-<write mode>.svg (the last round's). Acknowledge after append, 100-byte
 * records in batches of 100, 16 MiB segments, retention 64 MiB per partition.
 */
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { brokerMemory, runLoad, startBrokerProcess } from "./lib/processes.ts";
import { smapsBreakdown } from "./lib/smaps.ts";
import { median } from "./lib/stats.ts";
import { lineChart } from "./lib/svg.ts";

const args = parseBenchArgs({
  usage: "bun bench/memory.bench.ts [--seconds=180] [--rate=200000] [--write-mode=file,mapped] [--rounds=1]",
  options: { seconds: "180", rate: "200000", "write-mode": "file,mapped", rounds: "1" },
});
const seconds = args.number("seconds");
const rate = args.number("rate");
const writeModes = args.text("write-mode").split(",");
const rounds = args.number("rounds");
const PARTITIONS = 100;
const SEGMENT_BYTES = 16 * 2 ** 20;
const MIB = 2 ** 20;

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

/** The machine's dirty page cache (all processes): what writeback still has to write. */
function systemDirtyMiB(): number {
  const meminfo = fs.readFileSync("/proc/meminfo", "utf8");
  return Number(/^Dirty:\s+(\d+) kB/m.exec(meminfo)?.[1] ?? 0) / 1024;
}

interface Sample {
  second: number;
  rss: number;
  anon: number;
  heap: number;
  buffers: number;
  /** Segment mappings: how many, resident MiB, of which dirty. */
  segmentMappings: number;
  segmentRss: number;
  segmentDirty: number;
  /** Anonymous and other-file mappings from smaps. */
  smapsAnon: number;
  files: number;
  systemDirty: number;
}

const directory = measurementDirectory("memory");
console.log(`# booblik memory benchmark\n\n${describeMachine(directory.fileSystem)}`);
console.log(
  `\n${PARTITIONS} partitions, ${rate} records/s of 100 B in batches of 100, 10 fast + 10 slow consumers, ` +
    `${seconds} s per run, write paths ${writeModes.join(", ")} in turn, ${rounds} round(s), acknowledge after append, ` +
    `${SEGMENT_BYTES / MIB} MiB segments, retention 64 MiB per partition`,
);

async function runOnce(writeMode: string, round: number): Promise<Sample[]> {
  const brokerDirectory = path.join(directory.path, `broker-${writeMode}-${round}`);
  const broker = await startBrokerProcess(brokerDirectory, ["--write-mode", writeMode]);
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  const samples: Sample[] = [];
  try {
    await admin.createTopic("memory", {
      partitions: PARTITIONS,
      durability: "append",
      segmentBytes: SEGMENT_BYTES,
      retentionBytes: 64 * MIB,
    });
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
      const smaps = smapsBreakdown(broker.pid);
      // The broker's own view (STATS): process.memoryUsage(), which on Bun counts mapped segments
      // as heap and array buffers (see docs/benchmarks.md), so smaps is the figure to trust.
      const stats = await admin.stats();
      samples.push({
        second: Math.round((performance.now() - startMs) / 1000),
        rss: memory.rssBytes / MIB,
        anon: memory.anonymousBytes / MIB,
        heap: Number(stats.memoryHeapUsedBytes) / MIB,
        buffers: Number(stats.memoryArrayBuffersBytes) / MIB,
        segmentMappings: smaps.segments.mappings,
        segmentRss: smaps.segments.rssKiB / 1024,
        segmentDirty: (smaps.segments.privateDirtyKiB + smaps.segments.sharedDirtyKiB) / 1024,
        smapsAnon: smaps.anonymous.rssKiB / 1024,
        files: smaps.files.rssKiB / 1024,
        systemDirty: systemDirtyMiB(),
      });
    }
    const result = (await load) as {
      produced: number;
      fastConsumed: number;
      slowConsumed: number;
      resets: number;
    };
    console.log(`\n### write path ${writeMode}, round ${round + 1}\n`);
    console.log(
      "| second | RSS MiB | anon MiB | segment mappings | their RSS MiB | of it dirty MiB | other files MiB | JS heap used MiB (STATS) | array buffers MiB (STATS) | machine Dirty MiB |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|");
    const row = (s: Sample, note = "") =>
      console.log(
        `| ${s.second}${note} | ${s.rss.toFixed(0)} | ${s.anon.toFixed(0)} | ${s.segmentMappings} | ${s.segmentRss.toFixed(0)} | ` +
          `${s.segmentDirty.toFixed(0)} | ${s.files.toFixed(0)} | ${s.heap.toFixed(0)} | ${s.buffers.toFixed(0)} | ${s.systemDirty.toFixed(0)} |`,
      );
    for (const sample of samples.filter((_, i) => i % 15 === 0 || i === samples.length - 1)) row(sample);
    const peakRss = samples.reduce((a, b) => (b.rss > a.rss ? b : a));
    const peakAnon = samples.reduce((a, b) => (b.anon > a.anon ? b : a));
    row(peakRss, " (peak RSS)");
    row(peakAnon, " (peak anon)");
    const secondHalf = samples.slice(Math.floor(samples.length / 2));
    console.log(
      `\nproduced ${result.produced} records; fast consumers read ${result.fastConsumed}, slow ${result.slowConsumed} ` +
        `(retention overtook slow consumers ${result.resets} times)` +
        `\nRSS median ${median(samples.map((s) => s.rss)).toFixed(0)} MiB, max ${peakRss.rss.toFixed(0)} MiB ` +
        `(segment mappings ${peakRss.segmentRss.toFixed(0)} MiB of it, ${peakRss.segmentDirty.toFixed(0)} MiB dirty); ` +
        `anonymous RSS median ${median(samples.map((s) => s.anon)).toFixed(0)} MiB, max ${peakAnon.anon.toFixed(0)} MiB (target < 128)` +
        `\nsegment mappings' RSS median ${median(samples.map((s) => s.segmentRss)).toFixed(0)} MiB, max ` +
        `${Math.max(...samples.map((s) => s.segmentRss)).toFixed(0)} MiB; bound: ${PARTITIONS} active segments × ` +
        `${SEGMENT_BYTES / MIB} MiB = ${((PARTITIONS * SEGMENT_BYTES) / MIB).toFixed(0)} MiB` +
        `\nanonymous RSS slope over the second half: ${slopePerMinute(secondHalf.map((s) => [s.second, s.anon])).toFixed(2)} MiB/min; ` +
        `RSS slope ${slopePerMinute(secondHalf.map((s) => [s.second, s.rss])).toFixed(2)} MiB/min`,
    );
    return samples;
  } finally {
    admin.close();
    await broker.stop();
    fs.rmSync(brokerDirectory, { recursive: true, force: true });
  }
}

try {
  const last = new Map<string, Sample[]>();
  for (let round = 0; round < rounds; round++)
    for (const writeMode of writeModes) last.set(writeMode, await runOnce(writeMode, round));
  fs.mkdirSync("docs/charts", { recursive: true });
  for (const [writeMode, samples] of last) {
    fs.writeFileSync(
      `docs/charts/memory-${writeMode}.svg`,
      lineChart({
        title: `Broker memory, 100 partitions, ${rate / 1000}K rec/s, write path ${writeMode}`,
        xLabel: "second",
        yLabel: "MiB",
        series: [
          { name: "RSS", points: samples.map((s) => [s.second, s.rss]) },
          { name: "anonymous RSS", points: samples.map((s) => [s.second, s.anon]) },
          { name: "segment mappings RSS", points: samples.map((s) => [s.second, s.segmentRss]) },
        ],
      }),
    );
    console.log(`chart: docs/charts/memory-${writeMode}.svg`);
  }
} finally {
  directory.remove();
}
