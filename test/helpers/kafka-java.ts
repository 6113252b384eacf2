/**
 * Apache Kafka's own Java tools for tests (kafka-clients 4.1.1 under them): the jars are the ones
 * bench/compat/kafka-node.ts fetched into the compat cache (nothing of Kafka is in the repository).
 * Tests skip, saying why, when java or the jars are missing, as kcat's tests do.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type ProcessRun, runToEnd } from "./process.ts";

export const JAVA = Bun.which("java");
const JARS = path.join(
  process.env.BOOBLIK_COMPAT_CACHE ?? path.join(os.homedir(), ".cache", "booblik-compat"),
  "server-4.1.1",
);
/** Why the Java tools cannot run here, or undefined when they can. */
export const kafkaJavaUnavailable: string | undefined =
  JAVA === null
    ? "java is not installed"
    : fs.existsSync(path.join(JARS, "kafka-tools-4.1.1.jar"))
      ? undefined
      : `no Kafka 4.1.1 jars in ${JARS} (bun run compat:kafka fetches them)`;

/** Runs `org.apache.kafka.tools.<className> --bootstrap-server … --command-config … args`. */
export function kafkaTool(className: string, properties: string, bootstrap: string, args: string[]) {
  return kafkaMain(`org.apache.kafka.tools.${className}`, [
    "--bootstrap-server",
    bootstrap,
    "--command-config",
    properties,
    ...args,
  ]);
}

/**
 * Runs the main class of a Kafka tool (the class behind one of Kafka's `bin/*.sh` scripts) with
 * `args`, `input` on its standard input; killed after `timeoutMs`.
 */
export async function kafkaMain(
  mainClass: string,
  args: string[],
  input?: string,
  timeoutMs = 120_000,
): Promise<ProcessRun> {
  return runToEnd([JAVA!, "-Xmx256m", "-cp", `${JARS}/*`, mainClass, ...args], input, timeoutMs);
}
