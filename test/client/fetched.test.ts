/**
 * The client's check of a FETCH answer (src/client/fetched.ts), over bytes built like a broker
 * stores them: stamped batches in framed entries. Records below the asked offset are dropped, every
 * CRC is checked, a partial tail is left for the next fetch, and damage names its position.
 */
import { describe, expect, test } from "bun:test";
import { checkFetchedEntries, forEachFetchedRecord } from "../../src/client/fetched.ts";
import { CorruptRecordError } from "../../src/domain/errors.ts";
import {
  computeBatchCrc,
  encodeBatch,
  RecordBatchReader,
  type RecordInput,
  stampBatch,
} from "../../src/record/batch.ts";
import { writeFramedEntry } from "../../src/record/entries.ts";

const text = new TextEncoder();

/** Framed entries of `batches` (records per batch), stamped from `baseOffset` on, as stored. */
function storedEntries(baseOffset: number, batches: RecordInput[][]): Uint8Array {
  const encoded = batches.map((records) => encodeBatch(records));
  const out = new Uint8Array(encoded.reduce((sum, batch) => sum + 8 + batch.length, 0));
  let position = 0;
  let offset = baseOffset;
  encoded.forEach((batch, i) => {
    stampBatch(batch, 0, offset, -1);
    position = writeFramedEntry(out, position, batch);
    offset += batches[i]!.length;
  });
  return out;
}

const record = (value: string, timestamp = 1000): RecordInput => ({
  key: text.encode(`k-${value}`),
  value: text.encode(value),
  headers: [{ key: "h", value: text.encode(value) }],
  timestamp,
});

function valuesFrom(bytes: Uint8Array, from: number): { offset: number; value: string }[] {
  const checked = checkFetchedEntries(bytes, from);
  const out: { offset: number; value: string }[] = [];
  forEachFetchedRecord(bytes, checked.batchBounds, from, new RecordBatchReader(), (view) =>
    out.push({
      offset: view.offset,
      value: new TextDecoder().decode(
        view.bytes.subarray(view.valueStart, view.valueStart + view.valueLength),
      ),
    }),
  );
  return out;
}

describe("checkFetchedEntries", () => {
  const bytes = storedEntries(10, [
    [record("a"), record("b"), record("c")],
    [record("d"), record("e")],
  ]);

  test("a fetch from inside a batch: the whole batch came, the records below the offset are dropped", () => {
    const checked = checkFetchedEntries(bytes, 11);
    expect(checked.firstOffset).toBe(10);
    expect(checked.nextFetchOffset).toBe(15);
    expect(checked.completeBytes).toBe(bytes.length);
    expect(valuesFrom(bytes, 11)).toEqual([
      { offset: 11, value: "b" },
      { offset: 12, value: "c" },
      { offset: 13, value: "d" },
      { offset: 14, value: "e" },
    ]);
    expect(valuesFrom(bytes, 10).map((r) => r.offset)).toEqual([10, 11, 12, 13, 14]);
  });

  test("a partial tail entry is left for the next fetch, not an error", () => {
    const cut = bytes.subarray(0, bytes.length - 3);
    const checked = checkFetchedEntries(cut, 10);
    expect(checked.nextFetchOffset).toBe(13);
    expect(checked.batchBounds.length).toBe(2);
    expect(checkFetchedEntries(new Uint8Array(0), 7)).toEqual({
      completeBytes: 0,
      firstOffset: 7,
      nextFetchOffset: 7,
      batchBounds: [],
    });
  });

  test("damage after a valid entry ends the answer there: the valid entries are handed out (issue 15)", () => {
    const firstEntryBytes = checkFetchedEntries(bytes.subarray(0, bytes.length - 3), 10).completeBytes;
    for (const position of [firstEntryBytes + 3, firstEntryBytes + 20, bytes.length - 1]) {
      const damaged = bytes.slice();
      damaged[position] = damaged[position]! ^ 0x40;
      const checked = checkFetchedEntries(damaged, 10);
      expect(checked.completeBytes).toBe(firstEntryBytes);
      expect(checked.nextFetchOffset).toBe(13);
      expect(valuesFrom(damaged.subarray(0, checked.completeBytes), 10).map((r) => r.offset)).toEqual([
        10, 11, 12,
      ]);
    }
  });

  test("a damaged byte anywhere in the first entry is a CorruptRecordError naming the offset", () => {
    for (const position of [9, 20, 70]) {
      const damaged = bytes.slice();
      damaged[position] = damaged[position]! ^ 0x40;
      let caught: unknown;
      try {
        checkFetchedEntries(damaged, 10);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(CorruptRecordError);
      expect((caught as Error).message).toContain("from offset 10");
    }
  });

  test("a batch whose own CRC is wrong under a valid frame CRC is refused too", () => {
    const batch = encodeBatch([record("x")]);
    batch[17] = batch[17]! ^ 1; // the batch CRC field
    stampBatch(batch, 0, 0, -1);
    const framed = new Uint8Array(8 + batch.length);
    writeFramedEntry(framed, 0, batch); // the frame CRC covers the damaged batch: it matches
    expect(() => checkFetchedEntries(framed, 0)).toThrow("batch CRC32C");
  });

  test("a batch of a codec the format does not know is an error naming the codec, not garbage", () => {
    const batch = encodeBatch([record("x")]);
    batch[22] = (batch[22]! & ~7) | 6; // attributes bits 0-2: codec 6
    new DataView(batch.buffer).setUint32(17, computeBatchCrc(batch, 0, batch.length));
    stampBatch(batch, 0, 0, -1);
    const framed = new Uint8Array(8 + batch.length);
    writeFramedEntry(framed, 0, batch);
    const checked = checkFetchedEntries(framed, 0);
    expect(() =>
      forEachFetchedRecord(framed, checked.batchBounds, 0, new RecordBatchReader(), () => {}),
    ).toThrow("compression codec 6 is unknown");
  });

  test("entries that do not contain the offset asked for are refused", () => {
    expect(() => checkFetchedEntries(bytes, 15)).toThrow("covering offsets 10 to 14");
    expect(() => checkFetchedEntries(bytes, 9)).toThrow("covering offsets 10 to 14");
  });
});
