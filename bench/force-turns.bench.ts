/**
 * What `force` adds to the broker's work at one record per request (issue 13): the broker's system
 * calls per event-loop turn and its CPU per record, under `append` and under `force`, one after the
 * other in each round (the policies alternate their order between rounds).
 *
 *   bun bench/force-turns.bench.ts [--seconds=5] [--warmup=2] [--rounds=1] [--baseline=<checkout>]
 *
 * Per policy: a fresh broker (this checkout, file write path) with one topic, driven by
 * bench/load/produce-pipelined.ts in its own process (16 connections, one 100 B record per request,
 * one request in flight each), first for `--warmup` seconds (not measured: JavaScriptCore compiles the
 * hot path then, bench/small-requests.bench.ts), then for `--seconds`. After 1 s of that run,
 * `perf stat -e syscalls:sys_enter_<name>,context-switches -p <broker pid> -- sleep 3` counts the
 * broker's calls (all its threads); its user and system CPU come from /proc/<pid>/stat over the
 * whole measured run. The CPU of its compiler threads (`JITWorker`) is printed for the warm-up and
 * for the measured run. A turn is one `epoll_pwait2`;
 * with one request in flight per connection, `recvfrom` per turn is requests per turn, and `recvfrom`
 * per `fdatasync` is requests per force. With `--baseline` (another checkout; its src/main.ts) each
 * policy runs that broker too, right before this one's ("A" and "B" in the table).
 * Needs `perf` with access to the syscall tracepoints (root, or perf_event_paranoid ≤ -1).
 * Data goes to BOOBLIK_BENCH_DIR (never tmpfs).
 */
import path from "node:path";
import { BooblikClient } from "../src/client/index.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverage, measurementDirectory } from "./lib/environment.ts";
import {
  brokerCpuSeconds,
  perfStatCounts,
  runLoad,
  startBrokerProcess,
  threadsCpuSeconds,
} from "./lib/processes.ts";

const args = parseBenchArgs({
  usage: "bun bench/force-turns.bench.ts [--seconds=5] [--warmup=2] [--rounds=1] [--baseline=<checkout>]",
  options: { seconds: "5", warmup: "2", rounds: "1", baseline: "" },
});
const baseline = args.text("baseline");
const BROKERS: { name: string; main: string | undefined }[] =
  baseline === ""
    ? [{ name: "B", main: undefined }]
    : [
        { name: "A", main: path.resolve(baseline, "src/main.ts") },
        { name: "B", main: undefined },
      ];
if (baseline !== "") console.log(`A = baseline ${baseline}; B = this checkout\n`);
const seconds = args.number("seconds");
const warmupSeconds = args.number("warmup");
const rounds = args.number("rounds");
const CALLS = ["epoll_pwait2", "recvfrom", "sendto", "pwrite64", "fdatasync", "futex"] as const;
const LOAD = path.join(import.meta.dir, "load", "produce-pipelined.ts");

if (Bun.which("perf") === null) {
  console.error("perf not found: install linux-perf (Debian) to count system calls");
  process.exit(2);
}
const directory = measurementDirectory("force-turns");
console.log(describeMachine(directory.fileSystem));
console.log(
  "100 B records, 1 record per request, 1 request in flight on each of 16 connections; file write path; " +
    `${warmupSeconds} s of warm-up, then ${seconds} s of load per run, calls counted over 3 s of it\n`,
);
console.log(
  "| round | policy | broker | load avg | records/s | user µs/record | system µs/record | requests per fdatasync | " +
    `${CALLS.filter((c) => c !== "epoll_pwait2")
      .map((c) => `${c} per turn`)
      .join(" | ")} | context switches per turn | JIT threads' CPU ms: warm-up, measured run |`,
);
console.log(
  `|---|---|---|---|---|---|---|---|${CALLS.slice(1)
    .map(() => "---|")
    .join("")}---|---|`,
);

try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (["append", "force"] as const) : (["force", "append"] as const);
    for (const policy of order)
      for (const variant of BROKERS) {
        const broker = await startBrokerProcess(
          path.join(directory.path, `${policy}-${variant.name}-${round}`),
          [],
          variant.main,
        );
        try {
          const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
          await admin.createTopic("small", { durability: policy });
          admin.close();
          const loadArgs = (forSeconds: number) => [
            String(broker.port),
            "small",
            "100",
            "1",
            "16",
            String(forSeconds),
            "1",
          ];
          const jitAtStart = threadsCpuSeconds(broker.pid, "JITWorker");
          if (warmupSeconds > 0) await runLoad(LOAD, loadArgs(warmupSeconds));
          const jitAfterWarmup = threadsCpuSeconds(broker.pid, "JITWorker");
          const load = loadAverage();
          const cpuBefore = brokerCpuSeconds(broker.pid, true);
          const running = runLoad(LOAD, loadArgs(seconds));
          await Bun.sleep(1000); // counting starts once the load runs; the load itself ends on its own
          const events = [...CALLS.map((c) => `syscalls:sys_enter_${c}`), "context-switches"];
          const perf = Bun.spawn(
            ["perf", "stat", "-x", ",", "-e", events.join(","), "-p", String(broker.pid), "--", "sleep", "3"],
            { stdout: "ignore", stderr: "pipe" },
          );
          const perfText = await new Response(perf.stderr).text();
          await perf.exited;
          const result = (await running) as { recordsPerSecond: number; records: number };
          const cpuAfter = brokerCpuSeconds(broker.pid, true);
          const jitMs = (from: number, to: number) => ((to - from) * 1000).toFixed(0);
          const jitRun = jitMs(jitAfterWarmup, threadsCpuSeconds(broker.pid, "JITWorker"));
          const counts = perfStatCounts(perfText);
          const turns = counts.get("syscalls:sys_enter_epoll_pwait2") ?? Number.NaN;
          const perTurn = (event: string) => ((counts.get(event) ?? Number.NaN) / turns).toFixed(2);
          const forces = counts.get("syscalls:sys_enter_fdatasync") ?? 0;
          // Under `append` the few fdatasyncs are the directory's and background forces, not groups.
          const perForce =
            policy === "append" || forces === 0
              ? "-"
              : ((counts.get("syscalls:sys_enter_recvfrom") ?? Number.NaN) / forces).toFixed(1);
          console.log(
            `| ${round + 1} | ${policy} | ${variant.name} | ${load.toFixed(1)} | ${Math.round(result.recordsPerSecond)} | ` +
              `${(((cpuAfter.user - cpuBefore.user) / result.records) * 1e6).toFixed(1)} | ` +
              `${(((cpuAfter.system - cpuBefore.system) / result.records) * 1e6).toFixed(1)} | ${perForce} | ` +
              `${CALLS.slice(1)
                .map((c) => perTurn(`syscalls:sys_enter_${c}`))
                .join(
                  " | ",
                )} | ${perTurn("context-switches")} | ${jitMs(jitAtStart, jitAfterWarmup)}, ${jitRun} |`,
          );
        } finally {
          await broker.stop();
        }
      }
  }
} finally {
  directory.remove();
}
