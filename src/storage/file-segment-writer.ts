/**
 * The `file` write path: every batch is one pwrite at an explicit position (never a file cursor; the
 * predecessor's forgotten `position()` after a reopen overwrote the start of its log). The file is as
 * long as its data, so the end of the log is the file length.
 *
 * A full disk: pwrite may have written part of the batch before ENOSPC. Those bytes lie beyond the
 * published size but a later, shorter batch could leave a suffix of them in place, and recovery
 * could then read a never-acknowledged record behind the new one. So the file is cut back to the
 * published size before the error is reported, and the file counts as unforced until a force made
 * the cut durable (forcedBytes -1: nothing is claimed durable, so no force skips it).
 */
import { isDiskFull } from "../domain/errors.ts";
import { disk } from "./disk.ts";
import { BaseSegmentWriter, type WriteMode } from "./segment-writer.ts";

export class FileSegmentWriter extends BaseSegmentWriter {
  readonly writeMode: WriteMode = "file";
  private readonly fd: number;

  /** Takes ownership of `fd`, a read-write descriptor whose file is exactly `sizeBytes` long. */
  constructor(path: string, fd: number, sizeBytes: number, capacityBytes: number) {
    super(path, sizeBytes, capacityBytes);
    this.fd = fd;
  }

  protected writeAt(batch: Uint8Array, position: number): void {
    disk.pwriteAll(this.fd, batch, 0, batch.length, position, this.path);
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
    this.forcedBytes = -1;
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
