/**
 * `bun run compat:go`: the two Go clients not covered by `compat:franz-go`, IBM/sarama and
 * segmentio/kafka-go, against booblik's Kafka listener. Not in the gate: it downloads the modules
 * through the Go module proxy (once) and builds a Go program.
 *
 * 1. Builds bench/compat/go (its go.mod and go.sum pin sarama and kafka-go) with GOPATH and
 *    GOMODCACHE in $BOOBLIK_COMPAT_CACHE/go (default ~/.cache/booblik-compat/go, as
 *    bench/compat/franz-go.ts), into <cache>/go-compat/scenarios.
 * 2. For each client (sarama with config.Version at its default, sarama with its newest version
 *    constant, kafka-go), starts a booblik broker child process on a temporary data directory
 *    (`--kafka-port 0`), or uses `--bootstrap host:port` (another Kafka-speaking server), and runs
 *    that client's scenarios: each prints one `RESULT {json}` line (PASS, FAIL, or KNOWN for a gap
 *    docs/kafka.md documents), and the program ends with a `VERSIONS` line, the request versions the
 *    client wrote (read from its connections).
 * 3. With `--kafka`, first starts one Apache Kafka node (bench/compat/kafka-node.ts, default 4.1.1,
 *    KRaft, fetched with Maven into the compat cache), runs every client against it, stops it, and
 *    then prints one table with both results per scenario (the differential run).
 * 4. Prints one Markdown table per client, keeps the client output in
 *    <cache>/last-go-<client>[-kafka].log and the broker's in <cache>/last-go-<client>-broker.log,
 *    and exits 1 when a scenario failed or a client's program ended without its results.
 *
 * Usage: bun run compat:go [--client sarama-default|sarama-newest|kafka-go]... [--only <word>]...
 *        [--bootstrap host:port] [--kafka [--kafka-version 4.1.1]] [--debug]
 * --debug turns on Sarama's Logger and DebugLogger (into the client log).
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startBooblik } from "./booblik.ts";
import { compatCache, serverJars, startKafka } from "./kafka-node.ts";

const HERE = join(import.meta.dir, "go");
const { values: args } = parseArgs({
  options: {
    client: { type: "string", multiple: true },
    only: { type: "string", multiple: true },
    bootstrap: { type: "string" },
    kafka: { type: "boolean", default: false },
    "kafka-version": { type: "string", default: "4.1.1" },
    debug: { type: "boolean", default: false },
  },
});
const cache = compatCache;
const goEnv = {
  ...process.env,
  GOPATH: join(cache, "go"),
  GOMODCACHE: join(cache, "go", "mod"),
  GOFLAGS: "-modcacherw",
};
const binary = join(cache, "go-compat", "scenarios");
/** Bound of one client's program: each scenario has its own bound of 150 s (common.go). */
const GO_RUN_MS_MAX = 15 * 60_000;

const CLIENTS = {
  "sarama-default": "IBM/sarama, config.Version default",
  "sarama-newest": "IBM/sarama, config.Version = sarama.MaxVersion",
  "kafka-go": "segmentio/kafka-go",
} as const;
type Client = keyof typeof CLIENTS;

interface Row {
  scenario: string;
  status: string;
  reason: string;
  seconds: number;
}

interface Run {
  rows: Row[];
  complete: boolean;
  version: string;
  versions: string;
  /** The OBSERVE lines: a value seen, not judged (compared between the brokers with --kafka). */
  observed: Map<string, string>;
  target: string;
}

/** A Go command in the compat cache's environment, to its end: its output, or an error with it. */
async function go(command: string[], cwd: string): Promise<string> {
  const child = Bun.spawn(["go", ...command], { cwd, env: goEnv, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`go ${command.join(" ")} failed (exit ${code}):\n${stdout}${stderr}`);
  return stdout + stderr;
}

async function build(): Promise<void> {
  mkdirSync(join(cache, "go-compat"), { recursive: true });
  console.log(`building bench/compat/go into ${binary} (modules in ${goEnv.GOMODCACHE})`);
  await go(["build", "-o", binary, "."], HERE);
}

async function runClient(client: Client, onKafka: string | undefined): Promise<Run> {
  const suffix = onKafka === undefined ? "" : "-kafka";
  const brokerLog = join(cache, `last-go-${client}-broker.log`);
  if (onKafka === undefined) rmSync(brokerLog, { force: true });
  const target =
    onKafka !== undefined
      ? { name: `Apache Kafka ${args["kafka-version"]}`, bootstrap: onKafka, stop: async () => {} }
      : args.bootstrap === undefined
        ? { name: "booblik", ...(await startBooblik([], { logFile: brokerLog })) }
        : { name: "external", bootstrap: args.bootstrap, stop: async () => {} };
  let output: string;
  let code: number;
  try {
    const child = Bun.spawn([binary, client, target.bootstrap, ...(args.only ?? [])], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ...(args.debug ? { COMPAT_DEBUG: "1" } : {}) },
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), GO_RUN_MS_MAX);
    const [stdout, stderr] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ]).finally(() => clearTimeout(timer));
    code = await child.exited;
    output = `${stdout}\n--- stderr ---\n${stderr}`;
  } finally {
    await target.stop();
  }
  const logFile = join(cache, `last-go-${client}${suffix}.log`);
  writeFileSync(logFile, output);
  const version = /^VERSION (.*)$/m.exec(output)?.[1] ?? CLIENTS[client];
  const versions = /^VERSIONS (.*)$/m.exec(output)?.[1] ?? "(none)";
  const observed = new Map<string, string>();
  for (const match of output.matchAll(/^OBSERVE (.*?) = (.*)$/gm)) observed.set(match[1]!, match[2]!);
  const rows: Row[] = output
    .split("\n")
    .filter((line) => line.startsWith("RESULT "))
    .map((line) => JSON.parse(line.slice("RESULT ".length)) as Row);
  console.log(`\n${version} against ${target.name} at ${target.bootstrap}, ${new Date().toISOString()}\n`);
  console.log("| scenario | result | reason |");
  console.log("| --- | --- | --- |");
  for (const row of rows) console.log(`| ${row.scenario} | ${row.status} | ${cell(row.reason)} |`);
  const count = (status: string) => rows.filter((row) => row.status === status).length;
  console.log(
    `\n${count("PASS")} passed, ${count("FAIL")} failed, ${count("KNOWN")} known gaps (client output: ${logFile}` +
      (target.name === "booblik" ? `; broker output: ${brokerLog})` : ")"),
  );
  console.log(`request versions sent: ${versions}`);
  // A program that crashed or was killed prints fewer results and exits non-zero.
  const complete = rows.length > 0 && (code === 0 || count("FAIL") > 0);
  if (!complete) console.log(`the ${client} program ended with exit code ${code}:\n${output.slice(-4000)}`);
  return { rows, complete, version, versions, observed, target: target.name };
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

async function main(): Promise<number> {
  const clients = (args.client ?? Object.keys(CLIENTS)) as Client[];
  for (const client of clients)
    if (!(client in CLIENTS))
      throw new Error(`--client takes ${Object.keys(CLIENTS).join(", ")}, got ${client}`);
  if (args.kafka && args.bootstrap !== undefined)
    throw new Error("--kafka and --bootstrap exclude each other");
  await build();
  console.log((await go(["version"], HERE)).trim());
  let ok = true;
  const onKafka = new Map<Client, Run>();
  if (args.kafka) {
    const kafkaVersion = args["kafka-version"]!;
    const kafka = await startKafka(await serverJars(kafkaVersion), kafkaVersion);
    try {
      for (const client of clients) onKafka.set(client, await runClient(client, kafka.bootstrap));
    } finally {
      await kafka.stop();
    }
  }
  const onBooblik = new Map<Client, Run>();
  for (const client of clients) onBooblik.set(client, await runClient(client, undefined));
  for (const run of [...onKafka.values(), ...onBooblik.values()])
    if (!run.complete || run.rows.some((row) => row.status === "FAIL")) ok = false;
  if (args.kafka) {
    const first = [...onBooblik.values()][0]?.target ?? "booblik";
    console.log(`\nDifferential run: ${first} vs Apache Kafka ${args["kafka-version"]} (KRaft, one node)\n`);
    console.log("| client | scenario | booblik | Kafka |");
    console.log("| --- | --- | --- | --- |");
    let differences = 0;
    for (const client of clients) {
      const theirs = new Map((onKafka.get(client)?.rows ?? []).map((row) => [row.scenario, row]));
      for (const row of onBooblik.get(client)?.rows ?? []) {
        const other = theirs.get(row.scenario);
        if (other?.status !== row.status) differences++;
        console.log(
          `| ${client} | ${row.scenario} | ${row.status} (${row.seconds} s) | ${other?.status ?? "(none)"} (${other?.seconds ?? "-"} s) |`,
        );
        if (other !== undefined && other.status !== row.status)
          console.log(`|  |  | ${cell(row.reason)} | ${cell(other.reason)} |`);
      }
    }
    console.log(`\n${differences} scenario${differences === 1 ? "" : "s"} with a different result`);
    console.log("\nObserved values that differ (not judged)\n");
    console.log("| client | what | booblik | Kafka |");
    console.log("| --- | --- | --- | --- |");
    for (const client of clients) {
      const ours = onBooblik.get(client)?.observed ?? new Map<string, string>();
      const theirs = onKafka.get(client)?.observed ?? new Map<string, string>();
      for (const what of new Set([...ours.keys(), ...theirs.keys()]))
        if (ours.get(what) !== theirs.get(what))
          console.log(
            `| ${client} | ${cell(what)} | ${cell(ours.get(what) ?? "(none)")} | ${cell(theirs.get(what) ?? "(none)")} |`,
          );
    }
    console.log("\nRequest versions sent (client: booblik / Kafka)\n");
    for (const client of clients)
      console.log(
        `- ${client}: booblik: ${onBooblik.get(client)?.versions}\n  Kafka: ${onKafka.get(client)?.versions}`,
      );
  }
  return ok ? 0 : 1;
}

process.exit(await main());
