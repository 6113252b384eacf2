/**
 * The Kafka clients that bench/kafka-peers.bench.ts drives booblik and Apache Kafka with, and that
 * bench/kafka-memory.bench.ts drives booblik with to take its memory under the same load: Kafka's
 * own perf tools (org.apache.kafka.tools.ProducerPerformance and ConsumerPerformance from the
 * kafka-tools jar, run with `java -cp` and the JVM flags of Kafka's scripts), kcat, and the latency
 * probe (bench/kafka-peers/EndToEndLatencyMicros.java). One definition of the tools and of each
 * command, so that the two benchmarks cannot drift apart: before, kafka-memory had its own copy, and
 * its `kcat -C` had lost the `-c N` that kafka-peers runs (see `kcatConsume`).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { compatCache, serverJars } from "../compat/kafka-node.ts";

export const KAFKA_VERSION = "4.1.1";
/** A tool that runs longer than this is killed (a cold JVM on two shared cores takes tens of seconds). */
export const TOOL_MS_MAX = 600_000;
/** JVM flags of Kafka's own scripts (kafka-run-class.sh: KAFKA_JVM_PERFORMANCE_OPTS). */
export const JVM_PERFORMANCE_OPTS = [
  "-server",
  "-XX:+UseG1GC",
  "-XX:MaxGCPauseMillis=20",
  "-XX:InitiatingHeapOccupancyPercent=35",
  "-XX:+ExplicitGCInvokesConcurrent",
  "-XX:MaxInlineLevel=15",
  "-Djava.awt.headless=true",
];
/** kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh set -Xmx512M. */
export const TOOL_JVM = ["-Xmx512M", ...JVM_PERFORMANCE_OPTS];

export type Policy = "append" | "force";
export type System = "booblik" | "kafka";

/**
 * A topic's config for a durability policy: booblik's own `booblik.durability`; for Kafka nothing
 * under `append` (its defaults: no flush per write) and `flush.messages=1` under `force` (Kafka
 * flushes the log after every append).
 */
export function topicConfig(system: System, policy: Policy): { name: string; value: string }[] {
  if (system === "booblik") return [{ name: "booblik.durability", value: policy }];
  return policy === "force" ? [{ name: "flush.messages", value: "1" }] : [];
}

/** The Java producer's settings besides the bootstrap server (its other defaults stay). */
export function producerProps(batchSizeBytes: number, lingerMs: number): string[] {
  return ["acks=all", `batch.size=${batchSizeBytes}`, `linger.ms=${lingerMs}`];
}

export interface KafkaClients {
  kcat: string;
  /** The directory of the Kafka jars (server and tools). */
  lib: string;
  /** The Kafka jars (server and tools) as a `java -cp` entry. */
  classpath: string;
  /** Where EndToEndLatencyMicros.class is. */
  latencyClasses: string;
}

/**
 * kcat, java and javac (exits 2 naming the packages when one is missing), the Kafka jars (fetched
 * once into the compat cache by bench/compat/kafka-node.ts) and the latency probe compiled against
 * them.
 */
export async function kafkaClients(): Promise<KafkaClients> {
  const kcat = Bun.which("kcat");
  if (kcat === null || Bun.which("java") === null || Bun.which("javac") === null) {
    console.error("needs kcat, java and javac (apt-get install -y kcat openjdk-17-jdk-headless)");
    process.exit(2);
  }
  const lib = await serverJars(KAFKA_VERSION);
  const classpath = `${lib}/*`;
  const latencyClasses = path.join(compatCache, "kafka-peers-classes");
  const source = path.join(import.meta.dir, "..", "kafka-peers", "EndToEndLatencyMicros.java");
  fs.mkdirSync(latencyClasses, { recursive: true });
  const compiled = spawnSync("javac", ["-nowarn", "-d", latencyClasses, "-cp", classpath, source], {
    encoding: "utf8",
  });
  if (compiled.status !== 0) throw new Error(`javac failed: ${compiled.stdout}${compiled.stderr}`);
  return { kcat, lib, classpath, latencyClasses };
}

/** `java` with the tools' JVM flags and the Kafka jars (plus `extraClasspath`) running `mainClass`. */
export function java(clients: KafkaClients, mainClass: string, extraClasspath = ""): string[] {
  const classpath = extraClasspath === "" ? clients.classpath : `${clients.classpath}:${extraClasspath}`;
  return ["java", ...TOOL_JVM, "-cp", classpath, mainClass];
}

/** ProducerPerformance: `count` records of `sizeBytes`, as fast as it can (--throughput -1). */
export function producerPerformance(
  clients: KafkaClients,
  run: { bootstrap: string; topic: string; count: number; sizeBytes: number; props: string[] },
): string[] {
  return [
    ...java(clients, "org.apache.kafka.tools.ProducerPerformance"),
    ...["--topic", run.topic, "--num-records", String(run.count), "--record-size", String(run.sizeBytes)],
    ...["--throughput", "-1", "--producer-props", `bootstrap.servers=${run.bootstrap}`, ...run.props],
  ];
}

/**
 * ConsumerPerformance: a group consumer reading `count` records (fetch size 1 MiB, its default);
 * one CSV result line without a header.
 */
export function consumerPerformance(
  clients: KafkaClients,
  run: { bootstrap: string; topic: string; count: number },
): string[] {
  return [
    ...java(clients, "org.apache.kafka.tools.ConsumerPerformance"),
    ...["--bootstrap-server", run.bootstrap, "--topic", run.topic, "--messages", String(run.count)],
    ...["--timeout", "60000", "--hide-header"],
  ];
}

/**
 * kcat -P of the lines of `inputFile` into partition 0, acks=all, librdkafka's defaults otherwise
 * (`settings`: more `-X name=value` properties).
 */
export function kcatProduce(
  clients: KafkaClients,
  bootstrap: string,
  topic: string,
  inputFile: string,
  settings: string[] = [],
): string[] {
  return [
    ...[clients.kcat, "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-X", "acks=all"],
    ...settings.flatMap((setting) => ["-X", setting]),
    ...["-l", inputFile],
  ];
}

/**
 * kcat -C of partition 0 from the beginning, printing each record's offset. `-c count` ends it at
 * the last record: with -e alone it would wait for an empty fetch at the end, a long poll of
 * librdkafka's fetch.wait.max.ms = 500 ms on both brokers (measured with `-d fetch`: 40-60 % of a
 * run's wall time).
 */
export function kcatConsume(
  clients: KafkaClients,
  bootstrap: string,
  topic: string,
  count: number,
  options: { debugTopic?: boolean } = {},
): string[] {
  return [
    ...[clients.kcat, "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning"],
    ...["-c", String(count), "-e", "-q", "-f", "%o\\n"],
    ...(options.debugTopic === true ? ["-d", "topic"] : []),
  ];
}

/**
 * Whether a kcat run started with `debugTopic` waited for librdkafka's offset-query retry timer
 * (500 ms in librdkafka 2.0.2, rdkafka_partition.c `rd_kafka_toppar_offset_retry`), and why. The
 * usual reason is a start-up race inside librdkafka 2.0.2: the application's FETCH_START reaches the
 * partition before its broker thread has taken the PARTITION_JOIN that the Metadata answer caused
 * (`rktp_broker` is still unset: "no current leader for partition"). It happens against Kafka too.
 */
export function kcatOffsetRetry(stderr: string): string | undefined {
  const line = stderr.split("\n").find((l) => l.includes("(re)starting offset query timer"));
  if (line === undefined) return undefined;
  return /\]: [^:]+ \[\d+\]: ([^:]+):/.exec(line)?.[1] ?? "retry";
}

/** Throws unless kcat -C's output (one offset a line) ends at offset count - 1. */
export function checkKcatConsumed(output: string, count: number): void {
  const last = Number(output.trimEnd().split("\n").at(-1));
  if (last !== count - 1) throw new Error(`kcat -C ended at offset ${last}, not ${count - 1}`);
}

/** The latency probe: `records` records of `sizeBytes` after `warmup`, acks=all; prints p50_us= … */
export function latencyProbe(
  clients: KafkaClients,
  run: { bootstrap: string; topic: string; records: number; sizeBytes: number; warmup: number },
): string[] {
  return [
    ...java(clients, "EndToEndLatencyMicros", clients.latencyClasses),
    ...[run.bootstrap, run.topic, String(run.records), "all", String(run.sizeBytes), String(run.warmup)],
  ];
}

/** Writes `count` lines of `sizeBytes` letters (seeded: the same bytes every time) into `directory`. */
export function writeKcatInput(directory: string, sizeBytes: number, count: number): string {
  const file = path.join(directory, `kcat-input-${sizeBytes}.txt`);
  let seed = 1;
  const line = Buffer.alloc(sizeBytes + 1);
  const out = fs.openSync(file, "w");
  const chunk: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    for (let b = 0; b < sizeBytes; b++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      line[b] = 65 + (seed % 26);
    }
    line[sizeBytes] = 10;
    chunk.push(Buffer.from(line));
    if (chunk.length === 4096) fs.writeSync(out, Buffer.concat(chunk.splice(0)));
  }
  fs.writeSync(out, Buffer.concat(chunk));
  fs.closeSync(out);
  return file;
}

/**
 * Runs a tool as its own process to completion (killed after TOOL_MS_MAX), its stdout into
 * `stdoutFile` when given; throws with its output unless it exits 0. Returns the output and the
 * wall time.
 */
export async function runTool(
  command: string[],
  stdoutFile?: string,
): Promise<{ output: string; errors: string; seconds: number }> {
  const started = performance.now();
  const child = Bun.spawn(command, {
    stdout: stdoutFile === undefined ? "pipe" : Bun.file(stdoutFile),
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), TOOL_MS_MAX);
  const [output, errors, code] = await Promise.all([
    stdoutFile === undefined ? new Response(child.stdout as ReadableStream).text() : Promise.resolve(""),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  const seconds = (performance.now() - started) / 1000;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}\n${output}\n${errors}`);
  return { output, errors, seconds };
}
