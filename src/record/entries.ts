/**
 * The walker over a byte range of consecutive RecordBatch v2 entries: what recovery, index
 * building, verify, `tail` and the client will share once format 2 lands (issue 11). Owns the rules
 * for "where does the next entry start and is it whole", nothing about what a caller does with it.
 * Never throws for bad data: it stops and says why and where, like `scanRecords` in codec.ts.
 *
 * Two framings of the same batches:
 *
 *   "framed"  the coming storage entry: the existing frame around one batch (codec.ts)
 *             off  size  field
 *             0    4     length  = the batch's size (BatchLength + 12)
 *             4    4     crc32c  of the batch bytes, stamped BaseOffset included
 *             8    n     RecordBatch v2 (batch.ts)
 *   "bare"    batches back to back, as in a Kafka log segment or a Kafka FETCH response
 *
 * Per entry it checks: the entry is whole inside [start, end) (else "truncated": a partial tail, the
 * normal end of a torn write or of a FETCH cut at a byte limit); the lengths agree with each other
 * and are at least a batch header (else "bad-length"; a zero frame length is "zero-length", the end
 * marker of a preallocated file); magic 2 ("bad-magic"); with `verifyCrc` the CRC that covers the
 * whole entry, i.e. the frame CRC when framed (it covers the stamped offset; the batch CRC does
 * not) and the batch CRC when bare ("crc-mismatch"); and that each batch starts where the previous
 * one ended, and the first at `expectedBaseOffset` when that is given ("offset-gap"): booblik never
 * compacts, so a gap is damage. Records inside are not walked here:
 * `forEachRecord` does that for the entries a caller reads.
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { CorruptRecordError } from "../domain/errors.ts";
import { RECORD_BATCH_BYTES_LIMIT, RECORD_BATCH_OVERHEAD_BYTES } from "../domain/limits.ts";
import {
  CRC_OFFSET as BATCH_CRC_OFFSET,
  BATCH_LENGTH_EXCLUDED_BYTES,
  BATCH_LENGTH_OFFSET,
  computeBatchCrc,
  encodeBatch,
  forEachRecord,
  MAGIC_OFFSET,
  MAGIC_V2,
  newBatchHeader,
  type RecordBatchHeader,
  type RecordInput,
  readBatchHeader,
  recordValue,
} from "./batch.ts";
import { CRC_OFFSET as FRAME_CRC_OFFSET, PAYLOAD_OFFSET as FRAME_HEADER_BYTES, readUint32 } from "./codec.ts";

export type EntryFraming = "framed" | "bare";

export type EntryStop =
  /** Reached `end` exactly on an entry boundary. */
  | "end"
  /** The entry's header or body runs past `end`: a partial tail. */
  | "truncated"
  /** A zero frame length: the end-of-log marker of a preallocated segment (framed only). */
  | "zero-length"
  /** A length below a batch header, above the limit, or frame and batch lengths that disagree. */
  | "bad-length"
  | "bad-magic"
  | "crc-mismatch"
  /** A batch whose BaseOffset is not where the previous one ended. */
  | "offset-gap"
  /** A header field beyond 2^53 (damage: no real offset or timestamp gets there). */
  | "bad-header";

export interface EntryScanOptions {
  framing: EntryFraming;
  verifyCrc: boolean;
  /** Largest batch believed; a larger length is damage. Default the hard limit. */
  maxBatchBytes?: number;
  /** When ≥ 0: the BaseOffset the first batch must have. Later ones always continue the previous. */
  expectedBaseOffset?: number;
}

/** Filled in place by `scanEntries`, so a scan allocates nothing per entry. */
export interface EntryScanResult {
  /** Position right after the last whole, valid entry (same origin as `start`). */
  endPosition: number;
  entryCount: number;
  /** Sum of LastOffsetDelta + 1 over the entries passed. */
  recordCount: number;
  /** Last passed entry's BaseOffset + LastOffsetDelta + 1, or `expectedBaseOffset` (or −1) if none. */
  nextOffset: number;
  /** The largest MaxTimestamp passed, or −1. */
  maxTimestamp: number;
  stop: EntryStop;
  /** Words for people: what was found at `endPosition` when `stop` is not "end". */
  detail: string;
}

export function newEntryScanResult(): EntryScanResult {
  return {
    endPosition: 0,
    entryCount: 0,
    recordCount: 0,
    nextOffset: -1,
    maxTimestamp: -1,
    stop: "end",
    detail: "",
  };
}

/**
 * Called per valid entry: the entry's position, where its batch starts and ends, and its header
 * (one object reused for the whole scan: copy what you keep).
 */
export type EntryVisitor = (
  entryPosition: number,
  batchStart: number,
  batchEnd: number,
  header: RecordBatchHeader,
) => void;

/** Walks the entries in `bytes[start, end)` and stops at the first that is partial or invalid. */
export function scanEntries(
  bytes: Uint8Array,
  start: number,
  end: number,
  options: EntryScanOptions,
  out: EntryScanResult = newEntryScanResult(),
  visitor?: EntryVisitor,
): EntryScanResult {
  const framed = options.framing === "framed";
  const prefixBytes = framed ? FRAME_HEADER_BYTES : 0;
  const maxBatchBytes = options.maxBatchBytes ?? RECORD_BATCH_BYTES_LIMIT;
  const header = newBatchHeader();
  let expected = options.expectedBaseOffset ?? -1;
  let position = start;
  let entries = 0;
  let records = 0;
  let maxTimestamp = -1;
  let stop: EntryStop = "end";
  let detail = "";
  while (position < end) {
    const available = end - position;
    let frameCrc = 0;
    let batchSize: number;
    if (framed) {
      if (available < FRAME_HEADER_BYTES) {
        // A zero length that happens to sit in the last few bytes is still the end marker.
        stop = available >= 4 && readUint32(bytes, position) === 0 ? "zero-length" : "truncated";
        detail = `${available} bytes left, a frame header is ${FRAME_HEADER_BYTES}`;
        break;
      }
      batchSize = readUint32(bytes, position);
      if (batchSize === 0) {
        stop = "zero-length";
        detail = "frame length 0";
        break;
      }
      frameCrc = readUint32(bytes, position + FRAME_CRC_OFFSET);
    } else {
      if (available < BATCH_LENGTH_EXCLUDED_BYTES) {
        stop = "truncated";
        detail = `${available} bytes left, BaseOffset and BatchLength take ${BATCH_LENGTH_EXCLUDED_BYTES}`;
        break;
      }
      batchSize = readUint32(bytes, position + BATCH_LENGTH_OFFSET) + BATCH_LENGTH_EXCLUDED_BYTES;
    }
    if (batchSize < RECORD_BATCH_OVERHEAD_BYTES || batchSize > maxBatchBytes) {
      stop = "bad-length";
      detail = `entry length ${batchSize} outside [${RECORD_BATCH_OVERHEAD_BYTES}, ${maxBatchBytes}]`;
      break;
    }
    const batchStart = position + prefixBytes;
    const batchEnd = batchStart + batchSize;
    if (batchEnd > end) {
      stop = "truncated";
      detail = `entry of ${prefixBytes + batchSize} bytes, ${available} left`;
      break;
    }
    if (framed) {
      const batchLength = readUint32(bytes, batchStart + BATCH_LENGTH_OFFSET);
      if (batchLength + BATCH_LENGTH_EXCLUDED_BYTES !== batchSize) {
        stop = "bad-length";
        detail = `frame length ${batchSize} but BatchLength ${batchLength} + ${BATCH_LENGTH_EXCLUDED_BYTES}`;
        break;
      }
    }
    const magic = bytes[batchStart + MAGIC_OFFSET]!;
    if (magic !== MAGIC_V2) {
      stop = "bad-magic";
      detail = `magic ${magic}`;
      break;
    }
    if (options.verifyCrc) {
      const stored = framed ? frameCrc : readUint32(bytes, batchStart + BATCH_CRC_OFFSET);
      const actual = framed
        ? crc32c(bytes, batchStart, batchEnd)
        : computeBatchCrc(bytes, batchStart, batchEnd);
      if (stored !== actual) {
        stop = "crc-mismatch";
        detail = `${framed ? "frame" : "batch"} CRC32C 0x${actual.toString(16)}, stored 0x${stored.toString(16)}`;
        break;
      }
    }
    try {
      readBatchHeader(bytes, batchStart, header);
    } catch (error) {
      stop = "bad-header";
      detail = error instanceof Error ? error.message : String(error);
      break;
    }
    if (expected >= 0 && header.baseOffset !== expected) {
      stop = "offset-gap";
      detail = `BaseOffset ${header.baseOffset}, expected ${expected}`;
      break;
    }
    if (header.lastOffsetDelta < 0) {
      stop = "bad-header";
      detail = `LastOffsetDelta ${header.lastOffsetDelta}`;
      break;
    }
    if (visitor !== undefined) visitor(position, batchStart, batchEnd, header);
    entries++;
    records += header.lastOffsetDelta + 1;
    expected = header.baseOffset + header.lastOffsetDelta + 1;
    if (header.maxTimestamp > maxTimestamp) maxTimestamp = header.maxTimestamp;
    position = batchEnd;
  }
  out.endPosition = position;
  out.entryCount = entries;
  out.recordCount = records;
  out.nextOffset = expected;
  out.maxTimestamp = maxTimestamp;
  out.stop = stop;
  out.detail = detail;
  return out;
}

/**
 * Writes one framed entry (`[length][crc32c][batch]`) around an already stamped batch at
 * `target[position]`; returns the position after it. The caller guarantees room.
 */
export function writeFramedEntry(target: Uint8Array, position: number, batch: Uint8Array): number {
  const length = batch.length;
  const crc = crc32c(batch, 0, length);
  target[position] = length >>> 24;
  target[position + 1] = length >>> 16;
  target[position + 2] = length >>> 8;
  target[position + 3] = length;
  target[position + 4] = crc >>> 24;
  target[position + 5] = crc >>> 16;
  target[position + 6] = crc >>> 8;
  target[position + 7] = crc;
  target.set(batch, position + FRAME_HEADER_BYTES);
  return position + FRAME_HEADER_BYTES + length;
}

/**
 * One bare batch holding `values` (null keys, no headers, timestamp `timestampMs`): the format-2
 * successor of format 1's `frameRecords`, for tests, tools and one-off appends. Strings are UTF-8.
 */
export function batchOfValues(
  values: readonly (Uint8Array | string | null)[],
  timestampMs = Date.now(),
): Uint8Array {
  const records: RecordInput[] = [];
  for (const value of values)
    records.push({
      key: null,
      value: typeof value === "string" ? VALUE_ENCODER.encode(value) : value,
      timestamp: timestampMs,
    });
  return encodeBatch(records);
}

const VALUE_ENCODER = new TextEncoder();

/**
 * Every record value in `bytes[start, end)` as views, in offset order, walking entries in
 * `framing` (CRCs checked) and the records of each batch: the successor of `payloadsOf`, for tests
 * and tools. Throws on a partial or damaged entry: a caller that wants to stop there scans first.
 */
export function valuesOfEntries(
  bytes: Uint8Array,
  framing: EntryFraming = "framed",
  start = 0,
  end = bytes.length,
): (Uint8Array | null)[] {
  const values: (Uint8Array | null)[] = [];
  const scan = scanEntries(
    bytes,
    start,
    end,
    { framing, verifyCrc: true },
    newEntryScanResult(),
    (_e, batchStart, batchEnd) =>
      forEachRecord(bytes, batchStart, batchEnd, (record) => values.push(recordValue(record))),
  );
  if (scan.stop !== "end")
    throw new CorruptRecordError(`entries stop: ${scan.stop} (${scan.detail})`, scan.endPosition);
  return values;
}
