/**
 * The mapped writer's window of written blocks ahead of its position (mapped-segment-writer.ts): it
 * starts small and doubles as the writer crosses it, so a partition costs disk in proportion to what
 * it wrote (it used to reserve 4 MiB with its first record: a 1,024-partition topic with one record
 * each cost 4 GiB), and it never reaches further than the largest window past the data. Measured as
 * allocated blocks (st_blocks) of the segment file, on the temporary directory's file system.
 */

import { expect, test } from "bun:test";
import fs from "node:fs";
import type { Offset } from "../../src/domain/ids.ts";
import { MAPPED_WINDOW_BYTES_MAX, MAPPED_WINDOW_BYTES_MIN } from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { Segment, segmentConfig } from "../../src/storage/segment.ts";
import { tempDir } from "../helpers/temp-dir.ts";

/** Bytes of disk the file holds (st_blocks counts 512-byte units whatever the block size). */
function allocatedBytes(filePath: string): number {
  return fs.statSync(filePath).blocks * 512;
}

test("a mapped segment with one small record holds about one small window of disk, not 4 MiB", () => {
  using dir = tempDir();
  // The default capacity (128 MiB): the file is that long, sparse; only written blocks count.
  const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "mapped" }));
  try {
    segment.append(batchOfValues(["one small record"]));
    const allocated = allocatedBytes(segment.path);
    expect(fs.statSync(segment.path).size).toBe(128 * 1024 * 1024);
    // The window is written (the next stores need no block) ...
    expect(allocated).toBeGreaterThanOrEqual(MAPPED_WINDOW_BYTES_MIN);
    // ... and is about one smallest window: header, record and window, rounded to pages and blocks.
    expect(allocated).toBeLessThanOrEqual(MAPPED_WINDOW_BYTES_MIN + 64 * 1024);
  } finally {
    segment.close();
  }
  // Closing trims the file to its data, which frees the window.
  expect(allocatedBytes(dir.file("00000000000000000000.log"))).toBeLessThanOrEqual(64 * 1024);
});

test("the window doubles as the writer crosses it, and never reaches further than the largest window", () => {
  using dir = tempDir();
  const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "mapped" }));
  try {
    const batch = batchOfValues([new Uint8Array(16 * 1024 - 8).fill(7)]); // 16 KiB per append
    let largestAhead = 0;
    for (let i = 0; i < 1024; i++) {
      // 16 MiB in all
      segment.append(batch);
      const ahead = allocatedBytes(segment.path) - segment.sizeBytes;
      largestAhead = Math.max(largestAhead, ahead);
      expect(ahead).toBeLessThanOrEqual(MAPPED_WINDOW_BYTES_MAX + 64 * 1024);
    }
    // It grew: at some point more than twice the smallest window lay ahead of the data.
    expect(largestAhead).toBeGreaterThan(2 * MAPPED_WINDOW_BYTES_MIN);
    // Grown to the largest window by now (16 MiB is more than every window from 64 KiB to 4 MiB).
    expect(largestAhead).toBeGreaterThanOrEqual(MAPPED_WINDOW_BYTES_MAX);
  } finally {
    segment.close();
  }
});
