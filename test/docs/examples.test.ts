/**
 * Every ```ts block of docs/client.md and README.md runs as a program against a real broker (the
 * examples import from "booblik", which resolves to this package), so the documentation cannot
 * drift from the code. Each block must exit 0.
 *
 * - README's examples are what a new user runs first, and runs again: each one runs twice against
 *   the same broker and directory (the second run failed with TOPIC_EXISTS and a stack trace).
 * - An example that keeps a consumer position must save it in batches: saved after every record,
 *   it capped whoever copied it at about 400 records/s. A preload counts PositionFile.save calls.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { startBroker } from "../helpers/broker-process.ts";
import { killAtEnd } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const ROOT = path.resolve(import.meta.dir, "../..");
/** One example's limit: well inside the test's, so a hanging example is killed and reported by name. */
const EXAMPLE_TIMEOUT_MS = 20_000;

function blocksOf(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), "utf8");
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

/** Counts PositionFile.save calls of an example and reports them on stderr when it exits. */
const COUNT_SAVES = `import { PositionFile } from "booblik";
const save = PositionFile.prototype.save;
let saves = 0;
PositionFile.prototype.save = function (offset) {
  saves++;
  return save.call(this, offset);
};
process.on("exit", () => console.error(\`position saves: \${saves}\`));
`;

describe.each([
  ["docs/client.md", 1],
  ["README.md", 2],
])("examples in %s", (file, runs) => {
  test(`every TypeScript example runs against a real broker and exits 0 (${runs === 1 ? "once" : "twice"})`, async () => {
    const blocks = blocksOf(file);
    expect(blocks.length).toBeGreaterThan(0);
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"));
    // Inside the repository, so that `import … from "booblik"` resolves to this package.
    const scratch = fs.mkdtempSync(path.join(ROOT, "test", "docs", ".run-"));
    const preload = path.join(scratch, "count-saves.ts");
    fs.writeFileSync(preload, COUNT_SAVES);
    try {
      for (const [index, block] of [...blocks.entries()].flatMap((entry) => Array(runs).fill(entry))) {
        const script = path.join(scratch, `example-${index}.ts`);
        fs.writeFileSync(script, block);
        const child = Bun.spawn([process.execPath, "--preload", preload, script], {
          cwd: ROOT,
          stdout: "pipe",
          stderr: "pipe",
          env: { ...process.env, BOOBLIK_PORT: String(broker.port), TMPDIR: dir.path },
        });
        await using _child = killAtEnd(child);
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          child.kill("SIGKILL");
        }, EXAMPLE_TIMEOUT_MS);
        const [stdout, stderr, exitCode] = await Promise.all([
          new Response(child.stdout).text(),
          new Response(child.stderr).text(),
          child.exited,
        ]).finally(() => clearTimeout(timer));
        if (timedOut)
          throw new Error(
            `${file} example ${index + 1} did not exit within ${EXAMPLE_TIMEOUT_MS} ms (killed):\n${block}\n${stdout}\n${stderr}`,
          );
        if (exitCode !== 0)
          throw new Error(
            `${file} example ${index + 1} failed (${exitCode}):\n${block}\n${stdout}\n${stderr}`,
          );
        expect(exitCode).toBe(0);
        if (block.includes("PositionFile")) {
          const records = stdout.split("\n").filter((line) => /^\d+ /.test(line)).length;
          const saves = Number(/position saves: (\d+)/.exec(stderr)?.[1]);
          expect(records).toBeGreaterThan(0);
          expect(saves).toBeGreaterThan(0); // it does keep its position…
          expect(saves * 100).toBeLessThanOrEqual(records); // …in batches, not after every record
        }
      }
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  });
});
