/**
 * The partition checkpoint: a small file that says how far the log is known to be durable (the
 * recovery point) and whether the log was closed cleanly.
 *
 * File `checkpoint.json` in the partition directory, replaced atomically (temporary file, fsync,
 * rename, fsync of the directory), so a crash leaves the old or the new one:
 *
 *   { "version": 1, "cleanShutdown": true,
 *     "recoveryPoint": { "segmentBaseOffset": 0, "position": 4096, "nextOffset": 57 } }
 *
 * Meaning of the recovery point: every segment before `segmentBaseOffset` is complete, durable and
 * trimmed to its records, and in that segment the bytes before `position` (holding the records
 * before `nextOffset`) are durable. A stale recovery point is always safe (recovery then checks more
 * than it needs to); a recovery point ahead of the durable data is not, so it is only ever written
 * after a completed force that covered it.
 *
 * `cleanShutdown` is true only in the checkpoint written by a clean close, after the final force; the
 * recovery point then is the exact end of the log. Opening rewrites it as false before anything is
 * appended, so a crash after the open is never mistaken for a clean shutdown.
 *
 * The checkpoint is an optimisation: a missing or unreadable one means "scan everything".
 */
import type { AtomicWriteBatch } from "../../ffi/file.ts";
import { SEGMENT_BYTES_MAX } from "../domain/limits.ts";
import { disk } from "./disk.ts";

export const CHECKPOINT_FILE = "checkpoint.json";
const CHECKPOINT_VERSION = 1;

export interface RecoveryPoint {
  segmentBaseOffset: number;
  position: number;
  nextOffset: number;
}

export interface Checkpoint {
  cleanShutdown: boolean;
  recoveryPoint: RecoveryPoint;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** Reads a checkpoint; undefined when there is none or it cannot be trusted. */
export function readCheckpoint(path: string): Checkpoint | undefined {
  const text = disk.readTextFile(path);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const candidate = parsed as {
    version?: unknown;
    cleanShutdown?: unknown;
    recoveryPoint?: Partial<RecoveryPoint>;
  };
  const point = candidate.recoveryPoint;
  if (
    candidate.version !== CHECKPOINT_VERSION ||
    typeof candidate.cleanShutdown !== "boolean" ||
    point === undefined ||
    !isCount(point.segmentBaseOffset) ||
    !isCount(point.position) ||
    !isCount(point.nextOffset) ||
    // A point no segment can hold is damage, read as no checkpoint (a full scan): a position beyond
    // the largest segment, or a next offset below the segment's base. (Not "more offsets than bytes":
    // a compressed batch can hold more records than it has bytes.) A position of 1e15 was believed,
    // and the start line said "DATA LOSS: 999999999942348 bytes" (a reviewer's fault harness,
    // 2026-12-02).
    point.position > SEGMENT_BYTES_MAX ||
    point.nextOffset < point.segmentBaseOffset
  ) {
    return undefined;
  }
  return {
    cleanShutdown: candidate.cleanShutdown,
    recoveryPoint: {
      segmentBaseOffset: point.segmentBaseOffset,
      position: point.position,
      nextOffset: point.nextOffset,
    },
  };
}

function encode(checkpoint: Checkpoint): string {
  return `${JSON.stringify({ version: CHECKPOINT_VERSION, ...checkpoint })}\n`;
}

export function writeCheckpointNow(path: string, checkpoint: Checkpoint, batch?: AtomicWriteBatch): void {
  // In a batch (a broker's clean shutdown) the write becomes durable and takes effect at its commit.
  if (batch !== undefined) batch.stage(path, encode(checkpoint));
  else disk.writeFileAtomicallyNow(path, encode(checkpoint));
}

/** Writes in the background; skips the final rename when `stillWanted()` has turned false. */
export function writeCheckpoint(
  path: string,
  checkpoint: Checkpoint,
  stillWanted: () => boolean,
): Promise<boolean> {
  return disk.writeFileAtomically(path, encode(checkpoint), stillWanted);
}
