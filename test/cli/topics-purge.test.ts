/**
 * `booblik-cli topics purge` as a subprocess against a broker process: by offset on one partition,
 * by time on every partition (records older than T), `end`, a duration before now (`-1h`), --json, and the refusals: a usage error
 * (exit 2) read before connecting, a point beyond the end (exit 1, one line, no stack trace).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

test("topics purge: by offset, by time on every partition, to the end; refusals", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  expect(
    (await runCli([...at, "topics", "create", "t", "--partitions", "2", "--segment-size", "1KiB"])).exitCode,
  ).toBe(0);
  // 20 records per partition, one a batch, timestamps 2024-01-01T00:00:00Z + i seconds.
  const base = Date.parse("2024-01-01T00:00:00Z");
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    for (const partition of [0, 1])
      for (let i = 0; i < 20; i++)
        await client.produce(
          "t",
          partition,
          encodeBatch([
            { key: null, value: new TextEncoder().encode(`${i}`.padEnd(60)), timestamp: base + i * 1000 },
          ]),
        );

    const one = await runCli([...at, "topics", "purge", "t", "--before", "7", "--partition", "1"]);
    expect(one.stderr).toBe("");
    expect(one.exitCode).toBe(0);
    expect(one.stdout).toContain("purged topic t\n");
    expect(one.stdout.split("\n")[3]!.trim().split(/\s+/)).toEqual(["1", "7", "7"]);
    expect(await client.listOffsets("t", 0)).toEqual({ logStartOffset: 0, nextOffset: 20 });
    expect(await client.listOffsets("t", 1)).toEqual({ logStartOffset: 7, nextOffset: 20 });

    // Records older than 00:00:12Z on every partition: offset 12 on both.
    const byTime = await runCli([
      ...at,
      "--json",
      "topics",
      "purge",
      "t",
      "--before",
      "2024-01-01T00:00:12Z",
    ]);
    expect(byTime.exitCode).toBe(0);
    expect(JSON.parse(byTime.stdout)).toEqual({
      topic: "t",
      partitions: [
        { partition: 0, before: 12, logStartOffset: 12 },
        { partition: 1, before: 12, logStartOffset: 12 },
      ],
    });
    // The consumer reading from the earliest offset now starts at 12.
    const consumed = await runCli([
      ...at,
      "consume",
      "t",
      "--partition",
      "0",
      "--from",
      "earliest",
      "--max",
      "1",
    ]);
    expect(consumed.stdout.trim()).toBe("12");

    // Beyond the end: refused by the broker, nothing moved.
    const beyond = await runCli([...at, "topics", "purge", "t", "--before", "21"]);
    expect(beyond.exitCode).toBe(1);
    expect(beyond.stderr.trim().split("\n")).toEqual([
      "booblik-cli: cannot purge t/0: offset 21 is out of range: the log holds [12, 20)",
    ]);
    expect(beyond.stderr).not.toContain("    at ");
    expect(await client.listOffsets("t", 0)).toEqual({ logStartOffset: 12, nextOffset: 20 });

    const all = await runCli([...at, "topics", "purge", "t", "--before", "end", "--partition", "0"]);
    expect(all.exitCode).toBe(0);
    expect(await client.listOffsets("t", 0)).toEqual({ logStartOffset: 20, nextOffset: 20 });
    // A duration before now: every record (from 2024) is older than an hour ago, so all go.
    const hourAgo = await runCli([...at, "topics", "purge", "t", "--before", "-1h", "--partition", "1"]);
    expect(hourAgo.exitCode).toBe(0);
    expect(await client.listOffsets("t", 1)).toEqual({ logStartOffset: 20, nextOffset: 20 });

    // Usage errors, before connecting.
    const missing = await runCli(["--broker", "127.0.0.1:1", "topics", "purge", "t"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("missing --before");
    const bad = await runCli(["--broker", "127.0.0.1:1", "topics", "purge", "t", "--before", "yesterday"]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain("--before");
  } finally {
    client.close();
  }
});
