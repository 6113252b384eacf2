/**
 * RecordBatchReader's two paths (src/record/batch.ts): `parseCommon` decodes the common record (no
 * headers, short varints) and `parse` everything else. Whichever path a record takes, the reader
 * must hand out exactly what was written: records of every shape around the varint boundaries
 * (value and key lengths 63/64 and 8191/8192, offset deltas past 63 and 8191, timestamp deltas of
 * one byte and more), mixed in one batch so that the paths alternate. Faults are covered by the
 * damage table in batch.test.ts, whose records are of the common shape.
 */
import { describe, expect, test } from "bun:test";
import {
  encodeBatch,
  RecordBatchReader,
  type RecordInput,
  recordHeaders,
  recordKey,
  recordValue,
} from "../../src/record/batch.ts";

function bytes(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 13 + seed) & 0xff);
}

function readAll(batch: Uint8Array): {
  offset: number;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: { key: string; value: Uint8Array | null }[];
}[] {
  const reader = new RecordBatchReader().open(batch, 0, batch.length);
  const out = [];
  let previousEnd = -1;
  for (let view = reader.next(); view !== undefined; view = reader.next()) {
    // Records tile the batch: each starts where the previous ended.
    if (previousEnd >= 0) expect(view.recordStart).toBe(previousEnd);
    previousEnd = view.recordEnd;
    out.push({
      offset: view.offset,
      timestamp: view.timestamp,
      key: recordKey(view)?.slice() ?? null,
      value: recordValue(view)?.slice() ?? null,
      headers:
        view.headerCount === 0
          ? []
          : recordHeaders(view).map((h) => ({ key: h.key, value: h.value?.slice() ?? null })),
    });
  }
  return out;
}

describe("RecordBatchReader reads back every record shape exactly", () => {
  const base = 1_700_000_000_000;
  const shapes: RecordInput[] = [];
  const valueLengths = [0, 1, 62, 63, 64, 65, 100, 8190, 8191, 8192, 8193];
  let seed = 0;
  for (const valueLength of valueLengths) {
    for (const key of [null, new Uint8Array(0), bytes(16, 1), bytes(63, 2), bytes(64, 3)]) {
      for (const timestampDelta of [0, 5, 63, 64, -1, 100_000]) {
        seed++;
        shapes.push({ key, value: bytes(valueLength, seed), timestamp: base + timestampDelta });
      }
    }
  }
  shapes.push({ key: null, value: null, timestamp: base });
  shapes.push({ key: bytes(3, 4), value: null, timestamp: base });
  shapes.push({
    key: null,
    value: bytes(10, 5),
    headers: [{ key: "h", value: bytes(4, 6) }],
    timestamp: base,
  });
  shapes.push({ key: null, value: bytes(10, 7), headers: [{ key: "n", value: null }], timestamp: base });

  test("one batch of all shapes (offset deltas past 63), alternating with records with headers", () => {
    const records: RecordInput[] = [];
    shapes.forEach((record, i) => {
      records.push(record);
      if (i % 7 === 0)
        records.push({
          key: null,
          value: bytes(20, i),
          headers: [{ key: `k${i}`, value: bytes(2, i) }],
          timestamp: base + 1,
        });
    });
    const read = readAll(encodeBatch(records));
    expect(read.length).toBe(records.length);
    read.forEach((got, i) => {
      const want = records[i]!;
      expect(got.offset).toBe(i);
      expect(got.timestamp).toBe(want.timestamp);
      expect(got.key).toEqual(want.key);
      expect(got.value).toEqual(want.value);
      expect(got.headers).toEqual((want.headers ?? []).map((h) => ({ key: h.key, value: h.value })));
    });
  });

  test("offset deltas of one, two and three bytes (records 0-63, 64-8191, from 8192)", () => {
    const records: RecordInput[] = Array.from({ length: 8300 }, (_, i) => ({
      key: i % 3 === 0 ? null : bytes(4, i),
      value: bytes(i % 70, i),
      timestamp: base + (i % 100),
    }));
    const read = readAll(encodeBatch(records));
    expect(read.length).toBe(records.length);
    for (const i of [0, 63, 64, 65, 8191, 8192, 8193, 8299]) {
      expect(read[i]!.offset).toBe(i);
      expect(read[i]!.key).toEqual(records[i]!.key);
      expect(read[i]!.value).toEqual(records[i]!.value);
      expect(read[i]!.timestamp).toBe(records[i]!.timestamp);
    }
    read.forEach((got, i) => {
      expect(got.value).toEqual(records[i]!.value);
    });
  });
});
