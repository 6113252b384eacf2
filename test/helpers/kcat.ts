/**
 * kcat (Debian's, librdkafka 2.0.2) against a broker's Kafka port, for the tests that drive it:
 * its path (null where it is not installed: those tests skip, saying so), and one run of it with
 * its output. A run that outlives `timeoutMs` is killed, so a hung client fails its test instead
 * of the whole suite.
 */
import { type ProcessRun, runToEnd } from "./process.ts";

export const KCAT = Bun.which("kcat");

/** Runs `kcat -b 127.0.0.1:<port> <args>`, with `input` on its stdin when given. */
export async function kcat(
  port: number,
  args: string[],
  input?: string,
  timeoutMs = 30_000,
): Promise<ProcessRun> {
  if (KCAT === null) throw new Error("kcat is not installed (apt-get install -y kcat)");
  return runToEnd([KCAT, "-b", `127.0.0.1:${port}`, ...args], input, timeoutMs);
}
