/**
 * A full disk on both write paths: appends fail with a typed, retriable ENOSPC IoError, never a crash
 * (on the mapped path a store into an unreserved sparse page on a full file system would raise SIGBUS
 * and kill the process); nothing acknowledged is lost; reads keep working; appends resume once space
 * is freed; and the file recovers to its last whole record.
 *
 * Runs on a 4 MiB tmpfs mounted by the test (needs root); skipped with the reason where that fails.
 * (4 MiB rather than less: the mapped path stops 1 MiB short of full, FREE_SPACE_MARGIN_BYTES.)
 * A tmpfs has no unwritten extents; test/storage/disk-full-loop.test.ts covers ext4 and XFS.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { IoError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { Segment, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { payloadForOffset } from "../helpers/random.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";
import { tempDir } from "../helpers/temp-dir.ts";

if (smallFileSystemUnavailable !== undefined) {
  console.warn(`disk-full tests skipped: ${smallFileSystemUnavailable}`);
}

function batchFrom(firstOffset: number, count: number): Uint8Array {
  return batchOfValues(Array.from({ length: count }, (_, i) => payloadForOffset(firstOffset + i, 3000)));
}

function expectRecords(segment: Segment, count: number): void {
  expect<number>(segment.nextOffset).toBe(count);
  let offset = 0;
  while (offset < count) {
    for (const payload of valuesOfEntries(segment.read(offset, 64 * 1024).records)) {
      expect(
        Buffer.from(payload!).equals(Buffer.from(payloadForOffset(offset, 3000))),
        `record ${offset}`,
      ).toBe(true);
      offset++;
    }
  }
}

describe.each(WRITE_MODES.map((mode) => [mode]))("disk full, %s write path", (mode: WriteMode) => {
  test.skipIf(smallFileSystemUnavailable !== undefined)(
    "ENOSPC is a typed error; data survives; appends resume after space is freed; recovery keeps every record",
    () => {
      using small = mountSmallFileSystem(4 * 1024 * 1024);
      using copies = tempDir();
      // A filler that the test deletes later to "free space".
      fs.writeFileSync(path.join(small.path, "filler"), new Uint8Array(1024 * 1024));
      // Capacity larger than the whole file system: the mapped file is sparse, so only the window of
      // written blocks stands between the writer and a SIGBUS.
      const config = segmentConfig({ writeMode: mode, segmentBytes: 16 * 1024 * 1024 });
      const segment = Segment.create(small.path, 0 as Offset, config);
      let failure: unknown;
      for (let attempt = 0; attempt < 1000 && failure === undefined; attempt++) {
        try {
          segment.append(batchFrom(segment.nextOffset, 8));
        } catch (error) {
          failure = error;
        }
      }
      expect(failure).toBeInstanceOf(IoError);
      expect(failure).toMatchObject({ code: "STORAGE_ERROR", errnoName: "ENOSPC", retriable: true });
      expect((failure as Error).message).toContain(small.path);
      const acknowledged = segment.nextOffset;
      expect(acknowledged).toBeGreaterThan(0);
      // Nothing was published by the failed append; everything before it reads back.
      expectRecords(segment, acknowledged);
      // Still refusing while the disk is full, and still not failed for good.
      expect(() => segment.append(batchFrom(acknowledged, 8))).toThrow(/ENOSPC/);
      fs.unlinkSync(path.join(small.path, "filler"));
      segment.append(batchFrom(acknowledged, 8));
      expect<number>(segment.nextOffset).toBe(acknowledged + 8);
      segment.forceNow();
      // What a crash would leave: the file as it is now, recovered elsewhere.
      const image = path.join(copies.path, segmentFileName(0 as Offset));
      fs.writeFileSync(image, fs.readFileSync(path.join(small.path, segmentFileName(0 as Offset))));
      segment.close();
      for (const filePath of [image, path.join(small.path, segmentFileName(0 as Offset))]) {
        const { segment: reopened, report } = Segment.openForAppend(filePath, config);
        try {
          expect(report.recordCount).toBe(acknowledged + 8);
          expectRecords(reopened, acknowledged + 8);
        } finally {
          reopened.close();
        }
      }
    },
    30_000,
  );
});
