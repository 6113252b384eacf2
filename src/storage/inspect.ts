/**
 * Read-only inspection of segment files and partition directories, for `booblik-cli segment dump`
 * and `segment verify`. Opens files O_RDONLY and never writes, so it is safe while a broker runs.
 *
 * Classification of what a walk finds after the last valid record of a segment:
 * - nothing, or zeros (the end-of-log marker of a mapped file): a clean end;
 * - in the newest segment of a partition, an incomplete or invalid tail: not damage by itself. It is
 *   a write in progress (when a broker runs) or a torn tail that recovery cuts (it was never
 *   acknowledged under `force`); reported as an unverified tail;
 * - a newest segment with no header at all (empty, shorter than a header, or zeros where the header
 *   belongs): what a kill right after a roll leaves, which recovery removes (recovery.ts,
 *   `isTornCreation`, the same predicate); reported as a crash leftover, not damage;
 * - anywhere else (a sealed segment, or a gap between segments): damage.
 */
import path from "node:path";
import { crc32c } from "../../ffi/crc32c.ts";
import { closeFile, fileSize, listDirectory, openFile, preadFull, statFile } from "../../ffi/file.ts";
import { BadSegmentFileError } from "../domain/errors.ts";
import type { Offset } from "../domain/ids.ts";
import {
  RECORD_HEADER_BYTES,
  RECORD_PAYLOAD_BYTES_LIMIT,
  RECOVERY_CHUNK_BYTES,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { readUint32 } from "../record/codec.ts";
import { isTornCreation } from "./recovery.ts";
import { decodeSegmentHeader, parseSegmentFileName, segmentFileName } from "./segment-header.ts";

export interface InspectedRecord {
  offset: number;
  position: number;
  payload: Uint8Array;
}

export type SegmentEnd =
  | { kind: "clean" }
  | { kind: "invalid"; position: number; offset: number; reason: string; bytesAfter: number };

export interface SegmentWalk {
  file: string;
  baseOffset: Offset;
  recordCount: number;
  sizeBytes: number;
  validEndBytes: number;
  end: SegmentEnd;
}

/**
 * Walks every record of a segment file in order, checking lengths and CRCs, and calls `onRecord`
 * for each valid one (the payload view is only valid during the call). `onProgress` gets bytes read.
 */
export function walkSegmentFile(
  file: string,
  onRecord?: (record: InspectedRecord) => void,
  onProgress?: (bytesRead: number) => void,
  maxPayloadBytes = RECORD_PAYLOAD_BYTES_LIMIT,
): SegmentWalk {
  const walk = walkSegmentChunks(file, onRecord, onProgress, maxPayloadBytes);
  for (;;) {
    const step = walk.next();
    if (step.done) return step.value;
  }
}

/**
 * The same walk, pausing after each chunk read (`chunkBytes`, or one record when larger): it yields
 * the segment's base offset once its header was read, then after the records of every chunk were
 * given to `onRecord`, so that a caller can wait in between (`segment dump` waits for its stdout
 * pipe: a dump of 2 M records once held all its output in memory). `next(true)` ends the walk
 * early (the result then describes the part walked) and closes the file. Yielding per chunk rather than per record keeps `segment verify` at its speed.
 */
export function* walkSegmentChunks(
  file: string,
  onRecord?: (record: InspectedRecord) => void,
  onProgress?: (bytesRead: number) => void,
  maxPayloadBytes = RECORD_PAYLOAD_BYTES_LIMIT,
  chunkBytes = RECOVERY_CHUNK_BYTES,
): Generator<{ baseOffset: Offset; sizeBytes: number }, SegmentWalk, boolean | undefined> {
  const fd = openFile(file, "read");
  try {
    let sizeBytes = fileSize(fd, file);
    const header = new Uint8Array(SEGMENT_HEADER_BYTES);
    const got = preadFull(fd, header, 0, SEGMENT_HEADER_BYTES, 0, file);
    const baseOffset = decodeSegmentHeader(header, got, file, parseSegmentFileName(path.basename(file)));
    // `next(true)` stops the walk here (the caller wants no more): the file is closed below.
    if (yield { baseOffset, sizeBytes }) return finish();
    let buffer = new Uint8Array(Math.min(chunkBytes, Math.max(4096, sizeBytes)));
    let position = SEGMENT_HEADER_BYTES;
    let count = 0;
    let end: SegmentEnd = { kind: "clean" };
    const invalid = (reason: string): SegmentEnd => ({
      kind: "invalid",
      position,
      offset: baseOffset + count,
      reason,
      bytesAfter: sizeBytes - position,
    });
    while (position < sizeBytes) {
      const want = Math.min(buffer.length, sizeBytes - position);
      const read = preadFull(fd, buffer, 0, want, position, file);
      onProgress?.(read);
      // A short read means the file shrank while we read it (this tool runs beside a broker that
      // may cut a torn tail): it ends here now. Without this, a read of 0 bytes far from the old
      // end would look like "a record larger than the buffer" and the walk would loop forever.
      if (read < want) sizeBytes = position + read;
      let at = 0;
      while (at < read) {
        if (read - at < RECORD_HEADER_BYTES) break;
        const length = readUint32(buffer, at);
        if (length === 0) break;
        if (length > maxPayloadBytes) {
          position += at;
          end = invalid(`record length ${length} is out of range`);
          return finish();
        }
        const recordEnd = at + RECORD_HEADER_BYTES + length;
        if (recordEnd > read) break;
        if (crc32c(buffer, at + RECORD_HEADER_BYTES, recordEnd) !== readUint32(buffer, at + 4)) {
          position += at;
          end = invalid("CRC32C mismatch");
          return finish();
        }
        onRecord?.({
          offset: baseOffset + count,
          position: position + at,
          payload: buffer.subarray(at + RECORD_HEADER_BYTES, recordEnd),
        });
        count++;
        at = recordEnd;
      }
      const stoppedAt = position + at;
      if (at === read && stoppedAt === sizeBytes) {
        position = stoppedAt;
        break;
      }
      // Stopped inside this chunk: a zero length, or a record that runs past the chunk or the file.
      const remaining = read - at;
      if (remaining >= 4 && readUint32(buffer, at) === 0) {
        position = stoppedAt;
        if (!allZero(fd, file, position, sizeBytes)) end = invalid("zero length followed by nonzero bytes");
        return finish();
      }
      const needed =
        remaining >= RECORD_HEADER_BYTES ? RECORD_HEADER_BYTES + readUint32(buffer, at) : RECORD_HEADER_BYTES;
      if (stoppedAt + needed > sizeBytes || (remaining < 4 && stoppedAt + 4 > sizeBytes)) {
        position = stoppedAt;
        end = invalid(`record cut short: ${sizeBytes - position} bytes left, ${needed} needed`);
        return finish();
      }
      if (at === 0) buffer = new Uint8Array(needed); // a record larger than the buffer
      position = stoppedAt;
      if (yield { baseOffset, sizeBytes }) return finish();
    }
    return finish();

    function finish(): SegmentWalk {
      return { file, baseOffset, recordCount: count, sizeBytes, validEndBytes: position, end };
    }
  } finally {
    closeFile(fd, file);
  }
}

function allZero(fd: number, file: string, from: number, to: number): boolean {
  const buffer = new Uint8Array(64 * 1024);
  for (let at = from; at < to; ) {
    const read = preadFull(fd, buffer, 0, Math.min(buffer.length, to - at), at, file);
    for (let i = 0; i < read; i++) if (buffer[i] !== 0) return false;
    if (read === 0) break;
    at += read;
  }
  return true;
}

export interface PartitionVerification {
  directory: string;
  segments: number;
  records: number;
  bytes: number;
  /** The first damage found, or undefined. */
  damage: { file: string; position: number; offset: number; reason: string } | undefined;
  /** An incomplete newest-segment tail (a write in progress or a torn tail recovery will cut). */
  unverifiedTail: { file: string; position: number; bytes: number; reason: string } | undefined;
  /** A newest segment without a header (a kill right after a roll), which recovery removes. */
  crashLeftover: { file: string; bytes: number } | undefined;
}

/** Verifies every segment of a partition directory in offset order, and that they are contiguous. */
export function verifyPartitionDirectory(
  directory: string,
  onProgress?: (bytesRead: number) => void,
): PartitionVerification {
  const bases = listDirectory(directory)
    .map((name) => parseSegmentFileName(name))
    .filter((base): base is Offset => base !== undefined)
    .sort((a, b) => a - b);
  const result: PartitionVerification = {
    directory,
    segments: bases.length,
    records: 0,
    bytes: 0,
    damage: undefined,
    unverifiedTail: undefined,
    crashLeftover: undefined,
  };
  let expectedBase: number | undefined;
  for (let i = 0; i < bases.length; i++) {
    const file = path.join(directory, segmentFileName(bases[i]!));
    const newest = i === bases.length - 1;
    if (newest && isTornCreation(file)) {
      // Exactly what recovery removes (partition-log.ts). A sealed segment without a header is damage.
      result.crashLeftover = { file, bytes: fileSizeOf(file) };
      break;
    }
    let walk: SegmentWalk;
    try {
      walk = walkSegmentFile(file, undefined, onProgress);
    } catch (error) {
      if (error instanceof BadSegmentFileError) {
        result.damage = { file, position: 0, offset: bases[i]!, reason: error.message };
        return result;
      }
      throw error;
    }
    if (expectedBase !== undefined && walk.baseOffset !== expectedBase) {
      result.damage = {
        file,
        position: 0,
        offset: expectedBase,
        reason: `the previous segment ends at offset ${expectedBase} but this one starts at ${walk.baseOffset}`,
      };
      return result;
    }
    result.records += walk.recordCount;
    result.bytes += walk.validEndBytes;
    if (walk.end.kind === "invalid") {
      if (newest) {
        result.unverifiedTail = {
          file,
          position: walk.end.position,
          bytes: walk.end.bytesAfter,
          reason: walk.end.reason,
        };
      } else {
        result.damage = {
          file,
          position: walk.end.position,
          offset: walk.end.offset,
          reason: walk.end.reason,
        };
        return result;
      }
    }
    expectedBase = walk.baseOffset + walk.recordCount;
  }
  return result;
}

function fileSizeOf(file: string): number {
  return statFile(file).sizeBytes;
}
