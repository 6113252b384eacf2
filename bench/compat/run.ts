/**
 * `bun run compat`: the Java client (kafka-clients 4.x from Maven Central) against booblik's Kafka
 * listener. Not in the gate: it downloads jars (once) and runs a JVM.
 *
 * 1. Fetches kafka-clients and what it needs with Maven (bench/compat/java/pom.xml) into a cache
 *    outside the repository: $BOOBLIK_COMPAT_CACHE, default ~/.cache/booblik-compat (nothing
 *    downloaded is ever in the work tree).
 * 2. Compiles bench/compat/java/Compat.java with javac into the cache.
 * 3. Starts a booblik broker child process on a temporary data directory (`--kafka-port 0`, port
 *    read from its start-up line) — or, with `--bootstrap host:port`, uses a running Kafka-speaking
 *    server instead (the differential run against Apache Kafka).
 * 4. Runs the scenarios (producer, consumer group, AdminClient), prints the summary table
 *    (scenario, PASS/FAIL, reason) as Markdown, keeps the whole client output in
 *    <cache>/last-<target>.log, and exits 1 when a scenario failed.
 *
 * Usage: bun run compat [--kafka-version 4.1.1] [--bootstrap host:port [--name kafka]]
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startBooblik } from "./booblik.ts";
import { copyMavenDependencies } from "./kafka-node.ts";
import { runCommand as run } from "./run-command.ts";

const HERE = import.meta.dir;
const { values: args } = parseArgs({
  options: {
    "kafka-version": { type: "string", default: "4.1.1" },
    bootstrap: { type: "string" },
    /** The name of the --bootstrap target in the table and the log file name. */
    name: { type: "string", default: "external" },
  },
});
const kafkaVersion = args["kafka-version"]!;
const cache = process.env.BOOBLIK_COMPAT_CACHE ?? join(homedir(), ".cache", "booblik-compat");
/** Bound of the whole Java run: every client call in it has its own timeout of at most 30 s. */
const JAVA_RUN_MS_MAX = 10 * 60_000;

/** The client jars in the cache, fetched by Maven the first time. */
async function clientJars(): Promise<string> {
  const lib = join(cache, `lib-${kafkaVersion}`);
  const present = (() => {
    try {
      return readdirSync(lib).some((name) => name === `kafka-clients-${kafkaVersion}.jar`);
    } catch {
      return false;
    }
  })();
  if (!present) {
    console.log(`fetching kafka-clients ${kafkaVersion} with Maven into ${lib}`);
    await copyMavenDependencies(join(HERE, "java", "pom.xml"), kafkaVersion, lib, false);
  }
  return lib;
}

/** Compiles Compat.java when its class is missing or older than the source. */
async function compiled(lib: string): Promise<string> {
  const classes = join(cache, `classes-${kafkaVersion}`);
  const source = join(HERE, "java", "Compat.java");
  const classFile = join(classes, "Compat.class");
  let fresh = false;
  try {
    fresh = statSync(classFile).mtimeMs >= statSync(source).mtimeMs;
  } catch {}
  if (!fresh) {
    mkdirSync(classes, { recursive: true });
    await run(["javac", "-nowarn", "-d", classes, "-cp", `${lib}/*`, source], "javac");
  }
  return classes;
}

interface Target {
  name: string;
  bootstrap: string;
  stop(): Promise<void>;
}

interface Row {
  scenario: string;
  status: string;
  reason: string;
}

async function main(): Promise<number> {
  const lib = await clientJars();
  const classes = await compiled(lib);
  const target: Target =
    args.bootstrap === undefined
      ? { name: "booblik", ...(await startBooblik()) }
      : { name: args.name!, bootstrap: args.bootstrap, stop: async () => {} };
  let output: string;
  try {
    const java = Bun.spawn(
      [
        "java",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        `${lib}/*:${classes}`,
        "Compat",
        target.bootstrap,
        String(Date.now()),
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const timer = setTimeout(() => java.kill("SIGKILL"), JAVA_RUN_MS_MAX);
    const [stdout, stderr] = await Promise.all([
      new Response(java.stdout).text(),
      new Response(java.stderr).text(),
      java.exited,
    ]).finally(() => clearTimeout(timer));
    output = stdout + stderr;
  } finally {
    await target.stop();
  }
  const logFile = join(cache, `last-${target.name}.log`);
  writeFileSync(logFile, output);
  const rows: Row[] = output
    .split("\n")
    .filter((line) => line.startsWith("COMPAT\t"))
    .map((line) => {
      const [, scenario = "", status = "", reason = ""] = line.split("\t");
      return { scenario, status, reason };
    });
  const failed = rows.filter((row) => row.status !== "PASS").length;
  console.log(
    `\nkafka-clients ${kafkaVersion} (Java ${javaVersion()}) against ${target.name} at ${target.bootstrap}, ${new Date().toISOString()}\n`,
  );
  console.log("| scenario | result | reason |");
  console.log("| --- | --- | --- |");
  for (const row of rows)
    console.log(`| ${row.scenario} | ${row.status} | ${row.reason.replaceAll("|", "\\|")} |`);
  console.log(`\n${rows.length - failed} passed, ${failed} failed (client output: ${logFile})`);
  if (rows.length === 0) console.log(output);
  return failed === 0 && rows.length > 0 ? 0 : 1;
}

function javaVersion(): string {
  const result = Bun.spawnSync(["java", "-version"], { stderr: "pipe" });
  return /version "([^"]+)"/.exec(result.stderr.toString())?.[1] ?? "unknown";
}

process.exit(await main());
