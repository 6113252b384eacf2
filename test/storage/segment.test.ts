/**
 * One suite over both write paths with the same assertions (DESIGN invariant 8): whatever the path,
 * appends round-trip, offsets and index lookups agree with a simple model, a full segment refuses
 * without writing, a reopened segment continues exactly at its end, and reads see only whole
 * entries, starting with the entry that contains the offset asked for (format 2: one entry per
 * batch). Randomized parts print their seed; BOOBLIK_SEED replays them.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { CorruptRecordError, RecordTooLargeError, SegmentFullError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { decodeBatch, RECORDS_OFFSET } from "../../src/record/batch.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { newFileRange, Segment, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const BASE = 1000 as Offset;
// One seed for the file, printed in every test name so that a failure names it; BOOBLIK_SEED replays.
const SEED = testSeed();

/**
 * A model of what a segment should hold: payloads by relative offset, and per offset the position
 * and first offset of the entry (batch) holding it.
 */
class Model {
  payloads: Uint8Array[] = [];
  /** Per relative offset: where its entry starts. */
  positions: number[] = [];
  /** Per relative offset: the relative offset of its entry's first record. */
  entryStarts: number[] = [];
  end = SEGMENT_HEADER_BYTES;
  /** Appends `batch` as one entry; returns the bare batch to append. */
  add(batch: Uint8Array[]): Uint8Array {
    const bare = batchOfValues(batch, 1_700_000_000_000);
    const first = this.payloads.length;
    for (const payload of batch) {
      this.payloads.push(payload);
      this.positions.push(this.end);
      this.entryStarts.push(first);
    }
    this.end += ENTRY_HEADER_BYTES + bare.length;
    return bare;
  }
  /** Position of the entry boundary before relative offset `relative` (an entry start or the end). */
  boundary(relative: number): number {
    return relative === this.payloads.length ? this.end : this.positions[relative]!;
  }
}

function expectSameBytes(
  actual: Uint8Array | undefined,
  expected: Uint8Array | undefined,
  what: string,
): void {
  expect(actual, what).toBeDefined();
  expect(Buffer.from(actual!).equals(Buffer.from(expected!)), what).toBe(true);
}

/** Reads the whole segment through copying reads of random sizes and compares with the model. */
function expectMatchesModel(segment: Segment, model: Model, random: Random): void {
  expect<number>(segment.nextOffset).toBe(BASE + model.payloads.length);
  expect(segment.sizeBytes).toBe(model.end);
  let offset = BASE as number;
  while (offset < segment.nextOffset) {
    // Sometimes from inside an entry: the read starts with the entry that contains the offset.
    const asked = Math.min(segment.nextOffset - 1, offset + (random.next() < 0.3 ? random.int(0, 3) : 0));
    const read = segment.read(asked, random.int(1, 5000));
    const entryStart = model.entryStarts[asked - BASE]!;
    expect(read.firstOffset).toBe(BASE + entryStart);
    const payloads = valuesOfEntries(read.records);
    expect(payloads.length).toBe(read.recordCount);
    expect(read.recordCount).toBeGreaterThan(0);
    for (let i = 0; i < payloads.length; i++) {
      expectSameBytes(payloads[i]!, model.payloads[entryStart + i], `offset ${BASE + entryStart + i}`);
    }
    offset = read.firstOffset + read.recordCount;
  }
  for (let relative = 0; relative < model.payloads.length; relative++) {
    expect(segment.positionOf(BASE + relative)).toBe(model.positions[relative]!);
  }
}

describe.each(WRITE_MODES.map((mode) => [mode]))(
  `segment, %s write path (seed ${SEED})`,
  (mode: WriteMode) => {
    test("random record sizes round-trip; index lookups agree with the model; reopen continues", () => {
      using dir = tempDir();
      const random = new Random(SEED);
      const config = segmentConfig({
        writeMode: mode,
        segmentBytes: 32 * 1024 * 1024,
        indexIntervalBytes: 512,
      });
      const model = new Model();
      const segment = Segment.create(dir.path, BASE, config);
      try {
        for (let batch = 0; batch < 200; batch++) {
          const count = random.int(1, 20);
          const payloads: Uint8Array[] = [];
          for (let i = 0; i < count; i++) {
            // Mostly small, sometimes larger than the index interval (512) and the scratch buffer.
            const size = random.next() < 0.05 ? random.int(600, 70_000) : random.int(1, 300);
            payloads.push(random.bytes(size));
          }
          const bare = batchOfValues(payloads, 1_700_000_000_000);
          if (!segment.hasRoomFor(ENTRY_HEADER_BYTES + bare.length)) break;
          const expected = BASE + model.payloads.length;
          const first = segment.append(model.add(payloads));
          expect<number>(first).toBe(expected);
        }
        expectMatchesModel(segment, model, random);
      } finally {
        segment.close();
      }
      const { segment: reopened, report } = Segment.openForAppend(
        path.join(dir.path, segmentFileName(BASE)),
        config,
      );
      try {
        expect(report.recordCount).toBe(model.payloads.length);
        expect(report.validEndBytes).toBe(model.end);
        expect(report.cutBytes).toBe(0);
        expect(["end", "zero-length"]).toContain(report.stop);
        expectMatchesModel(reopened, model, random);
        const more = [random.bytes(10), random.bytes(5000)];
        const expected = BASE + model.payloads.length;
        expect<number>(reopened.append(model.add(more))).toBe(expected);
        expectMatchesModel(reopened, model, random);
      } finally {
        reopened.close();
      }
    });

    test("a record that fills the segment exactly; then the segment is full and refuses without writing", () => {
      using dir = tempDir();
      const segmentBytes = 64 * 1024;
      const config = segmentConfig({ writeMode: mode, segmentBytes, maxPayloadBytes: segmentBytes });
      const segment = Segment.create(dir.path, BASE, config);
      try {
        // A one-record batch whose entry fills the segment exactly: find the value size that does.
        const room = segmentBytes - SEGMENT_HEADER_BYTES - ENTRY_HEADER_BYTES;
        let valueBytes = room - RECORDS_OFFSET;
        while (batchOfValues([new Uint8Array(valueBytes)]).length > room) valueBytes--;
        const payload = new Uint8Array(valueBytes).fill(7);
        const bare = batchOfValues([payload]);
        expect(bare.length).toBe(room);
        expect(segment.hasRoomFor(ENTRY_HEADER_BYTES + bare.length)).toBe(true);
        expect<number>(segment.append(bare)).toBe(BASE);
        expect(segment.sizeBytes).toBe(segmentBytes);
        expect(segment.hasRoomFor(ENTRY_HEADER_BYTES + 1)).toBe(false);
        expect(() => segment.append(batchOfValues(["x"]))).toThrow(SegmentFullError);
        expect<number>(segment.nextOffset).toBe(BASE + 1);
        expect(segment.sizeBytes).toBe(segmentBytes);
        expectSameBytes(valuesOfEntries(segment.read(BASE, 1).records)[0]!, payload, "the full record");
      } finally {
        segment.close();
      }
      // On disk the segment is exactly as long as its data on both paths (the mapped one is trimmed).
      expect(fs.statSync(path.join(dir.path, segmentFileName(BASE))).size).toBe(segmentBytes);
    });

    test("a batch that does not fit is refused whole; a smaller one still fits", () => {
      using dir = tempDir();
      const config = segmentConfig({ writeMode: mode, segmentBytes: 4096 });
      const segment = Segment.create(dir.path, BASE, config);
      try {
        const big = Array.from({ length: 100 }, () => new Uint8Array(50).fill(1));
        expect(() => segment.append(batchOfValues(big))).toThrow(SegmentFullError);
        expect<number>(segment.nextOffset).toBe(BASE);
        expect(segment.sizeBytes).toBe(SEGMENT_HEADER_BYTES);
        // Several batches in one append are all or nothing too.
        const two = Buffer.concat([batchOfValues(big.slice(0, 40)), batchOfValues(big.slice(0, 40))]);
        expect(() => segment.append(two)).toThrow(SegmentFullError);
        expect(segment.sizeBytes).toBe(SEGMENT_HEADER_BYTES);
        expect<number>(segment.append(batchOfValues(big.slice(0, 10)))).toBe(BASE);
        expect<number>(segment.nextOffset).toBe(BASE + 10);
      } finally {
        segment.close();
      }
    });

    test("invalid batches are refused whole with a typed error and nothing is written", () => {
      using dir = tempDir();
      const config = segmentConfig({ writeMode: mode, segmentBytes: 64 * 1024, maxPayloadBytes: 1000 });
      const segment = Segment.create(dir.path, BASE, config);
      try {
        const ok = batchOfValues(["ok"]);
        segment.append(ok);
        // Storage checks only what framing relies on (the broker layer validates the rest).
        const good = batchOfValues(["first", "second"]);
        const cut = good.slice(0, good.length - 2);
        expect(() => segment.append(cut)).toThrow(CorruptRecordError);
        const trailing = Buffer.concat([good, new Uint8Array(12)]);
        expect(() => segment.append(trailing)).toThrow(CorruptRecordError);
        const badMagic = good.slice();
        badMagic[16] = 1;
        expect(() => segment.append(badMagic)).toThrow(CorruptRecordError);
        const huge = batchOfValues([new Uint8Array(1001)]);
        expect(() => segment.append(huge)).toThrow(RecordTooLargeError);
        expect(() => segment.append(new Uint8Array(0))).toThrow(CorruptRecordError);
        expect<number>(segment.nextOffset).toBe(BASE + 1);
        expect(segment.sizeBytes).toBe(SEGMENT_HEADER_BYTES + ENTRY_HEADER_BYTES + ok.length);
        expect<number>(segment.append(good)).toBe(BASE + 1);
        // The caller's bytes are not stamped in place: the same batch can be appended again.
        expect(decodeBatch(good).header.baseOffset).toBe(0);
        expect<number>(segment.append(good)).toBe(BASE + 3);
      } finally {
        segment.close();
      }
    });

    test("zero-copy file ranges hold whole records, at most maxBytes unless the first record is larger", () => {
      using dir = tempDir();
      const random = new Random(SEED);
      const config = segmentConfig({ writeMode: mode, segmentBytes: 1024 * 1024, indexIntervalBytes: 256 });
      const segment = Segment.create(dir.path, BASE, config);
      const model = new Model();
      try {
        for (let i = 0; i < 300; i++) {
          const payloads = Array.from({ length: random.int(1, 3) }, () =>
            random.bytes(random.int(1, i % 50 === 0 ? 3000 : 100)),
          );
          segment.append(model.add(payloads));
        }
        const range = newFileRange();
        const bytes = fs.readFileSync(path.join(dir.path, segmentFileName(BASE)));
        for (let trial = 0; trial < 300; trial++) {
          const relative = random.int(0, model.payloads.length - 1);
          const maxBytes = random.int(1, 4000);
          segment.fileRange(BASE + relative, maxBytes, range);
          // Starts at the entry containing the offset.
          const entryStart = model.entryStarts[relative]!;
          expect(range.position).toBe(model.positions[relative]!);
          expect(range.firstOffset).toBe(BASE + entryStart);
          const end = range.position + range.lengthBytes;
          const lastRelative = entryStart + range.recordCount;
          // Ends on an entry boundary and covers exactly recordCount offsets.
          expect(model.boundary(lastRelative)).toBe(end);
          expect(lastRelative).toBeGreaterThan(relative);
          const entryCount = new Set(model.positions.slice(entryStart, lastRelative)).size;
          if (entryCount > 1) expect(range.lengthBytes).toBeLessThanOrEqual(maxBytes);
          // Greedy: the next entry would not have fit (unless the segment ended).
          if (lastRelative < model.payloads.length) {
            let next = lastRelative;
            while (next < model.payloads.length && model.positions[next] === model.positions[lastRelative])
              next++;
            expect(model.boundary(next) - range.position).toBeGreaterThan(maxBytes);
          }
          const framed = bytes.subarray(range.position, end);
          const payloads = valuesOfEntries(framed);
          expect(payloads.length).toBe(range.recordCount);
          expectSameBytes(payloads[relative - entryStart]!, model.payloads[relative], "the record asked for");
        }
      } finally {
        segment.close();
      }
    });

    test("offsets outside the segment are a typed error carrying both bounds", () => {
      using dir = tempDir();
      const segment = Segment.create(dir.path, BASE, segmentConfig({ writeMode: mode, segmentBytes: 4096 }));
      try {
        segment.append(batchOfValues(["a", "b"]));
        for (const offset of [BASE - 1, BASE + 2, BASE + 100]) {
          try {
            segment.read(offset, 100);
            throw new Error("expected an error");
          } catch (error) {
            expect(error).toMatchObject({
              code: "OFFSET_OUT_OF_RANGE",
              logStartOffset: BASE,
              nextOffset: BASE + 2,
            });
          }
        }
      } finally {
        segment.close();
      }
    });

    test("a sealed segment opened without a scan builds its index on first read and reads like before", () => {
      using dir = tempDir();
      const random = new Random(SEED);
      const config = segmentConfig({ writeMode: mode, segmentBytes: 1024 * 1024, indexIntervalBytes: 300 });
      const model = new Model();
      const segment = Segment.create(dir.path, BASE, config);
      for (let i = 0; i < 100; i++) {
        const payloads = [random.bytes(random.int(1, 200)), random.bytes(random.int(1, 900))];
        segment.append(model.add(payloads));
      }
      segment.seal();
      segment.forceNow();
      segment.close();
      const sealed = Segment.openSealed(
        path.join(dir.path, segmentFileName(BASE)),
        config,
        (BASE + model.payloads.length) as Offset,
      );
      try {
        expect(sealed.isActive).toBe(false);
        expectMatchesModel(sealed, model, random);
        expect(() => sealed.append(batchOfValues(["x"]))).toThrow();
      } finally {
        sealed.close();
      }
    });

    test("a foreign, renamed or damaged header is refused with a clear error", () => {
      using dir = tempDir();
      const config = segmentConfig({ writeMode: mode, segmentBytes: 4096 });
      const segment = Segment.create(dir.path, BASE, config);
      const a = batchOfValues(["a"]);
      segment.append(a);
      segment.close();
      const original = path.join(dir.path, segmentFileName(BASE));
      const renamed = path.join(dir.path, segmentFileName(5 as Offset));
      fs.copyFileSync(original, renamed);
      expect(() => Segment.openForAppend(renamed, config)).toThrow(
        /header says base offset 1000 but the file name says 5/,
      );
      const foreign = path.join(dir.path, segmentFileName(7 as Offset));
      fs.writeFileSync(foreign, "this is not a segment at all, just some text");
      expect(() => Segment.openForAppend(foreign, config)).toThrow(/not a booblik segment/);
      const short = path.join(dir.path, segmentFileName(8 as Offset));
      fs.writeFileSync(short, "BKLG");
      expect(() => Segment.openForAppend(short, config)).toThrow(/shorter than the 32-byte header/);
      const damaged = path.join(dir.path, segmentFileName(9 as Offset));
      const bytes = fs.readFileSync(original);
      bytes[20] = 1; // a reserved byte: only the header CRC can notice
      fs.writeFileSync(damaged, bytes);
      expect(() => Segment.openForAppend(damaged, config)).toThrow(/header checksum mismatch/);
      // Refusals leave the files as they were.
      expect(fs.readFileSync(original).length).toBe(SEGMENT_HEADER_BYTES + ENTRY_HEADER_BYTES + a.length);
    });
  },
);

describe(`mode migration (seed ${SEED})`, () => {
  test.each([
    ["mapped", "file"],
    ["file", "mapped"],
  ] as const)("written by the %s path, reopened and appended by the %s path", (first, second) => {
    using dir = tempDir();
    const random = new Random(SEED);
    const model = new Model();
    const firstConfig = segmentConfig({ writeMode: first, segmentBytes: 256 * 1024 });
    const segment = Segment.create(dir.path, BASE, firstConfig);
    for (let i = 0; i < 50; i++) {
      const payloads = [random.bytes(random.int(1, 500))];
      segment.append(model.add(payloads));
    }
    segment.close();
    const secondConfig = segmentConfig({ writeMode: second, segmentBytes: 256 * 1024 });
    const { segment: reopened, report } = Segment.openForAppend(
      path.join(dir.path, segmentFileName(BASE)),
      secondConfig,
    );
    try {
      expect(reopened.writeMode).toBe(second);
      expect(report.recordCount).toBe(50);
      expect<number>(reopened.nextOffset).toBe(BASE + 50);
      for (let i = 0; i < 50; i++) {
        const payloads = Array.from({ length: random.int(1, 4) }, () => random.bytes(random.int(1, 500)));
        reopened.append(model.add(payloads));
      }
      expectMatchesModel(reopened, model, random);
    } finally {
      reopened.close();
    }
    const { segment: again } = Segment.openForAppend(path.join(dir.path, segmentFileName(BASE)), firstConfig);
    try {
      expectMatchesModel(again, model, random);
    } finally {
      again.close();
    }
  });
});
