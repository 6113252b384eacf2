/**
 * Read-only inspection of segment files and partition directories, for `booblik-cli segment dump`
 * and `segment verify`. Opens files O_RDONLY and never writes, so it is safe while a broker runs.
 * Entries are walked by THE entry walker (`scanEntries`, src/record/entries.ts) and their records by
 * THE record walker (`forEachRecord`), the same checks recovery makes.
 *
 * Classification of what a walk finds after the last valid entry of a segment:
 * - nothing, or zeros (the end-of-log marker of an active or untrimmed segment): a clean end;
 * - in the newest segment of a partition, an incomplete or invalid tail: not damage by itself. It is
 *   a write in progress (when a broker runs) or a torn tail that recovery cuts (it was never
 *   acknowledged under `force`); reported as an unverified tail;
 * - a newest segment with no header at all (empty, shorter than a header, or zeros where the header
 *   belongs): what a kill right after a roll leaves, which recovery removes (recovery.ts,
 *   `isTornCreation`, the same predicate); reported as a crash leftover, not damage;
 * - anywhere else (a sealed segment, or a gap between segments): damage.
 */
import path from "node:path";
import { closeFile, fileSize, listDirectory, openFile, preadFull, statFile } from "../../ffi/file.ts";
import { BadSegmentFileError } from "../domain/errors.ts";
import type { Offset } from "../domain/ids.ts";
import {
  ENTRY_HEADER_BYTES,
  RECORD_PAYLOAD_BYTES_LIMIT,
  RECOVERY_CHUNK_BYTES,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import {
  forEachRecord,
  InvalidBatchError,
  type RecordBatchHeader,
  type RecordView,
  recordKey,
  recordValue,
} from "../record/batch.ts";
import { type EntryVisitor, newEntryScanResult, scanEntries } from "../record/entries.ts";
import { entryLengthAt } from "./entry-framer.ts";
import { isTornCreation, scanSegmentFile } from "./recovery.ts";
import { findNextReadable } from "./segment.ts";
import {
  decodeSegmentHeader,
  parseQuarantineFileName,
  parseSegmentFileName,
  segmentFileName,
} from "./segment-header.ts";

/** One stored entry (a batch) as a walk finds it; views valid only during the call. */
export interface InspectedEntry {
  /** Position of the entry's frame in the file. */
  position: number;
  /** The batch bytes (stamped, as stored). */
  batch: Uint8Array;
  /** The batch header (one object reused for the whole walk). */
  header: RecordBatchHeader;
}

/** One record of an entry; views valid only during the call. */
export interface InspectedRecord {
  offset: number;
  /** Position of the record's entry in the file. */
  position: number;
  timestamp: number;
  key: Uint8Array | null;
  /** The value, or null. */
  value: Uint8Array | null;
  /** The value, or an empty view for a null value (for printing). */
  payload: Uint8Array;
  /** The walker's view, for headers (`recordHeaders`). */
  record: RecordView;
}

export type SegmentEnd =
  | { kind: "clean" }
  | { kind: "invalid"; position: number; offset: number; reason: string; bytesAfter: number };

export interface SegmentWalk {
  file: string;
  baseOffset: Offset;
  /** Offsets the valid entries cover. */
  recordCount: number;
  entryCount: number;
  sizeBytes: number;
  validEndBytes: number;
  end: SegmentEnd;
}

const EMPTY = new Uint8Array(0);

/**
 * Walks every entry of a segment file in order, checking it as recovery does (scanEntries, frame
 * CRC included), and calls `onRecord` for each record of each valid entry (views only valid during
 * the call; batches this build cannot decompress, snappy and lz4, give no records) and `onEntry`
 * for each entry. `onProgress` gets bytes read.
 */
export function walkSegmentFile(
  file: string,
  onRecord?: (record: InspectedRecord) => void,
  onProgress?: (bytesRead: number) => void,
  maxPayloadBytes = RECORD_PAYLOAD_BYTES_LIMIT,
  onEntry?: (entry: InspectedEntry) => void,
): SegmentWalk {
  const walk = walkSegmentChunks(file, onRecord, onProgress, maxPayloadBytes, RECOVERY_CHUNK_BYTES, onEntry);
  for (;;) {
    const step = walk.next();
    if (step.done) return step.value;
  }
}

/** Thrown out of the entry visitor when the records of an entry with a valid CRC do not parse. */
class RecordsInvalid {
  constructor(
    readonly entryPosition: number,
    readonly reason: string,
  ) {}
}

/**
 * The same walk, pausing after each chunk read (`chunkBytes`, or one entry when larger): it yields
 * the segment's base offset once its header was read, then after the entries of every chunk were
 * given to the callbacks, so that a caller can wait in between (`segment dump` waits for its stdout
 * pipe: a dump of 2 M records once held all its output in memory). `next(true)` ends the walk
 * early (the result then describes the part walked) and closes the file. Yielding per chunk rather
 * than per entry keeps `segment verify` at its speed.
 */
export function* walkSegmentChunks(
  file: string,
  onRecord?: (record: InspectedRecord) => void,
  onProgress?: (bytesRead: number) => void,
  maxPayloadBytes = RECORD_PAYLOAD_BYTES_LIMIT,
  chunkBytes = RECOVERY_CHUNK_BYTES,
  onEntry?: (entry: InspectedEntry) => void,
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
    let entries = 0;
    let expected: number = baseOffset;
    let end: SegmentEnd = { kind: "clean" };
    const scan = newEntryScanResult();
    const invalid = (reason: string): SegmentEnd => ({
      kind: "invalid",
      position,
      offset: expected,
      reason,
      bytesAfter: sizeBytes - position,
    });
    let chunkBase = position;
    // What the visitor passed in this chunk: counted here, since a throw out of it loses the scan's.
    let chunkEntries = 0;
    let chunkRecords = 0;
    let chunkNext = expected;
    const inspected: InspectedRecord = {
      offset: 0,
      position: 0,
      timestamp: 0,
      key: null,
      value: null,
      payload: EMPTY,
      record: undefined as unknown as RecordView,
    };
    const visitRecord = (record: RecordView): void => {
      inspected.offset = record.offset;
      inspected.timestamp = record.timestamp;
      inspected.key = recordKey(record);
      inspected.value = recordValue(record);
      inspected.payload = inspected.value ?? EMPTY;
      inspected.record = record;
      onRecord!(inspected);
    };
    const visitor: EntryVisitor | undefined =
      onRecord === undefined && onEntry === undefined
        ? undefined
        : (entryPosition, batchStart, batchEnd, batchHeader) => {
            onEntry?.({
              position: chunkBase + entryPosition,
              batch: buffer.subarray(batchStart, batchEnd),
              header: batchHeader,
            });
            if (onRecord !== undefined) {
              inspected.position = chunkBase + entryPosition;
              try {
                forEachRecord(buffer, batchStart, batchEnd, visitRecord, batchHeader);
              } catch (error) {
                const undecodable = error instanceof InvalidBatchError && error.check === "codec";
                if (error instanceof InvalidBatchError && !undecodable)
                  throw new RecordsInvalid(chunkBase + entryPosition, error.message);
                if (!undecodable) throw error;
              }
            }
            chunkEntries++;
            chunkRecords += batchHeader.lastOffsetDelta + 1;
            chunkNext = batchHeader.baseOffset + batchHeader.lastOffsetDelta + 1;
          };
    while (position < sizeBytes) {
      const want = Math.min(buffer.length, sizeBytes - position);
      const read = preadFull(fd, buffer, 0, want, position, file);
      onProgress?.(read);
      // A short read means the file shrank while we read it (this tool runs beside a broker that
      // may cut a torn tail): it ends here now. Without this, a read of 0 bytes far from the old
      // end would look like "an entry larger than the buffer" and the walk would loop forever.
      if (read < want) sizeBytes = position + read;
      chunkBase = position;
      chunkEntries = 0;
      chunkRecords = 0;
      try {
        scanEntries(
          buffer,
          0,
          read,
          {
            framing: "framed",
            verifyCrc: true,
            maxBatchBytes: maxPayloadBytes,
            expectedBaseOffset: expected,
          },
          scan,
          visitor,
        );
      } catch (error) {
        if (!(error instanceof RecordsInvalid)) throw error;
        // Entries before the bad one were given out; count them and stop at it.
        count += chunkRecords;
        entries += chunkEntries;
        if (chunkEntries > 0) expected = chunkNext;
        position = error.entryPosition;
        end = invalid(`the records of the batch do not parse: ${error.reason}`);
        return finish();
      }
      count += scan.recordCount;
      entries += scan.entryCount;
      if (scan.entryCount > 0) expected = scan.nextOffset;
      position = chunkBase + scan.endPosition;
      const stop = scan.stop;
      if (stop === "end") {
        if (position >= sizeBytes) break;
        if (yield { baseOffset, sizeBytes }) return finish();
        continue;
      }
      if (stop === "zero-length") {
        if (!allZero(fd, file, position, sizeBytes)) end = invalid("zero length followed by nonzero bytes");
        return finish();
      }
      if (stop !== "truncated") {
        end = invalid(`${stop}: ${scan.detail}`);
        return finish();
      }
      // Truncated: at the end of the file a torn entry; else it continues in the next chunk.
      const remaining = read - scan.endPosition;
      const needed =
        remaining >= 4 ? ENTRY_HEADER_BYTES + entryLengthAt(buffer, scan.endPosition) : ENTRY_HEADER_BYTES;
      if (position + needed > sizeBytes) {
        end = invalid(`entry cut short: ${sizeBytes - position} bytes left, ${needed} needed`);
        return finish();
      }
      if (scan.endPosition === 0) {
        if (needed - ENTRY_HEADER_BYTES > maxPayloadBytes) {
          end = invalid(`entry length ${needed - ENTRY_HEADER_BYTES} is out of range`);
          return finish();
        }
        buffer = new Uint8Array(needed); // an entry larger than the buffer
      }
      if (yield { baseOffset, sizeBytes }) return finish();
    }
    return finish();

    function finish(): SegmentWalk {
      return {
        file,
        baseOffset,
        recordCount: count,
        entryCount: entries,
        sizeBytes,
        validEndBytes: position,
        end,
      };
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
  damage: VerifiedDamage | undefined;
  /**
   * Every damaged range found, in order (issue 15): after a damaged entry the walk resumes at the
   * next whole, valid one (`findNextReadable`, as recovery does), after a damaged segment at the next
   * segment.
   */
  damages: VerifiedDamage[];
  /** An incomplete newest-segment tail (a write in progress or a torn tail recovery will cut). */
  unverifiedTail: { file: string; position: number; bytes: number; reason: string } | undefined;
  /** A newest segment without a header (a kill right after a roll), which recovery removes. */
  crashLeftover: { file: string; bytes: number } | undefined;
  /**
   * Quarantine files next to the segments (bytes recovery cut that held valid entries; issue 15).
   * Not damage: listed so that they are never forgotten. `segmentExists` is false for one whose
   * segment is gone (the broker's next open removes it).
   */
  quarantine: { file: string; bytes: number; segment: string; position: number; segmentExists: boolean }[];
}

/** A damaged range: where it starts, and the offset from which the partition is readable again. */
export interface VerifiedDamage {
  file: string;
  position: number;
  offset: number;
  reason: string;
  /** The next readable offset after it (the next segment's base when none follows in this file). */
  readableFromOffset: number | undefined;
}

/** Verifies every segment of a partition directory in offset order, and that they are contiguous. */
export function verifyPartitionDirectory(
  directory: string,
  onProgress?: (bytesRead: number) => void,
): PartitionVerification {
  const names = listDirectory(directory);
  const bases = names
    .map((name) => parseSegmentFileName(name))
    .filter((base): base is Offset => base !== undefined)
    .sort((a, b) => a - b);
  const result: PartitionVerification = {
    directory,
    segments: bases.length,
    records: 0,
    bytes: 0,
    damage: undefined,
    damages: [],
    unverifiedTail: undefined,
    crashLeftover: undefined,
    quarantine: [],
  };
  const found = (damage: VerifiedDamage): void => {
    result.damages.push(damage);
    result.damage ??= damage;
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
        found({
          file,
          position: 0,
          offset: bases[i]!,
          reason: error.message,
          readableFromOffset: bases[i + 1],
        });
        expectedBase = bases[i + 1];
        continue;
      }
      throw error;
    }
    if (expectedBase !== undefined && walk.baseOffset !== expectedBase) {
      found({
        file,
        position: 0,
        offset: expectedBase,
        reason: `the previous segment ends at offset ${expectedBase} but this one starts at ${walk.baseOffset}`,
        readableFromOffset: walk.baseOffset,
      });
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
        // Damage in a sealed segment: report it, then every later range of this file.
        const nextBase = bases[i + 1]!;
        result.records += verifyAfterDamage(
          file,
          walk.end.position,
          walk.end.offset,
          walk.end.reason,
          nextBase,
          found,
        );
        expectedBase = nextBase;
        continue;
      }
    }
    expectedBase = walk.baseOffset + walk.recordCount;
  }
  for (const name of names.sort()) {
    const parsed = parseQuarantineFileName(name);
    if (parsed === undefined) continue;
    const file = path.join(directory, name);
    result.quarantine.push({
      file,
      bytes: statFile(file).sizeBytes,
      segment: path.join(directory, segmentFileName(parsed.baseOffset)),
      position: parsed.position,
      segmentExists: bases.includes(parsed.baseOffset),
    });
  }
  return result;
}

/**
 * From a damaged entry of a sealed segment on: reports it and each later damaged range of the file,
 * resuming at the next whole, valid entry (frame CRC, as recovery checks) each time. Returns the
 * records of the valid entries walked after the first damage.
 */
function verifyAfterDamage(
  file: string,
  position: number,
  offset: number,
  reason: string,
  nextBase: number,
  found: (damage: VerifiedDamage) => void,
): number {
  const fd = openFile(file, "read");
  try {
    const sizeBytes = fileSize(fd, file);
    let records = 0;
    for (;;) {
      const resume = findNextReadable(
        fd,
        file,
        position,
        offset,
        sizeBytes,
        RECORD_PAYLOAD_BYTES_LIMIT,
        nextBase,
      );
      found({ file, position, offset, reason, readableFromOffset: resume?.offset ?? nextBase });
      if (resume === undefined) return records;
      const scan = scanSegmentFile(
        fd,
        file,
        resume.position,
        resume.offset,
        sizeBytes,
        RECORD_PAYLOAD_BYTES_LIMIT,
        true,
        undefined,
      );
      records += scan.recordCount;
      if (scan.stop === "end" || (scan.stop === "zero-length" && scan.nextOffset === nextBase))
        return records;
      position = scan.endPosition;
      offset = scan.nextOffset;
      reason = `${scan.stop}: ${scan.detail}`;
    }
  } finally {
    closeFile(fd, file);
  }
}

function fileSizeOf(file: string): number {
  return statFile(file).sizeBytes;
}
