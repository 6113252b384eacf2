/**
 * `booblik-cli segment repair <data dir>`: the damage procedure of docs/operations.md (Troubleshooting,
 * "A consumer reports CorruptRecordError"), run offline and safely. Owns: the order of its steps and its report.
 *
 * - The broker must be stopped: the data directory lock is taken first, and a held lock refuses the
 *   command (DATA_DIR_LOCKED) before anything is touched.
 * - Per partition: the checkpoint is removed (so recovery scans and checks every entry, CRC
 *   included), the partition is opened by the broker's own recovery (src/storage/log-recovery.ts:
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
import { RECORD_PAYLOAD_BYTES_LIMIT } from "../domain/limits.ts";
import { CHECKPOINT_FILE } from "../storage/checkpoint.ts";
import { PartitionLog } from "../storage/partition-log.ts";
import { segmentConfig } from "../storage/segment.ts";

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
    const config = segmentConfig({ maxPayloadBytes: RECORD_PAYLOAD_BYTES_LIMIT });
    const repairs: PartitionRepair[] = [];
    for (const directory of partitionDirectories(dataDir)) {
      fs.rmSync(path.join(directory, CHECKPOINT_FILE), { force: true });
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
