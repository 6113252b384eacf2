/**
 * Kafka's RecordBatch v2 (magic 2): the one record model of the coming format 2, byte for byte as
 * Kafka's DefaultRecordBatch/DefaultRecord write it (kafka-wire.md §2). This module owns that layout:
 * encoding a batch, reading its header in place, validating a batch a producer sent, stamping the
 * broker's offset into it, and THE record walker every reader shares (`RecordBatchReader`, with
 * `forEachRecord` and `decodeBatch` on top; style-review "One record walker"). No I/O. Nothing in
 * storage, the server or the wire uses it yet.
 *
 * Batch (big-endian; "CRC" = covered by the batch CRC):
 *
 *   off  size  field                  CRC  notes
 *   0    8     BaseOffset      int64  no   0 from a producer; the broker stamps the first offset
 *   8    4     BatchLength     int32  no   bytes after this field = total size − 12
 *   12   4     PartitionLeaderEpoch   no   stamped by the broker
 *                              int32
 *   16   1     Magic           int8   no   2
 *   17   4     CRC             uint32 -    CRC-32C (Castagnoli) of bytes [21, end)
 *   21   2     Attributes      int16  yes  bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
 *                                          bit 3 timestamp type (1 = LogAppendTime), bit 4
 *                                          transactional, bit 5 control, bit 6 delete horizon
 *   23   4     LastOffsetDelta int32  yes  RecordCount − 1
 *   27   8     BaseTimestamp   int64  yes  the first record's timestamp (ms)
 *   35   8     MaxTimestamp    int64  yes  the largest record timestamp
 *   43   8     ProducerId      int64  yes  −1 = none
 *   51   2     ProducerEpoch   int16  yes  −1 = none
 *   53   4     BaseSequence    int32  yes  −1 = none
 *   57   4     RecordCount     int32  yes  stays uncompressed when the records are compressed
 *   61   …     Records                yes  back to back, or one compressed blob of all of them
 *
 * Record (every varint zigzag; see varint.ts):
 *
 *   Length varint            bytes after this field
 *   Attributes int8          0 (unused)
 *   TimestampDelta varlong   timestamp − BaseTimestamp (may be negative)
 *   OffsetDelta varint       0, 1, … RecordCount − 1
 *   KeyLength varint, Key    −1 = null key
 *   ValueLength varint, Value −1 = null value
 *   HeaderCount varint, then per header: KeyLength varint + UTF-8 key (never null),
 *                                        ValueLength varint (−1 = null) + value
 *
 * A record's offset is BaseOffset + OffsetDelta; its timestamp is BaseTimestamp + TimestampDelta for
 * CreateTime and MaxTimestamp for LogAppendTime (Kafka's rule).
 *
 * Invariants:
 * - BaseOffset, BatchLength and PartitionLeaderEpoch lie outside the CRC, so stamping offsets on
 *   append is a 12-byte overwrite with no CRC work (Kafka, klite and librdkafka's mock do the same).
 * - int64 fields are read as two 32-bit halves into a JS number; a value beyond ±(2^53 − 1) is a
 *   CorruptRecordError, never a rounded number. No BigInt anywhere.
 * - The walker trusts nothing: every length is checked against the end of its record, every record
 *   against the end of the batch, offset deltas must be exactly 0..RecordCount−1, a record's fields
 *   must fill exactly its Length, and the records must fill exactly the batch (or the decompressed
 *   blob). A compressed blob inflates to at most RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT.
 * - Every rejection is an InvalidBatchError (code CORRUPT_RECORD) naming the check, the reason and
 *   the byte position inside the batch (or inside the decompressed records, and it says which).
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { assert } from "../domain/assert.ts";
import { CorruptRecordError, InvalidArgumentError, RecordTooLargeError } from "../domain/errors.ts";
import {
  RECORD_BATCH_BYTES_LIMIT,
  RECORD_BATCH_OVERHEAD_BYTES,
  RECORD_V2_BYTES_MIN,
} from "../domain/limits.ts";
import {
  CODEC_ID_MAX,
  CODEC_NONE,
  codecIdOf,
  compressRecords,
  decompressRecords,
  describeCodec,
  type ProducibleCodec,
} from "./compression.ts";
import {
  type ReadCursor,
  readVarint,
  readVarlong,
  sizeOfVarint,
  sizeOfVarlong,
  writeVarint,
  writeVarlong,
} from "./varint.ts";

// --- Layout --------------------------------------------------------------------------------------

export const BASE_OFFSET_OFFSET = 0;
export const BATCH_LENGTH_OFFSET = BASE_OFFSET_OFFSET + 8;
export const PARTITION_LEADER_EPOCH_OFFSET = BATCH_LENGTH_OFFSET + 4;
export const MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + 4;
export const CRC_OFFSET = MAGIC_OFFSET + 1;
export const ATTRIBUTES_OFFSET = CRC_OFFSET + 4;
export const LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + 2;
export const BASE_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + 4;
export const MAX_TIMESTAMP_OFFSET = BASE_TIMESTAMP_OFFSET + 8;
export const PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + 8;
export const PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + 8;
export const BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + 2;
export const RECORD_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + 4;
export const RECORDS_OFFSET = RECORD_COUNT_OFFSET + 4;
/** BatchLength counts the bytes after itself: the total minus BaseOffset and BatchLength. */
export const BATCH_LENGTH_EXCLUDED_BYTES = BATCH_LENGTH_OFFSET + 4;
export const MAGIC_V2 = 2;
assert(
  RECORDS_OFFSET === RECORD_BATCH_OVERHEAD_BYTES,
  "RecordBatch v2 layout changed; update docs/format.md",
);
assert(CRC_OFFSET === 17 && ATTRIBUTES_OFFSET === 21, "the CRC covers [21, end), as Kafka's");

export const ATTRIBUTE_CODEC_MASK = 0x07;
export const ATTRIBUTE_LOG_APPEND_TIME = 0x08;
export const ATTRIBUTE_TRANSACTIONAL = 0x10;
export const ATTRIBUTE_CONTROL = 0x20;
export const ATTRIBUTE_DELETE_HORIZON = 0x40;

const TWO_TO_32 = 2 ** 32;

// --- Errors --------------------------------------------------------------------------------------

/**
 * Which rule a batch broke. The later Kafka listener maps them to Kafka's codes: size, batch-length,
 * crc, record → CORRUPT_MESSAGE (2); magic → UNSUPPORTED_FOR_MESSAGE_FORMAT (43); base-offset,
 * record-count, last-offset-delta, control, sequence → INVALID_RECORD (87); codec →
 * UNSUPPORTED_COMPRESSION_TYPE (76).
 */
export type BatchCheck =
  | "size"
  | "batch-length"
  | "magic"
  | "crc"
  | "base-offset"
  | "record-count"
  | "last-offset-delta"
  | "control"
  | "codec"
  | "sequence"
  | "int64"
  | "record"
  | "key";

/** A batch that breaks the format or a producer rule. `position` is relative to the batch start. */
export class InvalidBatchError extends CorruptRecordError {
  readonly check: BatchCheck;

  constructor(check: BatchCheck, reason: string, position: number, where = "the batch") {
    super(reason, position);
    this.check = check;
    this.message = `invalid record batch (${check}) at byte ${position} of ${where}: ${reason}`;
  }
}

// --- Big-endian reads without a DataView (none to allocate per batch) -----------------------------

function int16At(bytes: Uint8Array, position: number): number {
  return ((bytes[position]! << 24) | (bytes[position + 1]! << 16)) >> 16;
}

/** The big-endian int32 at `position` (the caller has checked the bounds). */
export function int32At(bytes: Uint8Array, position: number): number {
  return (
    (bytes[position]! << 24) |
    (bytes[position + 1]! << 16) |
    (bytes[position + 2]! << 8) |
    bytes[position + 3]!
  );
}

function uint32At(bytes: Uint8Array, position: number): number {
  return int32At(bytes, position) >>> 0;
}

/** int64 as a safe integer; `start` is the batch start (for the error position). */
function int64At(bytes: Uint8Array, position: number, start: number, field: string): number {
  const value = int32At(bytes, position) * TWO_TO_32 + uint32At(bytes, position + 4);
  if (!Number.isSafeInteger(value))
    throw new InvalidBatchError(
      "int64",
      `${field} lies beyond 2^53 and cannot be a JS number exactly`,
      position - start,
    );
  return value;
}

function setInt16(bytes: Uint8Array, position: number, value: number): void {
  bytes[position] = value >> 8;
  bytes[position + 1] = value;
}

function setInt32(bytes: Uint8Array, position: number, value: number): void {
  bytes[position] = value >>> 24;
  bytes[position + 1] = value >>> 16;
  bytes[position + 2] = value >>> 8;
  bytes[position + 3] = value;
}

/** A safe integer (negative ones included, e.g. −1) as a big-endian int64. */
function setInt64(bytes: Uint8Array, position: number, value: number): void {
  const high = Math.floor(value / TWO_TO_32);
  setInt32(bytes, position, high);
  setInt32(bytes, position + 4, value - high * TWO_TO_32);
}

// --- Header --------------------------------------------------------------------------------------

/** The fixed fields of one batch, filled in place by `readBatchHeader` (reuse one per loop). */
export interface RecordBatchHeader {
  baseOffset: number;
  /** The BatchLength field: bytes after it. */
  batchLengthBytes: number;
  /** The whole batch: BatchLength + 12. */
  sizeBytes: number;
  partitionLeaderEpoch: number;
  magic: number;
  crc: number;
  attributes: number;
  codecId: number;
  logAppendTime: boolean;
  transactional: boolean;
  control: boolean;
  lastOffsetDelta: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
  /**
   * The largest record timestamp the records themselves give, when `validateBatch` walked them (an
   * uncompressed batch, or `walkCompressed`); otherwise (and from `readBatchHeader`) MaxTimestamp
   * as the header says. A batch whose two differ gets the walked value stored as its MaxTimestamp
   * (`setMaxTimestamp`; Partition.append), as Kafka's LogValidator does.
   */
  recordsMaxTimestamp: number;
}

export function newBatchHeader(): RecordBatchHeader {
  return {
    baseOffset: 0,
    batchLengthBytes: 0,
    sizeBytes: 0,
    partitionLeaderEpoch: 0,
    magic: 0,
    crc: 0,
    attributes: 0,
    codecId: 0,
    logAppendTime: false,
    transactional: false,
    control: false,
    lastOffsetDelta: 0,
    baseTimestamp: 0,
    maxTimestamp: 0,
    producerId: 0,
    producerEpoch: 0,
    baseSequence: 0,
    recordCount: 0,
    recordsMaxTimestamp: 0,
  };
}

/**
 * Reads the 61 header bytes at `bytes[start]` into `out` without copying anything. Checks only
 * that the header is there and that the int64 fields are safe integers; `validateBatch` and
 * `forEachRecord` check the rest.
 */
export function readBatchHeader(
  bytes: Uint8Array,
  start: number,
  out: RecordBatchHeader = newBatchHeader(),
): RecordBatchHeader {
  if (bytes.length - start < RECORD_BATCH_OVERHEAD_BYTES)
    throw new InvalidBatchError(
      "size",
      `${bytes.length - start} bytes cannot hold the ${RECORD_BATCH_OVERHEAD_BYTES}-byte batch header`,
      Math.max(0, bytes.length - start),
    );
  out.baseOffset = int64At(bytes, start + BASE_OFFSET_OFFSET, start, "BaseOffset");
  out.batchLengthBytes = int32At(bytes, start + BATCH_LENGTH_OFFSET);
  out.sizeBytes = out.batchLengthBytes + BATCH_LENGTH_EXCLUDED_BYTES;
  out.partitionLeaderEpoch = int32At(bytes, start + PARTITION_LEADER_EPOCH_OFFSET);
  out.magic = (bytes[start + MAGIC_OFFSET]! << 24) >> 24;
  out.crc = uint32At(bytes, start + CRC_OFFSET);
  const attributes = int16At(bytes, start + ATTRIBUTES_OFFSET);
  out.attributes = attributes;
  out.codecId = attributes & ATTRIBUTE_CODEC_MASK;
  out.logAppendTime = (attributes & ATTRIBUTE_LOG_APPEND_TIME) !== 0;
  out.transactional = (attributes & ATTRIBUTE_TRANSACTIONAL) !== 0;
  out.control = (attributes & ATTRIBUTE_CONTROL) !== 0;
  out.lastOffsetDelta = int32At(bytes, start + LAST_OFFSET_DELTA_OFFSET);
  out.baseTimestamp = int64At(bytes, start + BASE_TIMESTAMP_OFFSET, start, "BaseTimestamp");
  out.maxTimestamp = int64At(bytes, start + MAX_TIMESTAMP_OFFSET, start, "MaxTimestamp");
  out.producerId = int64At(bytes, start + PRODUCER_ID_OFFSET, start, "ProducerId");
  out.producerEpoch = int16At(bytes, start + PRODUCER_EPOCH_OFFSET);
  out.baseSequence = int32At(bytes, start + BASE_SEQUENCE_OFFSET);
  out.recordCount = int32At(bytes, start + RECORD_COUNT_OFFSET);
  out.recordsMaxTimestamp = out.maxTimestamp;
  return out;
}

/** CRC-32C of the bytes the batch CRC covers: [21, end). */
export function computeBatchCrc(bytes: Uint8Array, start: number, end: number): number {
  return crc32c(bytes, start + ATTRIBUTES_OFFSET, end);
}

/**
 * Writes BaseOffset and PartitionLeaderEpoch in place: the broker's stamp on append. Neither is
 * covered by the batch CRC, so the CRC stays valid (the storage frame's CRC, computed afterwards,
 * covers the stamped bytes).
 */
export function stampBatch(
  bytes: Uint8Array,
  start: number,
  baseOffset: number,
  partitionLeaderEpoch: number,
): void {
  if (!(baseOffset >= 0 && Number.isSafeInteger(baseOffset)))
    throw new InvalidArgumentError(`base offset ${baseOffset} is not an integer from 0 to 2^53 - 1`);
  if ((partitionLeaderEpoch | 0) !== partitionLeaderEpoch)
    throw new InvalidArgumentError(`partition leader epoch ${partitionLeaderEpoch} is not an int32`);
  setInt64(bytes, start + BASE_OFFSET_OFFSET, baseOffset);
  setInt32(bytes, start + PARTITION_LEADER_EPOCH_OFFSET, partitionLeaderEpoch);
}

/**
 * Turns the batch in `bytes[start, end)` into a LogAppendTime batch stamped at `timestampMs`:
 * attributes bit 3 set, MaxTimestamp = `timestampMs`, batch CRC recomputed (both fields are covered
 * by it). Readers then take MaxTimestamp as every record's timestamp (Kafka's rule); BaseTimestamp
 * and the record deltas stay as the producer wrote them, as Kafka leaves them.
 */
export function stampLogAppendTime(bytes: Uint8Array, start: number, end: number, timestampMs: number): void {
  if (!Number.isSafeInteger(timestampMs))
    throw new InvalidArgumentError(`log append time ${timestampMs} is not an integer number of milliseconds`);
  setInt16(
    bytes,
    start + ATTRIBUTES_OFFSET,
    int16At(bytes, start + ATTRIBUTES_OFFSET) | ATTRIBUTE_LOG_APPEND_TIME,
  );
  setInt64(bytes, start + MAX_TIMESTAMP_OFFSET, timestampMs);
  setInt32(bytes, start + CRC_OFFSET, computeBatchCrc(bytes, start, end));
}

/**
 * Writes MaxTimestamp = `timestampMs` into the batch in `bytes[start, end)` and recomputes the batch
 * CRC (MaxTimestamp is covered by it): the broker's correction of a CreateTime batch whose header
 * disagrees with its records (`RecordBatchHeader.recordsMaxTimestamp`), Kafka's `setMaxTimestamp`.
 */
export function setMaxTimestamp(bytes: Uint8Array, start: number, end: number, timestampMs: number): void {
  if (!Number.isSafeInteger(timestampMs))
    throw new InvalidArgumentError(`MaxTimestamp ${timestampMs} is not an integer number of milliseconds`);
  setInt64(bytes, start + MAX_TIMESTAMP_OFFSET, timestampMs);
  setInt32(bytes, start + CRC_OFFSET, computeBatchCrc(bytes, start, end));
}

// --- Validation of a PRODUCE ---------------------------------------------------------------------

export interface ValidateBatchOptions {
  /** Largest whole batch accepted (a broker's configured maximum); default the hard limit. */
  maxBatchBytes?: number;
  /**
   * Also decompress and walk the records of a compressed batch. Off by default:
   * the broker stores compressed batches untouched and never inflates them (kafka-wire.md §0.4).
   */
  walkCompressed?: boolean;
  /**
   * Refuse a record without a key (a compacted topic's rule, as Kafka's LogValidator has it: "Compacted
   * topic cannot accept message without key"). A compressed batch is decompressed for it, as Kafka
   * does; only compacted topics pay that.
   */
  requireKeys?: boolean;
}

/**
 * Validates one batch a producer sent, occupying exactly `bytes[start, end)`: whole batch or
 * nothing. Checks, in this order: size ≥ 61 and BatchLength = size − 12; size ≤ the maximum; magic 2;
 * the batch CRC; BaseOffset 0; not a control batch; a codec the format knows (0-4); RecordCount ≥ 1
 * and LastOffsetDelta = RecordCount − 1; BaseSequence ≥ 0 when ProducerId ≥ 0 (Kafka's rule); then,
 * for an uncompressed batch, every record through the walker, taking the largest record timestamp
 * on the way (`recordsMaxTimestamp`). For a compressed batch the records are not looked at (unless
 * `walkCompressed`): the CRC proves they are the producer's bytes, every reader walks them with the
 * same checks after decompressing, and its MaxTimestamp is taken on trust (docs/format.md).
 * A MaxTimestamp that disagrees with the records is not an error (Kafka overwrites it, and so does
 * Partition.append): the caller compares `recordsMaxTimestamp` with `maxTimestamp`.
 * Returns the header (in `out` when given).
 */
export function validateBatch(
  bytes: Uint8Array,
  start: number,
  end: number,
  options: ValidateBatchOptions = {},
  out: RecordBatchHeader = newBatchHeader(),
): RecordBatchHeader {
  const sizeBytes = end - start;
  if (sizeBytes < RECORD_BATCH_OVERHEAD_BYTES)
    throw new InvalidBatchError(
      "size",
      `${sizeBytes} bytes cannot hold the ${RECORD_BATCH_OVERHEAD_BYTES}-byte batch header`,
      sizeBytes,
    );
  const batchLength = int32At(bytes, start + BATCH_LENGTH_OFFSET);
  if (batchLength !== sizeBytes - BATCH_LENGTH_EXCLUDED_BYTES)
    throw new InvalidBatchError(
      "batch-length",
      `BatchLength ${batchLength} disagrees with the ${sizeBytes} bytes received (expected ${sizeBytes - BATCH_LENGTH_EXCLUDED_BYTES})`,
      BATCH_LENGTH_OFFSET,
    );
  const maxBatchBytes = options.maxBatchBytes ?? RECORD_BATCH_BYTES_LIMIT;
  if (sizeBytes > maxBatchBytes)
    throw new RecordTooLargeError(sizeBytes, maxBatchBytes, "record batch", "the batch size limit");
  const magic = (bytes[start + MAGIC_OFFSET]! << 24) >> 24;
  if (magic !== MAGIC_V2)
    throw new InvalidBatchError(
      "magic",
      `magic ${magic} is not 2 (only RecordBatch v2 is accepted)`,
      MAGIC_OFFSET,
    );
  const storedCrc = uint32At(bytes, start + CRC_OFFSET);
  const actualCrc = computeBatchCrc(bytes, start, end);
  if (storedCrc !== actualCrc)
    throw new InvalidBatchError(
      "crc",
      `CRC32C of bytes [${ATTRIBUTES_OFFSET}, ${sizeBytes}) is 0x${hex32(actualCrc)}, the batch says 0x${hex32(storedCrc)}`,
      CRC_OFFSET,
    );
  const header = readBatchHeader(bytes, start, out);
  if (header.baseOffset !== 0)
    throw new InvalidBatchError(
      "base-offset",
      `BaseOffset ${header.baseOffset} from a producer; it must be 0 (the broker assigns offsets)`,
      BASE_OFFSET_OFFSET,
    );
  if (header.control)
    throw new InvalidBatchError(
      "control",
      "a control batch (attributes bit 5) may only be written by the broker",
      ATTRIBUTES_OFFSET,
    );
  if (header.codecId > CODEC_ID_MAX)
    throw new InvalidBatchError(
      "codec",
      `compression codec ${header.codecId} (attributes bits 0-2) is unknown; known: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd`,
      ATTRIBUTES_OFFSET,
    );
  if (header.recordCount < 1)
    throw new InvalidBatchError(
      "record-count",
      `RecordCount ${header.recordCount}: a batch holds at least one record`,
      RECORD_COUNT_OFFSET,
    );
  if (header.lastOffsetDelta !== header.recordCount - 1)
    throw new InvalidBatchError(
      "last-offset-delta",
      `LastOffsetDelta ${header.lastOffsetDelta} must be RecordCount − 1 = ${header.recordCount - 1}`,
      LAST_OFFSET_DELTA_OFFSET,
    );
  if (header.producerId >= 0 && header.baseSequence < 0)
    throw new InvalidBatchError(
      "sequence",
      `BaseSequence ${header.baseSequence} with ProducerId ${header.producerId}: an idempotent batch needs a sequence ≥ 0`,
      BASE_SEQUENCE_OFFSET,
    );
  if (header.codecId === CODEC_NONE || options.walkCompressed === true) {
    // One reader for every validation (JS runs one at a time): an uncompressed walk allocates nothing.
    // Under the LogAppendTime bit every record's timestamp is MaxTimestamp, so the two agree.
    validationReader.open(bytes, start, end, header);
    let recordsMaxTimestamp = -1;
    for (let record = validationReader.next(); record !== undefined; record = validationReader.next()) {
      if (record.timestamp > recordsMaxTimestamp) recordsMaxTimestamp = record.timestamp;
    }
    header.recordsMaxTimestamp = recordsMaxTimestamp;
  }
  if (options.requireKeys === true) {
    validationReader.open(bytes, start, end, header);
    for (let record = validationReader.next(); record !== undefined; record = validationReader.next()) {
      if (record.keyLength < 0)
        throw new InvalidBatchError(
          "key",
          `record ${record.index} has no key; a compacted topic (cleanup.policy compact) keeps the latest record of each key, so every record needs one`,
          header.codecId === CODEC_NONE ? record.recordStart - start : RECORDS_OFFSET,
        );
    }
  }
  return header;
}

function hex32(value: number): string {
  return value.toString(16).padStart(8, "0");
}

// --- The record walker ---------------------------------------------------------------------------

/**
 * One record as the walker sees it: positions into `bytes`, no copies. The walker reuses a single
 * view object per batch, so a visitor must copy what it keeps (or call `recordKey`/`recordValue`,
 * which return subarray views valid as long as `bytes` is).
 */
export interface RecordView {
  /** The bytes holding the record: the batch's own, or the decompressed records. */
  bytes: Uint8Array;
  /** 0-based index inside the batch (= OffsetDelta, checked). */
  index: number;
  offset: number;
  timestamp: number;
  attributes: number;
  keyStart: number;
  /** −1 for a null key. */
  keyLength: number;
  valueStart: number;
  /** −1 for a null value. */
  valueLength: number;
  /** Position of the first header (after HeaderCount). */
  headersStart: number;
  headerCount: number;
  /** [recordStart, recordEnd): the whole record, its Length varint included. */
  recordStart: number;
  recordEnd: number;
}

export type RecordVisitor = (record: RecordView) => void;

function newRecordView(bytes: Uint8Array): RecordView {
  return {
    bytes,
    index: 0,
    offset: 0,
    timestamp: 0,
    attributes: 0,
    keyStart: 0,
    keyLength: -1,
    valueStart: 0,
    valueLength: -1,
    headersStart: 0,
    headerCount: 0,
    recordStart: 0,
    recordEnd: 0,
  };
}

const EMPTY = new Uint8Array(0);

/**
 * THE record walker, pull style: `open` a batch, then `next()` until it returns undefined. One
 * reader can be reused for batch after batch (a consumer keeps one), so walking an uncompressed
 * batch allocates nothing at all; a compressed one allocates its decompressed records. Checks the
 * structure (see the invariants above) but not the CRC or the producer rules: `validateBatch` does
 * those. The view `next()` returns is the reader's own, overwritten by the following call.
 * `forEachRecord` is the push-style loop over it; nothing else in the codebase walks records.
 */
export class RecordBatchReader {
  /** The current record; valid until the next `next()` or `open()`. */
  readonly view: RecordView = newRecordView(EMPTY);
  private readonly cursor: ReadCursor = { position: 0 };
  private records: Uint8Array = EMPTY;
  private recordsEnd = 0;
  /** Subtracted from positions in errors: the batch start, or 0 in decompressed records. */
  private origin = 0;
  private where = "the batch";
  private count = 0;
  private index = 0;
  private baseOffset = 0;
  private baseTimestamp = 0;
  private maxTimestamp = 0;
  private logAppendTime = false;

  /**
   * Starts on the batch in `bytes[start, end)`, decompressing it when compressed. `header`, when
   * given, must already hold this batch's header (saves a re-read).
   */
  open(
    bytes: Uint8Array,
    start: number,
    end: number,
    header: RecordBatchHeader = readBatchHeader(bytes, start),
  ): this {
    if (header.magic !== MAGIC_V2)
      throw new InvalidBatchError("magic", `magic ${header.magic} is not 2`, MAGIC_OFFSET);
    if (header.sizeBytes !== end - start)
      throw new InvalidBatchError(
        "batch-length",
        `BatchLength ${header.batchLengthBytes} disagrees with the ${end - start} bytes of the batch`,
        BATCH_LENGTH_OFFSET,
      );
    const codecId = header.codecId;
    if (codecId > CODEC_ID_MAX)
      throw new InvalidBatchError("codec", `compression codec ${codecId} is unknown`, ATTRIBUTES_OFFSET);
    let recordsStart: number;
    if (codecId === CODEC_NONE) {
      this.records = bytes;
      recordsStart = start + RECORDS_OFFSET;
      this.recordsEnd = end;
      this.origin = start;
      this.where = "the batch";
    } else {
      try {
        this.records = decompressRecords(codecId, bytes, start + RECORDS_OFFSET, end, RECORDS_OFFSET);
      } catch (error) {
        if (error instanceof CorruptRecordError)
          throw new InvalidBatchError("record", error.reason, RECORDS_OFFSET);
        throw error;
      }
      recordsStart = 0;
      this.recordsEnd = this.records.length;
      this.origin = 0;
      this.where = `the ${describeCodec(codecId)}-decompressed records`;
    }
    const count = header.recordCount;
    // Every record takes at least RECORD_V2_BYTES_MIN bytes: refuse an impossible count up front.
    if (count < 0 || count > (this.recordsEnd - recordsStart) / RECORD_V2_BYTES_MIN)
      throw new InvalidBatchError(
        "record-count",
        `RecordCount ${count} cannot fit in ${this.recordsEnd - recordsStart} bytes of records`,
        RECORD_COUNT_OFFSET,
      );
    this.count = count;
    this.index = 0;
    this.cursor.position = recordsStart;
    this.baseOffset = header.baseOffset;
    this.baseTimestamp = header.baseTimestamp;
    this.maxTimestamp = header.maxTimestamp;
    this.logAppendTime = header.logAppendTime;
    this.view.bytes = this.records;
    return this;
  }

  /** RecordCount of the open batch. */
  get recordCount(): number {
    return this.count;
  }

  /**
   * The next record, or undefined after the last one (having checked that nothing follows it).
   * Throws InvalidBatchError at the first structural fault.
   */
  next(): RecordView | undefined {
    const index = this.index;
    if (index >= this.count) {
      if (this.cursor.position !== this.recordsEnd) throw this.trailingBytes();
      return undefined;
    }
    try {
      this.parse(index);
    } catch (error) {
      // Varint errors carry absolute positions; make them relative and name the record.
      if (error instanceof CorruptRecordError && !(error instanceof InvalidBatchError))
        throw this.fault(`record ${index}: ${error.reason}`, error.position);
      throw error;
    }
    this.index = index + 1;
    return this.view;
  }

  private parse(index: number): void {
    const records = this.records;
    const cursor = this.cursor;
    const recordsEnd = this.recordsEnd;
    const view = this.view;
    const recordStart = cursor.position;
    if (recordStart >= recordsEnd)
      throw this.fault(`the records end after ${index} of ${this.count} records`, recordStart);
    if (this.parseCommon(index, recordStart)) return;
    const length = readVarint(records, cursor, recordsEnd);
    const bodyStart = cursor.position;
    const recordEnd = bodyStart + length;
    if (length < 1 || recordEnd > recordsEnd)
      throw this.fault(
        `record ${index} has Length ${length} but ${recordsEnd - bodyStart} bytes remain`,
        recordStart,
      );
    const attributes = records[cursor.position++]!;
    const timestampDelta = readVarlong(records, cursor, recordEnd);
    const offsetDeltaAt = cursor.position;
    const offsetDelta = readVarint(records, cursor, recordEnd);
    if (offsetDelta !== index)
      throw this.fault(`record ${index} has OffsetDelta ${offsetDelta}; expected ${index}`, offsetDeltaAt);
    const keyAt = cursor.position;
    const keyLength = readVarint(records, cursor, recordEnd);
    const keyStart = cursor.position;
    if (keyLength < -1 || keyStart + keyLength > recordEnd)
      throw this.fault(`record ${index} has key length ${keyLength} beyond its end`, keyAt);
    if (keyLength > 0) cursor.position = keyStart + keyLength;
    const valueAt = cursor.position;
    const valueLength = readVarint(records, cursor, recordEnd);
    const valueStart = cursor.position;
    if (valueLength < -1 || valueStart + valueLength > recordEnd)
      throw this.fault(`record ${index} has value length ${valueLength} beyond its end`, valueAt);
    if (valueLength > 0) cursor.position = valueStart + valueLength;
    const headerCountAt = cursor.position;
    const headerCount = readVarint(records, cursor, recordEnd);
    if (headerCount < 0 || headerCount > recordEnd - cursor.position)
      throw this.fault(`record ${index} has impossible header count ${headerCount}`, headerCountAt);
    const headersStart = cursor.position;
    for (let h = 0; h < headerCount; h++) {
      const headerKeyAt = cursor.position;
      const headerKeyLength = readVarint(records, cursor, recordEnd);
      if (headerKeyLength < 0 || cursor.position + headerKeyLength > recordEnd)
        throw this.fault(
          `record ${index} header ${h} has key length ${headerKeyLength} (a header key is never null)`,
          headerKeyAt,
        );
      cursor.position += headerKeyLength;
      const headerValueAt = cursor.position;
      const headerValueLength = readVarint(records, cursor, recordEnd);
      if (headerValueLength < -1 || cursor.position + headerValueLength > recordEnd)
        throw this.fault(
          `record ${index} header ${h} has value length ${headerValueLength} beyond its end`,
          headerValueAt,
        );
      if (headerValueLength > 0) cursor.position += headerValueLength;
    }
    if (cursor.position !== recordEnd)
      throw this.fault(
        `record ${index} has Length ${length} but its fields end ${cursor.position - bodyStart} bytes in`,
        recordStart,
      );
    view.index = index;
    view.offset = this.baseOffset + offsetDelta;
    view.timestamp = this.logAppendTime ? this.maxTimestamp : this.baseTimestamp + timestampDelta;
    view.attributes = attributes;
    view.keyStart = keyStart;
    view.keyLength = keyLength;
    view.valueStart = valueStart;
    view.valueLength = valueLength;
    view.headersStart = headersStart;
    view.headerCount = headerCount;
    view.recordStart = recordStart;
    view.recordEnd = recordEnd;
  }

  /**
   * `parse` for the common record: no headers, every varint of one byte but the Length, OffsetDelta,
   * key and value lengths (one or two: up to 8191), all within bounds. Decoded with one local
   * position instead of the cursor object, the checks of `parse` in the same order. Returns false,
   * having changed nothing, for any other record (or any fault): `parse` then decodes it from the
   * start, and refuses it with its own errors. Measured with bench/consumer-cpu.bench.ts (views
   * mode, 100 B values): see docs/benchmarks.md "The client library's own cost", issue 13.
   */
  private parseCommon(index: number, recordStart: number): boolean {
    const records = this.records;
    const recordsEnd = this.recordsEnd;
    let p = recordStart;
    // Length (the caller checked recordStart < recordsEnd).
    let byte = records[p]!;
    let raw: number;
    if (byte < 0x80) {
      raw = byte;
      p += 1;
    } else {
      if (p + 1 >= recordsEnd) return false;
      const second = records[p + 1]!;
      if (second >= 0x80) return false;
      raw = (byte & 0x7f) | (second << 7);
      p += 2;
    }
    const length = (raw >>> 1) ^ -(raw & 1);
    const recordEnd = p + length;
    // Attributes, TimestampDelta, OffsetDelta, key and value lengths, HeaderCount: 6 bytes at least.
    if (length < 6 || recordEnd > recordsEnd) return false;
    const attributes = records[p]!;
    // TimestampDelta, one byte.
    byte = records[p + 1]!;
    if (byte >= 0x80) return false;
    const timestampDelta = (byte >>> 1) ^ -(byte & 1);
    p += 2;
    // OffsetDelta, one or two bytes (at least 4 body bytes remain).
    byte = records[p]!;
    if (byte < 0x80) {
      raw = byte;
      p += 1;
    } else {
      const second = records[p + 1]!;
      if (second >= 0x80) return false;
      raw = (byte & 0x7f) | (second << 7);
      p += 2;
    }
    if (((raw >>> 1) ^ -(raw & 1)) !== index) return false;
    // Key length, one or two bytes, then the key.
    if (p + 1 >= recordEnd) return false;
    byte = records[p]!;
    if (byte < 0x80) {
      raw = byte;
      p += 1;
    } else {
      const second = records[p + 1]!;
      if (second >= 0x80) return false;
      raw = (byte & 0x7f) | (second << 7);
      p += 2;
    }
    const keyLength = (raw >>> 1) ^ -(raw & 1);
    const keyStart = p;
    if (keyLength < -1 || keyStart + keyLength > recordEnd) return false;
    if (keyLength > 0) p = keyStart + keyLength;
    // Value length, one or two bytes, then the value.
    if (p + 1 >= recordEnd) return false;
    byte = records[p]!;
    if (byte < 0x80) {
      raw = byte;
      p += 1;
    } else {
      const second = records[p + 1]!;
      if (second >= 0x80) return false;
      raw = (byte & 0x7f) | (second << 7);
      p += 2;
    }
    const valueLength = (raw >>> 1) ^ -(raw & 1);
    const valueStart = p;
    if (valueLength < -1 || valueStart + valueLength > recordEnd) return false;
    if (valueLength > 0) p = valueStart + valueLength;
    // HeaderCount 0, the record's last byte.
    if (p + 1 !== recordEnd || records[p] !== 0) return false;
    const view = this.view;
    view.index = index;
    view.offset = this.baseOffset + index;
    view.timestamp = this.logAppendTime ? this.maxTimestamp : this.baseTimestamp + timestampDelta;
    view.attributes = attributes;
    view.keyStart = keyStart;
    view.keyLength = keyLength;
    view.valueStart = valueStart;
    view.valueLength = valueLength;
    view.headersStart = recordEnd;
    view.headerCount = 0;
    view.recordStart = recordStart;
    view.recordEnd = recordEnd;
    this.cursor.position = recordEnd;
    return true;
  }

  /** A record fault at an absolute position in `records`, reported relative to the batch. */
  private fault(reason: string, absolutePosition: number): InvalidBatchError {
    return new InvalidBatchError("record", reason, absolutePosition - this.origin, this.where);
  }

  private trailingBytes(): InvalidBatchError {
    const position = this.cursor.position;
    return this.fault(
      `${this.recordsEnd - position} bytes follow the last of ${this.count} records`,
      position,
    );
  }
}

const validationReader = new RecordBatchReader();

/**
 * Push-style walk over `RecordBatchReader`: calls `visit` once per record of the batch in
 * `bytes[start, end)` with the reader's reused view, and returns the number of records. A visitor's
 * own errors pass through untouched.
 */
export function forEachRecord(
  bytes: Uint8Array,
  start: number,
  end: number,
  visit: RecordVisitor,
  header?: RecordBatchHeader,
  reader: RecordBatchReader = new RecordBatchReader(),
): number {
  reader.open(bytes, start, end, header);
  for (let record = reader.next(); record !== undefined; record = reader.next()) visit(record);
  return reader.recordCount;
}

/** The key of the visited record as a view (no copy), or null. */
export function recordKey(record: RecordView): Uint8Array | null {
  return record.keyLength < 0
    ? null
    : record.bytes.subarray(record.keyStart, record.keyStart + record.keyLength);
}

/** The value of the visited record as a view (no copy), or null. */
export function recordValue(record: RecordView): Uint8Array | null {
  return record.valueLength < 0
    ? null
    : record.bytes.subarray(record.valueStart, record.valueStart + record.valueLength);
}

export interface DecodedHeader {
  key: string;
  value: Uint8Array | null;
}

const DECODER = new TextDecoder();

/** The headers of the visited record, decoded (keys as strings, values as views). Already checked. */
export function recordHeaders(record: RecordView): DecodedHeader[] {
  const headers: DecodedHeader[] = [];
  const bytes = record.bytes;
  const cursor: ReadCursor = { position: record.headersStart };
  for (let h = 0; h < record.headerCount; h++) {
    const keyLength = readVarint(bytes, cursor, record.recordEnd);
    const key = DECODER.decode(bytes.subarray(cursor.position, cursor.position + keyLength));
    cursor.position += keyLength;
    const valueLength = readVarint(bytes, cursor, record.recordEnd);
    const value = valueLength < 0 ? null : bytes.subarray(cursor.position, cursor.position + valueLength);
    if (valueLength > 0) cursor.position += valueLength;
    headers.push({ key, value });
  }
  return headers;
}

export interface DecodedRecord {
  offset: number;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: DecodedHeader[];
}

export interface DecodedBatch {
  header: RecordBatchHeader;
  records: DecodedRecord[];
}

/**
 * The batch in `bytes[start, end)` as plain objects: for tests, tools and the embedded API. Hot
 * paths use `forEachRecord`. Checks structure like the walker; `verifyCrc` (default true) checks the
 * batch CRC first.
 */
export function decodeBatch(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
  verifyCrc = true,
): DecodedBatch {
  const header = readBatchHeader(bytes, start);
  if (verifyCrc && header.sizeBytes === end - start) {
    const actual = computeBatchCrc(bytes, start, end);
    if (actual !== header.crc)
      throw new InvalidBatchError(
        "crc",
        `CRC32C is 0x${hex32(actual)}, the batch says 0x${hex32(header.crc)}`,
        CRC_OFFSET,
      );
  }
  const records: DecodedRecord[] = [];
  forEachRecord(
    bytes,
    start,
    end,
    (record) => {
      records.push({
        offset: record.offset,
        timestamp: record.timestamp,
        key: recordKey(record),
        value: recordValue(record),
        headers: recordHeaders(record),
      });
    },
    header,
  );
  return { header, records };
}

// --- Encoding ------------------------------------------------------------------------------------

export interface HeaderInput {
  key: string;
  value: Uint8Array | null;
}

export interface RecordInput {
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers?: readonly HeaderInput[];
  /** Milliseconds since the epoch (CreateTime), a safe integer; −1 is Kafka's "no timestamp". */
  timestamp: number;
}

export interface BatchOptions {
  codec?: ProducibleCodec;
  /** −1 (none) unless idempotent. */
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
  /** Written as given; 0 is what a producer sends, the broker stamps its own. Default 0. */
  baseOffset?: number;
  /** Default −1 (Kafka clients send 0; the broker overwrites it either way). */
  partitionLeaderEpoch?: number;
  /** Sets attributes bit 3; readers then take MaxTimestamp as every record's timestamp. */
  logAppendTime?: boolean;
  transactional?: boolean;
}

/**
 * Builds one RecordBatch v2 in a reusable, growable buffer the writer owns: `begin`, `add` per
 * record, `finish` → a view of the batch, valid until the next `begin`. Records are encoded in
 * place; a compressed batch compresses them once at `finish` (one allocation by zlib).
 */
export class RecordBatchWriter {
  /** Never longer than `maxBatchBytes`, so a record that fits the buffer fits the limit (`add`). */
  private buffer: Uint8Array;
  private position = RECORDS_OFFSET;
  private count = 0;
  /** Set by `idempotence` (−1: take the producer fields from the options). */
  private idempotentProducerId = -1;
  private idempotentEpoch = -1;
  private idempotentSequence = -1;
  private baseTimestamp = 0;
  private maxTimestamp = 0;
  private options: BatchOptions = {};
  private readonly maxBatchBytes: number;

  constructor(initialBytes = 64 * 1024, maxBatchBytes = RECORD_BATCH_BYTES_LIMIT) {
    if (!(Number.isSafeInteger(maxBatchBytes) && maxBatchBytes >= RECORDS_OFFSET))
      throw new InvalidArgumentError(
        `maxBatchBytes ${maxBatchBytes} cannot hold the ${RECORDS_OFFSET}-byte batch header`,
      );
    this.buffer = new Uint8Array(Math.min(Math.max(initialBytes, RECORDS_OFFSET), maxBatchBytes));
    this.maxBatchBytes = maxBatchBytes;
  }

  /** Starts a new batch (forgets the previous one, whose view becomes invalid). */
  begin(options: BatchOptions = {}): this {
    this.options = options;
    this.idempotentProducerId = -1;
    this.position = RECORDS_OFFSET;
    this.count = 0;
    this.baseTimestamp = 0;
    this.maxTimestamp = 0;
    return this;
  }

  /**
   * Stamps the batch being written as an idempotent producer's (overriding the options of `begin`):
   * the sequence is known only when the batch is sent, after its records were added.
   */
  idempotence(producerId: number, producerEpoch: number, baseSequence: number): this {
    this.idempotentProducerId = producerId;
    this.idempotentEpoch = producerEpoch;
    this.idempotentSequence = baseSequence;
    return this;
  }

  get recordCount(): number {
    return this.count;
  }

  /** Bytes of the batch so far, uncompressed (the header included). */
  get sizeBytes(): number {
    return this.position;
  }

  /** Adds `record`; RecordTooLargeError when the batch would outgrow its limit. */
  add(record: RecordInput): this {
    this.append(record, true);
    return this;
  }

  /**
   * Adds `record` and returns true when the batch stays within its limit; otherwise returns false and
   * changes nothing, so the caller can finish this batch and start the next with the record. A
   * record too large for even an empty batch is RecordTooLargeError, as with `add`.
   */
  tryAdd(record: RecordInput): boolean {
    return this.append(record, this.count === 0);
  }

  private append(record: RecordInput, refuseWhenFull: boolean): boolean {
    const timestamp = record.timestamp;
    if (!Number.isSafeInteger(timestamp))
      throw new InvalidArgumentError(`timestamp ${timestamp} is not an integer number of milliseconds`);
    const offsetDelta = this.count;
    // The batch's timestamps change only once the record is in (a refused record leaves no trace).
    const timestampDelta = offsetDelta === 0 ? 0 : timestamp - this.baseTimestamp;
    const key = record.key;
    const value = record.value;
    const headers = record.headers;
    const headerCount = headers === undefined ? 0 : headers.length;
    // Lengths of −1 stand for null; field sizes below are computed inline (no helper call for the
    // common small values): see `lengthVarintBytes`.
    const keyLength = key === null ? -1 : key.length;
    const valueLength = value === null ? -1 : value.length;
    let bodyBytes =
      1 +
      (timestampDelta >= -64 && timestampDelta < 64 ? 1 : sizeOfVarlong(timestampDelta)) +
      lengthVarintBytes(offsetDelta) +
      (keyLength < 0 ? 1 : lengthVarintBytes(keyLength) + keyLength) +
      (valueLength < 0 ? 1 : lengthVarintBytes(valueLength) + valueLength) +
      lengthVarintBytes(headerCount);
    for (let h = 0; h < headerCount; h++) {
      const header = headers![h]!;
      const keyBytes = utf8Length(header.key);
      bodyBytes += sizeOfVarint(keyBytes) + keyBytes;
      bodyBytes += header.value === null ? 1 : sizeOfVarint(header.value.length) + header.value.length;
    }
    const start = this.position;
    const end = start + lengthVarintBytes(bodyBytes) + bodyBytes;
    if (end > this.buffer.length) {
      if (end > this.maxBatchBytes) {
        if (!refuseWhenFull) return false;
        throw new RecordTooLargeError(
          end,
          this.maxBatchBytes,
          `a batch of ${offsetDelta + 1} records`,
          "the batch size limit",
        );
      }
      this.ensure(end - start);
    }
    const bytes = this.buffer;
    let p = writeLengthVarint(bytes, start, bodyBytes);
    bytes[p++] = 0;
    if (timestampDelta >= -64 && timestampDelta < 64)
      bytes[p++] = timestampDelta >= 0 ? timestampDelta << 1 : (-timestampDelta << 1) - 1;
    else p = writeVarlong(bytes, p, timestampDelta);
    p = writeLengthVarint(bytes, p, offsetDelta);
    // A null key or value is a length of −1: zigzag 1, one byte.
    if (keyLength < 0) bytes[p++] = 1;
    else {
      p = writeLengthVarint(bytes, p, keyLength);
      copyBytes(bytes, p, key!);
      p += keyLength;
    }
    if (valueLength < 0) bytes[p++] = 1;
    else {
      p = writeLengthVarint(bytes, p, valueLength);
      copyBytes(bytes, p, value!);
      p += valueLength;
    }
    if (headerCount === 0) bytes[p++] = 0;
    else {
      p = writeLengthVarint(bytes, p, headerCount);
      for (let h = 0; h < headerCount; h++) {
        const header = headers![h]!;
        p = writeVarint(bytes, p, utf8Length(header.key));
        p = writeUtf8(bytes, p, header.key);
        p = writeBytesField(bytes, p, header.value);
      }
    }
    if (p !== end) assert(false, "record size computed and written agree");
    this.position = p;
    this.count = offsetDelta + 1;
    if (offsetDelta === 0) {
      this.baseTimestamp = timestamp;
      this.maxTimestamp = timestamp;
    } else if (timestamp > this.maxTimestamp) {
      this.maxTimestamp = timestamp;
    }
    return true;
  }

  /** Completes the header (compressing the records first if asked) and returns a view of the batch. */
  finish(): Uint8Array {
    if (this.count === 0) throw new InvalidArgumentError("a record batch holds at least one record");
    const options = this.options;
    const codecId = codecIdOf(options.codec ?? "none");
    if (codecId !== CODEC_NONE) {
      const compressed = compressRecords(codecId, this.buffer.subarray(RECORDS_OFFSET, this.position));
      if (RECORDS_OFFSET + compressed.length > this.maxBatchBytes)
        throw new RecordTooLargeError(
          RECORDS_OFFSET + compressed.length,
          this.maxBatchBytes,
          `a compressed batch of ${this.count} records`,
          "the batch size limit",
        );
      // The compressed form can be larger than the plain one (small batches): make room.
      this.position = RECORDS_OFFSET;
      this.ensure(compressed.length);
      this.buffer.set(compressed, RECORDS_OFFSET);
      this.position = RECORDS_OFFSET + compressed.length;
    }
    const bytes = this.buffer;
    const end = this.position;
    const attributes =
      codecId |
      (options.logAppendTime === true ? ATTRIBUTE_LOG_APPEND_TIME : 0) |
      (options.transactional === true ? ATTRIBUTE_TRANSACTIONAL : 0);
    setInt64(bytes, BASE_OFFSET_OFFSET, checkedInt64(options.baseOffset ?? 0, "baseOffset"));
    setInt32(bytes, BATCH_LENGTH_OFFSET, end - BATCH_LENGTH_EXCLUDED_BYTES);
    setInt32(
      bytes,
      PARTITION_LEADER_EPOCH_OFFSET,
      checkedInt32(options.partitionLeaderEpoch ?? -1, "partitionLeaderEpoch"),
    );
    bytes[MAGIC_OFFSET] = MAGIC_V2;
    setInt16(bytes, ATTRIBUTES_OFFSET, attributes);
    setInt32(bytes, LAST_OFFSET_DELTA_OFFSET, this.count - 1);
    setInt64(bytes, BASE_TIMESTAMP_OFFSET, this.baseTimestamp);
    setInt64(bytes, MAX_TIMESTAMP_OFFSET, this.maxTimestamp);
    const idempotent = this.idempotentProducerId >= 0;
    const producerId = idempotent ? this.idempotentProducerId : (options.producerId ?? -1);
    const producerEpoch = idempotent ? this.idempotentEpoch : (options.producerEpoch ?? -1);
    const baseSequence = idempotent ? this.idempotentSequence : (options.baseSequence ?? -1);
    setInt64(bytes, PRODUCER_ID_OFFSET, checkedInt64(producerId, "producerId"));
    setInt16(bytes, PRODUCER_EPOCH_OFFSET, checkedInt16(producerEpoch, "producerEpoch"));
    setInt32(bytes, BASE_SEQUENCE_OFFSET, checkedInt32(baseSequence, "baseSequence"));
    setInt32(bytes, RECORD_COUNT_OFFSET, this.count);
    setInt32(bytes, CRC_OFFSET, computeBatchCrc(bytes, 0, end));
    return bytes.subarray(0, end);
  }

  private ensure(moreBytes: number): void {
    const needed = this.position + moreBytes;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    // Callers checked `needed` against the limit; the cap keeps the buffer within it (see `buffer`).
    const grown = new Uint8Array(Math.min(capacity, this.maxBatchBytes));
    grown.set(this.buffer.subarray(0, this.position));
    this.buffer = grown;
  }
}

/** Encodes `records` as one batch into a fresh buffer (a copy): for tests, tools and one-offs. */
export function encodeBatch(records: readonly RecordInput[], options: BatchOptions = {}): Uint8Array {
  const writer = new RecordBatchWriter(RECORDS_OFFSET + records.length * 32);
  writer.begin(options);
  for (const record of records) writer.add(record);
  return writer.finish().slice();
}

/**
 * Encodes `records`, in order, as as few batches as fit `maxBatchBytes` each, back to back in one
 * fresh buffer (Kafka's records field; one append). Each batch takes records while they fit
 * uncompressed; with a codec, a batch that compresses to more than the limit (incompressible
 * records: the codec's framing adds bytes) is split in two until it fits. A single record that
 * cannot fit a batch of its own is RecordTooLargeError. At least one record.
 */
export function encodeBatches(
  records: readonly RecordInput[],
  maxBatchBytes: number,
  options: BatchOptions = {},
): Uint8Array {
  if (records.length === 0) throw new InvalidArgumentError("a record batch holds at least one record");
  const writer = new RecordBatchWriter(Math.min(64 * 1024, maxBatchBytes), maxBatchBytes);
  const batches: Uint8Array[] = [];
  let first = 0;
  writer.begin(options);
  for (let i = 0; i < records.length; i++) {
    if (writer.tryAdd(records[i]!)) continue;
    finishRange(writer, records, first, i, options, batches);
    first = i;
    writer.begin(options).add(records[i]!);
  }
  finishRange(writer, records, first, records.length, options, batches);
  if (batches.length === 1) return batches[0]!;
  const out = new Uint8Array(batches.reduce((sum, batch) => sum + batch.length, 0));
  let position = 0;
  for (const batch of batches) {
    out.set(batch, position);
    position += batch.length;
  }
  return out;
}

/** Finishes the writer's batch of `records[from, to)` (already added) into `out`, split if need be. */
function finishRange(
  writer: RecordBatchWriter,
  records: readonly RecordInput[],
  from: number,
  to: number,
  options: BatchOptions,
  out: Uint8Array[],
): void {
  try {
    out.push(writer.finish().slice());
    return;
  } catch (error) {
    if (!(error instanceof RecordTooLargeError) || to - from === 1) throw error;
  }
  // Only a compressed batch gets here: it fit uncompressed, so each half does too.
  const middle = from + Math.floor((to - from) / 2);
  for (const [start, end] of [
    [from, middle],
    [middle, to],
  ] as const) {
    writer.begin(options);
    for (let i = start; i < end; i++) writer.add(records[i]!);
    finishRange(writer, records, start, end, options, out);
  }
}

function checkedInt64(value: number, name: string): number {
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError(`${name} ${value} is not a safe integer`);
  return value;
}

function checkedInt32(value: number, name: string): number {
  if ((value | 0) !== value) throw new InvalidArgumentError(`${name} ${value} is not an int32`);
  return value;
}

function checkedInt16(value: number, name: string): number {
  if ((value << 16) >> 16 !== value) throw new InvalidArgumentError(`${name} ${value} is not an int16`);
  return value;
}

function writeBytesField(bytes: Uint8Array, position: number, field: Uint8Array | null): number {
  if (field === null) {
    bytes[position] = 1; // zigzag(−1)
    return position + 1;
  }
  const length = field.length;
  const p = writeVarint(bytes, position, length);
  copyBytes(bytes, p, field);
  return p + length;
}

/**
 * `target.set(source, position)` for a key or value, with a byte loop for the smallest fields only.
 * Measured one copy at a time on the 2-core VM (Bun 1.4.4; plain Uint8Array, Buffer, subarray and
 * TextEncoder sources alike): `set` costs a flat ~20-30 ns, the loop ~1 ns a byte (100 B: loop
 * 95-220 ns, set 17-70 ns); they cross near 16 bytes. An earlier profile had blamed `set` for 94 %
 * of add() and moved every field to the loop; in Producer.write()'s loop the loop was the larger
 * cost (docs/benchmarks.md, "Producer.write() on the CPU alone").
 */
function copyBytes(target: Uint8Array, position: number, source: Uint8Array): void {
  const length = source.length;
  if (length > 16) target.set(source, position);
  else for (let i = 0; i < length; i++) target[position + i] = source[i]!;
}

/**
 * Bytes of the zigzag varint of a length, count or offset delta `n` (0 ≤ n < 2^31): zigzag(n) = 2n,
 * so 1 byte below 2^6, 2 below 2^13, 3 below 2^20, 4 below 2^27. Same result as `sizeOfVarint`
 * without the zigzag and the call for the common case (add() runs it 4 times a record).
 */
function lengthVarintBytes(n: number): number {
  return n < 0x40 ? 1 : n < 0x2000 ? 2 : n < 0x100000 ? 3 : n < 0x8000000 ? 4 : 5;
}

/** `writeVarint` for 0 ≤ n < 2^31, with the 1- and 2-byte cases (n < 2^13) written inline. */
function writeLengthVarint(bytes: Uint8Array, position: number, n: number): number {
  if (n < 0x40) {
    bytes[position] = n << 1;
    return position + 1;
  }
  if (n < 0x2000) {
    bytes[position] = ((n << 1) & 0x7f) | 0x80;
    bytes[position + 1] = n >>> 6;
    return position + 2;
  }
  return writeVarint(bytes, position, n);
}

/**
 * The last string `utf8Length` measured and its length: a producer's header keys are usually the same
 * few strings record after record, and each key is measured three times per record (the producer's
 * size bound, the writer's size, the writer's length field). Comparing with `===` is a pointer
 * check for the same string and at worst a compare of equal-length text, never more than the loop.
 */
let lastMeasuredText = "";
let lastMeasuredBytes = 0;

/** UTF-8 byte length of `text` without encoding it (lone surrogates count as U+FFFD, 3 bytes). */
export function utf8Length(text: string): number {
  if (text === lastMeasuredText) return lastMeasuredBytes;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  lastMeasuredText = text;
  lastMeasuredBytes = bytes;
  return bytes;
}

const ENCODER = new TextEncoder();

function writeUtf8(bytes: Uint8Array, position: number, text: string): number {
  let p = position;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) {
      // Not ASCII: let the platform encode the whole string (the common header key is ASCII).
      const { written } = ENCODER.encodeInto(text, bytes.subarray(position));
      return position + written;
    }
    bytes[p++] = code;
  }
  return p;
}
