/**
 * The data directory lock: one broker per directory. A second process (or a second Broker in this
 * one) opening the same directory is refused with DataDirLockedError naming the holder, instead of
 * two writers silently interleaving appends into the same segments.
 *
 * `<dataDir>/.lock` holds an flock(LOCK_EX) for as long as the broker runs; the kernel drops it when
 * the process dies, however it dies, so a SIGKILL never leaves a stale lock. The file's content (pid,
 * host, start time) only serves the error message, so it never stops a start: it is overwritten in
 * place and then cut to its length (cutting first, then writing, needed a free block: on a full ext4
 * the start failed with `pwrite failed: ENOSPC on <data-dir>/.lock`, found by an operator's
 * disk-full run, 2026-12-02; the freed block is not reusable until the journal commits), and on a
 * full disk a content that cannot be written is left as it was. Its file calls go through the Disk
 * seam (src/storage/disk.ts), so a test can give it a full disk that reuses no freed block
 * (test/broker/data-dir-lock.test.ts); the flock itself is the operating system's.
 */
import os from "node:os";
import path from "node:path";
import { tryLockExclusive } from "../../ffi/file.ts";
import { DataDirLockedError, isDiskFull } from "../domain/errors.ts";
import { disk } from "../storage/disk.ts";

export const LOCK_FILE = ".lock";

export class DataDirLock {
  private fd: number;
  readonly path: string;

  private constructor(fd: number, lockPath: string) {
    this.fd = fd;
    this.path = lockPath;
  }

  static acquire(dataDir: string): DataDirLock {
    const lockPath = path.join(dataDir, LOCK_FILE);
    let fd: number;
    try {
      fd = disk.openFile(lockPath, "createNew");
    } catch {
      fd = disk.openFile(lockPath, "readWrite");
    }
    try {
      if (!tryLockExclusive(fd, lockPath)) {
        const holder = disk.readTextFile(lockPath)?.trim() || "another process";
        throw new DataDirLockedError(dataDir, holder);
      }
      const text = new TextEncoder().encode(
        `pid ${process.pid} on ${os.hostname()}, since ${new Date().toISOString()}\n`,
      );
      try {
        disk.pwriteAll(fd, text, 0, text.length, 0, lockPath);
        disk.truncateFile(fd, text.length, lockPath);
      } catch (error) {
        if (!isDiskFull(error)) throw error;
      }
    } catch (error) {
      disk.closeFile(fd, lockPath);
      throw error;
    }
    return new DataDirLock(fd, lockPath);
  }

  release(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    disk.closeFile(fd, this.path);
  }
}
