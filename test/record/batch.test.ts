/**
 * RecordBatch v2 (src/record/batch.ts): round trips of every record shape, each validation error
 * provoked by byte surgery on a real encoded batch (checking the rule, the reason and the byte
 * position in the message), what the CRC covers and what it does not, stamping, compression and
 * the writer's reuse.
 */
import { describe, expect, test } from "bun:test";
import { CorruptRecordError, InvalidArgumentError, RecordTooLargeError } from "../../src/domain/errors.ts";
import {
  ATTRIBUTES_OFFSET,
  BASE_OFFSET_OFFSET,
  computeBatchCrc,
  decodeBatch,
  encodeBatch,
  forEachRecord,
  RecordBatchReader,
  RecordBatchWriter,
  type RecordInput,
  type RecordView,
  readBatchHeader,
  recordKey,
  recordValue,
  stampBatch,
  validateBatch,
} from "../../src/record/batch.ts";
import { decompressRecords } from "../../src/record/compression.ts";
import { batchError, hex, resign, utf8 } from "./helpers.ts";

const T = 1_700_000_000_000;

/** Three records whose byte positions the surgery below relies on (checked in the first test). */
const THREE: RecordInput[] = [
  { key: utf8("k"), value: utf8("v"), headers: [{ key: "h", value: utf8("x") }], timestamp: T },
  { key: null, value: utf8("vv"), timestamp: T + 5 },
  { key: utf8("kk"), value: null, timestamp: T - 3 },
];

function three(): Uint8Array {
  return encodeBatch(THREE);
}

function view(batch: Uint8Array): DataView {
  return new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
}

/** Byte surgery that returns the batch, so each case below is one expression. */
function poke(batch: Uint8Array, position: number, byte: number): Uint8Array {
  batch[position] = byte;
  return batch;
}

function int32(batch: Uint8Array, position: number, value: number): Uint8Array {
  view(batch).setInt32(position, value);
  return batch;
}

function plain(records: ReturnType<typeof decodeBatch>["records"]) {
  return records.map((record) => ({
    offset: record.offset,
    timestamp: record.timestamp,
    key: record.key === null ? null : hex(record.key),
    value: record.value === null ? null : hex(record.value),
    headers: record.headers.map((header) => [header.key, header.value === null ? null : hex(header.value)]),
  }));
}

function plainInput(records: readonly RecordInput[], baseOffset = 0) {
  return records.map((record, index) => ({
    offset: baseOffset + index,
    timestamp: record.timestamp,
    key: record.key === null ? null : hex(record.key),
    value: record.value === null ? null : hex(record.value),
    headers: (record.headers ?? []).map((header) => [
      header.key,
      header.value === null ? null : hex(header.value),
    ]),
  }));
}

describe("round trips", () => {
  test("the three-record layout: record positions as the surgery below assumes", () => {
    const batch = three();
    expect(batch.length).toBe(92);
    const spans: number[][] = [];
    forEachRecord(batch, 0, batch.length, (record) => {
      spans.push([
        record.recordStart,
        record.keyStart,
        record.valueStart,
        record.headersStart,
        record.recordEnd,
      ]);
    });
    expect(spans).toEqual([
      [61, 66, 68, 70, 74],
      [74, 79, 80, 83, 83],
      [83, 88, 91, 92, 92],
    ]);
  });

  const shapes: [string, RecordInput[]][] = [
    ["keys, values and a header", THREE],
    ["null key and null value", [{ key: null, value: null, timestamp: T }]],
    ["empty (not null) key and value", [{ key: new Uint8Array(0), value: new Uint8Array(0), timestamp: T }]],
    ["empty headers list", [{ key: utf8("a"), value: utf8("b"), headers: [], timestamp: T }]],
    [
      "several headers, repeated keys, a null header value, a non-ASCII key",
      [
        {
          key: utf8("key"),
          value: utf8("value"),
          headers: [
            { key: "trace-id", value: utf8("abc") },
            { key: "trace-id", value: utf8("def") },
            { key: "empty", value: new Uint8Array(0) },
            { key: "none", value: null },
            { key: "ключ-🔑", value: utf8("ü") },
          ],
          timestamp: T,
        },
      ],
    ],
    [
      "negative timestamp deltas and a −1 (no timestamp) record",
      [
        { key: null, value: utf8("a"), timestamp: T },
        { key: null, value: utf8("b"), timestamp: T - 86_400_000 },
        { key: null, value: utf8("c"), timestamp: -1 },
        { key: null, value: utf8("d"), timestamp: T + 1 },
      ],
    ],
    [
      "all −1 timestamps",
      [
        { key: null, value: utf8("a"), timestamp: -1 },
        { key: null, value: utf8("b"), timestamp: -1 },
      ],
    ],
    ["a timestamp in the year 9999", [{ key: null, value: utf8("a"), timestamp: 253_402_300_799_999 }]],
    [
      "large values (multi-byte length varints)",
      [
        { key: new Uint8Array(200).fill(7), value: new Uint8Array(70_000).fill(9), timestamp: T },
        { key: null, value: new Uint8Array(130).fill(1), timestamp: T },
      ],
    ],
  ];

  test.each(shapes)("%s", (_name, records) => {
    for (const codec of ["none", "gzip", "zstd"] as const) {
      const batch = encodeBatch(records, { codec });
      validateBatch(batch, 0, batch.length, { walkCompressed: true });
      const decoded = decodeBatch(batch);
      expect(plain(decoded.records)).toEqual(plainInput(records));
      expect(decoded.header.recordCount).toBe(records.length);
      expect(decoded.header.lastOffsetDelta).toBe(records.length - 1);
      expect(decoded.header.baseTimestamp).toBe(records[0]!.timestamp);
      expect(decoded.header.maxTimestamp).toBe(Math.max(...records.map((record) => record.timestamp)));
    }
  });

  test("1,000 records with random shapes (fixed seed) survive every codec", () => {
    let seed = 12345;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
    const records: RecordInput[] = Array.from({ length: 1000 }, () => ({
      key: random() < 0.2 ? null : bytes(Math.floor(random() * 40)),
      value: random() < 0.1 ? null : bytes(Math.floor(random() * 300)),
      headers: Array.from({ length: Math.floor(random() * 3) }, (_, h) => ({
        key: `h${h}`,
        value: random() < 0.3 ? null : bytes(Math.floor(random() * 20)),
      })),
      timestamp: T + Math.floor((random() - 0.5) * 1e9),
    }));
    for (const codec of ["none", "gzip", "zstd"] as const) {
      const batch = encodeBatch(records, { codec });
      validateBatch(batch, 0, batch.length, { walkCompressed: true });
      expect(plain(decodeBatch(batch).records)).toEqual(plainInput(records));
    }
  });

  test("producer fields: defaults −1/−1/−1, and given values come back", () => {
    const defaults = readBatchHeader(three(), 0);
    expect([defaults.producerId, defaults.producerEpoch, defaults.baseSequence]).toEqual([-1, -1, -1]);
    expect(defaults.partitionLeaderEpoch).toBe(-1);
    const batch = encodeBatch(THREE, {
      producerId: 2 ** 40 + 3,
      producerEpoch: 7,
      baseSequence: 1000,
      partitionLeaderEpoch: 0,
      transactional: true,
    });
    const header = validateBatch(batch, 0, batch.length);
    expect([header.producerId, header.producerEpoch, header.baseSequence]).toEqual([2 ** 40 + 3, 7, 1000]);
    expect([header.partitionLeaderEpoch, header.transactional, header.control]).toEqual([0, true, false]);
  });

  test("LogAppendTime: every record reads MaxTimestamp (Kafka's rule)", () => {
    const batch = encodeBatch(THREE, { logAppendTime: true });
    const header = readBatchHeader(batch, 0);
    expect(header.logAppendTime).toBe(true);
    expect(decodeBatch(batch).records.map((record) => record.timestamp)).toEqual([T + 5, T + 5, T + 5]);
  });

  test("the header is read in place from inside a larger buffer, and the walker yields views", () => {
    const batch = three();
    const host = new Uint8Array(batch.length + 100);
    host.set(batch, 37);
    const header = readBatchHeader(host, 37);
    expect([header.recordCount, header.sizeBytes, header.baseTimestamp]).toEqual([3, 92, T]);
    const seen: [Uint8Array | null, Uint8Array | null][] = [];
    forEachRecord(host, 37, 37 + batch.length, (record: RecordView) => {
      seen.push([recordKey(record), recordValue(record)]);
    });
    // Views into `host`, not copies.
    expect(seen[0]![0]!.buffer).toBe(host.buffer);
    expect(seen[0]![0]!.byteOffset).toBe(37 + 66);
    expect(seen.map(([key, value]) => [key && hex(key), value && hex(value)])).toEqual([
      [hex(utf8("k")), hex(utf8("v"))],
      [null, hex(utf8("vv"))],
      [hex(utf8("kk")), null],
    ]);
  });
});

describe("the writer", () => {
  test("reused across batches gives the same bytes as encodeBatch; the view is the writer's own", () => {
    const writer = new RecordBatchWriter(64);
    for (let round = 0; round < 3; round++) {
      writer.begin();
      for (const record of THREE) writer.add(record);
      expect(writer.recordCount).toBe(3);
      expect(hex(writer.finish())).toBe(hex(three()));
    }
  });

  test("a batch with no records, a bad timestamp and out-of-range producer fields are refused", () => {
    expect(() => new RecordBatchWriter().begin().finish()).toThrow(InvalidArgumentError);
    expect(() => new RecordBatchWriter().begin().add({ key: null, value: null, timestamp: 1.5 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => encodeBatch(THREE, { producerEpoch: 40_000 })).toThrow(InvalidArgumentError);
    expect(() => encodeBatch(THREE, { baseSequence: 2 ** 31 })).toThrow(InvalidArgumentError);
    expect(() => encodeBatch(THREE, { producerId: 2 ** 53 })).toThrow(InvalidArgumentError);
  });

  test("a batch above the writer's limit is a RecordTooLargeError, before it grows", () => {
    const writer = new RecordBatchWriter(64, 200);
    writer.begin().add({ key: null, value: new Uint8Array(100), timestamp: T });
    expect(() => writer.add({ key: null, value: new Uint8Array(100), timestamp: T })).toThrow(
      RecordTooLargeError,
    );
  });
});

describe("validation of a PRODUCE: each rule, by byte surgery", () => {
  test("an intact batch passes and its header comes back", () => {
    const batch = three();
    const header = validateBatch(batch, 0, batch.length);
    expect([header.baseOffset, header.recordCount, header.codecId]).toEqual([0, 3, 0]);
  });

  // [name, surgery on a fresh three-record batch (return the batch to validate), check, position, reason]
  const cases: [string, (batch: Uint8Array) => Uint8Array, string, number, RegExp][] = [
    ["shorter than a batch header", (b) => b.subarray(0, 60), "size", 60, /60 bytes cannot hold/],
    [
      "one byte more than BatchLength says",
      (b) => Uint8Array.of(...b, 0),
      "batch-length",
      8,
      /BatchLength 80 disagrees with the 93 bytes/,
    ],
    [
      "BatchLength one less than the bytes",
      (b) => int32(b, 8, 79),
      "batch-length",
      8,
      /BatchLength 79 disagrees with the 92 bytes/,
    ],
    ["magic 1", (b) => poke(b, 16, 1), "magic", 16, /magic 1 is not 2/],
    ["a flipped value byte", (b) => poke(b, 68, b[68]! ^ 0x01), "crc", 17, /CRC32C of bytes \[21, 92\)/],
    ["BaseOffset 7 from a producer", (b) => int32(b, 4, 7), "base-offset", 0, /BaseOffset 7 from a producer/],
    ["a control batch", (b) => resign(poke(b, 22, b[22]! | 0x20)), "control", 21, /control batch/],
    ["codec 5", (b) => resign(poke(b, 22, b[22]! | 5)), "codec", 21, /compression codec 5 .* is unknown/],
    ["codec 7", (b) => resign(poke(b, 22, b[22]! | 7)), "codec", 21, /compression codec 7 .* is unknown/],
    [
      "RecordCount 0",
      (b) => resign(int32(int32(b, 57, 0), 23, -1)),
      "record-count",
      57,
      /RecordCount 0: a batch holds at least one record/,
    ],
    [
      "LastOffsetDelta 5 with 3 records",
      (b) => resign(int32(b, 23, 5)),
      "last-offset-delta",
      23,
      /LastOffsetDelta 5 must be RecordCount − 1 = 2/,
    ],
    [
      "a producer id without a sequence",
      (b) => resign(int32(int32(b, 47, 9), 43, 0)),
      "sequence",
      53,
      /BaseSequence -1 with ProducerId 9/,
    ],
    [
      "a BaseTimestamp beyond 2^53",
      (b) => resign(poke(b, 27, 0x7f)),
      "int64",
      27,
      /BaseTimestamp lies beyond 2\^53/,
    ],
    [
      "record 0's Length runs past the batch",
      (b) => resign(poke(b, 61, 0x7e)),
      "record",
      61,
      /record 0 has Length 63 but 30 bytes remain/,
    ],
    [
      "record 1's OffsetDelta is 0",
      (b) => resign(poke(b, 77, 0x00)),
      "record",
      77,
      /record 1 has OffsetDelta 0; expected 1/,
    ],
    [
      "record 2's key length reaches past the record",
      (b) => resign(poke(b, 87, 100)),
      "record",
      87,
      /record 2 has key length 50 beyond its end/,
    ],
    [
      "record 1's value length is −2",
      (b) => resign(poke(b, 79, 3)),
      "record",
      79,
      /record 1 has value length -2/,
    ],
    [
      "record 0's header key is null",
      (b) => resign(poke(b, 70, 1)),
      "record",
      70,
      /record 0 header 0 has key length -1 \(a header key is never null\)/,
    ],
    [
      "record 0's fields end before its Length",
      (b) => resign(poke(b, 72, 0)),
      "record",
      61,
      /record 0 has Length 12 but its fields end 11 bytes in/,
    ],
    [
      "a varint truncated at the end of record 2",
      (b) => resign(poke(b, 91, 0x80)),
      "record",
      91,
      /record 2: varint is truncated/,
    ],
    [
      "RecordCount 4 for three records",
      (b) => resign(int32(int32(b, 57, 4), 23, 3)),
      "record",
      92,
      /the records end after 3 of 4 records/,
    ],
    [
      "two bytes after the last record",
      (b) => {
        const longer = Uint8Array.of(...b, 0, 0);
        view(longer).setInt32(8, longer.length - 12);
        return resign(longer);
      },
      "record",
      92,
      /2 bytes follow the last of 3 records/,
    ],
  ];

  test.each(cases)("%s", (_name, surgery, check, position, reason) => {
    const batch = surgery(three());
    const error = batchError(() => validateBatch(batch, 0, batch.length));
    expect(error.check).toBe(check as typeof error.check);
    expect(error.position).toBe(position);
    expect(error.code).toBe("CORRUPT_RECORD");
    expect(error.message).toContain(`at byte ${position} of the batch`);
    expect(error.message).toMatch(reason);
  });

  test("positions are relative to the batch even inside a larger buffer", () => {
    const batch = three();
    batch[77] = 0;
    resign(batch);
    const host = new Uint8Array(500);
    host.set(batch, 300);
    const error = batchError(() => validateBatch(host, 300, 300 + batch.length));
    expect(error.position).toBe(77);
  });

  test("a batch above the broker's maximum is RECORD_TOO_LARGE", () => {
    const batch = three();
    expect(() => validateBatch(batch, 0, batch.length, { maxBatchBytes: 91 })).toThrow(RecordTooLargeError);
    validateBatch(batch, 0, batch.length, { maxBatchBytes: 92 });
  });
});

describe("what the batch CRC covers", () => {
  test("flipping any byte of [21, end) fails the CRC check", () => {
    const intact = three();
    for (let position = ATTRIBUTES_OFFSET; position < intact.length; position++) {
      const batch = intact.slice();
      batch[position]! ^= 0x10;
      const error = batchError(() => validateBatch(batch, 0, batch.length));
      expect(error.check).toBe("crc");
    }
  });

  test("BaseOffset and PartitionLeaderEpoch are outside it: any values keep the CRC valid", () => {
    const batch = three();
    const crc = readBatchHeader(batch, 0).crc;
    for (const [offset, epoch] of [
      [1, 0],
      [2 ** 53 - 1, 2 ** 31 - 1],
      [123_456_789, -1],
    ] as const) {
      stampBatch(batch, 0, offset, epoch);
      expect(computeBatchCrc(batch, 0, batch.length)).toBe(crc);
      const decoded = decodeBatch(batch);
      expect(decoded.header.partitionLeaderEpoch).toBe(epoch);
      expect(decoded.records.map((record) => record.offset)).toEqual([offset, offset + 1, offset + 2]);
    }
  });
});

describe("stamping", () => {
  test("writes BaseOffset and PartitionLeaderEpoch in place, nothing else", () => {
    const batch = three();
    const before = batch.slice();
    stampBatch(batch, 0, 2 ** 40 + 17, 5);
    expect(hex(batch.subarray(0, 8))).toBe("0000010000000011");
    expect(hex(batch.subarray(12, 16))).toBe("00000005");
    expect(hex(batch.subarray(8, 12))).toBe(hex(before.subarray(8, 12)));
    expect(hex(batch.subarray(16))).toBe(hex(before.subarray(16)));
  });

  test("refuses a negative or unsafe offset and a non-int32 epoch", () => {
    const batch = three();
    expect(() => stampBatch(batch, 0, -1, 0)).toThrow(InvalidArgumentError);
    expect(() => stampBatch(batch, 0, 2 ** 53, 0)).toThrow(InvalidArgumentError);
    expect(() => stampBatch(batch, 0, 0, 2 ** 31)).toThrow(InvalidArgumentError);
    expect(readBatchHeader(batch, BASE_OFFSET_OFFSET).baseOffset).toBe(0);
  });
});

describe("compressed batches", () => {
  const many: RecordInput[] = Array.from({ length: 100 }, (_, i) => ({
    key: utf8(`key-${i % 10}`),
    value: utf8(`value ${i} `.repeat(10)),
    headers: [{ key: "i", value: utf8(String(i)) }],
    timestamp: T + i,
  }));

  test.each([
    ["gzip", 1],
    ["zstd", 4],
  ] as const)("%s: codec bits %i, smaller than plain, round trip", (codec, codecId) => {
    const plainBatch = encodeBatch(many);
    const batch = encodeBatch(many, { codec });
    expect(batch[ATTRIBUTES_OFFSET + 1]! & 7).toBe(codecId);
    expect(batch.length).toBeLessThan(plainBatch.length / 3);
    const header = validateBatch(batch, 0, batch.length);
    expect(header.codecId).toBe(codecId);
    expect(plain(decodeBatch(batch).records)).toEqual(plainInput(many));
  });

  test("damage inside a compressed blob passes the PRODUCE checks (the broker does not inflate) but not the walk", () => {
    const batch = encodeBatch(many, { codec: "gzip" });
    batch[Math.floor((61 + batch.length) / 2)]! ^= 0xff;
    resign(batch);
    validateBatch(batch, 0, batch.length);
    const error = batchError(() => validateBatch(batch, 0, batch.length, { walkCompressed: true }));
    expect(error.check).toBe("record");
    expect(error.position).toBe(61);
    expect(error.message).toMatch(/gzip \(1\) records do not decompress/);
  });

  test("a record error inside decompressed records names that space", () => {
    // Encode records whose OffsetDelta is wrong, then compress them by hand.
    const plainBatch = three();
    plainBatch[77] = 0;
    const zlib = require("node:zlib") as typeof import("node:zlib");
    const blob = zlib.gzipSync(plainBatch.subarray(61));
    const batch = new Uint8Array(61 + blob.length);
    batch.set(plainBatch.subarray(0, 61));
    batch.set(blob, 61);
    view(batch).setInt32(8, batch.length - 12);
    batch[22]! |= 1;
    resign(batch);
    const error = batchError(() => decodeBatch(batch));
    expect(error.position).toBe(77 - 61);
    expect(error.message).toContain("at byte 16 of the gzip (1)-decompressed records");
  });

  test("snappy (raw and xerial-framed) and lz4 batches decode; a blob that is neither is an error naming the codec", () => {
    const snappy = require("snappyjs") as typeof import("snappyjs");
    const lz4 = require("lz4js") as typeof import("lz4js");
    const plain = three();
    const records = plain.slice(61);
    const xerial = (blob: Uint8Array) => {
      const out = new Uint8Array(16 + 4 + blob.length);
      out.set([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
      new DataView(out.buffer).setUint32(16, blob.length);
      out.set(blob, 20);
      return out;
    };
    const cases: [number, Uint8Array][] = [
      [2, snappy.compress(records)],
      [2, xerial(snappy.compress(records))],
      [3, lz4.compress(records)],
    ];
    const expected = decodeBatch(plain).records;
    for (const [codecId, blob] of cases) {
      const batch = new Uint8Array(61 + blob.length);
      batch.set(plain.subarray(0, 61));
      batch.set(blob, 61);
      view(batch).setInt32(8, batch.length - 12);
      batch[22]! |= codecId;
      resign(batch);
      expect(validateBatch(batch, 0, batch.length, { walkCompressed: true }).codecId).toBe(codecId);
      expect(decodeBatch(batch).records).toEqual(expected);
    }
    for (const codecId of [2, 3]) {
      const batch = three();
      batch[22]! |= codecId;
      resign(batch);
      expect(validateBatch(batch, 0, batch.length).codecId).toBe(codecId);
      const error = batchError(() => decodeBatch(batch));
      expect(error.message).toContain(codecId === 2 ? "snappy (2) records do not decompress" : "lz4 (3)");
    }
  });

  test("snappy and lz4 refuse to inflate beyond the limit before allocating it", () => {
    const snappy = require("snappyjs") as typeof import("snappyjs");
    const lz4 = require("lz4js") as typeof import("lz4js");
    const zeros = new Uint8Array(2_000_000);
    for (const [codecId, blob] of [
      [2, snappy.compress(zeros)],
      [3, lz4.compress(zeros)],
    ] as const) {
      expect(blob.length).toBeLessThan(200_000);
      expect(() => decompressRecords(codecId, blob, 0, blob.length, 61, 1_000_000)).toThrow(
        CorruptRecordError,
      );
      expect(decompressRecords(codecId, blob, 0, blob.length, 61, 2_000_000).length).toBe(2_000_000);
    }
  });

  test("decompression stops at the limit instead of inflating a bomb", () => {
    const zlib = require("node:zlib") as typeof import("node:zlib");
    const bomb = zlib.gzipSync(new Uint8Array(10_000_000));
    expect(bomb.length).toBeLessThan(20_000);
    let caught: unknown;
    try {
      decompressRecords(1, bomb, 0, bomb.length, 61, 1_000_000);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CorruptRecordError);
    expect((caught as Error).message).toMatch(/inflate beyond the 1000000-byte limit/);
  });
});

describe("the reader (pull style) and forEachRecord (push style) are one walker", () => {
  test("one reader walks batch after batch, plain and compressed, with the same view object", () => {
    const reader = new RecordBatchReader();
    const views = new Set<RecordView>();
    const seen: number[] = [];
    for (const codec of ["none", "zstd", "none", "gzip"] as const) {
      const batch = encodeBatch(THREE, { codec });
      stampBatch(batch, 0, seen.length, 0);
      reader.open(batch, 0, batch.length);
      expect(reader.recordCount).toBe(3);
      for (let record = reader.next(); record !== undefined; record = reader.next()) {
        views.add(record);
        seen.push(record.offset);
      }
      expect(reader.next()).toBeUndefined();
    }
    expect(seen).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(views.size).toBe(1);
  });

  test("trailing bytes are reported when the reader reaches the end, not before", () => {
    const batch = Uint8Array.of(...three(), 0, 0);
    int32(batch, 8, batch.length - 12);
    const reader = new RecordBatchReader().open(batch, 0, batch.length);
    expect(reader.next()?.index).toBe(0);
    expect(reader.next()?.index).toBe(1);
    expect(reader.next()?.index).toBe(2);
    expect(batchError(() => reader.next()).message).toMatch(/2 bytes follow the last of 3 records/);
  });

  test("a visitor's own CorruptRecordError passes through forEachRecord untouched", () => {
    const batch = three();
    const own = new CorruptRecordError("the visitor's reason", 12345);
    let caught: unknown;
    try {
      forEachRecord(batch, 0, batch.length, () => {
        throw own;
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBe(own);
  });
});
