/**
 * Turning an append into stored entries (format 2, docs/format.md "Segment file"): the caller hands
 * one or more *bare* RecordBatch v2 back to back (already validated: src/broker/partition.ts runs
 * `validateBatch`), and each becomes one framed entry `[u32 length][u32 crc32c][batch]` in the
 * segment, stamped with its offsets.
 *
 * Owns: measuring an append (entries, offsets, framed size, largest timestamp) and writing its
 * entries into a target, the writer's staging buffer (file path) or the mapping (mapped path).
 * Does not own: where the bytes go, when they are forced, offsets beyond the first it is given.
 *
 * Invariants:
 * - The caller's bytes are never modified: each batch is copied into the target and stamped there
 *   (BaseOffset = the next offset, PartitionLeaderEpoch = −1; under LogAppendTime also attribute
 *   bit 3, MaxTimestamp and the batch CRC), so a producer's buffer can be retried or reused.
 * - The frame CRC is computed over the stamped copy in the target: it covers what is stored,
 *   BaseOffset included, so damage to a stored offset is caught by recovery.
 * - Entries cover contiguous offsets: entry k starts at firstOffset + Σ(LastOffsetDelta + 1) of the
 *   entries before it.
 * - The first entry's length is the last byte stored: a mapped segment reads as zeros from there
 *   until the whole append is in place, so a reader (or recovery) that looks at lengths first sees
 *   all of the append or none of it (the CRCs decide whether the bytes are whole after a crash).
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { CorruptRecordError, RecordTooLargeError } from "../domain/errors.ts";
import { ENTRY_HEADER_BYTES, RECORD_BATCH_OVERHEAD_BYTES } from "../domain/limits.ts";
import {
  BATCH_LENGTH_EXCLUDED_BYTES,
  BATCH_LENGTH_OFFSET,
  int32At,
  LAST_OFFSET_DELTA_OFFSET,
  MAGIC_OFFSET,
  MAGIC_V2,
  MAX_TIMESTAMP_OFFSET,
  newBatchHeader,
  readBatchHeader,
  stampBatch,
  stampLogAppendTime,
} from "../record/batch.ts";
import type { SparseIndex } from "./sparse-index.ts";

/** Kafka's "no leader epoch" (kafka-wire.md "Leader epochs", choice (a)): a single-node broker. */
export const NO_PARTITION_LEADER_EPOCH = -1;

/** What a writer needs from an append: its size and a way to write it at a position. */
export interface EntrySource {
  /** Bytes the framed entries take in the segment. */
  readonly framedBytes: number;
  /** Writes every entry at `target[position]`; the first entry's length last (see the header). */
  writeTo(target: Uint8Array, position: number): void;
}

/**
 * The frame length (a big-endian uint32) at `bytes[position]`: an entry's batch size, or 0 at the
 * end of a preallocated file. Storage's one reader of frame fields outside the entry walker.
 */
export function entryLengthAt(bytes: Uint8Array, position: number): number {
  return int32At(bytes, position) >>> 0;
}

function setUint32(bytes: Uint8Array, position: number, value: number): void {
  bytes[position] = value >>> 24;
  bytes[position + 1] = value >>> 16;
  bytes[position + 2] = value >>> 8;
  bytes[position + 3] = value;
}

/**
 * One append being framed. A segment keeps one and reuses it (`plan` then `writeTo`), so framing
 * allocates nothing per append.
 */
export class EntryFramer implements EntrySource {
  private batches: Uint8Array = new Uint8Array(0);
  private readonly header = newBatchHeader();
  entryCount = 0;
  /** Offsets the append takes: Σ (LastOffsetDelta + 1). */
  recordCount = 0;
  framedBytes = 0;
  /** The largest record timestamp of the append as stored (the append time under LogAppendTime). */
  maxTimestampMs = -1;
  /** The offset the first entry is stamped with. */
  firstOffset = 0;
  private logAppendTimeMs = -1;

  /**
   * Measures `batches` (bare batches back to back) and remembers how to stamp them: from
   * `firstOffset`, and with `logAppendTimeMs` ≥ 0 as LogAppendTime batches. Checks only what
   * framing relies on (each batch whole, BatchLength consistent, magic 2, LastOffsetDelta ≥ 0, at
   * most `maxBatchBytes`): the full producer checks are the caller's (`validateBatch`). Throws
   * CorruptRecordError naming the position inside `batches`, or RecordTooLargeError.
   */
  plan(batches: Uint8Array, firstOffset: number, logAppendTimeMs: number, maxBatchBytes: number): this {
    const end = batches.length;
    if (end === 0) throw new CorruptRecordError("an append holds at least one record batch", 0);
    const header = this.header;
    let position = 0;
    let entries = 0;
    let records = 0;
    let maxTimestamp = -1;
    while (position < end) {
      if (end - position < RECORD_BATCH_OVERHEAD_BYTES)
        throw new CorruptRecordError(
          `${end - position} trailing bytes cannot hold a ${RECORD_BATCH_OVERHEAD_BYTES}-byte batch header`,
          position,
        );
      const size = int32At(batches, position + BATCH_LENGTH_OFFSET) + BATCH_LENGTH_EXCLUDED_BYTES;
      if (size < RECORD_BATCH_OVERHEAD_BYTES || position + size > end)
        throw new CorruptRecordError(
          `batch of ${size} bytes (BatchLength + 12) does not fit the ${end - position} bytes left`,
          position + BATCH_LENGTH_OFFSET,
        );
      if (size > maxBatchBytes)
        throw new RecordTooLargeError(size, maxBatchBytes, "record batch", "the batch size limit");
      if (batches[position + MAGIC_OFFSET] !== MAGIC_V2)
        throw new CorruptRecordError(
          `magic ${batches[position + MAGIC_OFFSET]} is not 2`,
          position + MAGIC_OFFSET,
        );
      readBatchHeader(batches, position, header);
      if (header.lastOffsetDelta < 0)
        throw new CorruptRecordError(
          `LastOffsetDelta ${header.lastOffsetDelta} is negative`,
          position + LAST_OFFSET_DELTA_OFFSET,
        );
      records += header.lastOffsetDelta + 1;
      if (header.maxTimestamp > maxTimestamp) maxTimestamp = header.maxTimestamp;
      entries++;
      position += size;
    }
    this.batches = batches;
    this.entryCount = entries;
    this.recordCount = records;
    this.framedBytes = end + entries * ENTRY_HEADER_BYTES;
    this.maxTimestampMs = logAppendTimeMs >= 0 ? logAppendTimeMs : maxTimestamp;
    this.firstOffset = firstOffset;
    this.logAppendTimeMs = logAppendTimeMs;
    return this;
  }

  writeTo(target: Uint8Array, position: number): void {
    const batches = this.batches;
    const end = batches.length;
    const logAppendTimeMs = this.logAppendTimeMs;
    // All batches in one copy, placed so that the last one is already where it belongs; each
    // earlier one then moves left inside `target` (copyWithin: no view per batch, which cost a
    // tenth of a coalesced group of 1-record PRODUCEs, issue 13). Batch i moves from
    // `copied + S_i` to `position + 8(i + 1) + S_i` (S_i: the sizes before it), never onto a source
    // not yet moved, and its frame header lands below every source still to move.
    const copied = position + this.entryCount * ENTRY_HEADER_BYTES;
    target.set(batches, copied);
    let source = 0;
    let at = position;
    let baseOffset = this.firstOffset;
    let firstLength = 0;
    while (source < end) {
      const size = int32At(batches, source + BATCH_LENGTH_OFFSET) + BATCH_LENGTH_EXCLUDED_BYTES;
      const batchStart = at + ENTRY_HEADER_BYTES;
      const batchEnd = batchStart + size;
      if (batchStart !== copied + source)
        target.copyWithin(batchStart, copied + source, copied + source + size);
      stampBatch(target, batchStart, baseOffset, NO_PARTITION_LEADER_EPOCH);
      if (logAppendTimeMs >= 0) stampLogAppendTime(target, batchStart, batchEnd, logAppendTimeMs);
      setUint32(target, at + 4, crc32c(target, batchStart, batchEnd));
      if (at === position) firstLength = size;
      else setUint32(target, at, size);
      baseOffset += int32At(batches, source + LAST_OFFSET_DELTA_OFFSET) + 1;
      source += size;
      at = batchEnd;
    }
    setUint32(target, position, firstLength); // last: see the header comment
  }

  /**
   * After the append was written at `position`: offers each entry to `index` (relative offsets
   * from `relativeBase`), with the running largest timestamp starting at `maxTimestampBefore`.
   * Returns the largest timestamp after the append. Reads only the fields it needs per entry, and
   * for an append of one entry below the interval nothing beyond its first.
   */
  indexEntries(
    index: SparseIndex,
    position: number,
    relativeBase: number,
    maxTimestampBefore: number,
  ): number {
    const batches = this.batches;
    const end = batches.length;
    const logAppendTimeMs = this.logAppendTimeMs;
    let source = 0;
    let at = position;
    let relative = relativeBase;
    let maxTimestamp = maxTimestampBefore;
    while (source < end) {
      index.offer(relative, at, maxTimestamp);
      const size = int32At(batches, source + BATCH_LENGTH_OFFSET) + BATCH_LENGTH_EXCLUDED_BYTES;
      const batchMax =
        logAppendTimeMs >= 0
          ? logAppendTimeMs
          : int32At(batches, source + MAX_TIMESTAMP_OFFSET) * 2 ** 32 +
            (int32At(batches, source + MAX_TIMESTAMP_OFFSET + 4) >>> 0);
      if (batchMax > maxTimestamp) maxTimestamp = batchMax;
      relative += int32At(batches, source + LAST_OFFSET_DELTA_OFFSET) + 1;
      at += ENTRY_HEADER_BYTES + size;
      source += size;
    }
    return maxTimestamp;
  }
}
