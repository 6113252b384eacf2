/**
 * One suite over both write paths with the same assertions (DESIGN invariant 8): whatever the path,
 * appends round-trip, offsets and index lookups agree with a simple model, a full segment refuses
 * without writing, a reopened segment continues exactly at its end, and reads see only complete
 * records. Randomized parts print their seed; BOOBLIK_SEED replays them.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { CorruptRecordError, RecordTooLargeError, SegmentFullError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { frameRecords } from "../../src/record/batch-builder.ts";
import { payloadsOf } from "../../src/record/codec.ts";
import { newFileRange, Segment, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const BASE = 1000 as Offset;
// One seed for the file, printed in every test name so that a failure names it; BOOBLIK_SEED replays.
const SEED = testSeed();

/** A model of what a segment should hold: payloads by relative offset and their positions. */
class Model {
  payloads: Uint8Array[] = [];
  positions: number[] = [];
  end = SEGMENT_HEADER_BYTES;
  add(batch: Uint8Array[]): void {
    for (const payload of batch) {
      this.payloads.push(payload);
      this.positions.push(this.end);
      this.end += RECORD_HEADER_BYTES + payload.length;
    }
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
    const read = segment.read(offset, random.int(1, 5000));
    expect(read.firstOffset).toBe(offset);
    const payloads = payloadsOf(read.records);
    expect(payloads.length).toBe(read.recordCount);
    expect(read.recordCount).toBeGreaterThan(0);
    for (let i = 0; i < payloads.length; i++) {
      expectSameBytes(payloads[i], model.payloads[offset - BASE + i], `offset ${offset + i}`);
    }
    offset += read.recordCount;
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
          const framed = frameRecords(payloads);
          if (!segment.hasRoomFor(framed.length)) break;
          const first = segment.append(framed, true);
          expect<number>(first).toBe(BASE + model.payloads.length);
          model.add(payloads);
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
        expect<number>(reopened.append(frameRecords(more), true)).toBe(BASE + model.payloads.length);
        model.add(more);
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
        const payload = new Uint8Array(segmentBytes - SEGMENT_HEADER_BYTES - RECORD_HEADER_BYTES).fill(7);
        expect(segment.hasRoomFor(payload.length + RECORD_HEADER_BYTES)).toBe(true);
        expect<number>(segment.append(frameRecords([payload]), true)).toBe(BASE);
        expect(segment.sizeBytes).toBe(segmentBytes);
        expect(segment.hasRoomFor(RECORD_HEADER_BYTES + 1)).toBe(false);
        expect(() => segment.append(frameRecords(["x"]), true)).toThrow(SegmentFullError);
        expect<number>(segment.nextOffset).toBe(BASE + 1);
        expect(segment.sizeBytes).toBe(segmentBytes);
        expectSameBytes(payloadsOf(segment.read(BASE, 1).records)[0], payload, "the full record");
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
        expect(() => segment.append(frameRecords(big), true)).toThrow(SegmentFullError);
        expect<number>(segment.nextOffset).toBe(BASE);
        expect(segment.sizeBytes).toBe(SEGMENT_HEADER_BYTES);
        expect<number>(segment.append(frameRecords(big.slice(0, 10)), true)).toBe(BASE);
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
        segment.append(frameRecords(["ok"]), true);
        const good = frameRecords(["first", "second"]);
        const badCrc = good.slice();
        badCrc[badCrc.length - 1]! ^= 0xff;
        expect(() => segment.append(badCrc, true)).toThrow(CorruptRecordError);
        const cut = good.slice(0, good.length - 2);
        expect(() => segment.append(cut, true)).toThrow(CorruptRecordError);
        const zero = new Uint8Array(12);
        expect(() => segment.append(zero, true)).toThrow(CorruptRecordError);
        const huge = frameRecords([new Uint8Array(1001)]);
        expect(() => segment.append(huge, true)).toThrow(RecordTooLargeError);
        expect(() => segment.append(new Uint8Array(0), true)).toThrow();
        expect<number>(segment.nextOffset).toBe(BASE + 1);
        expect(segment.sizeBytes).toBe(SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES + 2);
        expect<number>(segment.append(good, true)).toBe(BASE + 1);
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
          const payload = random.bytes(random.int(1, i % 50 === 0 ? 3000 : 100));
          segment.append(frameRecords([payload]), true);
          model.add([payload]);
        }
        const range = newFileRange();
        const bytes = fs.readFileSync(path.join(dir.path, segmentFileName(BASE)));
        for (let trial = 0; trial < 300; trial++) {
          const relative = random.int(0, model.payloads.length - 1);
          const maxBytes = random.int(1, 4000);
          segment.fileRange(BASE + relative, maxBytes, range);
          expect(range.position).toBe(model.positions[relative]!);
          const end = range.position + range.lengthBytes;
          const lastRelative = relative + range.recordCount;
          // Ends on a record boundary and holds exactly recordCount records.
          expect(lastRelative === model.payloads.length ? model.end : model.positions[lastRelative]).toBe(
            end,
          );
          expect(range.recordCount).toBeGreaterThanOrEqual(1);
          if (range.recordCount > 1) expect(range.lengthBytes).toBeLessThanOrEqual(maxBytes);
          // Greedy: the next record would not have fit (unless the segment ended).
          if (lastRelative < model.payloads.length) {
            const nextEnd =
              lastRelative + 1 === model.payloads.length ? model.end : model.positions[lastRelative + 1]!;
            expect(nextEnd - range.position).toBeGreaterThan(maxBytes);
          }
          const framed = bytes.subarray(range.position, end);
          const payloads = payloadsOf(framed);
          expect(payloads.length).toBe(range.recordCount);
          expectSameBytes(payloads[0], model.payloads[relative], "first record of the range");
        }
      } finally {
        segment.close();
      }
    });

    test("offsets outside the segment are a typed error carrying both bounds", () => {
      using dir = tempDir();
      const segment = Segment.create(dir.path, BASE, segmentConfig({ writeMode: mode, segmentBytes: 4096 }));
      try {
        segment.append(frameRecords(["a", "b"]), true);
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
        segment.append(frameRecords(payloads), true);
        model.add(payloads);
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
        expect(() => sealed.append(frameRecords(["x"]), true)).toThrow();
      } finally {
        sealed.close();
      }
    });

    test("a foreign, renamed or damaged header is refused with a clear error", () => {
      using dir = tempDir();
      const config = segmentConfig({ writeMode: mode, segmentBytes: 4096 });
      const segment = Segment.create(dir.path, BASE, config);
      segment.append(frameRecords(["a"]), true);
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
      expect(fs.readFileSync(original).length).toBe(SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES + 1);
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
      segment.append(frameRecords(payloads), true);
      model.add(payloads);
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
      for (let i = 0; i < 50; i++) {
        const payloads = [random.bytes(random.int(1, 500))];
        reopened.append(frameRecords(payloads), true);
        model.add(payloads);
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
