/**
 * Every ```ts block of docs/client.md and README.md runs as a program against a real broker (the
 * examples import from "booblik", which resolves to this package), so the documentation cannot
 * drift from the code. Each block must exit 0.
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

describe.each([["docs/client.md"], ["README.md"]])("examples in %s", (file) => {
  test("every TypeScript example runs against a real broker and exits 0", async () => {
    const blocks = blocksOf(file);
    expect(blocks.length).toBeGreaterThan(0);
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"));
    // Inside the repository, so that `import … from "booblik"` resolves to this package.
    const scratch = fs.mkdtempSync(path.join(ROOT, "test", "docs", ".run-"));
    try {
      for (const [index, block] of blocks.entries()) {
        const script = path.join(scratch, `example-${index}.ts`);
        fs.writeFileSync(script, block);
        const child = Bun.spawn([process.execPath, script], {
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
      }
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  });
});
