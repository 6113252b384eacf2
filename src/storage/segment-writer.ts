/**
 * The one interface behind which both write paths live (DESIGN invariant 8: nothing above it can tell
 * them apart; test/storage/segment.test.ts runs the same assertions over both, `describe.each(WRITE_MODES)`).
 *
 * What a writer owns: the write descriptor (and, for the mapped path, the mapping) of one segment file,
 * the published size, and the sticky failure state. What it does not own: offsets, the index, the
 * decision when to force (DESIGN invariant 7), readers.
 *
 * Invariants:
 * - `append` writes the framed entries of one append at `sizeBytes` (EntrySource: entry-framer.ts)
 *   and publishes the new `sizeBytes` as its last action; a reader that respects `sizeBytes` only
 *   ever sees complete entries (invariant 2).
 * - Bytes below `sizeBytes` are never written again (invariant 1).
 * - `append` either publishes the whole append or nothing: one that does not fit throws
 *   SegmentFullError before writing; a full disk throws a retriable IoError (ENOSPC) with nothing
 *   published and nothing left behind beyond `sizeBytes`.
 * - Any other write failure, and any failed force, is sticky: every later append and force throws
 *   PartitionFailedError until the segment is reopened (and so recovered).
 */

import { assert } from "../domain/assert.ts";
import { ClosedError, PartitionFailedError, SegmentFullError } from "../domain/errors.ts";
import type { EntrySource } from "./entry-framer.ts";

export const WRITE_MODES = ["mapped", "file"] as const;
/** `file`: pwrite at explicit positions. `mapped`: stores through a MAP_SHARED mapping. */
export type WriteMode = (typeof WRITE_MODES)[number];

export interface SegmentWriter {
  readonly writeMode: WriteMode;
  readonly path: string;
  /** The most bytes this segment holds, header included. The same for both paths. */
  readonly capacityBytes: number;
  /** Published size: the end of the last complete entry. */
  readonly sizeBytes: number;
  /**
   * Size covered by the last completed force (everything below it is durable); -1 after a change of
   * the length that no force covered yet (file-segment-writer.ts: the cut after a full disk).
   */
  readonly forcedBytes: number;
  /** The failure that stopped this writer, if any. */
  readonly failure: unknown;
  /**
   * The file is longer than `sizeBytes` (zeros ahead of the writer), so close() cuts it: a change of
   * the length that only a later force makes durable.
   */
  readonly paddedBeyondSize: boolean;
  /** Writes the entries of one append (already validated and planned by the caller) as one unit. */
  append(source: EntrySource): void;
  /**
   * Cuts the file to `sizeBytes` now if it holds zeros ahead of the writer and the path allows it
   * (the `file` path; the mapped path keeps its mapping's length until close), so that a following
   * force makes a clean close's file length durable. Appends may go on after it.
   */
  dropZerosAhead(): void;
  /** Makes everything appended before the call durable, off the event loop. */
  force(): Promise<void>;
  /** Like force, but on the calling thread: for start-up, shutdown, tools and tests. */
  forceNow(): void;
  /**
   * Releases the descriptor (and mapping). A file with zeros ahead (`paddedBeyondSize`: a mapped
   * one always, a `file` one with a window) is trimmed to `sizeBytes` first. Does not force.
   */
  close(): void;
}

/** The sticky-failure and bookkeeping half that both writers share. */
export abstract class BaseSegmentWriter implements SegmentWriter {
  abstract readonly writeMode: WriteMode;
  abstract readonly paddedBeyondSize: boolean;
  abstract dropZerosAhead(): void;
  readonly path: string;
  readonly capacityBytes: number;
  sizeBytes: number;
  forcedBytes: number;
  failure: unknown = undefined;
  protected closed = false;
  private released = false;
  private forcesInFlight = 0;
  /** Counts `markUnforced` calls, so that a force that was in flight across one claims nothing. */
  private unforcedMarks = 0;
  /** Completed fdatasyncs of this writer (a writer that is forced may want zeros ahead: file path). */
  protected forcesDone = 0;

  constructor(path: string, sizeBytes: number, capacityBytes: number) {
    assert(sizeBytes <= capacityBytes, "a segment's size is within its capacity");
    this.path = path;
    this.sizeBytes = sizeBytes;
    this.forcedBytes = sizeBytes;
    this.capacityBytes = capacityBytes;
  }

  append(source: EntrySource): void {
    this.checkUsable();
    const position = this.sizeBytes;
    const batchBytes = source.framedBytes;
    if (batchBytes > this.capacityBytes - position)
      throw new SegmentFullError(batchBytes, this.capacityBytes - position);
    try {
      this.writeAt(source, position);
    } catch (error) {
      if (!this.undoRecoverableWrite(error, position)) this.failure = error;
      throw error;
    }
    this.sizeBytes = position + batchBytes; // publish last
  }

  async force(): Promise<void> {
    this.checkUsable();
    const target = this.sizeBytes;
    if (target === this.forcedBytes) return;
    // While the fdatasync waits on the thread pool, close() must not release the descriptor: the
    // number could be reused by another open() before the pool runs the call, which would then sync
    // the wrong file and report our data durable. close() defers the release to the last force.
    this.forcesInFlight++;
    const marks = this.unforcedMarks;
    try {
      await this.datasync();
      this.forcesDone++;
    } catch (error) {
      this.failure = error;
      throw error;
    } finally {
      this.forcesInFlight--;
      if (this.closed && this.forcesInFlight === 0 && !this.released) this.releaseOnce();
    }
    // A cut while the fdatasync waited (markUnforced: a refused append's bytes cut back on a full
    // disk) may have come after the sync, which then did not cover it: this force claims nothing,
    // and the next one makes the cut durable. Claiming `target` here marked the file forced over an
    // unsynced cut, and a roll then sealed it as forced (simulation seed 3397507931).
    if (marks === this.unforcedMarks && target > this.forcedBytes) this.forcedBytes = target;
  }

  /**
   * The file changed in a way no force has covered and `sizeBytes` does not show (a cut back to
   * it): nothing is claimed durable until the next force, which therefore cannot be skipped.
   */
  protected markUnforced(): void {
    this.forcedBytes = -1;
    this.unforcedMarks++;
  }

  forceNow(): void {
    this.checkUsable();
    const target = this.sizeBytes;
    if (target === this.forcedBytes) return;
    try {
      this.datasyncNow();
      this.forcesDone++;
    } catch (error) {
      this.failure = error;
      throw error;
    }
    this.forcedBytes = target;
  }

  /** Releases now, or after the forces in flight finished (see force()). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.forcesInFlight === 0) this.releaseOnce();
  }

  private releaseOnce(): void {
    this.released = true;
    if (this.failure === undefined) {
      this.release();
      return;
    }
    // A failed writer is stopped: releasing it is best effort (its descriptor may be the thing that
    // failed), and whatever went wrong was already reported by the failure itself.
    try {
      this.release();
    } catch {
      // already failed
    }
  }

  protected checkUsable(): void {
    if (this.closed) throw new ClosedError(`segment writer ${this.path}`);
    if (this.failure !== undefined) throw new PartitionFailedError(`segment ${this.path}`, this.failure);
  }

  /** Writes the append's entries at `position` without publishing. */
  protected abstract writeAt(source: EntrySource, position: number): void;
  /**
   * Called when writeAt threw: returns true when the failure left nothing behind `sizeBytes` (or cleaned
   * it up) and is worth retrying later, i.e. a full disk; false makes the failure sticky.
   */
  protected abstract undoRecoverableWrite(error: unknown, position: number): boolean;
  protected abstract datasync(): Promise<void>;
  protected abstract datasyncNow(): void;
  protected abstract release(): void;
}
