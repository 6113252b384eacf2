/**
 * The long harnesses refuse what they do not know (bench/lib/args.ts). Before, `bun run
 * torture --help` started the default 1,000 cycles in /tmp, and `--cycles ten` ran none and passed.
 * Each script runs as `bun run` would start it; none may start a cycle here.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "../..");
// Above the 10 s after which a harness that started its cycles is killed, so that it fails on its exit code.
setDefaultTimeout(60_000);
const SCRIPTS = {
  torture: ["test/torture/torture.ts"],
  "torture --power-loss": ["test/torture/torture.ts", "--power-loss"],
  "torture:power-loss": ["test/power-loss/power-loss.ts"],
  "torture:kafka": ["test/torture/kafka-torture.ts"],
} as const;

async function run(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([process.execPath, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  // A harness that ignores its arguments starts its cycles: stopped here, and the exit code says so.
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(timer));
  return { code, stdout, stderr };
}

for (const [name, script] of Object.entries(SCRIPTS)) {
  test(`${name}: --help prints the usage; an unknown option, a bad number and a missing value exit 2`, async () => {
    const help = await run([...script, "--help"]);
    expect([help.code, help.stdout.startsWith("usage: bun run torture")]).toEqual([0, true]);
    for (const [args, reason] of [
      [["--bogus"], "unknown option --bogus"],
      [["--cycles", "ten"], '--cycles must be a whole number of at least 1, got "ten"'],
      [["--cycles", "0"], '--cycles must be a whole number of at least 1, got "0"'],
      [["--seed"], "--seed needs a value"],
    ] as const) {
      const refused = await run([...script, ...args]);
      expect([refused.code, refused.stderr.split("\n")[0]]).toEqual([2, reason]);
    }
  });
}
