/**
 * The record model through the embedded broker (format 2, issue 11): what goes in with `produce` or
 * `append` comes out of `tail` and reads with the same keys, values, null values, headers and
 * timestamps; LogAppendTime topics stamp the broker's clock; a read from inside a batch returns the
 * whole batch; every validation rule refuses the whole request and leaves the log unchanged; time
 * lookups agree with a reference model; a data directory of format 1 is refused with the command
 * that converts it.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { crc32c } from "../../ffi/crc32c.ts";
import { Broker } from "../../src/broker/broker.ts";
import { DataDirFormatError, InvalidArgumentError } from "../../src/domain/errors.ts";
import type { Offset } from "../../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES } from "../../src/domain/limits.ts";
import {
  ATTRIBUTE_LOG_APPEND_TIME,
  ATTRIBUTES_OFFSET,
  BASE_OFFSET_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_OFFSET,
  CRC_OFFSET,
  computeBatchCrc,
  type DecodedRecord,
  decodeBatch,
  encodeBatch,
  InvalidBatchError,
  LAST_OFFSET_DELTA_OFFSET,
  MAGIC_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_COUNT_OFFSET,
  RECORDS_OFFSET,
  type RecordInput,
} from "../../src/record/batch.ts";
import { RecordBatchBuilder } from "../../src/record/batch-builder.ts";
import { batchOfValues, scanEntries, valuesOfEntries } from "../../src/record/entries.ts";
import { encodeSegmentHeader, segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const SEED = testSeed();
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytes = (text: string) => encoder.encode(text);

/** Takes `count` records from the broker's tail, starting at `offset`. */
async function take(broker: Broker, topic: string, offset: number, count: number): Promise<DecodedRecord[]> {
  const records: DecodedRecord[] = [];
  const tail = broker.tail(topic, 0, offset);
  while (records.length < count) {
    const next = await tail.next();
    if (next.done) break;
    records.push(next.value);
  }
  await tail.return(undefined);
  return records;
}

function plain(record: DecodedRecord) {
  return {
    offset: record.offset,
    timestamp: record.timestamp,
    key: record.key === null ? null : decoder.decode(record.key),
    value: record.value === null ? null : decoder.decode(record.value),
    headers: record.headers.map((h) => [h.key, h.value === null ? null : decoder.decode(h.value)]),
  };
}

/** Every stored entry of a read, decoded (batch CRC checked by decodeBatch, frame CRC by the scan). */
function storedBatches(records: Uint8Array) {
  const batches: ReturnType<typeof decodeBatch>[] = [];
  const scan = scanEntries(
    records,
    0,
    records.length,
    { framing: "framed", verifyCrc: true },
    undefined,
    (_e, start, end) => batches.push(decodeBatch(records, start, end)),
  );
  expect(scan.stop).toBe("end");
  return batches;
}

describe.each(WRITE_MODES.map((mode) => [mode]))(
  "produce and tail, %s write path",
  (writeMode: WriteMode) => {
    test("keys, values, null values, headers and timestamps round-trip, also after a restart", async () => {
      using dir = tempDir();
      let broker = Broker.open({ dataDir: dir.path, topicDefaults: { writeMode } });
      const t = 1_700_000_000_000;
      const first: RecordInput[] = [
        {
          key: bytes("k1"),
          value: bytes("v1"),
          timestamp: t,
          headers: [{ key: "trace", value: bytes("abc") }],
        },
        { key: null, value: null, timestamp: t - 5 },
        {
          key: new Uint8Array(0),
          value: new Uint8Array(0),
          timestamp: t + 7,
          headers: [
            { key: "a", value: null },
            { key: "ü", value: bytes("2") },
          ],
        },
      ];
      const second: RecordInput[] = [{ key: bytes("k4"), value: bytes("v4"), timestamp: t + 1 }];
      const expected = [
        { offset: 0, timestamp: t, key: "k1", value: "v1", headers: [["trace", "abc"]] },
        { offset: 1, timestamp: t - 5, key: null, value: null, headers: [] },
        {
          offset: 2,
          timestamp: t + 7,
          key: "",
          value: "",
          headers: [
            ["a", null],
            ["ü", "2"],
          ],
        },
        { offset: 3, timestamp: t + 1, key: "k4", value: "v4", headers: [] },
      ];
      try {
        broker.createTopic("r", { durability: "force" });
        const ack = await broker.produce("r", 0, first);
        expect(ack).toEqual({
          firstOffset: 0 as Offset,
          recordCount: 3,
          durability: "forced",
          logAppendTimeMs: -1,
        });
        expect((await broker.produce("r", 0, second, { codec: "gzip" })).firstOffset).toBe(3 as Offset);
        expect((await take(broker, "r", 0, 4)).map(plain)).toEqual(expected);
        // Stored as sent (CreateTime), stamped with offsets and no leader epoch; the gzip batch stays compressed.
        const stored = storedBatches(broker.read("r", 0, 0).records);
        expect(
          stored.map((b) => [b.header.baseOffset, b.header.partitionLeaderEpoch, b.header.codecId]),
        ).toEqual([
          [0, -1, 0],
          [3, -1, 1],
        ]);
      } finally {
        await broker.close();
      }
      broker = Broker.open({ dataDir: dir.path });
      try {
        expect((await take(broker, "r", 0, 4)).map(plain)).toEqual(expected);
      } finally {
        await broker.close();
      }
    });

    test("a read, a file lease and a tail from inside a batch start with that whole batch", async () => {
      using dir = tempDir();
      const broker = Broker.open({ dataDir: dir.path });
      try {
        broker.createTopic("m", { durability: "append" });
        await broker.append("m", 0, batchOfValues(["a", "b", "c"]));
        await broker.append("m", 0, batchOfValues(["d", "e"]));
        // FETCH-style: offset 4 lies in the second batch (3..4); the reply is that whole batch.
        const read = broker.read("m", 0, 4, 1);
        expect(read.firstOffset).toBe(3);
        expect(read.recordCount).toBe(2);
        expect(valuesOfEntries(read.records).map((v) => decoder.decode(v!))).toEqual(["d", "e"]);
        const fromMiddle = broker.read("m", 0, 1);
        expect(fromMiddle.firstOffset).toBe(0);
        expect(fromMiddle.recordCount).toBe(5);
        const lease = broker.partition("m", 0).fetchLease(1, 1)!;
        try {
          expect(lease.firstOffset).toBe(0);
          expect(lease.recordCount).toBe(3);
          const sent = new Uint8Array(lease.lengthBytes);
          expect(fs.readSync(lease.fd, sent, 0, lease.lengthBytes, lease.position)).toBe(lease.lengthBytes);
          expect(valuesOfEntries(sent).map((v) => decoder.decode(v!))).toEqual(["a", "b", "c"]);
        } finally {
          lease.release();
        }
        // The tail drops the records below the offset asked for.
        expect((await take(broker, "m", 1, 4)).map((r) => [r.offset, decoder.decode(r.value!)])).toEqual([
          [1, "b"],
          [2, "c"],
          [3, "d"],
          [4, "e"],
        ]);
      } finally {
        await broker.close();
      }
    });

    test("several batches in one append get consecutive offsets; the producer's bytes are not modified", async () => {
      using dir = tempDir();
      const broker = Broker.open({ dataDir: dir.path });
      try {
        broker.createTopic("multi", { durability: "append" });
        const request = Buffer.concat([
          batchOfValues(["a", "b"]),
          batchOfValues(["c"]),
          batchOfValues(["d", "e"]),
        ]);
        const copy = Uint8Array.from(request);
        const ack = await broker.append("multi", 0, request);
        expect(ack.firstOffset).toBe(0 as Offset);
        expect(ack.recordCount).toBe(5);
        expect(Buffer.compare(request, copy)).toBe(0);
        // The same bytes again: still BaseOffset 0, so valid; they go to offsets 5..9.
        expect((await broker.append("multi", 0, request)).firstOffset).toBe(5 as Offset);
        const stored = storedBatches(broker.read("multi", 0, 0).records);
        expect(stored.map((b) => b.header.baseOffset)).toEqual([0, 2, 3, 5, 7, 8]);
      } finally {
        await broker.close();
      }
    });
  },
);

describe.each(WRITE_MODES.map((mode) => [mode]))("LogAppendTime, %s write path", (writeMode: WriteMode) => {
  test("every record reads the append time; the stored batch passes its CRC; the setting persists", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path, topicDefaults: { writeMode } });
    try {
      broker.createTopic("lat", { timestampType: "LogAppendTime", durability: "append" });
      expect(broker.describeTopic("lat").config.timestampType).toBe("LogAppendTime");
      const before = Date.now();
      const ack = await broker.produce("lat", 0, [
        { key: null, value: bytes("x"), timestamp: 5 },
        { key: null, value: bytes("y"), timestamp: 6 },
      ]);
      const after = Date.now();
      expect(ack.logAppendTimeMs).toBeGreaterThanOrEqual(before);
      expect(ack.logAppendTimeMs).toBeLessThanOrEqual(after);
      const records = await take(broker, "lat", 0, 2);
      expect(records.map((r) => r.timestamp)).toEqual([ack.logAppendTimeMs, ack.logAppendTimeMs]);
      const [stored] = storedBatches(broker.read("lat", 0, 0).records);
      expect(stored!.header.attributes & ATTRIBUTE_LOG_APPEND_TIME).toBe(ATTRIBUTE_LOG_APPEND_TIME);
      expect(stored!.header.maxTimestamp).toBe(ack.logAppendTimeMs);
      // The CreateTime default topic leaves timestamps alone.
      broker.createTopic("ct");
      expect(broker.describeTopic("ct").config.timestampType).toBe("CreateTime");
    } finally {
      await broker.close();
    }
    broker = Broker.open({ dataDir: dir.path });
    try {
      expect(broker.describeTopic("lat").config.timestampType).toBe("LogAppendTime");
      expect(() => broker.createTopic("bad", { timestampType: "WallClock" } as never)).toThrow(
        InvalidArgumentError,
      );
      expect(() => broker.createTopic("bad", { timestampType: "WallClock" } as never)).toThrow(
        /timestampType must be one of CreateTime, LogAppendTime, got "WallClock"/,
      );
    } finally {
      await broker.close();
    }
  });
});

/** Recomputes the batch CRC after a change to a covered field (so only the intended rule breaks). */
function withCrc(batch: Uint8Array): Uint8Array {
  new DataView(batch.buffer, batch.byteOffset).setUint32(CRC_OFFSET, computeBatchCrc(batch, 0, batch.length));
  return batch;
}

function mutated(edit: (batch: Uint8Array, view: DataView) => void, crc = true): Uint8Array {
  const batch = batchOfValues(["one", "two"]);
  edit(batch, new DataView(batch.buffer, batch.byteOffset));
  return crc ? withCrc(batch) : batch;
}

describe("validation through Partition.append", () => {
  const cases: [string, string, () => Uint8Array][] = [
    ["size", "size", () => batchOfValues(["x"]).subarray(0, 40)],
    [
      "batch-length",
      "batch-length",
      // Batches are back to back, so BatchLength says where one ends: one that runs past the
      // bytes received is the error (a shorter one makes the rest a next, broken batch).
      () => mutated((_b, v) => v.setInt32(BATCH_LENGTH_OFFSET, v.getInt32(BATCH_LENGTH_OFFSET) + 1), false),
    ],
    ["magic", "magic", () => mutated((b) => (b[MAGIC_OFFSET] = 1), false)],
    ["crc", "crc", () => mutated((b) => (b[b.length - 1]! ^= 1), false)],
    ["base-offset", "base-offset", () => mutated((_b, v) => v.setUint32(BASE_OFFSET_OFFSET + 4, 7), false)],
    ["control", "control", () => mutated((_b, v) => v.setInt16(ATTRIBUTES_OFFSET, 0x20))],
    ["codec", "codec", () => mutated((_b, v) => v.setInt16(ATTRIBUTES_OFFSET, 5))],
    ["record-count", "record-count", () => mutated((_b, v) => v.setInt32(RECORD_COUNT_OFFSET, 0))],
    [
      "last-offset-delta",
      "last-offset-delta",
      () => mutated((_b, v) => v.setInt32(LAST_OFFSET_DELTA_OFFSET, 5)),
    ],
    [
      "sequence",
      "sequence",
      () =>
        mutated((_b, v) => {
          v.setInt32(PRODUCER_ID_OFFSET + 4, 1);
          v.setInt32(PRODUCER_ID_OFFSET, 0);
          v.setInt32(BASE_SEQUENCE_OFFSET, -1);
        }),
    ],
    ["record", "record", () => mutated((b) => (b[RECORDS_OFFSET + 3] = 0x09))],
  ];

  for (const [name, check, make] of cases) {
    test(`${name}: refused whole with its rule and position; the log is unchanged`, async () => {
      using dir = tempDir();
      const broker = Broker.open({ dataDir: dir.path });
      try {
        broker.createTopic("v", { durability: "append" });
        await broker.append("v", 0, batchOfValues(["before"]));
        const sizeBefore = broker.describeTopic("v").partitions[0]!.sizeBytes;
        const bad = make();
        let error: unknown;
        try {
          await broker.append("v", 0, bad);
        } catch (caught) {
          error = caught;
        }
        expect(error).toBeInstanceOf(InvalidBatchError);
        expect((error as InvalidBatchError).check).toBe(check as InvalidBatchError["check"]);
        expect((error as InvalidBatchError).code).toBe("CORRUPT_RECORD");
        expect((error as Error).message).toMatch(/at byte \d+ of/);
        // Also when it is the second batch of a request: nothing of the first one is written.
        let second: unknown;
        try {
          await broker.append("v", 0, Buffer.concat([batchOfValues(["fine"]), bad]));
        } catch (caught) {
          second = caught;
        }
        expect(second).toBeInstanceOf(InvalidBatchError);
        const fineBytes = batchOfValues(["fine"]).length;
        expect((second as Error).message).toContain(`batch 1 (at byte ${fineBytes} of the records)`);
        const partition = broker.describeTopic("v").partitions[0]!;
        expect(partition.nextOffset).toBe(1);
        expect(partition.sizeBytes).toBe(sizeBefore);
        expect(valuesOfEntries(broker.read("v", 0, 0).records).map((v) => decoder.decode(v!))).toEqual([
          "before",
        ]);
      } finally {
        await broker.close();
      }
    });
  }

  test("a batch above the topic's maxRecordBytes is RECORD_TOO_LARGE; an empty request is refused", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("small", { durability: "append", maxRecordBytes: 200 });
      await expect(broker.append("small", 0, batchOfValues([new Uint8Array(300)]))).rejects.toMatchObject({
        code: "RECORD_TOO_LARGE",
      });
      await expect(broker.append("small", 0, new Uint8Array(0))).rejects.toBeInstanceOf(InvalidBatchError);
      expect(broker.describeTopic("small").partitions[0]!.nextOffset).toBe(0);
    } finally {
      await broker.close();
    }
  });
});

/** Small segments with a dense time index, so that lookups cross segments and index entries. */
const timeLookupTopic = (timestampType: "CreateTime" | "LogAppendTime") => ({
  durability: "append" as const,
  segmentBytes: 4096,
  indexIntervalBytes: 200,
  timestampType,
});

describe(`time lookups against a reference model (seed ${SEED})`, () => {
  for (const timestampType of ["CreateTime", "LogAppendTime"] as const) {
    test(`${timestampType}: random batches over several segments, before and after a restart`, async () => {
      using dir = tempDir();
      const random = new Random(SEED);
      let broker = Broker.open({ dataDir: dir.path });
      /** timestamp of each offset as a reader sees it. */
      const model: number[] = [];
      const base = 1_700_000_000_000;
      try {
        broker.createTopic("t", timeLookupTopic(timestampType));
        for (let batch = 0; batch < 120; batch++) {
          const count = random.int(1, 8);
          // Non-monotonic: later batches may carry older timestamps, and so may records within one.
          const records: RecordInput[] = Array.from({ length: count }, () => ({
            key: null,
            value: random.bytes(random.int(1, 80)),
            timestamp: base + batch * 100 + random.int(-400, 400),
          }));
          const ack = await broker.produce("t", 0, records);
          for (const record of records)
            model.push(timestampType === "LogAppendTime" ? ack.logAppendTimeMs : record.timestamp);
        }
        expect(broker.describeTopic("t").partitions[0]!.segments).toBeGreaterThan(3);
      } finally {
        await broker.close();
      }
      const check = (b: Broker) => {
        const targets = [model[0]! - 1, Math.max(...model), Math.max(...model) + 1];
        for (let i = 0; i < 300; i++) targets.push(random.int(model[0]! - 1000, Math.max(...model) + 10));
        for (const target of targets) {
          const index = model.findIndex((timestamp) => timestamp >= target);
          const expected = index < 0 ? undefined : { offset: index, timestampMs: model[index]! };
          expect(b.offsetForTimestamp("t", 0, target), `target ${target}`).toEqual(expected);
        }
      };
      broker = Broker.open({ dataDir: dir.path });
      try {
        check(broker); // sealed segments opened without a scan: their time index is built lazily
        check(broker);
      } finally {
        await broker.close();
      }
    });
  }

  for (const timestampType of ["CreateTime", "LogAppendTime"] as const) {
    test(`${timestampType}: the largest timestamp (ListOffsets −3) over any visible range, after purges, before and after a restart`, async () => {
      using dir = tempDir();
      const random = new Random(SEED + 1);
      let broker = Broker.open({ dataDir: dir.path });
      const model: number[] = [];
      /** Where each batch ends: a visible end is always one (a batch becomes visible whole). */
      const batchEnds: number[] = [];
      const base = 1_700_000_000_000;
      /** The first offset in [start, end) holding the largest timestamp there. */
      const expected = (start: number, end: number) => {
        let found: { offset: number; timestampMs: number } | undefined;
        for (let offset = start; offset < end; offset++)
          if (found === undefined || model[offset]! > found.timestampMs)
            found = { offset, timestampMs: model[offset]! };
        return found;
      };
      const check = (b: Broker, start: number) => {
        const log = b.partition("t", 0).log;
        expect(log.logStartOffset).toBe(start as Offset);
        const visible = batchEnds.filter((end) => end >= start);
        const ends = [model.length, visible[0]!];
        for (let i = 0; i < 60; i++) ends.push(visible[random.int(0, visible.length - 1)]!);
        for (const end of ends)
          expect(log.offsetForLargestTimestamp(end), `[${start}, ${end})`).toEqual(expected(start, end));
        expect(b.partition("t", 0).offsetForLargestTimestamp()).toEqual(expected(start, model.length));
      };
      try {
        broker.createTopic("t", timeLookupTopic(timestampType));
        for (let batch = 0; batch < 120; batch++) {
          // Timestamps that go back and forth, with repeats of the largest so far.
          const records: RecordInput[] = Array.from({ length: random.int(1, 8) }, () => ({
            key: null,
            value: random.bytes(random.int(1, 80)),
            timestamp: base + random.int(0, 40) * 100,
          }));
          const ack = await broker.produce("t", 0, records);
          for (const record of records)
            model.push(timestampType === "LogAppendTime" ? ack.logAppendTimeMs : record.timestamp);
          batchEnds.push(model.length);
        }
        expect(broker.describeTopic("t").partitions[0]!.segments).toBeGreaterThan(3);
        check(broker, 0);
        // A purge inside a batch: records below the new start no longer count.
        const purgedTo = random.int(5, Math.floor(model.length / 3));
        await broker.purge("t", 0, purgedTo);
        check(broker, purgedTo);
      } finally {
        await broker.close();
      }
      broker = Broker.open({ dataDir: dir.path });
      try {
        const start = broker.partition("t", 0).log.logStartOffset;
        check(broker, start); // sealed segments opened without a scan: indexed on the first question
        await broker.purge("t", 0, start + random.int(1, 40));
        check(broker, broker.partition("t", 0).log.logStartOffset);
      } finally {
        await broker.close();
      }
    });
  }

  test("the largest timestamp after a purge inside the batch that held it: the largest of what is left", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("p", { durability: "append" });
      const at = (timestamp: number) => ({ key: null, value: bytes(String(timestamp)), timestamp });
      await broker.produce("p", 0, [at(1000), at(9000), at(2000)]);
      await broker.produce("p", 0, [at(3000)]);
      const partition = broker.partition("p", 0);
      expect(partition.offsetForLargestTimestamp()).toEqual({ offset: 1, timestampMs: 9000 });
      await broker.purge("p", 0, 2);
      // The first batch still holds 9000 (MaxTimestamp 9000), below the log start now.
      expect(partition.offsetForLargestTimestamp()).toEqual({ offset: 3, timestampMs: 3000 });
      await broker.purge("p", 0, 4);
      expect(partition.offsetForLargestTimestamp()).toBeUndefined();
    } finally {
      await broker.close();
    }
  });

  test("under force only durable records are found", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("f", { durability: "force" });
      await broker.produce("f", 0, [{ key: null, value: bytes("a"), timestamp: 1000 }]);
      const partition = broker.partition("f", 0);
      partition.log.append(batchOfValues(["unforced"], 2000)); // written, not forced: not visible
      expect(broker.offsetForTimestamp("f", 0, 1500)).toBeUndefined();
      expect(partition.offsetForLargestTimestamp()).toEqual({ offset: 0, timestampMs: 1000 });
      expect(broker.offsetForTimestamp("f", 0, 0)).toEqual({ offset: 0, timestampMs: 1000 });
      await partition.log.force();
      expect(broker.offsetForTimestamp("f", 0, 1500)).toEqual({ offset: 1, timestampMs: 2000 });
      expect(partition.offsetForLargestTimestamp()).toEqual({ offset: 1, timestampMs: 2000 });
    } finally {
      await broker.close();
    }
  });
});

describe("format 1 data directories", () => {
  test("are refused at open with the command that converts them; nothing is changed", async () => {
    using dir = tempDir();
    // A topic as format 1 left it: its file, and a partition with a format-1 segment of records.
    let broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("old", { durability: "force" });
    await broker.close();
    const partitionDir = path.join(dir.path, "old-0");
    for (const name of fs.readdirSync(partitionDir)) fs.rmSync(path.join(partitionDir, name));
    const builder = new RecordBatchBuilder();
    builder.add(bytes("format one"));
    const segment = Buffer.concat([encodeSegmentHeader(0 as Offset, 1), builder.bytes()]);
    const file = path.join(partitionDir, segmentFileName(0 as Offset));
    fs.writeFileSync(file, segment);
    let error: unknown;
    try {
      broker = Broker.open({ dataDir: dir.path });
      await broker.close();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DataDirFormatError);
    expect((error as Error).message).toContain(`booblik-cli migrate ${dir.path}`);
    expect((error as Error).message).toContain("storage format 1");
    expect((error as Error).message).toContain(file);
    expect(Buffer.compare(fs.readFileSync(file), segment)).toBe(0);
    // The lock was released: the directory can be opened (after conversion) by another broker.
    fs.rmSync(file);
    fs.writeFileSync(file, Buffer.concat([encodeSegmentHeader(0 as Offset), new Uint8Array(0)]));
    broker = Broker.open({ dataDir: dir.path });
    await broker.close();
  });
});

// A frame CRC in a stored entry covers the stamped BaseOffset (checked in test/storage/surgery.test.ts);
// here only that the entry frame is the documented 8 bytes with a CRC over the batch.
test("a stored entry is [length][crc32c][batch] with the stamped batch", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path });
  try {
    broker.createTopic("e", { durability: "append" });
    await broker.append("e", 0, batchOfValues(["p"]));
    await broker.append("e", 0, encodeBatch([{ key: null, value: bytes("q"), timestamp: 1 }]));
    const read = broker.read("e", 0, 1);
    const view = new DataView(read.records.buffer, read.records.byteOffset);
    const length = view.getUint32(0);
    expect(read.records.length).toBe(ENTRY_HEADER_BYTES + length);
    expect(view.getUint32(4)).toBe(crc32c(read.records, ENTRY_HEADER_BYTES, read.records.length));
    expect(decodeBatch(read.records, ENTRY_HEADER_BYTES).header.baseOffset).toBe(1);
  } finally {
    await broker.close();
  }
});
