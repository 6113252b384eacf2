/**
 * A booblik broker child process for the compat runs: a temporary data directory, the native port
 * and the Kafka port both 0 (the Kafka port is read from the start-up line), stopped with SIGTERM
 * and its directory removed.
 */
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
/** Bound of the broker's start (a cold Bun start on a loaded machine takes a few seconds). */
const BROKER_START_MS_MAX = 60_000;

export interface BooblikChild {
  /** host:port of its Kafka listener. */
  bootstrap: string;
  stop(): Promise<void>;
}

/**
 * `extraArgs`: more broker flags (e.g. `--users-file <path>` for a broker whose Kafka port wants a
 * SASL login, bench/compat/franz-go.ts --scram). `logFile`: every byte the broker prints (stdout and
 * stderr) is appended there, e.g. its `closing the connection` lines (bench/compat/python.ts).
 * `dataDir`: the caller's data directory, kept at stop, for a restart on the same data
 * (bench/compat/apps.ts --restart-broker); by default a temporary one, removed at stop.
 */
export async function startBooblik(
  extraArgs: readonly string[] = [],
  options: { logFile?: string; dataDir?: string } = {},
): Promise<BooblikChild> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "booblik-compat-"));
  const child = Bun.spawn(
    [
      process.execPath,
      join(ROOT, "src", "main.ts"),
      "--data-dir",
      dataDir,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--kafka-port",
      "0",
      ...extraArgs,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const stop = async () => {
    child.kill("SIGTERM");
    await child.exited;
    if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
  };
  const log = (chunk: Uint8Array | string) => {
    if (options.logFile !== undefined) appendFileSync(options.logFile, chunk);
  };
  // The start-up line names the Kafka port; stderr is read too so that the pipe never fills.
  void (async () => {
    for await (const chunk of child.stderr) log(chunk);
  })();
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const timer = setTimeout(() => child.kill("SIGKILL"), BROKER_START_MS_MAX);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the broker exited before its Kafka listener started:\n${seen}`);
      log(value);
      seen += decoder.decode(value);
      const port = /Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(seen)?.[1];
      if (port !== undefined) {
        // Keep draining stdout so that the broker never blocks on a full pipe.
        void (async () => {
          for (;;) {
            const { value: more, done: ended } = await reader.read();
            if (ended) break;
            log(more);
          }
        })();
        return { bootstrap: `127.0.0.1:${port}`, stop };
      }
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
