/**
 * The partition's log start offset, when a purge moved it into the middle of a segment: the file
 * `log-start.json` in the partition directory, `{ "version": 1, "logStartOffset": 1234 }`.
 *
 * Owns: reading and writing that file. Invariants:
 * - It is written atomically (temporary file, fsync, rename, fsync of the directory) and before any
 *   segment below it is deleted, so after a crash the start is the old one or the new one, never
 *   one between, and never lower than a purge that was acknowledged.
 * - It only moves up: PartitionLog.purge ignores a point at or below the current start.
 * - Unlike the checkpoint (an optimisation that may be lost), this file is a decision: losing it
 *   would make purged records readable again. It is a file of its own so that the checkpoint's
 *   background writes, which may finish after a purge, can never carry an older start back.
 * - Missing means "the first segment's base offset" (a partition never purged, or purged only by
 *   whole segments, whose deletion moved the start by itself).
 */
import { disk } from "./disk.ts";

export const LOG_START_FILE = "log-start.json";
const LOG_START_VERSION = 1;

export type LogStartRead =
  | { kind: "none" }
  | { kind: "offset"; logStartOffset: number }
  | { kind: "unreadable"; reason: string };

/** Reads the file; `unreadable` names why when it exists but cannot be trusted. */
export function readLogStart(path: string): LogStartRead {
  const text = disk.readTextFile(path);
  if (text === undefined) return { kind: "none" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { kind: "unreadable", reason: `not JSON: ${(error as Error).message}` };
  }
  const candidate = parsed as { version?: unknown; logStartOffset?: unknown };
  if (candidate === null || typeof candidate !== "object" || candidate.version !== LOG_START_VERSION)
    return { kind: "unreadable", reason: `version is not ${LOG_START_VERSION}` };
  const offset = candidate.logStartOffset;
  if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0)
    return { kind: "unreadable", reason: "logStartOffset is not a whole number ≥ 0" };
  return { kind: "offset", logStartOffset: offset };
}

/** Replaces the file atomically and durably (the directory is forced too) before returning. */
export function writeLogStartNow(path: string, logStartOffset: number): void {
  disk.writeFileAtomicallyNow(path, `${JSON.stringify({ version: LOG_START_VERSION, logStartOffset })}\n`);
}
