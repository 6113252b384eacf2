/**
 * `bun run bench:kafka-peers`: booblik's Kafka listener against Apache Kafka 4.1.1 (one KRaft node,
 * bench/compat/kafka-node.ts) on this machine, driven by the same clients: Kafka's own perf tools
 * (org.apache.kafka.tools.ProducerPerformance and ConsumerPerformance from the kafka-tools jar, run
 * with `java -cp`), kcat, and an end-to-end latency probe (bench/kafka-peers/EndToEndLatencyMicros.java:
 * Kafka's EndToEndLatency measured in microseconds instead of whole milliseconds).
 *
 *   bun run bench:kafka-peers [--repeats=3] [--mib=32] [--latency-records=2000] [--latency-warmup=200]
 *     [--batch-size=131072] [--linger-ms=5] [--sizes=100,1024] [--policies=append,force] [--heap=1G]
 *     [--warmup-mib=8] [--booblik-fetch-path=copy|sendfile]
 *
 * Pairings (durability matched honestly):
 * - booblik `append` (acknowledged once written to the file, no fdatasync per write) against Kafka's
 *   default (no fsync per write: `flush.messages` and `flush.ms` unset, i.e. Long.MAX_VALUE);
 * - booblik `force` (fdatasync before the acknowledgement, grouped) against Kafka with the topic
 *   config `flush.messages=1` (Kafka flushes the log after every append, i.e. after every batch).
 *
 * Per repeat and pairing, each system gets a fresh broker on an empty data directory under
 * BOOBLIK_BENCH_DIR (never tmpfs); the order of the systems alternates between repeats. Its start-up
 * is timed from spawn to the first answer over TCP (ApiVersions, then a Metadata listing the broker;
 * Kafka's `kafka-storage format` JVM is timed apart). A warm-up follows, not measured: the
 * ProducerPerformance and ConsumerPerformance runs below with `--warmup-mib` of 100 B records on a
 * topic of its own (a JVM broker runs interpreted until the JIT has seen its hot paths; a real
 * deployment is long-running). Then, per record size, on fresh topics (one
 * partition), each run preceded by `sync`:
 *   1. ProducerPerformance: N records, --throughput -1, acks=all, batch.size/linger.ms as given
 *      (the Java client's other defaults: idempotence on, max.in.flight 5, no compression);
 *   2. kcat -P of the same N records from a file (N lines of `size` random letters: byte-identical
 *      for both systems), acks=all, librdkafka's defaults otherwise;
 *   3. ConsumerPerformance reading the N records of run 1 (a group consumer, fetch size 1 MiB);
 *   4. kcat -C -c N reading the same N records from the beginning of a topic kcat filled, unmeasured,
 *      with linger.ms=1000, so that both brokers hold the same full batches (see measureCell). It
 *      exits at the Nth record: with -e alone it would wait for an empty fetch at the end, a long poll of librdkafka's
 *      fetch.wait.max.ms = 500 ms on both brokers, measured with `-d fetch`, which was 40-60 % of
 *      the run's wall time and made the column mostly that constant);
 *   5. the latency probe (acks=all, linger.ms=0, fetch.max.wait.ms=0).
 * After each produce the topic's high watermark is checked to equal N. For every run the broker's
 * CPU seconds (/proc/PID/stat, all threads) are taken; per size the broker's peak RSS (VmHWM, reset
 * through /proc/PID/clear_refs before the size) and current RSS (VmRSS) at its end.
 * Every load generator is its own process; every row prints median (range) over the repeats.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { connect, type Socket } from "node:net";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { startKafka } from "./compat/kafka-node.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverage, measurementDirectory } from "./lib/environment.ts";
import {
  checkKcatConsumed,
  consumerPerformance,
  JVM_PERFORMANCE_OPTS,
  KAFKA_VERSION,
  kafkaClients,
  kcatConsume,
  kcatOffsetRetry,
  kcatProduce,
  latencyProbe,
  type Policy,
  producerPerformance,
  producerProps,
  runTool,
  type System,
  topicConfig,
  writeKcatInput,
} from "./lib/kafka-tools.ts";
import { brokerCpuSeconds, freePort } from "./lib/processes.ts";
import { median, medianRange } from "./lib/stats.ts";

const USAGE =
  "bun run bench:kafka-peers [--repeats=3] [--mib=32] [--latency-records=2000] [--latency-warmup=200] " +
  "[--batch-size=131072] [--linger-ms=5] [--sizes=100,1024] [--policies=append,force] [--heap=1G] [--warmup-mib=8] " +
  "[--booblik-fetch-path=copy|sendfile]";
const args = parseBenchArgs({
  usage: USAGE,
  options: {
    repeats: "3",
    mib: "32",
    "latency-records": "2000",
    "latency-warmup": "200",
    "batch-size": "131072",
    "linger-ms": "5",
    sizes: "100,1024",
    policies: "append,force",
    heap: "1G",
    "warmup-mib": "8",
    "booblik-fetch-path": "copy",
  },
});
const REPEATS = args.number("repeats");
const VALUE_BYTES_PER_RUN = args.number("mib") * 2 ** 20;
const LATENCY_RECORDS = args.number("latency-records");
const LATENCY_WARMUP = args.number("latency-warmup");
const BATCH_SIZE = args.number("batch-size");
const LINGER_MS = args.number("linger-ms");
const SIZES = args.text("sizes").split(",").map(Number);
const POLICIES = args.text("policies").split(",") as Policy[];
const HEAP = args.text("heap");
const WARMUP_BYTES = args.number("warmup-mib") * 2 ** 20;
/** booblik's `--kafka-fetch-path`: `copy` (its default) or `sendfile` (Kafka's way: unchecked zero copy). */
const BOOBLIK_FETCH_PATH = args.text("booblik-fetch-path");
if (BOOBLIK_FETCH_PATH !== "copy" && BOOBLIK_FETCH_PATH !== "sendfile") {
  console.error(`unknown fetch path ${BOOBLIK_FETCH_PATH}\nusage: ${USAGE}`);
  process.exit(2);
}
for (const policy of POLICIES) {
  if (policy !== "append" && policy !== "force") {
    console.error(`unknown policy ${policy}\nusage: ${USAGE}`);
    process.exit(2);
  }
}

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const clients = await kafkaClients();
/** Start-up bound: a cold JVM on two shared cores takes tens of seconds. */
const START_MS_MAX = 180_000;
/** The broker's JVM: kafka-server-start.sh's KAFKA_HEAP_OPTS (--heap) and kafka-run-class.sh's flags. */
const KAFKA_JVM = [`-Xmx${HEAP}`, `-Xms${HEAP}`, ...JVM_PERFORMANCE_OPTS];
const PRODUCER_PROPS = producerProps(BATCH_SIZE, LINGER_MS);

const dir = measurementDirectory("kafka-peers");
const javaVersion = spawnSync("java", ["-version"], { encoding: "utf8" })
  .stderr.split("\n")
  .slice(0, 2)
  .join("; ");
const kcatVersion = /Version (\S+) .*librdkafka (\S+)/.exec(
  spawnSync(clients.kcat, ["-V"], { encoding: "utf8" }).stdout,
);

console.log(describeMachine(dir.fileSystem));
console.log(`java: ${javaVersion}`);
console.log(
  `kcat ${kcatVersion?.[1] ?? "?"} (librdkafka ${kcatVersion?.[2] ?? "?"}); Apache Kafka ${KAFKA_VERSION}`,
);
console.log(
  `${REPEATS} repeats; ${VALUE_BYTES_PER_RUN / 2 ** 20} MiB of values per produce run; sizes ${SIZES.join(", ")} B; ` +
    `policies ${POLICIES.join(", ")}; Java producer ${PRODUCER_PROPS.join(" ")}; Kafka JVM ${KAFKA_JVM.join(" ")}; ` +
    `latency ${LATENCY_RECORDS} records after ${LATENCY_WARMUP} warm-up; booblik --kafka-fetch-path ${BOOBLIK_FETCH_PATH}`,
);

// ---------------------------------------------------------------------------------------------
// Start-up probe: spawn → first ApiVersions answer, then → first Metadata (v4) listing a broker.

function openSocket(port: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => resolve(socket));
    socket.once("error", () => resolve(null));
  });
}

/** Sends one request frame and resolves with the response body (after the size), or null if closed. */
function exchange(socket: Socket, frame: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => {
    let held = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      held = Buffer.concat([held, chunk]);
      if (held.length >= 4 && held.length >= 4 + held.readInt32BE(0)) {
        cleanup();
        resolve(held.subarray(4, 4 + held.readInt32BE(0)));
      }
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const cleanup = () => {
      socket.off("data", onData);
      socket.off("close", onEnd);
      socket.off("error", onEnd);
    };
    socket.on("data", onData);
    socket.on("close", onEnd);
    socket.on("error", onEnd);
    socket.write(frame);
  });
}

function requestFrame(apiKey: number, version: number, correlationId: number, body: Buffer): Buffer {
  const head = Buffer.alloc(14);
  head.writeInt32BE(10 + body.length, 0);
  head.writeInt16BE(apiKey, 4);
  head.writeInt16BE(version, 6);
  head.writeInt32BE(correlationId, 8);
  head.writeInt16BE(-1, 12); // client_id null
  return Buffer.concat([head, body]);
}

interface StartTimes {
  apiVersionsMs: number;
  metadataMs: number;
}

/** Polls every 5 ms from `spawnedAt` until the port answers ApiVersions and a Metadata lists a broker. */
async function firstAnswers(port: number, spawnedAt: number): Promise<StartTimes> {
  let apiVersionsMs = 0;
  for (let correlation = 1; performance.now() - spawnedAt < START_MS_MAX; ) {
    const socket = await openSocket(port);
    if (socket === null) {
      await Bun.sleep(5);
      continue;
    }
    try {
      if (apiVersionsMs === 0) {
        const answer = await exchange(socket, requestFrame(18, 0, correlation++, Buffer.alloc(0)));
        if (answer === null || answer.readInt16BE(4) !== 0) continue;
        apiVersionsMs = performance.now() - spawnedAt;
      }
      for (;;) {
        // Metadata v4: topics [] (none), allow_auto_topic_creation false.
        const body = Buffer.alloc(5);
        body.writeInt32BE(0, 0);
        const answer = await exchange(socket, requestFrame(3, 4, correlation++, body));
        if (answer === null) break;
        // correlation id, throttle_time_ms, then the brokers array's length.
        if (answer.readInt32BE(8) > 0) return { apiVersionsMs, metadataMs: performance.now() - spawnedAt };
        await Bun.sleep(5);
      }
    } finally {
      socket.destroy();
    }
  }
  throw new Error(`no answer on port ${port} within ${START_MS_MAX} ms`);
}

// ---------------------------------------------------------------------------------------------
// The brokers.

interface Broker {
  system: System;
  pid: number;
  bootstrap: string;
  startTimes: StartTimes;
  /** Kafka only: the `kafka-storage format` JVM's wall time. */
  formatMs?: number;
  serverProperties?: string;
  stop(): Promise<void>;
}

async function startBooblik(policy: Policy, dataDir: string): Promise<Broker> {
  const port = freePort();
  const spawnedAt = performance.now();
  const child = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "--data-dir",
      dataDir,
      "--port",
      "0",
      "--kafka-port",
      String(port),
      "--durability",
      policy,
      "--kafka-fetch-path",
      BOOBLIK_FETCH_PATH,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  void (async () => {
    for await (const _ of child.stdout) {
      // drained so the broker never blocks on a full pipe
    }
  })().catch(() => undefined);
  const stop = async () => {
    child.kill("SIGTERM");
    await child.exited;
  };
  try {
    const startTimes = await Promise.race([
      firstAnswers(port, spawnedAt),
      child.exited.then((code) => Promise.reject(new Error(`booblik exited ${code} while starting`))),
    ]);
    return { system: "booblik", pid: child.pid, bootstrap: `127.0.0.1:${port}`, startTimes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function startKafkaBroker(parentDir: string): Promise<Broker> {
  let startTimes: StartTimes | undefined;
  const node = await startKafka(clients.lib, KAFKA_VERSION, {
    jvmOptions: KAFKA_JVM,
    parentDir,
    ready: async (bootstrap) => {
      startTimes = await firstAnswers(Number(bootstrap.split(":")[1]), performance.now());
    },
  });
  return {
    system: "kafka",
    pid: node.pid,
    bootstrap: node.bootstrap,
    startTimes: startTimes!,
    formatMs: node.formatMs,
    serverProperties: node.serverProperties,
    stop: node.stop,
  };
}

// ---------------------------------------------------------------------------------------------
// The load generators, each its own process.

const kcatInputs = new Map<number, string>();
/** The kcat input of `size` (writeKcatInput), written once per size. */
function kcatInput(size: number, count: number): string {
  const existing = kcatInputs.get(size);
  if (existing !== undefined) return existing;
  const file = writeKcatInput(dir.path, size, count);
  kcatInputs.set(size, file);
  return file;
}

// ---------------------------------------------------------------------------------------------
// One measured cell: system × policy × size × repeat.

interface Run {
  mibPerSecond: number;
  recordsPerSecond: number;
  brokerCpuSeconds: number;
}
interface Cell {
  producePerf: Run;
  produceKcat: Run;
  consumePerf: Run;
  consumeKcat: Run;
  /** Why librdkafka waited 500 ms to query the start offset in the kcat consume run, if it did. */
  kcatRetry: string | undefined;
  latency: { p50: number; p99: number; p999: number; max: number; cpu: number };
  peakRssMiB: number;
  rssMiB: number;
  load1: number[];
}

let topicSerial = 0;

/** Unmeasured: the produce and consume paths once, so that neither broker is measured cold. */
async function warmUp(broker: Broker, policy: Policy): Promise<void> {
  if (WARMUP_BYTES === 0) return;
  const count = Math.floor(WARMUP_BYTES / 100);
  const topic = `warmup-${++topicSerial}`;
  const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const configEntries = topicConfig(broker.system, policy);
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  const bootstrap = broker.bootstrap;
  await runTool(
    producerPerformance(clients, { bootstrap, topic, count, sizeBytes: 100, props: PRODUCER_PROPS }),
  );
  await runTool(consumerPerformance(clients, { bootstrap, topic, count }));
}

async function measureCell(broker: Broker, policy: Policy, size: number): Promise<Cell> {
  const count = Math.floor(VALUE_BYTES_PER_RUN / size);
  const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const configEntries = topicConfig(broker.system, policy);
  const bootstrap = broker.bootstrap;
  const name = (what: string) => `${what}-${size}-${++topicSerial}`;
  const topics = {
    perf: name("perf"),
    kcat: name("kcat"),
    kcatRead: name("kcat-read"),
    e2e: name("e2e"),
  };
  await admin.createTopics({
    topics: Object.values(topics).map((topic) => ({ topic, numPartitions: 1, configEntries })),
    waitForLeaders: true,
  });
  const highWatermark = async (topic: string) => Number((await admin.fetchTopicOffsets(topic))[0]!.high);
  const load1: number[] = [];
  const measured = async (work: () => Promise<{ seconds: number; records: number }>): Promise<Run> => {
    spawnSync("sync");
    load1.push(loadAverage());
    const before = brokerCpuSeconds(broker.pid);
    const { seconds, records } = await work();
    return {
      recordsPerSecond: records / seconds,
      mibPerSecond: (records * size) / 2 ** 20 / seconds,
      brokerCpuSeconds: brokerCpuSeconds(broker.pid) - before,
    };
  };
  fs.writeFileSync(`/proc/${broker.pid}/clear_refs`, "5"); // resets VmHWM to the current RSS
  try {
    const producePerf = await measured(async () => {
      const { output } = await runTool(
        producerPerformance(clients, {
          bootstrap,
          topic: topics.perf,
          count,
          sizeBytes: size,
          props: PRODUCER_PROPS,
        }),
      );
      // The total line: "N records sent, R records/sec (M MB/sec), ... 99.9th." (the tool's own timing,
      // JVM start excluded). Lines of the same shape without percentiles are its 5 s progress reports.
      const total = output.split("\n").find((l) => l.includes("records sent") && l.includes("99.9th"));
      const match = total === undefined ? null : /(\d+) records sent, ([\d.]+) records\/sec/.exec(total);
      if (match === null) throw new Error(`ProducerPerformance printed no total:\n${output}`);
      console.log(`    ${broker.system} ${policy} ${size} B ProducerPerformance: ${total}`);
      const rate = Number(match[2]);
      return { seconds: Number(match[1]) / rate, records: Number(match[1]) };
    });
    if ((await highWatermark(topics.perf)) !== count)
      throw new Error(`${topics.perf}: high watermark is not ${count}`);
    const produceKcat = await measured(async () => {
      const input = kcatInput(size, count);
      const { seconds } = await runTool(kcatProduce(clients, bootstrap, topics.kcat, input));
      return { seconds, records: count };
    });
    if ((await highWatermark(topics.kcat)) !== count)
      throw new Error(`${topics.kcat}: high watermark is not ${count}`);
    // Unmeasured: the topic kcat consumes, filled by kcat with linger.ms=1000, so that every batch
    // closes full at librdkafka's caps (batch.size 1,000,000 B, batch.num.messages 10,000) and both
    // brokers store the same batch layout. The topic of the measured kcat produce run differs by
    // broker: its 5 ms linger closes batches by time, so their size follows each broker's
    // acknowledgement timing (2026-12-01, 32 MiB of 100 B under `force`: 73 batches on booblik
    // against 156 on Kafka, counted with `segment dump` and Kafka's DumpLogSegments; with
    // linger.ms=1000, 38 against 37), and a consumer fetching 1 MiB at a time then needs a
    // different number of fetches for the same records. ProducerPerformance's batches (batch.size
    // 131072) came out alike on both without this (the same 32 MiB under `force`: 289 against 282), so ConsumerPerformance reads
    // the topic of its measured run.
    await runTool(
      kcatProduce(clients, bootstrap, topics.kcatRead, kcatInput(size, count), ["linger.ms=1000"]),
    );
    if ((await highWatermark(topics.kcatRead)) !== count)
      throw new Error(`${topics.kcatRead}: high watermark is not ${count}`);
    const consumePerf = await measured(async () => {
      const { output } = await runTool(
        consumerPerformance(clients, { bootstrap, topic: topics.perf, count }),
      );
      // start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, fetch MB/s, fetch records/s
      const line = output
        .trim()
        .split("\n")
        .find((l) => l.split(",").length === 10);
      if (line === undefined) throw new Error(`ConsumerPerformance printed no result line:\n${output}`);
      console.log(`    ${broker.system} ${policy} ${size} B ConsumerPerformance: ${line}`);
      const fields = line.split(",").map((f) => f.trim());
      const records = Number(fields[4]);
      if (records < count) throw new Error(`ConsumerPerformance read ${records} of ${count}`);
      // The fetch time: from the group's assignment to the last record (the join is not counted).
      return { seconds: Number(fields[7]) / 1000, records };
    });
    let kcatRetry: string | undefined;
    const consumeKcat = await measured(async () => {
      const offsets = path.join(dir.path, "kcat-offsets.txt");
      fs.rmSync(offsets, { force: true }); // Bun.file as stdout does not truncate
      // `-d topic` (about 60 lines) tells whether librdkafka's start-up race cost this run 500 ms
      // (kcatOffsetRetry); the same flag for both brokers.
      const { seconds, errors } = await runTool(
        kcatConsume(clients, bootstrap, topics.kcatRead, count, { debugTopic: true }),
        offsets,
      );
      checkKcatConsumed(fs.readFileSync(offsets, "utf8"), count);
      kcatRetry = kcatOffsetRetry(errors);
      return { seconds, records: count };
    });
    spawnSync("sync");
    load1.push(loadAverage());
    const latencyCpuBefore = brokerCpuSeconds(broker.pid);
    const { output } = await runTool(
      latencyProbe(clients, {
        bootstrap,
        topic: topics.e2e,
        records: LATENCY_RECORDS,
        sizeBytes: size,
        warmup: LATENCY_WARMUP,
      }),
    );
    const e2e = /p50_us=([\d.]+) p99_us=([\d.]+) p999_us=([\d.]+) max_us=([\d.]+)/.exec(output);
    if (e2e === null) throw new Error(`latency probe printed no result:\n${output}`);
    const status = fs.readFileSync(`/proc/${broker.pid}/status`, "utf8");
    const mib = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) / 1024;
    return {
      producePerf,
      produceKcat,
      consumePerf,
      consumeKcat,
      kcatRetry,
      latency: {
        p50: Number(e2e[1]),
        p99: Number(e2e[2]),
        p999: Number(e2e[3]),
        max: Number(e2e[4]),
        cpu: brokerCpuSeconds(broker.pid) - latencyCpuBefore,
      },
      peakRssMiB: mib("VmHWM"),
      rssMiB: mib("VmRSS"),
      load1,
    };
  } finally {
    await admin.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// The run: repeats × policies, systems alternating.

const cells = new Map<string, Cell[]>();
const starts = new Map<System, { apiVersionsMs: number[]; metadataMs: number[]; formatMs: number[] }>();
let kafkaProperties = "";
const key = (system: System, policy: Policy, size: number) => `${system}/${policy}/${size}`;
const started = performance.now();
/** The broker being measured: stopped when the run is interrupted, so it never outlives the run. */
let running: Broker | undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    void (running?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

for (let repeat = 0; repeat < REPEATS; repeat++) {
  for (const [p, policy] of POLICIES.entries()) {
    const order: System[] = (repeat + p) % 2 === 0 ? ["booblik", "kafka"] : ["kafka", "booblik"];
    for (const system of order) {
      spawnSync("sync");
      const brokerDir = path.join(dir.path, `${system}-${policy}-${repeat}`);
      fs.mkdirSync(brokerDir);
      const broker =
        system === "booblik" ? await startBooblik(policy, brokerDir) : await startKafkaBroker(brokerDir);
      running = broker;
      const start = starts.get(system) ?? { apiVersionsMs: [], metadataMs: [], formatMs: [] };
      start.apiVersionsMs.push(broker.startTimes.apiVersionsMs);
      start.metadataMs.push(broker.startTimes.metadataMs);
      if (broker.formatMs !== undefined) start.formatMs.push(broker.formatMs);
      starts.set(system, start);
      if (broker.serverProperties !== undefined) kafkaProperties = broker.serverProperties;
      console.log(
        `repeat ${repeat + 1}, ${policy}, ${system}: first ApiVersions answer ${broker.startTimes.apiVersionsMs.toFixed(0)} ms, ` +
          `Metadata with the broker ${broker.startTimes.metadataMs.toFixed(0)} ms after spawn` +
          (broker.formatMs === undefined ? "" : ` (format before: ${broker.formatMs.toFixed(0)} ms)`),
      );
      try {
        await warmUp(broker, policy);
        for (const size of SIZES) {
          const cell = await measureCell(broker, policy, size);
          const list = cells.get(key(system, policy, size)) ?? [];
          list.push(cell);
          cells.set(key(system, policy, size), list);
          console.log(
            `  ${size} B: produce perf ${cell.producePerf.mibPerSecond.toFixed(1)} MiB/s, kcat ${cell.produceKcat.mibPerSecond.toFixed(1)}; ` +
              `consume perf ${cell.consumePerf.mibPerSecond.toFixed(1)}, kcat ${cell.consumeKcat.mibPerSecond.toFixed(1)}` +
              `${cell.kcatRetry === undefined ? "" : ` (librdkafka retried its offset query after 500 ms: ${cell.kcatRetry})`}; ` +
              `e2e p50/p99/p99.9 ${cell.latency.p50}/${cell.latency.p99}/${cell.latency.p999} us; ` +
              `RSS peak ${cell.peakRssMiB.toFixed(0)} MiB, now ${cell.rssMiB.toFixed(0)}; load ${cell.load1.map((l) => l.toFixed(1)).join(" ")}`,
          );
        }
      } finally {
        await broker.stop();
        running = undefined;
        fs.rmSync(brokerDir, { recursive: true, force: true });
      }
    }
  }
}
dir.remove();

// ---------------------------------------------------------------------------------------------
// The tables.

/** Every measured cell's repeats, in the tables' order (policy, size, then booblik before Kafka). */
function* measuredCells(): Generator<{ policy: Policy; size: number; system: System; list: Cell[] }> {
  for (const policy of POLICIES)
    for (const size of SIZES)
      for (const system of ["booblik", "kafka"] as const) {
        const list = cells.get(key(system, policy, size)) ?? [];
        if (list.length > 0) yield { policy, size, system, list };
      }
}

const digits = (value: number) => (value >= 100 ? 0 : value >= 10 ? 1 : 2);
const figure = (values: number[]) => medianRange(values, digits(median(values)));
const label: Record<System, (policy: Policy) => string> = {
  booblik: (policy) => `booblik ${policy}${BOOBLIK_FETCH_PATH === "sendfile" ? ", sendfile" : ""}`,
  kafka: (policy) => (policy === "append" ? "Kafka default (no fsync)" : "Kafka flush.messages=1"),
};

console.log(
  `\nmedian (range) over ${REPEATS} repeats; MiB/s of record values; ${((performance.now() - started) / 60000).toFixed(1)} min in all`,
);
console.log(
  "\n| policy | size | system | produce perf-test MiB/s | produce kcat MiB/s | consume perf-test MiB/s | consume kcat MiB/s | broker CPU s (all 4 runs) | e2e p50 µs | e2e p99 µs | e2e p99.9 µs | peak RSS MiB | RSS at end MiB | load 1 min |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const { policy, size, system, list } of measuredCells()) {
  const of = (f: (cell: Cell) => number) => figure(list.map(f));
  console.log(
    `| ${policy} | ${size} B | ${label[system](policy)} | ${of((c) => c.producePerf.mibPerSecond)} | ${of((c) => c.produceKcat.mibPerSecond)} | ` +
      `${of((c) => c.consumePerf.mibPerSecond)} | ${of((c) => c.consumeKcat.mibPerSecond)} | ` +
      `${of((c) => c.producePerf.brokerCpuSeconds + c.produceKcat.brokerCpuSeconds + c.consumePerf.brokerCpuSeconds + c.consumeKcat.brokerCpuSeconds)} | ` +
      `${of((c) => c.latency.p50)} | ${of((c) => c.latency.p99)} | ${of((c) => c.latency.p999)} | ` +
      `${of((c) => c.peakRssMiB)} | ${of((c) => c.rssMiB)} | ${figure(list.flatMap((c) => c.load1))} |`,
  );
}
console.log("\nrecords per second (same runs):\n");
console.log(
  "| policy | size | system | produce perf-test | produce kcat | consume perf-test | consume kcat | broker CPU s: perf-test produce / kcat produce / perf-test consume / kcat consume / e2e |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const { policy, size, system, list } of measuredCells()) {
  const rate = (f: (cell: Cell) => number) => {
    const m = median(list.map(f));
    return m >= 1e6 ? `${(m / 1e6).toFixed(2)} M` : `${(m / 1e3).toFixed(0)} K`;
  };
  const cpu = (f: (cell: Cell) => number) => median(list.map(f)).toFixed(2);
  console.log(
    `| ${policy} | ${size} B | ${label[system](policy)} | ${rate((c) => c.producePerf.recordsPerSecond)} | ${rate((c) => c.produceKcat.recordsPerSecond)} | ` +
      `${rate((c) => c.consumePerf.recordsPerSecond)} | ${rate((c) => c.consumeKcat.recordsPerSecond)} | ` +
      `${cpu((c) => c.producePerf.brokerCpuSeconds)} / ${cpu((c) => c.produceKcat.brokerCpuSeconds)} / ${cpu((c) => c.consumePerf.brokerCpuSeconds)} / ${cpu((c) => c.consumeKcat.brokerCpuSeconds)} / ${cpu((c) => c.latency.cpu)} |`,
  );
}
console.log(
  "\nkcat consume runs in which librdkafka 2.0.2 waited 500 ms before querying its start offset " +
    "(a start-up race inside the client, kcatOffsetRetry in bench/lib/kafka-tools.ts):\n",
);
console.log("| policy | size | system | runs with the retry | reasons |");
console.log("|---|---|---|---|---|");
for (const { policy, size, system, list } of measuredCells()) {
  const reasons = list.flatMap((c) => (c.kcatRetry === undefined ? [] : [c.kcatRetry]));
  console.log(
    `| ${policy} | ${size} B | ${label[system](policy)} | ${reasons.length} of ${list.length} | ${[...new Set(reasons)].join("; ") || "—"} |`,
  );
}
console.log("\nstart-up on an empty data directory, ms after spawn (median (range)):\n");
console.log(
  "| system | first ApiVersions answer | first Metadata listing the broker | storage format (before spawn) |",
);
console.log("|---|---|---|---|");
for (const [system, s] of starts) {
  console.log(
    `| ${system} | ${figure(s.apiVersionsMs)} | ${figure(s.metadataMs)} | ${s.formatMs.length === 0 ? "—" : figure(s.formatMs)} |`,
  );
}
console.log(`\nKafka server.properties (ports and directories vary per start):\n${kafkaProperties}`);
console.log(
  `Kafka topic configs: append: (none, the defaults); force: ${topicConfig("kafka", "force")
    .map((c) => `${c.name}=${c.value}`)
    .join(", ")}`,
);
