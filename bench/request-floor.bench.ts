/**
 * Where the CPU of one small request goes (issue 13): booblik, Redis and a bare Bun server side by
 * side, with the server's user and system CPU per request and the load generator's own CPU.
 *
 *   bun bench/request-floor.bench.ts [--seconds=3] [--warmup=2] [--rounds=3] [--depths=1,8] [--policies=append]
 *     [--baseline=<another checkout>] [--redis=yes|no] [--floor=yes|no]
 *
 * One 100-byte record per request, 16 connections, `depth` requests per round trip per connection
 * (redis-benchmark -P depth). Systems, interleaved and rotated per round, each in its own process
 * with its load generator in another:
 * - booblik: src/main.ts, a fresh data directory (BOOBLIK_BENCH_DIR, never tmpfs), file write path,
 *   the topic under the row's policy; driven by bench/load/produce-pipelined.ts.
 * - Redis: redis-server with AOF (`everysec` for `append`, `always` for `force`), no RDB; driven by
 *   redis-benchmark `XADD s * v <the same 100 bytes>`.
 * - floor (`append` rows only): bench/load/produce-floor-server.ts, a Bun server that answers every
 *   PRODUCE frame with a fixed answer and stores nothing; driven by the same produce-pipelined.ts.
 *   What it costs per request is the runtime's and the kernel's share of booblik's cost.
 * - baseline (with `--baseline`): another checkout's src/main.ts, run and driven as booblik is (the
 *   wire protocol is the same since issue 11): an A/B of two brokers with user and system CPU apart.
 *
 * CPU: the server's utime and stime from /proc/<pid>/stat over the load run (ticks of 10 ms), and
 * the generator's from its rusage, each divided by the requests the generator completed. Each
 * measured run follows `--warmup` seconds of the same load against the same server process (as in
 * bench/small-requests.bench.ts: JavaScriptCore compiles the hot path in the first seconds). On a
 * machine with 2 cores, server and generator share the CPU: requests/s ≈ 2 cores / (server +
 * generator µs per request) once both are busy.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { redisBenchmarkXadd, startRedisServer } from "./lib/peer-tools.ts";
import { brokerCpuSeconds, firstOutput, runLoadMeasured, startBrokerProcess } from "./lib/processes.ts";
import { median, medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/request-floor.bench.ts [--seconds=3] [--warmup=2] [--rounds=3] [--depths=1,8] [--policies=append] [--baseline=<checkout>] [--redis=yes|no] [--floor=yes|no]",
  options: {
    seconds: "3",
    warmup: "2",
    rounds: "3",
    depths: "1,8",
    policies: "append",
    baseline: "",
    redis: "yes",
    floor: "yes",
  },
});
const seconds = args.number("seconds");
const warmupSeconds = args.number("warmup");
const rounds = args.number("rounds");
const depths = args.text("depths").split(",").map(Number);
const policies = args.text("policies").split(",") as ("append" | "force")[];
const HERE = path.resolve(import.meta.dir, "..");
const LOAD = path.join(HERE, "bench/load/produce-pipelined.ts");
const FLOOR = path.join(HERE, "bench/load/produce-floor-server.ts");
const CONNECTIONS = 16;
const RECORD_BYTES = 100;
const baseline = args.text("baseline");
const BASELINE_MAIN = baseline === "" ? "" : path.join(path.resolve(baseline), "src/main.ts");
if (BASELINE_MAIN !== "" && !fs.existsSync(BASELINE_MAIN)) {
  console.error(`--baseline: ${BASELINE_MAIN} does not exist`);
  process.exit(2);
}
const redisWanted = args.text("redis") !== "no";
const withRedis = redisWanted && Bun.which("redis-server") !== null && Bun.which("redis-benchmark") !== null;
if (redisWanted && !withRedis) console.log("redis-server or redis-benchmark not found: Redis rows left out");
const withFloor = args.text("floor") !== "no";

type System = "booblik" | "baseline" | "Redis" | "floor";

interface Run {
  requestsPerSecond: number;
  serverUserMicros: number;
  serverSystemMicros: number;
  generatorMicros: number;
}

const MICROS_PER_SECOND = 1e6;

/** produce-pipelined.ts against `port` for `forSeconds`; its CPU from rusage. */
async function drive(
  port: number,
  depth: number,
  forSeconds = seconds,
): Promise<{ requests: number; seconds: number; cpuSeconds: number }> {
  const { result, cpuSeconds } = await runLoadMeasured(LOAD, [
    String(port),
    "small",
    String(RECORD_BYTES),
    "1",
    String(CONNECTIONS),
    String(forSeconds),
    String(depth),
  ]);
  const { requests, seconds: elapsed } = result as { requests: number; seconds: number };
  return { requests, seconds: elapsed, cpuSeconds };
}

function perRequest(
  requests: number,
  elapsedSeconds: number,
  server: { user: number; system: number },
  generatorCpuSeconds: number,
): Run {
  return {
    requestsPerSecond: requests / elapsedSeconds,
    serverUserMicros: (server.user / requests) * MICROS_PER_SECOND,
    serverSystemMicros: (server.system / requests) * MICROS_PER_SECOND,
    generatorMicros: (generatorCpuSeconds / requests) * MICROS_PER_SECOND,
  };
}

function cpuDelta(pid: number, before: { user: number; system: number }): { user: number; system: number } {
  const after = brokerCpuSeconds(pid, true);
  return { user: after.user - before.user, system: after.system - before.system };
}

async function runBooblik(dataDir: string, policy: string, depth: number, main?: string): Promise<Run> {
  Bun.spawnSync(["sync"]);
  const broker = await startBrokerProcess(dataDir, [], main);
  try {
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await admin.createTopic("small", { durability: policy as "append" | "force" });
    admin.close();
    if (warmupSeconds > 0) await drive(broker.port, depth, warmupSeconds);
    const before = brokerCpuSeconds(broker.pid, true);
    const load = await drive(broker.port, depth);
    return perRequest(load.requests, load.seconds, cpuDelta(broker.pid, before), load.cpuSeconds);
  } finally {
    await broker.stop();
  }
}

async function runFloor(depth: number): Promise<Run> {
  const server = Bun.spawn([process.execPath, FLOOR], { stdout: "pipe", stderr: "inherit" });
  try {
    const text = await firstOutput(server.stdout, "produce-floor-server.ts ended before listening");
    const port = (JSON.parse(text.split("\n")[0]!) as { port: number }).port;
    if (warmupSeconds > 0) await drive(port, depth, warmupSeconds);
    const before = brokerCpuSeconds(server.pid, true);
    const load = await drive(port, depth);
    return perRequest(load.requests, load.seconds, cpuDelta(server.pid, before), load.cpuSeconds);
  } finally {
    server.kill();
    await server.exited;
  }
}

async function runRedis(dataDir: string, policy: string, depth: number, requests: number): Promise<Run> {
  Bun.spawnSync(["sync"]);
  const server = await startRedisServer(dataDir, policy === "force" ? "always" : "everysec");
  const xadd = (count: number) =>
    redisBenchmarkXadd({
      port: server.port,
      connections: CONNECTIONS,
      pipeline: depth,
      requests: count,
      stream: "s",
    });
  try {
    if (warmupSeconds > 0) xadd(Math.max(2_000, Math.round((requests / seconds) * warmupSeconds)));
    const before = brokerCpuSeconds(server.pid, true);
    const run = xadd(requests);
    const serverCpu = cpuDelta(server.pid, before);
    // redis-benchmark's own rate (what its users read), as in small-requests.bench.ts; CPU per request
    // over all the requests of the run.
    return {
      ...perRequest(requests, run.seconds, serverCpu, run.generatorCpuSeconds),
      requestsPerSecond: run.recordsPerSecond,
    };
  } finally {
    await server.stop();
  }
}

const directory = measurementDirectory("request-floor");
console.log(describeMachine(directory.fileSystem));
console.log(
  `${os.cpus().length} cores shared by server and load generator; ${seconds} s per measured run after ${warmupSeconds} s of warm-up; ${rounds} rounds; systems interleaved; ` +
    `${RECORD_BYTES} B records, 1 record per request, ${CONNECTIONS} connections; fresh data directory and sync before each booblik and Redis run`,
);
if (BASELINE_MAIN !== "")
  console.log(`baseline = ${BASELINE_MAIN}; booblik = ${path.join(HERE, "src/main.ts")}`);
console.log(
  "load: bench/load/produce-pipelined.ts (booblik, baseline, floor), redis-benchmark --csv XADD (Redis)\n",
);
console.log(
  "| policy (Redis appendfsync) | requests per round trip | system | load avg | requests/s median (range) | server user µs/request | server system µs/request | server total µs/request | generator µs/request |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
let runIndex = 0;
try {
  for (const policy of policies) {
    for (const depth of depths) {
      const systems: System[] = [
        ...(BASELINE_MAIN !== "" ? (["baseline"] as const) : []),
        "booblik",
        ...(withRedis ? (["Redis"] as const) : []),
        ...(withFloor && policy === "append" ? (["floor"] as const) : []),
      ];
      const results = new Map<System, Run[]>(systems.map((s) => [s, []]));
      const loads = new Map<System, number[]>(systems.map((s) => [s, []]));
      let lastBooblikRequests = 100_000;
      for (let round = 0; round < rounds; round++) {
        const order = systems.map((_, i) => systems[(i + round) % systems.length]!);
        for (const system of order) {
          loads.get(system)!.push(loadAverage());
          const dataDir = path.join(directory.path, `run-${runIndex++}`);
          const run =
            system === "booblik"
              ? await runBooblik(dataDir, policy, depth)
              : system === "baseline"
                ? await runBooblik(dataDir, policy, depth, BASELINE_MAIN)
                : system === "floor"
                  ? await runFloor(depth)
                  : await runRedis(dataDir, policy, depth, lastBooblikRequests);
          if (system === "booblik") lastBooblikRequests = Math.round(run.requestsPerSecond * seconds);
          results.get(system)!.push(run);
          fs.rmSync(dataDir, { recursive: true, force: true });
        }
      }
      for (const system of systems) {
        const runs = results.get(system)!;
        const load = loads.get(system)!;
        const micros = (pick: (r: Run) => number) => medianRange(runs.map(pick), (v) => v.toFixed(2), "–");
        console.log(
          `| ${policy} (${policy === "force" ? "always" : "everysec"}) | ${depth} | ${system} | ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} | ${medianRange(
            runs.map((r) => r.requestsPerSecond),
            formatRate,
            "–",
          )} | ${micros((r) => r.serverUserMicros)} | ${micros((r) => r.serverSystemMicros)} | ${median(
            runs.map((r) => r.serverUserMicros + r.serverSystemMicros),
          ).toFixed(2)} | ${micros((r) => r.generatorMicros)} |`,
        );
      }
    }
  }
} finally {
  directory.remove();
}
