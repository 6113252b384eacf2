/**
 * `bun run compat:kafka`: the differential run. Fetches Apache Kafka's server (kafka_2.13 and its
 * runtime dependencies) from Maven Central with Maven into the compat cache (nothing of Kafka is in
 * the repository), formats and starts one KRaft node (broker and controller) on 127.0.0.1, runs the
 * Java scenario of `bun run compat` against it and against a booblik broker child process, stops
 * Kafka, and prints every scenario whose result differs and every observed value (offsets,
 * timestamps, exception names, config sources) that differs between the two.
 *
 * The node: one process, `process.roles=broker,controller`, static voter 1 on a second port,
 * replication factor 1 for the internal topics, `group.initial.rebalance.delay.ms=0`,
 * `auto.create.topics.enable=false` (booblik's behaviour), log dirs in
 * a temporary directory removed at the end, heap 512 MiB. Ports are taken from the kernel (bind to
 * port 0, close, reuse the number): Kafka's controller quorum needs a fixed port in its config.
 *
 * Usage: bun run compat:kafka [--kafka-version 4.1.1]
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { compatCache, serverJars, startKafka } from "./kafka-node.ts";

const HERE = import.meta.dir;
const { values: args } = parseArgs({
  options: { "kafka-version": { type: "string", default: "4.1.1" } },
});
const kafkaVersion = args["kafka-version"]!;
const cache = compatCache;

/** The scenario results and observed values of one run's client log. */
function parse(log: string): { results: Map<string, string>; observed: Map<string, string> } {
  const results = new Map<string, string>();
  const observed = new Map<string, string>();
  for (const line of log.split("\n")) {
    const [kind, key = "", ...rest] = line.split("\t");
    if (kind === "COMPAT") results.set(key, rest.join(" | "));
    else if (kind === "OBSERVE") observed.set(key, rest.join("\t"));
  }
  return { results, observed };
}

async function compat(extra: string[]): Promise<void> {
  const child = Bun.spawn(
    [process.execPath, join(HERE, "run.ts"), "--kafka-version", kafkaVersion, ...extra],
    {
      stdout: "inherit",
      stderr: "inherit",
    },
  );
  await child.exited; // exit 1 when a scenario failed: compared below, not fatal here
}

const lib = await serverJars(kafkaVersion);
const kafka = await startKafka(lib, kafkaVersion);
try {
  await compat(["--bootstrap", kafka.bootstrap, "--name", "kafka"]);
} finally {
  await kafka.stop();
}
await compat([]);

const ofKafka = parse(readFileSync(join(cache, "last-kafka.log"), "utf8"));
const ofBooblik = parse(readFileSync(join(cache, "last-booblik.log"), "utf8"));
console.log(
  `\nDifferences, kafka-clients ${kafkaVersion}: Apache Kafka ${kafkaVersion} (KRaft, one node) vs booblik\n`,
);
console.log("| what | Apache Kafka | booblik |");
console.log("| --- | --- | --- |");
let differences = 0;
const cell = (value: string | undefined) => (value ?? "(none)").replaceAll("|", "\\|");
for (const [table, label] of [
  [ofKafka.results, "scenario"],
  [ofKafka.observed, "observed"],
] as const) {
  const other = label === "scenario" ? ofBooblik.results : ofBooblik.observed;
  const keys = new Set([...table.keys(), ...other.keys()]);
  for (const key of keys) {
    const a = table.get(key);
    const b = other.get(key);
    // Scenario rows differ when PASS/FAIL differs; their reasons name ports and run ids.
    const same = label === "scenario" ? a?.split(" | ")[0] === b?.split(" | ")[0] : a === b;
    if (same) continue;
    differences++;
    console.log(`| ${label}: ${key} | ${cell(a)} | ${cell(b)} |`);
  }
}
console.log(`\n${differences} difference${differences === 1 ? "" : "s"}`);
