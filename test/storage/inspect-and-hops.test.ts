/**
 * - walkSegmentFile ends when the file shrinks while it is read (a broker beside the tool may cut a
 *   torn tail): a short read is the end of the file. It used to loop forever, allocating each pass.
 * - Lookups (read, fileRange) stay exact when entries are larger than what one walk reads per refill
 *   (the index interval plus a page): a walk re-reads at the next entry start.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import type { Offset } from "../../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES, RECOVERY_CHUNK_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { walkSegmentFile } from "../../src/storage/inspect.ts";
import { newFileRange, Segment, segmentConfig } from "../../src/storage/segment.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { readFileRange } from "../helpers/read-range.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const RECORD_BYTES = 1000; // one record per entry, frame included

/** One record whose entry takes exactly RECORD_BYTES. */
function batchOfEntryBytes(entryBytes: number): Uint8Array {
  let valueBytes = entryBytes;
  while (ENTRY_HEADER_BYTES + batchOfValues(["x".repeat(valueBytes)], 0).length > entryBytes) valueBytes--;
  const batch = batchOfValues(["x".repeat(valueBytes)], 0);
  if (ENTRY_HEADER_BYTES + batch.length !== entryBytes) throw new Error("no value size fits exactly");
  return batch;
}

/** A segment file of `bytes` or a little more, of RECORD_BYTES entries of one record; returns its path. */
function writeSegment(directory: string, bytes: number): string {
  const config = segmentConfig({ writeMode: "file", segmentBytes: bytes + 64 * 1024 });
  const segment = Segment.create(directory, 0 as Offset, config);
  const batch = batchOfEntryBytes(RECORD_BYTES);
  while (segment.sizeBytes < bytes) segment.append(batch);
  segment.close();
  return segment.path;
}

describe("walkSegmentFile on a file that shrinks while it is read", () => {
  // Two chunks at least, so the shrink (at the first progress report) happens between two reads.
  const fileBytes = RECOVERY_CHUNK_BYTES + 2 * 1024 * 1024;
  const recordsInFirstChunk = Math.floor((RECOVERY_CHUNK_BYTES - SEGMENT_HEADER_BYTES) / RECORD_BYTES);

  function walkShrinkingTo(file: string, shrinkTo: number) {
    let reads = 0;
    return walkSegmentFile(file, undefined, () => {
      if (++reads === 1) fs.truncateSync(file, shrinkTo);
      // Before the fix the walk never ended: stop it with a failure instead of hanging the suite.
      if (reads > 100) throw new Error("the walk does not end");
    });
  }

  test("below the position reached: a read of 0 bytes ends the walk", () => {
    using dir = tempDir();
    const file = writeSegment(dir.path, fileBytes);
    const walk = walkShrinkingTo(file, 1024 * 1024);
    expect(walk.recordCount).toBe(recordsInFirstChunk);
    expect(walk.end).toEqual({ kind: "clean" });
    expect(walk.validEndBytes).toBe(SEGMENT_HEADER_BYTES + recordsInFirstChunk * RECORD_BYTES);
  });

  test("inside a record of the next chunk: a torn tail", () => {
    using dir = tempDir();
    const file = writeSegment(dir.path, fileBytes);
    const cutAfterRecords = recordsInFirstChunk + 500;
    const shrinkTo = SEGMENT_HEADER_BYTES + cutAfterRecords * RECORD_BYTES + 10;
    const walk = walkShrinkingTo(file, shrinkTo);
    expect(walk.recordCount).toBe(cutAfterRecords);
    expect(walk.validEndBytes).toBe(shrinkTo - 10);
    expect(walk.end).toMatchObject({ kind: "invalid", reason: expect.stringContaining("cut short") });
  });
});

describe.each(WRITE_MODES.map((mode) => [mode]))(
  "lookups over records larger than a hop's read, %s",
  (mode: WriteMode) => {
    test("read and fileRange find exact entry boundaries", () => {
      using dir = tempDir();
      // A walk reads indexIntervalBytes + 4096 bytes per refill: 24,096 here, below the 30 KB
      // entries; the index stores an entry every 20,000 bytes at most, so walks cross entries.
      const config = segmentConfig({
        writeMode: mode,
        segmentBytes: 4 * 1024 * 1024,
        indexIntervalBytes: 20_000,
      });
      const segment = Segment.create(dir.path, 0 as Offset, config);
      const payloads: string[] = [];
      const starts: number[] = [];
      let position = SEGMENT_HEADER_BYTES;
      for (let i = 0; i < 60; i++) {
        const payload = `${i}:`.padEnd(
          i % 3 === 0 ? 30_000 : 1 + (i % 7) * 500,
          String.fromCharCode(97 + (i % 26)),
        );
        payloads.push(payload);
        starts.push(position);
        const batch = batchOfValues([payload]);
        position += ENTRY_HEADER_BYTES + batch.length;
        segment.append(batch);
      }
      starts.push(position);
      const check = (s: Segment) => {
        const range = newFileRange();
        for (let offset = 0; offset < payloads.length; offset++) {
          const first = valuesOfEntries(s.read(offset, 1).records)[0]!;
          expect(new TextDecoder().decode(first)).toBe(payloads[offset]!);
          for (const maxBytes of [1, 4000, 12_000, 50_000]) {
            s.fileRange(offset, maxBytes, range);
            expect(range.position).toBe(starts[offset]!);
            // The range ends at the last record boundary that fits, but holds at least one record.
            let end = offset + 1;
            while (end < payloads.length && starts[end + 1]! - starts[offset]! <= maxBytes) end++;
            expect(range.recordCount).toBe(end - offset);
            expect(range.lengthBytes).toBe(starts[end]! - starts[offset]!);
            const bytes = readFileRange(range.fd, range.position, range.lengthBytes);
            expect(valuesOfEntries(bytes).map((p) => new TextDecoder().decode(p!))).toEqual(
              payloads.slice(offset, end),
            );
          }
        }
      };
      check(segment);
      segment.close();
      const sealed = Segment.openSealed(segment.path, config, payloads.length as Offset);
      check(sealed);
      sealed.close();
    });
  },
);
