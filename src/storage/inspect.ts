/**
 * Read-only inspection of segment files and partition directories, for `booblik-cli segment dump`
 * and `segment verify`. Opens files O_RDONLY and never writes, so it is safe while a broker runs.
 * Entries are walked by THE entry walker (`scanEntries`, src/record/entries.ts) and their records by
 * THE record walker (`forEachRecord`), the same checks recovery makes.
 *
 * Classification of what a walk finds after the last valid entry of a segment. A partition's newest
 * segment is split by its checkpoint's recovery point as start-up recovery splits it (log-recovery.ts,
 * `forcedEnd`: the point's position in the point's own segment, else the end of the header; a
 * missing or unparsable checkpoint gives no point, as at a start):
 * - nothing, or zeros (the end-of-log marker of an active or untrimmed segment): a clean end, unless
 *   in the newest segment it comes before the recovery point (forced bytes are gone): damage;
 * - in the newest segment, an incomplete or invalid tail at or after the recovery point: not damage
 *   by itself. It is a write in progress (when a broker runs) or a torn tail that recovery cuts (it
 *   was never acknowledged under `force`); reported as an unverified tail;
 * - in the newest segment, an invalid entry before the recovery point: damage. Those bytes were
 *   forced (the point moves only after a completed force, checkpoint.ts), so no crash tore them.
 *   Recovery keeps them: its scan checks no CRC there (a flipped value byte is then found by the
 *   read, which refuses the entry naming file, position and offset), and steps over an entry whose
 *   framing fails, reporting durable data lost. This walk then resumes at the next valid entry as
 *   recovery does, and classifies its next stop the same way;
 * - a newest segment with no header at all (empty, shorter than a header, or zeros where the header
 *   belongs): what a kill right after a roll leaves, which recovery removes (log-recovery.ts,
 *   `planSegment`, the same rule with the same `isTornCreation` predicate); reported as a crash
 *   leftover, not damage, and the segment before it is classified as the newest, as the start
 *   reopens it for append. Unless the recovery point vouches for records in it: then recovery
 *   refuses the partition, and it is damage;
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
import { CHECKPOINT_FILE, readCheckpoint } from "./checkpoint.ts";
import { entryLengthAt } from "./entry-framer.ts";
import {
  forcedEnd,
  headerRewrite,
  leftoverSegments,
  missingPointSegment,
  planSegment,
  segmentMayHoldNothing,
} from "./log-recovery.ts";
import { allZero, isTornCreation, scanSegmentFile } from "./recovery.ts";
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
  | {
      kind: "invalid";
      position: number;
      offset: number;
      reason: string;
      bytesAfter: number;
      /**
       * Fewer bytes than an entry frame's header, all zeros: a sealed segment whose entries reach
       * the next one's base offset ends there (segment.ts reads it so); anywhere else they are what
       * they look like (a tail cut inside a length field, whose first bytes are zeros).
       */
      zerosOnly?: boolean;
    };

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
        const cutShort = invalid(`entry cut short: ${sizeBytes - position} bytes left, ${needed} needed`);
        if (cutShort.kind === "invalid" && sizeBytes - position < ENTRY_HEADER_BYTES)
          cutShort.zerosOnly = allZero(fd, file, position, sizeBytes);
        end = cutShort;
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
   * Files of at most a header whose offsets the segment before them already holds (the leftover of
   * a failed roll), which the start removes first (log-recovery.ts, `leftoverSegments`).
   */
  leftovers: { file: string; bytes: number }[];
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

/**
 * Verifies every segment of a partition directory in offset order, and that they are contiguous.
 * The newest segment is split by the checkpoint's recovery point as recovery splits it (header).
 */
export function verifyPartitionDirectory(
  directory: string,
  onProgress?: (bytesRead: number) => void,
): PartitionVerification {
  const names = listDirectory(directory);
  const allBases = names
    .map((name) => parseSegmentFileName(name))
    .filter((base): base is Offset => base !== undefined)
    .sort((a, b) => a - b);
  // Read as the start reads it (partition-log.ts, pass 2): missing or unparsable means no recovery
  // point; a failed read (EIO, EACCES) throws, as it refuses the start.
  const checkpoint = readCheckpoint(path.join(directory, CHECKPOINT_FILE));
  const point = checkpoint?.recoveryPoint;
  // Pass 2's leftovers of failed rolls: the start removes them before anything else looks.
  const leftovers = leftoverSegments(directory, allBases, checkpoint);
  const bases = allBases.filter((base) => !leftovers.includes(base));
  const result: PartitionVerification = {
    directory,
    segments: allBases.length,
    leftovers: leftovers.map((base) => {
      const file = path.join(directory, segmentFileName(base));
      return { file, bytes: fileSizeOf(file) };
    }),
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
  // The segment the recovery point lies in is gone: what the start refuses (log-recovery.ts).
  const missing = missingPointSegment(bases, point);
  if (missing !== undefined) {
    found({
      file: path.join(directory, segmentFileName(point!.segmentBaseOffset as Offset)),
      position: 0,
      offset: point!.segmentBaseOffset,
      reason: missing,
      readableFromOffset: undefined,
    });
  }
  // A newest file torn at creation: exactly what recovery removes (rule 2). A sealed segment without
  // a header is damage, and so is a newest one the recovery point vouches for (recovery refuses
  // it): the walk below reports those. The segment before a removed one is the newest for the
  // start (reopened for append, its tail split at the recovery point): so it is here, or verify
  // called an invalid last batch past the point damage kept in place while the start cut it as a
  // torn tail (a helper's fault run, F1).
  let walked = bases.length;
  if (bases.length > 0) {
    const lastFile = path.join(directory, segmentFileName(bases[bases.length - 1]!));
    const plan = planSegment({
      baseOffset: bases[bases.length - 1]!,
      isNewest: true,
      point,
      cleanShutdown: checkpoint?.cleanShutdown === true,
      tornCreation: () => isTornCreation(lastFile),
      scanAll: false,
    });
    if (plan === "drop-torn-creation") {
      result.crashLeftover = { file: lastFile, bytes: fileSizeOf(lastFile) };
      walked--;
    }
  }
  let expectedBase: number | undefined;
  for (let i = 0; i < walked; i++) {
    const base = bases[i]!;
    const file = path.join(directory, segmentFileName(base));
    const newest = i === walked - 1;
    let walk: SegmentWalk;
    try {
      walk = walkSegmentFile(file, undefined, onProgress);
    } catch (error) {
      if (error instanceof BadSegmentFileError) {
        // A header that is zeros or fails its check over intact records: the open that scans the
        // segment writes it again and keeps them (log-recovery.ts, openRewritingHeader). A start
        // scans the newest segment and those from the recovery point's on; `segment repair` all.
        const rewrite = headerRewrite(
          file,
          base,
          bases[i + 1] ?? Number.MAX_SAFE_INTEGER,
          segmentMayHoldNothing(base, newest, point),
        );
        const byStart = newest || point === undefined || base >= point.segmentBaseOffset;
        const who = byStart
          ? "a start"
          : "booblik-cli segment repair (a start does not scan this segment; reads of it fail until then)";
        found({
          file,
          position: 0,
          offset: base,
          reason:
            rewrite === "records-follow"
              ? `${error.message}, but intact records follow: ${who} writes the header again from the file name and recovers the records after it like any other segment's`
              : rewrite === "nothing-follows"
                ? `${error.message}, over a segment that holds no record (nothing but zeros after it): ${who} writes the header again from the file name; no record is lost`
                : error.message,
          readableFromOffset: rewrite !== undefined ? base : bases[i + 1],
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
    if (newest) {
      verifyNewestEnd(walk, forcedEnd(base, point), result, found);
      break;
    }
    const nextBase = bases[i + 1]!;
    // 1-3 zero bytes after the entries of a sealed segment that reach the next base: its end
    // (segment.ts reads it so; both refused it before, a helper's fault run, F4).
    const endsInZeros =
      walk.end.kind === "invalid" &&
      walk.end.zerosOnly === true &&
      walk.baseOffset + walk.recordCount === nextBase;
    if (walk.end.kind === "invalid" && !endsInZeros) {
      // Damage in a sealed segment: report it, then every later range of this file.
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
 * The end of the newest segment's walk, against `forced` (where the bytes the recovery point says
 * were forced end, `forcedEnd`). At or after it an invalid entry is an unverified tail (a write in
 * progress, or a torn tail recovery cuts). Before it, forced bytes failed their check: damage, and
 * from there on the walk does what recovery does in Segment.recover (segment.ts): the bad entry, a
 * zero length included, is stepped over to the next whole, valid entry, and the walk's next stop is
 * classified the same way. A clean end before `forced` is damage
 * too (recovery: `damageBeforeRecoveryPoint`): forced entries are missing.
 */
function verifyNewestEnd(
  walk: SegmentWalk,
  forced: number,
  result: PartitionVerification,
  found: (damage: VerifiedDamage) => void,
): void {
  const { file } = walk;
  const belowPoint = (reason: string): string =>
    `${reason} (before the recovery point at file position ${forced} in checkpoint.json: these bytes were forced, no crash tore them)`;
  if (walk.end.kind === "clean") {
    if (walk.validEndBytes < forced) {
      found({
        file,
        position: walk.validEndBytes,
        offset: walk.baseOffset + walk.recordCount,
        reason: belowPoint(
          walk.validEndBytes < walk.sizeBytes
            ? `the entries end at file position ${walk.validEndBytes}, zeros follow`
            : `the file ends at byte ${walk.sizeBytes}`,
        ),
        readableFromOffset: undefined,
      });
    }
    return;
  }
  if (walk.end.position >= forced) {
    result.unverifiedTail = {
      file,
      position: walk.end.position,
      bytes: walk.end.bytesAfter,
      reason: walk.end.reason,
    };
    return;
  }
  const fd = openFile(file, "read");
  try {
    const sizeBytes = fileSize(fd, file);
    let { position, offset, reason } = walk.end;
    for (;;) {
      // A zero length before the point is stepped over like any damage, as Segment.recover does.
      const resume = findNextReadable(
        fd,
        file,
        position,
        offset,
        sizeBytes,
        RECORD_PAYLOAD_BYTES_LIMIT,
        Number.MAX_SAFE_INTEGER,
      );
      found({ file, position, offset, reason: belowPoint(reason), readableFromOffset: resume?.offset });
      if (resume === undefined) return;
      const scan = verifiedScanFrom(fd, file, resume, sizeBytes);
      result.records += scan.recordCount;
      const zerosToEnd = scan.stop === "zero-length" && allZero(fd, file, scan.endPosition, sizeBytes);
      const stopReason =
        scan.stop === "zero-length" && !zerosToEnd
          ? "zero length followed by nonzero bytes"
          : `${scan.stop}: ${scan.detail}`;
      if (scan.endPosition >= forced) {
        // At or after the point, as for the walk's first stop: a clean end, or a torn tail.
        if (scan.stop !== "end" && !zerosToEnd) {
          result.unverifiedTail = {
            file,
            position: scan.endPosition,
            bytes: sizeBytes - scan.endPosition,
            reason: stopReason,
          };
        }
        return;
      }
      position = scan.endPosition;
      offset = scan.nextOffset;
      if (scan.stop === "end" || zerosToEnd) {
        // Whole entries that end before the point: the forced ones after them are missing.
        found({
          file,
          position,
          offset,
          reason: belowPoint(
            zerosToEnd
              ? `the entries end at file position ${position}, zeros follow`
              : `the file ends at byte ${sizeBytes}`,
          ),
          readableFromOffset: undefined,
        });
        return;
      }
      reason = stopReason;
    }
  } finally {
    closeFile(fd, file);
  }
}

/** Scans with every CRC checked from a readable entry found after damage to where the walk stops. */
function verifiedScanFrom(
  fd: number,
  file: string,
  from: { position: number; offset: number },
  sizeBytes: number,
): ReturnType<typeof scanSegmentFile> {
  return scanSegmentFile(
    fd,
    file,
    from.position,
    from.offset,
    sizeBytes,
    RECORD_PAYLOAD_BYTES_LIMIT,
    true,
    undefined,
  );
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
      const scan = verifiedScanFrom(fd, file, resume, sizeBytes);
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
