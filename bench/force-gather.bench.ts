/**
 * The gather before a force on the loop (src/broker/partition.ts, issue 13), against another
 * checkout's broker, under two loads on a `force` topic:
 *
 *   bun bench/force-gather.bench.ts --baseline=<checkout> [--seconds=5] [--warmup=2] [--rounds=3]
 *     [--connections=16] [--mean-gap-ms=2]
 *
 * - closed loop: bench/load/produce-pipelined.ts, one 100 B record per request, one request in
 *   flight on each connection (each sends when answered): the load the gather is for; records/s.
 * - open loop: bench/load/produce-open-loop.ts, each connection sends one 100 B record at random
 *   times (exponential gaps of `--mean-gap-ms` on average), whatever its answers do: the load a
 *   gather must not delay; latency from send p50/p99/p99.9 and records/s.
 * A = the baseline's src/main.ts, B = this checkout's. Each run: a fresh broker and data directory,
 * `--warmup` seconds of the same load on another topic (not measured), then `--seconds` measured.
 * Loads and brokers alternate (A, B, then B, A in the next round); median (range) over rounds, the
 * load average (1 min) and the broker's CPU µs per record with each row. 100 B records, file write
 * path. Data goes to BOOBLIK_BENCH_DIR (never tmpfs).
 */
import path from "node:path";
import { BooblikClient } from "../src/client/index.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { brokerCpuSeconds, runLoad, startBrokerProcess } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/force-gather.bench.ts --baseline=<checkout> [--seconds=5] [--warmup=2] [--rounds=3] [--connections=16] [--mean-gap-ms=2]",
  options: { baseline: "", seconds: "5", warmup: "2", rounds: "3", connections: "16", "mean-gap-ms": "2" },
});
const baseline = args.text("baseline");
if (baseline === "") {
  console.error("--baseline=<checkout> is required (the broker to compare with)");
  process.exit(2);
}
const seconds = args.number("seconds");
const warmupSeconds = args.number("warmup");
const rounds = args.number("rounds");
const connections = args.number("connections");
const meanGapMs = args.number("mean-gap-ms");
const RECORD_BYTES = 100;
const LOAD = path.join(import.meta.dir, "load");
const BROKERS = { A: path.resolve(baseline, "src/main.ts"), B: undefined } as const;
type BrokerName = keyof typeof BROKERS;
const LOADS = {
  closed: {
    label: `closed loop: ${connections} connections, 1 record per request, 1 in flight each`,
    script: path.join(LOAD, "produce-pipelined.ts"),
    args: (port: number, topic: string, forSeconds: number) => [
      String(port),
      topic,
      String(RECORD_BYTES),
      "1",
      String(connections),
      String(forSeconds),
      "1",
    ],
  },
  open: {
    label: `open loop: ${connections} connections, 1 record per request at random times, mean gap ${meanGapMs} ms each`,
    script: path.join(LOAD, "produce-open-loop.ts"),
    args: (port: number, topic: string, forSeconds: number) => [
      String(port),
      topic,
      String(RECORD_BYTES),
      String(connections),
      String(forSeconds),
      String(meanGapMs),
    ],
  },
} as const;
type LoadName = keyof typeof LOADS;

interface Row {
  recordsPerSecond: number[];
  p50Ms: number[];
  p99Ms: number[];
  p999Ms: number[];
  cpuMicrosPerRecord: number[];
  loadAverages: number[];
}
const rows = new Map<string, Row>();
const row = (load: LoadName, broker: BrokerName): Row => {
  const key = `${load} ${broker}`;
  let found = rows.get(key);
  if (found === undefined) {
    found = {
      recordsPerSecond: [],
      p50Ms: [],
      p99Ms: [],
      p999Ms: [],
      cpuMicrosPerRecord: [],
      loadAverages: [],
    };
    rows.set(key, found);
  }
  return found;
};

const directory = measurementDirectory("force-gather");
console.log(describeMachine(directory.fileSystem));
console.log(
  `A = baseline ${baseline}; B = this checkout. Topic under force, file write path, ${RECORD_BYTES} B records; ` +
    `${warmupSeconds} s of warm-up, then ${seconds} s measured per run; ${rounds} rounds\n`,
);
try {
  for (let round = 0; round < rounds; round++) {
    const order: BrokerName[] = round % 2 === 0 ? ["A", "B"] : ["B", "A"];
    for (const loadName of ["closed", "open"] as const) {
      for (const brokerName of order) {
        const load = LOADS[loadName];
        const broker = await startBrokerProcess(
          path.join(directory.path, `${loadName}-${brokerName}-${round}`),
          [],
          BROKERS[brokerName],
        );
        try {
          const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
          await admin.createTopic("warm", { durability: "force" });
          await admin.createTopic("measured", { durability: "force" });
          admin.close();
          if (warmupSeconds > 0) await runLoad(load.script, load.args(broker.port, "warm", warmupSeconds));
          const averageBefore = loadAverage();
          const cpuBefore = brokerCpuSeconds(broker.pid);
          const result = (await runLoad(load.script, load.args(broker.port, "measured", seconds))) as {
            records: number;
            recordsPerSecond: number;
            p50Ms?: number;
            p99Ms?: number;
            p999Ms?: number;
          };
          const cpuSeconds = brokerCpuSeconds(broker.pid) - cpuBefore;
          const into = row(loadName, brokerName);
          into.recordsPerSecond.push(result.recordsPerSecond);
          if (result.p50Ms !== undefined) into.p50Ms.push(result.p50Ms);
          if (result.p99Ms !== undefined) into.p99Ms.push(result.p99Ms);
          if (result.p999Ms !== undefined) into.p999Ms.push(result.p999Ms);
          into.cpuMicrosPerRecord.push((cpuSeconds / result.records) * 1e6);
          into.loadAverages.push(averageBefore);
        } finally {
          await broker.stop();
        }
      }
    }
  }
} finally {
  directory.remove();
}

const ms = (values: number[]) => (values.length === 0 ? "-" : medianRange(values, 2));
console.log(
  "| load | broker | load avg | records/s median (range) | p50 ms | p99 ms | p99.9 ms | broker CPU µs/record |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const loadName of ["closed", "open"] as const)
  for (const brokerName of ["A", "B"] as const) {
    const r = row(loadName, brokerName);
    console.log(
      `| ${LOADS[loadName].label} | ${brokerName} | ${Math.min(...r.loadAverages).toFixed(1)}–${Math.max(...r.loadAverages).toFixed(1)} | ` +
        `${medianRange(r.recordsPerSecond, formatRate)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${ms(r.p999Ms)} | ` +
        `${medianRange(r.cpuMicrosPerRecord, 1)} |`,
    );
  }
