/**
 * Purging a partition (Broker.purge, Kafka's DeleteRecords) through the embedded broker: the log
 * start moves into the middle of a segment, whole segments below it are deleted from the disk,
 * reads below it answer OFFSET_OUT_OF_RANGE, time lookups never answer a purged offset, and the
 * start survives a restart (clean or not) and a crash between the start's write and the segments'
 * deletion. What is refused: beyond the visible end, an internal topic. A start file that cannot be
 * written (a full disk) changes nothing: same start, same segments, and the purge can be retried.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { ioError } from "../../ffi/file.ts";
import { Broker } from "../../src/broker/broker.ts";
import { BooblikError, OffsetOutOfRangeError, UnsyncedReplaceError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { disk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const segmentFiles = (dir: string, topic: string) =>
  fs
    .readdirSync(path.join(dir, `${topic}-0`))
    .filter((name) => name.endsWith(".log"))
    .sort();

/** 40 records of 100 bytes, one batch each, with timestamps 1000, 1001, … (several segments). */
async function fill(broker: Broker, topic: string): Promise<void> {
  broker.createTopic(topic, { segmentBytes: 1024, durability: "append" });
  for (let i = 0; i < 40; i++)
    await broker.append(topic, 0, batchOfValues([`${i}`.padEnd(100, ".")], 1000 + i));
}

describe("purge", () => {
  test("moves the start into a segment, deletes whole segments below it, and survives restarts", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    await fill(broker, "t");
    const filesBefore = segmentFiles(dir.path, "t");
    expect(filesBefore.length).toBeGreaterThan(4);
    // The segment holding offset 17 and the one after it: 17 is not a segment's first offset.
    const bases = filesBefore.map((name) => Number(name.slice(0, 20)));
    const holding = bases.filter((base) => base <= 17).at(-1)!;
    expect(holding).toBeLessThan(17);

    const result = await broker.purge("t", 0, 17);
    expect(result.logStartOffset).toBe(17);
    expect(result.segmentsDeleted).toBe(bases.filter((base) => base < holding).length);
    expect(segmentFiles(dir.path, "t")[0]).toBe(filesBefore[bases.indexOf(holding)]);
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(17);
    expect(() => broker.read("t", 0, 16)).toThrow(OffsetOutOfRangeError);
    expect(() => broker.read("t", 0, 0)).toThrow(OffsetOutOfRangeError);
    // At the start, the entry holding it comes back whole (its BaseOffset), as a FETCH answers.
    expect(broker.read("t", 0, 17).firstOffset).toBe(17);
    // A time older than every record answers the start, not a purged offset.
    expect(broker.offsetForTimestamp("t", 0, 0)?.offset).toBe(17);
    expect(broker.offsetForTimestamp("t", 0, 1020)?.offset).toBe(20);
    // A point at or below the start changes nothing.
    expect((await broker.purge("t", 0, 5)).logStartOffset).toBe(17);
    await broker.close();

    // Clean restart.
    broker = Broker.open({ dataDir: dir.path });
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(17);
    expect(() => broker.read("t", 0, 16)).toThrow(OffsetOutOfRangeError);
    await broker.close();

    // A crash between the start's write and the deletion of the segments below it: put the deleted
    // segments back (copied from a second log with the same records) and drop the checkpoint, as a
    // crash right after the start file's rename would leave the directory.
    using twin = tempDir();
    const other = Broker.open({ dataDir: twin.path });
    await fill(other, "t");
    await other.close();
    const deleted = filesBefore.slice(0, bases.indexOf(holding));
    for (const name of deleted)
      fs.copyFileSync(path.join(twin.path, "t-0", name), path.join(dir.path, "t-0", name));
    fs.rmSync(path.join(dir.path, "t-0", "checkpoint.json"));
    broker = Broker.open({ dataDir: dir.path });
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(17);
    expect(segmentFiles(dir.path, "t")[0]).toBe(filesBefore[bases.indexOf(holding)]);
    expect(broker.describeTopic("t").partitions[0]!.nextOffset).toBe(40);
    expect(() => broker.read("t", 0, 0)).toThrow(OffsetOutOfRangeError);
    // A later purge past the segment the start fell into deletes that segment too.
    await broker.purge("t", 0, bases[bases.indexOf(holding) + 1]! + 1);
    expect(segmentFiles(dir.path, "t")[0]).toBe(filesBefore[bases.indexOf(holding) + 1]);
    await broker.close();
  });

  test("−1 purges up to the visible end; the log goes on from there, also after a restart", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    await fill(broker, "t");
    expect((await broker.purge("t", 0, -1)).logStartOffset).toBe(40);
    // Everything below is gone, the partition is empty and takes appends at 40.
    expect(broker.read("t", 0, 40).recordCount).toBe(0);
    expect((await broker.append("t", 0, ["after"])).firstOffset).toBe(40 as Offset);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    const described = broker.describeTopic("t").partitions[0]!;
    expect([described.logStartOffset, described.nextOffset]).toEqual([40, 41]);
    await broker.close();
  });

  test("a start beyond what recovery kept restarts the log empty at the start (no offset reused)", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    await fill(broker, "t");
    await broker.purge("t", 0, 31);
    await broker.close();
    // Damage took the records the purge covered and the checkpoint with them: the segment holding
    // the start lost its entries, the later ones are gone.
    const files = segmentFiles(dir.path, "t");
    for (const name of files.slice(1)) fs.rmSync(path.join(dir.path, "t-0", name));
    fs.truncateSync(path.join(dir.path, "t-0", files[0]!), 100);
    fs.rmSync(path.join(dir.path, "t-0", "checkpoint.json"));
    broker = Broker.open({ dataDir: dir.path });
    const described = broker.describeTopic("t").partitions[0]!;
    expect([described.logStartOffset, described.nextOffset]).toEqual([31, 31]);
    expect((await broker.append("t", 0, ["next"])).firstOffset).toBe(31 as Offset);
    await broker.close();
  });

  test("refused: beyond the visible end, below −1, an unknown partition, the internal topic", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    await fill(broker, "t");
    await expect(broker.purge("t", 0, 41)).rejects.toThrow(OffsetOutOfRangeError);
    await expect(broker.purge("t", 0, -2)).rejects.toThrow(OffsetOutOfRangeError);
    await expect(broker.purge("t", 1, 0)).rejects.toThrow(BooblikError);
    await broker.offsets.commit("g", [
      { topic: "t", partition: 0, offset: 1, leaderEpoch: -1, metadata: "" },
    ]);
    await expect(broker.purge("__consumer_offsets", 0, 0)).rejects.toThrow(
      /internal to the broker and cannot be purged/,
    );
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(0);
    await broker.close();
  });

  test("a start file that cannot be written (ENOSPC) changes nothing; the purge can be retried", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    await fill(broker, "t");
    const files = segmentFiles(dir.path, "t");
    const real = disk;
    const restore = useDisk({
      ...real,
      writeFileAtomicallyNow(target: string, bytes: Uint8Array | string) {
        if (target.endsWith("log-start.json")) throw ioError("write", 28, `${target}.tmp`);
        real.writeFileAtomicallyNow(target, bytes);
      },
    });
    try {
      await expect(broker.purge("t", 0, 25)).rejects.toMatchObject({ code: "STORAGE_ERROR" });
    } finally {
      restore();
    }
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(0);
    expect(segmentFiles(dir.path, "t")).toEqual(files);
    expect(broker.read("t", 0, 0).firstOffset).toBe(0);
    expect((await broker.purge("t", 0, 25)).logStartOffset).toBe(25);
    await broker.close();
  });
});

test("a start file in place whose directory sync failed (UnsyncedReplaceError) is a purge in force: the caller hears the error, and the running broker starts where the next start will", async () => {
  using dir = tempDir();
  let broker = Broker.open({ dataDir: dir.path });
  try {
    broker.createTopic("t", { durability: "force" });
    for (let i = 0; i < 10; i++) await broker.append("t", 0, [`v${i}`]);
    const real = disk;
    const restore = useDisk({
      ...real,
      writeFileAtomicallyNow(file, bytes) {
        real.writeFileAtomicallyNow(file, bytes);
        if (file.includes("log-start"))
          throw new UnsyncedReplaceError(ioError("fsync(dir)", 5, path.dirname(file), "test"), file);
      },
    });
    try {
      await expect(broker.purge("t", 0, 5)).rejects.toBeInstanceOf(UnsyncedReplaceError);
    } finally {
      restore();
    }
    // Before 2026-12-03 the running broker kept serving offsets 0-4 (start 0) while the file, and so
    // the next start, said 5 (a reviewer's run).
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(5);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    expect(broker.describeTopic("t").partitions[0]!.logStartOffset).toBe(5);
  } finally {
    await broker.close();
  }
});
