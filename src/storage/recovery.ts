/**
 * Scanning a segment file: the one loop behind recovery (open for append), lazy index building of
 * sealed segments, and offline verification.
 *
 * The file is read in RECOVERY_CHUNK_BYTES chunks through one reused buffer: one read per record made
 * the predecessor 28x slower (174 vs 4900 MiB/s). A record that straddles a chunk boundary is re-read
 * at the start of the next chunk; a record larger than the buffer gets a temporary buffer of its own.
 *
 * A scan never throws for bad data; it reports where the valid prefix ends and why it stopped
 * (DESIGN invariant 5: stop at the first bad record, keep everything before it). What to do with the
 * rest (cut it, refuse, report) is the caller's decision.
 */
import { RECORD_HEADER_BYTES, RECOVERY_CHUNK_BYTES, SEGMENT_HEADER_BYTES } from "../domain/limits.ts";
import { newScanResult, readUint32, type ScanStop, scanRecords } from "../record/codec.ts";
import { disk } from "./disk.ts";
import type { SparseIndex } from "./sparse-index.ts";

export interface SegmentScan {
  /** Position right after the last valid record. */
  endPosition: number;
  /** Valid records between the scan's start and `endPosition`. */
  recordCount: number;
  /** Why the scan ended: "end" means the end of the file was reached on a record boundary. */
  stop: ScanStop;
  /** Bytes read from the file. */
  scannedBytes: number;
}

let chunk = new Uint8Array(RECOVERY_CHUNK_BYTES);
let chunkView = new DataView(chunk.buffer);
const chunkScan = newScanResult();

/**
 * Scans `[startPosition, fileEnd)` of `fd`, whose first record has relative offset `startRelativeOffset`.
 * Offers every record to `index` when given. With `verifyCrc = false` only the length prefixes are
 * checked (for data verified before). Synchronous: run it at open time or from tools, not per request.
 */
export function scanSegmentFile(
  fd: number,
  path: string,
  startPosition: number,
  startRelativeOffset: number,
  fileEnd: number,
  maxPayloadBytes: number,
  verifyCrc: boolean,
  index: SparseIndex | undefined,
): SegmentScan {
  let position = startPosition;
  let recordCount = 0;
  let scannedBytes = 0;
  let stop: ScanStop = "end";
  while (position < fileEnd) {
    const want = Math.min(chunk.length, fileEnd - position);
    const got = disk.preadFull(fd, chunk, 0, want, position, path);
    scannedBytes += got;
    const chunkBase = position;
    const relativeBase = startRelativeOffset + recordCount;
    scanRecords(
      chunk,
      chunkView,
      0,
      got,
      maxPayloadBytes,
      verifyCrc,
      chunkScan,
      index === undefined ? undefined : (at, i) => index.offer(relativeBase + i, chunkBase + at),
    );
    recordCount += chunkScan.recordCount;
    position = chunkBase + chunkScan.endPosition;
    stop = chunkScan.stop;
    if (stop !== "truncated") {
      if (stop === "end" && got < want) stop = "truncated"; // the file shrank under us
      if (stop !== "end") break;
      continue;
    }
    // Truncated inside this chunk: at the real end of the file it is a torn record; otherwise the
    // record continues in the next chunk, which starts at it.
    if (chunkBase + got >= fileEnd) break;
    if (chunkScan.endPosition === 0) {
      // Not even one record fit: it is larger than the buffer. Grow to hold it, within the limit.
      const length = got >= 4 ? readUint32(chunk, 0) : 0;
      const needed = RECORD_HEADER_BYTES + length;
      if (got < RECORD_HEADER_BYTES || length > maxPayloadBytes || needed <= chunk.length) break;
      chunk = new Uint8Array(needed);
      chunkView = new DataView(chunk.buffer);
    }
  }
  if (chunk.length > RECOVERY_CHUNK_BYTES) {
    chunk = new Uint8Array(RECOVERY_CHUNK_BYTES);
    chunkView = new DataView(chunk.buffer);
  }
  return { endPosition: position, recordCount, stop, scannedBytes };
}

/**
 * A file shorter than a header, or whose header is all zeros: the header never reached the disk (a
 * crash or power cut right after a roll). Whatever follows the header does not matter: after a
 * power cut in the force that follows a roll, the directory entry (synced in parallel) may be on
 * disk while the segment's fdatasync never ran, and the disk may have kept part of a later unforced
 * write but not the header (test/power-loss/volatile-fs.c tears last writes this way; the broker then
 * refused to start with "not a booblik segment (magic 0x00000000)"). No record in such a file was
 * acknowledged under force: that takes an fdatasync of the file, which carries the header written
 * before any record. Recovery removes it unless the recovery point vouches for records in it
 * (partition-log.ts), and `segment verify` reports it as a crash leftover (inspect.ts): one
 * predicate for both.
 */
export function isTornCreation(filePath: string): boolean {
  const fd = disk.openFile(filePath, "read");
  try {
    const size = disk.fileSize(fd, filePath);
    if (size < SEGMENT_HEADER_BYTES) return true;
    const header = new Uint8Array(SEGMENT_HEADER_BYTES);
    const got = disk.preadFull(fd, header, 0, SEGMENT_HEADER_BYTES, 0, filePath);
    for (let i = 0; i < got; i++) if (header[i] !== 0) return false;
    return true;
  } finally {
    disk.closeFile(fd, filePath);
  }
}
