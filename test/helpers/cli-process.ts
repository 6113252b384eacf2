/**
 * booblik-cli as a subprocess (`bun src/cli/main.ts`), for tests of what an operator sees: stdout as
 * bytes (raw output must be compared byte for byte), stderr, exit code, and the child's peak memory.
 */
import path from "node:path";

export const CLI = path.resolve(import.meta.dir, "../../src/cli/main.ts");

export interface CliRun {
  exitCode: number;
  stdoutBytes: Uint8Array;
  stdout: string;
  stderr: string;
  /** Peak resident memory of the child, in bytes (getrusage's ru_maxrss: the kernel's VmHWM). */
  peakRssBytes: number;
}

export async function runCli(
  args: string[],
  options: { stdin?: Uint8Array | string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliRun> {
  const child = Bun.spawn([process.execPath, CLI, ...args], {
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, BOOBLIK_BROKER: "", ...options.env },
  });
  // Every run here ends by itself; one that hangs (the bug some tests guard against) is killed.
  const guard = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  const [stdoutBytes, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).bytes(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(guard));
  return {
    exitCode,
    stdoutBytes,
    stdout: new TextDecoder().decode(stdoutBytes),
    stderr,
    peakRssBytes: child.resourceUsage()?.maxRSS ?? 0,
  };
}

/**
 * Runs `bun src/cli/main.ts <args> | <reader>` through bash and returns what the pipeline printed
 * and the CLI's own exit status (PIPESTATUS[0], on the last stderr line as `cli-exit=N`).
 */
export async function runCliPiped(
  args: string[],
  reader: string,
  timeoutMs = 30_000,
): Promise<{ stdout: string; stderr: string; cliExit: number | undefined; elapsedMs: number }> {
  const quoted = [process.execPath, CLI, ...args]
    .map((word) => `'${word.replaceAll("'", "'\\''")}'`)
    .join(" ");
  const startMs = performance.now();
  // In a session of its own (setsid execs in place: the child's pid leads the group), so that the
  // guard kills the whole pipeline, not only bash: a CLI that never exits must not outlive the test.
  const child = Bun.spawn(
    ["setsid", "bash", "-c", `${quoted} | ${reader}; echo "cli-exit=\${PIPESTATUS[0]}" >&2`],
    {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, BOOBLIK_BROKER: "" },
    },
  );
  const guard = setTimeout(() => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }, timeoutMs);
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(guard));
  const status = /cli-exit=(\d+)\s*$/.exec(stderr);
  return {
    stdout,
    stderr: stderr.replace(/cli-exit=\d+\s*$/, ""),
    cliExit: status === null ? undefined : Number(status[1]),
    elapsedMs: performance.now() - startMs,
  };
}
