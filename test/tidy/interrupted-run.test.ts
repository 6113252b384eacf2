/**
 * An interrupted `bun test` leaves no child process behind (test/preload.ts). A test file written to
 * a temporary directory (so that the ordinary run does not pick it up) starts a child, pauses it
 * with SIGSTOP, as test/server/connection-review.test.ts does to a broker, and waits; the run is
 * then stopped with SIGTERM or SIGINT. Before the preload killed the children, the paused one
 * outlived the run in state T, where only SIGKILL ends it.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
setDefaultTimeout(30_000);

const PAUSED_CHILD = `import { test } from "bun:test";
test("pauses a child and waits", async () => {
  const child = Bun.spawn(["sleep", "600"]);
  child.kill("SIGSTOP");
  console.log(\`child \${child.pid}\`);
  await new Promise(() => undefined);
}, 600_000);
`;

/** True while `pid` is a live process (a zombie waiting for its reaper is not). */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  test(`a bun test run stopped with ${signal} kills the children it started, a paused one included`, async () => {
    using dir = tempDir("interrupted-run");
    const file = dir.file("paused.test.ts");
    fs.writeFileSync(file, PAUSED_CHILD);
    // From the repository root, so that bunfig.toml's preload applies as in the real run.
    const run = Bun.spawn([process.execPath, "test", file], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    await using _run = killAtEnd(run);
    const lines = new LineReader(run.stdout);
    let pid: number | undefined;
    while (pid === undefined) {
      const line = await lines.nextLine();
      if (line === undefined) throw new Error(`the run ended before its child started: ${await run.exited}`);
      pid = Number(/^child (\d+)$/.exec(line)?.[1] ?? Number.NaN) || undefined;
    }
    const child = pid;
    try {
      expect(alive(child)).toBe(true);
      run.kill(signal);
      await run.exited;
      await waitUntil(() => !alive(child), `the paused child ${child} to be gone`);
    } finally {
      if (alive(child)) process.kill(child, "SIGKILL");
    }
  });
}
