/**
 * One segment: a file `<20-digit base offset>.log` holding a header and then records, its sparse
 * index, its writer while it is active, and one read descriptor shared by all readers.
 *
 * Owns: the segment's offsets (`baseOffset`, `nextOffset`), its index, the writer (while active), the
 * read descriptor and the reader count that keeps it open after the file is deleted.
 *
 * Invariants:
 * - `nextOffset - baseOffset` records lie in [SEGMENT_HEADER_BYTES, sizeBytes); `nextOffset` is
 *   published after the writer published `sizeBytes`, so a reader that asks for an offset below
 *   `nextOffset` finds all of its bytes (DESIGN invariant 2).
 * - Readers never look past `sizeBytes` and use their own descriptor (never the writer's), with
 *   positional reads only: no locks are needed because bytes below `sizeBytes` never change.
 * - Index entries exist only for bytes below the indexed end; an active segment's index is complete,
 *   a sealed segment opened without a scan builds its index on the first read.
 * - After `delete()` the file is unlinked at once; the read descriptor stays open until the last
 *   reader (including an in-flight sendfile) calls `release()`. A reader that started finishes.
 * - A sealed segment's read descriptor counts against the process-wide bound of read-descriptors.ts,
 *   which may close it while it is idle (no reader, nothing unforced); the next read reopens it.
 */
import path from "node:path";
import { crc32c } from "../../ffi/crc32c.ts";
import { assert } from "../domain/assert.ts";
import {
  BadSegmentFileError,
  ClosedError,
  CorruptRecordError,
  InvalidArgumentError,
  OffsetOutOfRangeError,
  RecordTooLargeError,
} from "../domain/errors.ts";
import type { Offset } from "../domain/ids.ts";
import {
  INDEX_INTERVAL_BYTES_DEFAULT,
  RECORD_HEADER_BYTES,
  RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  RECORD_PAYLOAD_BYTES_LIMIT,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { newScanResult, readUint32, type ScanStop, scanRecords } from "../record/codec.ts";
import { disk } from "./disk.ts";
import { FileSegmentWriter } from "./file-segment-writer.ts";
import { MappedSegmentWriter } from "./mapped-segment-writer.ts";
import { type ReadDescriptorHolder, sealedReadDescriptors } from "./read-descriptors.ts";
import { scanSegmentFile } from "./recovery.ts";
import {
  decodeSegmentHeader,
  encodeSegmentHeader,
  parseSegmentFileName,
  segmentFileName,
} from "./segment-header.ts";
import { type SegmentWriter, WRITE_MODES, type WriteMode } from "./segment-writer.ts";
import { type IndexEntry, SparseIndex } from "./sparse-index.ts";

export interface SegmentConfig {
  writeMode: WriteMode;
  /** Capacity of a segment file in bytes, header included. */
  segmentBytes: number;
  /** Largest payload accepted and recognised by recovery. */
  maxPayloadBytes: number;
  indexIntervalBytes: number;
}

export const DEFAULT_SEGMENT_CONFIG: Readonly<SegmentConfig> = {
  // `file`, not the predecessor's `mapped`: measured here side by side (docs/benchmarks.md), the file
  // path appends 1.5-2.3x more records/s whenever each batch of 100-1000 records is forced (fdatasync
  // of a mapped file must write-protect every dirty page and the writer then faults on it again), and
  // is on par without forces. The mapped path only wins for batches of one record without a force.
  writeMode: "file",
  segmentBytes: SEGMENT_BYTES_DEFAULT,
  maxPayloadBytes: RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  indexIntervalBytes: INDEX_INTERVAL_BYTES_DEFAULT,
};

/** Fills in defaults and refuses impossible values with a clear message. */
export function segmentConfig(partial: Partial<SegmentConfig> = {}): SegmentConfig {
  const config = { ...DEFAULT_SEGMENT_CONFIG, ...partial };
  if (!WRITE_MODES.includes(config.writeMode)) {
    throw new InvalidArgumentError(
      `write mode must be one of ${WRITE_MODES.join(", ")}, got ${String(config.writeMode)}`,
    );
  }
  const { segmentBytes, maxPayloadBytes, indexIntervalBytes } = config;
  if (
    !Number.isInteger(segmentBytes) ||
    segmentBytes < SEGMENT_BYTES_MIN ||
    segmentBytes > SEGMENT_BYTES_MAX
  ) {
    throw new InvalidArgumentError(
      `segment size must be in [${SEGMENT_BYTES_MIN}, ${SEGMENT_BYTES_MAX}] bytes, got ${segmentBytes}`,
    );
  }
  if (
    !Number.isInteger(maxPayloadBytes) ||
    maxPayloadBytes < 1 ||
    maxPayloadBytes > RECORD_PAYLOAD_BYTES_LIMIT
  ) {
    throw new InvalidArgumentError(
      `maximum record size must be in [1, ${RECORD_PAYLOAD_BYTES_LIMIT}] bytes, got ${maxPayloadBytes}`,
    );
  }
  if (!Number.isInteger(indexIntervalBytes) || indexIntervalBytes < 1) {
    throw new InvalidArgumentError(
      `index interval must be a positive number of bytes, got ${indexIntervalBytes}`,
    );
  }
  return config;
}

/** What opening a segment for append found and did. */
export interface SegmentRecoveryReport {
  path: string;
  baseOffset: Offset;
  recordCount: number;
  /** End of the valid prefix; the next append lands here. */
  validEndBytes: number;
  /** Why the scan stopped ("end" or "zero-length" are a clean end of log). */
  stop: ScanStop;
  scannedBytes: number;
  /** Bytes cut from the end of the file (torn or invalid records, garbage, mapped-file padding). */
  cutBytes: number;
}

/** A byte range of a segment file, for a zero-copy send. Filled in place by `fileRange`. */
export interface FileRange {
  fd: number;
  position: number;
  lengthBytes: number;
  firstOffset: number;
  recordCount: number;
}

export function newFileRange(): FileRange {
  return { fd: -1, position: 0, lengthBytes: 0, firstOffset: 0, recordCount: 0 };
}

/** The result of a copying read: framed records, CRC-checked, in a buffer the caller may keep. */
export interface RecordsRead {
  records: Uint8Array;
  firstOffset: number;
  recordCount: number;
}

// One scratch buffer for the short forward scans of lookups. JS runs one call at a time and lookups
// are synchronous, so sharing it is safe and saves an allocation per read.
const SCRATCH_BYTES = 64 * 1024;
const scratch = new Uint8Array(SCRATCH_BYTES);
const header = new Uint8Array(SEGMENT_HEADER_BYTES);
const readScan = newScanResult();

export class Segment implements ReadDescriptorHolder {
  readonly path: string;
  readonly baseOffset: Offset;
  readonly config: SegmentConfig;
  private writer: SegmentWriter | undefined;
  private index: SparseIndex;
  /** The index covers every record before this position / relative offset. */
  private indexedEndBytes: number;
  private indexedRecords: number;
  private sealedSizeBytes: number;
  private sealedForcedBytes: number;
  private publishedNextOffset: Offset;
  private readFd = -1;
  private readers = 0;
  /** When this segment was last read, on the read-descriptor budget's clock. */
  lastReadTick = 0;
  /** Opened by name only (openSealed): the header is checked when the file is first opened. */
  private headerUnchecked = false;
  private deleted = false;
  private closed = false;
  private lastAppendMs: number;
  private readonly entry: IndexEntry = { relativeOffset: 0, position: 0 };
  /**
   * Bytes read per refill by the two hops (hop, hopWhileFits). A walk from an index entry covers
   * about one index interval, so read that much (plus a page) rather than the whole scratch buffer:
   * reading 64 KiB per lookup cost 6.6 us against 1.9 us, most of it copying. A record larger than
   * this only costs another read: a hop needs just the 4-byte length at each record start.
   */
  private readonly hopReadBytes: number;

  private constructor(
    filePath: string,
    baseOffset: Offset,
    config: SegmentConfig,
    writer: SegmentWriter | undefined,
    sizeBytes: number,
    nextOffset: Offset,
    indexComplete: boolean,
  ) {
    this.path = filePath;
    this.baseOffset = baseOffset;
    this.config = config;
    this.writer = writer;
    this.index = new SparseIndex(config.indexIntervalBytes, SEGMENT_HEADER_BYTES);
    this.hopReadBytes = Math.min(SCRATCH_BYTES, config.indexIntervalBytes + 4096);
    this.sealedSizeBytes = sizeBytes;
    this.sealedForcedBytes = sizeBytes;
    this.publishedNextOffset = nextOffset;
    this.indexedEndBytes = indexComplete ? sizeBytes : SEGMENT_HEADER_BYTES;
    this.indexedRecords = indexComplete ? nextOffset - baseOffset : 0;
    this.lastAppendMs = Date.now();
  }

  /** Creates `<directory>/<base offset>.log` with its header and opens it for append. */
  static create(directory: string, baseOffset: Offset, config: SegmentConfig): Segment {
    const filePath = path.join(directory, segmentFileName(baseOffset));
    const fd = disk.openFile(filePath, "createNew");
    let fdOwned = true;
    try {
      disk.pwriteAll(fd, encodeSegmentHeader(baseOffset), 0, SEGMENT_HEADER_BYTES, 0, filePath);
      fdOwned = false; // the writer owns it from here, also when its constructor throws
      const writer = createWriter(config.writeMode, filePath, fd, SEGMENT_HEADER_BYTES, config.segmentBytes);
      return new Segment(filePath, baseOffset, config, writer, SEGMENT_HEADER_BYTES, baseOffset, true);
    } catch (error) {
      // Leave no file behind: the file was created with O_EXCL, so a leftover would make every later
      // create of this base offset (the log's next roll) fail with EEXIST. Cleanup failures are
      // secondary; the caller gets the error that stopped the create.
      if (fdOwned) closeQuietly(fd, filePath);
      unlinkQuietly(filePath);
      throw error;
    }
  }

  /**
   * Opens an existing segment for append, whatever path wrote it: checks the header, scans every
   * record (length and CRC, in large chunks) while rebuilding the index, cuts the file after the last
   * valid record so that nothing behind the cut can come back, and makes the cut durable. The next
   * append lands exactly at the end of the valid prefix.
   *
   * `verifyCrcFrom`: records that start before this position were verified before (a recovery point)
   * and are walked by their lengths only; the default checks every CRC.
   */
  static openForAppend(
    filePath: string,
    config: SegmentConfig,
    verifyCrcFrom: number = SEGMENT_HEADER_BYTES,
  ): { segment: Segment; report: SegmentRecoveryReport } {
    return Segment.recover(filePath, config, verifyCrcFrom, true);
  }

  /**
   * Opens the newest segment for append after a clean shutdown, without a scan: the checkpoint
   * vouches for its size and record count. The index is built on first use (read or append). Falls
   * back to `openForAppend` (a scan) when the file does not match what the checkpoint says.
   */
  static openActiveTrusted(
    filePath: string,
    config: SegmentConfig,
    sizeBytes: number,
    nextOffset: Offset,
  ): { segment: Segment; report: SegmentRecoveryReport } {
    const fd = disk.openFile(filePath, "readWrite");
    let fdOwned = true;
    try {
      const baseOffset = readHeader(fd, filePath);
      const sizeOnDisk = disk.fileSize(fd, filePath);
      if (sizeOnDisk !== sizeBytes || nextOffset < baseOffset || sizeBytes < SEGMENT_HEADER_BYTES) {
        disk.closeFile(fd, filePath);
        fdOwned = false;
        return Segment.openForAppend(filePath, config, sizeBytes);
      }
      fdOwned = false;
      const writer = createWriter(
        config.writeMode,
        filePath,
        fd,
        sizeBytes,
        Math.max(config.segmentBytes, sizeBytes),
      );
      const segment = new Segment(filePath, baseOffset, config, writer, sizeBytes, nextOffset, false);
      const report: SegmentRecoveryReport = {
        path: filePath,
        baseOffset,
        recordCount: nextOffset - baseOffset,
        validEndBytes: sizeBytes,
        stop: "end",
        scannedBytes: 0,
        cutBytes: 0,
      };
      return { segment, report };
    } catch (error) {
      if (fdOwned) disk.closeFile(fd, filePath);
      throw error;
    }
  }

  /**
   * Like openForAppend, but the segment comes back sealed (no writer, no mapping): for segments
   * behind a recovery point that are not the newest one. The cut, if any, is made the same way.
   */
  static openRecovered(
    filePath: string,
    config: SegmentConfig,
    verifyCrcFrom: number = SEGMENT_HEADER_BYTES,
  ): { segment: Segment; report: SegmentRecoveryReport } {
    return Segment.recover(filePath, config, verifyCrcFrom, false);
  }

  private static recover(
    filePath: string,
    config: SegmentConfig,
    verifyCrcFrom: number,
    forAppend: boolean,
  ): { segment: Segment; report: SegmentRecoveryReport } {
    const fd = disk.openFile(filePath, "readWrite");
    let writer: SegmentWriter | undefined;
    let fdOwned = true;
    try {
      const baseOffset = readHeader(fd, filePath);
      const sizeOnDisk = disk.fileSize(fd, filePath);
      const index = new SparseIndex(config.indexIntervalBytes, SEGMENT_HEADER_BYTES);
      const { maxPayloadBytes } = config;
      // Lengths only up to the recovery point (verified before), lengths and CRCs after it.
      const trustedEnd = Math.min(Math.max(verifyCrcFrom, SEGMENT_HEADER_BYTES), sizeOnDisk);
      let scan = scanSegmentFile(
        fd,
        filePath,
        SEGMENT_HEADER_BYTES,
        0,
        trustedEnd,
        maxPayloadBytes,
        false,
        index,
      );
      let recordCount = scan.recordCount;
      let scannedBytes = scan.scannedBytes;
      if (scan.stop === "end" || (scan.stop === "truncated" && scan.endPosition < trustedEnd)) {
        // A record straddling the trusted end continues in the verified part: rescan from its start.
        const from = scan.endPosition;
        scan = scanSegmentFile(fd, filePath, from, recordCount, sizeOnDisk, maxPayloadBytes, true, index);
        recordCount += scan.recordCount;
        scannedBytes += scan.scannedBytes;
      }
      const validEnd = scan.endPosition;
      // Cut and make the cut durable before anything new is written behind it: otherwise a crash
      // could leave new records followed by old ones from behind the cut (resurrection).
      if (sizeOnDisk !== validEnd) disk.truncateFile(fd, validEnd, filePath);
      // Also force what the scan accepted: after a process crash, records can be readable from the
      // page cache without being on disk yet, and the caller is about to treat them as durable.
      disk.datasyncNow(fd, filePath);
      const nextOffset = (baseOffset + recordCount) as Offset;
      let segment: Segment;
      if (forAppend) {
        const capacity = Math.max(config.segmentBytes, validEnd);
        fdOwned = false; // the writer owns it from here, also when its constructor throws
        writer = createWriter(config.writeMode, filePath, fd, validEnd, capacity);
        segment = new Segment(filePath, baseOffset, config, writer, validEnd, nextOffset, true);
      } else {
        segment = new Segment(filePath, baseOffset, config, undefined, validEnd, nextOffset, true);
        segment.lastAppendMs = disk.fileModifiedMs(fd, filePath);
        fdOwned = false;
        segment.readFd = fd; // positional reads only: a read-write descriptor serves reading as well
        sealedReadDescriptors.opened(segment);
      }
      segment.index = index;
      const report: SegmentRecoveryReport = {
        path: filePath,
        baseOffset,
        recordCount,
        validEndBytes: validEnd,
        stop: scan.stop,
        scannedBytes,
        cutBytes: sizeOnDisk - validEnd,
      };
      return { segment, report };
    } catch (error) {
      if (fdOwned) disk.closeFile(fd, filePath);
      else writer?.close();
      throw error;
    }
  }

  /**
   * A sealed segment for reading, without a scan and without a descriptor (fast restart; a directory
   * of thousands of segments costs no descriptor until one is read). The caller vouches for
   * `nextOffset` (the next segment's base offset) and for the file being trimmed to its records, as
   * a sealed segment is once it was forced. The header is checked, and the index built, on the first
   * read; a file that fails the check refuses that read with BadSegmentFileError.
   */
  static openSealed(filePath: string, config: SegmentConfig, nextOffset: Offset): Segment {
    const baseOffset = parseSegmentFileName(path.basename(filePath));
    if (baseOffset === undefined)
      throw new BadSegmentFileError(filePath, "not named <20-digit base offset>.log");
    if (nextOffset < baseOffset) {
      throw new BadSegmentFileError(
        filePath,
        `next offset ${nextOffset} lies before base offset ${baseOffset}`,
      );
    }
    const { sizeBytes, modifiedMs } = disk.statFile(filePath);
    const segment = new Segment(filePath, baseOffset, config, undefined, sizeBytes, nextOffset, false);
    segment.headerUnchecked = true;
    // A sealed file is not written again after it was trimmed or closed, so its mtime is the time of
    // its last append (for the mapped path, the trim at seal time, right after it).
    segment.lastAppendMs = modifiedMs;
    return segment;
  }

  get nextOffset(): Offset {
    return this.publishedNextOffset;
  }

  get recordCount(): number {
    return this.publishedNextOffset - this.baseOffset;
  }

  /** Published size in bytes, header included. */
  get sizeBytes(): number {
    return this.writer === undefined ? this.sealedSizeBytes : this.writer.sizeBytes;
  }

  /** Size covered by a completed force. */
  get forcedBytes(): number {
    return this.writer === undefined ? this.sealedForcedBytes : this.writer.forcedBytes;
  }

  get isActive(): boolean {
    return this.writer !== undefined;
  }

  get writeMode(): WriteMode | undefined {
    return this.writer?.writeMode;
  }

  /** Wall-clock time of the last append (or of opening), for retention by age. */
  get lastAppendTimeMs(): number {
    return this.lastAppendMs;
  }

  get failure(): unknown {
    return this.writer?.failure;
  }

  /** Bytes the batch would add; lets the caller roll before an append that cannot fit. */
  hasRoomFor(batchBytes: number): boolean {
    const writer = this.writer;
    return writer !== undefined && batchBytes <= writer.capacityBytes - writer.sizeBytes;
  }

  /**
   * Appends a batch of framed records as one unit and returns the offset of its first record.
   * The batch is walked twice: before the write every length is checked (and every CRC when
   * `verifyCrc`) and the records are counted; after it, the lengths are read again to offer index
   * entries. A batch with any bad record is refused whole with a CorruptRecordError naming the
   * position inside the batch; nothing is written.
   */
  append(batch: Uint8Array, verifyCrc: boolean, nowMs = Date.now()): Offset {
    const writer = this.writer;
    if (writer === undefined) throw new ClosedError(`segment ${this.path} is sealed and`);
    const batchBytes = batch.length;
    if (batchBytes === 0) throw new InvalidArgumentError("a batch must hold at least one record");
    const recordCount = countBatch(batch, this.config.maxPayloadBytes, verifyCrc);
    // Entries must stay in order: an active segment opened without a scan indexes what it holds first.
    if (this.indexedEndBytes < writer.sizeBytes) this.ensureIndexed();
    const position = writer.sizeBytes;
    writer.append(batch);
    const firstOffset = this.publishedNextOffset;
    // Offer index entries for the new records. Only records starting an interval past the last entry
    // are stored, so for small batches this loop ends after reading a few lengths.
    const index = this.index;
    const firstRelative = firstOffset - this.baseOffset;
    let at = 0;
    for (let i = 0; i < recordCount; i++) {
      index.offer(firstRelative + i, position + at);
      at += RECORD_HEADER_BYTES + readUint32(batch, at);
    }
    this.indexedEndBytes = position + batchBytes;
    this.indexedRecords = firstRelative + recordCount;
    this.lastAppendMs = nowMs;
    this.publishedNextOffset = (firstOffset + recordCount) as Offset; // publish last
    return firstOffset;
  }

  /** Makes every record appended before the call durable, off the event loop. */
  async force(): Promise<void> {
    if (this.writer !== undefined) return this.writer.force();
    const target = this.sealedSizeBytes;
    if (target === this.sealedForcedBytes || this.readFd < 0) return;
    // fdatasync through the read descriptor flushes the file's dirty pages however they got dirty.
    // Held as a reader meanwhile, so that delete() cannot close (and free for reuse) the descriptor
    // while the call waits on the thread pool.
    this.acquire();
    try {
      await disk.datasync(this.readFd, this.path);
    } finally {
      this.release();
    }
    this.sealedForcedBytes = target;
    sealedReadDescriptors.becameIdle();
  }

  /** Like force, on the calling thread. */
  forceNow(): void {
    if (this.writer !== undefined) {
      this.writer.forceNow();
      return;
    }
    if (this.sealedSizeBytes === this.sealedForcedBytes) return;
    disk.datasyncNow(this.ensureReadFd(), this.path);
    this.sealedForcedBytes = this.sealedSizeBytes;
  }

  /**
   * Ends appends: the writer is closed (a mapped file is trimmed to its records and unmapped). Does
   * not force; data not yet forced stays in the page cache and `force()` still covers it.
   */
  seal(): void {
    const writer = this.writer;
    if (writer === undefined) return;
    this.sealedSizeBytes = writer.sizeBytes;
    // A mapped file is trimmed when its writer closes: a metadata change that the next force must
    // cover, or a crash could leave a sealed file padded with zeros. Mark it unforced.
    this.sealedForcedBytes = writer.writeMode === "mapped" ? -1 : writer.forcedBytes;
    // Keep a descriptor across the writer's close, so a pending force can still reach the file.
    this.ensureReadFd();
    this.writer = undefined;
    try {
      writer.close();
    } finally {
      // Sealed from here even when the close failed (the writer is gone either way): its descriptor
      // counts against the budget like any sealed segment's, and close() releases it.
      sealedReadDescriptors.opened(this);
    }
  }

  // --- Reading -----------------------------------------------------------------------------------

  /** Marks one more reader. A deleted segment's descriptor stays open until every reader released. */
  acquire(): void {
    if (this.closed) throw new ClosedError(`segment ${this.path}`);
    this.readers++;
  }

  release(): void {
    assert(this.readers > 0, "release without acquire");
    this.readers--;
    if (this.readers === 0 && this.deleted) this.closeDescriptorsQuietly();
  }

  /** Position of the record with `offset` (baseOffset ≤ offset < nextOffset). */
  positionOf(offset: number): number {
    const relative = offset - this.baseOffset;
    if (relative < 0 || offset >= this.publishedNextOffset) {
      throw new OffsetOutOfRangeError(offset, this.baseOffset, this.publishedNextOffset);
    }
    this.ensureIndexed();
    const entry = this.index.lookup(relative, this.entry);
    return this.hop(entry.relativeOffset, entry.position, relative);
  }

  /**
   * Copying read: complete records from `offset` on, below `endOffset`, at most `maxBytes` of them
   * (but always the first record, however large, so a consumer can make progress). Every CRC is checked; a bad record ends
   * the read, and a read that would start at a bad record throws CorruptRecordError.
   */
  read(offset: number, maxBytes: number, endOffset: number = this.publishedNextOffset): RecordsRead {
    const fd = this.ensureReadFd();
    const position = this.positionOf(offset);
    const end = Math.min(endOffset, this.publishedNextOffset);
    // Records at or after `endOffset` are not handed out (e.g. not yet forced, under `force`).
    const sizeBytes = end < this.publishedNextOffset ? this.positionOf(end) : this.sizeBytes;
    const firstBytes = this.recordBytesAt(fd, position, sizeBytes);
    const length = Math.max(firstBytes, Math.min(maxBytes, sizeBytes - position));
    const records = new Uint8Array(length);
    const got = disk.preadFull(fd, records, 0, length, position, this.path);
    const view = new DataView(records.buffer);
    scanRecords(records, view, 0, got, this.config.maxPayloadBytes, true, readScan);
    if (readScan.recordCount === 0) {
      throw new CorruptRecordError(describeStop(readScan.stop), position, this.path);
    }
    const recordCount = Math.min(readScan.recordCount, end - offset);
    return { records: records.subarray(0, readScan.endPosition), firstOffset: offset, recordCount };
  }

  /**
   * Zero-copy read: the file range holding complete records from `offset` on, at most `maxBytes`
   * (but always the whole first record). The range ends on a record boundary, found through the
   * index with a short scan, so a consumer never receives a partial record. Bytes are not checked
   * here: the consumer checks every CRC. The caller must hold `acquire()` while it uses `out.fd`.
   */
  fileRange(
    offset: number,
    maxBytes: number,
    out: FileRange,
    endOffset: number = this.publishedNextOffset,
  ): FileRange {
    const fd = this.ensureReadFd();
    const position = this.positionOf(offset);
    const lastOffset = Math.min(endOffset, this.publishedNextOffset);
    const sizeBytes = lastOffset < this.publishedNextOffset ? this.positionOf(lastOffset) : this.sizeBytes;
    const relative = offset - this.baseOffset;
    let end: number;
    let endRelative: number;
    if (position + maxBytes >= sizeBytes) {
      end = sizeBytes;
      endRelative = lastOffset - this.baseOffset;
    } else {
      // The last record boundary ≤ position + maxBytes: from the index entry at or before the limit
      // (or from our own record, whichever is later), hop while the next record still fits.
      const limit = position + maxBytes;
      const entry = this.index.floorByPosition(limit, this.entry);
      let at = position;
      let atRelative = relative;
      if (entry.position > position) {
        at = entry.position;
        atRelative = entry.relativeOffset;
      }
      const bounds = this.hopWhileFits(fd, at, atRelative, limit, sizeBytes);
      end = bounds.position;
      endRelative = bounds.relative;
      if (end === position) {
        end = position + this.recordBytesAt(fd, position, sizeBytes);
        endRelative = relative + 1;
      }
    }
    out.fd = fd;
    out.position = position;
    out.lengthBytes = end - position;
    out.firstOffset = offset;
    out.recordCount = endRelative - relative;
    return out;
  }

  // --- Lifetime ----------------------------------------------------------------------------------

  /**
   * Unlinks the file now. The writer (if any) is closed; the read descriptor is closed when the last
   * reader releases, so a reader that started this segment finishes it.
   */
  delete(): void {
    if (this.deleted) return;
    // A reader of an active segment needs a descriptor that outlives the writer; open it while the
    // name still exists.
    if (this.writer !== undefined) this.ensureReadFd();
    // Unlink first: when it fails nothing has changed and the segment stays whole and readable. The
    // other order left a segment marked deleted whose descriptor nothing would ever close (a leak the
    // fault simulation found: test/storage/simulation.test.ts, seed 3684750125).
    disk.unlinkFile(this.path);
    // From here the segment is gone, whatever a close below reports: the caller must forget it (a
    // first version of this fix let a close that reported EIO keep a deleted segment in the log).
    // Linux releases a descriptor even when close(2) fails, so nothing leaks by not retrying.
    this.deleted = true;
    const writer = this.writer;
    this.writer = undefined;
    try {
      if (writer !== undefined) {
        this.sealedSizeBytes = writer.sizeBytes;
        writer.close();
      }
    } catch {
      // See above: the file is unlinked, and the writer's descriptor is released either way.
    } finally {
      if (this.readers === 0) this.closeDescriptorsQuietly();
    }
  }

  get isDeleted(): boolean {
    return this.deleted;
  }

  /** Closes the writer (without forcing) and the read descriptor. Readers must have released. */
  close(): void {
    if (this.closed) return;
    const writer = this.writer;
    try {
      if (writer !== undefined) {
        this.sealedSizeBytes = writer.sizeBytes;
        this.writer = undefined;
        writer.close();
      }
    } finally {
      // Also when the writer's close failed (a mapped trim): the read descriptor must not leak, and
      // the segment is closed either way.
      this.closeDescriptors();
    }
  }

  /** The read descriptor is open (for tests of descriptor hygiene). */
  get hasOpenDescriptor(): boolean {
    return this.readFd >= 0 || this.writer !== undefined;
  }

  private closeDescriptorsQuietly(): void {
    try {
      this.closeDescriptors();
    } catch {
      // The descriptor is released even when close reports an error (see delete()).
    }
  }

  private closeDescriptors(): void {
    this.closed = true;
    const fd = this.readFd;
    this.readFd = -1;
    sealedReadDescriptors.closed(this);
    if (fd >= 0) disk.closeFile(fd, this.path);
  }

  /** For the read-descriptor budget: closes the descriptor if nothing can be using it. */
  closeIdleReadDescriptor(): boolean {
    if (
      this.readFd < 0 ||
      this.writer !== undefined ||
      this.readers > 0 ||
      this.deleted ||
      this.closed ||
      // A force in flight or to come reaches the file through this descriptor (see force()).
      this.sealedForcedBytes !== this.sealedSizeBytes
    ) {
      return false;
    }
    const fd = this.readFd;
    this.readFd = -1;
    sealedReadDescriptors.closed(this);
    try {
      disk.closeFile(fd, this.path);
    } catch {
      // A read-only use of the file ended; nothing written is at stake, and the read that made
      // room must not fail because of another segment's descriptor.
    }
    return true;
  }

  private ensureReadFd(): number {
    this.lastReadTick = sealedReadDescriptors.nextTick();
    if (this.readFd >= 0) return this.readFd;
    if (this.closed) throw new ClosedError(`segment ${this.path}`);
    const fd = disk.openFile(this.path, "read");
    if (this.headerUnchecked) {
      try {
        readHeader(fd, this.path);
      } catch (error) {
        disk.closeFile(fd, this.path);
        throw error;
      }
      this.headerUnchecked = false;
    }
    this.readFd = fd;
    if (this.writer === undefined) sealedReadDescriptors.opened(this);
    return fd;
  }

  /** Builds the index of a segment opened without a scan (lengths only; it was verified before). */
  private ensureIndexed(): void {
    const sizeBytes = this.sizeBytes;
    if (this.indexedEndBytes >= sizeBytes) return;
    const fd = this.ensureReadFd();
    const scan = scanSegmentFile(
      fd,
      this.path,
      this.indexedEndBytes,
      this.indexedRecords,
      sizeBytes,
      this.config.maxPayloadBytes,
      false,
      this.index,
    );
    const expected = this.publishedNextOffset - this.baseOffset;
    const found = this.indexedRecords + scan.recordCount;
    if (this.writer === undefined && scan.stop === "zero-length" && found === expected) {
      // A mapped segment whose trim did not reach the disk before a crash: every record is there,
      // followed by the zeros of its preallocated capacity. The records end here.
      this.sealedSizeBytes = scan.endPosition;
    } else if (scan.endPosition !== sizeBytes || found !== expected) {
      throw new CorruptRecordError(
        `segment holds ${found} readable records up to byte ${scan.endPosition} of ${sizeBytes}, ` +
          `expected ${expected} (${describeStop(scan.stop)})`,
        scan.endPosition,
        this.path,
      );
    }
    this.indexedEndBytes = scan.endPosition;
    this.indexedRecords = expected;
  }

  /** From (relative, position) hop over length prefixes to `targetRelative`; returns its position. */
  private hop(fromRelative: number, fromPosition: number, targetRelative: number): number {
    if (fromRelative === targetRelative) return fromPosition;
    const fd = this.ensureReadFd();
    const sizeBytes = this.sizeBytes;
    let relative = fromRelative;
    let position = fromPosition;
    let bufferStart = 0;
    let bufferEnd = 0;
    const readBytes = this.hopReadBytes;
    while (relative < targetRelative) {
      if (position < bufferStart || position + 4 > bufferEnd) {
        bufferStart = position;
        bufferEnd =
          position +
          disk.preadFull(fd, scratch, 0, Math.min(readBytes, sizeBytes - position), position, this.path);
        if (bufferEnd < position + 4)
          throw new CorruptRecordError("record header past the end of the segment", position, this.path);
      }
      position += RECORD_HEADER_BYTES + readUint32(scratch, position - bufferStart);
      relative++;
    }
    return position;
  }

  private readonly bounds = { position: 0, relative: 0 };

  /** Hops from a record boundary while the next record ends at or before `limit`. */
  private hopWhileFits(
    fd: number,
    fromPosition: number,
    fromRelative: number,
    limit: number,
    sizeBytes: number,
  ): { position: number; relative: number } {
    let position = fromPosition;
    let relative = fromRelative;
    let bufferStart = 0;
    let bufferEnd = 0;
    while (position + RECORD_HEADER_BYTES <= limit) {
      if (position < bufferStart || position + 4 > bufferEnd) {
        bufferStart = position;
        bufferEnd =
          position +
          disk.preadFull(
            fd,
            scratch,
            0,
            Math.min(this.hopReadBytes, sizeBytes - position),
            position,
            this.path,
          );
        if (bufferEnd < position + 4) break;
      }
      const next = position + RECORD_HEADER_BYTES + readUint32(scratch, position - bufferStart);
      if (next > limit) break;
      position = next;
      relative++;
    }
    this.bounds.position = position;
    this.bounds.relative = relative;
    return this.bounds;
  }

  private recordBytesAt(fd: number, position: number, sizeBytes: number): number {
    if (disk.preadFull(fd, scratch, 0, 4, position, this.path) < 4) {
      throw new CorruptRecordError("record header past the end of the segment", position, this.path);
    }
    const length = readUint32(scratch, 0);
    const recordBytes = RECORD_HEADER_BYTES + length;
    if (length === 0 || length > this.config.maxPayloadBytes || position + recordBytes > sizeBytes) {
      throw new CorruptRecordError(`record length ${length} is invalid here`, position, this.path);
    }
    return recordBytes;
  }
}

function createWriter(
  mode: WriteMode,
  filePath: string,
  fd: number,
  sizeBytes: number,
  capacity: number,
): SegmentWriter {
  return mode === "mapped"
    ? new MappedSegmentWriter(filePath, fd, sizeBytes, capacity)
    : new FileSegmentWriter(filePath, fd, sizeBytes, capacity);
}

function closeQuietly(fd: number, filePath: string): void {
  try {
    disk.closeFile(fd, filePath);
  } catch {
    // Already failing: the error that got us here is the one worth reporting.
  }
}

function unlinkQuietly(filePath: string): void {
  try {
    disk.unlinkFile(filePath);
  } catch {
    // Already failing (see closeQuietly).
  }
}

function readHeader(fd: number, filePath: string): Offset {
  const got = disk.preadFull(fd, header, 0, SEGMENT_HEADER_BYTES, 0, filePath);
  return decodeSegmentHeader(header, got, filePath, parseSegmentFileName(path.basename(filePath)));
}

/**
 * Walks a batch of framed records and returns how many it holds, or throws CorruptRecordError with
 * the position inside the batch of the first record that is empty, too large, cut short or (with
 * `verifyCrc`) fails its CRC.
 */
export function countBatch(batch: Uint8Array, maxPayloadBytes: number, verifyCrc: boolean): number {
  const end = batch.length;
  let position = 0;
  let count = 0;
  while (position < end) {
    if (end - position < RECORD_HEADER_BYTES) {
      throw new CorruptRecordError(`${end - position} trailing bytes are not a record`, position);
    }
    const length = readUint32(batch, position);
    if (length === 0)
      throw new CorruptRecordError("record length 0 (empty records are not allowed)", position);
    if (length > maxPayloadBytes) throw new RecordTooLargeError(length, maxPayloadBytes);
    const recordEnd = position + RECORD_HEADER_BYTES + length;
    if (recordEnd > end) {
      throw new CorruptRecordError(`record of ${length} bytes runs past the end of the batch`, position);
    }
    if (
      verifyCrc &&
      crc32c(batch, position + RECORD_HEADER_BYTES, recordEnd) !== readUint32(batch, position + 4)
    ) {
      throw new CorruptRecordError("CRC32C mismatch", position);
    }
    count++;
    position = recordEnd;
  }
  return count;
}

function describeStop(stop: ScanStop): string {
  switch (stop) {
    case "end":
      return "end of data";
    case "zero-length":
      return "zero length (end-of-log marker)";
    case "bad-length":
      return "record length out of range";
    case "truncated":
      return "record cut short";
    case "crc-mismatch":
      return "CRC32C mismatch";
  }
}
