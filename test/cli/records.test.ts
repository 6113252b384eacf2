/**
 * Kafka's record through booblik-cli, as a subprocess against a real broker: keys, headers,
 * timestamps and null values go in with `produce` and come back out of `consume` (JSON in base64,
 * kcat's format string) and `segment dump`; keyed lines land on Kafka's partition for their key;
 * `consume --from-time` and `offsets --at` answer by the produced timestamps; a LogAppendTime topic
 * keeps the broker's time, not the producer's.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { partitionForKey } from "../../src/record/partitioner.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

interface JsonRecord {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: { key: string; value: string | null }[];
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

function jsonLines(stdout: string): JsonRecord[] {
  return stdout
    .trim()
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as JsonRecord);
}

describe("produce → consume keeps Kafka's record", () => {
  test("keys (--key-separator), headers, a timestamp, empty and null values and keys", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    expect((await runCli([...at, "topics", "create", "kv"])).exitCode).toBe(0);
    const produced = await runCli(
      [
        ...at,
        "produce",
        "kv",
        "--key-separator",
        "::",
        "--header",
        "trace=abc-1",
        "--header",
        "empty=",
        "--header",
        "trace=again",
        "--timestamp",
        "2023-11-14T22:13:20.123Z",
      ],
      { stdin: "k1::v1\nk2::\n::v3\nk4::v::4\nkey é::välue ✓\n" },
    );
    expect(produced.stderr).toBe("");
    expect(produced.stdout).toBe("produced 5 records to kv: partition 0 offsets 0..4 (5 records)\n");
    const nulls = await runCli(
      [...at, "produce", "kv", "--key-separator", ":", "--empty-as-null", "--timestamp", "1700000000000"],
      { stdin: "k5:\n:v6\n:\n" },
    );
    expect(nulls.stdout).toBe("produced 3 records to kv: partition 0 offsets 5..7 (3 records)\n");
    const fixed = await runCli([...at, "produce", "kv", "--key", "same", "--timestamp", "0"], {
      stdin: "a\n\n",
    });
    expect(fixed.stdout).toBe("produced 2 records to kv: partition 0 offsets 8..9 (2 records)\n");

    const consumed = await runCli([...at, "consume", "kv", "--format", "json-base64"]);
    expect(consumed.exitCode).toBe(0);
    const headers = [
      { key: "trace", value: b64("abc-1") },
      { key: "empty", value: "" },
      { key: "trace", value: b64("again") },
    ];
    const t = 1_700_000_000_123;
    const record = (
      offset: number,
      timestamp: number,
      key: string | null,
      value: string | null,
      h = headers,
    ) => ({
      topic: "kv",
      partition: 0,
      offset,
      timestamp,
      key: key === null ? null : b64(key),
      value: value === null ? null : b64(value),
      headers: h,
    });
    expect(jsonLines(consumed.stdout)).toEqual([
      record(0, t, "k1", "v1"),
      record(1, t, "k2", ""),
      record(2, t, "", "v3"),
      record(3, t, "k4", "v::4"), // split at the first separator only
      record(4, t, "key é", "välue ✓"),
      record(5, 1_700_000_000_000, "k5", null, []),
      record(6, 1_700_000_000_000, null, "v6", []),
      record(7, 1_700_000_000_000, null, null, []),
      record(8, 0, "same", "a", []),
      record(9, 0, "same", "", []),
    ]);

    // kcat's tokens: key, its length (−1 for null), value, its length, timestamp, headers.
    const kcat = await runCli([...at, "consume", "kv", "--format", "%o|%k|%K|%s|%S|%T|%h|%I\\n"]);
    expect(kcat.stdout.split("\n").slice(0, 8)).toEqual([
      "0|k1|2|v1|2|1700000000123|trace=abc-1,empty=,trace=again|2023-11-14T22:13:20.123Z",
      "1|k2|2||0|1700000000123|trace=abc-1,empty=,trace=again|2023-11-14T22:13:20.123Z",
      "2||0|v3|2|1700000000123|trace=abc-1,empty=,trace=again|2023-11-14T22:13:20.123Z",
      "3|k4|2|v::4|4|1700000000123|trace=abc-1,empty=,trace=again|2023-11-14T22:13:20.123Z",
      "4|key é|6|välue ✓|10|1700000000123|trace=abc-1,empty=,trace=again|2023-11-14T22:13:20.123Z",
      "5|k5|2||-1|1700000000000||2023-11-14T22:13:20.000Z",
      "6||-1|v6|2|1700000000000||2023-11-14T22:13:20.000Z",
      "7||-1||-1|1700000000000||2023-11-14T22:13:20.000Z",
    ]);
    // JSON as text shows null as null, and keys as text.
    const text = jsonLines(
      (await runCli([...at, "consume", "kv", "--format", "json", "--from", "5", "--max", "3"])).stdout,
    );
    expect(text.map((r) => [r.key, r.value])).toEqual([
      ["k5", null],
      [null, "v6"],
      [null, null],
    ]);
    expect(text[0]!.headers).toEqual([]);

    // segment dump shows the same records, with their batches.
    const segment = path.join(dir.path, "kv-0", "00000000000000000000.log");
    const dump = await runCli(["segment", "dump", segment]);
    expect(dump.stdout).toMatch(
      /^batch at byte 32: offsets 0\.\.4 \(5 records\), \d+ bytes, codec none, CreateTime 2023-11-14T22:13:20\.123Z, batch CRC ok$/m,
    );
    expect(dump.stdout).toContain(
      '  0       2023-11-14T22:13:20.123Z  key "k1"  value "v1"  headers trace="abc-1",empty="",trace="again"\n',
    );
    expect(dump.stdout).toContain("  7       2023-11-14T22:13:20.000Z  key null  value null\n");
    expect(dump.stdout).toContain("end of log: 3 batches, 10 records");
    const dumped = JSON.parse((await runCli(["segment", "dump", segment, "--json"])).stdout);
    expect(dumped.batches.map((b: { recordCount: number }) => b.recordCount)).toEqual([5, 3, 2]);
    expect(dumped.batches[0].records[0]).toEqual({
      offset: 0,
      timestamp: t,
      key: "k1",
      value: "v1",
      headers: [
        { key: "trace", value: "abc-1" },
        { key: "empty", value: "" },
        { key: "trace", value: "again" },
      ],
    });
  });

  test("a keyed line goes to Kafka's partition for its key, and says so per partition", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    await runCli([...at, "topics", "create", "keyed", "--partitions", "5"]);
    const keys = Array.from({ length: 40 }, (_, i) => `customer-${i % 13}`);
    const produced = await runCli([...at, "produce", "keyed", "--key-separator", "\t", "--json"], {
      stdin: keys.map((key, i) => `${key}\tevent ${i}`).join("\n"),
    });
    expect(JSON.parse(produced.stdout).produced).toBe(40);
    const consumed = jsonLines((await runCli([...at, "consume", "keyed", "--format", "json"])).stdout);
    expect(consumed.length).toBe(40);
    for (const record of consumed)
      expect([record.key, record.partition]).toEqual([
        record.key,
        partitionForKey(new TextEncoder().encode(record.key!), 5),
      ]);
    // Within a partition, a key's records keep the order they were produced in.
    for (let customer = 0; customer < 13; customer++) {
      const events = consumed
        .filter((r) => r.key === `customer-${customer}`)
        .map((r) => Number(r.value!.split(" ")[1]));
      expect(events).toEqual([...events].sort((a, b) => a - b));
    }
    // --partition wins over the key, and the key is still stored.
    await runCli([...at, "produce", "keyed", "--partition", "4", "--key", "customer-0"], {
      stdin: "pinned\n",
    });
    const pinned = jsonLines(
      (await runCli([...at, "consume", "keyed", "--partition", "4", "--format", "json", "--from", "latest"]))
        .stdout,
    );
    expect(pinned).toEqual([]);
    const last = jsonLines(
      (await runCli([...at, "consume", "keyed", "--partition", "4", "--format", "json"])).stdout,
    ).at(-1)!;
    expect([last.key, last.value]).toEqual(["customer-0", "pinned"]);
  });
});

describe("time: --from-time, offsets --at, LogAppendTime", () => {
  test("consume --from-time and offsets --at answer by the produced timestamps", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    await runCli([...at, "topics", "create", "timed", "--partitions", "2"]);
    // Three runs with their own times, to both partitions: t1 < t2 < t3 (2024-05-01 10:00, 11:00, 12:00 UTC).
    const times = ["2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z", "2024-05-01T12:00:00Z"];
    for (const [i, time] of times.entries())
      for (const partition of [0, 1])
        await runCli([...at, "produce", "timed", "--partition", String(partition), "--timestamp", time], {
          stdin: `t${i + 1}-a\nt${i + 1}-b\n`,
        });
    const values = (stdout: string) => jsonLines(stdout).map((r) => `${r.partition}:${r.value}`);
    const from11 = await runCli([
      ...at,
      "consume",
      "timed",
      "--from-time",
      "2024-05-01T11:00:00Z",
      "--format",
      "json",
    ]);
    expect(values(from11.stdout)).toEqual([
      "0:t2-a",
      "0:t2-b",
      "0:t3-a",
      "0:t3-b",
      "1:t2-a",
      "1:t2-b",
      "1:t3-a",
      "1:t3-b",
    ]);
    // A time between two runs starts at the next; an offset, in ms or with a zone offset, the same.
    const between = await runCli([
      ...at,
      "consume",
      "timed",
      "--partition",
      "1",
      "--from-time",
      String(Date.parse("2024-05-01T11:30:00Z")),
      "--format",
      "%s\\n",
    ]);
    expect(between.stdout).toBe("t3-a\nt3-b\n");
    const zoned = await runCli([
      ...at,
      "consume",
      "timed",
      "--partition",
      "0",
      "--from-time",
      "2024-05-01T13:00:00+02:00",
    ]);
    expect(zoned.stdout).toBe("t2-a\nt2-b\nt3-a\nt3-b\n");
    // After every record: nothing, exit 0.
    const after = await runCli([...at, "consume", "timed", "--from-time", "2024-05-02"]);
    expect(after).toMatchObject({ exitCode: 0, stdout: "" });

    const offsets = await runCli([...at, "offsets", "timed", "--at", "2024-05-01T11:00:00Z"]);
    expect(offsets.exitCode).toBe(0);
    expect(offsets.stdout).toContain(
      `first offset with a timestamp at or after 2024-05-01T11:00:00.000Z (${Date.parse("2024-05-01T11:00:00Z")})`,
    );
    expect(offsets.stdout).toMatch(/^0\s+2\s+2024-05-01T11:00:00\.000Z\s+6$/m);
    expect(offsets.stdout).toMatch(/^1\s+2\s+2024-05-01T11:00:00\.000Z\s+6$/m);
    const json = JSON.parse(
      (await runCli([...at, "offsets", "timed", "--at", "2024-05-01T11:00:00.001Z", "--json"])).stdout,
    );
    expect(json).toEqual([
      { partition: 0, offset: 4, timestamp: Date.parse("2024-05-01T12:00:00Z"), nextOffset: 6 },
      { partition: 1, offset: 4, timestamp: Date.parse("2024-05-01T12:00:00Z"), nextOffset: 6 },
    ]);
    const none = await runCli([...at, "offsets", "timed", "--at", "now"]);
    expect(none.stdout).toMatch(/^0\s+none\s+-\s+6$/m);
    expect(
      JSON.parse((await runCli([...at, "offsets", "timed", "--at", "now", "--json"])).stdout)[0],
    ).toEqual({
      partition: 0,
      offset: -1,
      timestamp: -1,
      nextOffset: 6,
    });
  });

  test("--from-time -1h reads what is newer than an hour", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    await runCli([...at, "topics", "create", "recent"]);
    await runCli([...at, "produce", "recent", "--timestamp", String(Date.now() - 2 * 3_600_000)], {
      stdin: "old\n",
    });
    await runCli([...at, "produce", "recent"], { stdin: "new\n" });
    expect((await runCli([...at, "consume", "recent", "--from-time", "-1h"])).stdout).toBe("new\n");
    expect((await runCli([...at, "consume", "recent", "--from-time", "-3h"])).stdout).toBe("old\nnew\n");
  });

  test("a LogAppendTime topic stamps the broker's time, whatever --timestamp says", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const created = await runCli([...at, "topics", "create", "stamped", "--timestamp-type", "LogAppendTime"]);
    expect(created.exitCode).toBe(0);
    expect((await runCli([...at, "topics", "describe", "stamped"])).stdout).toContain(
      "timestampType: LogAppendTime",
    );
    expect((await runCli([...at, "topics", "list"])).stdout).toMatch(/stamped\s+1\s+\S+\s+LogAppendTime\s+0/);
    const before = Date.now();
    await runCli([...at, "produce", "stamped", "--timestamp", "1000"], { stdin: "x\ny\n" });
    const after = Date.now();
    const records = jsonLines((await runCli([...at, "consume", "stamped", "--format", "json"])).stdout);
    expect(records.length).toBe(2);
    for (const record of records) {
      expect(record.timestamp).toBeGreaterThanOrEqual(before);
      expect(record.timestamp).toBeLessThanOrEqual(after);
    }
    const segment = path.join(dir.path, "stamped-0", "00000000000000000000.log");
    expect(fs.existsSync(segment)).toBe(true);
    expect((await runCli(["segment", "dump", segment])).stdout).toMatch(
      /^batch at byte 32: offsets 0\.\.1 \(2 records\), \d+ bytes, codec none, LogAppendTime \S+Z, batch CRC ok$/m,
    );
  });
});
