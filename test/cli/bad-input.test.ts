/**
 * Bad input to the two entry points (booblik-cli and the broker's src/main.ts):
 * - integers are read by one strict parser with explicit ranges: an offset past 2^53, a partition
 *   past 2^32, an empty value, or a port out of range is a usage error, never a wrapped number;
 * - a bad value given to the CLI exits 2 (usage) before anything connects;
 * - the broker reads every option before it opens the data directory, so a bad one leaves the
 *   directory exactly as it was (still cleanly shut down);
 * - `segment verify` of a path holding no segment is an error, not "no damage".
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { MAIN, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const CLI = path.resolve(import.meta.dir, "../../src/cli/main.ts");

interface Run {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function run(entry: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = Bun.spawn([process.execPath, entry, ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, BOOBLIK_BROKER: "", ...env },
  });
  // Every run here is expected to end by itself; one that starts serving instead (the bug these
  // tests guard against) is killed rather than left running past the test.
  const guard = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(guard);
  return { exitCode, stdout, stderr };
}

function expectOneLineError(result: Run, exitCode: number, text: string): void {
  expect(result.stderr).toContain(text);
  expect(result.exitCode).toBe(exitCode);
  expect(result.stderr.trim().split("\n").length).toBe(1);
}

describe("booblik-cli: command-line values", () => {
  // Port 1: nothing listens there. Every case below must fail before connecting (exit 2, not the
  // "connection refused" exit 1).
  const NOWHERE = "127.0.0.1:1";

  test.each([
    [["consume", "t", "--from", "18446744073709551616"], "--from must be at most 9007199254740991"],
    [["consume", "t", "--from", "9007199254740992"], "--from must be at most 9007199254740991"],
    [["consume", "t", "--partition", "4294967296"], "--partition must be at most 4294967295"],
    [["consume", "t", "--partition", "0x10"], "--partition must be an integer from 0 to 4294967295"],
    [["consume", "t", "--max="], '--max must be an integer ≥ 0, got ""'],
    [["consume", "t", "--max", "1e3"], '--max must be an integer ≥ 0, got "1e3"'],
    [["produce", "t", "--partition", "-1"], "--partition must be an integer from 0 to 4294967295"],
    [["topics", "create", "t", "--partitions", "0"], "--partitions must be an integer from 1 to 1024"],
    [["topics", "create", "t", "--segment-size", "lots"], "--segment-size: cannot read"],
    [["topics", "create", "t", "--retention-time", "soon"], "--retention-time: cannot read"],
    [["topics", "create", "t", "--max-record-size="], "--max-record-size: cannot read"],
    [["health", "--timeout", "soon"], "--timeout: cannot read"],
    [["health", "--timeout", "0"], "--timeout must be more than 0, got 0"],
    // Was exit 1: only the broker checked these two.
    [
      ["topics", "create", "t", "--durability", "sometimes"],
      "--durability must be one of append, force, interval",
    ],
    [["topics", "create", "t", "--write-mode", "quill"], "--write-mode must be one of mapped, file"],
    [["topics", "create", "t", "--flush-interval", "often"], "--flush-interval: cannot read"],
    // Was exit 1 (the broker's refusal), where operations.md promises exit 2 for a value that does
    // not parse.
    [
      ["acl", "add", "--principal", "carol", "--operation", "read", "--topic", "t"],
      'principal "carol" is not of the form User:<name> (User:* for everyone)',
    ],
  ])("%p is a usage error", async (args, message) => {
    expectOneLineError(await run(CLI, ["--broker", NOWHERE, ...args]), 2, message);
  });

  test.each([
    ["127.0.0.1:0", "--broker port must be an integer from 1 to 65535"],
    ["127.0.0.1:65536", "--broker port must be at most 65535"],
    ["127.0.0.1:", "--broker port must be an integer from 1 to 65535"],
    [":7979", "--broker must be host:port"],
    ["localhost", "--broker must be host:port"],
    ["", "--broker must be host:port"],
  ])("--broker %p is a usage error", async (broker, message) => {
    expectOneLineError(await run(CLI, ["health", `--broker=${broker}`]), 2, message);
  });

  test("the largest offset is read exactly, and a valid --broker with brackets connects", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("t");
      await new Producer(client).send("t", ["a", "b", "c"]);
    } finally {
      client.close();
    }
    // 2^53 - 1 is a valid offset, beyond the log: the broker says so (exit 1), nothing loops.
    const far = await run(CLI, [
      "consume",
      "t",
      "--broker",
      `[127.0.0.1]:${broker.port}`,
      "--from",
      "9007199254740991",
    ]);
    expectOneLineError(far, 1, "offset 9007199254740991 is out of range");
    const some = await run(CLI, ["consume", "t", "--broker", `127.0.0.1:${broker.port}`, "--from", " 1 "]);
    expect(some.exitCode).toBe(0);
    expect(some.stdout).toBe("b\nc\n");
  });
});

describe("booblik-cli segment verify", () => {
  test("a path holding no segment is an error (exit 1), not a clean bill of health", async () => {
    using dir = tempDir();
    expectOneLineError(await run(CLI, ["segment", "verify", dir.path]), 1, "nothing to verify");
    // A partition directory without segment files, and a data directory holding only that.
    fs.mkdirSync(path.join(dir.path, "t-0"));
    fs.writeFileSync(path.join(dir.path, "t-0", "checkpoint.json"), "{}");
    expectOneLineError(await run(CLI, ["segment", "verify", dir.path, "--json"]), 1, "nothing to verify");
    expectOneLineError(
      await run(CLI, ["segment", "verify", path.join(dir.path, "t-0")]),
      1,
      "nothing to verify",
    );
  });
});

describe("broker options", () => {
  test("an empty or out-of-range number is refused; nothing starts", async () => {
    using dir = tempDir();
    const data = path.join(dir.path, "data");
    const cases: [string[], Record<string, string>, string][] = [
      [[], { BOOBLIK_PORT: "" }, "--port (BOOBLIK_PORT) must not be empty"],
      [["--port="], {}, "--port (BOOBLIK_PORT) must not be empty"],
      [["--port", "65536"], {}, "port must be at most 65535"],
      [["--port", "0x10"], {}, 'port must be an integer from 0 to 65535, got "0x10"'],
      [["--metrics-port", "1e3"], {}, 'metrics port must be an integer from 0 to 65535, got "1e3"'],
      [["--max-connections", "1.5"], {}, 'max connections must be an integer ≥ 1, got "1.5"'],
      [
        ["--group-initial-rebalance-delay", "6m"],
        {},
        '--group-initial-rebalance-delay must be at most 5m, got "6m"',
      ],
      [[], { BOOBLIK_GROUP_INITIAL_REBALANCE_DELAY: "soon" }, "group initial rebalance delay"],
    ];
    for (const [args, env, message] of cases) {
      const result = await run(MAIN, ["--data-dir", data, "--host", "127.0.0.1", ...args], env);
      expectOneLineError(result, 1, message);
      expect(fs.existsSync(data)).toBe(false); // the data directory was never opened
    }
  });

  test("a bad --idle-timeout or --max-frame-size leaves the data directory cleanly shut down", async () => {
    using dir = tempDir();
    {
      await using broker = await startBroker(dir.path);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      try {
        await client.createTopic("kept");
        await new Producer(client).send("kept", ["x", "y"]);
      } finally {
        client.close();
      }
      expect(await broker.stop("SIGTERM")).toBe(0);
    }
    for (const bad of [
      ["--idle-timeout", "soon"],
      ["--max-frame-size", "huge"],
    ]) {
      const refused = await run(MAIN, ["--data-dir", dir.path, "--host", "127.0.0.1", "--port", "0", ...bad]);
      expectOneLineError(refused, 1, "cannot read");
    }
    // Had either opened the directory, it would have left it without the clean-shutdown mark.
    await using again = await startBroker(dir.path);
    expect(again.startLine).toContain("clean shutdown, nothing scanned");
  });
});
