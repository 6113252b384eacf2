/**
 * The `file` write path: every append is one pwrite at an explicit position (never a file cursor; the
 * predecessor's forgotten `position()` after a reopen overwrote the start of its log). The file is as
 * long as its data, so the end of the log is the file length.
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
import { APPEND_STAGING_BYTES_KEPT_MAX } from "../domain/limits.ts";
import { disk } from "./disk.ts";
import type { EntrySource } from "./entry-framer.ts";
import { BaseSegmentWriter, type WriteMode } from "./segment-writer.ts";

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

  /** Takes ownership of `fd`, a read-write descriptor whose file is exactly `sizeBytes` long. */
  constructor(path: string, fd: number, sizeBytes: number, capacityBytes: number) {
    super(path, sizeBytes, capacityBytes);
    this.fd = fd;
  }

  protected writeAt(source: EntrySource, position: number): void {
    const bytes = source.framedBytes;
    const buffer = stagingFor(bytes);
    source.writeTo(buffer, 0);
    disk.pwriteAll(this.fd, buffer, 0, bytes, position, this.path);
  }

  protected undoRecoverableWrite(error: unknown, position: number): boolean {
    if (!isDiskFull(error)) return false;
    // Shrinking frees blocks and does not need new ones; if even this fails, stop for good.
    try {
      disk.truncateFile(this.fd, position, this.path);
    } catch {
      return false;
    }
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
    disk.closeFile(this.fd, this.path);
  }
}
