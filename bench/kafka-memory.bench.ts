/**
 * `bun bench/kafka-memory.bench.ts`: the broker's peak RSS under the Kafka peers benchmark's clients,
 * per run, without Kafka (docs/benchmarks.md "Peak memory of the Kafka listener"). One broker process
 * per repeat (`src/main.ts --durability <policy>` on an empty data directory under BOOBLIK_BENCH_DIR,
 * never tmpfs), driven by the same commands as bench/kafka-peers.bench.ts in the same order:
 * warm-up (ProducerPerformance of 8 MiB of 100 B records, ConsumerPerformance of them), then on fresh
 * one-partition topics ProducerPerformance of `--mib` MiB of `--size` B records (acks=all,
 * batch.size 131072, linger.ms 5), kcat -P of as many records, ConsumerPerformance, kcat -C, and the
 * latency probe (bench/kafka-peers/EndToEndLatencyMicros.java, 2,000 records after 200 of warm-up).
 *
 *   bun bench/kafka-memory.bench.ts [--size=1024] [--mib=32] [--policy=force] [--repeats=3]
 *     [--main=src/main.ts,<other checkout>/src/main.ts]
 *
 * Before each run VmHWM is reset (/proc/PID/clear_refs 5) and the run's peak is VmHWM at its end; RSS
 * and anonymous RSS (RssAnon) are printed before and after. Several `--main` entry points (e.g. this
 * checkout and another one) are run in turn, repeat by repeat, so that they meet the same machine.
 * Every client is its own process. Needs java/javac 17+, kcat and the Kafka jars (fetched by
 * bench/compat/kafka-node.ts into the compat cache).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { compatCache, freePort, serverJars } from "./compat/kafka-node.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";

const USAGE =
  "bun bench/kafka-memory.bench.ts [--size=1024] [--mib=32] [--policy=force] [--repeats=3] [--main=src/main.ts,...]";
const args = parseBenchArgs({
  usage: USAGE,
  options: { size: "1024", mib: "32", policy: "force", repeats: "3", main: "src/main.ts" },
});
const SIZE_BYTES = args.number("size");
const COUNT = Math.floor((args.number("mib") * 2 ** 20) / SIZE_BYTES);
const POLICY = args.text("policy");
const REPEATS = args.number("repeats");
const MAINS = args
  .text("main")
  .split(",")
  .map((main) => path.resolve(main));
if (POLICY !== "append" && POLICY !== "force") {
  console.error(`unknown policy ${POLICY}\nusage: ${USAGE}`);
  process.exit(2);
}
const KCAT = Bun.which("kcat");
if (KCAT === null || Bun.which("java") === null) {
  console.error("needs kcat and java (apt-get install -y kcat openjdk-17-jdk-headless)");
  process.exit(2);
}
const TOOL_MS_MAX = 600_000;
/** As bench/kafka-peers.bench.ts: kafka-*-perf-test.sh's -Xmx512M and kafka-run-class.sh's flags. */
const TOOL_JVM = [
  "-Xmx512M",
  "-server",
  "-XX:+UseG1GC",
  "-XX:MaxGCPauseMillis=20",
  "-XX:InitiatingHeapOccupancyPercent=35",
  "-XX:+ExplicitGCInvokesConcurrent",
  "-XX:MaxInlineLevel=15",
  "-Djava.awt.headless=true",
];
const PRODUCER_PROPS = ["acks=all", "batch.size=131072", "linger.ms=5"];
const LATENCY_CLASSES = path.join(compatCache, "kafka-peers-classes");
if (!fs.existsSync(path.join(LATENCY_CLASSES, "EndToEndLatencyMicros.class"))) {
  console.error(`needs ${LATENCY_CLASSES}/EndToEndLatencyMicros.class: run bun run bench:kafka-peers once`);
  process.exit(2);
}
const classpath = `${await serverJars("4.1.1")}/*`;
const java = (mainClass: string, extra = "") => [
  "java",
  ...TOOL_JVM,
  "-cp",
  extra === "" ? classpath : `${classpath}:${extra}`,
  mainClass,
];

const directory = measurementDirectory("kafka-memory");
console.log(
  `# booblik's RSS under the Kafka peers benchmark's clients\n\n${describeMachine(directory.fileSystem)}`,
);
console.log(
  `\npolicy ${POLICY}, ${SIZE_BYTES} B records, ${COUNT} per run (${args.number("mib")} MiB), one partition, ` +
    `ProducerPerformance acks=all batch.size 131072 linger.ms 5, kcat -P acks=all; ${REPEATS} repeat(s) of ${MAINS.join(", ")}`,
);

/** N lines of SIZE_BYTES letters (bench/kafka-peers.bench.ts's kcat input: the same bytes). */
function kcatInput(): string {
  const file = path.join(directory.path, `kcat-input-${SIZE_BYTES}.txt`);
  let seed = 1;
  const line = Buffer.alloc(SIZE_BYTES + 1);
  const out = fs.openSync(file, "w");
  for (let i = 0; i < COUNT; i++) {
    for (let b = 0; b < SIZE_BYTES; b++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      line[b] = 65 + (seed % 26);
    }
    line[SIZE_BYTES] = 10;
    fs.writeSync(out, line);
  }
  fs.closeSync(out);
  return file;
}
const KCAT_INPUT = kcatInput();

async function runTool(command: string[]): Promise<string> {
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => child.kill("SIGKILL"), TOOL_MS_MAX);
  const [output, errors, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}\n${output}\n${errors}`);
  return output;
}

function statusMiB(pid: number): { rss: number; anon: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const mib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) / 1024;
  return { rss: mib("VmRSS"), anon: mib("RssAnon"), peak: mib("VmHWM") };
}

const RUNS = ["ProducerPerformance", "kcat -P", "ConsumerPerformance", "kcat -C", "latency probe"] as const;
type RunName = (typeof RUNS)[number];
/** Peak RSS MiB per entry point, per run, one value per repeat. */
const peaks = new Map<string, Map<RunName | "cell", number[]>>();

async function measure(main: string, repeat: number): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(directory.path, "data-"));
  const port = await freePort();
  const child = Bun.spawn(
    [
      process.execPath,
      main,
      "--data-dir",
      dataDir,
      "--port",
      "0",
      "--kafka-port",
      String(port),
      "--durability",
      POLICY,
    ],
    { stdout: "ignore", stderr: "inherit" },
  );
  const bootstrap = `127.0.0.1:${port}`;
  const admin = new Kafka({
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 20 },
  }).admin();
  try {
    await admin.connect();
    let serial = 0;
    const topic = async () => {
      const name = `t-${++serial}`;
      await admin.createTopics({
        topics: [
          { topic: name, numPartitions: 1, configEntries: [{ name: "booblik.durability", value: POLICY }] },
        ],
        waitForLeaders: true,
      });
      return name;
    };
    const warmUp = await topic();
    const warmUpCount = String(Math.floor((8 * 2 ** 20) / 100));
    await runTool([
      ...java("org.apache.kafka.tools.ProducerPerformance"),
      ...["--topic", warmUp, "--num-records", warmUpCount, "--record-size", "100", "--throughput", "-1"],
      ...["--producer-props", `bootstrap.servers=${bootstrap}`, ...PRODUCER_PROPS],
    ]);
    await runTool([
      ...java("org.apache.kafka.tools.ConsumerPerformance"),
      ...[
        "--bootstrap-server",
        bootstrap,
        "--topic",
        warmUp,
        "--messages",
        warmUpCount,
        "--timeout",
        "60000",
      ],
    ]);
    const perf = await topic();
    const kcat = await topic();
    const latency = await topic();
    const work: Record<RunName, string[]> = {
      ProducerPerformance: [
        ...java("org.apache.kafka.tools.ProducerPerformance"),
        ...["--topic", perf, "--num-records", String(COUNT), "--record-size", String(SIZE_BYTES)],
        ...["--throughput", "-1", "--producer-props", `bootstrap.servers=${bootstrap}`, ...PRODUCER_PROPS],
      ],
      "kcat -P": [KCAT!, "-b", bootstrap, "-P", "-t", kcat, "-p", "0", "-X", "acks=all", "-l", KCAT_INPUT],
      ConsumerPerformance: [
        ...java("org.apache.kafka.tools.ConsumerPerformance"),
        ...[
          "--bootstrap-server",
          bootstrap,
          "--topic",
          perf,
          "--messages",
          String(COUNT),
          "--timeout",
          "60000",
        ],
      ],
      "kcat -C": [
        KCAT!,
        "-b",
        bootstrap,
        "-C",
        "-t",
        kcat,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%o\\n",
      ],
      "latency probe": [
        ...java("EndToEndLatencyMicros", LATENCY_CLASSES),
        ...[bootstrap, latency, "2000", "all", String(SIZE_BYTES), "200"],
      ],
    };
    const byRun = peaks.get(main) ?? new Map<RunName | "cell", number[]>();
    peaks.set(main, byRun);
    let cellPeak = 0;
    const line: string[] = [];
    for (const run of RUNS) {
      spawnSync("sync");
      fs.writeFileSync(`/proc/${child.pid}/clear_refs`, "5"); // VmHWM := VmRSS
      const before = statusMiB(child.pid);
      const output = await runTool(work[run]);
      if (run === "kcat -C") {
        const last = Number(output.trimEnd().split("\n").at(-1));
        if (last !== COUNT - 1) throw new Error(`kcat -C ended at offset ${last}, not ${COUNT - 1}`);
      }
      const after = statusMiB(child.pid);
      cellPeak = Math.max(cellPeak, after.peak);
      byRun.set(run, [...(byRun.get(run) ?? []), after.peak]);
      line.push(
        `${run}: RSS ${before.rss.toFixed(0)} (anon ${before.anon.toFixed(0)}) -> peak ${after.peak.toFixed(0)} -> ${after.rss.toFixed(0)} (anon ${after.anon.toFixed(0)})`,
      );
    }
    byRun.set("cell", [...(byRun.get("cell") ?? []), cellPeak]);
    console.log(
      `\nrepeat ${repeat}, ${main}, load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}\n  ${line.join("\n  ")}`,
    );
  } finally {
    await admin.disconnect().catch(() => undefined);
    child.kill("SIGTERM");
    await child.exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

for (let repeat = 1; repeat <= REPEATS; repeat++) {
  // The order of the entry points alternates between repeats.
  const order = repeat % 2 === 1 ? MAINS : [...MAINS].reverse();
  for (const main of order) await measure(main, repeat);
}
directory.remove();

const figure = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return `${median.toFixed(0)} (${sorted[0]!.toFixed(0)}-${sorted.at(-1)!.toFixed(0)})`;
};
console.log(
  `\npeak RSS MiB, median (range) over ${REPEATS} repeat(s); policy ${POLICY}, ${SIZE_BYTES} B records\n`,
);
console.log(`| broker | whole cell | ${RUNS.join(" | ")} |\n|---|---|${RUNS.map(() => "---").join("|")}|`);
for (const [main, byRun] of peaks)
  console.log(
    `| ${main} | ${figure(byRun.get("cell")!)} | ${RUNS.map((run) => figure(byRun.get(run)!)).join(" | ")} |`,
  );
