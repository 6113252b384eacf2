/**
 * A memory mapping and the descriptor it was made from, owned together.
 *
 * Lifetime rules (each one prevents a failure reproduced on Bun 1.4.4, bun-platform §1):
 * - The view is created with `toArrayBuffer` and no finalizer: the GC never unmaps it behind our back,
 *   so the mapping lives exactly until `close()`.
 * - `close()` first detaches the ArrayBuffer (`transfer(0)`), which turns every view over it into a
 *   zero-length view, and only then calls `munmap`. A view that outlived an unmapped region would
 *   SIGSEGV the whole process on its next access; a detached view throws or reads `undefined` instead.
 * - The mapping owns its descriptor and closes it in `close()`; the predecessor leaked one descriptor
 *   per rolled segment when the mapping did not.
 * - `close()` is idempotent; after it, `bytes` has length 0.
 */
import { toArrayBuffer } from "bun:ffi";
import { assert } from "../src/domain/assert.ts";
import { closeFile, ioError } from "./file.ts";
import {
  lastErrno,
  libc,
  MADV_SEQUENTIAL,
  MAP_SHARED,
  MS_ASYNC,
  MS_SYNC,
  PAGE_BYTES,
  PROT_READ,
  PROT_WRITE,
} from "./libc.ts";

export class Mapping {
  readonly path: string;
  readonly lengthBytes: number;
  /** The whole mapping as bytes; length 0 after close(). */
  bytes: Uint8Array;
  private fdOwned: number;
  private address: number;
  private buffer: ArrayBuffer;

  private constructor(path: string, fd: number, address: number, lengthBytes: number) {
    this.path = path;
    this.fdOwned = fd;
    this.address = address;
    this.lengthBytes = lengthBytes;
    this.buffer = toArrayBuffer(address, 0, lengthBytes);
    this.bytes = new Uint8Array(this.buffer);
  }

  /**
   * Maps `[0, lengthBytes)` of `fd` MAP_SHARED, read-write. Takes ownership of `fd`: it is closed by
   * `close()`, or right here if mapping fails.
   */
  static mapShared(path: string, fd: number, lengthBytes: number): Mapping {
    assert(lengthBytes > 0 && lengthBytes % PAGE_BYTES === 0, "mapping length is a positive page multiple");
    const address = libc.mmap(null, lengthBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    // MAP_FAILED ((void*)-1) arrives as a BigInt, NULL as null; only a number is an address.
    if (typeof address !== "number") {
      const errno = lastErrno();
      closeFile(fd, path);
      throw ioError("mmap", errno, path, `${lengthBytes} bytes`);
    }
    return new Mapping(path, fd, address, lengthBytes);
  }

  get fd(): number {
    return this.fdOwned;
  }

  get closed(): boolean {
    return this.address === 0;
  }

  /** Hint that the mapping is read front to back (recovery). Failure is harmless and ignored. */
  adviseSequential(): void {
    if (this.address !== 0) libc.madvise(this.address, this.lengthBytes, MADV_SEQUENTIAL);
  }

  /**
   * msync over the pages covering `[start, end)`. `sync = false` (MS_ASYNC) only schedules writeback and
   * returns at once; `sync = true` (MS_SYNC) waits for the disk and must not run on the event loop of a
   * serving broker.
   */
  msync(start: number, end: number, sync: boolean): void {
    assert(this.address !== 0, "msync on a closed mapping");
    assert(0 <= start && start <= end && end <= this.lengthBytes, "msync range inside the mapping");
    if (start === end) return;
    const alignedStart = start - (start % PAGE_BYTES);
    const length = end - alignedStart;
    if (libc.msync(this.address + alignedStart, length, sync ? MS_SYNC : MS_ASYNC) !== 0) {
      throw ioError("msync", lastErrno(), this.path, `${length} bytes at ${alignedStart}`);
    }
  }

  /** Detaches every view, unmaps, closes the descriptor. Safe to call twice. */
  close(): void {
    if (this.address === 0) return;
    const address = this.address;
    this.address = 0;
    // Detach before munmap: afterwards the old views have length 0 instead of pointing at freed pages.
    this.buffer.transfer(0);
    this.bytes = new Uint8Array(0);
    const unmapResult = libc.munmap(address, this.lengthBytes);
    const unmapErrno = unmapResult === 0 ? 0 : lastErrno();
    const fd = this.fdOwned;
    this.fdOwned = -1;
    closeFile(fd, this.path);
    if (unmapResult !== 0) throw ioError("munmap", unmapErrno, this.path);
  }
}
