/**
 * `bun bench/kafka-memory.bench.ts`: the broker's peak RSS under the Kafka peers benchmark's clients,
 * per run, without Kafka (docs/benchmarks.md "Peak memory of the Kafka listener"). One broker process
 * per repeat (`src/main.ts --durability <policy>` on an empty data directory under BOOBLIK_BENCH_DIR,
 * never tmpfs), driven by the same commands as bench/kafka-peers.bench.ts (both take them from
 * bench/lib/kafka-tools.ts) in the same order:
 * warm-up (ProducerPerformance of 8 MiB of 100 B records, ConsumerPerformance of them), then on fresh
 * one-partition topics ProducerPerformance of `--mib` MiB of `--size` B records (acks=all,
 * batch.size 131072, linger.ms 5), kcat -P of as many records, ConsumerPerformance, kcat -C -c N, and the
 * latency probe (bench/kafka-peers/EndToEndLatencyMicros.java, 2,000 records after 200 of warm-up).
 *
 *   bun bench/kafka-memory.bench.ts [--size=1024] [--mib=32] [--policy=force] [--repeats=3]
 *     [--main=src/main.ts,<other checkout>/src/main.ts]
 *
 * Before each run VmHWM is reset (/proc/PID/clear_refs 5) and the run's peak is VmHWM at its end; RSS
 * and anonymous RSS (RssAnon) are printed before and after. Several `--main` entry points (e.g. this
 * checkout and another one) are run in turn, repeat by repeat, so that they meet the same machine.
 * Every client is its own process. Needs java/javac 17+ and kcat; the Kafka jars are fetched by
 * bench/compat/kafka-node.ts into the compat cache and the latency probe compiled there.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverages, measurementDirectory } from "./lib/environment.ts";
import {
  checkKcatConsumed,
  consumerPerformance,
  kafkaClients,
  kcatConsume,
  kcatProduce,
  latencyProbe,
  type Policy,
  producerPerformance,
  producerProps,
  runTool,
  topicConfig,
  writeKcatInput,
} from "./lib/kafka-tools.ts";
import { freePort } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

const USAGE =
  "bun bench/kafka-memory.bench.ts [--size=1024] [--mib=32] [--policy=force] [--repeats=3] [--main=src/main.ts,...]";
const args = parseBenchArgs({
  usage: USAGE,
  options: { size: "1024", mib: "32", policy: "force", repeats: "3", main: "src/main.ts" },
});
const SIZE_BYTES = args.number("size");
const COUNT = Math.floor((args.number("mib") * 2 ** 20) / SIZE_BYTES);
const POLICY = args.text("policy") as Policy;
const REPEATS = args.number("repeats");
const MAINS = args
  .text("main")
  .split(",")
  .map((main) => path.resolve(main));
if (POLICY !== "append" && POLICY !== "force") {
  console.error(`unknown policy ${POLICY}\nusage: ${USAGE}`);
  process.exit(2);
}
const clients = await kafkaClients();
/** As bench/kafka-peers.bench.ts with its defaults (--batch-size, --linger-ms). */
const PRODUCER_PROPS = producerProps(131072, 5);

const directory = measurementDirectory("kafka-memory");
console.log(
  `# booblik's RSS under the Kafka peers benchmark's clients\n\n${describeMachine(directory.fileSystem)}`,
);
console.log(
  `\npolicy ${POLICY}, ${SIZE_BYTES} B records, ${COUNT} per run (${args.number("mib")} MiB), one partition, ` +
    `ProducerPerformance acks=all batch.size 131072 linger.ms 5, kcat -P acks=all; ${REPEATS} repeat(s) of ${MAINS.join(", ")}`,
);

/** The same bytes as bench/kafka-peers.bench.ts's kcat input of this size. */
const KCAT_INPUT = writeKcatInput(directory.path, SIZE_BYTES, COUNT);

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
  const port = freePort();
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
        topics: [{ topic: name, numPartitions: 1, configEntries: topicConfig("booblik", POLICY) }],
        waitForLeaders: true,
      });
      return name;
    };
    const warmUp = await topic();
    const warmUpCount = Math.floor((8 * 2 ** 20) / 100);
    await runTool(
      producerPerformance(clients, {
        bootstrap,
        topic: warmUp,
        count: warmUpCount,
        sizeBytes: 100,
        props: PRODUCER_PROPS,
      }),
    );
    await runTool(consumerPerformance(clients, { bootstrap, topic: warmUp, count: warmUpCount }));
    const perf = await topic();
    const kcat = await topic();
    const latency = await topic();
    const work: Record<RunName, string[]> = {
      ProducerPerformance: producerPerformance(clients, {
        bootstrap,
        topic: perf,
        count: COUNT,
        sizeBytes: SIZE_BYTES,
        props: PRODUCER_PROPS,
      }),
      "kcat -P": kcatProduce(clients, bootstrap, kcat, KCAT_INPUT),
      ConsumerPerformance: consumerPerformance(clients, { bootstrap, topic: perf, count: COUNT }),
      "kcat -C": kcatConsume(clients, bootstrap, kcat, COUNT),
      "latency probe": latencyProbe(clients, {
        bootstrap,
        topic: latency,
        records: 2000,
        sizeBytes: SIZE_BYTES,
        warmup: 200,
      }),
    };
    const byRun = peaks.get(main) ?? new Map<RunName | "cell", number[]>();
    peaks.set(main, byRun);
    let cellPeak = 0;
    const line: string[] = [];
    for (const run of RUNS) {
      spawnSync("sync");
      fs.writeFileSync(`/proc/${child.pid}/clear_refs`, "5"); // VmHWM := VmRSS
      const before = statusMiB(child.pid);
      const { output } = await runTool(work[run]);
      if (run === "kcat -C") checkKcatConsumed(output, COUNT);
      const after = statusMiB(child.pid);
      cellPeak = Math.max(cellPeak, after.peak);
      byRun.set(run, [...(byRun.get(run) ?? []), after.peak]);
      line.push(
        `${run}: RSS ${before.rss.toFixed(0)} (anon ${before.anon.toFixed(0)}) -> peak ${after.peak.toFixed(0)} -> ${after.rss.toFixed(0)} (anon ${after.anon.toFixed(0)})`,
      );
    }
    byRun.set("cell", [...(byRun.get("cell") ?? []), cellPeak]);
    console.log(`\nrepeat ${repeat}, ${main}, load ${loadAverages()}\n  ${line.join("\n  ")}`);
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

const figure = (values: number[]) => medianRange(values, 0);
console.log(
  `\npeak RSS MiB, median (range) over ${REPEATS} repeat(s); policy ${POLICY}, ${SIZE_BYTES} B records\n`,
);
console.log(`| broker | whole cell | ${RUNS.join(" | ")} |\n|---|---|${RUNS.map(() => "---").join("|")}|`);
for (const [main, byRun] of peaks)
  console.log(
    `| ${main} | ${figure(byRun.get("cell")!)} | ${RUNS.map((run) => figure(byRun.get(run)!)).join(" | ")} |`,
  );
