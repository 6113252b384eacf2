/**
 * kcat (Debian's, librdkafka 2.0.2) against a broker's Kafka port, for the tests that drive it:
 * its path (null where it is not installed: those tests skip, saying so), and one run of it with
 * its output. A run that outlives `timeoutMs` is killed, so a hung client fails its test instead
 * of the whole suite.
 */
export const KCAT = Bun.which("kcat");

export interface KcatRun {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Runs `kcat -b 127.0.0.1:<port> <args>`, with `input` on its stdin when given. */
export async function kcat(
  port: number,
  args: string[],
  input?: string,
  timeoutMs = 30_000,
): Promise<KcatRun> {
  if (KCAT === null) throw new Error("kcat is not installed (apt-get install -y kcat)");
  const child = Bun.spawn([KCAT, "-b", `127.0.0.1:${port}`, ...args], {
    stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(timer));
  return { stdout, stderr, exitCode };
}
