/**
 * `booblik-cli segment repair <data dir>`: the damage procedure of docs/operations.md (Troubleshooting,
 * "A consumer reports CorruptRecordError"), run offline and safely. Owns: the order of its steps and its report.
 *
 * - The broker must be stopped: the data directory lock is taken first, and a held lock refuses the
 *   command (DATA_DIR_LOCKED) before anything is touched.
 * - Per partition: the partition is opened by the broker's own recovery with every segment scanned
 *   and every CRC checked (`verifyEveryCrc`), the checkpoint's recovery point kept: it still says
 *   which offsets were forced, so offsets a start kept from being handed out again (a segment
 *   sealed with its lost forced end as a damaged range, the log going on in a new, empty segment)
 *   stay kept. Removing the checkpoint, as the repair once did, made that empty segment a crash
 *   leftover and gave those offsets to new records (a reviewer's fault harness, 2026-12-02). The
 *   one exception: when the segment the point lies in is missing (the start refuses that), the
 *   checkpoint is removed, which accepts the loss. The open goes on (src/storage/log-recovery.ts:
 *   damage in the middle of the log is kept in place and stepped over, later segments are kept,
 *   cut bytes that hold valid entries are copied into a quarantine file first) and closed cleanly
 *   (a new checkpoint), and what the open did is reported.
 * - Nothing is deleted that recovery would not delete at a broker start: the command only makes
 *   that start happen now, checking everything, with its findings printed per partition.
 */
import fs from "node:fs";
import path from "node:path";
import { DataDirLock } from "../broker/data-dir-lock.ts";
import { BooblikError, DataDirLockedError } from "../domain/errors.ts";
import type { Offset } from "../domain/ids.ts";
import { RECORD_PAYLOAD_BYTES_LIMIT } from "../domain/limits.ts";
import { CHECKPOINT_FILE, readCheckpoint } from "../storage/checkpoint.ts";
import { missingPointSegment } from "../storage/log-recovery.ts";
import { PartitionLog } from "../storage/partition-log.ts";
import { segmentConfig } from "../storage/segment.ts";
import { parseSegmentFileName } from "../storage/segment-header.ts";

/** What the repair found and did in one partition. */
export interface PartitionRepair {
  directory: string;
  segments: number;
  logStartOffset: number;
  nextOffset: number;
  /** Damaged ranges kept in place (reads of them fail naming the range): file, position, offsets. */
  damagedRanges: string[];
  offsetsUnreadable: number;
  /** Cut bytes that held valid entries, copied into quarantine files first. */
  quarantined: string[];
  /** Zeroed segment headers written again from the file name, their records kept. */
  headersRewritten: string[];
  /** Bytes cut at segment ends (torn tails, and the quarantined bytes). */
  bytesCut: number;
  /** Segment files removed (crash leftovers without entries, a newest segment's torn creation). */
  segmentsDropped: number;
  /** Quarantine files removed because their segment is gone (this repair's removals included). */
  quarantineFilesRemoved: number;
}

/** The partition directories of a data directory (`<topic>-<n>` holding segment files). */
function partitionDirectories(dataDir: string): string[] {
  return fs
    .readdirSync(dataDir)
    .map((name) => path.join(dataDir, name))
    .filter((entry) => /-\d+$/.test(entry) && fs.statSync(entry).isDirectory())
    .filter((entry) => fs.readdirSync(entry).some((name) => name.endsWith(".log")))
    .sort();
}

export function repairDataDirectory(dataDir: string): PartitionRepair[] {
  let lock: DataDirLock;
  try {
    lock = DataDirLock.acquire(dataDir);
  } catch (error) {
    if (error instanceof DataDirLockedError)
      throw new BooblikError("DATA_DIR_LOCKED", `${error.message}: stop the broker before repairing`);
    throw error;
  }
  try {
    // Every batch size a topic may have allowed is recognised (a smaller bound would call valid
    // large batches damage); the write mode only matters for appends, which the repair makes none of.
    const config = segmentConfig({ maxPayloadBytes: RECORD_PAYLOAD_BYTES_LIMIT, verifyEveryCrc: true });
    const repairs: PartitionRepair[] = [];
    for (const directory of partitionDirectories(dataDir)) {
      const checkpointPath = path.join(directory, CHECKPOINT_FILE);
      const bases = fs
        .readdirSync(directory)
        .map((name) => parseSegmentFileName(name))
        .filter((base): base is Offset => base !== undefined)
        .sort((a, b) => a - b);
      const point = readCheckpoint(checkpointPath)?.recoveryPoint;
      if (missingPointSegment(bases, point) !== undefined) fs.rmSync(checkpointPath, { force: true });
      const log = PartitionLog.open(directory, config);
      try {
        const report = log.openReport;
        repairs.push({
          directory,
          segments: log.segmentBaseOffsets.length,
          logStartOffset: log.logStartOffset,
          nextOffset: log.nextOffset,
          damagedRanges: report.damagedRanges,
          offsetsUnreadable: report.offsetsLost,
          quarantined: report.quarantined,
          headersRewritten: report.headersRewritten,
          bytesCut: report.bytesCut,
          segmentsDropped: report.segmentsDropped,
          quarantineFilesRemoved: report.quarantineFilesRemoved,
        });
      } finally {
        log.close();
      }
    }
    return repairs;
  } finally {
    lock.release();
  }
}
