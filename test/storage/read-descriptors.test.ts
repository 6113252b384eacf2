/**
 * The bound on read descriptors of sealed segments: a consumer reading a long history from the
 * start holds at most about the bound, every record still reads back right after its descriptor was
 * closed and reopened, and a descriptor that is in use (a file range being sent, unforced bytes) is
 * never closed under its user.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { Offset } from "../../src/domain/ids.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { PartitionLog } from "../../src/storage/partition-log.ts";
import { sealedReadDescriptors } from "../../src/storage/read-descriptors.ts";
import { newFileRange, Segment, segmentConfig } from "../../src/storage/segment.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { descriptorsUnder } from "../helpers/proc.ts";
import { payloadForOffset } from "../helpers/random.ts";
import { readFileRange } from "../helpers/read-range.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const LIMIT = 8;
const SEGMENTS = 120;
let previousLimit = 0;

beforeEach(() => {
  previousLimit = sealedReadDescriptors.limit;
  sealedReadDescriptors.setLimit(LIMIT);
});
afterEach(() => {
  sealedReadDescriptors.setLimit(previousLimit);
});

/** Appends records until the log has `segments` segments (each record a batch, so rolls are exact). */
function fillSegments(log: PartitionLog, segments: number): void {
  while (log.segmentCount < segments) {
    const offset = log.nextOffset;
    log.append(batchOfValues([payloadForOffset(offset, 100)]));
  }
}

/** Reads every record from `from` to the end and checks each payload; returns how many. */
function readAll(log: PartitionLog, from: number): number {
  let offset = from;
  while (offset < log.nextOffset) {
    const read = log.read(offset, 4096);
    for (const payload of valuesOfEntries(read.records)) {
      expect(
        Buffer.from(payload!).equals(Buffer.from(payloadForOffset(offset, 100))),
        `offset ${offset}`,
      ).toBe(true);
      offset++;
    }
  }
  return offset - from;
}

describe.each(WRITE_MODES.map((mode) => [mode]))("read descriptors, %s write path", (mode: WriteMode) => {
  test("reading a long history holds at most the bound, and reads right after reopening", async () => {
    using dir = tempDir();
    const config = segmentConfig({ writeMode: mode, segmentBytes: 4096 });
    {
      const log = PartitionLog.open(dir.path, config);
      fillSegments(log, SEGMENTS);
      await log.force();
      log.close();
      await log.settled();
    }
    // Reopened after a clean shutdown: every old segment is sealed, opened by name, no descriptor.
    const descriptorsBefore = descriptorsUnder(dir.path);
    const closedBefore = sealedReadDescriptors.closedByLimitCount;
    const log = PartitionLog.open(dir.path, config);
    try {
      expect(log.segmentCount).toBe(SEGMENTS);
      let peak = 0;
      let offset = 0;
      while (offset < log.nextOffset) {
        const read = log.read(offset, 4096);
        offset += read.recordCount;
        peak = Math.max(peak, descriptorsUnder(dir.path) - descriptorsBefore);
        expect(sealedReadDescriptors.openCount).toBeLessThanOrEqual(LIMIT);
      }
      // The active segment holds its writer's descriptor and a reader's; the rest is the bound.
      expect(peak).toBeLessThanOrEqual(LIMIT + 2);
      expect(sealedReadDescriptors.closedByLimitCount - closedBefore).toBeGreaterThanOrEqual(
        SEGMENTS - 1 - LIMIT,
      );
      // Everything reads back, twice over: the second pass reopens descriptors closed by the first.
      expect(readAll(log, 0)).toBe(log.nextOffset);
      expect(readAll(log, 0)).toBe(log.nextOffset);
      // Zero-copy ranges too, from a reopened descriptor.
      const range = newFileRange();
      const segment = log.fileRange(0, 4096, range)!;
      try {
        const copied = log.read(0, range.lengthBytes);
        expect(Buffer.from(readFileRange(range.fd, range.position, range.lengthBytes))).toEqual(
          Buffer.from(copied.records),
        );
      } finally {
        segment.release();
      }
    } finally {
      log.close();
    }
    // A background checkpoint write started before the close (partition-log.ts maybeCheckpoint)
    // holds its temporary file open until it finishes: seen once under load as one descriptor more.
    await log.settled();
    expect(descriptorsUnder(dir.path)).toBe(descriptorsBefore);
    expect(sealedReadDescriptors.openCount).toBe(0);
  }, 60_000);

  test("a file range being sent keeps its descriptor however many other segments are read", async () => {
    using dir = tempDir();
    const config = segmentConfig({ writeMode: mode, segmentBytes: 4096 });
    const log = PartitionLog.open(dir.path, config);
    try {
      // Under `append`, sealed segments keep their descriptors for the force to come; the force
      // brings them back within the bound.
      fillSegments(log, SEGMENTS);
      expect(sealedReadDescriptors.openCount).toBe(SEGMENTS - 1);
      await log.force();
      expect(sealedReadDescriptors.openCount).toBeLessThanOrEqual(LIMIT);
      const range = newFileRange();
      const held = log.fileRange(0, 4096, range)!; // acquired, as the server holds it during sendfile
      const expected = Buffer.from(readFileRange(range.fd, range.position, range.lengthBytes));
      const closedBefore = sealedReadDescriptors.closedByLimitCount;
      readAll(log, range.recordCount); // every other segment: far more opens than the bound
      expect(sealedReadDescriptors.closedByLimitCount - closedBefore).toBeGreaterThan(SEGMENTS / 2);
      expect(held.hasOpenDescriptor).toBe(true);
      // Same descriptor number, same bytes: it was not closed (and the number reused by another file).
      expect(Buffer.from(readFileRange(range.fd, range.position, range.lengthBytes))).toEqual(expected);
      held.release();
      readAll(log, range.recordCount);
      expect(held.hasOpenDescriptor).toBe(false); // idle now, and least recently read: closed
    } finally {
      log.close();
    }
  }, 60_000);
});

test("sealed segments with unforced bytes keep their descriptor until forced", async () => {
  using dir = tempDir();
  const config = segmentConfig({ writeMode: "file", segmentBytes: 4096 });
  const segments: Segment[] = [];
  try {
    for (let i = 0; i < LIMIT * 3; i++) {
      const segment = Segment.create(dir.path, (i * 10) as Offset, config);
      segments.push(segment);
      segment.append(batchOfValues(["not forced yet"]));
      segment.seal(); // no force: the pending force reaches the file through the read descriptor
    }
    expect(sealedReadDescriptors.openCount).toBe(LIMIT * 3);
    for (const segment of segments) expect(segment.hasOpenDescriptor).toBe(true);
    // Over the bound with nothing closable: a segment opened now keeps the descriptor it just took
    // (closing it instead would hand the reader a dead, or reused, descriptor number).
    const written = Segment.create(dir.path, 2_000_000 as Offset, config);
    written.append(batchOfValues(["on disk"]));
    written.forceNow();
    written.close();
    const reopened = Segment.openSealed(written.path, config, 2_000_001 as Offset);
    try {
      expect(new TextDecoder().decode(valuesOfEntries(reopened.read(2_000_000, 100).records)[0]!)).toBe(
        "on disk",
      );
      expect(reopened.hasOpenDescriptor).toBe(true);
    } finally {
      reopened.close();
    }
    for (const segment of segments) await segment.force();
    // Forced and idle: the next open shrinks the set below the bound.
    const extra = Segment.create(dir.path, 1_000_000 as Offset, config);
    segments.push(extra);
    extra.append(batchOfValues(["one more"]));
    await extra.force();
    extra.seal();
    expect(sealedReadDescriptors.openCount).toBeLessThanOrEqual(LIMIT);
    expect(extra.hasOpenDescriptor).toBe(true); // the one that registered is never the one closed
    for (const [i, segment] of segments.entries()) {
      const read = segment.read(segment.baseOffset, 100);
      expect(new TextDecoder().decode(valuesOfEntries(read.records)[0]!)).toBe(
        i === segments.length - 1 ? "one more" : "not forced yet",
      );
    }
  } finally {
    for (const segment of segments) segment.close();
  }
  expect(sealedReadDescriptors.openCount).toBe(0);
});

test("the bound refuses impossible values", () => {
  expect(() => sealedReadDescriptors.setLimit(0)).toThrow("integer ≥ 4");
  expect(() => sealedReadDescriptors.setLimit(2.5)).toThrow("got 2.5");
});
