/**
 * Where kcat's time goes when it consumes the same 100 B records from booblik and from Apache Kafka
 * (issue 12: the one bench:kafka-peers cell where booblik's median is behind).
 *
 *   bun bench/kafka-peers/kcat-consume-cpu.ts [--rounds=6] [--mib=32] [--record=no|yes]
 *
 * One booblik broker (this checkout, `--kafka-port` on a free port) and one Kafka 4.1.1 node
 * (bench/compat/kafka-node.ts, 1 GiB heap) run side by side. Each gets a topic of one partition
 * filled, unmeasured, by `kcat -P -X linger.ms=1000` from the same file (`--mib` of 100 B
 * records), so that both store the same full batches, as bench:kafka-peers does. Then, alternating
 * the systems and their order per round, the benchmark's `kcat -C … -c N -e -q -f '%o\n'` runs under
 * `perf stat -e task-clock,context-switches,page-faults`: kcat's wall time, CPU, context switches
 * and page faults. Last, one run per system under `strace -f -c` counts kcat's `futex` and
 * `recvmsg` calls. With `--record=yes`, one more run per system under `perf record -g` prints
 * kcat's busiest functions (self time, `perf report --no-children`, threads apart). Every run's
 * output is checked to end at offset N - 1. Needs kcat, perf, strace,
 * java 17+ and Maven (the Kafka jars are fetched into ~/.cache/booblik-compat). Data goes to
 * BOOBLIK_BENCH_DIR (never tmpfs).
 */
import fs from "node:fs";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { serverJars, startKafka } from "../compat/kafka-node.ts";
import { parseBenchArgs } from "../lib/args.ts";
import { describeMachine, loadAverage, measurementDirectory } from "../lib/environment.ts";
import {
  checkKcatConsumed,
  KAFKA_VERSION,
  kafkaClients,
  kcatConsume,
  kcatProduce,
  runTool,
  writeKcatInput,
} from "../lib/kafka-tools.ts";
import { freePort, perfStatCounts } from "../lib/processes.ts";
import { median, medianRange } from "../lib/stats.ts";

const args = parseBenchArgs({
  usage: "bun bench/kafka-peers/kcat-consume-cpu.ts [--rounds=6] [--mib=32] [--record=no|yes]",
  options: { rounds: "6", mib: "32", record: "no" },
});
const rounds = args.number("rounds");
const SIZE_BYTES = 100;
const count = Math.floor((args.number("mib") * 2 ** 20) / SIZE_BYTES);
for (const tool of ["kcat", "perf", "strace", "java"]) {
  if (Bun.which(tool) === null) {
    console.error(`${tool} not found: this benchmark needs kcat, perf, strace and java`);
    process.exit(2);
  }
}

const directory = measurementDirectory("kcat-consume-cpu");
console.log(describeMachine(directory.fileSystem));
const clients = await kafkaClients();
const input = writeKcatInput(directory.path, SIZE_BYTES, count);
const kafkaPort = freePort();
const booblik = Bun.spawn(
  [
    process.execPath,
    path.join(import.meta.dir, "..", "..", "src", "main.ts"),
    ...["--data-dir", path.join(directory.path, "booblik"), "--host", "127.0.0.1", "--port", "0"],
    ...["--kafka-port", String(kafkaPort)],
  ],
  { stdout: "ignore", stderr: "inherit" },
);
const kafka = await startKafka(await serverJars(KAFKA_VERSION), KAFKA_VERSION, {
  parentDir: directory.path,
  jvmOptions: ["-Xmx1G", "-Xms1G"],
});
const systems = { booblik: `127.0.0.1:${kafkaPort}`, kafka: kafka.bootstrap } as const;
type System = keyof typeof systems;

/** kcat's figures of one `perf stat` run, from its CSV output. */
function perfFigures(file: string): { taskClockMs: number; contextSwitches: number; pageFaults: number } {
  const values = perfStatCounts(fs.readFileSync(file, "utf8"));
  return {
    taskClockMs: values.get("task-clock") ?? Number.NaN,
    contextSwitches: values.get("context-switches") ?? Number.NaN,
    pageFaults: values.get("page-faults") ?? Number.NaN,
  };
}

try {
  for (const [system, bootstrap] of Object.entries(systems)) {
    // The node answers once its port accepts; booblik's listener may need a moment after spawn.
    const admin = new Kafka({
      brokers: [bootstrap],
      logLevel: logLevel.NOTHING,
      retry: { retries: 20 },
    }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "r", numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    await runTool(kcatProduce(clients, bootstrap, "r", input, ["linger.ms=1000"]));
    console.log(`${system}: filled with ${count} records of ${SIZE_BYTES} B (kcat -P, linger.ms=1000)`);
  }
  const runs: Record<System, { wall: number[]; cpu: number[]; switches: number[]; faults: number[] }> = {
    booblik: { wall: [], cpu: [], switches: [], faults: [] },
    kafka: { wall: [], cpu: [], switches: [], faults: [] },
  };
  const loads: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const order: System[] = round % 2 === 0 ? ["booblik", "kafka"] : ["kafka", "booblik"];
    for (const system of order) {
      Bun.spawnSync(["sync"]);
      loads.push(loadAverage());
      const perfFile = path.join(directory.path, `perf-${system}-${round}.csv`);
      const outFile = path.join(directory.path, `out-${system}.txt`);
      const { seconds } = await runTool(
        [
          ...["perf", "stat", "-x", ",", "-e", "task-clock,context-switches,page-faults", "-o", perfFile],
          ...kcatConsume(clients, systems[system], "r", count),
        ],
        outFile,
      );
      checkKcatConsumed(fs.readFileSync(outFile, "utf8"), count);
      const figures = perfFigures(perfFile);
      runs[system].wall.push(seconds);
      runs[system].cpu.push(figures.taskClockMs);
      runs[system].switches.push(figures.contextSwitches);
      runs[system].faults.push(figures.pageFaults);
    }
  }
  console.log(
    `\nkcat -C of ${count} records of ${SIZE_BYTES} B, ${rounds} rounds alternating; load average ` +
      `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}; median (range)\n`,
  );
  console.log("| system | wall s | MiB/s (median wall) | kcat CPU ms | context switches | page faults |");
  console.log("|---|---|---|---|---|---|");
  for (const system of Object.keys(systems) as System[]) {
    const r = runs[system];
    const wall = medianRange(r.wall, 3);
    const mibPerSecond = (count * SIZE_BYTES) / 2 ** 20 / median(r.wall);
    console.log(
      `| ${system} | ${wall} | ${mibPerSecond.toFixed(1)} | ${medianRange(r.cpu, 0)} | ` +
        `${medianRange(r.switches, 0)} | ${medianRange(r.faults, 0)} |`,
    );
  }
  console.log("\n| system | kcat futex calls | kcat recvmsg calls | (strace -f -c, one run) |");
  console.log("|---|---|---|---|");
  for (const [system, bootstrap] of Object.entries(systems)) {
    const straceFile = path.join(directory.path, `strace-${system}.txt`);
    await runTool(
      [
        ...["strace", "-f", "-c", "-e", "trace=futex,recvmsg", "-o", straceFile],
        ...kcatConsume(clients, bootstrap, "r", count),
      ],
      path.join(directory.path, `strace-out-${system}.txt`),
    );
    const calls = (name: string) =>
      fs
        .readFileSync(straceFile, "utf8")
        .split("\n")
        .find((line) => line.trim().endsWith(` ${name}`))
        ?.trim()
        .split(/\s+/)[3] ?? "?";
    console.log(`| ${system} | ${calls("futex")} | ${calls("recvmsg")} | |`);
  }
  if (args.text("record") === "yes") {
    for (const [system, bootstrap] of Object.entries(systems)) {
      const data = path.join(directory.path, `perf-${system}.data`);
      await runTool(
        [
          ...["perf", "record", "-g", "-F", "4999", "-o", data],
          ...kcatConsume(clients, bootstrap, "r", count),
        ],
        path.join(directory.path, `record-out-${system}.txt`),
      );
      const report = Bun.spawnSync(
        [
          ...["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "comm,dso,symbol"],
          ...["-g", "none", "--percent-limit", "1.5"],
        ],
        { stderr: "ignore" },
      );
      const lines = report.stdout
        .toString()
        .split("\n")
        .filter((line) => /^\s+\d/.test(line) || line.startsWith("# Samples"));
      console.log(
        `\n${system}: kcat under perf record -g (self time, ≥ 1.5 % of samples)\n${lines.join("\n")}`,
      );
    }
  }
} finally {
  booblik.kill("SIGTERM");
  await booblik.exited;
  await kafka.stop();
  directory.remove();
}
