/**
 * The `mapped` write path: the file is sized to the segment's capacity (sparse), mapped MAP_SHARED,
 * and batches are copied into the mapping. The end of the log is the first zero length.
 *
 * Write order inside a batch: every byte except the first record's length goes in first, that length
 * last. Recovery reads a length first and stops at a zero one, so a batch is either reachable as a
 * whole or not at all from the first record on. (Page writeback order is not guaranteed, so this
 * decides where recovery stops, not whether the bytes are whole: that is the CRC's job.)
 *
 * Full disk: a store into a sparse mapping on a full file system raises SIGBUS, which kills Bun
 * (reproduced on a 1 MiB tmpfs). So blocks are reserved with fallocate MAPPED_RESERVE_STEP_BYTES ahead
 * of the write position, before the store; a shortage then arrives as ENOSPC from a call we handle,
 * and nothing was written. Where fallocate is not supported, the reservation writes zeros with pwrite.
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
import {
  allocateBlocks,
  closeFile,
  datasync,
  datasyncNow,
  fileSize,
  pwriteAll,
  truncateFile,
} from "../../ffi/file.ts";
import { PAGE_BYTES } from "../../ffi/libc.ts";
import { Mapping } from "../../ffi/mapping.ts";
import { isDiskFull } from "../domain/errors.ts";
import { MAPPED_RESERVE_STEP_BYTES } from "../domain/limits.ts";
import { BaseSegmentWriter, type WriteMode } from "./segment-writer.ts";

function roundUpToPage(bytes: number): number {
  return Math.ceil(bytes / PAGE_BYTES) * PAGE_BYTES;
}

let zeroStep: Uint8Array | undefined;

export class MappedSegmentWriter extends BaseSegmentWriter {
  readonly writeMode: WriteMode = "mapped";
  private readonly mapping: Mapping;
  private readonly mappingBytes: number;
  /** Blocks are reserved on disk for [0, reservedEnd). */
  private reservedEnd: number;
  private fallocateSupported = true;

  /**
   * Takes ownership of `fd`, a read-write descriptor whose file holds no data past `sizeBytes` (the
   * caller cut it there). The file is extended to the page-rounded capacity and mapped.
   */
  constructor(path: string, fd: number, sizeBytes: number, capacityBytes: number) {
    super(path, sizeBytes, capacityBytes);
    this.mappingBytes = roundUpToPage(capacityBytes);
    try {
      if (fileSize(fd, path) !== this.mappingBytes) truncateFile(fd, this.mappingBytes, path);
    } catch (error) {
      truncateFileQuietly(fd, sizeBytes, path);
      closeQuietly(fd);
      throw error;
    }
    this.mapping = Mapping.mapShared(path, fd, this.mappingBytes);
    this.reservedEnd = sizeBytes;
  }

  protected writeAt(batch: Uint8Array, position: number): void {
    const end = position + batch.length;
    if (end > this.reservedEnd) this.reserve(end);
    const bytes = this.mapping.bytes;
    bytes.set(batch.subarray(4), position + 4);
    // The first record's length last (see the header comment).
    bytes[position] = batch[0]!;
    bytes[position + 1] = batch[1]!;
    bytes[position + 2] = batch[2]!;
    bytes[position + 3] = batch[3]!;
  }

  /** Reserves disk blocks up to at least `end`, a step ahead, so stores never meet a full disk. */
  private reserve(end: number): void {
    const start = this.reservedEnd - (this.reservedEnd % PAGE_BYTES);
    const target = Math.min(this.mappingBytes, roundUpToPage(end + MAPPED_RESERVE_STEP_BYTES));
    if (this.fallocateSupported) {
      try {
        if (allocateBlocks(this.mapping.fd, start, target - start, this.path)) {
          this.reservedEnd = target;
          return;
        }
        this.fallocateSupported = false;
      } catch (error) {
        // A disk with room for this batch but not for a whole step ahead: reserve just what the batch
        // needs. If even that fails, the disk is full and the caller gets ENOSPC.
        if (!isDiskFull(error)) throw error;
        const needed = Math.min(this.mappingBytes, roundUpToPage(end));
        allocateBlocks(this.mapping.fd, start, needed - start, this.path);
        this.reservedEnd = needed;
        return;
      }
    }
    // No fallocate here: writing zeros makes the file system allocate just the same. Only bytes
    // beyond the published size are written, so no record is touched.
    zeroStep ??= new Uint8Array(MAPPED_RESERVE_STEP_BYTES);
    let at = Math.max(start, this.sizeBytes);
    while (at < target) {
      const chunk = Math.min(zeroStep.length, target - at);
      pwriteAll(this.mapping.fd, zeroStep, 0, chunk, at, this.path);
      at += chunk;
    }
    this.reservedEnd = target;
  }

  protected undoRecoverableWrite(error: unknown): boolean {
    // Only a failed reservation reaches here (stores into reserved blocks cannot fail); it wrote
    // nothing into the mapping, so a full disk leaves the segment exactly as it was.
    return isDiskFull(error);
  }

  protected datasync(): Promise<void> {
    return datasync(this.mapping.fd, this.path);
  }

  protected datasyncNow(): void {
    this.mapping.msync(this.forcedBytes, this.sizeBytes, true);
    datasyncNow(this.mapping.fd, this.path);
  }

  protected release(): void {
    // Trim first (no store happens between the trim and the unmap), then detach and unmap. A failed
    // writer does not touch the file any more: recovery decides what is valid in it.
    let trimError: unknown;
    if (this.failure === undefined) {
      try {
        truncateFile(this.mapping.fd, this.sizeBytes, this.path);
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
    truncateFile(fd, sizeBytes, path);
  } catch {
    // Best effort while already failing; recovery cuts the file again on the next open.
  }
}

function closeQuietly(fd: number): void {
  try {
    closeFile(fd);
  } catch {
    // Already failing; the descriptor is gone or unusable either way.
  }
}
