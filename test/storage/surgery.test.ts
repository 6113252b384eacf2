/**
 * Byte surgery on closed segments, then recovery, on both write paths.
 *
 * Method: write N entries (batches of 1-4 records) with known payloads, close, take the file's bytes,
 * damage a copy in a specific way, open it for append and compare what survived with the model. The
 * property every case checks is DESIGN invariant 5 at entry granularity: recovery keeps exactly the
 * valid prefix (every entry before the first damaged one, byte for byte), a damaged batch is cut
 * whole (none of its records survive, wherever the damage lies: frame, stamped offset, batch header
 * or records), and nothing behind the cut ever comes back, even after new appends and another
 * recovery.
 *
 * Two shapes of a torn tail are staged: a file cut at a byte (what a crash leaves on the file path,
 * where the file length is the end of the log) and a capacity-sized file zeroed from a byte on (what
 * a crash leaves on the mapped path, where pages that never reached the disk read as zeros).
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Offset } from "../../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { RECORDS_OFFSET } from "../../src/record/batch.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { Segment, type SegmentConfig, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const SEED = testSeed();
const BASE = 0 as Offset;
const CAPACITY_BYTES = 64 * 1024;
const FILE_NAME = segmentFileName(BASE);

const TIMESTAMP_MS = 1_700_000_000_000;

interface Pristine {
  bytes: Uint8Array;
  /** entries[i] = the payloads of entry (batch) i. */
  entries: Uint8Array[][];
  /** positions[i] = where entry i starts; positions[N] = end of log. */
  positions: number[];
}

function writePristine(dir: string, config: SegmentConfig, random: Random, count: number): Pristine {
  const segment = Segment.create(dir, BASE, config);
  const entries: Uint8Array[][] = [];
  const positions: number[] = [SEGMENT_HEADER_BYTES];
  try {
    while (entries.length < count) {
      const batch = Array.from({ length: random.int(1, 4) }, () => random.bytes(random.int(1, 60)));
      const bare = batchOfValues(batch, TIMESTAMP_MS);
      segment.append(bare);
      entries.push(batch);
      positions.push(positions.at(-1)! + ENTRY_HEADER_BYTES + bare.length);
    }
  } finally {
    segment.close();
  }
  const bytes = new Uint8Array(fs.readFileSync(path.join(dir, FILE_NAME)));
  return { bytes, entries, positions };
}

/** Entries that lie completely below `position`. */
function entriesBefore(pristine: Pristine, position: number): number {
  let count = 0;
  while (count < pristine.entries.length && pristine.positions[count + 1]! <= position) count++;
  return count;
}

/** The records of the first `entries` entries. */
function recordsOf(pristine: Pristine, entries: number): Uint8Array[] {
  return pristine.entries.slice(0, entries).flat();
}

let caseNumber = 0;

/** Writes `bytes` as the segment file of a fresh directory under `root`; returns its path. */
function stage(root: string, bytes: Uint8Array): string {
  const dir = path.join(root, `case-${caseNumber++}`);
  fs.mkdirSync(dir);
  const filePath = path.join(dir, FILE_NAME);
  fs.writeFileSync(filePath, bytes);
  return filePath;
}

/**
 * Opens for append and checks that exactly the first `expectedEntries` entries survived, byte for
 * byte: all of their records and none of a later entry's.
 */
function recoverAndCheck(
  filePath: string,
  config: SegmentConfig,
  pristine: Pristine,
  expectedEntries: number,
  what: string,
) {
  const { segment, report } = Segment.openForAppend(filePath, config);
  const expected = recordsOf(pristine, expectedEntries);
  try {
    expect(report.recordCount, what).toBe(expected.length);
    expect<number>(segment.nextOffset, what).toBe(BASE + expected.length);
    expect(segment.sizeBytes, what).toBe(pristine.positions[expectedEntries]!);
    if (expected.length > 0) {
      const read = segment.read(BASE, CAPACITY_BYTES);
      const payloads = valuesOfEntries(read.records);
      expect(payloads.length, what).toBe(expected.length);
      for (let i = 0; i < expected.length; i++) {
        expect(Buffer.from(payloads[i]!).equals(Buffer.from(expected[i]!)), `${what}: record ${i}`).toBe(
          true,
        );
      }
    }
  } finally {
    segment.close();
  }
}

function zeroFrom(bytes: Uint8Array, position: number): Uint8Array {
  const padded = new Uint8Array(CAPACITY_BYTES);
  padded.set(bytes.subarray(0, position));
  return padded;
}

describe.each(WRITE_MODES.map((mode) => [mode]))(
  `byte surgery, %s write path (seed ${SEED})`,
  (mode: WriteMode) => {
    const config = segmentConfig({ writeMode: mode, segmentBytes: CAPACITY_BYTES, indexIntervalBytes: 128 });

    test("cut at every byte inside the last entries, and at random bytes: exactly the valid prefix survives", () => {
      using root = tempDir();
      const random = new Random(SEED);
      const pristine = writePristine(root.path, config, random, 40);
      const end = pristine.positions.at(-1)!;
      const cuts: number[] = [];
      for (let at = pristine.positions[pristine.entries.length - 3]!; at < end; at++) cuts.push(at);
      for (let i = 0; i < 20; i++) cuts.push(random.int(SEGMENT_HEADER_BYTES, end - 1));
      for (const cut of cuts) {
        const expected = entriesBefore(pristine, cut);
        recoverAndCheck(
          stage(root.path, pristine.bytes.subarray(0, cut)),
          config,
          pristine,
          expected,
          `cut at ${cut}`,
        );
      }
    }, 60_000);

    test("zeroed from a byte on in a capacity-sized file (a torn mapped write): the valid prefix survives", () => {
      using root = tempDir();
      const random = new Random(SEED + 1);
      const pristine = writePristine(root.path, config, random, 40);
      const end = pristine.positions.at(-1)!;
      const starts = [pristine.positions[pristine.entries.length - 2]!, end - 1, end];
      for (let i = 0; i < 15; i++) starts.push(random.int(SEGMENT_HEADER_BYTES, end - 1));
      for (let at = pristine.positions.at(-2)!; at < end; at++) starts.push(at);
      for (const start of starts) {
        // Zeroing changes nothing where the payload already held zeros (seed 1352786543 ended the
        // last record with a zero byte): the damage starts at the first byte that really changes.
        let changed = start;
        while (changed < pristine.bytes.length && pristine.bytes[changed] === 0) changed++;
        const expected = entriesBefore(pristine, changed);
        recoverAndCheck(
          stage(root.path, zeroFrom(pristine.bytes, start)),
          config,
          pristine,
          expected,
          `zeroed from ${start}`,
        );
      }
    }, 60_000);

    test("a flipped byte in a random entry: every entry before it survives, none of its records, nothing after", () => {
      using root = tempDir();
      const random = new Random(SEED + 2);
      const pristine = writePristine(root.path, config, random, 40);
      for (let trial = 0; trial < 40; trial++) {
        const victim = random.int(0, pristine.entries.length - 1);
        const start = pristine.positions[victim]!;
        const at = random.int(start, pristine.positions[victim + 1]! - 1);
        const damaged = pristine.bytes.slice();
        damaged[at]! ^= 1 << random.int(0, 7);
        recoverAndCheck(
          stage(root.path, damaged),
          config,
          pristine,
          victim,
          `flip at ${at} in entry ${victim}`,
        );
      }
    });

    test("damage in each part of a multi-record entry (frame, stamped offset, header, last record) cuts the whole batch", () => {
      using root = tempDir();
      const random = new Random(SEED + 7);
      const pristine = writePristine(root.path, config, random, 30);
      let victim = 15;
      while (pristine.entries[victim]!.length < 2) victim++;
      const start = pristine.positions[victim]!;
      const end = pristine.positions[victim + 1]!;
      const batch = start + ENTRY_HEADER_BYTES;
      const places: [string, number][] = [
        ["frame length", start + 3],
        ["frame CRC", start + 5],
        ["stamped BaseOffset", batch + 7],
        ["PartitionLeaderEpoch", batch + 12],
        ["batch CRC", batch + 18],
        ["RecordCount", batch + 60],
        ["first record", batch + RECORDS_OFFSET + 2],
        ["last byte of the last record", end - 1],
      ];
      for (const [what, at] of places) {
        const damaged = pristine.bytes.slice();
        damaged[at]! ^= 0x10;
        recoverAndCheck(stage(root.path, damaged), config, pristine, victim, what);
      }
    });

    test("garbage after the end, short and long, is cut; every record survives", () => {
      using root = tempDir();
      const random = new Random(SEED + 3);
      const pristine = writePristine(root.path, config, random, 20);
      for (const garbageBytes of [1, 3, 4, 7, 8, 9, 13, 100, 4097]) {
        const garbage = random.bytes(garbageBytes);
        garbage[0] = 0x7f; // a nonzero first byte, so it is not read as the end-of-log marker
        const damaged = new Uint8Array(pristine.bytes.length + garbageBytes);
        damaged.set(pristine.bytes);
        damaged.set(garbage, pristine.bytes.length);
        const filePath = stage(root.path, damaged);
        recoverAndCheck(filePath, config, pristine, pristine.entries.length, `${garbageBytes} garbage bytes`);
      }
    });

    test("a zero length in the middle ends the log there; later records never come back", () => {
      using root = tempDir();
      const random = new Random(SEED + 4);
      const pristine = writePristine(root.path, config, random, 30);
      const victim = 12;
      const damaged = pristine.bytes.slice();
      damaged.fill(0, pristine.positions[victim]!, pristine.positions[victim]! + 4);
      recoverAndCheck(stage(root.path, damaged), config, pristine, victim, "zero length");
      // A fresh copy: closing after recovery trims a mapped file, which would hide a missing cut.
      const filePath = stage(root.path, damaged);
      // Append one record and take the file as a crash would leave it (before close, which trims a
      // mapped file); recover that image: the old records behind the hole must stay gone.
      const { segment } = Segment.openForAppend(filePath, config);
      segment.append(batchOfValues(pristine.entries[victim]!, TIMESTAMP_MS));
      const crashImage = new Uint8Array(fs.readFileSync(filePath));
      segment.close();
      const { segment: again, report } = Segment.openForAppend(stage(root.path, crashImage), config);
      again.close();
      expect(report.recordCount).toBe(recordsOf(pristine, victim + 1).length);
    });

    test("resurrection: after a cut, a new entry of exactly the damaged one's size does not bring back the old tail", () => {
      using root = tempDir();
      const random = new Random(SEED + 5);
      const pristine = writePristine(root.path, config, random, 30);
      const victim = 10;
      for (const layout of ["trimmed", "capacity-sized"] as const) {
        const damaged =
          layout === "trimmed" ? pristine.bytes.slice() : zeroFrom(pristine.bytes, pristine.bytes.length);
        // Break entry `victim`'s CRC. Entries victim+1.. remain intact on disk behind it.
        damaged[pristine.positions[victim]! + ENTRY_HEADER_BYTES + 30]! ^= 0xff;
        recoverAndCheck(stage(root.path, damaged), config, pristine, victim, `${layout}: first recovery`);
        // A fresh copy: closing after recovery trims a mapped file, which would hide a missing cut.
        const filePath = stage(root.path, damaged);
        // A new entry exactly as long as the victim (same record count and sizes, same timestamp):
        // if the old bytes after it survived the cut, a scan would continue straight into the old
        // entry victim+1 (whose stamped offsets would even continue the new one's).
        // The file is then taken as a crash would leave it: while still open (close trims a mapped file).
        const { segment } = Segment.openForAppend(filePath, config);
        const replacement = pristine.entries[victim]!.map((payload) =>
          new Uint8Array(payload.length).fill(0x55),
        );
        const replacementBatch = batchOfValues(replacement, TIMESTAMP_MS);
        expect(ENTRY_HEADER_BYTES + replacementBatch.length).toBe(
          pristine.positions[victim + 1]! - pristine.positions[victim]!,
        );
        const before = recordsOf(pristine, victim).length;
        expect<number>(segment.append(replacementBatch)).toBe(BASE + before);
        const crashImage = new Uint8Array(fs.readFileSync(filePath));
        segment.close();
        const { segment: again, report } = Segment.openForAppend(stage(root.path, crashImage), config);
        try {
          expect(report.recordCount, layout).toBe(before + replacement.length);
          expect<number>(again.nextOffset, layout).toBe(BASE + before + replacement.length);
          const last = valuesOfEntries(again.read(BASE + before, 1000).records);
          expect(last.length).toBe(replacement.length);
          for (let i = 0; i < replacement.length; i++)
            expect(Buffer.from(last[i]!).equals(Buffer.from(replacement[i]!))).toBe(true);
        } finally {
          again.close();
        }
      }
    });

    test("the first append after recovery lands at the end; the start of the log is untouched", () => {
      using root = tempDir();
      const random = new Random(SEED + 6);
      const pristine = writePristine(root.path, config, random, 25);
      const cut = pristine.positions[20]! + 5;
      const filePath = stage(root.path, pristine.bytes.subarray(0, cut));
      const { segment } = Segment.openForAppend(filePath, config);
      const fresh = random.bytes(33);
      const before = recordsOf(pristine, 20).length;
      expect<number>(segment.append(batchOfValues([fresh]))).toBe(BASE + before);
      expect(segment.positionOf(BASE + before)).toBe(pristine.positions[20]!);
      segment.close();
      const onDisk = fs.readFileSync(filePath);
      // The first 20 entries are exactly the pristine bytes; the new one follows them.
      expect(
        Buffer.from(onDisk.subarray(0, pristine.positions[20]!)).equals(
          Buffer.from(pristine.bytes.subarray(0, pristine.positions[20]!)),
        ),
      ).toBe(true);
      const after = valuesOfEntries(onDisk.subarray(pristine.positions[20]!));
      expect(after.length).toBe(1);
      expect(Buffer.from(after[0]!).equals(Buffer.from(fresh))).toBe(true);
    });
  },
);
