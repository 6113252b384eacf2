/**
 * `booblik-cli migrate <dir>` run as a subprocess on format-1 directories written with the format-1
 * codec: every offset and payload kept (read back with the format-2 walker), segment names and
 * boundaries kept, everything that is not a segment copied, the original kept as a backup, and every
 * refusal (a running broker, format 2 already, damage of each kind) leaving the directory untouched.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { DataDirLock } from "../../src/broker/data-dir-lock.ts";
import { MIGRATE_BATCH_BYTES_MAX, MIGRATE_BATCH_RECORDS_MAX } from "../../src/domain/limits.ts";
import { runCli } from "../helpers/cli-process.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import {
  expectBrokerReads,
  expectedRecords,
  expectMigrated,
  type Format1Partition,
  readFormat2Partition,
  snapshotTree,
  writeFormat1Partition,
  writeStandardFixture,
  writeTopicFile,
} from "./format1-fixture.ts";

setDefaultTimeout(60_000);

describe("booblik-cli migrate", () => {
  test("keeps every offset, payload and segment boundary; copies the rest; keeps the original", async () => {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    const { partitions, expected } = writeStandardFixture(dataDir);
    const before = snapshotTree(dataDir);
    // The format-2 broker refuses it, naming the command, and changes nothing.
    await expect(Broker.openAsync({ dataDir })).rejects.toThrow(
      `this build reads format 2. Stop the broker and convert the directory offline with: booblik-cli migrate ${dataDir}`,
    );
    expect(snapshotTree(dataDir)).toEqual(before);
    // segment verify and dump say what to do with an old segment, not that it is damaged.
    const oldVerify = await runCli(["segment", "verify", dataDir]);
    expect(oldVerify.exitCode).toBe(1);
    expect(oldVerify.stderr).toContain(
      "is a segment of storage format 1; this build reads format 2. Convert the data directory offline with booblik-cli migrate <data dir>",
    );

    const run = await runCli(["migrate", dataDir]);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(`migrated ${dataDir} to format 2: 5 partitions, 9 segments, 215 records`);
    expect(run.stdout).toContain(`the format-1 original is kept at ${dataDir}.format1-backup`);
    // The torn tail and the headerless newest segment are said, with file and position.
    expect(run.stdout).toContain(
      `note: ${path.join(dataDir, "events-1", "00000000000000000000.log")}: dropped 11 bytes after the last whole record`,
    );
    expect(run.stdout).toContain(`${path.join(dataDir, "logs-0", "00000000000000001070.log")}: no header`);

    expectMigrated(dataDir, expected);
    // Same segment files (names = base offsets) in every partition.
    for (const partition of partitions) {
      const name = `${partition.topic}-${partition.partition}`;
      expect(readFormat2Partition(path.join(dataDir, name)).map((s) => s.base)).toEqual(
        partition.segments.map((s) => s.base),
      );
    }
    // Not segments: the same bytes and modes; checkpoints and the lock are not copied; topic files
    // get format 2's meaning of maxRecordBytes (the whole batch) and an explicit timestamp type.
    const after = snapshotTree(dataDir);
    for (const [file, summary] of before) {
      if (file.endsWith(".log") || file.endsWith("checkpoint.json") || file.startsWith("topics/")) continue;
      expect([file, after.get(file)]).toEqual([file, summary]);
    }
    for (const topic of ["events", "logs", "tiny"]) {
      const read = (root: string) =>
        JSON.parse(fs.readFileSync(path.join(root, "topics", `${topic}.json`), "utf8"));
      const old = read(`${dataDir}.format1-backup`);
      const converted = read(dataDir);
      expect(old.config.timestampType).toBeUndefined();
      const maxRecordBytes = old.config.maxRecordBytes + 77;
      expect(converted).toEqual({
        ...old,
        config: {
          ...old.config,
          maxRecordBytes,
          // 64 KiB segments held a payload of 64 KiB − 40: the batch of one needs 77 bytes more.
          segmentBytes: Math.max(old.config.segmentBytes, maxRecordBytes + 40),
          timestampType: "CreateTime",
        },
      });
    }
    expect(run.stdout).toContain(
      `note: ${path.join(dataDir, "topics", "events.json")}: maxRecordBytes 65496 → 65573 (format 2 counts the whole batch); segmentBytes 65536 → 65613 (a batch of the largest record must fit one)`,
    );
    expect(run.stdout).toContain(
      `note: ${path.join(dataDir, "topics", "tiny.json")}: maxRecordBytes 300 → 377 (format 2 counts the whole batch)`,
    );
    // segment verify (the storage layer's own walker) finds every converted segment sound.
    const verified = await runCli(["segment", "verify", dataDir]);
    expect(verified.stdout).toContain("verified 5 partitions: no damage");
    expect(verified.exitCode).toBe(0);
    // The format-2 broker opens it, checks every entry, and serves every record by offset and time.
    await expectBrokerReads(dataDir, expected);
    // Appends go on where format 1 ended, in every partition, the mapped one included.
    {
      const broker = await Broker.openAsync({ dataDir });
      try {
        expect(Number((await broker.append("events", 0, ["next"])).firstOffset)).toBe(80);
        expect(Number((await broker.append("events", 1, ["next"])).firstOffset)).toBe(25);
        expect(Number((await broker.append("events", 2, ["next"])).firstOffset)).toBe(0);
        expect(Number((await broker.append("logs", 0, ["next"])).firstOffset)).toBe(1070);
        expect(Number((await broker.append("tiny", 0, ["next"])).firstOffset)).toBe(40);
      } finally {
        await broker.close();
      }
    }
    expect(after.get("users.json")).toEndWith(" 600");
    // The original, untouched, at the backup name; nothing else left next to it.
    expect(snapshotTree(`${dataDir}.format1-backup`)).toEqual(before);
    expect(fs.readdirSync(dir.path).sort()).toEqual(["data", "data.format1-backup"]);
    // A segment keeps its old modification time (retention's fallback looks at it).
    const segment = "events-0/00000000000000000040.log";
    expect(Math.floor(fs.statSync(path.join(dataDir, segment)).mtimeMs)).toBe(
      Math.floor(fs.statSync(path.join(`${dataDir}.format1-backup`, segment)).mtimeMs),
    );

    const again = await runCli(["migrate", dataDir]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toBe(`nothing to do: ${dataDir} is in format 2 already\n`);
    const json = await runCli(["migrate", dataDir, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ outcome: "nothing-to-do" });
  });

  test("groups records into batches of at most 10,000 records, about 1 MiB, or the topic's record limit", async () => {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    const small = Array.from({ length: 25_001 }, (_, i) => new TextEncoder().encode(`r${i}`));
    const large = Array.from({ length: 40 }, (_, i) => new Uint8Array(100_000).fill(i));
    const limited = Array.from({ length: 30 }, (_, i) => new Uint8Array(i === 7 ? 1000 : 100).fill(i));
    const partitions: Format1Partition[] = [
      { topic: "small", partition: 0, segments: [{ base: 0, payloads: small, mtimeMs: 1_600_000_000_000 }] },
      { topic: "large", partition: 0, segments: [{ base: 5, payloads: large, mtimeMs: 1_600_000_000_000 }] },
      {
        topic: "limited",
        partition: 0,
        segments: [{ base: 0, payloads: limited, mtimeMs: 1_600_000_000_000 }],
      },
    ];
    writeTopicFile(dataDir, "small", {});
    writeTopicFile(dataDir, "large", {});
    writeTopicFile(dataDir, "limited", { maxRecordBytes: 1000 });
    for (const partition of partitions) writeFormat1Partition(dataDir, partition);
    const run = await runCli(["migrate", dataDir]);
    expect(run.exitCode).toBe(0);
    expectMigrated(
      dataDir,
      new Map(partitions.map((p) => [`${p.topic}-${p.partition}`, expectedRecords(p)])),
    );
    await expectBrokerReads(
      dataDir,
      new Map(partitions.map((p) => [`${p.topic}-${p.partition}`, expectedRecords(p)])),
    );
    const batchesOf = (name: string) => readFormat2Partition(path.join(dataDir, name))[0]!.batches;
    expect(batchesOf("small-0").map((b) => b.count)).toEqual([
      MIGRATE_BATCH_RECORDS_MAX,
      MIGRATE_BATCH_RECORDS_MAX,
      5_001,
    ]);
    const largeBatches = batchesOf("large-0");
    expect(largeBatches.every((b) => b.bytes <= MIGRATE_BATCH_BYTES_MAX)).toBe(true);
    expect(largeBatches.length).toBe(4); // 10 records of 100,000 bytes fit in 1 MiB, 11 do not
    // Below the topic's 1000-byte limit, except the 1000-byte record, which gets a batch of its own.
    const limitedBatches = batchesOf("limited-0");
    for (const batch of limitedBatches) {
      if (batch.count > 1) expect(batch.bytes).toBeLessThanOrEqual(1000);
    }
    expect(limitedBatches.some((b) => b.count === 1 && b.bytes > 1000)).toBe(true);
  });

  test("segments larger than a read chunk: records across chunk boundaries, a record larger than a chunk", async () => {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    // 10 MiB of odd-sized records (4 MiB chunks end inside records), then one of 6 MiB (larger than
    // a read chunk and than the write buffer), then small ones again; a mapped-style zero tail.
    const payloads: Uint8Array[] = [];
    for (let i = 0; i < 1500; i++) payloads.push(new Uint8Array(7001 + (i % 13)).fill(i & 0xff));
    payloads.push(new Uint8Array(6 * 1024 * 1024 + 3).fill(0xab));
    for (let i = 0; i < 10; i++) payloads.push(new Uint8Array([i, 0, 10, 255]));
    const partition: Format1Partition = {
      topic: "big",
      partition: 0,
      segments: [
        {
          base: 0,
          payloads,
          mtimeMs: 1_600_000_000_000,
          tail: { kind: "mapped", paddedBytes: 20 * 1024 * 1024 },
        },
      ],
    };
    writeTopicFile(dataDir, "big", { maxRecordBytes: 8 * 1024 * 1024, segmentBytes: 32 * 1024 * 1024 });
    writeFormat1Partition(dataDir, partition);
    const run = await runCli(["migrate", dataDir]);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("1511 records");
    expectMigrated(dataDir, new Map([["big-0", expectedRecords(partition)]]));
    await expectBrokerReads(dataDir, new Map([["big-0", expectedRecords(partition)]]));
    const batches = readFormat2Partition(path.join(dataDir, "big-0"))[0]!.batches;
    expect(batches.find((b) => b.bytes > 6 * 1024 * 1024)?.count).toBe(1);
  });

  test("refuses a directory a running broker holds, and changes nothing", async () => {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    writeStandardFixture(dataDir);
    const before = snapshotTree(dataDir);
    const lock = DataDirLock.acquire(dataDir);
    try {
      const run = await runCli(["migrate", dataDir]);
      expect(run.exitCode).toBe(1);
      expect(run.stderr).toContain(`data directory ${dataDir} is in use by pid ${process.pid}`);
      expect(run.stderr).toContain("stop the broker before migrating");
      expect(run.stderr.trim().split("\n").length).toBe(1);
    } finally {
      lock.release();
    }
    expect(snapshotTree(dataDir)).toEqual(before);
    expect(fs.readdirSync(dir.path)).toEqual(["data"]);
  });

  test.skipIf(smallFileSystemUnavailable !== undefined)(
    "refuses to start without room for the copy, and changes nothing",
    async () => {
      using small = mountSmallFileSystem(96 * 1024 * 1024);
      const dataDir = path.join(small.path, "data");
      const payloads = Array.from({ length: 40 }, (_, i) => new Uint8Array(1024 * 1024 - 8).fill(i));
      writeTopicFile(dataDir, "big", { maxRecordBytes: 2 * 1024 * 1024 });
      writeFormat1Partition(dataDir, {
        topic: "big",
        partition: 0,
        segments: [{ base: 0, payloads, mtimeMs: 1_600_000_000_000 }],
      });
      const before = snapshotTree(dataDir);
      const run = await runCli(["migrate", dataDir]);
      expect(run.exitCode).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `refusing to migrate ${dataDir}: the copy needs about \\d+ bytes next to it \\(the data plus 10 % and 64 MiB\\), \\d+ are free on ${small.path}`,
        ),
      );
      expect(snapshotTree(dataDir)).toEqual(before);
      expect(fs.readdirSync(small.path)).toEqual(["data"]);
    },
  );

  test("a directory without segments, a missing directory, a bad command line", async () => {
    using dir = tempDir("migrate");
    const empty = path.join(dir.path, "empty");
    fs.mkdirSync(empty);
    const nothing = await runCli(["migrate", empty]);
    expect(nothing.exitCode).toBe(0);
    expect(nothing.stdout).toBe(`nothing to do: ${empty} holds no segment files\n`);
    const missing = await runCli(["migrate", path.join(dir.path, "absent")]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain("absent does not exist");
    expect((await runCli(["migrate"])).exitCode).toBe(2);
    expect((await runCli(["migrate", empty, "--force"])).exitCode).toBe(2);
  });
});

describe("booblik-cli migrate refuses damage, naming file, position and offset, and changes nothing", () => {
  const T = 1_650_000_000_000;
  const values = (from: number, count: number) =>
    Array.from({ length: count }, (_, i) => new TextEncoder().encode(`value-${from + i}`));

  async function expectRefused(
    partitions: Format1Partition[],
    damage: (dataDir: string) => void,
    expected: RegExp[],
  ): Promise<void> {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    writeTopicFile(dataDir, "t", { partitions: partitions.length });
    for (const partition of partitions) writeFormat1Partition(dataDir, partition);
    damage(dataDir);
    const before = snapshotTree(dataDir);
    const run = await runCli(["migrate", dataDir]);
    expect(run.exitCode).toBe(3);
    for (const pattern of expected) expect(run.stderr).toMatch(pattern);
    expect(run.stderr).not.toContain("    at ");
    expect(snapshotTree(dataDir)).toEqual(before);
    expect(fs.readdirSync(dir.path)).toEqual(["data"]);
    const json = await runCli(["migrate", dataDir, "--json"]);
    expect(json.exitCode).toBe(3);
    const error = JSON.parse(json.stderr).error;
    expect(error.code).toBe("BAD_SEGMENT_FILE");
    expect(error.damage.length).toBe(expected.length);
  }

  const twoSegments = (partition = 0): Format1Partition => ({
    topic: "t",
    partition,
    segments: [
      { base: 0, payloads: values(0, 10), mtimeMs: T },
      { base: 10, payloads: values(10, 10), mtimeMs: T },
    ],
  });

  test("a flipped byte in a sealed segment (and, reported too, one in another partition)", async () => {
    const flip = (file: string, position: number) => {
      const bytes = fs.readFileSync(file);
      bytes[position]! ^= 0x40;
      fs.writeFileSync(file, bytes);
    };
    // Record 3 of segment 0 starts at 32 + 3 × (8 + 7) = 77; its payload at 85.
    await expectRefused(
      [twoSegments(0), twoSegments(1)],
      (dataDir) => {
        flip(path.join(dataDir, "t-0", "00000000000000000000.log"), 85);
        flip(path.join(dataDir, "t-1", "00000000000000000010.log"), 32 + 2 * 16 + 9);
      },
      [
        /t-0\/00000000000000000000\.log at byte 77 \(offset 3\): a record whose CRC32C does not match in a sealed segment/,
        /t-1\/00000000000000000010\.log at byte 64 \(offset 12\): a record whose CRC32C does not match in the newest segment, after the recovery point \(--drop-damaged-tail drops it and the 128 bytes from there on/,
      ],
    );
  });

  test("a hole between segments", async () => {
    const partition = twoSegments();
    partition.segments[1] = { base: 12, payloads: values(12, 3), mtimeMs: T };
    await expectRefused([partition], () => undefined, [
      /00000000000000000012\.log at byte 0 \(offset 12\): the segment starts at offset 12, but the one before it ends at 10/,
    ]);
  });

  test("a torn tail the checkpoint vouches for (durable records lost)", async () => {
    const partition: Format1Partition = {
      topic: "t",
      partition: 0,
      segments: [
        {
          base: 0,
          payloads: values(0, 10),
          mtimeMs: T,
          tail: { kind: "bytes", bytes: new Uint8Array([0, 0, 0, 9, 1, 2]) },
        },
      ],
      checkpoint: { cleanShutdown: false, segmentBaseOffset: 0, position: 32 + 10 * 15 + 20, nextOffset: 12 },
    };
    await expectRefused([partition], () => undefined, [
      /00000000000000000000\.log at byte 182 \(offset 10\): a record cut short by the end of the file \(6 bytes left\), before the recovery point/,
    ]);
  });

  test("a header that is not a segment's, a sealed segment without header", async () => {
    await expectRefused(
      [twoSegments(0), twoSegments(1)],
      (dataDir) => {
        fs.writeFileSync(
          path.join(dataDir, "t-0", "00000000000000000010.log"),
          "not a segment at all, longer than 32 bytes",
        );
        fs.writeFileSync(path.join(dataDir, "t-1", "00000000000000000000.log"), new Uint8Array(100));
      },
      [
        /t-0\/00000000000000000010\.log at byte 0 \(offset 10\): refusing segment .*not a booblik segment/,
        /t-1\/00000000000000000000\.log at byte 0 \(offset 0\): a sealed segment whose header is zeros/,
      ],
    );
  });

  test("--drop-damaged-tail drops a damaged end of a newest segment after its recovery point, and says so", async () => {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    const partition = twoSegments(0);
    writeTopicFile(dataDir, "t", { partitions: 1 });
    writeFormat1Partition(dataDir, partition);
    const file = path.join(dataDir, "t-0", "00000000000000000010.log");
    const bytes = fs.readFileSync(file);
    bytes[32 + 2 * 16 + 9]! ^= 0x40;
    fs.writeFileSync(file, bytes);
    fs.utimesSync(file, T / 1000, T / 1000);
    expect((await runCli(["migrate", dataDir])).exitCode).toBe(3);
    const run = await runCli(["migrate", dataDir, "--drop-damaged-tail"]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(
      `note: ${file}: dropped 128 bytes after the last whole record (byte 64, offset 12): a record whose CRC32C does not match; dropped as asked (--drop-damaged-tail)`,
    );
    const kept = expectedRecords(partition).filter((record) => record.offset < 12);
    expectMigrated(dataDir, new Map([["t-0", kept]]));
  });

  test("a directory mixing format 1 and format 2 is refused without damage", async () => {
    using dir = tempDir("migrate");
    const dataDir = path.join(dir.path, "data");
    writeTopicFile(dataDir, "t", { partitions: 2 });
    writeFormat1Partition(dataDir, twoSegments(0));
    writeFormat1Partition(dataDir, twoSegments(1));
    // Partition 1 converted on its own (as a copy of a migrated directory would be).
    const other = path.join(dir.path, "other");
    writeTopicFile(other, "t", { partitions: 2 });
    writeFormat1Partition(other, twoSegments(1));
    expect((await runCli(["migrate", other])).exitCode).toBe(0);
    fs.rmSync(path.join(dataDir, "t-1"), { recursive: true });
    fs.cpSync(path.join(other, "t-1"), path.join(dataDir, "t-1"), { recursive: true });
    const before = snapshotTree(dataDir);
    const run = await runCli(["migrate", dataDir]);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain("it mixes segment formats (format 1 in");
    expect(snapshotTree(dataDir)).toEqual(before);
  });
});
