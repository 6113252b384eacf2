/**
 * Scanning a segment file: the one loop behind recovery (open for append), lazy index building of
 * sealed segments, and offline verification. It reads the file in chunks and hands each to THE
 * entry walker (`scanEntries`, framed, src/record/entries.ts); it has no format knowledge of its own.
 *
 * The file is read in chunks through one reused buffer, the first RECOVERY_FIRST_READ_BYTES and each
 * next one twice the last, up to RECOVERY_CHUNK_BYTES: one read per record made the predecessor 28x
 * slower (174 vs 4900 MiB/s), and a file whose data ends early costs one small read. An entry that
 * straddles a chunk boundary is re-read at the start of the next chunk; an entry larger than the
 * buffer gets a temporary buffer of its own. Before each read the scan asks the kernel to read up to
 * RECOVERY_READAHEAD_BYTES (twice the read) after the chunk in the background (`adviseWillNeed`): from a cold page cache the disk then works while the CRCs of
 * the chunk before run, instead of the two taking turns (docs/benchmarks.md, "Recovery speed":
 * 1 GiB from a cold cache 2-3× faster). It is a hint and changes nothing the scan reads or decides.
 *
 * A scan never throws for bad data; it reports where the valid prefix ends and why it stopped
 * (DESIGN invariant 5: stop at the first bad entry, keep everything before it). An entry is valid
 * when it is whole, its lengths agree, its magic is 2, (with `verifyCrc`) its frame CRC matches, and
 * its stamped BaseOffset continues the previous entry exactly. What to do with the rest (cut it,
 * refuse, report) is the caller's decision.
 */
import path from "node:path";
import {
  ENTRY_HEADER_BYTES,
  RECORD_BATCH_OVERHEAD_BYTES,
  RECORD_PAYLOAD_BYTES_LIMIT,
  RECOVERY_CHUNK_BYTES,
  RECOVERY_FIRST_READ_BYTES,
  RECOVERY_READAHEAD_BYTES,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { type EntryStop, type EntryVisitor, newEntryScanResult, scanEntries } from "../record/entries.ts";
import { disk } from "./disk.ts";
import { entryLengthAt } from "./entry-framer.ts";
import { parseSegmentFileName, segmentHeaderIntact } from "./segment-header.ts";
import type { SparseIndex } from "./sparse-index.ts";

export interface SegmentScan {
  /** Position right after the last valid entry. */
  endPosition: number;
  /** Offsets covered by the valid entries between the scan's start and `endPosition`. */
  recordCount: number;
  entryCount: number;
  /** The offset after the last valid entry (the expected one when none). */
  nextOffset: number;
  /** Why the scan ended: "end" means the end of the file was reached on an entry boundary. */
  stop: EntryStop;
  /** Words for people about the stop (empty at "end"). */
  detail: string;
  /** Bytes read from the file. */
  scannedBytes: number;
}

/** Where a scan offers its entries: the segment's index, and the running largest timestamp. */
export interface ScanIndexing {
  index: SparseIndex;
  segmentBaseOffset: number;
  /** In: the largest record timestamp before the scan's start (−1: none). Out: after its end. */
  maxTimestampMs: number;
}

let chunk = new Uint8Array(RECOVERY_CHUNK_BYTES);
const chunkScan = newEntryScanResult();

/**
 * Scans `[startPosition, fileEnd)` of `fd`, whose first entry must have BaseOffset
 * `expectedBaseOffset`. Offers every entry to `indexing` when given. With `verifyCrc = false` the
 * frame CRCs are not computed (for data verified before); everything else is checked. Synchronous:
 * run it at open time or from tools, not per request.
 */
export function scanSegmentFile(
  fd: number,
  path: string,
  startPosition: number,
  expectedBaseOffset: number,
  fileEnd: number,
  maxBatchBytes: number,
  verifyCrc: boolean,
  indexing: ScanIndexing | undefined,
): SegmentScan {
  let position = startPosition;
  let recordCount = 0;
  let entryCount = 0;
  let scannedBytes = 0;
  let expected = expectedBaseOffset;
  let stop: EntryStop = "end";
  let detail = "";
  let advisedEnd = 0;
  // Reads start small and double up to the chunk: a segment whose data ends early (a preallocated
  // `mapped` file after a crash: 128 MiB on disk, kilobytes of data, then zeros) costs one small
  // read, not a 4 MiB read plus 8 MiB of readahead. Measured: 512 such segments read 2,048 MiB and
  // 4,096 of them took 25-27 s to start (docs/operations.md); see the same section for after.
  let readLimit = RECOVERY_FIRST_READ_BYTES;
  const options = { framing: "framed" as const, verifyCrc, maxBatchBytes, expectedBaseOffset: expected };
  while (position < fileEnd) {
    const want = Math.min(readLimit, chunk.length, fileEnd - position);
    // Each byte is advised once (a hint on cached pages still costs a page-cache walk). The advice
    // grows with the reads (twice the read, at most RECOVERY_READAHEAD_BYTES), so the disk works
    // ahead from the first read without reading megabytes past a file whose data ends early.
    const aheadEnd = Math.min(fileEnd, position + want + Math.min(RECOVERY_READAHEAD_BYTES, 2 * want));
    if (aheadEnd > advisedEnd) {
      const aheadStart = Math.max(advisedEnd, position + want);
      disk.adviseWillNeed(fd, aheadStart, aheadEnd - aheadStart);
      advisedEnd = aheadEnd;
    }
    const got = disk.preadFull(fd, chunk, 0, want, position, path);
    scannedBytes += got;
    const chunkBase = position;
    options.expectedBaseOffset = expected;
    let visitor: EntryVisitor | undefined;
    if (indexing !== undefined) {
      const { index, segmentBaseOffset } = indexing;
      visitor = (entryPosition, _batchStart, _batchEnd, header) => {
        index.offer(
          header.baseOffset - segmentBaseOffset,
          chunkBase + entryPosition,
          indexing.maxTimestampMs,
        );
        if (header.maxTimestamp > indexing.maxTimestampMs) indexing.maxTimestampMs = header.maxTimestamp;
      };
    }
    scanEntries(chunk, 0, got, options, chunkScan, visitor);
    recordCount += chunkScan.recordCount;
    entryCount += chunkScan.entryCount;
    if (chunkScan.entryCount > 0) expected = chunkScan.nextOffset;
    position = chunkBase + chunkScan.endPosition;
    stop = chunkScan.stop;
    detail = chunkScan.detail;
    readLimit = Math.min(readLimit * 2, chunk.length);
    if (stop !== "truncated") {
      if (stop === "end" && got < want) {
        stop = "truncated"; // the file shrank under us
        detail = `the file ended at byte ${chunkBase + got} while being read`;
      }
      if (stop !== "end") break;
      continue;
    }
    // Truncated inside this chunk: at the real end of the file it is a torn entry; otherwise the
    // entry continues in the next chunk, which starts at it.
    if (chunkBase + got >= fileEnd) break;
    if (chunkScan.endPosition === 0) {
      // Not even one entry fit in this read: read at least the whole entry next, growing the buffer
      // to hold it when it is larger, within the limit.
      const length = got >= 4 ? entryLengthAt(chunk, 0) : 0;
      const needed = ENTRY_HEADER_BYTES + length;
      if (got < ENTRY_HEADER_BYTES || length > maxBatchBytes || needed <= got) break;
      if (needed > chunk.length) chunk = new Uint8Array(needed);
      readLimit = Math.max(readLimit, needed);
    }
  }
  if (chunk.length > RECOVERY_CHUNK_BYTES) chunk = new Uint8Array(RECOVERY_CHUNK_BYTES);
  return { endPosition: position, recordCount, entryCount, nextOffset: expected, stop, detail, scannedBytes };
}

/** Whether the bytes [`from`, `to`) of an open file are all zeros (read in 64 KiB pieces). */
export function allZero(fd: number, filePath: string, from: number, to: number): boolean {
  const buffer = new Uint8Array(Math.min(64 * 1024, Math.max(to - from, 0)));
  for (let at = from; at < to; ) {
    const read = disk.preadFull(fd, buffer, 0, Math.min(buffer.length, to - at), at, filePath);
    for (let i = 0; i < read; i++) if (buffer[i] !== 0) return false;
    if (read === 0) break;
    at += read;
  }
  return true;
}

/**
 * A file shorter than a header, or whose header is all zeros with no valid entry after it: the
 * header never reached the disk (a crash or power cut right after a roll). Garbage after the header
 * does not matter: after a power cut in the force that follows a roll, the directory entry (synced
 * in parallel) may be on disk while the segment's fdatasync never ran, and the disk may have kept
 * part of a later unforced write but not the header (test/power-loss/volatile-fs.c tears last writes
 * this way; the broker then refused to start with "not a booblik segment (magic 0x00000000)"). No
 * record in such a file was acknowledged under force: that takes an fdatasync of the file, which
 * carries the header written before any record. Recovery removes it unless the recovery point
 * vouches for records in it (partition-log.ts), and `segment verify` reports it as a crash leftover
 * (inspect.ts): one predicate for both.
 *
 * A damaged header followed by a whole, valid entry whose BaseOffset is the file name's is not that
 * ("damaged-before-entries"): zeros over a header that was there, or a header whose magic or
 * checksum fails, while the records after it are intact. A start writes the header again
 * (log-recovery.ts) and keeps them. Treated as a torn creation, the file was deleted with every
 * record in it, and their offsets handed out again (a reviewer's fault harness, 2026-12-02); in a
 * sealed segment the whole partition was refused, `segment repair` included.
 */
export function isTornCreation(filePath: string): boolean {
  return segmentHeaderState(filePath) === "torn";
}

/**
 * A segment file's header: intact ("whole"), torn at creation (`isTornCreation`), zeros or failing
 * its magic or checksum while a valid entry with the file name's base offset follows right after it
 * ("damaged-before-entries"), or failing them with no such entry ("damaged").
 */
export type SegmentHeaderState = "whole" | "torn" | "damaged" | "damaged-before-entries";

export function segmentHeaderState(filePath: string): SegmentHeaderState {
  const fd = disk.openFile(filePath, "read");
  try {
    const size = disk.fileSize(fd, filePath);
    if (size < SEGMENT_HEADER_BYTES) return "torn";
    const header = new Uint8Array(SEGMENT_HEADER_BYTES);
    disk.preadFull(fd, header, 0, SEGMENT_HEADER_BYTES, 0, filePath);
    const zeros = header.every((byte) => byte === 0);
    // A header that fails without a valid entry after it is left to the open, which names why.
    const otherwise = zeros ? "torn" : "damaged";
    if (!zeros && segmentHeaderIntact(header)) return "whole";
    const baseOffset = parseSegmentFileName(path.basename(filePath));
    if (baseOffset === undefined || size < SEGMENT_HEADER_BYTES + ENTRY_HEADER_BYTES) return otherwise;
    const frame = new Uint8Array(ENTRY_HEADER_BYTES);
    disk.preadFull(fd, frame, 0, ENTRY_HEADER_BYTES, SEGMENT_HEADER_BYTES, filePath);
    // The entry's length field counts what follows the frame; one entry is read, at most one batch.
    const entryBytes = ENTRY_HEADER_BYTES + entryLengthAt(frame, 0);
    if (entryBytes > ENTRY_HEADER_BYTES + RECORD_PAYLOAD_BYTES_LIMIT + RECORD_BATCH_OVERHEAD_BYTES)
      return otherwise;
    const entry = new Uint8Array(Math.min(entryBytes, size - SEGMENT_HEADER_BYTES));
    const read = disk.preadFull(fd, entry, 0, entry.length, SEGMENT_HEADER_BYTES, filePath);
    const scan = newEntryScanResult();
    scanEntries(
      entry,
      0,
      read,
      {
        framing: "framed",
        verifyCrc: true,
        maxBatchBytes: RECORD_PAYLOAD_BYTES_LIMIT,
        expectedBaseOffset: baseOffset,
      },
      scan,
    );
    return scan.entryCount === 1 ? "damaged-before-entries" : otherwise;
  } finally {
    disk.closeFile(fd, filePath);
  }
}
