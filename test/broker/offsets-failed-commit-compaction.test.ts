/**
 * An acknowledged offset commit survives a restart when another commit that started at the same log
 * offset failed (a bug found by a fault hunt, 2026-12-03; this test failed on 10db40d).
 *
 * Before the fix:
 * OffsetsStore.appendRecords (src/broker/offsets-store.ts) records the commit's first log offset in
 * the Set `inFlight` before the append, and deletes it in `finally`. A commit whose append fails
 * without writing (here: the roll its batch needed met a full disk) leaves `nextOffset` where it
 * was, so a commit started in the same synchronous step (two OFFSET_COMMIT frames in one read of a
 * native connection) takes the same first offset: the Set holds it once, and the failed commit's
 * `finally` removes it for both. The compaction that a third commit's acknowledgement starts then
 * leaves the surviving commit's key out of its snapshot (its key is still in flight) and computes
 * its keep-from offset K without it, so the segment holding that commit is deleted; the commit is
 * acknowledged a moment later and gone from the log: after a restart its group is back at its
 * previous offset.
 *
 * The in-flight marks are now counted per offset. Found by a seeded FaultyDisk simulation of the
 * offsets store; made deterministic here with a Disk whose segment creation fails with ENOSPC while
 * a flag is set.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { ioError } from "../../ffi/file.ts";
import { Broker } from "../../src/broker/broker.ts";
import type { OffsetCommitEntry } from "../../src/broker/offsets-store.ts";
import { OFFSETS_TOPIC_NAME } from "../../src/domain/limits.ts";
import { type Disk, realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const ENOSPC = 28;

let restoreDisk: (() => void) | undefined;
afterEach(() => {
  restoreDisk?.();
  restoreDisk = undefined;
});

/** The real disk, except that creating a segment file fails with ENOSPC while `full.on`. */
function rollFailingDisk(full: { on: boolean }): Disk {
  return {
    ...realDisk,
    openFile(filePath, mode) {
      if (full.on && mode === "createNew" && filePath.endsWith(".log"))
        throw ioError("open", ENOSPC, filePath, "test: the disk is full");
      return realDisk.openFile(filePath, mode);
    },
  };
}

const entry = (partition: number, offset: number, metadata: string | null = null): OffsetCommitEntry => ({
  topic: "t",
  partition,
  offset,
  leaderEpoch: -1,
  metadata,
});

test("a commit that failed does not take the in-flight mark of a commit at the same offset with it", async () => {
  using dir = tempDir("offsets-failed-commit");
  const full = { on: false };
  restoreDisk = useDisk(rollFailingDisk(full));
  const options = { dataDir: dir.path, offsetsSegmentBytes: 4096 };
  let broker = Broker.open(options);
  const big = "m".repeat(2500); // one such commit fills most of a 4 KiB segment
  try {
    broker.createTopic("t", { partitions: 16 });
    broker.ensureOffsetsTopic();
    const segments = () => broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.segments;
    // The 16 commits of group p are live from the start (the compaction below is due once as many
    // records came in since the last one as there are live commits: 18).
    await broker.offsets.commit(
      "p",
      Array.from({ length: 16 }, (_, i) => entry(i, 0)),
    );
    // The group under test: acknowledged at 1 (what a lost commit falls back to).
    await broker.offsets.commit("k", [entry(0, 1)]);
    // Big commits (each fills most of a segment) until a compaction has run and finished: from
    // there, the next one is due only after 18 more records.
    let value = 0;
    while (broker.offsets.compactions === 0 || segments() < 3)
      await broker.offsets.commit("a", [entry(0, ++value, big)]);
    // A big commit rolls: what follows starts near the beginning of a fresh segment.
    await broker.offsets.commit("a", [entry(0, ++value, big)]);
    await broker.offsets.commit("a", [entry(0, ++value, big)]);
    const compactionsBefore = broker.offsets.compactions;
    // One synchronous step, as two frames of one read of a native connection are handled:
    // P: 16 small commits, acknowledged first (its force starts at once); its acknowledgement
    //    starts a compaction (enough records since the last one);
    const p = broker.offsets.commit(
      "p",
      Array.from({ length: 16 }, (_, i) => entry(i, 1)),
    );
    // Q: too big for the room left, and the roll it needs meets a full disk: refused;
    full.on = true;
    const q = broker.offsets.commit("q", [entry(0, 1, big)]).then(
      () => undefined,
      (error: unknown) => error,
    );
    // R: small, fits the room left, at the offset Q did not take: acknowledged;
    const r = broker.offsets.commit("k", [entry(0, 2)]);
    full.on = false;
    // S: big, rolls: R's segment is sealed (and below the compaction's keep-from offset).
    const s = broker.offsets.commit("a", [entry(0, ++value, big)]);
    await p;
    expect(await q).toMatchObject({ code: "STORAGE_ERROR", errnoName: "ENOSPC" });
    await r; // acknowledged: group k is at 2
    await s;
    expect(broker.offsets.committed("k", "t", 0)?.offset).toBe(2);
    // Let the compaction started by P's acknowledgement finish (it deletes after its force).
    const deadline = Date.now() + 10_000;
    while (broker.offsets.compactions === compactionsBefore && Date.now() < deadline)
      await new Promise((resolve) => setImmediate(resolve));
    expect(broker.offsets.compactions).toBeGreaterThan(compactionsBefore);
    await broker.close();
    broker = Broker.open(options);
    // The acknowledged commit of R survives the restart.
    expect(broker.offsets.committed("k", "t", 0)?.offset).toBe(2);
  } finally {
    await broker.close();
  }
});
