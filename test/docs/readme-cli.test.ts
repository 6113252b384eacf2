/**
 * The README's shell walkthrough of booblik-cli (the ```sh block of `bunx booblik-cli` commands
 * under "Using it") runs twice against one fresh broker and data directory, every command exiting 0
 * both times: a new user runs it, then runs it again (it failed on the second run with "topic
 * "orders" already exists" and "partitions can only increase", and `groups describe billing` failed
 * on the first run, before any offset was committed). Each line runs in bash as written, with
 * `bunx booblik-cli` read as this checkout's CLI (`bun src/cli/main.ts`, what bunx runs inside the
 * clone) and the broker from BOOBLIK_BROKER; a `--follow` line runs into `head -1` while the test
 * produces one more record to its partition (the "more" it waits for; the walkthrough's keyless
 * records may all sit on another partition), so it ends once it printed a record.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { CLI } from "../helpers/cli-process.ts";
import { killAtEnd } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(120_000);

const text = new TextEncoder();
const ROOT = path.resolve(import.meta.dir, "../..");
/** One command's limit: a command that hangs is killed and reported by its line. */
const COMMAND_TIMEOUT_MS = 20_000;

/** The lines of the README's ```sh block that holds the `bunx booblik-cli topics` walkthrough. */
function walkthrough(): string[] {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  const block = blocks.find((text) => text.includes("bunx booblik-cli topics create"));
  if (block === undefined) throw new Error("README.md has no sh block with `bunx booblik-cli topics create`");
  return block.split("\n").filter((line) => line.trim() !== "" && !line.trim().startsWith("#"));
}

test("README's booblik-cli walkthrough runs twice on a fresh broker, every command exiting 0", async () => {
  const lines = walkthrough();
  expect(lines.length).toBeGreaterThan(10);
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const cli = `'${process.execPath}' '${CLI}'`;
  for (const run of [1, 2]) {
    for (const line of lines) {
      let command = line.replaceAll("bunx booblik-cli", cli);
      if (line.includes("--follow")) command = `${command.replace(/\s+#.*$/, "")} | head -1`;
      // In a session of its own (setsid execs in place: the child's pid leads the group), so that a
      // hanging pipeline is killed whole, not only bash.
      const child = Bun.spawn(["setsid", "bash", "-o", "pipefail", "-c", command], {
        cwd: dir.path,
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, BOOBLIK_BROKER: `127.0.0.1:${broker.port}` },
      });
      await using _child = killAtEnd(child);
      if (line.includes("--follow")) {
        const partition = Number(/--partition (\d+)/.exec(line)?.[1] ?? 0);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
        try {
          await client.produce(
            "orders",
            partition,
            encodeBatch([{ key: null, value: text.encode("more"), timestamp: Date.now() }]),
          );
        } finally {
          client.close();
        }
      }
      const killGroup = () => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      };
      const timer = setTimeout(killGroup, COMMAND_TIMEOUT_MS);
      const [stdout, stderr, exitCode] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]).finally(() => {
        clearTimeout(timer);
        killGroup();
      });
      if (exitCode !== 0)
        throw new Error(`run ${run}: \`${line}\` exited ${exitCode}:\n${stdout}\n${stderr}`);
      expect(exitCode).toBe(0);
    }
  }
});
