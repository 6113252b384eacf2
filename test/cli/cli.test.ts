/**
 * booblik-cli run as a subprocess through `bunx booblik-cli` (the node_modules/.bin link that
 * `bun install` makes, offline), for every command: output, --json, exit codes, one-line errors
 * without stack traces.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { valuesOfEntries } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const ROOT = path.resolve(import.meta.dir, "../..");

interface Run {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], options: { broker?: number; stdin?: string } = {}): Promise<Run> {
  const child = Bun.spawn(
    [
      "bunx",
      "booblik-cli",
      ...(options.broker === undefined ? [] : ["--broker", `127.0.0.1:${options.broker}`]),
      ...args,
    ],
    {
      cwd: ROOT,
      stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, BOOBLIK_BROKER: "" },
    },
  );
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, stdout, stderr };
}

function expectOneLineError(run: Run, exitCode: number, text: string): void {
  expect(run.exitCode).toBe(exitCode);
  expect(run.stderr.trim().split("\n").length).toBe(1);
  expect(run.stderr).toContain(text);
  expect(run.stderr).not.toContain("    at ");
}

describe("booblik-cli against a broker", () => {
  test("health, topics, produce, consume, offsets", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const port = broker.port;
    const health = await cli(["health"], { broker: port });
    expect(health.exitCode).toBe(0);
    expect(health.stdout).toContain("ok: booblik 0.1.0");

    const created = await cli(
      [
        "topics",
        "create",
        "events",
        "--partitions",
        "2",
        "--segment-size",
        "64KiB",
        "--durability",
        "append",
      ],
      { broker: port },
    );
    expect(created).toMatchObject({ exitCode: 0 });
    expect(created.stdout).toContain("created topic events");
    expectOneLineError(
      await cli(["topics", "create", "events"], { broker: port }),
      1,
      'topic "events" already exists',
    );

    const list = await cli(["topics", "list", "--json"], { broker: port });
    const topics = JSON.parse(list.stdout) as {
      name: string;
      partitions: unknown[];
      config: { segmentBytes: number };
    }[];
    expect(topics.map((t) => t.name)).toEqual(["events"]);
    expect(topics[0]!.partitions.length).toBe(2);
    expect(topics[0]!.config.segmentBytes).toBe(65536);
    expect((await cli(["topics", "list"], { broker: port })).stdout).toMatch(
      /events\s+2\s+append\s+CreateTime\s+0/,
    );

    const produced = await cli(["produce", "events", "--partition", "1"], {
      broker: port,
      stdin: "first\nsecond\n\nthird",
    });
    expect(produced.exitCode).toBe(0);
    // An empty line is a record with an empty value (format 2 has no end-of-log marker to fear).
    expect(produced.stdout).toContain("produced 4 records to events: partition 1 offsets 0..3 (4 records)");
    const file = dir.file("lines.txt");
    fs.writeFileSync(file, Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n"));
    const fromFile = await cli(
      ["produce", "events", "--partition", "1", "--file", file, "--json", "--progress"],
      { broker: port },
    );
    expect(JSON.parse(fromFile.stdout)).toMatchObject({
      produced: 5000,
      partitions: [{ partition: 1, records: 5000, firstOffset: 4, lastOffset: 5003 }],
    });
    expect(fromFile.stderr).toContain("producing to events [");
    const keyed = await cli(["produce", "events", "--key", "k1"], { broker: port, stdin: "x\ny\n" });
    expect(keyed.exitCode).toBe(0);

    const raw = await cli(["consume", "events", "--partition", "1", "--max", "4"], { broker: port });
    expect(raw).toMatchObject({ exitCode: 0, stdout: "first\nsecond\n\nthird\n" });
    const json = await cli(
      ["consume", "events", "--partition", "1", "--from", "5002", "--format", "json", "--max", "2"],
      {
        broker: port,
      },
    );
    expect(
      json.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line)),
    ).toEqual([
      {
        topic: "events",
        partition: 1,
        offset: 5002,
        timestamp: expect.any(Number),
        key: null,
        value: "line 4998",
        headers: [],
      },
      {
        topic: "events",
        partition: 1,
        offset: 5003,
        timestamp: expect.any(Number),
        key: null,
        value: "line 4999",
        headers: [],
      },
    ]);
    expect(
      (await cli(["consume", "events", "--partition", "1", "--from", "latest"], { broker: port })).stdout,
    ).toBe("");

    const offsets = JSON.parse((await cli(["offsets", "events", "--json"], { broker: port })).stdout);
    expect(offsets).toEqual([
      { partition: 0, logStartOffset: 0, nextOffset: expect.any(Number) },
      { partition: 1, logStartOffset: 0, nextOffset: expect.any(Number) },
    ]);
    expect(offsets[0].nextOffset + offsets[1].nextOffset).toBe(5006);

    const described = await cli(["topics", "describe", "events"], { broker: port });
    expect(described.stdout).toContain("durability: append");
    expect(described.stdout).toContain("timestampType: CreateTime");
    expect(described.stdout).toMatch(/1\s+0\s+\d+\s+\d+/);

    expect((await cli(["topics", "delete", "events"], { broker: port })).stdout).toContain(
      "deleted topic events",
    );
    expectOneLineError(
      await cli(["topics", "describe", "events"], { broker: port }),
      1,
      'unknown topic "events"',
    );
  });

  test("consume --follow prints records as they are produced", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    await cli(["topics", "create", "live"], { broker: broker.port });
    const follower = Bun.spawn(
      ["bunx", "booblik-cli", "--broker", `127.0.0.1:${broker.port}`, "consume", "live", "--follow"],
      {
        cwd: ROOT,
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    // SIGKILLed and waited for if the test fails before it stops the follower itself.
    await using _follower = killAtEnd(follower);
    const lines = new LineReader(follower.stdout);
    await cli(["produce", "live"], { broker: broker.port, stdin: "hello\n" });
    expect(await lines.nextLine()).toBe("hello");
    await cli(["produce", "live"], { broker: broker.port, stdin: "again\n" });
    expect(await lines.nextLine()).toBe("again");
    follower.kill();
    await follower.exited;
  });

  test("failures: broker down, bad arguments, unknown commands", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const port = broker.port;
    await broker.stop();
    expectOneLineError(await cli(["health", "--timeout", "1s"], { broker: port }), 1, "connection refused");
    expectOneLineError(await cli(["frobnicate"]), 2, "unknown command frobnicate");
    expectOneLineError(await cli(["topics", "create"]), 2, "missing topic name");
    expectOneLineError(
      await cli(["consume", "t", "--from", "soon"], { broker: port }),
      2,
      "--from must be earliest, latest or an offset",
    );
    expectOneLineError(
      await cli(["produce", "t", "--key", "k", "--key-separator", ":"], { broker: port }),
      2,
      "give --key (one key for every line) or --key-separator (a key on each line), not both",
    );
    expectOneLineError(
      await cli(["produce", "t", "--header", "novalue"], { broker: port }),
      2,
      '--header must be key=value (a non-empty key), got "novalue"',
    );
    expectOneLineError(
      await cli(["produce", "t", "--timestamp", "2024-05-01T12:00:00"], { broker: port }),
      2,
      '--timestamp: "2024-05-01T12:00:00" has no time zone',
    );
    expectOneLineError(
      await cli(["consume", "t", "--from", "0", "--from-time", "-1h"], { broker: port }),
      2,
      "give --from (an offset) or --from-time (a time), not both",
    );
    expectOneLineError(
      await cli(["offsets", "t", "--at", "yesterday"], { broker: port }),
      2,
      "--at must be milliseconds since the epoch, an ISO 8601 time",
    );
    expectOneLineError(
      await cli(["topics", "create", "t", "--timestamp-type", "Now"], { broker: port }),
      2,
      '--timestamp-type must be one of CreateTime, LogAppendTime, got "Now"',
    );
    expectOneLineError(
      await cli(["topics", "create", "t", "--partitions", "--durability", "force"], { broker: port }),
      2,
      "--partitions needs a value, not the option --durability (write --partitions=<value> for a value that starts with --)",
    );
    expectOneLineError(
      await cli(["topics", "list", "--colour", "red"], { broker: port }),
      2,
      "unknown option --colour",
    );
    const help = await cli(["--help"]);
    expect(help.exitCode).toBe(0);
    for (const command of [
      "health",
      "topics list",
      "produce",
      "consume",
      "offsets",
      "segment dump",
      "segment verify",
      "migrate",
      "--key-separator",
      "--header",
      "--from-time",
      "--at",
      "--timestamp-type",
    ]) {
      expect(help.stdout).toContain(command);
    }
  });
});

describe("booblik-cli offline", () => {
  test("segment dump and verify; verify names the first damaged record and exits 3", async () => {
    using dir = tempDir();
    {
      await using broker = await startBroker(dir.path);
      await cli(["topics", "create", "t", "--segment-size", "1KiB", "--durability", "force"], {
        broker: broker.port,
      });
      await cli(["produce", "t"], {
        broker: broker.port,
        stdin: Array.from({ length: 200 }, (_, i) => `record number ${i}`).join("\n"),
      });
      // Verify is read-only and safe while the broker runs.
      const live = await cli(["segment", "verify", dir.path]);
      expect(live.exitCode).toBe(0);
      expect(live.stdout).toContain("verified 1 partitions: no damage");
    }
    const partition = path.join(dir.path, "t-0");
    const segments = fs
      .readdirSync(partition)
      .filter((name) => name.endsWith(".log"))
      .sort();
    expect(segments.length).toBeGreaterThan(3);
    const dump = await cli(["segment", "dump", path.join(partition, segments[0]!), "--max", "2"]);
    expect(dump.exitCode).toBe(0);
    expect(dump.stdout).toContain("base offset 0");
    expect(dump.stdout).toMatch(
      /^batch at byte 32: offsets 0\.\.\d+ \(\d+ records\), \d+ bytes, codec none, CreateTime \S+Z.*, batch CRC ok$/m,
    );
    expect(dump.stdout).toMatch(/^ {2}0\s+\S+Z {2}key null {2}value "record number 0"$/m);
    expect(dump.stdout).toMatch(/^ {2}1\s+\S+Z {2}key null {2}value "record number 1"$/m);
    expect(dump.stdout).not.toContain("record number 2");
    const dumpJson = JSON.parse(
      (await cli(["segment", "dump", path.join(partition, segments[1]!), "--json"])).stdout,
    );
    expect(dumpJson.batches[0]).toMatchObject({
      position: 32,
      baseOffset: dumpJson.baseOffset,
      codec: "none",
      timestampType: "CreateTime",
      crcOk: true,
    });
    expect(dumpJson.batches[0].records[0]).toMatchObject({
      offset: dumpJson.baseOffset,
      key: null,
      value: `record number ${dumpJson.baseOffset}`,
      headers: [],
    });

    const clean = await cli(["segment", "verify", dir.path, "--json"]);
    expect(clean.exitCode).toBe(0);
    const report = JSON.parse(clean.stdout);
    expect(report).toMatchObject({ ok: true });
    expect(report.partitions[0].records).toBe(200);

    // Damage a byte in the second entry of the second (sealed) segment: verify reports the file
    // and the entry's position, exit 3.
    const victim = path.join(partition, segments[1]!);
    const bytes = fs.readFileSync(victim);
    const second = 32 + 8 + bytes.readUInt32BE(32);
    bytes[second + 8 + 70]! ^= 0xff; // inside the second batch's records
    fs.writeFileSync(victim, bytes);
    const damaged = await cli(["segment", "verify", dir.path]);
    expect(damaged.exitCode).toBe(3);
    expect(damaged.stdout).toContain(`damage: ${victim} at file position ${second}`);
    expect(damaged.stdout).toContain("CRC32C");
    expect(damaged.stdout).toMatch(/t-0\s+\d+\s+\d+\s+.*DAMAGED/);
    // A single file can be verified too.
    expect((await cli(["segment", "verify", victim])).exitCode).toBe(3);
    expectOneLineError(await cli(["segment", "verify", dir.file("nowhere")]), 1, "does not exist");
  });

  test("segment verify: an empty newest segment left by a kill right after a roll is a crash leftover, not damage", async () => {
    using dir = tempDir();
    {
      const broker = Broker.open({ dataDir: dir.path });
      broker.createTopic("t", { segmentBytes: 1024 });
      for (let batch = 0; batch < 10; batch++) {
        await broker.append(
          "t",
          0,
          Array.from({ length: 5 }, (_, i) => `record number ${batch * 5 + i}`),
        );
      }
      await broker.close();
    }
    const partition = path.join(dir.path, "t-0");
    const bases = fs
      .readdirSync(partition)
      .filter((name) => name.endsWith(".log"))
      .sort();
    expect(bases.length).toBeGreaterThan(1);
    // What a kill between creating the next segment and writing its header leaves: an empty file
    // named by the next offset. Recovery removes it (docs/format.md, "Recovery").
    const leftover = path.join(partition, `${String(50).padStart(20, "0")}.log`);
    fs.writeFileSync(leftover, "");
    const run = await cli(["segment", "verify", dir.path]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(`note: ${leftover} is empty (0 bytes, no header)`);
    expect(run.stdout).toContain("recovery removes it");
    expect(run.stdout).toMatch(/t-0\s+\d+\s+50\s+.*ok \(crash leftover\)/);
    expect(run.stdout).toContain("verified 1 partitions: no damage");
    const json = JSON.parse((await cli(["segment", "verify", dir.path, "--json"])).stdout);
    expect(json).toMatchObject({ ok: true });
    expect(json.partitions[0]).toMatchObject({ records: 50, crashLeftover: { file: leftover, bytes: 0 } });
    // The same file inside the offsets of the segment before it is the leftover of a failed roll,
    // which the start removes too (pass 2; before, verify called the gaps it makes damage, exit 3).
    const misplaced = path.join(partition, `${"0".repeat(19)}1.log`);
    fs.renameSync(leftover, misplaced);
    const inside = await cli(["segment", "verify", dir.path]);
    expect(inside.exitCode, inside.stdout).toBe(0);
    expect(inside.stdout).toContain(`note: ${misplaced} holds no record (0 bytes)`);
    // And what the note promises: recovery removes the leftover and keeps every record.
    fs.renameSync(misplaced, leftover);
    const broker = Broker.open({ dataDir: dir.path });
    try {
      expect(fs.existsSync(leftover)).toBe(false);
      // The entry holding offset 49 is the last batch of five, 45..49, whole.
      const last = broker.read("t", 0, 49);
      expect(last.firstOffset).toBe(45);
      expect(valuesOfEntries(last.records).map((value) => new TextDecoder().decode(value!))).toEqual(
        [45, 46, 47, 48, 49].map((i) => `record number ${i}`),
      );
    } finally {
      await broker.close();
    }
  });
});
