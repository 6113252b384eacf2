/**
 * What the produce → fetch latency tail is made of (issue 13): one fixed-rate run of
 * bench/load/latency.ts against a fresh broker, with every process's collector logging its pauses
 * (JSC's `logGC`), and each FETCH response that took longer than `--slow-us` from the send checked
 * against them.
 *
 *   bun bench/latency-attribution.ts [--rate=50000] [--seconds=5] [--warmup=1] [--policy=append]
 *                                    [--slow-us=1000] [--runs=3] [--baseline=<checkout>] [--keep-trace=<path>]
 *
 * For each slow response (its oldest record's time from send to arrival at the consumer), the tool
 * asks which processes had a collection that overlapped that interval: the broker's, the load
 * generators' (producer and consumer share one log, as the consumer is the producer's child), both,
 * or none. A pause is placed by the time its log line was read (here, from a pipe) minus the
 * collection's length; a stamp read late (this process waited for a CPU) can move a pause out of
 * the interval it belongs to, so "none" is an upper bound on what no collector explains.
 * It also prints, per process, the main thread's run time and run-queue wait
 * (/proc/<pid>/task/<pid>/schedstat) over the measured part of the run: time the thread was ready
 * and had no CPU is the other cause of a tail that a pause does not explain.
 * With a baseline, each run is done with that checkout's broker (its src/main.ts) too, right after
 * this one's, under the same generator (this checkout's bench/load/latency.ts).
 * Data goes to BOOBLIK_BENCH_DIR (never tmpfs); the load average is printed with every run.
 */
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { mainThreadSchedule } from "./lib/processes.ts";
import { median } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/latency-attribution.ts [--rate=50000] [--seconds=5] [--warmup=1] [--policy=append] [--slow-us=1000] [--runs=3] [--baseline=<checkout>] [--keep-trace=<path>]",
  sections: ["all"],
  options: {
    rate: "50000",
    seconds: "5",
    warmup: "1",
    policy: "append",
    "slow-us": "1000",
    runs: "3",
    baseline: "",
    "keep-trace": "",
  },
});
const rate = args.number("rate");
const seconds = args.number("seconds");
const warmupSeconds = args.number("warmup");
const policy = args.text("policy") as "append" | "force";
const slowUs = args.number("slow-us");
const runs = args.number("runs");
const MAIN = path.join(import.meta.dir, "../src/main.ts");
const baseline = args.text("baseline");
/** With `--keep-trace=<path>`, each run's consumer trace is kept as <path>.1, <path>.2, … */
const keepTrace = args.text("keep-trace");
let tracesKept = 0;
const LATENCY = path.join(import.meta.dir, "load/latency.ts");
/** The shared clock of bench/load/latency.ts. */
const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;

interface Pause {
  /** When the collection ended (the time its log line was read), µs on the shared clock. */
  endUs: number;
  /** The collection's length from start to end (JSC's "cycle"), µs; pauses lie within it. */
  cycleUs: number;
  /** Time the mutator was stopped (JSC's "p="), µs. */
  pauseUs: number;
}

/** Reads a child's stderr, stamping every collection that ends with the time its line arrived. */
async function collectPauses(stream: ReadableStream<Uint8Array>, into: Pause[]): Promise<void> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) {
    const stampUs = nowUs();
    text += decoder.decode(chunk, { stream: true });
    let newline = text.indexOf("\n");
    while (newline >= 0) {
      const line = text.slice(0, newline);
      text = text.slice(newline + 1);
      // "[GC<0x…>: … p=1.05ms (max …), cycle 1.03ms END]" (JSC_logGC=1, Bun 1.4.4)
      const match = /p=([0-9.]+)ms.*cycle ([0-9.]+)ms END\]/.exec(line);
      if (match)
        into.push({ endUs: stampUs, pauseUs: Number(match[1]) * 1000, cycleUs: Number(match[2]) * 1000 });
      // Everything else of JSC's log (multi-line collections) is dropped; the rest is the process's own.
      else if (!/GC|kb|Worklists|Collector:|Mutator:|p=[0-9]/.test(line)) process.stderr.write(`${line}\n`);
      newline = text.indexOf("\n");
    }
  }
}

function childrenOf(pid: number): number[] {
  try {
    return fs
      .readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter((p) => p !== "")
      .map(Number);
  } catch {
    return [];
  }
}

async function oneRun(dataDir: string, main: string, brokerName: string): Promise<void> {
  fs.mkdirSync(dataDir, { recursive: true });
  Bun.spawnSync(["sync"]);
  const gcEnv = { ...process.env, BUN_JSC_logGC: "1", BOOBLIK_KAFKA_PORT: "off" };
  const broker = Bun.spawn(
    [process.execPath, main, "--data-dir", dataDir, "--host", "127.0.0.1", "--port", "0"],
    { stdout: "pipe", stderr: "pipe", env: gcEnv },
  );
  const brokerPauses: Pause[] = [];
  const brokerLog = collectPauses(broker.stderr, brokerPauses);
  const reader = broker.stdout.getReader();
  let banner = "";
  while (!banner.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the broker exited before starting: ${banner}`);
    banner += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  void (async () => {
    for await (const _ of broker.stdout) {
      // drained so the broker never blocks on a full pipe
    }
  })().catch(() => undefined);
  const port = Number(/listening on [^:]+:(\d+)/.exec(banner)?.[1]);
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port });
  await admin.createTopic("latency", { durability: policy });
  admin.close();

  const loadBefore = loadAverage();
  const tracePath = path.join(dataDir, "trace.txt");
  const producer = Bun.spawn(
    [
      process.execPath,
      LATENCY,
      String(port),
      "latency",
      String(rate),
      String(seconds),
      "100",
      String(warmupSeconds),
      tracePath,
    ],
    { stdout: "pipe", stderr: "pipe", env: gcEnv },
  );
  const clientPauses: Pause[] = [];
  const clientLog = collectPauses(producer.stderr, clientPauses);
  const resultText = new Response(producer.stdout).text();
  // The measured part starts after the warm-up: schedule counters are read then and at the end.
  await Bun.sleep(warmupSeconds * 1000 + 200);
  const pids: [string, number][] = [
    ["broker", broker.pid],
    ["producer", producer.pid],
    ...childrenOf(producer.pid).map((pid): [string, number] => ["consumer", pid]),
  ];
  const before = new Map(pids.map(([name, pid]) => [name, mainThreadSchedule(pid)]));
  const beforeMs = performance.now();
  const after = new Map<string, { runNs: number; waitNs: number }>();
  let afterMs = beforeMs;
  // Read again shortly before the producer ends (seconds after the warm-up), while all still run.
  await Bun.sleep(Math.max(0, seconds * 1000 - 600));
  for (const [name, pid] of pids) {
    try {
      after.set(name, mainThreadSchedule(pid));
    } catch {
      // exited already
    }
  }
  afterMs = performance.now();
  const code = await producer.exited;
  const result = JSON.parse((await resultText).trim().split("\n").at(-1) ?? "{}") as Record<string, number>;
  await clientLog;
  broker.kill("SIGTERM");
  await broker.exited;
  await brokerLog;
  if (code !== 0) throw new Error(`latency.ts exited with ${code}`);

  const trace = fs
    .readFileSync(tracePath, "utf8")
    .trim()
    .split("\n")
    .map((line) => line.split(" ").map(Number) as [number, number, number]);
  if (keepTrace !== "") fs.copyFileSync(tracePath, `${keepTrace}.${++tracesKept}`);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const startUs = trace[0]![0];
  const endUs = trace.at(-1)![0];
  const inRun = (pauses: Pause[]) => pauses.filter((p) => p.endUs >= startUs && p.endUs - p.cycleUs <= endUs);
  const broker_ = inRun(brokerPauses);
  const clients = inRun(clientPauses);
  const overlaps = (pauses: Pause[], fromUs: number, toUs: number) =>
    pauses.some((p) => p.endUs >= fromUs && p.endUs - p.cycleUs <= toUs);
  const causes = new Map<string, { responses: number; records: number }>();
  let slowResponses = 0;
  let records = 0;
  for (const [arrivedUs, count, worstUs] of trace) {
    records += count;
    if (worstUs <= slowUs) continue;
    slowResponses++;
    const fromUs = arrivedUs - worstUs;
    const inBroker = overlaps(broker_, fromUs, arrivedUs);
    const inClients = overlaps(clients, fromUs, arrivedUs);
    const cause =
      inBroker && inClients ? "both" : inBroker ? "broker" : inClients ? "load generators" : "none";
    const entry = causes.get(cause) ?? { responses: 0, records: 0 };
    entry.responses++;
    entry.records += count;
    causes.set(cause, entry);
  }
  const pauseSummary = (pauses: Pause[]) => {
    const sorted = pauses.map((p) => p.pauseUs / 1000).sort((a, b) => a - b);
    const total = sorted.reduce((a, b) => a + b, 0);
    return sorted.length === 0
      ? "none"
      : `${sorted.length} (${(sorted.length / ((endUs - startUs) / 1e6)).toFixed(1)}/s), pause median ${median(sorted).toFixed(2)} ms, max ${sorted.at(-1)!.toFixed(2)} ms, total ${total.toFixed(1)} ms`;
  };
  const elapsedS = (afterMs - beforeMs) / 1000;
  console.log(
    `\nrun (broker: ${brokerName}): load avg ${loadBefore.toFixed(1)}→${loadAverage().toFixed(1)}; ${policy}, ${rate / 1000} K records/s of 100 B, ` +
      `${seconds} s measured after ${warmupSeconds} s of warm-up; p50 ${result.p50Ms?.toFixed(2)} ms, p99 ${result.p99Ms?.toFixed(2)} ms, ` +
      `p99.9 ${result.p999Ms?.toFixed(2)} ms from due; from send p50 ${result.sentP50Ms?.toFixed(2)}, p99 ${result.sentP99Ms?.toFixed(2)} ms; ` +
      `warm-up p99 ${result.warmupP99Ms?.toFixed(2)} ms`,
  );
  console.log(
    `- collections in the measured part: broker ${pauseSummary(broker_)}; load generators ${pauseSummary(clients)}`,
  );
  console.log(
    `- ${trace.length} FETCH responses, ${records} records; ${slowResponses} responses over ${slowUs / 1000} ms from send. ` +
      `Overlapping a collection of: ${[...causes]
        .sort((a, b) => b[1].responses - a[1].responses)
        .map(([cause, c]) => `${cause} ${c.responses} (${c.records} records)`)
        .join(", ")}`,
  );
  console.log(
    `- main threads over ${elapsedS.toFixed(1)} s of the measured part, ms per s ran / waited for a CPU: ` +
      pids
        .filter(([name]) => after.has(name))
        .map(([name]) => {
          const a = after.get(name)!;
          const b = before.get(name)!;
          return `${name} ${((a.runNs - b.runNs) / 1e6 / elapsedS).toFixed(0)} / ${((a.waitNs - b.waitNs) / 1e6 / elapsedS).toFixed(0)}`;
        })
        .join(", "),
  );
}

const directory = measurementDirectory("latency-attribution");
console.log(
  `# latency attribution (bench/latency-attribution.ts)\n\n${describeMachine(directory.fileSystem)}\ndata: ${directory.path}`,
);
try {
  for (let run = 0; run < runs; run++) {
    await oneRun(path.join(directory.path, `run-${run}`), MAIN, "this checkout");
    if (baseline !== "")
      await oneRun(
        path.join(directory.path, `run-${run}-baseline`),
        path.resolve(baseline, "src/main.ts"),
        `baseline ${path.resolve(baseline)}`,
      );
  }
} finally {
  directory.remove();
}
