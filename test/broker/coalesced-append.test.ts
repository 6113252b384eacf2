/**
 * Coalesced appends (Partition.appendQueued, the server's PRODUCE path; issue 13): the appends of one
 * event-loop turn are written as one append per partition, in arrival order, each told exactly its
 * own offsets, each atomic, and under `force` answered by one force. Real files through the embedded
 * broker; the pwrite count comes from the storage's Disk seam wrapped with a counter.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import type { AppendWaiter } from "../../src/broker/partition.ts";
import { IoError } from "../../src/domain/errors.ts";
import { COALESCED_APPEND_BYTES_MAX } from "../../src/domain/limits.ts";
import { InvalidBatchError } from "../../src/record/batch.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { realDisk, useDisk } from "../../src/storage/disk.ts";
import { onlyZeros } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

interface Outcome {
  firstOffset: number;
  recordCount: number;
  durability: string;
  error: unknown;
  told: number;
}

/** A waiter that records what it was told, and how often (exactly once is the contract). */
function recorder(): AppendWaiter & { outcome: Outcome } {
  const outcome: Outcome = { firstOffset: -1, recordCount: -1, durability: "", error: undefined, told: 0 };
  return {
    outcome,
    appended(firstOffset, recordCount, durability) {
      outcome.firstOffset = firstOffset;
      outcome.recordCount = recordCount;
      outcome.durability = durability;
      outcome.told++;
    },
    appendFailed(error) {
      outcome.error = error;
      outcome.told++;
    },
  };
}

/**
 * Counts the pwrites of records storage makes to segment files (a new segment's header is one;
 * checkpoint and topic files, and the zeros the file writer keeps ahead of itself, are not counted),
 * and refuses with ENOSPC a segment write of records longer than `fullAboveBytes`: a disk with room
 * for a single append but not for the group.
 */
let segmentWrites = 0;
let fullAboveBytes = Number.POSITIVE_INFINITY;
const restoreDisk = useDisk({
  ...realDisk,
  pwriteAll(fd, source, start, end, position, path) {
    if (path?.endsWith(".log") && !onlyZeros(source, start, end)) {
      segmentWrites++;
      if (end - start > fullAboveBytes) throw new IoError("pwrite", 28, "ENOSPC", path);
    }
    realDisk.pwriteAll(fd, source, start, end, position, path);
  },
});
afterEach(() => {
  segmentWrites = 0;
  fullAboveBytes = Number.POSITIVE_INFINITY;
});
process.on("exit", restoreDisk);

const text = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes!);

function readAll(broker: Broker, topic: string): string[] {
  return valuesOfEntries(broker.read(topic, 0, 0, 64 * 1024 * 1024).records).map(text);
}

describe("appends of one turn", () => {
  test("under append: one pwrite for 100 appends, each told its own offsets in arrival order", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("t", { durability: "append" });
      const partition = broker.partition("t", 0);
      segmentWrites = 0; // the segment's header
      // Sizes differ (1 to 3 records), so an off-by-one in the per-append offsets would show.
      const waiters = Array.from({ length: 100 }, () => recorder());
      const expected: string[] = [];
      for (let i = 0; i < 100; i++) {
        const values = Array.from({ length: (i % 3) + 1 }, (_, r) => `a${i}.${r}`);
        expected.push(...values);
        partition.appendQueued(batchOfValues(values), waiters[i]!);
      }
      // Nothing is written or told within the turn the appends arrived in.
      expect(waiters.every((w) => w.outcome.told === 0)).toBe(true);
      expect(partition.log.nextOffset as number).toBe(0);
      await waitUntil(() => waiters.every((w) => w.outcome.told > 0), "every append answered");
      expect(segmentWrites).toBe(1);
      let offset = 0;
      for (let i = 0; i < 100; i++) {
        expect(waiters[i]!.outcome).toEqual({
          firstOffset: offset,
          recordCount: (i % 3) + 1,
          durability: "appended",
          error: undefined,
          told: 1,
        });
        offset += (i % 3) + 1;
      }
      expect(readAll(broker, "t")).toEqual(expected);
    } finally {
      await broker.close();
    }
  });

  test("under force: the appends of a turn ride one force and are visible once told", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("f", { durability: "force" });
      const partition = broker.partition("f", 0);
      segmentWrites = 0;
      const forcesBefore = partition.groupCommit.forceCount;
      const waiters = Array.from({ length: 50 }, () => recorder());
      for (let i = 0; i < 50; i++) partition.appendQueued(batchOfValues([`f${i}`]), waiters[i]!);
      await waitUntil(() => waiters.every((w) => w.outcome.told > 0), "every append answered");
      expect(waiters.map((w) => w.outcome.firstOffset)).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(waiters.every((w) => w.outcome.durability === "forced" && w.outcome.told === 1)).toBe(true);
      expect(partition.groupCommit.forceCount - forcesBefore).toBe(1);
      expect(segmentWrites).toBe(1);
      expect(partition.visibleNextOffset).toBe(50);
    } finally {
      await broker.close();
    }
  });

  test("a large append is written at once, after the smaller ones already pending", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("big", { durability: "append" });
      const partition = broker.partition("big", 0);
      segmentWrites = 0;
      const small = recorder();
      const large = recorder();
      partition.appendQueued(batchOfValues(["small"]), small);
      const big = "x".repeat(COALESCED_APPEND_BYTES_MAX + 1);
      partition.appendQueued(batchOfValues([big]), large);
      // Both written before appendQueued returned: the pending one first, so order holds.
      expect(small.outcome).toMatchObject({ firstOffset: 0, told: 1 });
      expect(large.outcome).toMatchObject({ firstOffset: 1, told: 1 });
      expect(segmentWrites).toBe(2);
      expect(readAll(broker, "big")).toEqual(["small", big]);
    } finally {
      await broker.close();
    }
  });

  test("the promise path writes the pending appends first, so arrival order holds across paths", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("o", { durability: "append" });
      const queued = recorder();
      broker.partition("o", 0).appendQueued(batchOfValues(["first"]), queued);
      const ack = await broker.append("o", 0, batchOfValues(["second"]));
      expect(queued.outcome.firstOffset).toBe(0);
      expect(ack.firstOffset as number).toBe(1);
      expect(readAll(broker, "o")).toEqual(["first", "second"]);
    } finally {
      await broker.close();
    }
  });

  test("a refused batch throws at once and leaves the others of its turn alone", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("v", { durability: "append" });
      const partition = broker.partition("v", 0);
      const before = recorder();
      const after = recorder();
      partition.appendQueued(batchOfValues(["before"]), before);
      const bad = batchOfValues(["bad"]);
      bad[bad.length - 1]! ^= 0xff; // the batch CRC no longer matches
      expect(() => partition.appendQueued(bad, recorder())).toThrow(InvalidBatchError);
      partition.appendQueued(batchOfValues(["after"]), after);
      await waitUntil(() => after.outcome.told > 0, "the last append answered");
      expect([before.outcome.firstOffset, after.outcome.firstOffset]).toEqual([0, 1]);
      expect(readAll(broker, "v")).toEqual(["before", "after"]);
    } finally {
      await broker.close();
    }
  });

  test("groups never outgrow a segment: a turn of appends over tiny segments rolls and refuses none", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("tiny", { durability: "append", segmentBytes: 1024 });
      const partition = broker.partition("tiny", 0);
      const waiters = Array.from({ length: 60 }, () => recorder());
      const expected = waiters.map((_, i) => `tiny-${i}-${"p".repeat(40)}`);
      for (let i = 0; i < 60; i++) partition.appendQueued(batchOfValues([expected[i]!]), waiters[i]!);
      await waitUntil(() => waiters.every((w) => w.outcome.told > 0), "every append answered");
      expect(waiters.map((w) => w.outcome.error)).toEqual(waiters.map(() => undefined));
      expect(waiters.map((w) => w.outcome.firstOffset)).toEqual(expected.map((_, i) => i));
      expect(partition.log.segmentBaseOffsets.length).toBeGreaterThan(3);
      expect(readAll(broker, "tiny")).toEqual(expected);
    } finally {
      await broker.close();
    }
  });

  test("a group that cannot be written is retried one append at a time: each gets its own outcome", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("full", { durability: "append" });
      const partition = broker.partition("full", 0);
      const small = [recorder(), recorder()];
      const large = recorder();
      partition.appendQueued(batchOfValues(["first"]), small[0]!);
      partition.appendQueued(batchOfValues(["L".repeat(2000)]), large);
      partition.appendQueued(batchOfValues(["last"]), small[1]!);
      // Room for a small append, not for the group nor the large one.
      fullAboveBytes = 1000;
      segmentWrites = 0;
      await waitUntil(() => [...small, large].every((w) => w.outcome.told > 0), "all answered");
      expect(segmentWrites).toBe(4); // the group, then each of the three alone
      expect(small.map((w) => w.outcome.firstOffset)).toEqual([0, 1]);
      expect(small.every((w) => w.outcome.told === 1 && w.outcome.error === undefined)).toBe(true);
      expect(large.outcome.told).toBe(1);
      expect(large.outcome.error).toBeInstanceOf(IoError);
      expect((large.outcome.error as IoError).retriable).toBe(true);
      expect(readAll(broker, "full")).toEqual(["first", "last"]);
    } finally {
      await broker.close();
    }
  });

  test("appends pending when the broker closes are written and told before the log closes", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("c", { durability: "force" });
    const waiters = Array.from({ length: 10 }, () => recorder());
    for (let i = 0; i < 10; i++) broker.partition("c", 0).appendQueued(batchOfValues([`c${i}`]), waiters[i]!);
    await broker.close();
    expect(waiters.map((w) => w.outcome.durability)).toEqual(waiters.map(() => "forced"));
    broker = Broker.open({ dataDir: dir.path });
    try {
      expect(readAll(broker, "c")).toEqual(waiters.map((_, i) => `c${i}`));
    } finally {
      await broker.close();
    }
  });
});
