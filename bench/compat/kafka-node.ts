/**
 * One local Apache Kafka node for the compat runs (bun run compat:kafka, bench/compat/migrate.ts):
 * fetches the server jars (kafka_2.13 and its runtime dependencies) from Maven Central with Maven
 * into the compat cache (nothing of Kafka is in the repository), formats and starts one KRaft node
 * (broker and controller) on 127.0.0.1, and stops it, removing its log directory.
 *
 * The node: one process, `process.roles=broker,controller`, static voter 1 on a second port,
 * replication factor 1 for the internal topics, `group.initial.rebalance.delay.ms=0`,
 * `auto.create.topics.enable=false` (booblik's default), log dirs in a temporary directory removed at
 * the end, heap 512 MiB. Ports are taken from the kernel (bind to port 0, close, reuse the number):
 * Kafka's controller quorum needs a fixed port in its config.
 *
 * `bench/kafka-peers.bench.ts` passes options: its JVM flags (the heap and GC flags of Kafka's own
 * start scripts), extra server.properties lines, the directory to put the node in (the bench
 * directory, a real disk) and its own readiness probe; it reads the format and start times back.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../lib/processes.ts";
import { runCommand as run } from "./run-command.ts";

const HERE = import.meta.dir;
export const compatCache = process.env.BOOBLIK_COMPAT_CACHE ?? join(homedir(), ".cache", "booblik-compat");
/**
 * Copies the dependencies of the Maven project `pom` (a pom.xml of bench/compat taking the Kafka
 * version as its `kafka.version` property) from Maven Central into `lib`, through the compat cache's
 * local repository; `runtimeOnly` leaves out test and provided scopes. One place for the command
 * every compat script runs (kafka-clients, the server, MirrorMaker, Connect and Streams).
 */
export async function copyMavenDependencies(
  pom: string,
  kafkaVersion: string,
  lib: string,
  runtimeOnly = true,
): Promise<void> {
  await run(
    [
      "mvn",
      "-B",
      "-q",
      `-Dmaven.repo.local=${join(compatCache, "m2")}`,
      `-Dkafka.version=${kafkaVersion}`,
      "-f",
      pom,
      "dependency:copy-dependencies",
      ...(runtimeOnly ? ["-DincludeScope=runtime"] : []),
      `-DoutputDirectory=${lib}`,
    ],
    "mvn dependency:copy-dependencies",
  );
}

/** Bound of Kafka's start (a cold JVM on two shared cores takes tens of seconds). */
const KAFKA_START_MS_MAX = 180_000;
const KAFKA_HEAP = "-Xmx512m";

export async function serverJars(kafkaVersion: string): Promise<string> {
  const lib = join(compatCache, `server-${kafkaVersion}`);
  let present = false;
  try {
    present = readdirSync(lib).includes(`kafka_2.13-${kafkaVersion}.jar`);
  } catch {}
  if (!present) {
    console.log(`fetching Apache Kafka ${kafkaVersion} (kafka_2.13, kafka-tools) with Maven into ${lib}`);
    await copyMavenDependencies(join(HERE, "kafka-server", "pom.xml"), kafkaVersion, lib);
  }
  return lib;
}

/**
 * MirrorMaker 2 (connect-mirror, connect-runtime and their runtime dependencies, with the log4j 2
 * binding Kafka's own scripts use) from Maven Central into the compat cache, for
 * bench/compat/migrate-mirror-maker.ts. Its own directory: the server's class path stays as it is.
 */
export async function mirrorJars(kafkaVersion: string): Promise<string> {
  const lib = join(compatCache, `mirror-${kafkaVersion}`);
  let present = false;
  try {
    present = readdirSync(lib).includes(`connect-mirror-${kafkaVersion}.jar`);
  } catch {}
  if (!present) {
    console.log(`fetching MirrorMaker 2 ${kafkaVersion} (connect-mirror) with Maven into ${lib}`);
    await copyMavenDependencies(join(HERE, "kafka-mirror", "pom.xml"), kafkaVersion, lib);
  }
  return lib;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export interface KafkaNode {
  bootstrap: string;
  /** The JVM's pid (java is spawned directly, no wrapper script). */
  pid: number;
  /** The node's directory: server.properties and the log dirs (`logs/`). */
  dir: string;
  /** The server.properties text the node runs with. */
  serverProperties: string;
  /** Wall time of the `kafka-storage format` step (its own JVM), before the start. */
  formatMs: number;
  /** Wall time from spawning the server JVM to `ready` resolving (default: the port accepts). */
  startMs: number;
  stop(): Promise<void>;
}

export interface KafkaNodeOptions {
  /** JVM flags of the server (default one: a 512 MiB heap). */
  jvmOptions?: string[];
  /** Lines appended to server.properties (a later line wins over an earlier one). */
  serverProperties?: string[];
  /** Directory to create the node's directory in (default the OS temp directory). */
  parentDir?: string;
  /** Called once the JVM is spawned; resolves when the node counts as started. */
  ready?: (bootstrap: string) => Promise<void>;
  /** Runs the server JVM under `nice -n <niceness>` (bench/compat/apps.ts on a shared machine). */
  niceness?: number;
}

export async function startKafka(
  lib: string,
  kafkaVersion: string,
  options: KafkaNodeOptions = {},
): Promise<KafkaNode> {
  const dir = mkdtempSync(join(options.parentDir ?? tmpdir(), "booblik-compat-kafka-"));
  const port = freePort();
  const controllerPort = freePort();
  const properties = join(dir, "server.properties");
  const serverProperties = [
    "process.roles=broker,controller",
    "node.id=1",
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    "controller.listener.names=CONTROLLER",
    "inter.broker.listener.name=PLAINTEXT",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    `log.dirs=${join(dir, "logs")}`,
    "num.partitions=1",
    "offsets.topic.replication.factor=1",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1",
    "group.initial.rebalance.delay.ms=0",
    // booblik's default (--kafka-auto-create-topics off): compare like with like.
    "auto.create.topics.enable=false",
    ...(options.serverProperties ?? []),
    "",
  ].join("\n");
  writeFileSync(properties, serverProperties);
  const classpath = `${lib}/*`;
  // A KRaft cluster id is 16 random bytes in URL-safe base64 without padding (Uuid.toString). One
  // in 64 starts with "-", which the format tool's argument parser takes for an option ("argument
  // --cluster-id/-t: expected one argument", seen 2026-12-01); Kafka's Uuid.randomUuid draws again
  // in that case, and so does this.
  let clusterId = randomBytes(16).toString("base64url");
  while (clusterId.startsWith("-")) clusterId = randomBytes(16).toString("base64url");
  const formatStarted = performance.now();
  await run(
    ["java", "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", properties],
    "kafka-storage format",
  );
  const formatMs = performance.now() - formatStarted;
  const logFile = join(compatCache, "last-kafka-server.log");
  const jvmOptions = options.jvmOptions ?? [KAFKA_HEAP];
  const spawned = performance.now();
  const nice = options.niceness === undefined ? [] : ["nice", "-n", String(options.niceness)];
  const child = Bun.spawn([...nice, "java", ...jvmOptions, "-cp", classpath, "kafka.Kafka", properties], {
    stdout: Bun.file(logFile),
    stderr: "pipe",
  });
  const stderr = new Response(child.stderr).text();
  const stop = async () => {
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    await child.exited;
    clearTimeout(timer);
    rmSync(dir, { recursive: true, force: true });
  };
  const started = Date.now();
  const bootstrap = `127.0.0.1:${port}`;
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  const fail = async (what: string): Promise<never> => {
    await stop();
    throw new Error(
      `Kafka did not ${what} within ${KAFKA_START_MS_MAX} ms (exited: ${exited}); ${logFile}\n${await stderr}`,
    );
  };
  if (options.ready === undefined) {
    while (!(await accepts(port))) {
      if (exited || Date.now() - started > KAFKA_START_MS_MAX) await fail(`accept connections on ${port}`);
      await Bun.sleep(250);
    }
  } else {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      options.ready(bootstrap).then(
        () => "ready",
        (error: unknown) => `not ready: ${error}`,
      ),
      child.exited.then(() => "exited"),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve("timed out"), KAFKA_START_MS_MAX);
      }),
    ]);
    clearTimeout(timer);
    if (outcome !== "ready") await fail(`become ready (${outcome})`);
  }
  const startMs = performance.now() - spawned;
  console.log(`Kafka ${kafkaVersion} accepts on ${bootstrap} after ${Date.now() - started} ms`);
  return { bootstrap, pid: child.pid, dir, serverProperties, formatMs, startMs, stop };
}
