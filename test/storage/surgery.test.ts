/**
 * Byte surgery on closed segments, then recovery, on both write paths.
 *
 * Method: write N records with known payloads, close, take the file's bytes, damage a copy in a
 * specific way, open it for append and compare what survived with the model. The property every
 * case checks is DESIGN invariant 5: recovery keeps exactly the valid prefix (every record before
 * the first damaged one, byte for byte) and nothing behind the cut ever comes back, even after new
 * appends and another recovery.
 *
 * Two shapes of a torn tail are staged: a file cut at a byte (what a crash leaves on the file path,
 * where the file length is the end of the log) and a capacity-sized file zeroed from a byte on (what
 * a crash leaves on the mapped path, where pages that never reached the disk read as zeros).
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Offset } from "../../src/domain/ids.ts";
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { frameRecords } from "../../src/record/batch-builder.ts";
import { payloadsOf } from "../../src/record/codec.ts";
import { Segment, type SegmentConfig, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const SEED = testSeed();
const BASE = 0 as Offset;
const CAPACITY_BYTES = 64 * 1024;
const FILE_NAME = segmentFileName(BASE);

interface Pristine {
  bytes: Uint8Array;
  payloads: Uint8Array[];
  /** positions[i] = where record i starts; positions[N] = end of log. */
  positions: number[];
}

function writePristine(dir: string, config: SegmentConfig, random: Random, count: number): Pristine {
  const segment = Segment.create(dir, BASE, config);
  const payloads: Uint8Array[] = [];
  const positions: number[] = [SEGMENT_HEADER_BYTES];
  try {
    while (payloads.length < count) {
      const batch = Array.from({ length: random.int(1, 4) }, () => random.bytes(random.int(1, 60)));
      segment.append(frameRecords(batch), true);
      for (const payload of batch) {
        payloads.push(payload);
        positions.push(positions.at(-1)! + RECORD_HEADER_BYTES + payload.length);
      }
    }
  } finally {
    segment.close();
  }
  const bytes = new Uint8Array(fs.readFileSync(path.join(dir, FILE_NAME)));
  return { bytes, payloads, positions };
}

/** Records that lie completely below `position`. */
function recordsBefore(pristine: Pristine, position: number): number {
  let count = 0;
  while (count < pristine.payloads.length && pristine.positions[count + 1]! <= position) count++;
  return count;
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

/** Opens for append and checks that exactly the first `expected` records survived, byte for byte. */
function recoverAndCheck(
  filePath: string,
  config: SegmentConfig,
  pristine: Pristine,
  expected: number,
  what: string,
) {
  const { segment, report } = Segment.openForAppend(filePath, config);
  try {
    expect(report.recordCount, what).toBe(expected);
    expect<number>(segment.nextOffset, what).toBe(BASE + expected);
    expect(segment.sizeBytes, what).toBe(pristine.positions[expected]!);
    if (expected > 0) {
      const read = segment.read(BASE, CAPACITY_BYTES);
      const payloads = payloadsOf(read.records);
      expect(payloads.length, what).toBe(expected);
      for (let i = 0; i < expected; i++) {
        expect(
          Buffer.from(payloads[i]!).equals(Buffer.from(pristine.payloads[i]!)),
          `${what}: record ${i}`,
        ).toBe(true);
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

    test("cut at every byte inside the last records, and at random bytes: exactly the valid prefix survives", () => {
      using root = tempDir();
      const random = new Random(SEED);
      const pristine = writePristine(root.path, config, random, 40);
      const end = pristine.positions.at(-1)!;
      const cuts: number[] = [];
      for (let at = pristine.positions[pristine.payloads.length - 3]!; at < end; at++) cuts.push(at);
      for (let i = 0; i < 20; i++) cuts.push(random.int(SEGMENT_HEADER_BYTES, end - 1));
      for (const cut of cuts) {
        const expected = recordsBefore(pristine, cut);
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
      const starts = [pristine.positions[pristine.payloads.length - 2]!, end - 1, end];
      for (let i = 0; i < 15; i++) starts.push(random.int(SEGMENT_HEADER_BYTES, end - 1));
      for (let at = pristine.positions.at(-2)!; at < end; at++) starts.push(at);
      for (const start of starts) {
        // Zeroing changes nothing where the payload already held zeros (seed 1352786543 ended the
        // last record with a zero byte): the damage starts at the first byte that really changes.
        let changed = start;
        while (changed < pristine.bytes.length && pristine.bytes[changed] === 0) changed++;
        const expected = recordsBefore(pristine, changed);
        recoverAndCheck(
          stage(root.path, zeroFrom(pristine.bytes, start)),
          config,
          pristine,
          expected,
          `zeroed from ${start}`,
        );
      }
    }, 60_000);

    test("a flipped byte in a random record: every record before it survives, nothing from it on", () => {
      using root = tempDir();
      const random = new Random(SEED + 2);
      const pristine = writePristine(root.path, config, random, 40);
      for (let trial = 0; trial < 40; trial++) {
        const victim = random.int(0, pristine.payloads.length - 1);
        const start = pristine.positions[victim]!;
        const at = random.int(start, pristine.positions[victim + 1]! - 1);
        const damaged = pristine.bytes.slice();
        damaged[at]! ^= 1 << random.int(0, 7);
        recoverAndCheck(
          stage(root.path, damaged),
          config,
          pristine,
          victim,
          `flip at ${at} in record ${victim}`,
        );
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
        recoverAndCheck(
          filePath,
          config,
          pristine,
          pristine.payloads.length,
          `${garbageBytes} garbage bytes`,
        );
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
      segment.append(frameRecords([pristine.payloads[victim]!]), true);
      const crashImage = new Uint8Array(fs.readFileSync(filePath));
      segment.close();
      const { segment: again, report } = Segment.openForAppend(stage(root.path, crashImage), config);
      again.close();
      expect(report.recordCount).toBe(victim + 1);
    });

    test("resurrection: after a cut, a new record of exactly the damaged one's size does not bring back the old tail", () => {
      using root = tempDir();
      const random = new Random(SEED + 5);
      const pristine = writePristine(root.path, config, random, 30);
      const victim = 10;
      for (const layout of ["trimmed", "capacity-sized"] as const) {
        const damaged =
          layout === "trimmed" ? pristine.bytes.slice() : zeroFrom(pristine.bytes, pristine.bytes.length);
        // Break record `victim`'s CRC. Records victim+1.. remain intact on disk behind it.
        damaged[pristine.positions[victim]! + RECORD_HEADER_BYTES]! ^= 0xff;
        recoverAndCheck(stage(root.path, damaged), config, pristine, victim, `${layout}: first recovery`);
        // A fresh copy: closing after recovery trims a mapped file, which would hide a missing cut.
        const filePath = stage(root.path, damaged);
        // A new record exactly as long as the victim: if the old bytes after it survived the cut,
        // a scan would continue straight into the old record victim+1.
        // The file is then taken as a crash would leave it: while still open (close trims a mapped file).
        const { segment } = Segment.openForAppend(filePath, config);
        const replacement = new Uint8Array(pristine.payloads[victim]!.length).fill(0x55);
        expect<number>(segment.append(frameRecords([replacement]), true)).toBe(BASE + victim);
        const crashImage = new Uint8Array(fs.readFileSync(filePath));
        segment.close();
        const { segment: again, report } = Segment.openForAppend(stage(root.path, crashImage), config);
        try {
          expect(report.recordCount, layout).toBe(victim + 1);
          expect<number>(again.nextOffset, layout).toBe(BASE + victim + 1);
          const last = payloadsOf(again.read(BASE + victim, 1000).records);
          expect(last.length).toBe(1);
          expect(Buffer.from(last[0]!).equals(Buffer.from(replacement))).toBe(true);
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
      expect<number>(segment.append(frameRecords([fresh]), true)).toBe(BASE + 20);
      expect(segment.positionOf(BASE + 20)).toBe(pristine.positions[20]!);
      segment.close();
      const onDisk = fs.readFileSync(filePath);
      // The first 20 records are exactly the pristine bytes; the new one follows them.
      expect(
        Buffer.from(onDisk.subarray(0, pristine.positions[20]!)).equals(
          Buffer.from(pristine.bytes.subarray(0, pristine.positions[20]!)),
        ),
      ).toBe(true);
      const after = payloadsOf(onDisk.subarray(pristine.positions[20]!));
      expect(after.length).toBe(1);
      expect(Buffer.from(after[0]!).equals(Buffer.from(fresh))).toBe(true);
    });
  },
);
