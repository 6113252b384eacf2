/**
 * File operations for storage, with every failure turned into a typed `IoError` that names the call,
 * the errno and the path. Positional I/O only: nothing here uses or moves a file cursor, because the
 * predecessor once overwrote the start of its log with a forgotten `position()` after a reopen.
 *
 * Descriptors are plain numbers owned by the caller; `closeFile` is the only way they are released.
 * Opening and directory operations go through node:fs (its errors carry `code`), positional data
 * transfer and forcing go through libc (see libc.ts), because node:fs would copy or allocate per call.
 */
import { ptr } from "bun:ffi";
import fs from "node:fs";
import { dirname } from "node:path";
import { IoError, UnsyncedReplaceError } from "../src/domain/errors.ts";
import { EAGAIN, EINTR, errnoFromName, errnoName } from "./errno.ts";
import {
  AT_FDCWD,
  LOCK_EX,
  LOCK_NB,
  lastErrno,
  libc,
  POSIX_FADV_WILLNEED,
  RENAME_EXCHANGE,
  STATVFS_BAVAIL_OFFSET,
  STATVFS_BLOCKS_OFFSET,
  STATVFS_BYTES,
  STATVFS_FRSIZE_OFFSET,
} from "./libc.ts";

export function ioError(call: string, errno: number, path: string | undefined, detail?: string): IoError {
  return new IoError(call, errno, errnoName(errno), path, detail);
}

/** Converts an error thrown by node:fs into an IoError; anything else is rethrown untouched. */
export function fromNodeError(call: string, error: unknown, path: string | undefined): IoError {
  if (error instanceof IoError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== "string") throw error;
  return new IoError(call, errnoFromName(code), code, path);
}

export type OpenMode = "read" | "readWrite" | "createNew";

/** Opens a file and returns its descriptor (O_CLOEXEC is set by Bun). `createNew` fails if it exists. */
export function openFile(path: string, mode: OpenMode): number {
  const flags =
    mode === "read"
      ? fs.constants.O_RDONLY
      : mode === "readWrite"
        ? fs.constants.O_RDWR
        : fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL;
  try {
    return fs.openSync(path, flags, 0o644);
  } catch (error) {
    throw fromNodeError("open", error, path);
  }
}

export function closeFile(fd: number, path?: string): void {
  try {
    fs.closeSync(fd);
  } catch (error) {
    throw fromNodeError("close", error, path);
  }
}

export function fileSize(fd: number, path?: string): number {
  try {
    return fs.fstatSync(fd).size;
  } catch (error) {
    throw fromNodeError("fstat", error, path);
  }
}

/** Size and modification time of a file by name, without opening it. */
export function statFile(path: string): { sizeBytes: number; modifiedMs: number } {
  try {
    const stat = fs.statSync(path);
    return { sizeBytes: stat.size, modifiedMs: stat.mtimeMs };
  } catch (error) {
    throw fromNodeError("stat", error, path);
  }
}

export function fileModifiedMs(fd: number, path?: string): number {
  try {
    return fs.fstatSync(fd).mtimeMs;
  } catch (error) {
    throw fromNodeError("fstat", error, path);
  }
}

/** Writes `source[start, end)` at `position`, looping over short writes. Throws IoError on failure. */
export function pwriteAll(
  fd: number,
  source: Uint8Array,
  start: number,
  end: number,
  position: number,
  path?: string,
): void {
  let offset = start;
  let at = position;
  while (offset < end) {
    // ptr(view, k) is the address of view[k] (the view's own byteOffset included) and allocates
    // nothing; `source` stays referenced for the whole call, so the address stays valid.
    const written = libc.pwrite(fd, ptr(source, offset), end - offset, at);
    if (written < 0) {
      const errno = lastErrno();
      if (errno === EINTR) continue;
      throw ioError("pwrite", errno, path, `${end - offset} bytes at ${at}`);
    }
    if (written === 0) throw ioError("pwrite", 0, path, `wrote 0 of ${end - offset} bytes at ${at}`);
    offset += written;
    at += written;
  }
}

/**
 * Reads up to `length` bytes at `position` into `target[start, …)`, looping over short reads until
 * `length` bytes arrived or the file ended. Returns the bytes read (fewer than `length` only at EOF).
 */
export function preadFull(
  fd: number,
  target: Uint8Array,
  start: number,
  length: number,
  position: number,
  path?: string,
): number {
  let done = 0;
  while (done < length) {
    const offset = start + done;
    const got = libc.pread(fd, ptr(target, offset), length - done, position + done);
    if (got < 0) {
      const errno = lastErrno();
      if (errno === EINTR) continue;
      throw ioError("pread", errno, path, `${length - done} bytes at ${position + done}`);
    }
    if (got === 0) break;
    done += got;
  }
  return done;
}

/**
 * Asks the kernel to read `[position, position + length)` into the page cache in the background
 * (posix_fadvise POSIX_FADV_WILLNEED), so that the disk works while the caller computes on what it
 * read before. A hint: it changes no data and no result, so its failure is ignored.
 */
export function adviseWillNeed(fd: number, position: number, length: number): void {
  libc.posix_fadvise(fd, position, length, POSIX_FADV_WILLNEED);
}

export function truncateFile(fd: number, sizeBytes: number, path?: string): void {
  while (libc.ftruncate(fd, sizeBytes) !== 0) {
    const errno = lastErrno();
    if (errno !== EINTR) throw ioError("ftruncate", errno, path, `to ${sizeBytes} bytes`);
  }
}

// One result buffer for fstatvfs: JS runs one call at a time, and the fields are read right after.
const statvfsResult = new Uint8Array(STATVFS_BYTES);
const statvfsView = new DataView(statvfsResult.buffer);

function readUint64(view: DataView, offset: number): number {
  // Two halves instead of getBigUint64: no BigInt per call; exact below 2^53 (8 PiB).
  return view.getUint32(offset, true) + view.getUint32(offset + 4, true) * 2 ** 32;
}

/**
 * Bytes an unprivileged writer can still allocate on the file system holding `fd` (f_bavail ×
 * f_frsize). On ext4 this already excludes root's reserved blocks and the file system's own reserve
 * for metadata (s_resv_clusters; ext4_statfs), so it is the conservative figure. A file system that
 * reports no size at all (f_blocks 0, as some FUSE file systems do) gives Infinity: nothing is known,
 * and reading its 0 free blocks as "full" would refuse every write.
 */
export function availableBytes(fd: number, path?: string): number {
  while (libc.fstatvfs(fd, statvfsResult) !== 0) {
    const errno = lastErrno();
    if (errno !== EINTR) throw ioError("fstatvfs", errno, path);
  }
  if (readUint64(statvfsView, STATVFS_BLOCKS_OFFSET) === 0) return Number.POSITIVE_INFINITY;
  return readUint64(statvfsView, STATVFS_BAVAIL_OFFSET) * readUint64(statvfsView, STATVFS_FRSIZE_OFFSET);
}

/** fdatasync on the calling thread. Blocks the event loop: only for start-up, tests and tools. */
export function datasyncNow(fd: number, path?: string): void {
  while (libc.fdatasync(fd) !== 0) {
    const errno = lastErrno();
    if (errno !== EINTR) throw ioError("fdatasync", errno, path);
  }
}

/**
 * fdatasync on Bun's thread pool: the event loop keeps serving while the disk works (a 64 MiB flush
 * stalled the loop 45-54 ms when run on the JS thread, 1.5-2.2 ms this way; bun-platform §3). On Linux
 * it also writes back pages dirtied through a MAP_SHARED mapping of the file (measured there too).
 */
export function datasync(fd: number, path?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.fdatasync(fd, (error) => {
      if (error === null || error === undefined) resolve();
      else reject(fromNodeError("fdatasync", error, path));
    });
  });
}

/** fsync a directory so that a created, renamed or unlinked entry in it survives a crash. */
export function fsyncDirectory(path: string): void {
  let fd = -1;
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    fs.fsyncSync(fd);
  } catch (error) {
    throw fromNodeError("fsync(dir)", error, path);
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}

export function unlinkFile(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (error) {
    throw fromNodeError("unlink", error, path);
  }
}

export function renameFile(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch (error) {
    throw fromNodeError("rename", error, `${from} -> ${to}`);
  }
}

/**
 * Swaps two existing paths (files or directories) in one step: renameat2(RENAME_EXCHANGE). Either
 * both names point at their new objects or, after a crash, both at their old ones; node:fs has no
 * such call. Linux ≥ 3.15 on ext4, XFS, btrfs and tmpfs supports it; a file system that does not
 * fails with EINVAL, a kernel without renameat2 with ENOSYS, two file systems with EXDEV: the
 * IoError carries the errno so the caller can say so.
 */
export function exchangePaths(first: string, second: string): void {
  // NUL-terminated copies: a JS string has no stable address to hand to C.
  const firstPath = Buffer.from(`${first}\0`);
  const secondPath = Buffer.from(`${second}\0`);
  while (libc.renameat2(AT_FDCWD, firstPath, AT_FDCWD, secondPath, RENAME_EXCHANGE) !== 0) {
    const errno = lastErrno();
    if (errno !== EINTR) throw ioError("renameat2(RENAME_EXCHANGE)", errno, `${first} <-> ${second}`);
  }
}

/** Names in a directory (no `.`/`..`), unsorted. */
export function listDirectory(path: string): string[] {
  try {
    return fs.readdirSync(path);
  } catch (error) {
    throw fromNodeError("readdir", error, path);
  }
}

export function makeDirectory(path: string): void {
  try {
    fs.mkdirSync(path, { recursive: true });
  } catch (error) {
    throw fromNodeError("mkdir", error, path);
  }
}

/**
 * Like makeDirectory, and every directory it created survives a power loss: the parent of each one
 * is fsynced after it. Without this, the directories a broker creates on its first start (the data
 * directory itself, `topics/`) are entries no fsync covered, and a power loss takes them, with
 * every acknowledged record below them (found by the power-loss test, test/power-loss/). Costs
 * nothing when everything exists.
 */
export function makeDirectoryDurably(path: string): void {
  let first: string | undefined;
  try {
    first = fs.mkdirSync(path, { recursive: true });
  } catch (error) {
    throw fromNodeError("mkdir", error, path);
  }
  if (first === undefined) return;
  // Created: `first`, its descendants down to `path`. Their parents, from the outermost down.
  const parents: string[] = [];
  for (let created = path; ; created = dirname(created)) {
    parents.unshift(dirname(created));
    if (created === first || dirname(created) === created) break;
  }
  for (const parent of parents) fsyncDirectory(parent);
}

export function removeDirectoryTree(path: string): void {
  try {
    fs.rmSync(path, { recursive: true, force: true });
  } catch (error) {
    throw fromNodeError("rm", error, path);
  }
}

export function pathExists(path: string): boolean {
  return fs.existsSync(path);
}

/**
 * Replaces `path` with `bytes` so that a crash leaves either the old or the new content, never a mix:
 * write a temporary file (`temporary`, by default `<path>.tmp`; a caller whose names run close to
 * NAME_MAX passes a shorter one in the same directory), fsync it, rename it over the target, fsync
 * the directory. Synchronous: for start-up, shutdown and administrative changes.
 */
export function writeFileAtomicallyNow(
  path: string,
  bytes: Uint8Array | string,
  temporary = `${path}.tmp`,
  mode = 0o644,
): void {
  let fd = -1;
  try {
    // A stale temporary file keeps its old mode through O_CREAT: remove it so `mode` holds (a
    // credentials file must never be readable by others, not even for a moment).
    fs.rmSync(temporary, { force: true });
    fd = fs.openSync(temporary, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, mode);
    fs.writeSync(fd, typeof bytes === "string" ? Buffer.from(bytes) : bytes);
    fs.fsyncSync(fd);
  } catch (error) {
    // Leave nothing behind: a full disk used to leave a 0-byte temporary file after every attempt.
    try {
      if (fd >= 0) fs.closeSync(fd);
      fs.rmSync(temporary, { force: true });
    } catch {
      // Best effort; the write's failure is the story.
    }
    fd = -1;
    throw fromNodeError("write", error, temporary);
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
  renameFile(temporary, path);
  try {
    fsyncDirectory(dirname(path));
  } catch (error) {
    throw error instanceof IoError ? new UnsyncedReplaceError(error, path) : error;
  }
}

/**
 * Atomic replacements of many small files made durable together, for a clean shutdown of thousands
 * of partitions: each `stage` writes a temporary file without an fsync; `commit` makes all of them
 * durable with one syncfs(2) of the file system, renames each over its target, and makes the renames
 * durable with a second syncfs. Written one by one (writeFileAtomicallyNow), each file costs an fsync
 * of itself and one of its directory: 4 fsyncs per partition at shutdown (a checkpoint and a
 * producer snapshot; strace -c of a SIGTERM with 256 partitions: 1,024 fsync, 512 rename), which
 * took 51 s for 4,096 partitions on this machine's shared disk (bench/partitions.bench.ts).
 *
 * A crash at any point leaves each target with its old content or its new, complete content: a
 * rename happens only after the first syncfs returned. A failed syncfs (Linux ≥ 5.8 reports
 * writeback errors of the file system since `commit` opened it) falls back to the one-by-one path,
 * which names the file that failed. The targets must lie on the file system of `anchorDirectory`.
 */
export class AtomicWriteBatch {
  private readonly staged: { temporary: string; path: string }[] = [];

  constructor(private readonly anchorDirectory: string) {}

  get size(): number {
    return this.staged.length;
  }

  /** Writes `bytes` to `path`'s temporary file (no fsync); `commit` puts it in place. */
  stage(path: string, bytes: Uint8Array | string): void {
    const temporary = `${path}.tmp`;
    let fd = -1;
    try {
      fd = fs.openSync(temporary, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o644);
      fs.writeSync(fd, typeof bytes === "string" ? Buffer.from(bytes) : bytes);
    } catch (error) {
      try {
        if (fd >= 0) fs.closeSync(fd);
        fs.rmSync(temporary, { force: true });
      } catch {
        // Best effort; the write's failure is the story.
      }
      fd = -1;
      throw fromNodeError("write", error, temporary);
    } finally {
      if (fd >= 0) fs.closeSync(fd);
    }
    this.staged.push({ temporary, path });
  }

  /** Makes every staged file durable and puts it in place (see the class comment). */
  commit(): void {
    if (this.staged.length === 0) return;
    const staged = this.staged.splice(0);
    if (!this.syncFileSystem()) {
      // Find the file that failed, as the one-by-one path would have.
      for (const { temporary, path } of staged) {
        const fd = openFile(temporary, "read");
        try {
          while (libc.fsync(fd) !== 0) {
            const errno = lastErrno();
            if (errno !== EINTR) throw ioError("fsync", errno, temporary);
          }
        } finally {
          closeFile(fd, temporary);
        }
        renameFile(temporary, path);
        fsyncDirectory(dirname(path));
      }
      return;
    }
    for (const { temporary, path } of staged) renameFile(temporary, path);
    if (!this.syncFileSystem()) {
      for (const directory of new Set(staged.map(({ path }) => dirname(path)))) fsyncDirectory(directory);
    }
  }

  /** syncfs of the anchor's file system; false when it reported an error. */
  private syncFileSystem(): boolean {
    const fd = openFile(this.anchorDirectory, "read");
    try {
      while (libc.syncfs(fd) !== 0) {
        if (lastErrno() !== EINTR) return false;
      }
      return true;
    } finally {
      closeFile(fd, this.anchorDirectory);
    }
  }
}

/**
 * writeFileAtomicallyNow on Bun's thread pool: the event loop keeps serving meanwhile. Returns false
 * (and leaves the target alone) when `stillWanted` says no once the new content is on disk.
 */
export async function writeFileAtomically(
  path: string,
  bytes: Uint8Array | string,
  stillWanted: () => boolean = () => true,
): Promise<boolean> {
  // Its own temporary name, so that a synchronous write of the same file (writeFileAtomicallyNow)
  // never shares a temporary file with this one.
  const temporary = `${path}.async.tmp`;
  try {
    const handle = await fs.promises.open(temporary, "w", 0o644);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    // The caller may have moved on while the disk worked (e.g. a checkpoint superseded by the clean
    // one of a shutdown): then the old content must not replace the new.
    if (!stillWanted()) {
      await fs.promises.unlink(temporary);
      return false;
    }
    await fs.promises.rename(temporary, path);
  } catch (error) {
    await fs.promises.rm(temporary, { force: true }).catch(() => undefined); // no 0-byte leftovers
    throw fromNodeError("atomic write", error, path);
  }
  try {
    await fsyncDirectoryAsync(dirname(path));
  } catch (error) {
    throw error instanceof IoError ? new UnsyncedReplaceError(error, path) : error;
  }
  return true;
}

/** fsync of a directory on Bun's thread pool. */
export async function fsyncDirectoryAsync(path: string): Promise<void> {
  try {
    const directory = await fs.promises.open(path, "r");
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  } catch (error) {
    throw fromNodeError("fsync(dir)", error, path);
  }
}

export function readTextFile(path: string): string | undefined {
  try {
    return fs.readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw fromNodeError("read", error, path);
  }
}

/**
 * Takes an exclusive advisory lock (flock) on `fd` without waiting. Returns false when another open
 * file description holds it (another process, or another open in this one). The lock lives as long
 * as the descriptor.
 */
export function tryLockExclusive(fd: number, path?: string): boolean {
  for (;;) {
    if (libc.flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
    const errno = lastErrno();
    if (errno === EINTR) continue;
    if (errno === EAGAIN) return false;
    throw ioError("flock", errno, path);
  }
}
