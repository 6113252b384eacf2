/**
 * The data directory lock: one broker per directory. A second process (or a second Broker in this
 * one) opening the same directory is refused with DataDirLockedError naming the holder, instead of
 * two writers silently interleaving appends into the same segments.
 *
 * `<dataDir>/.lock` holds an flock(LOCK_EX) for as long as the broker runs; the kernel drops it when
 * the process dies, however it dies, so a SIGKILL never leaves a stale lock. The file's content (pid,
 * host, start time) only serves the error message.
 */
import os from "node:os";
import path from "node:path";
import {
  closeFile,
  openFile,
  pwriteAll,
  readTextFile,
  truncateFile,
  tryLockExclusive,
} from "../../ffi/file.ts";
import { DataDirLockedError } from "../domain/errors.ts";

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
      fd = openFile(lockPath, "createNew");
    } catch {
      fd = openFile(lockPath, "readWrite");
    }
    try {
      if (!tryLockExclusive(fd, lockPath)) {
        const holder = readTextFile(lockPath)?.trim() || "another process";
        throw new DataDirLockedError(dataDir, holder);
      }
      const text = new TextEncoder().encode(
        `pid ${process.pid} on ${os.hostname()}, since ${new Date().toISOString()}\n`,
      );
      truncateFile(fd, 0, lockPath);
      pwriteAll(fd, text, 0, text.length, 0, lockPath);
    } catch (error) {
      closeFile(fd, lockPath);
      throw error;
    }
    return new DataDirLock(fd, lockPath);
  }

  release(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    closeFile(fd, this.path);
  }
}
