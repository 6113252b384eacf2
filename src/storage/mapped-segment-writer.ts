/**
 * The `mapped` write path: the file is sized to the segment's capacity (sparse), mapped MAP_SHARED,
 * and an append's entries are framed straight into the mapping (entry-framer.ts: the batch copied,
 * stamped, its frame CRC computed there). The end of the log is the first zero length.
 *
 * Write order inside an append: every byte except the first entry's length goes in first, that
 * length last (EntryFramer.writeTo). Recovery reads a length first and stops at a zero one, so an
 * append is either reachable as a whole or not at all from its first entry on. (Page writeback order is not guaranteed, so this
 * decides where recovery stops, not whether the bytes are whole: that is the CRC's job.)
 *
 * Full disk: a store through a mapping into a page whose blocks the file system still has to allocate
 * (or convert) raises SIGBUS when it cannot, and SIGBUS kills Bun. A sparse file on a full 1 MiB
 * tmpfs showed it first. Reserving with fallocate ahead of the writer is not enough: fallocated
 * extents are *unwritten*, and converting them on the first store can need metadata blocks; on a
 * full 32 MiB ext4 and XFS a writer that stored only into fallocated blocks died of SIGBUS in every
 * run (test/storage/disk-full-loop.test.ts, kernel 6.18). So the writer keeps a window of *written*
 * blocks ahead of its position: before a store reaches a page, zeros are written there with pwrite,
 * which allocates the blocks (ext4 and XFS commit to them when they accept the write) or fails
 * with ENOSPC before anything is stored. A store below `writtenEnd` then never needs a block.
 *
 * Invariants of the window:
 * - Every block of [0, writtenEnd) was written (records, the header, or our zeros); `writtenEnd` is a
 *   page multiple once the first window exists, so a store below it never touches a page with an
 *   unwritten block in it (a page spans several blocks on a 1 KiB-block file system).
 * - Zeros are only written at or beyond `sizeBytes`: no record is touched, and zeros beyond the
 *   published size are what the mapped format expects there (the end-of-log marker).
 * - The window starts at MAPPED_WINDOW_BYTES_MIN and doubles each time the writer crosses it, up to
 *   MAPPED_WINDOW_BYTES_MAX, so a partition's disk cost follows what it writes.
 * - It is extended only while the file system keeps FREE_SPACE_MARGIN_BYTES free after it
 *   (statvfs); otherwise only what the batch needs, and if even that would eat into the margin, the
 *   append fails with ENOSPC and nothing is written. Both are the typed, retriable disk-full error of
 *   the file path (`isDiskFull`): the segment refuses appends and keeps serving reads.
 * - This protects file systems that allocate at write time (ext4, XFS, tmpfs). A copy-on-write file
 *   system (btrfs, or reflinked blocks on XFS) allocates on every store, so no window can make the
 *   mapped path safe there: use the `file` path on those.
 *
 * force: fdatasync of the file on Bun's thread pool. On Linux it writes back the pages dirtied through
 * the mapping as well (measured: /proc/meminfo Dirty 49,164 kB → 32 kB after fdatasync alone), and an
 * msync(MS_SYNC) on the JS thread would stall every connection for the whole flush (45-54 ms for 64 MiB).
 * msync(MS_ASYNC) is a no-op on Linux since 2.6.19, so the async force does not call it. `forceNow`
 * (start-up, shutdown, tools) does msync(MS_SYNC) + fdatasync, the portable pair.
 *
 * Close: the file is trimmed to its data, so a sealed segment is as long as its records (and readable
 * by the file path: mode migration), then the mapping is detached and unmapped (see ffi/mapping.ts).
 */
import { ENOSPC } from "../../ffi/errno.ts";
import { ioError } from "../../ffi/file.ts";
import { Mapping } from "../../ffi/mapping.ts";
import { isDiskFull } from "../domain/errors.ts";
import {
  FREE_SPACE_MARGIN_BYTES,
  MAPPED_WINDOW_BYTES_MAX,
  MAPPED_WINDOW_BYTES_MIN,
} from "../domain/limits.ts";
import { disk } from "./disk.ts";
import type { EntrySource } from "./entry-framer.ts";
import { BaseSegmentWriter, type WriteMode } from "./segment-writer.ts";
import { roundUpToPage, writeZeros } from "./zeros.ts";

export class MappedSegmentWriter extends BaseSegmentWriter {
  readonly writeMode: WriteMode = "mapped";
  private readonly mapping: Mapping;
  private readonly mappingBytes: number;
  /** Every block of [0, writtenEnd) was written: a store below it needs no block (header comment). */
  private writtenEnd: number;
  /** How far ahead of a store the next extension reaches; doubles per crossing, up to the maximum. */
  private windowBytes = MAPPED_WINDOW_BYTES_MIN;

  /**
   * Takes ownership of `fd`, a read-write descriptor whose file holds no data past `sizeBytes` (the
   * caller cut it there). The file is extended to the page-rounded capacity and mapped.
   */
  constructor(path: string, fd: number, sizeBytes: number, capacityBytes: number) {
    super(path, sizeBytes, capacityBytes);
    this.mappingBytes = roundUpToPage(capacityBytes);
    try {
      if (disk.fileSize(fd, path) !== this.mappingBytes) disk.truncateFile(fd, this.mappingBytes, path);
    } catch (error) {
      truncateFileQuietly(fd, sizeBytes, path);
      closeQuietly(fd);
      throw error;
    }
    this.mapping = Mapping.mapShared(path, fd, this.mappingBytes);
    // The file holds nothing past sizeBytes (the caller cut it there), so the rest is holes.
    this.writtenEnd = sizeBytes;
  }

  /** The mapped file is always its mapping's length; close() trims it. */
  get paddedBeyondSize(): boolean {
    return true;
  }

  /** A store below `writtenEnd` needs the mapping's length: only close() trims (header). */
  dropZerosAhead(): void {}

  protected writeAt(source: EntrySource, position: number): void {
    const end = position + source.framedBytes;
    if (end > this.writtenEnd) this.extendWindow(end);
    // Every store lands below writtenEnd (on written blocks); the first length goes in last.
    source.writeTo(this.mapping.bytes, position);
  }

  /**
   * Writes zeros from `writtenEnd` to a window past `end`, so that the stores of this batch and the
   * next ones land on written blocks. Throws the disk-full IoError (ENOSPC) without having stored
   * anything when the file system cannot give the batch its blocks and keep the free-space margin.
   */
  private extendWindow(end: number): void {
    const from = this.writtenEnd;
    const needed = Math.min(this.mappingBytes, roundUpToPage(end));
    const wanted = Math.min(this.mappingBytes, roundUpToPage(end + this.windowBytes));
    const available = disk.availableBytes(this.mapping.fd, this.path);
    let target = wanted;
    if (available - (wanted - from) < FREE_SPACE_MARGIN_BYTES) {
      // Room for this batch but not for a whole window: write just what the batch needs.
      if (available - (needed - from) < FREE_SPACE_MARGIN_BYTES) {
        throw ioError(
          "extend mapped window",
          ENOSPC,
          this.path,
          `${needed - from} bytes at ${from} would leave less than the ${FREE_SPACE_MARGIN_BYTES} bytes ` +
            `kept free (${available} available)`,
        );
      }
      target = needed;
    }
    // A pwrite that fails (ENOSPC when someone else took the space since the statvfs) leaves
    // writtenEnd where it was: the zeros it did write are harmless and are written again next time.
    writeZeros(this.mapping.fd, from, target, this.path);
    this.writtenEnd = target;
    if (target === wanted) this.windowBytes = Math.min(MAPPED_WINDOW_BYTES_MAX, this.windowBytes * 2);
  }

  protected undoRecoverableWrite(error: unknown): boolean {
    // Only a failed window extension reaches here: a store below writtenEnd needs no block, so it
    // cannot fail for lack of space. The extension stored nothing into the mapping (at most zeros
    // beyond the published size), so a full disk leaves the segment's records exactly as they were.
    return isDiskFull(error);
  }

  protected datasync(): Promise<void> {
    return disk.datasync(this.mapping.fd, this.path);
  }

  protected datasyncNow(): void {
    this.mapping.msync(this.forcedBytes, this.sizeBytes, true);
    disk.datasyncNow(this.mapping.fd, this.path);
  }

  protected release(): void {
    // Trim first (no store happens between the trim and the unmap), then detach and unmap. A failed
    // writer does not touch the file any more: recovery decides what is valid in it.
    let trimError: unknown;
    if (this.failure === undefined) {
      try {
        disk.truncateFile(this.mapping.fd, this.sizeBytes, this.path);
      } catch (error) {
        trimError = error;
      }
    }
    this.mapping.close();
    if (trimError !== undefined) throw trimError;
  }
}

function truncateFileQuietly(fd: number, sizeBytes: number, path: string): void {
  try {
    disk.truncateFile(fd, sizeBytes, path);
  } catch {
    // Best effort while already failing; recovery cuts the file again on the next open.
  }
}

function closeQuietly(fd: number): void {
  try {
    disk.closeFile(fd);
  } catch {
    // Already failing; the descriptor is gone or unusable either way.
  }
}
