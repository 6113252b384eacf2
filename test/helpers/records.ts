/**
 * Reading what a FETCH brought in tests, the way the client library reads it: the whole entries
 * from the one containing the asked offset, records below it dropped (src/client/fetched.ts).
 */
import type { BooblikClient, FetchResult } from "../../src/client/client.ts";
import { type ConsumedRecord, consumedRecord, forEachFetchedRecord } from "../../src/client/fetched.ts";
import { RecordBatchReader, stampBatch } from "../../src/record/batch.ts";
import { batchOfValues, valuesOfEntries, writeFramedEntry } from "../../src/record/entries.ts";

const DECODER = new TextDecoder();

/** The records of `result` from offset `from` on (the offset the fetch asked for). */
export function fetchedRecords(
  result: FetchResult,
  from: number,
  topic = "",
  partition = 0,
): ConsumedRecord[] {
  const records: ConsumedRecord[] = [];
  forEachFetchedRecord(result.records, result.batchBounds, from, new RecordBatchReader(), (view) =>
    records.push(consumedRecord(topic, partition, view)),
  );
  return records;
}

/** The values of `result` from offset `from` on (null values as null). */
export function fetchedValues(result: FetchResult, from: number): (Uint8Array | null)[] {
  return fetchedRecords(result, from).map((record) => record.value);
}

/** The values of `result` from offset `from` on, as UTF-8 text. */
export function fetchedTexts(result: FetchResult, from: number): string[] {
  return fetchedValues(result, from).map((value) => (value === null ? "<null>" : DECODER.decode(value)));
}

/** Every value of [from, to), fetch after fetch of at most `maxBytes`; each fetch must bring some. */
export async function readValues(
  client: BooblikClient,
  topic: string,
  partition: number,
  from: number,
  to: number,
  maxBytes = 700,
): Promise<(Uint8Array | null)[]> {
  const values: (Uint8Array | null)[] = [];
  let offset = from;
  while (offset < to) {
    const result = await client.fetch(topic, partition, offset, { maxBytes });
    if (result.recordCount === 0)
      throw new Error(`a fetch from ${offset} of ${topic}-${partition} brought nothing`);
    values.push(...fetchedValues(result, offset));
    offset += result.recordCount;
  }
  return values;
}

/**
 * The values of framed entries (a FETCH answer's records, or a segment's bytes) from their first
 * record on, CRCs checked: the format-2 stand-in for format 1's `payloadsOf`. Null values are an
 * error here (tests that send them read records instead).
 */
export function valuesOf(entries: Uint8Array): Uint8Array[] {
  return valuesOfEntries(entries, "framed").map((value, i) => {
    if (value === null) throw new Error(`record ${i} has a null value`);
    return value;
  });
}

/**
 * Framed entries as a broker stores them: one batch per list of values (null keys, timestamp
 * `timestampMs`), BaseOffsets stamped from `baseOffset` on, PartitionLeaderEpoch −1, each in its
 * `[length][crc32c]` frame. For fake brokers and byte-level tests.
 */
export function storedEntries(
  baseOffset: number,
  batches: readonly (readonly string[])[],
  timestampMs = 0,
): Uint8Array {
  const encoded = batches.map((values) => batchOfValues(values, timestampMs));
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

/**
 * True when `bytes[start, end)` is all zeros: a write of the zeros a segment writer keeps ahead of
 * itself (src/storage/zeros.ts), never one of records (an entry's length is never zero).
 */
export function onlyZeros(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i] !== 0) return false;
  return true;
}
