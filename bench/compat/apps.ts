/**
 * `bun run compat:apps`: two Kafka applications run unchanged against booblik's Kafka listener,
 * Kafka Connect (a distributed worker) and Kafka Streams. Not in the gate: it fetches jars with
 * Maven (once) and runs JVMs.
 *
 * 1. Fetches connect-runtime, connect-json, connect-file and kafka-streams (default 4.1.1) with
 *    their runtime dependencies from Maven Central (bench/compat/kafka-apps/pom.xml) into
 *    $BOOBLIK_COMPAT_CACHE/apps-<version> (default ~/.cache/booblik-compat; nothing of Kafka is in
 *    the repository), moves the connect-file jar out of the class path into the worker's
 *    plugin.path, and compiles bench/compat/kafka-apps/WordCount.java there with javac.
 * 2. With `--kafka`, first starts one Apache Kafka node (bench/compat/kafka-node.ts, KRaft) and runs
 *    both scenarios against it; then starts a booblik broker child process (its output in
 *    <cache>/last-apps-broker.log) and runs them against it.
 * 3. Kafka Connect: `org.apache.kafka.connect.cli.ConnectDistributed` with a worker properties file
 *    (its three internal topics created by the worker, replication factor 1, JSON converters
 *    without schemas, REST on 127.0.0.1, plugin.path holding connect-file, offsets flushed every
 *    second). Through the REST API: a FileStreamSource connector reads a file of N numbered lines
 *    into a topic (created by the worker, KIP-158 topic.creation), a FileStreamSink connector writes
 *    that topic to another file; the sink file must get the N lines in order. The worker is stopped
 *    with SIGTERM, M lines are appended to the source file, the worker is started again: both
 *    connectors must come back from the config topic without being created again, and the sink file
 *    must end with exactly the N+M lines in order (source offsets and sink commits resumed).
 * 4. Kafka Streams: WordCount.java (at_least_once, the default) counts the words of lines produced
 *    to an input topic (flatMapValues, groupBy: a repartition topic, count: a state store whose
 *    changelog is a compacted topic), the output topic read to the last count of each word must
 *    hold the counts. The application is stopped with SIGTERM, its state directory deleted (so that
 *    it restores the store from the changelog), more lines produced, the application started
 *    again: the counts must be those over all the lines.
 * 5. Prints one table (scenario, step, result, detail) per broker, and with `--kafka` the steps
 *    whose result differs. JVM output: <cache>/last-apps-{connect,streams}-{kafka,booblik}.log.
 *    Exits 1 when a step failed on booblik (or on Kafka).
 *
 * The JVMs run with 384 MiB heaps under `nice -n 5` (the machine is shared); every wait is on a
 * condition with a bound; every JVM and temporary directory is removed at the end.
 *
 * Usage: bun run compat:apps [--kafka [--kafka-version 4.1.1]] [--only connect|streams]
 *        [--bootstrap host:port]   (another Kafka-speaking server instead of a booblik child)
 *        [--streams-guarantee at_least_once|exactly_once_v2]   (Kafka Streams' processing.guarantee)
 *        [--restart-broker]   (stop booblik and start it again on the same data directory and port
 *        while each application is stopped, before it starts again; not done to Kafka)
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { freePort } from "../lib/processes.ts";
import { startBooblik } from "./booblik.ts";
import { compatCache, copyMavenDependencies, serverJars, startKafka } from "./kafka-node.ts";
import { runCommand as run } from "./run-command.ts";

const HERE = import.meta.dir;
const { values: args } = parseArgs({
  options: {
    kafka: { type: "boolean", default: false },
    "kafka-version": { type: "string", default: "4.1.1" },
    only: { type: "string", multiple: true },
    bootstrap: { type: "string" },
    /** Kafka Streams' processing.guarantee (at_least_once, its default, unless given). */
    "streams-guarantee": { type: "string", default: "at_least_once" },
    /** Restart the booblik broker (same data, same port) while each application is stopped. */
    "restart-broker": { type: "boolean", default: false },
  },
});
const kafkaVersion = args["kafka-version"]!;
const SCENARIOS = ["connect", "streams"] as const;
type Scenario = (typeof SCENARIOS)[number];
const only = (args.only ?? [...SCENARIOS]) as Scenario[];
for (const name of only)
  if (!SCENARIOS.includes(name)) throw new Error(`--only takes ${SCENARIOS.join(" or ")}, got ${name}`);
if (args.kafka && args.bootstrap !== undefined) throw new Error("--kafka and --bootstrap exclude each other");
if (args["restart-broker"] && args.bootstrap !== undefined)
  throw new Error("--restart-broker restarts the booblik child: not with --bootstrap");

const JVM = ["nice", "-n", "5", "java", "-Xmx384m"];
/** Bound of a JVM's start up to its first useful answer (a cold JVM on two shared cores). */
const START_MS_MAX = 240_000;
/** Bound of every other wait: connectors running, lines in the sink file, counts in the output. */
const WAIT_MS_MAX = 180_000;
/** Bound of a graceful stop (SIGTERM) before SIGKILL. */
const STOP_MS_MAX = 90_000;

const CONNECT_LINES_FIRST = 500;
const CONNECT_LINES_MORE = 250;
const CONNECT_TOPIC = "connect-lines";
const CONNECT_GROUP = "compat-connect";
const CONNECT_INTERNAL = {
  "config.storage.topic": "compat-connect-configs",
  "offset.storage.topic": "compat-connect-offsets",
  "status.storage.topic": "compat-connect-status",
} as const;

const STREAMS_APP = "compat-wordcount";
const STREAMS_INPUT = "wordcount-input";
const STREAMS_OUTPUT = "wordcount-output";
const STREAMS_LINES_FIRST = 300;
const STREAMS_LINES_MORE = 150;
const WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split(" ");

interface Row {
  scenario: string;
  step: string;
  ok: boolean;
  detail: string;
}

interface Jars {
  lib: string;
  plugins: string;
  classes: string;
}

// ---------------------------------------------------------------------------------------------
// Jars and the Streams program.

async function appJars(): Promise<Jars> {
  const base = join(compatCache, `apps-${kafkaVersion}`);
  const lib = join(base, "lib");
  const plugins = join(base, "plugins");
  const pluginJar = `connect-file-${kafkaVersion}.jar`;
  let present = false;
  try {
    present =
      readdirSync(lib).includes(`kafka-streams-${kafkaVersion}.jar`) &&
      readdirSync(join(plugins, "connect-file")).includes(pluginJar);
  } catch {}
  if (!present) {
    console.log(`fetching Kafka Connect and Kafka Streams ${kafkaVersion} with Maven into ${base}`);
    await copyMavenDependencies(join(HERE, "kafka-apps", "pom.xml"), kafkaVersion, lib);
    // The FileStream connectors are a plugin: on plugin.path, not on the worker's class path.
    mkdirSync(join(plugins, "connect-file"), { recursive: true });
    renameSync(join(lib, pluginJar), join(plugins, "connect-file", pluginJar));
  }
  const classes = join(base, "classes");
  const source = join(HERE, "kafka-apps", "WordCount.java");
  let fresh = false;
  try {
    fresh = statSync(join(classes, "WordCount.class")).mtimeMs >= statSync(source).mtimeMs;
  } catch {}
  if (!fresh) {
    mkdirSync(classes, { recursive: true });
    await run(["javac", "-nowarn", "-d", classes, "-cp", `${lib}/*`, source], "javac WordCount.java");
  }
  return { lib, plugins, classes };
}

// ---------------------------------------------------------------------------------------------
// A JVM child: stdout lines kept (the Streams program's events), stdout and stderr appended to a log.

interface Jvm {
  lines: string[];
  exitCode(): number | null;
  /** SIGTERM, then SIGKILL after STOP_MS_MAX: the exit code, the time it took and whether it was killed. */
  stop(): Promise<{ code: number; ms: number; killed: boolean }>;
}

function startJvm(command: string[], logFile: string): Jvm {
  appendFileSync(logFile, `\n===== ${new Date().toISOString()} ${command.join(" ")}\n`);
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const lines: string[] = [];
  let code: number | null = null;
  void child.exited.then((c) => {
    code = c;
  });
  void (async () => {
    let partial = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      appendFileSync(logFile, chunk);
      partial += decoder.decode(chunk, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop() ?? "";
      lines.push(...parts);
    }
  })();
  void (async () => {
    for await (const chunk of child.stderr) appendFileSync(logFile, chunk);
  })();
  let stopping: Promise<{ code: number; ms: number; killed: boolean }> | undefined;
  return {
    lines,
    exitCode: () => code,
    stop() {
      stopping ??= (async () => {
        const started = performance.now();
        let killed = false;
        child.kill("SIGTERM");
        const timer = setTimeout(() => {
          killed = true;
          child.kill("SIGKILL");
        }, STOP_MS_MAX);
        const exit = await child.exited;
        clearTimeout(timer);
        return { code: exit, ms: performance.now() - started, killed };
      })();
      return stopping;
    },
  };
}

/** Polls `probe` (every 250 ms) until it gives a value, `dead` says the awaited process is gone, or `bound` passes. */
async function waitFor<T>(
  what: string,
  bound: number,
  probe: () => Promise<T | undefined> | T | undefined,
  dead: () => string | undefined = () => undefined,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    const gone = dead();
    if (gone !== undefined) throw new Error(`${what}: ${gone}`);
    if (Date.now() - started > bound) throw new Error(`${what}: not within ${bound / 1000} s`);
    await Bun.sleep(250);
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function log4jConfig(dir: string): string {
  const file = join(dir, "log4j2.properties");
  // The layout of Kafka's own config/connect-log4j2.yaml, on stderr: stdout is the program's own.
  writeFileSync(
    file,
    [
      "appender.console.type = Console",
      "appender.console.name = CONSOLE",
      "appender.console.target = SYSTEM_ERR",
      "appender.console.layout.type = PatternLayout",
      "appender.console.layout.pattern = [%d] %p %m (%c)%n",
      "rootLogger.level = INFO",
      "rootLogger.appenderRef.console.ref = CONSOLE",
      "",
    ].join("\n"),
  );
  return file;
}

function kafkaClient(bootstrap: string, id: string): Kafka {
  return new Kafka({ brokers: [bootstrap], clientId: id, logLevel: logLevel.NOTHING });
}

/** cleanup.policy of each topic, as DescribeConfigs answers it ("error N" for a per-topic error). */
async function cleanupPolicies(bootstrap: string, topics: string[]): Promise<Map<string, string>> {
  const admin = kafkaClient(bootstrap, "compat-apps-admin").admin();
  await admin.connect();
  try {
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({
        type: ConfigResourceTypes.TOPIC,
        name,
        configNames: ["cleanup.policy"],
      })),
    });
    const policies = new Map<string, string>();
    for (const resource of resources)
      policies.set(
        resource.resourceName,
        resource.errorCode === 0
          ? (resource.configEntries.find((e) => e.configName === "cleanup.policy")?.configValue ?? "(absent)")
          : `error ${resource.errorCode}`,
      );
    return policies;
  } finally {
    await admin.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// Kafka Connect, distributed.

interface Answer {
  status: number;
  body: unknown;
}

async function rest(port: number, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: response.status, body: parsed };
}

interface Status {
  connector: { state: string; trace?: string };
  tasks: { id: number; state: string; trace?: string }[];
}

function numbered(from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);
}

function fileLines(path: string): string[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text === "" ? [] : text.replace(/\n$/, "").split("\n");
}

/** Where two line lists first differ, for a FAIL's detail. */
function firstDifference(got: string[], expected: string[]): string {
  const at = expected.findIndex((line, i) => got[i] !== line);
  if (at === -1 && got.length === expected.length) return "none";
  if (at === -1)
    return `${got.length - expected.length} extra line(s) after the expected ones, first ${JSON.stringify(got[expected.length])}`;
  return `line ${at + 1}: got ${JSON.stringify(got[at])}, expected ${JSON.stringify(expected[at])}`;
}

async function connectScenario(
  bootstrap: string,
  jars: Jars,
  label: string,
  check: Check,
  restartBroker: RestartBroker | undefined,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "booblik-compat-connect-"));
  const logFile = join(compatCache, `last-apps-connect-${label}.log`);
  writeFileSync(logFile, "");
  const sourceFile = join(dir, "source.txt");
  const sinkFile = join(dir, "sink.txt");
  const port = freePort();
  const properties = join(dir, "worker.properties");
  writeFileSync(
    properties,
    [
      `bootstrap.servers=${bootstrap}`,
      `group.id=${CONNECT_GROUP}`,
      ...Object.entries(CONNECT_INTERNAL).map(([key, topic]) => `${key}=${topic}`),
      "config.storage.replication.factor=1",
      "offset.storage.replication.factor=1",
      "status.storage.replication.factor=1",
      "key.converter=org.apache.kafka.connect.json.JsonConverter",
      "value.converter=org.apache.kafka.connect.json.JsonConverter",
      "key.converter.schemas.enable=false",
      "value.converter.schemas.enable=false",
      `listeners=http://127.0.0.1:${port}`,
      "rest.advertised.host.name=127.0.0.1",
      `plugin.path=${jars.plugins}`,
      "offset.flush.interval.ms=1000",
      "",
    ].join("\n"),
  );
  const log4j = log4jConfig(dir);
  const command = [
    ...JVM,
    `-Dlog4j2.configurationFile=${log4j}`,
    "-cp",
    `${jars.lib}/*`,
    "org.apache.kafka.connect.cli.ConnectDistributed",
    properties,
  ];
  const source = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "tasks.max": "1",
    file: sourceFile,
    topic: CONNECT_TOPIC,
    // KIP-158: the worker creates the topic (booblik and the Kafka node do not auto-create topics).
    "topic.creation.default.replication.factor": "1",
    "topic.creation.default.partitions": "1",
  };
  const sink = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
    "tasks.max": "1",
    file: sinkFile,
    topics: CONNECT_TOPIC,
  };
  const connectors = { "file-source": source, "file-sink": sink } as const;
  let worker: Jvm | undefined;
  const scenario = "Kafka Connect";
  const step = (name: string, ok: boolean, detail: string) => check(scenario, name, ok, detail);

  /** Starts the worker and waits until its herder answers GET /connectors (it has joined and read the config topic). */
  const start = async (what: string) => {
    const started = performance.now();
    const jvm = startJvm(command, logFile);
    worker = jvm;
    const listed = await waitFor(
      `${what}: GET /connectors`,
      START_MS_MAX,
      async () => {
        try {
          const answer = await rest(port, "GET", "/connectors");
          return answer.status === 200 ? (answer.body as string[]) : undefined;
        } catch {
          return undefined; // not listening yet, or the herder not ready within the request's time
        }
      },
      () => (jvm.exitCode() === null ? undefined : `the worker exited with ${jvm.exitCode()} (${logFile})`),
    );
    return { ms: performance.now() - started, listed };
  };

  const waitRunning = async (what: string) => {
    const started = performance.now();
    let last = "";
    try {
      await waitFor(what, WAIT_MS_MAX, async () => {
        const states: string[] = [];
        let all = true;
        for (const name of Object.keys(connectors)) {
          const answer = await rest(port, "GET", `/connectors/${name}/status`);
          if (answer.status !== 200) {
            states.push(`${name}: HTTP ${answer.status}`);
            all = false;
            continue;
          }
          const status = answer.body as Status;
          const failed = [status.connector, ...status.tasks].find((s) => s.state === "FAILED");
          if (failed !== undefined)
            throw new Error(`${name} FAILED: ${(failed.trace ?? "").split("\n").slice(0, 3).join(" ")}`);
          states.push(
            `${name} ${status.connector.state}, tasks ${status.tasks.map((t) => `${t.id}:${t.state}`).join(" ") || "none"}`,
          );
          if (status.connector.state !== "RUNNING" || status.tasks.length === 0) all = false;
          if (status.tasks.some((t) => t.state !== "RUNNING")) all = false;
        }
        last = states.join("; ");
        return all ? true : undefined;
      });
      return { ok: true, detail: `${last} (${seconds(performance.now() - started)})` };
    } catch (error) {
      return { ok: false, detail: `${(error as Error).message}; last: ${last}` };
    }
  };

  /** Lines in the sink file once it has at least `count` and the sink's group has committed the topic's end. */
  const waitSink = async (count: number) => {
    const admin = kafkaClient(bootstrap, "compat-apps-connect").admin();
    await admin.connect();
    try {
      let state = "";
      const started = performance.now();
      const lines = await waitFor(`${count} lines in the sink file`, WAIT_MS_MAX, async () => {
        const got = fileLines(sinkFile);
        const end = (await admin.fetchTopicOffsets(CONNECT_TOPIC)).reduce(
          (sum, p) => sum + Number(p.high),
          0,
        );
        const [committed] = await admin.fetchOffsets({
          groupId: "connect-file-sink",
          topics: [CONNECT_TOPIC],
        });
        const at = (committed?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
        state = `sink file ${got.length} lines, topic end ${end}, sink group committed ${at}`;
        return got.length >= count && at === end ? got : undefined;
      }).catch((error: Error) => {
        throw new Error(`${error.message} (${state})`);
      });
      const end = (await admin.fetchTopicOffsets(CONNECT_TOPIC)).reduce((sum, p) => sum + Number(p.high), 0);
      return { lines, end, ms: performance.now() - started, state };
    } finally {
      await admin.disconnect();
    }
  };

  try {
    writeFileSync(sourceFile, `${numbered(1, CONNECT_LINES_FIRST).join("\n")}\n`);
    const first = await start("worker start");
    step(
      "worker started, herder answers GET /connectors",
      true,
      `${seconds(first.ms)}; connectors ${JSON.stringify(first.listed)}`,
    );

    const policies = await cleanupPolicies(bootstrap, Object.values(CONNECT_INTERNAL));
    step(
      "the worker created its three internal topics, compacted",
      [...policies.values()].every((p) => p === "compact"),
      [...policies].map(([topic, policy]) => `${topic}: ${policy}`).join(", "),
    );

    for (const [name, config] of Object.entries(connectors)) {
      const answer = await rest(port, "POST", "/connectors", { name, config });
      step(
        `POST /connectors ${name}`,
        answer.status === 201,
        `HTTP ${answer.status}${answer.status === 201 ? "" : ` ${JSON.stringify(answer.body)}`}`,
      );
    }
    const running = await waitRunning("connectors and tasks RUNNING");
    step("both connectors and their tasks RUNNING", running.ok, running.detail);

    const firstLines = numbered(1, CONNECT_LINES_FIRST);
    const sunk = await waitSink(CONNECT_LINES_FIRST);
    step(
      `the sink file has the ${CONNECT_LINES_FIRST} lines in order`,
      firstDifference(sunk.lines, firstLines) === "none",
      `${sunk.lines.length} lines after ${seconds(sunk.ms)}; topic end ${sunk.end}; difference: ${firstDifference(sunk.lines, firstLines)}`,
    );

    const stopped = await worker!.stop();
    worker = undefined;
    const stoppedLine = readFileSync(logFile, "utf8").includes("Kafka Connect stopped");
    step(
      "SIGTERM stops the worker gracefully",
      !stopped.killed && stoppedLine,
      `exit ${stopped.code} after ${seconds(stopped.ms)}; "Kafka Connect stopped" logged: ${stoppedLine}`,
    );

    if (restartBroker !== undefined) {
      const ms = await restartBroker();
      const after = await cleanupPolicies(bootstrap, Object.values(CONNECT_INTERNAL));
      step(
        RESTART_STEP,
        [...after.values()].every((p) => p === "compact"),
        `${seconds(ms)}; then ${[...after].map(([topic, policy]) => `${topic}: ${policy}`).join(", ")}`,
      );
    }
    appendFileSync(
      sourceFile,
      `${numbered(CONNECT_LINES_FIRST + 1, CONNECT_LINES_FIRST + CONNECT_LINES_MORE).join("\n")}\n`,
    );
    const second = await start("worker restart");
    step("worker restarted, herder answers GET /connectors", true, seconds(second.ms));
    const configs: string[] = [];
    let same = [...second.listed].sort().join(",") === Object.keys(connectors).sort().join(",");
    for (const [name, config] of Object.entries(connectors)) {
      const answer = await rest(port, "GET", `/connectors/${name}/config`);
      const expected = JSON.stringify(Object.entries({ ...config, name }).sort());
      const got =
        answer.status === 200
          ? JSON.stringify(Object.entries(answer.body as object).sort())
          : `HTTP ${answer.status}`;
      if (got !== expected) {
        same = false;
        configs.push(`${name}: ${got}`);
      }
    }
    step(
      "both connectors and their configs are back from the config topic (not created again)",
      same,
      `GET /connectors ${JSON.stringify(second.listed)}${configs.length === 0 ? "; configs as posted" : `; ${configs.join("; ")}`}`,
    );
    const again = await waitRunning("connectors and tasks RUNNING after the restart");
    step("both connectors and their tasks RUNNING after the restart", again.ok, again.detail);

    const all = numbered(1, CONNECT_LINES_FIRST + CONNECT_LINES_MORE);
    const resumed = await waitSink(all.length);
    step(
      `the topic holds exactly ${all.length} records (the source resumed at its stored offset)`,
      resumed.end === all.length,
      `topic end ${resumed.end}`,
    );
    step(
      `the sink file has exactly the ${all.length} lines in order (the sink resumed at its commit)`,
      firstDifference(resumed.lines, all) === "none",
      `${resumed.lines.length} lines after ${seconds(resumed.ms)}; difference: ${firstDifference(resumed.lines, all)}`,
    );
  } catch (error) {
    step("(aborted)", false, (error as Error).message.split("\n")[0]!);
  } finally {
    if (worker !== undefined) {
      const stopped = await worker.stop();
      if (stopped.killed) console.log(`the Connect worker did not stop within ${STOP_MS_MAX} ms: killed`);
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Kafka Streams, word count.

function streamsLines(from: number, count: number): string[] {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    const words = Array.from({ length: 1 + (i % 4) }, (_, j) => WORDS[(i * 5 + j * 7) % WORDS.length]!);
    // Capitals and punctuation: the program lower-cases and splits on \W+.
    return `${words[0]!.toUpperCase()} ${words.slice(1).join(", ")}.`;
  });
}

function countWords(lines: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines)
    for (const word of line.toLowerCase().split(/\W+/))
      if (word !== "") counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

const showCounts = (counts: Map<string, number>) =>
  [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([w, n]) => `${w}=${n}`)
    .join(" ");

/** The last count of each word in the output topic, read from the beginning until it equals `expected` (or the bound). */
async function readCounts(
  bootstrap: string,
  expected: Map<string, number>,
): Promise<{ counts: Map<string, number>; ms: number; ok: boolean }> {
  const kafka = kafkaClient(bootstrap, "compat-apps-counts");
  const consumer = kafka.consumer({ groupId: `compat-apps-counts-${crypto.randomUUID()}` });
  const counts = new Map<string, number>();
  const started = performance.now();
  const equal = () => counts.size === expected.size && [...expected].every(([w, n]) => counts.get(w) === n);
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [STREAMS_OUTPUT], fromBeginning: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ok = await new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), WAIT_MS_MAX);
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          const word = message.key?.toString() ?? "(null)";
          counts.set(word, message.value === null ? -1 : Number(message.value.readBigInt64BE()));
          if (equal()) resolve(true);
        },
      });
    });
    clearTimeout(timer);
    return { counts, ms: performance.now() - started, ok };
  } finally {
    await consumer.disconnect();
  }
}

async function streamsScenario(
  bootstrap: string,
  jars: Jars,
  label: string,
  check: Check,
  restartBroker: RestartBroker | undefined,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "booblik-compat-streams-"));
  const stateDir = join(dir, "state");
  const logFile = join(compatCache, `last-apps-streams-${label}.log`);
  writeFileSync(logFile, "");
  const log4j = log4jConfig(dir);
  const command = [
    ...JVM,
    `-Dlog4j2.configurationFile=${log4j}`,
    "-cp",
    `${jars.lib}/*:${jars.classes}`,
    "WordCount",
    bootstrap,
    STREAMS_APP,
    STREAMS_INPUT,
    STREAMS_OUTPUT,
    stateDir,
    args["streams-guarantee"]!,
  ];
  const scenario = `Kafka Streams (${args["streams-guarantee"]})`;
  const step = (name: string, ok: boolean, detail: string) => check(scenario, name, ok, detail);
  const kafka = kafkaClient(bootstrap, "compat-apps-streams");
  const admin = kafka.admin();
  const producer = kafka.producer();
  let app: Jvm | undefined;

  const start = async (what: string) => {
    const started = performance.now();
    const jvm = startJvm(command, logFile);
    app = jvm;
    await waitFor(
      what,
      START_MS_MAX,
      () =>
        jvm.lines.some((line) => line.startsWith("STATE ") && line.endsWith(" RUNNING")) ? true : undefined,
      () => {
        const fatal = jvm.lines.find(
          (line) => line.startsWith("UNCAUGHT ") || (line.startsWith("STATE ") && line.endsWith(" ERROR")),
        );
        if (fatal !== undefined) return fatal;
        return jvm.exitCode() === null
          ? undefined
          : `the application exited with ${jvm.exitCode()} (${logFile})`;
      },
    );
    return performance.now() - started;
  };
  const stop = async () => {
    const stopped = await app!.stop();
    const closed = app!.lines.find((line) => line.startsWith("CLOSED "));
    app = undefined;
    return { ...stopped, closed };
  };
  const produce = async (lines: string[]) => {
    await producer.send({ topic: STREAMS_INPUT, messages: lines.map((value) => ({ key: null, value })) });
  };

  try {
    await admin.connect();
    await producer.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: STREAMS_INPUT, numPartitions: 2 },
        { topic: STREAMS_OUTPUT, numPartitions: 2 },
      ],
    });
    const firstMs = await start("the application RUNNING");
    step("the application starts and reaches RUNNING", true, seconds(firstMs));

    const changelog = `${STREAMS_APP}-counts-changelog`;
    const repartition = `${STREAMS_APP}-counts-repartition`;
    const policies = await cleanupPolicies(bootstrap, [changelog, repartition]);
    step(
      "it created its changelog topic compacted and its repartition topic",
      policies.get(changelog) === "compact" && policies.get(repartition) === "delete",
      [...policies].map(([topic, policy]) => `${topic}: ${policy}`).join(", "),
    );

    /** The output read to the counts of `lines`, checked as the step `name`. */
    const countsStep = async (name: string, lines: string[]) => {
      const expected = countWords(lines);
      const read = await readCounts(bootstrap, expected);
      step(
        name,
        read.ok,
        read.ok
          ? `${showCounts(read.counts)} (${seconds(read.ms)})`
          : `got ${showCounts(read.counts)}; expected ${showCounts(expected)}`,
      );
    };
    /** SIGTERM, and the application's CLOSED line, as the step `name`. */
    const stopStep = async (name: string) => {
      const stopped = await stop();
      step(
        name,
        !stopped.killed && stopped.closed === "CLOSED true",
        `exit ${stopped.code} after ${seconds(stopped.ms)}; ${stopped.closed ?? "no CLOSED line"}`,
      );
    };

    const first = streamsLines(0, STREAMS_LINES_FIRST);
    await produce(first);
    await countsStep(`the output holds the count of each word of ${first.length} lines`, first);
    await stopStep("SIGTERM closes the application cleanly");

    rmSync(stateDir, { recursive: true, force: true });
    if (restartBroker !== undefined) {
      const ms = await restartBroker();
      const after = await cleanupPolicies(bootstrap, [changelog, repartition]);
      step(
        RESTART_STEP,
        after.get(changelog) === "compact" && after.get(repartition) === "delete",
        `${seconds(ms)}; then ${[...after].map(([topic, policy]) => `${topic}: ${policy}`).join(", ")}`,
      );
    }
    const more = streamsLines(STREAMS_LINES_FIRST, STREAMS_LINES_MORE);
    await produce(more);
    const secondMs = await start("the application RUNNING again");
    const restored = app!.lines.filter((line) => line.startsWith("RESTORED "));
    const records = restored.reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
    step(
      "with its state directory deleted, it restores the store from the changelog and reaches RUNNING",
      restored.length > 0 && records > 0,
      `${seconds(secondMs)}; ${records} records restored from ${restored.map((line) => line.split(" ")[1]).join(", ") || "no partition"}`,
    );

    await countsStep(`the output holds the count of each word over all ${first.length + more.length} lines`, [
      ...first,
      ...more,
    ]);
    await stopStep("SIGTERM closes it cleanly again");
  } catch (error) {
    step("(aborted)", false, (error as Error).message.split("\n")[0]!);
  } finally {
    if (app !== undefined) await app.stop();
    await producer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

type Check = (scenario: string, step: string, ok: boolean, detail: string) => void;
/** Stops the broker and starts it again on the same data directory and port: the time it took. */
type RestartBroker = () => Promise<number>;
const RESTART_STEP =
  "booblik restarted on the same data directory and port (--restart-broker), topic configs kept";

async function runAll(
  target: string,
  label: string,
  bootstrap: string,
  jars: Jars,
  restartBroker?: RestartBroker,
): Promise<Row[]> {
  const rows: Row[] = [];
  const check: Check = (scenario, step, ok, detail) => {
    rows.push({ scenario, step, ok, detail });
    console.log(`${ok ? "ok  " : "FAIL"} [${target}] ${scenario}: ${step}: ${detail}`);
  };
  console.log(
    `\n${target} at ${bootstrap}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  if (only.includes("connect")) await connectScenario(bootstrap, jars, label, check, restartBroker);
  if (only.includes("streams")) await streamsScenario(bootstrap, jars, label, check, restartBroker);
  return rows;
}

const APP_NAMES = { connect: "Kafka Connect", streams: "Kafka Streams" } as const;

/**
 * Each distinct WARN or ERROR message of a JVM log once, with its count: time stamps, ports,
 * correlation ids, UUIDs (member and client ids) and temporary directory names cut, so that the
 * messages of a run against Kafka and against booblik compare.
 */
function complaints(logFile: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = "";
  try {
    text = readFileSync(logFile, "utf8");
  } catch {
    return counts;
  }
  for (const line of text.split("\n")) {
    if (!/^\[[^\]]*\] (WARN|ERROR) /.test(line)) continue;
    const message = line
      .replace(/^\[[^\]]*\] /, "")
      .replace(/correlation id \d+/g, "correlation id N")
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "UUID")
      .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT")
      .replace(/booblik-compat-[a-z]+-[A-Za-z0-9]+/g, "booblik-compat-DIR")
      .slice(0, 300);
    counts.set(message, (counts.get(message) ?? 0) + 1);
  }
  return counts;
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

function table(target: string, rows: Row[], logs: string): void {
  console.log(
    `\nKafka Connect and Kafka Streams ${kafkaVersion} against ${target}, ${new Date().toISOString()}\n`,
  );
  console.log("| scenario | step | result | detail |");
  console.log("| --- | --- | --- | --- |");
  for (const row of rows)
    console.log(
      `| ${row.scenario} | ${cell(row.step)} | ${row.ok ? "PASS" : "FAIL"} | ${cell(row.detail)} |`,
    );
  const failed = rows.filter((row) => !row.ok).length;
  console.log(`\n${rows.length - failed} passed, ${failed} failed (${logs})`);
}

/**
 * A booblik broker child on its own data directory and a fixed Kafka port, so that
 * `--restart-broker` can stop it and start it again where the applications expect it.
 */
async function booblikTarget(brokerLog: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "booblik-compat-apps-data-"));
  const flags = ["--kafka-port", String(freePort())];
  let child = await startBooblik(flags, { logFile: brokerLog, dataDir });
  return {
    name: "booblik",
    label: "booblik",
    bootstrap: child.bootstrap,
    restart: async () => {
      const started = performance.now();
      await child.stop();
      child = await startBooblik(flags, { logFile: brokerLog, dataDir });
      return performance.now() - started;
    },
    stop: async () => {
      await child.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<number> {
  const jars = await appJars();
  const logs = (label: string) =>
    `JVM output: ${join(compatCache, `last-apps-{connect,streams}-${label}.log`)}`;
  let onKafka: Row[] | undefined;
  if (args.kafka) {
    const kafka = await startKafka(await serverJars(kafkaVersion), kafkaVersion, { niceness: 5 });
    try {
      onKafka = await runAll(`Apache Kafka ${kafkaVersion}`, "kafka", kafka.bootstrap, jars);
    } finally {
      await kafka.stop();
    }
  }
  const brokerLog = join(compatCache, "last-apps-broker.log");
  rmSync(brokerLog, { force: true });
  const target =
    args.bootstrap === undefined
      ? await booblikTarget(brokerLog)
      : {
          name: `the server at ${args.bootstrap}`,
          label: "external",
          bootstrap: args.bootstrap,
          restart: undefined,
          stop: async () => {},
        };
  let rows: Row[];
  try {
    rows = await runAll(
      target.name,
      target.label,
      target.bootstrap,
      jars,
      args["restart-broker"] ? target.restart : undefined,
    );
  } finally {
    await target.stop();
  }
  if (onKafka !== undefined) table(`Apache Kafka ${kafkaVersion} (KRaft, one node)`, onKafka, logs("kafka"));
  table(
    target.name,
    rows,
    `${logs(target.label)}${target.label === "booblik" ? `; broker output: ${brokerLog}` : ""}`,
  );
  if (onKafka !== undefined) {
    const theirs = new Map(onKafka.map((row) => [`${row.scenario}\t${row.step}`, row]));
    const ours = new Map(rows.map((row) => [`${row.scenario}\t${row.step}`, row]));
    console.log(`\nSteps whose result differs: ${target.name} vs Apache Kafka ${kafkaVersion}\n`);
    console.log(`| scenario | step | ${target.name} | Apache Kafka |`);
    console.log("| --- | --- | --- | --- |");
    let differences = 0;
    for (const key of new Set([...theirs.keys(), ...ours.keys()])) {
      const a = ours.get(key);
      const b = theirs.get(key);
      if (a?.ok === b?.ok) continue;
      if (b === undefined && a?.step === RESTART_STEP) continue; // booblik only
      differences++;
      const [scenario, step] = key.split("\t");
      const show = (row: Row | undefined) =>
        row === undefined ? "(not reached)" : `${row.ok ? "PASS" : "FAIL"}: ${cell(row.detail)}`;
      console.log(`| ${scenario} | ${cell(step!)} | ${show(a)} | ${show(b)} |`);
    }
    console.log(`\n${differences} step${differences === 1 ? "" : "s"} with a different result`);
  }
  const list = (title: string, messages: [string, number][]) => {
    console.log(`${title}:${messages.length === 0 ? " none" : ""}`);
    for (const [message, count] of messages) console.log(`  ${count} × ${message}`);
  };
  for (const app of only) {
    const ours = complaints(join(compatCache, `last-apps-${app}-${target.label}.log`));
    console.log("");
    list(`${APP_NAMES[app]}: WARN and ERROR messages against ${target.name}`, [...ours]);
    if (onKafka === undefined) continue;
    const theirs = complaints(join(compatCache, `last-apps-${app}-kafka.log`));
    list(
      `${APP_NAMES[app]}: WARN and ERROR messages only against ${target.name}, not against Kafka`,
      [...ours].filter(([message]) => !theirs.has(message)),
    );
    list(
      `${APP_NAMES[app]}: WARN and ERROR messages only against Kafka`,
      [...theirs].filter(([message]) => !ours.has(message)),
    );
  }
  const failed = [...rows, ...(onKafka ?? [])].some((row) => !row.ok);
  return failed ? 1 : 0;
}

process.exit(await main());
