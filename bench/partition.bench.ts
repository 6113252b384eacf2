/**
 * Partition-log benchmarks through the embedded broker (the producer is the application, in-process,
 * which is how the embedded form is used; the network benchmarks run the load in another process).
 *
 *   bun bench/partition.bench.ts sustained [--seconds=30]    sustained write probe, per-second figures
 *   bun bench/partition.bench.ts group-commit [--seconds=5]  1/4/16/64 producers, force vs append
 *   bun bench/partition.bench.ts restart [--sizes=1,4,16]    open time after clean and unclean shutdown
 *
 * Every figure names the write path, durability policy, record size and batch size. Data goes to
 * BOOBLIK_BENCH_DIR (default ./bench-data), never tmpfs. The sustained probe writes charts to
 * docs/charts/.
 */
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../src/broker/broker.ts";
import type { DurabilityPolicy } from "../src/broker/topic-config.ts";
import { ENTRY_HEADER_BYTES } from "../src/domain/limits.ts";
import { encodeBatch } from "../src/record/batch.ts";
import { WRITE_MODES, type WriteMode } from "../src/storage/segment-writer.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, measurementDirectory, nowMs } from "./lib/environment.ts";
import { lineChart, type Series } from "./lib/svg.ts";

// Option defaults differ per section ("" = the section's own default).
const args = parseBenchArgs({
  usage: "bun bench/partition.bench.ts [sustained|group-commit|restart] [--seconds=N] [--sizes=1,4,16]",
  sections: ["sustained", "group-commit", "restart"],
  options: { seconds: "", sizes: "1,4,16" },
});
const section = args.section;
const secondsOr = (fallback: number) => (args.text("seconds") === "" ? fallback : args.number("seconds"));

/** One RecordBatch v2 of `records` random values of `recordBytes` (null keys), as a producer sends it. */
function batchOf(recordBytes: number, records: number): Uint8Array {
  const timestamp = Date.now();
  return encodeBatch(
    Array.from({ length: records }, () => ({
      key: null,
      value: crypto.getRandomValues(new Uint8Array(recordBytes)),
      timestamp,
    })),
  );
}

const SUSTAINED_BATCH_RECORDS = 1000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

// --- Sustained write probe --------------------------------------------------------------------------

interface SustainedResult {
  perSecond: number[];
  meanPerSecond: number;
  worstSecond: number;
  gibWritten: number;
}

async function sustainedRun(
  directory: string,
  mode: WriteMode,
  policy: DurabilityPolicy,
  seconds: number,
  producers: number,
): Promise<SustainedResult> {
  const dataDir = fs.mkdtempSync(path.join(directory, `${mode}-${policy}-`));
  const broker = Broker.open({ dataDir });
  // Retention keeps the disk bounded over a long run; deleting old segments while writing is part
  // of what a broker does under sustained load.
  broker.createTopic("probe", {
    durability: policy,
    writeMode: mode,
    retentionBytes: 4 * 2 ** 30,
    flushIntervalMs: 1000,
  });
  const batch = batchOf(100, SUSTAINED_BATCH_RECORDS);
  const sustainedBatchBytes = batch.length;
  const perSecond: number[] = [];
  let secondRecords = 0;
  let totalRecords = 0;
  const start = nowMs();
  const end = start + seconds * 1000;
  let secondStart = start;
  let running = true;
  const tick = () => {
    const now = nowMs();
    if (now - secondStart >= 1000) {
      perSecond.push((secondRecords * 1000) / (now - secondStart));
      secondRecords = 0;
      secondStart = now;
      broker.applyRetention();
    }
    if (now >= end) running = false;
  };
  await Promise.all(
    Array.from({ length: producers }, async () => {
      let sinceYield = 0;
      while (running) {
        await broker.append("probe", 0, batch);
        secondRecords += 1000;
        totalRecords += 1000;
        tick();
        // Appends under `append` resolve as microtasks; let timers (the interval force) run.
        if (++sinceYield === 16) {
          sinceYield = 0;
          await yieldToLoop();
        }
      }
    }),
  );
  // The clock stops when the last append was acknowledged: closing the broker and deleting the
  // data (gigabytes) are not part of the write rate.
  const elapsed = (nowMs() - start) / 1000;
  await broker.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  return {
    perSecond,
    meanPerSecond: totalRecords / elapsed,
    worstSecond: Math.min(...perSecond),
    gibWritten:
      ((totalRecords / SUSTAINED_BATCH_RECORDS) * (ENTRY_HEADER_BYTES + sustainedBatchBytes)) / 2 ** 30,
  };
}

async function sustainedSection(directory: string): Promise<void> {
  const seconds = secondsOr(30);
  console.log(
    `\n## sustained write probe (${seconds} s per run, 100 B records, batches of 1000, retention 4 GiB)\n`,
  );
  console.log(
    "Policies: append = acknowledge after append (one producer); force = acknowledge after a force",
  );
  console.log("(16 concurrent producers, group commit); interval = append plus a force every second.\n");
  console.log("| write path | policy | producers | mean rec/s | worst second | best second | GiB written |");
  console.log("|---|---|---|---|---|---|---|");
  const series: Series[] = [];
  for (const policy of ["append", "force", "interval"] as const) {
    for (const mode of WRITE_MODES) {
      const producers = policy === "force" ? 16 : 1;
      const result = await sustainedRun(directory, mode, policy, seconds, producers);
      console.log(
        `| ${mode} | ${policy} | ${producers} | ${formatRate(result.meanPerSecond)} | ${formatRate(result.worstSecond)} | ` +
          `${formatRate(Math.max(...result.perSecond))} | ${result.gibWritten.toFixed(1)} |`,
      );
      series.push({ name: `${mode}, ${policy}`, points: result.perSecond.map((value, i) => [i + 1, value]) });
    }
  }
  fs.mkdirSync("docs/charts", { recursive: true });
  fs.writeFileSync(
    "docs/charts/sustained-write.svg",
    lineChart({
      title: "Sustained append, 100 B records, batches of 1000 (records/s per second)",
      xLabel: "second",
      yLabel: "records/s",
      series,
    }),
  );
  console.log("\nchart: docs/charts/sustained-write.svg");
}

// --- Group commit ------------------------------------------------------------------------------------

async function groupCommitRun(
  directory: string,
  policy: DurabilityPolicy,
  producers: number,
  recordBytes: number,
  seconds: number,
): Promise<{ recordsPerSecond: number; forcesPerSecond: number }> {
  const dataDir = fs.mkdtempSync(path.join(directory, `gc-${policy}-`));
  const broker = Broker.open({ dataDir });
  broker.createTopic("gc", { durability: policy, retentionBytes: 2 * 2 ** 30 });
  const batch = batchOf(recordBytes, 100);
  const partition = broker.partition("gc", 0);
  const forcesBefore = partition.groupCommit.forceCount;
  let records = 0;
  const start = nowMs();
  const end = start + seconds * 1000;
  let lastRetention = start;
  await Promise.all(
    Array.from({ length: producers }, async () => {
      let sinceYield = 0;
      while (nowMs() < end) {
        await broker.append("gc", 0, batch);
        records += 100;
        if (++sinceYield === 16) {
          sinceYield = 0;
          await yieldToLoop();
          if (nowMs() - lastRetention > 1000) {
            lastRetention = nowMs();
            broker.applyRetention();
          }
        }
      }
    }),
  );
  const elapsed = (nowMs() - start) / 1000;
  const forces = partition.groupCommit.forceCount - forcesBefore;
  await broker.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  return { recordsPerSecond: records / elapsed, forcesPerSecond: forces / elapsed };
}

async function groupCommitSection(directory: string): Promise<void> {
  const seconds = secondsOr(5);
  console.log(
    `\n## group commit (${seconds} s per run, file write path, batches of 100 records per append)\n`,
  );
  console.log(
    "| record B | producers | force rec/s | forces/s | records per force | append rec/s | force/append |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const recordBytes of [100, 1024]) {
    for (const producers of [1, 4, 16, 64]) {
      const forced = await groupCommitRun(directory, "force", producers, recordBytes, seconds);
      const appended = await groupCommitRun(directory, "append", producers, recordBytes, seconds);
      console.log(
        `| ${recordBytes} | ${producers} | ${formatRate(forced.recordsPerSecond)} | ${formatRate(forced.forcesPerSecond)} | ` +
          `${(forced.recordsPerSecond / forced.forcesPerSecond).toFixed(0)} | ${formatRate(appended.recordsPerSecond)} | ` +
          `${(forced.recordsPerSecond / appended.recordsPerSecond).toFixed(2)} |`,
      );
    }
  }
}

// --- Restart -----------------------------------------------------------------------------------------

const FIXTURES = path.join(import.meta.dir, "fixtures");

async function runChild(script: string, scriptArgs: string[]): Promise<string> {
  const child = Bun.spawn([process.execPath, path.join(FIXTURES, script), ...scriptArgs], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const output = await new Response(child.stdout).text();
  await child.exited;
  return output.trim();
}

async function restartSection(directory: string): Promise<void> {
  const sizes = args.text("sizes").split(",").map(Number);
  console.log(
    "\n## restart (4 partitions, 1 KiB records in batches of 1000, durability append, 128 MiB segments, file write path)\n",
  );
  console.log(
    "Open time is Broker.open() in a fresh process. Clean: the writer filled the directory to the size and closed.",
  );
  console.log(
    "Unclean: then another writer appended 0.25 GiB more, forced and was SIGKILLed (no record is torn; recovery",
  );
  console.log("still must not trust what follows the last recovery point).\n");
  console.log("| data GiB | shutdown | open ms | segments | segments scanned | GiB scanned |");
  console.log("|---|---|---|---|---|---|");
  const dataDir = path.join(directory, "restart");
  fs.mkdirSync(dataDir);
  for (const gib of sizes) {
    for (const shutdown of ["clean", "kill"] as const) {
      await runChild("fill-data-dir.ts", [dataDir, String(gib), shutdown]);
      const report = JSON.parse(await runChild("open-data-dir.ts", [dataDir])) as {
        durationMs: number;
        segments: number;
        segmentsScanned: number;
        bytesScanned: number;
      };
      console.log(
        `| ${shutdown === "clean" ? gib : gib + 0.25} | ${shutdown === "clean" ? "clean" : "unclean (SIGKILL)"} | ${report.durationMs.toFixed(1)} | ` +
          `${report.segments} | ${report.segmentsScanned} | ${(report.bytesScanned / 2 ** 30).toFixed(2)} |`,
      );
    }
  }
}

const directory = measurementDirectory("partition");
console.log(
  `# booblik partition benchmark\n\n${describeMachine(directory.fileSystem)}\ndata: ${directory.path}`,
);
try {
  if (section === "sustained") await sustainedSection(directory.path);
  else if (section === "group-commit") await groupCommitSection(directory.path);
  else if (section === "restart") await restartSection(directory.path);
} finally {
  directory.remove();
}
