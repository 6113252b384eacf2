/**
 * `booblik-cli topics alter` and `topics add-partitions` as subprocesses against a broker process:
 * what they print and change, --json, usage errors (exit 2) read before connecting, and the
 * broker's refusals (exit 1) as one line without a stack trace.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { type CliRun, runCli } from "../helpers/cli-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

function expectOneLineError(run: CliRun, exitCode: number, text: string): void {
  expect(run.exitCode).toBe(exitCode);
  expect(run.stderr.trim().split("\n").length).toBe(1);
  expect(run.stderr).toContain(text);
  expect(run.stderr).not.toContain("    at ");
}

test("topics alter changes live settings; topics add-partitions raises the count", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  expect(
    (await runCli([...at, "topics", "create", "t", "--partitions", "2", "--retention-time", "7d"])).exitCode,
  ).toBe(0);
  // topics create takes --flush-interval too, as operations.md says (it was a usage error, exit 2).
  const interval = await runCli([
    ...at,
    "--json",
    "topics",
    "create",
    "ticking",
    "--durability",
    "interval",
    "--flush-interval",
    "2s",
  ]);
  expect(interval.stderr).toBe("");
  expect(interval.exitCode).toBe(0);
  const ticking = await runCli([...at, "--json", "topics", "describe", "ticking"]);
  expect(JSON.parse(ticking.stdout).config).toMatchObject({ durability: "interval", flushIntervalMs: 2000 });

  const altered = await runCli([
    ...at,
    "topics",
    "alter",
    "t",
    "--retention-size",
    "1MiB",
    "--retention-time",
    "none",
    "--durability",
    "append",
  ]);
  expect(altered.exitCode).toBe(0);
  expect(altered.stdout).toBe(
    "altered topic t\n  durability: append\n  retentionBytes: 1048576\n  retentionMs: none\n",
  );
  const json = await runCli([
    ...at,
    "--json",
    "topics",
    "alter",
    "t",
    "--timestamp-type",
    "LogAppendTime",
    "--cleanup-policy",
    "compact,delete",
  ]);
  expect(json.exitCode).toBe(0);
  expect(JSON.parse(json.stdout)).toMatchObject({
    topic: "t",
    config: {
      timestampType: "LogAppendTime",
      cleanupPolicy: "compact,delete",
      durability: "append",
      retentionBytes: 1_048_576,
      retentionMs: null,
    },
  });

  const added = await runCli([...at, "topics", "add-partitions", "t", "--partitions", "5"]);
  expect(added.exitCode).toBe(0);
  expect(added.stdout).toBe("topic t now has 5 partitions\n");
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    const topic = (await client.metadata(["t"])).topics[0]!;
    expect(topic.partitions.length).toBe(5);
    expect(topic.config).toMatchObject({
      durability: "append",
      retentionBytes: 1_048_576,
      retentionMs: null,
    });
  } finally {
    client.close();
  }

  // The broker's refusals: exit 1, one line.
  expectOneLineError(
    await runCli([...at, "topics", "add-partitions", "t", "--partitions", "3"]),
    1,
    'partitions can only increase: topic "t" has 5, got 3',
  );
  expectOneLineError(
    await runCli([...at, "topics", "alter", "t", "--max-record-size", "10"]),
    1,
    "maxRecordBytes can only increase",
  );
  expectOneLineError(
    await runCli([...at, "topics", "alter", "missing", "--durability", "force"]),
    1,
    "missing",
  );
});

test("usage errors of topics alter and add-partitions exit 2 without a broker", async () => {
  // Nothing listens here: each error must come from the command line, before connecting.
  const at = ["--broker", "127.0.0.1:1"];
  expectOneLineError(await runCli([...at, "topics", "alter", "t"]), 2, "nothing to change");
  expectOneLineError(
    await runCli([...at, "topics", "alter", "t", "--segment-size", "1MiB"]),
    2,
    "--write-mode and --segment-size cannot change on an existing topic",
  );
  expectOneLineError(
    await runCli([...at, "topics", "alter", "t", "--durability", "sometimes"]),
    2,
    '--durability must be one of append, force, interval, got "sometimes"',
  );
  expectOneLineError(
    await runCli([...at, "topics", "alter", "t", "--colour", "red"]),
    2,
    "unknown option --colour",
  );
  expectOneLineError(await runCli([...at, "topics", "add-partitions", "t"]), 2, "missing --partitions N");
  expectOneLineError(
    await runCli([...at, "topics", "add-partitions", "t", "--partitions", "0"]),
    2,
    "--partitions",
  );
  expectOneLineError(await runCli([...at, "topics", "alter"]), 2, "missing topic name");
});
