/**
 * The Disk seam: every file call the storage layer makes goes through the one `disk` exported here,
 * so that a test can run segments, writers, recovery, checkpoints and the partition log over a disk
 * that fails on purpose (test/helpers/faulty-disk.ts, TigerBeetle's fault-injecting storage) while
 * the broker runs over `realDisk`, which is ffi/file.ts and nothing else.
 *
 * Owns: the `Disk` interface (exactly the calls of ffi/file.ts that storage uses) and which
 * implementation is current. Does not own any descriptor or file: the implementations return the
 * descriptors of ffi/file.ts, plain numbers owned by the caller.
 *
 * Invariants:
 * - Storage files (src/storage/*.ts) import file calls from here, never from ffi/file.ts; the
 *   exceptions are the offline tools, inspect.ts (the verifier) and migrate-format1.ts (the format
 *   migration), which read and write files directly.
 * - The current disk changes only through `useDisk`, and only between operations (tests): a log
 *   opened over one disk and closed over another would mix them.
 * - What cannot be intercepted: stores through the mapped writer's shared mapping (and its mmap,
 *   msync and munmap, ffi/mapping.ts), which no function call stands between. A test injects faults
 *   at the mapped writer's pwrite (the zeros of its window), ftruncate, fstatvfs and fdatasync calls.
 *
 * Cost: one live-binding read and one property lookup per call. Measured with
 * `bun bench/storage.bench.ts append --seconds=2 --policies=none --records=100 --batches=100`,
 * interleaved before and after (figures in the commit that introduced this file): no difference
 * beyond run-to-run noise.
 */
import {
  adviseWillNeed,
  availableBytes,
  closeFile,
  datasync,
  datasyncNow,
  fileModifiedMs,
  fileSize,
  fsyncDirectory,
  fsyncDirectoryAsync,
  listDirectory,
  makeDirectory,
  type OpenMode,
  openFile,
  preadFull,
  pwriteAll,
  readTextFile,
  removeDirectoryTree,
  statFile,
  truncateFile,
  unlinkFile,
  writeFileAtomically,
  writeFileAtomicallyNow,
} from "../../ffi/file.ts";

/** The file calls of storage; the contracts are those of ffi/file.ts (every failure an IoError). */
export interface Disk {
  openFile(path: string, mode: OpenMode): number;
  closeFile(fd: number, path?: string): void;
  fileSize(fd: number, path?: string): number;
  fileModifiedMs(fd: number, path?: string): number;
  statFile(path: string): { sizeBytes: number; modifiedMs: number };
  /** Writes all of `source[start, end)` at `position` or throws; a throw may leave a prefix written. */
  pwriteAll(
    fd: number,
    source: Uint8Array,
    start: number,
    end: number,
    position: number,
    path?: string,
  ): void;
  /** Reads up to `length` bytes; fewer only at the end of the file. */
  preadFull(
    fd: number,
    target: Uint8Array,
    start: number,
    length: number,
    position: number,
    path?: string,
  ): number;
  truncateFile(fd: number, sizeBytes: number, path?: string): void;
  /** A hint: read this range into the page cache in the background. Never fails. */
  adviseWillNeed(fd: number, position: number, length: number): void;
  availableBytes(fd: number, path?: string): number;
  datasync(fd: number, path?: string): Promise<void>;
  datasyncNow(fd: number, path?: string): void;
  fsyncDirectory(path: string): void;
  fsyncDirectoryAsync(path: string): Promise<void>;
  unlinkFile(path: string): void;
  listDirectory(path: string): string[];
  makeDirectory(path: string): void;
  removeDirectoryTree(path: string): void;
  readTextFile(path: string): string | undefined;
  writeFileAtomicallyNow(path: string, bytes: Uint8Array | string): void;
  writeFileAtomically(path: string, bytes: Uint8Array | string, stillWanted: () => boolean): Promise<boolean>;
}

/** The operating system's disk: ffi/file.ts, call for call. */
export const realDisk: Disk = {
  openFile,
  closeFile,
  fileSize,
  fileModifiedMs,
  statFile,
  pwriteAll,
  preadFull,
  truncateFile,
  adviseWillNeed,
  availableBytes,
  datasync,
  datasyncNow,
  fsyncDirectory,
  fsyncDirectoryAsync,
  unlinkFile,
  listDirectory,
  makeDirectory,
  removeDirectoryTree,
  readTextFile,
  writeFileAtomicallyNow,
  writeFileAtomically,
};

/** The disk storage uses now. A live binding: importers see `useDisk` take effect. */
export let disk: Disk = realDisk;

/** Makes `replacement` the current disk and returns the function that puts the previous one back. */
export function useDisk(replacement: Disk): () => void {
  const previous = disk;
  disk = replacement;
  return () => {
    disk = previous;
  };
}
