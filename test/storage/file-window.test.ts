/**
 * The `file` writer's zeros ahead of its position (file-segment-writer.ts): an append of a writer
 * that is forced lands on blocks the file already has, so that the force is an overwrite. What users
 * rely on is checked here: the window stays within its bounds and the segment's capacity, only zeros
 * lie past the data, a writer that is not forced and a large append write none, a closed or cleanly
 * closed file is exactly its records, a file that still holds its zeros after a crash reopens at the
 * end of its entries, and a full disk costs the window, never an append.
 */

import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { ENOSPC } from "../../ffi/errno.ts";
import { ioError } from "../../ffi/file.ts";
import { SegmentFullError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import {
  ENTRY_HEADER_BYTES,
  FILE_WINDOW_APPEND_BYTES_MAX,
  FILE_WINDOW_BYTES_MAX,
  FILE_WINDOW_BYTES_MIN,
  FREE_SPACE_MARGIN_BYTES,
} from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { type Disk, realDisk, useDisk } from "../../src/storage/disk.ts";
import { PartitionLog } from "../../src/storage/partition-log.ts";
import { Segment, segmentConfig } from "../../src/storage/segment.ts";
import { FaultyDisk } from "../helpers/faulty-disk.ts";
import { Random } from "../helpers/random.ts";
import { onlyZeros, valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const PAGE = 4096;
const text = (records: Uint8Array) => valuesOf(records).map((value) => new TextDecoder().decode(value));

function fileBytes(filePath: string): Uint8Array {
  return new Uint8Array(fs.readFileSync(filePath));
}

/** An append and its force, as under the `force` policy. */
function appendForced(segment: Segment, values: (string | Uint8Array)[]): void {
  segment.append(batchOfValues(values));
  segment.forceNow();
}

function fileLength(segment: Segment): number {
  return fs.statSync(segment.path).size;
}

function onlyZerosFrom(bytes: Uint8Array, from: number): boolean {
  return onlyZeros(bytes, from, bytes.length);
}

test("a forced file segment keeps zeros ahead of its data: the smallest window first, growing to the largest, never past its capacity", () => {
  using dir = tempDir();
  const segmentBytes = 8 * 1024 * 1024;
  const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "file", segmentBytes }));
  try {
    // No force before the first append: it grows the file itself.
    appendForced(segment, ["the first record"]);
    expect(fileLength(segment)).toBe(segment.sizeBytes);
    appendForced(segment, ["one small record"]);
    const first = fileBytes(segment.path);
    // The file reaches a smallest window past the record, page-rounded, and holds only zeros there.
    expect(first.length).toBeGreaterThanOrEqual(segment.sizeBytes + FILE_WINDOW_BYTES_MIN);
    expect(first.length).toBeLessThan(segment.sizeBytes + FILE_WINDOW_BYTES_MIN + PAGE);
    expect(onlyZerosFrom(first, segment.sizeBytes)).toBe(true);

    const value = new Uint8Array(16 * 1024 - 8).fill(7); // ~16 KiB per append
    let largestAhead = 0;
    for (;;) {
      try {
        appendForced(segment, [value]);
      } catch (error) {
        if (!(error instanceof SegmentFullError)) throw error;
        break; // full: the loop ran the segment to its capacity
      }
      const length = fileLength(segment);
      const ahead = length - segment.sizeBytes;
      largestAhead = Math.max(largestAhead, ahead);
      expect(ahead).toBeGreaterThanOrEqual(0);
      expect(ahead).toBeLessThan(FILE_WINDOW_BYTES_MAX + PAGE);
      expect(length).toBeLessThanOrEqual(segmentBytes);
    }
    // Grown to the largest window on the way (8 MiB is more than every window from 64 KiB to 1 MiB).
    expect(largestAhead).toBeGreaterThanOrEqual(FILE_WINDOW_BYTES_MAX);
    expect(onlyZerosFrom(fileBytes(segment.path), segment.sizeBytes)).toBe(true);
  } finally {
    segment.close();
  }
});

test("a writer that is not forced writes no zeros: the file is its records, until forces come", () => {
  using dir = tempDir();
  const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "file" }));
  try {
    for (let i = 0; i < 100; i++) {
      segment.append(batchOfValues([`record ${i}`]));
      expect(fileLength(segment)).toBe(segment.sizeBytes);
    }
    appendForced(segment, ["forced from here on"]);
    appendForced(segment, ["so zeros pay"]);
    expect(fileLength(segment)).toBeGreaterThanOrEqual(segment.sizeBytes + FILE_WINDOW_BYTES_MIN);
    // Forced now and then (as under `interval`): the window is used up, and the next crossing
    // without a force since the last one writes no zeros.
    const windowEnd = fileLength(segment);
    const value = new Uint8Array(4096).fill(3);
    while (segment.sizeBytes + 4200 <= windowEnd) segment.append(batchOfValues([value]));
    segment.append(batchOfValues([value])); // crosses: a force came since the last crossing
    const extended = fileLength(segment);
    expect(extended).toBeGreaterThan(windowEnd);
    while (segment.sizeBytes + 4200 <= extended) segment.append(batchOfValues([value]));
    segment.append(batchOfValues([value])); // crosses again, no force since the last crossing
    expect(fileLength(segment)).toBe(segment.sizeBytes);
  } finally {
    segment.close();
  }
});

test("an append larger than FILE_WINDOW_APPEND_BYTES_MAX grows the file itself; a small one gets a window again", () => {
  using dir = tempDir();
  const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "file" }));
  try {
    appendForced(segment, ["small"]);
    appendForced(segment, [new Uint8Array(FILE_WINDOW_APPEND_BYTES_MAX).fill(1)]);
    expect(fileLength(segment)).toBe(segment.sizeBytes);
    appendForced(segment, ["small"]);
    expect(fileLength(segment)).toBeGreaterThanOrEqual(segment.sizeBytes + FILE_WINDOW_BYTES_MIN);
    expect(valuesOf(segment.read(0, 1 << 20).records).map((value) => value.length)).toEqual([
      5,
      FILE_WINDOW_APPEND_BYTES_MAX,
      5,
    ]);
  } finally {
    segment.close();
  }
});

test("the 32 KiB rule is exact: an append of FILE_WINDOW_APPEND_BYTES_MAX framed bytes gets zeros, one byte more does not", () => {
  using dir = tempDir();
  // The value length whose framed entry is exactly the limit (the record's length varint grows).
  const framed = (valueBytes: number) =>
    ENTRY_HEADER_BYTES + batchOfValues([new Uint8Array(valueBytes)]).length;
  let valueBytes = FILE_WINDOW_APPEND_BYTES_MAX;
  while (framed(valueBytes) > FILE_WINDOW_APPEND_BYTES_MAX) valueBytes--;
  expect(framed(valueBytes)).toBe(FILE_WINDOW_APPEND_BYTES_MAX);
  expect(framed(valueBytes + 1)).toBe(FILE_WINDOW_APPEND_BYTES_MAX + 1);
  for (const [bytes, zeros] of [
    [valueBytes, true],
    [valueBytes + 1, false],
  ] as const) {
    fs.mkdirSync(path.join(dir.path, String(bytes)));
    const segment = Segment.create(
      path.join(dir.path, String(bytes)),
      0 as Offset,
      segmentConfig({ writeMode: "file" }),
    );
    try {
      appendForced(segment, ["small"]);
      appendForced(segment, [new Uint8Array(bytes).fill(1)]);
      if (zeros) expect(fileLength(segment)).toBeGreaterThan(segment.sizeBytes);
      else expect(fileLength(segment)).toBe(segment.sizeBytes);
    } finally {
      segment.close();
    }
  }
});

test("closing trims the file to its records; a clean close of the log leaves the active file exactly its data", () => {
  using dir = tempDir();
  const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "file" }));
  appendForced(segment, ["a"]);
  appendForced(segment, ["b"]);
  const sizeBytes = segment.sizeBytes;
  expect(fileLength(segment)).toBeGreaterThan(sizeBytes);
  segment.close();
  expect(fs.statSync(path.join(dir.path, "00000000000000000000.log")).size).toBe(sizeBytes);

  const logDir = path.join(dir.path, "log");
  const log = PartitionLog.open(logDir, segmentConfig({ writeMode: "file" }));
  log.append(batchOfValues(["c", "d"]));
  log.forceNow();
  log.append(batchOfValues(["e"]));
  const active = path.join(logDir, "00000000000000000000.log");
  expect(fs.statSync(active).size).toBeGreaterThan(log.sizeBytes);
  const logBytes = log.sizeBytes;
  log.close();
  expect(fs.statSync(active).size).toBe(logBytes);
});

test("a clean close leaves nothing of the file unforced: the window is cut before the last force", () => {
  using dir = tempDir();
  const faulty = new FaultyDisk(realDisk, new Random(1), 0); // no faults: only its sync bookkeeping
  const restore = useDisk(faulty);
  try {
    const log = PartitionLog.open(dir.path, segmentConfig({ writeMode: "file" }));
    log.append(batchOfValues(["a"]));
    log.forceNow();
    log.append(batchOfValues(["b"]));
    const active = path.join(dir.path, "00000000000000000000.log");
    expect(fs.statSync(active).size).toBeGreaterThan(log.sizeBytes);
    log.close();
    expect(fs.statSync(active).size).toBe(log.sizeBytes);
    // What a power loss now could take: no write or cut of the segment that no fdatasync covered.
    expect(
      [...faulty.unsynced().keys()].filter((key) => key.startsWith("data ") && key.endsWith(".log")),
    ).toEqual([]);
  } finally {
    restore();
  }
});

test("a file that still holds its zeros after a crash reopens at the end of its entries and appends there", () => {
  using dir = tempDir();
  const config = segmentConfig({ writeMode: "file" });
  const segment = Segment.create(dir.path, 0 as Offset, config);
  appendForced(segment, ["before"]);
  appendForced(segment, ["the crash"]);
  // The file as a crash would leave it: records, then the window's zeros (no trim ran).
  const image = fileBytes(segment.path);
  const sizeBytes = segment.sizeBytes;
  segment.close();
  expect(image.length).toBeGreaterThan(sizeBytes);
  const crashed = path.join(dir.path, "crashed");
  fs.mkdirSync(crashed);
  const crashedFile = path.join(crashed, "00000000000000000000.log");
  fs.writeFileSync(crashedFile, image);

  const { segment: reopened, report } = Segment.openForAppend(crashedFile, config);
  try {
    expect(report.stop).toBe("zero-length");
    expect(reopened.nextOffset as number).toBe(2);
    expect(reopened.sizeBytes).toBe(sizeBytes);
    reopened.append(batchOfValues(["after"]));
    expect(text(reopened.read(0, 1 << 20).records)).toEqual(["before", "the crash", "after"]);
  } finally {
    reopened.close();
  }
});

/**
 * Runs `body` on a new `file` segment over the real disk with `overrides`, then closes the segment
 * and puts the disk back.
 */
function onFileSegment(overrides: Partial<Disk>, body: (segment: Segment) => void): void {
  using dir = tempDir();
  const restore = useDisk({ ...realDisk, ...overrides });
  try {
    const segment = Segment.create(dir.path, 0 as Offset, segmentConfig({ writeMode: "file" }));
    try {
      body(segment);
    } finally {
      segment.close();
    }
  } finally {
    restore();
  }
}

/** A write that meets a disk filling up meanwhile: half of it lands, then ENOSPC. */
function halfThenFull(
  fd: number,
  source: Uint8Array,
  start: number,
  end: number,
  position: number,
  filePath?: string,
): never {
  realDisk.pwriteAll(fd, source, start, start + Math.floor((end - start) / 2), position, filePath);
  throw ioError("pwrite", ENOSPC, filePath);
}

test("a full disk costs the window, never an append that fits without one", () => {
  let refuseZeros = true;
  let refused = 0;
  // ENOSPC for the zeros only (a write of records is never all zeros), after half of them landed.
  const pwriteAll: Disk["pwriteAll"] = (fd, source, start, end, position, filePath) => {
    if (refuseZeros && onlyZeros(source, start, end)) {
      refused++;
      halfThenFull(fd, source, start, end, position, filePath);
    }
    realDisk.pwriteAll(fd, source, start, end, position, filePath);
  };
  onFileSegment({ pwriteAll }, (segment) => {
    appendForced(segment, ["forced"]);
    expect(refused).toBe(0);
    appendForced(segment, ["fits without a window"]);
    expect(refused).toBe(1);
    // Nothing but the records: the zeros that landed before the refusal are cut, so a seal
    // (which trusts an unpadded file as forced) leaves no zeros behind in a sealed segment.
    expect(fileLength(segment)).toBe(segment.sizeBytes);
    refuseZeros = false;
    appendForced(segment, ["the disk has room again"]);
    expect(fileLength(segment)).toBeGreaterThan(segment.sizeBytes);
    expect(text(segment.read(0, 1 << 20).records)).toEqual([
      "forced",
      "fits without a window",
      "the disk has room again",
    ]);
  });
});

test("a full disk under a record write inside the window cuts it back and refuses only that append", () => {
  let refuseRecords = false;
  const pwriteAll: Disk["pwriteAll"] = (fd, source, start, end, position, filePath) => {
    if (refuseRecords && !onlyZeros(source, start, end) && filePath?.endsWith(".log"))
      halfThenFull(fd, source, start, end, position, filePath);
    realDisk.pwriteAll(fd, source, start, end, position, filePath);
  };
  onFileSegment({ pwriteAll }, (segment) => {
    appendForced(segment, ["one"]);
    appendForced(segment, ["two"]);
    expect(fileLength(segment)).toBeGreaterThan(segment.sizeBytes); // inside a window now
    refuseRecords = true;
    expect(() => segment.append(batchOfValues(["refused: the disk is full"]))).toThrow("ENOSPC");
    // Cut back to the records: the window went with the refused append's half.
    expect(fileLength(segment)).toBe(segment.sizeBytes);
    refuseRecords = false;
    segment.forceNow(); // makes the cut durable (it is a change no force covered yet)
    appendForced(segment, ["three"]);
    // A window again: the writer knows its file ends at its records.
    expect(fileLength(segment)).toBeGreaterThan(segment.sizeBytes);
    expect(text(segment.read(0, 1 << 20).records)).toEqual(["one", "two", "three"]);
  });
});

test("no window where it would leave less than FREE_SPACE_MARGIN_BYTES free, nor when statvfs fails", () => {
  let available: number | "fails" = FREE_SPACE_MARGIN_BYTES + FILE_WINDOW_BYTES_MIN / 2;
  const availableBytes: Disk["availableBytes"] = (_fd, filePath) => {
    if (available === "fails") throw ioError("fstatvfs", 5, filePath);
    return available;
  };
  onFileSegment({ availableBytes }, (segment) => {
    appendForced(segment, ["one"]);
    appendForced(segment, ["two"]);
    expect(fileLength(segment)).toBe(segment.sizeBytes);
    available = "fails";
    appendForced(segment, ["three"]); // a speed-up is not worth stopping the writer for
    expect(fileLength(segment)).toBe(segment.sizeBytes);
    available = FREE_SPACE_MARGIN_BYTES + 64 * FILE_WINDOW_BYTES_MIN;
    appendForced(segment, ["four"]);
    expect(fileLength(segment)).toBeGreaterThan(segment.sizeBytes);
    expect(text(segment.read(0, 1 << 20).records)).toEqual(["one", "two", "three", "four"]);
  });
});
