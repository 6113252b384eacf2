/**
 * Per-request cost (issue 13): small PRODUCEs against Redis on the same machine, in one run.
 *
 *   bun bench/small-requests.bench.ts [--baseline=<another checkout>] [--seconds=4] [--warmup=2] [--rounds=3]
 *     [--redis=yes|no] [--shapes=all|<records per request>x<requests per round trip>,…] [--policies=append,force]
 *     [--connections=16]
 *
 * Shapes (100-byte records, 16 connections unless told otherwise; `all` is these three): 1 record per request with 1 round trip at a time per
 * connection (vs `redis-benchmark -P 1`), 10 records per request (vs `-P 10`: 10 records per round
 * trip), 1 record per request with 8 requests per round trip (vs `-P 8`). Durability pairs: booblik
 * `append` with Redis `appendfsync everysec`, `force` with `appendfsync always` (Redis writes and
 * fsyncs once per event-loop turn for all clients, booblik forces once per group commit).
 *
 * Both brokers are driven the same way: bench/load/produce-pipelined.ts writes a round of
 * `pipeline` requests per connection in one socket write and waits for all its answers, as
 * redis-benchmark does. Redis runs `XADD s * v <100 bytes>` (append to a stream), AOF on, no RDB.
 * Systems interleave (A, B, Redis, then rotated) with a fresh data directory and a `sync` before
 * each run; `--rounds` repetitions; median and range per system; the load average (1 min) is
 * printed per row. CPU: the broker's (or redis-server's) utime + stime over the run, per record
 * (ticks of 10 ms, so short runs are coarse).
 * Warm-up: before each measured run, the same load runs for `--warmup` seconds against the same
 * server process (both systems), and only the run after it is measured. Why: JavaScriptCore compiles
 * booblik's hot path during the first seconds of load (0.35-0.53 s of CPU on its JIT threads;
 * bench/force-turns.bench.ts prints it), on the core the load generator needs; a server that runs
 * for days pays it once. 2 s is enough under `append`; `force` rows at one record per request still
 * compile for about 0.1 s after it (docs/benchmarks.md). `--warmup=0` measures from the first
 * request, as this benchmark did before.
 * A is the baseline checkout (its src/main.ts; the wire protocol is the same), B this one.
 * Data goes to BOOBLIK_BENCH_DIR (never tmpfs).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { countFor, redisBenchmarkXadd, rememberRate, startRedisServer } from "./lib/peer-tools.ts";
import { brokerCpuSeconds, runLoad, startBrokerProcess } from "./lib/processes.ts";
import { median, medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/small-requests.bench.ts [--baseline=<checkout>] [--seconds=4] [--warmup=2] [--rounds=3] [--redis=yes|no] [--shapes=all|1x1,10x1,1x8] [--policies=append,force] [--connections=16]",
  options: {
    baseline: "",
    seconds: "4",
    warmup: "2",
    rounds: "3",
    redis: "yes",
    shapes: "all",
    policies: "append,force",
    connections: "16",
  },
});
const seconds = args.number("seconds");
const warmupSeconds = args.number("warmup");
const rounds = args.number("rounds");
const baseline = args.text("baseline");
const withRedis = args.text("redis") === "yes" && Bun.which("redis-server") !== null;
if (args.text("redis") === "yes" && !withRedis) console.log("redis-server not found: Redis rows left out");
const HERE = path.resolve(import.meta.dir, "..");
const LOAD = path.join(HERE, "bench/load/produce-pipelined.ts");
const CONNECTIONS = args.number("connections");
const RECORD_BYTES = 100;

interface Shape {
  batch: number;
  pipeline: number;
}
const ALL_SHAPES: Shape[] = [
  { batch: 1, pipeline: 1 },
  { batch: 10, pipeline: 1 },
  { batch: 1, pipeline: 8 },
];
const shapes =
  args.text("shapes") === "all"
    ? ALL_SHAPES
    : args
        .text("shapes")
        .split(",")
        .map((s) => {
          const [batch, pipeline] = s.split("x").map(Number);
          return { batch: batch!, pipeline: pipeline! };
        });
const policies = args.text("policies").split(",") as ("append" | "force")[];

type System = "A" | "B" | "R";
const systems: System[] = [
  ...(baseline === "" ? [] : (["A"] as const)),
  "B",
  ...(withRedis ? (["R"] as const) : []),
];
const mainOf: Record<"A" | "B", string> = {
  A: baseline === "" ? "" : path.resolve(baseline, "src/main.ts"),
  B: path.join(HERE, "src/main.ts"),
};

interface Run {
  recordsPerSecond: number;
  cpuMicrosPerRecord: number;
}

async function runBooblik(which: "A" | "B", dataDir: string, policy: string, shape: Shape): Promise<Run> {
  Bun.spawnSync(["sync"]);
  const broker = await startBrokerProcess(dataDir, [], mainOf[which]);
  try {
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await admin.createTopic("small", { durability: policy as "append" | "force" });
    admin.close();
    const load = (forSeconds: number) =>
      runLoad(LOAD, [
        String(broker.port),
        "small",
        String(RECORD_BYTES),
        String(shape.batch),
        String(CONNECTIONS),
        String(forSeconds),
        String(shape.pipeline),
      ]) as Promise<{ recordsPerSecond: number; records: number }>;
    if (warmupSeconds > 0) await load(warmupSeconds);
    const cpuBefore = brokerCpuSeconds(broker.pid);
    const result = await load(seconds);
    const cpu = brokerCpuSeconds(broker.pid) - cpuBefore;
    return { recordsPerSecond: result.recordsPerSecond, cpuMicrosPerRecord: (cpu / result.records) * 1e6 };
  } finally {
    await broker.stop();
  }
}

async function runRedis(dataDir: string, policy: string, shape: Shape): Promise<Run> {
  Bun.spawnSync(["sync"]);
  const server = await startRedisServer(dataDir, policy === "force" ? "always" : "everysec");
  try {
    // Redis pipelines commands, one record each: `batch` records per request become `batch`
    // commands per round trip.
    const depth = shape.batch * shape.pipeline;
    const xadd = (requests: number) =>
      redisBenchmarkXadd({
        port: server.port,
        connections: CONNECTIONS,
        pipeline: depth,
        requests,
        stream: "s",
      });
    const requests = await countFor(
      `${policy}/${depth}/${CONNECTIONS}`,
      seconds,
      (n) => xadd(n).recordsPerSecond,
      Math.max(2_000, 2 * depth * CONNECTIONS),
    );
    if (warmupSeconds > 0) xadd(Math.max(2_000, Math.round((requests / seconds) * warmupSeconds)));
    const cpuBefore = brokerCpuSeconds(server.pid);
    const { recordsPerSecond, seconds: elapsed } = xadd(requests);
    const cpu = brokerCpuSeconds(server.pid) - cpuBefore;
    rememberRate(`${policy}/${depth}/${CONNECTIONS}`, recordsPerSecond);
    // CPU per command (one record) over the wall time of the whole redis-benchmark run.
    return { recordsPerSecond, cpuMicrosPerRecord: (cpu / (recordsPerSecond * elapsed)) * 1e6 };
  } finally {
    await server.stop();
  }
}

const directory = measurementDirectory("small-requests");
console.log(describeMachine(directory.fileSystem));
console.log(
  `${os.cpus().length} cores shared by broker and load generator; ${seconds} s per measured run after ${warmupSeconds} s of warm-up; ${rounds} rounds; ` +
    `systems interleaved (${systems.join(", ")}); fresh data directory and sync before each run`,
);
console.log(
  `A = ${baseline === "" ? "(none)" : `baseline ${baseline}`}; B = this checkout; R = ${
    withRedis
      ? Bun.spawnSync(["redis-server", "--version"]).stdout.toString().trim().split(" ").slice(0, 3).join(" ")
      : "(none)"
  }`,
);
console.log(
  `${RECORD_BYTES} B records, ${CONNECTIONS} connections, file write path; load: bench/load/produce-pipelined.ts (booblik), redis-benchmark --csv XADD (Redis)\n`,
);
console.log(
  "| policy (Redis appendfsync) | records/request × requests/round trip (Redis -P) | load avg | A records/s median (range) | B records/s median (range) | Redis records/s median (range) | B/A | B/Redis | server CPU µs/record A, B, Redis |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
let run = 0;
try {
  for (const policy of policies) {
    for (const shape of shapes) {
      const results: Record<System, Run[]> = { A: [], B: [], R: [] };
      const loads: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const order = systems.map((_, i) => systems[(i + round) % systems.length]!);
        for (const which of order) {
          loads.push(loadAverage());
          const dataDir = path.join(directory.path, `run-${run++}`);
          const result =
            which === "R"
              ? await runRedis(dataDir, policy, shape)
              : await runBooblik(which, dataDir, policy, shape);
          results[which].push(result);
          fs.rmSync(dataDir, { recursive: true, force: true });
        }
      }
      const cell = (runs: Run[]) => {
        if (runs.length === 0) return "-";
        const values = runs.map((r) => r.recordsPerSecond);
        return medianRange(values, formatRate, "–");
      };
      const ratio = (x: Run[], y: Run[]) =>
        x.length === 0 || y.length === 0
          ? "-"
          : (median(x.map((r) => r.recordsPerSecond)) / median(y.map((r) => r.recordsPerSecond))).toFixed(2);
      const cpu = (runs: Run[]) =>
        runs.length === 0 ? "-" : median(runs.map((r) => r.cpuMicrosPerRecord)).toFixed(1);
      console.log(
        `| ${policy} (${policy === "force" ? "always" : "everysec"}) | ${shape.batch} × ${shape.pipeline} (-P ${
          shape.batch * shape.pipeline
        }) | ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} | ${cell(results.A)} | ${cell(
          results.B,
        )} | ${cell(results.R)} | ${ratio(results.B, results.A)} | ${ratio(results.B, results.R)} | ${cpu(results.A)}, ${cpu(
          results.B,
        )}, ${cpu(results.R)} |`,
      );
    }
  }
} finally {
  directory.remove();
}
