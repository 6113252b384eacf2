/**
 * The embedded `Broker.produce` with more records than one batch of the topic's `maxRecordBytes`
 * holds: it used to refuse them with RecordTooLargeError (one batch per call); now it appends them
 * as several batches of at most that size in one append (consecutive offsets, whole request or
 * nothing). A single record too large for any batch, and a set larger than an empty segment, are
 * still refused, and refusing them leaves the log unchanged.
 */
import { describe, expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { RecordTooLargeError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import { type DecodedRecord, decodeBatch, type RecordInput } from "../../src/record/batch.ts";
import { scanEntries } from "../../src/record/entries.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const SEED = testSeed();
const MAX_RECORD_BYTES = 4096;

/** Every stored batch of a read (frame CRC and batch CRC checked): its size and its records. */
function storedBatches(read: Uint8Array): { sizeBytes: number; records: DecodedRecord[] }[] {
  const batches: { sizeBytes: number; records: DecodedRecord[] }[] = [];
  const scan = scanEntries(
    read,
    0,
    read.length,
    { framing: "framed", verifyCrc: true },
    undefined,
    (_e, start, end) =>
      batches.push({ sizeBytes: end - start, records: decodeBatch(read, start, end).records }),
  );
  expect(scan.stop).toBe("end");
  return batches;
}

function randomRecords(random: Random, count: number, valueBytesMax: number): RecordInput[] {
  const t = 1_700_000_000_000;
  return Array.from({ length: count }, (_, i) => ({
    key: random.int(0, 3) === 0 ? null : random.bytes(random.int(0, 16)),
    value: random.bytes(random.int(0, valueBytesMax)),
    timestamp: t + random.int(-1000, 1000),
    headers: i % 5 === 0 ? [{ key: "h", value: random.bytes(8) }] : [],
  }));
}

describe(`Broker.produce beyond one batch (seed ${SEED})`, () => {
  for (const codec of [undefined, "gzip", "zstd"] as const) {
    test(`${codec ?? "uncompressed"}: records for several batches become batches within maxRecordBytes, in order`, async () => {
      using dir = tempDir();
      const random = new Random(SEED);
      const broker = Broker.open({ dataDir: dir.path });
      try {
        broker.createTopic("p", { durability: "append", maxRecordBytes: MAX_RECORD_BYTES });
        // Random values do not compress: the compressed batches need the split after compression too.
        const records = randomRecords(random, 120, 600);
        const ack = await broker.produce("p", 0, records, codec === undefined ? {} : { codec });
        expect(ack.firstOffset).toBe(0 as Offset);
        expect(ack.recordCount).toBe(records.length);
        const batches = storedBatches(broker.read("p", 0, 0, 64 * 1024 * 1024).records);
        expect(batches.length).toBeGreaterThan(1);
        for (const batch of batches) expect(batch.sizeBytes).toBeLessThanOrEqual(MAX_RECORD_BYTES);
        const stored = batches.flatMap((batch) => batch.records);
        expect(stored.map((r) => r.offset)).toEqual(records.map((_, i) => i));
        expect(stored.map((r) => [r.key, r.value, r.timestamp, r.headers])).toEqual(
          records.map((r) => [r.key, r.value, r.timestamp, (r.headers ?? []).map((h) => ({ ...h }))]),
        );
        // A set that fits one batch is still one batch.
        await broker.produce("p", 0, records.slice(0, 2));
        expect(storedBatches(broker.read("p", 0, records.length).records)).toHaveLength(1);
      } finally {
        await broker.close();
      }
    });
  }

  test("a record too large for any batch, or a set beyond an empty segment, is refused and nothing is appended", async () => {
    using dir = tempDir();
    const random = new Random(SEED);
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("q", {
        durability: "append",
        maxRecordBytes: MAX_RECORD_BYTES,
        segmentBytes: 64 * 1024,
      });
      const small = randomRecords(random, 10, 100);
      const huge: RecordInput = { key: null, value: random.bytes(MAX_RECORD_BYTES), timestamp: 1 };
      await expect(broker.produce("q", 0, [...small, huge, ...small])).rejects.toThrow(RecordTooLargeError);
      // 200 records of ~500 B: more than the 64 KiB segment holds in one append.
      await expect(broker.produce("q", 0, randomRecords(random, 200, 1000))).rejects.toThrow(
        /what fits in an empty segment/,
      );
      expect(broker.describeTopic("q").partitions[0]!.logEndOffset).toBe(0);
      expect((await broker.produce("q", 0, small)).firstOffset).toBe(0 as Offset);
    } finally {
      await broker.close();
    }
  });
});
