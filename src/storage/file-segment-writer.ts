/**
 * The `file` write path: every append is one pwrite at an explicit position (never a file cursor; the
 * predecessor's forgotten `position()` after a reopen overwrote the start of its log).
 *
 * Zeros ahead of the writer: the file is kept longer than its data by a window of zeros written with
 * pwrite, so that an append is an overwrite of blocks the file already has. ext4's fdatasync of an
 * overwrite writes the data and skips the journal commit that a file growing needs: a 2 KiB force
 * took p50 0.053-0.062 ms against 0.084-0.103 appending (`bun bench/load/fdatasync.ts`, overwrite
 * against append, docs/benchmarks.md), and under `force` one such fdatasync is on the path of every
 * acknowledgement. (`fallocate` would not do: its unwritten extents are converted, in the journal,
 * when first written.) Invariants of the window, as on the mapped path:
 * - The file is `writtenEnd` long, and [sizeBytes, writtenEnd) holds only zeros this writer wrote,
 *   so the end of the log is the first zero length (recovery stops there: src/storage/recovery.ts),
 *   and a file that was not trimmed before a crash reads back as on the mapped path.
 * - Zeros are written only at or beyond the end of the append being written, never over a record;
 *   they are written before that append's records, so a failed zero write leaves no record behind.
 * - The window starts at FILE_WINDOW_BYTES_MIN and doubles per crossing up to FILE_WINDOW_BYTES_MAX,
 *   never past the segment's capacity, and not where it would leave less than
 *   FREE_SPACE_MARGIN_BYTES free (statvfs, as on the mapped path). An append that reaches past it
 *   writes no zeros, and grows the file itself, when it is larger than FILE_WINDOW_APPEND_BYTES_MAX
 *   or when the writer was not forced since the last such append (no zeros for a log that is not
 *   forced per append). A full disk makes it give up the window (cut back to `writtenEnd`, back to
 *   the smallest window), never refuse an append that fits without one.
 * - close() trims the file to `sizeBytes`: a sealed segment is as long as its records. The trim is a
 *   change of length that the next force covers (Segment.seal marks the sealed file unforced). A
 *   clean close cuts the zeros before its last force instead (dropZerosAhead), so that a clean
 *   shutdown leaves nothing unforced behind.
 *
 * An append's entries (frame headers, stamped batches) are first written into one staging buffer
 * shared by every file writer (JS runs one append at a time and pwrite is synchronous), then written
 * with a single pwrite: one syscall per append whatever its entry count, and the kernel sees the
 * whole append at once. The buffer grows to the largest append seen, up to
 * APPEND_STAGING_BYTES_KEPT_MAX; a larger append gets a buffer of its own (docs/benchmarks.md
 * measures the copy).
 *
 * A full disk: pwrite may have written part of the append before ENOSPC. Those bytes lie beyond the
 * published size but a later, shorter batch could leave a suffix of them in place, and recovery
 * could then read a never-acknowledged record behind the new one. So the file is cut back to the
 * published size before the error is reported, and the file counts as unforced until a force made
 * the cut durable (markUnforced: nothing is claimed durable, so no force skips it, and a force that
 * was already in flight when the cut came claims nothing either).
 */
import { isDiskFull } from "../domain/errors.ts";
import {
  APPEND_STAGING_BYTES_KEPT_MAX,
  FILE_WINDOW_APPEND_BYTES_MAX,
  FILE_WINDOW_BYTES_MAX,
  FILE_WINDOW_BYTES_MIN,
  FREE_SPACE_MARGIN_BYTES,
} from "../domain/limits.ts";
import { disk } from "./disk.ts";
import type { EntrySource } from "./entry-framer.ts";
import { BaseSegmentWriter, type WriteMode } from "./segment-writer.ts";
import { roundUpToPage, writeZeros } from "./zeros.ts";

let staging = new Uint8Array(64 * 1024);

/** A buffer of at least `bytes` to frame an append in (see the header). */
function stagingFor(bytes: number): Uint8Array {
  if (bytes <= staging.length) return staging;
  if (bytes > APPEND_STAGING_BYTES_KEPT_MAX) return new Uint8Array(bytes);
  let capacity = staging.length * 2;
  while (capacity < bytes) capacity *= 2;
  staging = new Uint8Array(Math.min(capacity, APPEND_STAGING_BYTES_KEPT_MAX));
  return staging;
}

export class FileSegmentWriter extends BaseSegmentWriter {
  readonly writeMode: WriteMode = "file";
  private readonly fd: number;
  /** The file's length; [sizeBytes, writtenEnd) is zeros (header comment). */
  private writtenEnd: number;
  /** How far past an append's end the next extension reaches; doubles per crossing. */
  private windowBytes = FILE_WINDOW_BYTES_MIN;
  /** `forcesDone` when an append last reached past `writtenEnd`. */
  private forcesAtCrossing = 0;

  /** Takes ownership of `fd`, a read-write descriptor whose file is exactly `sizeBytes` long. */
  constructor(path: string, fd: number, sizeBytes: number, capacityBytes: number) {
    super(path, sizeBytes, capacityBytes);
    this.fd = fd;
    this.writtenEnd = sizeBytes;
  }

  get paddedBeyondSize(): boolean {
    return this.writtenEnd > this.sizeBytes;
  }

  dropZerosAhead(): void {
    this.checkUsable();
    if (this.writtenEnd === this.sizeBytes) return;
    try {
      disk.truncateFile(this.fd, this.sizeBytes, this.path);
    } catch (error) {
      this.failure = error;
      throw error;
    }
    this.writtenEnd = this.sizeBytes;
    this.markUnforced(); // a change of length that the next force must cover
  }

  protected writeAt(source: EntrySource, position: number): void {
    const bytes = source.framedBytes;
    const end = position + bytes;
    if (end > this.writtenEnd) {
      // Zeros pay only for a writer that is forced. With no force since the last crossing (`append`,
      // most of `interval`) the append grows the file itself, as a small pwrite that grows a file is
      // cheaper than one that overwrites (0.60 against 0.76 µs for 180 B on ext4, medians of
      // bench/small-pwrite.bench.ts; docs/benchmarks.md). So does a large append
      // (FILE_WINDOW_APPEND_BYTES_MAX: under `force` the zeros are written to the disk too, and for a
      // large append they cost more than the commit saves).
      const forced = this.forcesDone !== this.forcesAtCrossing;
      this.forcesAtCrossing = this.forcesDone;
      if (forced && bytes <= FILE_WINDOW_APPEND_BYTES_MAX) this.extendWindow(end);
    }
    const buffer = stagingFor(bytes);
    source.writeTo(buffer, 0);
    disk.pwriteAll(this.fd, buffer, 0, bytes, position, this.path);
    if (end > this.writtenEnd) this.writtenEnd = end;
  }

  /** Writes zeros from `end` (the end of the append about to be written) to a window past it. */
  private extendWindow(end: number): void {
    const target = Math.min(this.capacityBytes, roundUpToPage(end + this.windowBytes));
    // At the capacity, or without room: no zeros, and the append grows the file itself (writeAt).
    if (target <= end || !this.roomForZeros(target - end)) return;
    try {
      writeZeros(this.fd, end, target, this.path);
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      // No room for a window after all: the zeros that were written are cut (the file's length
      // stays `writtenEnd` until the append). A failing cut throws a non-disk-full error, which
      // stops the writer (append's catch).
      disk.truncateFile(this.fd, this.writtenEnd, this.path);
      this.windowBytes = FILE_WINDOW_BYTES_MIN;
      return;
    }
    this.writtenEnd = target;
    this.windowBytes = Math.min(FILE_WINDOW_BYTES_MAX, this.windowBytes * 2);
  }

  /**
   * Zeros are held until the writer reaches them; on a nearly full disk they would take the room
   * that new segments and the small files a restart writes still need, so no window is written that
   * would leave less than FREE_SPACE_MARGIN_BYTES free. A failing statvfs means no window either:
   * the window is a speed-up, never worth stopping a writer for.
   */
  private roomForZeros(bytes: number): boolean {
    try {
      return disk.availableBytes(this.fd, this.path) - bytes >= FREE_SPACE_MARGIN_BYTES;
    } catch {
      return false;
    }
  }

  protected undoRecoverableWrite(error: unknown, position: number): boolean {
    if (!isDiskFull(error)) return false;
    // Shrinking frees blocks and does not need new ones; if even this fails, stop for good.
    try {
      disk.truncateFile(this.fd, position, this.path);
    } catch {
      return false;
    }
    this.writtenEnd = position;
    // The cut is a change of the file's length that no force covered yet. Until one does, a power
    // loss could keep the refused batch's bytes (its size extension may already be in the journal),
    // and recovery would read whole records of it back. A force that finds nothing new to write
    // skips the fdatasync, and a roll seals a segment as forced when it looks so: mark the file
    // unforced, so the next force (of this segment, active or sealed) makes the cut durable. Found
    // by the fault simulation's sync bookkeeping (test/storage/simulation.test.ts, seed 947291605).
    this.markUnforced();
    return true;
  }

  protected datasync(): Promise<void> {
    return disk.datasync(this.fd, this.path);
  }

  protected datasyncNow(): void {
    disk.datasyncNow(this.fd, this.path);
  }

  protected release(): void {
    // Trim the window, then close. A failed writer does not touch the file any more: recovery
    // decides what is valid in it (and stops at the first zero length).
    let trimError: unknown;
    if (this.failure === undefined && this.writtenEnd > this.sizeBytes) {
      try {
        disk.truncateFile(this.fd, this.sizeBytes, this.path);
      } catch (error) {
        trimError = error;
      }
    }
    disk.closeFile(this.fd, this.path);
    if (trimError !== undefined) throw trimError;
  }
}
