/**
 * Broker over loopback: the broker is one process, each load generator another (bench/load/*.ts).
 *
 *   bun bench/network.bench.ts produce  [--seconds=5]   records/s, MB/s, broker CPU and memory
 *   bun bench/network.bench.ts consume  [--gib=1]       sendfile vs copying fetch, client checks CRCs
 *   bun bench/network.bench.ts latency  [--seconds=10] [--rounds=3] [--rates=10000,50000]
 *                                       [--policies=append,force] [--warmup=1] [--settle=60] [--baseline=<checkout>]
 *                                       produce→fetch latency at a fixed rate, each run on a broker
 *                                       whose compiler settled under the same load (`settle`, at
 *                                       most), after `warmup` seconds at that rate (not counted), and the disk's own fdatasync
 *                                       latency in the same run; with a baseline, its broker
 *                                       (src/main.ts) runs too, interleaved, under the same generator
 *   bun bench/network.bench.ts tls      [--gib=1] [--rounds=3] [--baseline=<checkout>]  consume:
 *                                       plain sendfile, plain copy and TLS (copy), interleaved per
 *                                       round; median and range; with a baseline, its broker's two
 *                                       copying variants too
 *   bun bench/network.bench.ts all
 *
 * Every figure names the durability policy, record size, batch size and connection count. Broker
 * CPU is utime+stime of the broker process from /proc/<pid>/stat over the run; memory is its RSS
 * and anonymous RSS at the end of the run. Data goes to BOOBLIK_BENCH_DIR (never tmpfs).
 */
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { makeCertificates } from "../test/helpers/tls-certs.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { storedBatchBytes } from "./lib/latency-shape.ts";
import type { ThroughputResult } from "./lib/load-result.ts";
import {
  type BrokerHandle,
  brokerCpuSeconds,
  brokerMemory,
  mainThreadSchedule,
  runLoad,
  startBrokerProcess,
  threadsCpuSeconds,
} from "./lib/processes.ts";
import { median, medianRange } from "./lib/stats.ts";

// Option defaults differ per section ("" = the section's own default).
const args = parseBenchArgs({
  usage:
    "bun bench/network.bench.ts [all|produce|consume|latency|tls] [--seconds=N] [--gib=1] [--rounds=3] [--rates=10000,50000] [--policies=append,force] [--warmup=1] [--settle=60] [--baseline=<checkout>]",
  sections: ["all", "produce", "consume", "latency", "tls"],
  options: {
    seconds: "",
    gib: "1",
    rounds: "3",
    rates: "10000,50000",
    policies: "append,force",
    warmup: "1",
    settle: "60",
    baseline: "",
  },
});
const section = args.section;
const secondsOr = (fallback: number) => (args.text("seconds") === "" ? fallback : args.number("seconds"));
const LOAD = path.join(import.meta.dir, "load");

async function produceSection(dataDir: string): Promise<void> {
  const seconds = secondsOr(5);
  console.log(
    `\n## produce (${seconds} s per row; file write path (the default); load generator: bench/load/produce.ts, 8 requests in flight per connection)\n`,
  );
  console.log(
    "| policy | record B | batch | connections | records/s | MB/s | broker CPU % | broker RSS MiB | anon MiB |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  const broker = await startBrokerProcess(path.join(dataDir, "produce"), []);
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  let run = 0;
  try {
    for (const policy of ["append", "force", "interval"] as const) {
      for (const recordBytes of [100, 1024]) {
        for (const batch of [1, 100, 1000]) {
          for (const connections of [1, 16]) {
            const topic = `produce-${run++}`;
            await admin.createTopic(topic, { durability: policy, retentionBytes: 2 * 2 ** 30 });
            const cpuBefore = brokerCpuSeconds(broker.pid);
            const result = (await runLoad(path.join(LOAD, "produce.ts"), [
              String(broker.port),
              topic,
              String(recordBytes),
              String(batch),
              String(connections),
              String(seconds),
            ])) as ThroughputResult;
            const cpu = (brokerCpuSeconds(broker.pid) - cpuBefore) / result.seconds;
            const memory = await brokerMemory(broker.pid);
            console.log(
              `| ${policy} | ${recordBytes} | ${batch} | ${connections} | ${formatRate(result.recordsPerSecond)} | ` +
                `${result.megabytesPerSecond.toFixed(0)} | ${(cpu * 100).toFixed(0)} | ${(memory.rssBytes / 2 ** 20).toFixed(0)} | ` +
                `${(memory.anonymousBytes / 2 ** 20).toFixed(0)} |`,
            );
            await admin.deleteTopic(topic);
          }
        }
      }
    }
  } finally {
    admin.close();
    await broker.stop();
  }
}

async function consumeSection(dataDir: string): Promise<void> {
  const gib = args.number("gib");
  console.log(
    `\n## consume (at least ${gib} GiB written under durability append in batches of 1000, file write path, read from offset 0; ` +
      "1 connection, FETCH maxBytes 1 MiB, the client checks every CRC)\n",
  );
  console.log(
    "| record B | fetch path | GiB read | records/s | MB/s | broker CPU s per GiB | broker user s | broker sys s |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const recordBytes of [100, 1024]) {
    const directory = path.join(dataDir, `consume-${recordBytes}`);
    // Fill once through a broker with the append policy.
    let broker = await startBrokerProcess(directory, []);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await admin.createTopic("data", { durability: "append" });
    let records = 0;
    // About 8 bytes of record fields per value in batches of 1,000 (the batch header is 61 bytes).
    while (records * (recordBytes + 8) < gib * 2 ** 30) {
      await runLoad(path.join(LOAD, "produce.ts"), [
        String(broker.port),
        "data",
        String(recordBytes),
        "1000",
        "4",
        "2",
      ]);
      records = (await admin.listOffsets("data", 0)).nextOffset;
    }
    admin.close();
    await broker.stop();
    for (const fetchPath of ["sendfile", "copy"] as const) {
      broker = await startBrokerProcess(directory, ["--fetch-path", fetchPath]);
      // Warm the page cache so both paths read from memory (they differ in how they send, not read).
      await runLoad(path.join(LOAD, "consume.ts"), [String(broker.port), "data", String(records)]);
      const before = brokerCpuSeconds(broker.pid, true);
      const result = (await runLoad(path.join(LOAD, "consume.ts"), [
        String(broker.port),
        "data",
        String(records),
      ])) as ThroughputResult;
      const after = brokerCpuSeconds(broker.pid, true);
      const userSeconds = after.user - before.user;
      const systemSeconds = after.system - before.system;
      console.log(
        `| ${recordBytes} | ${fetchPath} | ${(result.bytes / 2 ** 30).toFixed(2)} | ${formatRate(result.recordsPerSecond)} | ` +
          `${result.megabytesPerSecond.toFixed(0)} | ` +
          `${((userSeconds + systemSeconds) / (result.bytes / 2 ** 30)).toFixed(2)} | ${userSeconds.toFixed(2)} | ${systemSeconds.toFixed(2)} |`,
      );
      await broker.stop();
    }
  }
}

interface LatencyResult {
  achievedRate: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  sentP50Ms: number;
  sentP99Ms: number;
  sentP999Ms: number;
  sentMaxMs: number;
  warmupP99Ms: number;
  /** The broker's main thread over the whole run (warm-up included), ms per second of run. */
  brokerRunMsPerS: number;
  brokerWaitMsPerS: number;
  /** Seconds of load before the run until the broker's compiler was quiet (settleCompiler). */
  settledS: number;
  /** The broker's compiler threads' CPU over the run, ms per second of run. */
  brokerCompilerMsPerS: number;
}

interface DiskForceResult {
  forces: number;
  bytesPerForce: number;
  intervalUs: number;
  late: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

/** A settling chunk: the same load on a topic of its own, this long. */
const SETTLE_CHUNK_S = 3;
/** A chunk is quiet when the broker's compiler threads took at most this much CPU in it. */
const SETTLE_QUIET_COMPILER_MS = 10;

/**
 * Runs the latency load (same rate, same records) on a topic of its own, in chunks of
 * SETTLE_CHUNK_S, until the broker's compiler threads (JavaScriptCore's `JITWorker`) were quiet in
 * two chunks in a row, or `maxSeconds` have passed; returns the seconds it took. Why: at 1,000
 * requests per second a fresh broker's hot functions reach the top tier slowly; at 50 K records/s
 * its compiler threads took 0-60 ms of CPU per second for the first 15 s and almost nothing after
 * (2026-12-03, docs/benchmarks.md "The latency tail was the broker's own compiler"), and those
 * compilations, holding a CPU the event loops wanted, were the latency tail. The targets are
 * about a running broker, so the measured run starts after that. 0 turns it off.
 */
async function settleCompiler(
  broker: BrokerHandle,
  policy: "append" | "force" | "interval",
  rate: number,
  maxSeconds: number,
): Promise<number> {
  if (maxSeconds <= 0) return 0;
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  const startedMs = performance.now();
  let quietChunks = 0;
  // A topic per chunk: the load's consumer reads its topic from offset 0.
  for (let chunk = 0; quietChunks < 2 && (performance.now() - startedMs) / 1000 < maxSeconds; chunk++) {
    await admin.createTopic(`settle-${chunk}`, { durability: policy });
    const before = threadsCpuSeconds(broker.pid, "JITWorker");
    await runLoad(path.join(LOAD, "latency.ts"), [
      String(broker.port),
      `settle-${chunk}`,
      String(rate),
      String(SETTLE_CHUNK_S),
      "100",
      "0",
    ]);
    const compilerMs = (threadsCpuSeconds(broker.pid, "JITWorker") - before) * 1000;
    quietChunks = compilerMs <= SETTLE_QUIET_COMPILER_MS ? quietChunks + 1 : 0;
  }
  admin.close();
  return (performance.now() - startedMs) / 1000;
}

/**
 * Produce → fetch latency (issue 13's targets: p99 < 1 ms at 50 K records/s under `append`; under
 * `force` within 1 ms of the disk's own fdatasync p99 measured in the same run). Each round runs
 * every policy × rate on a fresh broker and data directory, in an order rotated per round, and the
 * disk's own force (bench/load/fdatasync.ts, its own process, on the same directory, with nothing
 * else of ours running) in three shapes: the old probe (pwrite 100 B + fdatasync in a tight loop,
 * about 12,000 forces/s) and, per rate, the broker's shape under `force` (one pwrite of the latency
 * run's batch as stored, `storedBatchBytes`, then one fdatasync, due every millisecond), appending
 * to the file and overwriting zeros written before. The target is judged against the paced
 * overwriting probe's p99 at the same rate, because that is what the broker's file writer does (it
 * writes zeros ahead of itself: src/storage/file-segment-writer.ts), and it is the faster of the two
 * on ext4, so the stricter target. Figures: median (range) over rounds of each run's percentiles.
 */
async function latencySection(dataDir: string): Promise<void> {
  const seconds = secondsOr(10);
  const rounds = args.number("rounds");
  const rates = args
    .text("rates")
    .split(",")
    .map((rate) => Number(rate));
  const policies = args.text("policies").split(",") as ("append" | "force" | "interval")[];
  const warmupSeconds = args.number("warmup");
  const settleSeconds = args.number("settle");
  const baseline = args.text("baseline");
  const brokers: { name: string; main: string | undefined }[] = [
    { name: "this", main: undefined },
    ...(baseline === "" ? [] : [{ name: "baseline", main: path.resolve(baseline, "src/main.ts") }]),
  ];
  if (baseline !== "") console.log(`\nbroker "baseline" = ${path.resolve(baseline)}; "this" = this checkout`);
  console.log(
    `\n## produce → fetch latency (${seconds} s per run at a fixed rate after ${warmupSeconds} s of warm-up at that rate (not counted), ${rounds} rounds, file write path, 100 B records, ` +
      `each run after the broker's compiler settled under the same load (at most ${settleSeconds} s, --settle), ` +
      "a batch of rate/1000 records due every ms on one connection (sent on time: setTimeout, then Atomics.wait for the last 1.5 ms), " +
      "a consumer long-polling FETCH (maxWaitMs 1000) on another, each in its own process; fresh broker and data directory per run)\n",
  );
  const rows = policies.flatMap((policy) =>
    rates.flatMap((rate) => brokers.map((broker) => ({ policy, rate, broker }))),
  );
  const results = new Map<string, LatencyResult[]>();
  const loads = new Map<string, number[]>();
  const disk: DiskForceResult[] = [];
  const diskLoads: number[] = [];
  /** Per rate: the paced probes (the broker's bytes and pacing under `force`), appending and overwriting. */
  const paced = new Map<number, DiskForceResult[]>(rates.map((rate) => [rate, []]));
  const pacedOverwrite = new Map<number, DiskForceResult[]>(rates.map((rate) => [rate, []]));
  let run = 0;
  for (let round = 0; round < rounds; round++) {
    // The disk's own force first in even rounds and last in odd ones.
    const order = rows.map((_, i) => rows[(i + round) % rows.length]!);
    const probe = async () => {
      diskLoads.push(loadAverage());
      disk.push((await runLoad(path.join(LOAD, "fdatasync.ts"), [dataDir, "3"])) as DiskForceResult);
      for (const rate of rates) {
        const probeArgs = [dataDir, "3", String(storedBatchBytes(rate)), "1000"];
        paced.get(rate)!.push((await runLoad(path.join(LOAD, "fdatasync.ts"), probeArgs)) as DiskForceResult);
        pacedOverwrite
          .get(rate)!
          .push(
            (await runLoad(path.join(LOAD, "fdatasync.ts"), [...probeArgs, "overwrite"])) as DiskForceResult,
          );
      }
    };
    if (round % 2 === 0) await probe();
    for (const { policy, rate, broker: variant } of order) {
      const key = `${policy}/${rate}/${variant.name}`;
      const runDir = path.join(dataDir, `latency-${run++}`);
      Bun.spawnSync(["sync"]);
      const broker = await startBrokerProcess(runDir, [], variant.main);
      try {
        const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
        await admin.createTopic("latency", { durability: policy });
        admin.close();
        const settledS = await settleCompiler(broker, policy, rate, settleSeconds);
        (loads.get(key) ?? loads.set(key, []).get(key)!).push(loadAverage());
        const compilerBefore = threadsCpuSeconds(broker.pid, "JITWorker");
        const scheduleBefore = mainThreadSchedule(broker.pid);
        const startedMs = performance.now();
        const result = (await runLoad(path.join(LOAD, "latency.ts"), [
          String(broker.port),
          "latency",
          String(rate),
          String(seconds),
          "100",
          String(warmupSeconds),
        ])) as LatencyResult;
        const scheduleAfter = mainThreadSchedule(broker.pid);
        const elapsedS = (performance.now() - startedMs) / 1000;
        result.brokerRunMsPerS = (scheduleAfter.runNs - scheduleBefore.runNs) / 1e6 / elapsedS;
        result.brokerWaitMsPerS = (scheduleAfter.waitNs - scheduleBefore.waitNs) / 1e6 / elapsedS;
        result.settledS = settledS;
        // Ended compiler threads leave the sum (JavaScriptCore ends idle ones): never below 0.
        result.brokerCompilerMsPerS = Math.max(
          0,
          ((threadsCpuSeconds(broker.pid, "JITWorker") - compilerBefore) * 1000) / elapsedS,
        );
        (results.get(key) ?? results.set(key, []).get(key)!).push(result);
      } finally {
        await broker.stop();
        fs.rmSync(runDir, { recursive: true, force: true });
      }
    }
    if (round % 2 === 1) await probe();
  }
  const cell = (values: number[]) => medianRange(values, 2, "–");
  const diskLine = (what: string, runs: DiskForceResult[]) =>
    `disk's own fdatasync, ${what} (${runs.length} runs of 3 s, ${median(runs.map((d) => d.forces / 3)).toFixed(0)} forces/s; ` +
    `load avg ${Math.min(...diskLoads).toFixed(1)}–${Math.max(...diskLoads).toFixed(1)}), ms: ` +
    `p50 ${cell(runs.map((d) => d.p50Ms))}, p99 ${cell(runs.map((d) => d.p99Ms))}, ` +
    `p99.9 ${cell(runs.map((d) => d.p999Ms))}, max ${cell(runs.map((d) => d.maxMs))}`;
  console.log(`${diskLine("old probe: pwrite 100 B + fdatasync in a tight loop", disk)}`);
  for (const rate of rates) {
    for (const [mode, runs] of [
      ["appending", paced.get(rate)!],
      ["overwriting zeros", pacedOverwrite.get(rate)!],
    ] as const) {
      console.log(
        `${diskLine(`the broker's shape at ${formatRate(rate)} rec/s, ${mode}: pwrite ${storedBatchBytes(rate)} B (one batch as stored) + fdatasync due every 1 ms`, runs)}, ` +
          `forces started over 1 ms late: ${median(runs.map((d) => d.late))}`,
      );
    }
  }
  console.log("");
  console.log(
    "Latency of each record from its batch's due time (includes the generator's timer lateness) and from its batch's send; ms, median (range) over rounds. " +
      "Warm-up p99: the same from due over the warm-up alone. Broker main thread: ms per second of run it ran on a CPU, and ms per second it was runnable but waited for one (/proc/<pid>/task/<pid>/schedstat). " +
      "Settled: seconds of the same load (on topics of their own) before the run until the broker's compiler threads were quiet in two 3 s chunks in a row (--settle, at most; 0: none); compiler: their CPU during the run, ms per second.\n",
  );
  console.log(
    "| policy | rate rec/s | broker | load avg | achieved | from due p50 | from due p99 | from due p99.9 | from due max | from send p50 | from send p99 | from send p99.9 | warm-up p99 | settled s | broker compiler ms/s | broker ran ms/s | broker waited ms/s | issue 13 target (on p99 from due) |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const { policy, rate, broker } of rows) {
    const key = `${policy}/${rate}/${broker.name}`;
    const list = results.get(key)!;
    const rowLoads = loads.get(key)!;
    const p99 = median(list.map((r) => r.p99Ms));
    const diskP99 = median(pacedOverwrite.get(rate)!.map((d) => d.p99Ms));
    const target =
      rate !== 50_000
        ? "-"
        : policy === "append"
          ? `< 1 ms: ${p99 < 1 ? "met" : "not met"}`
          : policy === "force"
            ? `≤ paced overwriting disk p99 + 1 = ${(diskP99 + 1).toFixed(2)} ms: ${p99 <= diskP99 + 1 ? "met" : "not met"}`
            : "-";
    console.log(
      `| ${policy} | ${formatRate(rate)} | ${broker.name} | ${Math.min(...rowLoads).toFixed(1)}–${Math.max(...rowLoads).toFixed(1)} | ` +
        `${formatRate(median(list.map((r) => r.achievedRate)))} | ${cell(list.map((r) => r.p50Ms))} | ${cell(list.map((r) => r.p99Ms))} | ` +
        `${cell(list.map((r) => r.p999Ms))} | ${cell(list.map((r) => r.maxMs))} | ${cell(list.map((r) => r.sentP50Ms))} | ` +
        `${cell(list.map((r) => r.sentP99Ms))} | ${cell(list.map((r) => r.sentP999Ms))} | ${cell(list.map((r) => r.warmupP99Ms))} | ` +
        `${cell(list.map((r) => r.settledS))} | ${cell(list.map((r) => r.brokerCompilerMsPerS))} | ` +
        `${cell(list.map((r) => r.brokerRunMsPerS))} | ${cell(list.map((r) => r.brokerWaitMsPerS))} | ${target} |`,
    );
  }
}

/**
 * What TLS costs a consumer: the same partition read by one connection through a plain broker
 * with sendfile, a plain broker copying, and a TLS broker (which always copies: src/auth/tls.ts).
 * Each round runs the three in a new order after a page-cache warm-up read; figures are the median
 * and range over rounds.
 */
async function tlsSection(dataDir: string): Promise<void> {
  const gib = args.number("gib");
  const rounds = args.number("rounds");
  const recordBytes = 1024;
  const certDir = path.join(dataDir, "certs");
  fs.mkdirSync(certDir);
  const certs = makeCertificates(certDir);
  const directory = path.join(dataDir, "tls");
  let broker = await startBrokerProcess(directory, []);
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  await admin.createTopic("data", { durability: "append" });
  let records = 0;
  while (records * (recordBytes + 8) < gib * 2 ** 30) {
    await runLoad(path.join(LOAD, "produce.ts"), [
      String(broker.port),
      "data",
      String(recordBytes),
      "1000",
      "4",
      "2",
    ]);
    records = (await admin.listOffsets("data", 0)).nextOffset;
  }
  admin.close();
  await broker.stop();
  const baseline = args.text("baseline");
  const baselineMain = baseline === "" ? undefined : path.resolve(baseline, "src/main.ts");
  const tlsArgs = ["--tls-cert", certs.certFile, "--tls-key", certs.keyFile];
  const variants: Record<string, { brokerArgs: string[]; loadArgs: string[]; main?: string }> = {
    "plain, sendfile": { brokerArgs: ["--fetch-path", "sendfile"], loadArgs: [] },
    "plain, copy": { brokerArgs: ["--fetch-path", "copy"], loadArgs: [] },
    "TLS (copy)": { brokerArgs: tlsArgs, loadArgs: [certs.caFile] },
    ...(baselineMain === undefined
      ? {}
      : {
          "baseline: plain, copy": { brokerArgs: ["--fetch-path", "copy"], loadArgs: [], main: baselineMain },
          "baseline: TLS (copy)": { brokerArgs: tlsArgs, loadArgs: [certs.caFile], main: baselineMain },
        }),
  };
  if (baselineMain !== undefined)
    console.log(`\n"baseline" = ${path.resolve(baseline)}; the others: this checkout`);
  const results = new Map<string, { mbps: number[]; cpuPerGib: number[] }>();
  const names = Object.keys(variants);
  console.log(
    `\n## consume, TLS against plain (${records} records of ${recordBytes} B written under durability append in batches of 1000; ` +
      `1 connection, FETCH maxBytes 1 MiB, the client checks every CRC; ${rounds} rounds, variants interleaved in a rotating order)\n`,
  );
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length]!;
      const variant = variants[name]!;
      broker = await startBrokerProcess(directory, variant.brokerArgs, variant.main);
      const load = [String(broker.port), "data", String(records), String(2 ** 20), ...variant.loadArgs];
      await runLoad(path.join(LOAD, "consume.ts"), load); // page-cache warm-up
      const before = brokerCpuSeconds(broker.pid);
      const result = (await runLoad(path.join(LOAD, "consume.ts"), load)) as ThroughputResult;
      const cpu = brokerCpuSeconds(broker.pid) - before;
      await broker.stop();
      const entry = results.get(name) ?? { mbps: [], cpuPerGib: [] };
      entry.mbps.push(result.megabytesPerSecond);
      entry.cpuPerGib.push(cpu / (result.bytes / 2 ** 30));
      results.set(name, entry);
    }
  }
  console.log("| variant | MB/s median | MB/s range | broker CPU s per GiB, median | range |");
  console.log("|---|---|---|---|---|");
  for (const name of names) {
    const { mbps, cpuPerGib } = results.get(name)!;
    console.log(
      `| ${name} | ${median(mbps).toFixed(0)} | ${Math.min(...mbps).toFixed(0)}–${Math.max(...mbps).toFixed(0)} | ` +
        `${median(cpuPerGib).toFixed(2)} | ${Math.min(...cpuPerGib).toFixed(2)}–${Math.max(...cpuPerGib).toFixed(2)} |`,
    );
  }
}

const directory = measurementDirectory("network");
console.log(
  `# booblik network benchmark\n\n${describeMachine(directory.fileSystem)}\ndata: ${directory.path}`,
);
try {
  if (section === "produce" || section === "all") await produceSection(directory.path);
  if (section === "consume" || section === "all") await consumeSection(directory.path);
  if (section === "latency" || section === "all") await latencySection(directory.path);
  if (section === "tls" || section === "all") await tlsSection(directory.path);
} finally {
  directory.remove();
}
