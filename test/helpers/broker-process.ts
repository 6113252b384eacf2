/**
 * A real broker child process for end-to-end tests: `bun src/main.ts` on 127.0.0.1, port 0 (unless
 * told otherwise), a data directory of the test's. Waits for the start line (a condition, not a
 * sleep) and parses the port from it. `await using` kills it if the test did not stop it.
 */
import path from "node:path";
import type { Subprocess } from "bun";
import { LineReader } from "./process.ts";

export const MAIN = path.resolve(import.meta.dir, "../../src/main.ts");

export interface BrokerProcess extends AsyncDisposable {
  readonly process: Subprocess<"ignore", "pipe", "pipe">;
  readonly port: number;
  readonly startLine: string;
  readonly lines: LineReader;
  /** Sends `signal` and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

export async function startBroker(
  dataDir: string,
  extraArgs: string[] = [],
  /** Added to this process's environment; `undefined` removes a variable (e.g. the preload's). */
  env: Record<string, string | undefined> = {},
): Promise<BrokerProcess> {
  const child = Bun.spawn(
    [process.execPath, MAIN, "--data-dir", dataDir, "--host", "127.0.0.1", "--port", "0", ...extraArgs],
    {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: childEnvironment(env),
    },
  );
  const lines = new LineReader(child.stdout);
  let startLine: string;
  try {
    startLine = await lines.waitFor((line) => line.includes(" listening on "), "the broker's start line");
  } catch (error) {
    const stderr = await new Response(child.stderr).text();
    child.kill("SIGKILL");
    throw new Error(`broker did not start: ${stderr.trim() || (error as Error).message}`);
  }
  const port = Number(/listening on \S+:(\d+)/.exec(startLine)?.[1]);
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return child.exited;
  };
  return {
    process: child,
    port,
    startLine,
    lines,
    stop,
    async [Symbol.asyncDispose]() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await child.exited;
    },
  };
}

function childEnvironment(changes: Record<string, string | undefined>): Record<string, string> {
  // No Kafka listener unless asked for: the default port 9092 is one port for every broker this
  // machine runs. test/preload.ts sets the same, but scripts outside `bun test` (the torture and
  // power-loss harnesses) do not load it; a test of the default passes `BOOBLIK_KAFKA_PORT: undefined`.
  const env: Record<string, string | undefined> = {
    ...process.env,
    BOOBLIK_KAFKA_PORT: process.env.BOOBLIK_KAFKA_PORT ?? "off",
    ...changes,
  };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  return env as Record<string, string>;
}

/**
 * The Kafka listener's port, read from the broker's "Kafka protocol on 127.0.0.1:N" line (waited
 * for, not slept for): for a broker started with `--kafka-port 0`.
 */
export async function kafkaPortOf(broker: BrokerProcess): Promise<number> {
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  const port = Number(/Kafka protocol on \S+:(\d+)/.exec(line)?.[1]);
  if (!Number.isInteger(port) || port === 0) throw new Error(`no Kafka port in: ${line}`);
  return port;
}

/** The metrics port named by a start line of a broker started with `--metrics-port` (0 included). */
export function metricsPortOf(startLine: string): number {
  const port = Number(/metrics on [^:]+:(\d+)/.exec(startLine)?.[1]);
  if (!Number.isInteger(port) || port === 0) throw new Error(`no metrics port in: ${startLine}`);
  return port;
}

/** Runs the broker expecting it to refuse to start; returns its exit code and stderr. */
export async function runBrokerExpectingFailure(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ exitCode: number; stderr: string; stdout: string }> {
  const child = Bun.spawn([process.execPath, MAIN, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: childEnvironment(env),
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, stderr, stdout };
}

/** Resident and anonymous resident memory of a process, in bytes (from /proc/<pid>/status). */
export async function memoryOf(pid: number): Promise<{ rssBytes: number; anonymousBytes: number }> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const kib = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rssBytes: kib("VmRSS"), anonymousBytes: kib("RssAnon") };
}
