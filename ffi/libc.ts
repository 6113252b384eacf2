/**
 * The libc symbols booblik calls through bun:ffi. This folder is the only code that imports bun:ffi.
 *
 * Type choices (measured on Bun 1.4.4, see ../shared/notes/bun-platform.md §1):
 * - `i64`/`u64` returns are always BigInt (an allocation per call, 18-24 ns). Every ssize_t return is
 *   declared `i64_fast`, which is a number below 2^53. Offset arguments are `i64_fast`/`u64_fast` too,
 *   so callers pass plain numbers.
 * - `mmap` returns `ptr`: a number on success, and MAP_FAILED ((void*)-1) arrives as a BigInt, never -1.
 * - errno lives behind `__errno_location()` (per thread) and is only meaningful right after a call that
 *   reported failure: it is stale after successful calls.
 * - `sendfile`'s `off_t*` is an 8-byte cell we own; we write it as two int32 halves so no BigInt is
 *   needed (little-endian hosts only, checked below).
 */
import { dlopen, FFIType, type Pointer, read } from "bun:ffi";
import { assert } from "../src/domain/assert.ts";

const { i32, u32, ptr, i64_fast: i64f, u64_fast: u64f } = FFIType;

const library = dlopen("libc.so.6", {
  mmap: { args: [ptr, u64f, i32, i32, i32, i64f], returns: ptr },
  munmap: { args: [ptr, u64f], returns: i32 },
  msync: { args: [ptr, u64f, i32], returns: i32 },
  madvise: { args: [ptr, u64f, i32], returns: i32 },
  fsync: { args: [i32], returns: i32 },
  fdatasync: { args: [i32], returns: i32 },
  syncfs: { args: [i32], returns: i32 },
  pwrite: { args: [i32, ptr, u64f, i64f], returns: i64f },
  pread: { args: [i32, ptr, u64f, i64f], returns: i64f },
  ftruncate: { args: [i32, i64f], returns: i32 },
  fstatvfs: { args: [i32, ptr], returns: i32 },
  sendfile: { args: [i32, i32, ptr, u64f], returns: i64f },
  flock: { args: [i32, i32], returns: i32 },
  sysconf: { args: [i32], returns: i64f },
  poll: { args: [ptr, u64f, i32], returns: i32 },
  renameat2: { args: [i32, ptr, i32, ptr, u32], returns: i32 },
  posix_fadvise: { args: [i32, i64f, i64f, i32], returns: i32 },
  sched_setscheduler: { args: [i32, i32, ptr], returns: i32 },
  __errno_location: { args: [], returns: ptr },
});

/**
 * The symbols with the types they have at run time. bun-types declares `*_fast` returns as
 * `number | bigint`; they are numbers for every value below 2^53, which covers every size, position
 * and count here (segments stay below 2^31 bytes), so the facade says `number`.
 */
export interface Libc {
  mmap(
    address: null,
    lengthBytes: number,
    protection: number,
    flags: number,
    fd: number,
    offset: number,
  ): Pointer | bigint | null;
  munmap(address: number, lengthBytes: number): number;
  msync(address: number, lengthBytes: number, flags: number): number;
  madvise(address: number, lengthBytes: number, advice: number): number;
  fsync(fd: number): number;
  fdatasync(fd: number): number;
  syncfs(fd: number): number;
  pwrite(fd: number, source: Pointer | NodeJS.TypedArray, lengthBytes: number, position: number): number;
  pread(fd: number, target: Pointer | NodeJS.TypedArray, lengthBytes: number, position: number): number;
  ftruncate(fd: number, lengthBytes: number): number;
  fstatvfs(fd: number, target: Pointer | NodeJS.TypedArray): number;
  sendfile(outFd: number, inFd: number, offsetCell: Pointer | NodeJS.TypedArray, count: number): number;
  flock(fd: number, operation: number): number;
  sysconf(name: number): number;
  poll(fds: Pointer | NodeJS.TypedArray, count: number, timeoutMs: number): number;
  renameat2(
    oldDirFd: number,
    oldPath: NodeJS.TypedArray,
    newDirFd: number,
    newPath: NodeJS.TypedArray,
    flags: number,
  ): number;
  /** Returns the error number itself (0 on success), not −1 and errno. */
  posix_fadvise(fd: number, position: number, lengthBytes: number, advice: number): number;
  /** `pid` is a thread id on Linux: the policy applies to that one thread. */
  sched_setscheduler(threadId: number, policy: number, parameters: NodeJS.TypedArray): number;
  __errno_location(): Pointer | null;
}

export const libc = library.symbols as unknown as Libc;

const errnoPointer = libc.__errno_location();
assert(typeof errnoPointer === "number" && errnoPointer !== 0, "__errno_location returned no pointer");
const errnoAddress: Pointer = errnoPointer;

/** errno of the calling (main) thread. Read it immediately after a call that returned failure. */
export function lastErrno(): number {
  return read.i32(errnoAddress, 0);
}

assert(
  new Uint8Array(new Uint16Array([1]).buffer)[0] === 1,
  "booblik's FFI layer assumes a little-endian host",
);

// Constants from <sys/mman.h>, <fcntl.h>, <sys/file.h> (Linux, x86_64 and arm64 alike).
export const PROT_READ = 0x1;
export const PROT_WRITE = 0x2;
export const MAP_SHARED = 0x01;
export const MS_ASYNC = 1;
export const MS_SYNC = 4;
export const MADV_SEQUENTIAL = 2;
/** <fcntl.h>: start reading the range into the page cache now, without waiting for it. */
export const POSIX_FADV_WILLNEED = 3;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
/** <fcntl.h>: a path relative to the working directory, for the *at() calls. */
export const AT_FDCWD = -100;
/** <linux/fs.h> (glibc ≥ 2.28 exports renameat2): swap two existing paths atomically. */
export const RENAME_EXCHANGE = 2;
const SC_PAGESIZE = 30;
/**
 * `struct statvfs` of glibc on 64-bit Linux (x86_64 and arm64 alike): eleven 8-byte fields, then
 * `int __f_spare[6]`, 112 bytes. booblik reads f_frsize, f_blocks and f_bavail.
 */
export const STATVFS_BYTES = 112;
export const STATVFS_FRSIZE_OFFSET = 8;
export const STATVFS_BLOCKS_OFFSET = 16;
export const STATVFS_BAVAIL_OFFSET = 32;
assert(process.arch === "x64" || process.arch === "arm64", "struct statvfs layout is that of 64-bit Linux");
/** The kernel page size: mapping offsets and msync ranges must be multiples of it. */
export const PAGE_BYTES: number = libc.sysconf(SC_PAGESIZE);
assert(PAGE_BYTES >= 4096 && (PAGE_BYTES & (PAGE_BYTES - 1)) === 0, "page size is a power of two ≥ 4096");
