/**
 * The data directory lock on a full disk: a start must never be refused because the lock file's
 * content (pid, host, time) cannot be written, since that content only serves the "locked" message.
 *
 * An operator's disk-full run (2026-12-02) had every start refused with `pwrite failed: ENOSPC on
 * <data-dir>/.lock` on a full ext4: the content was cut to 0 bytes first and then written, and ext4
 * does not hand the freed block out again until its journal commits. Whether a real ext4 refuses
 * depends on when its journal commits, so test/server/disk-full.test.ts (a real full ext4 and XFS)
 * does not reproduce it reliably. Here the disk is a real directory seen through the Disk seam as a
 * full disk that reuses no freed block: a write may land where the file already has bytes, never
 * past them. That is the condition the old sequence failed under, every time.
 */
import { afterEach, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { ioError } from "../../ffi/file.ts";
import { DataDirLock, LOCK_FILE } from "../../src/broker/data-dir-lock.ts";
import { DataDirLockedError } from "../../src/domain/errors.ts";
import { type Disk, realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ENOSPC = 28;

/**
 * The real disk, full: a pwrite that would end past a file's size when it was opened, or past its
 * size after a cut, fails with ENOSPC (the blocks a cut frees are not reusable yet). Writes within
 * the bytes a file already has succeed.
 */
function fullDisk(): Disk {
  const allocatedBytes = new Map<number, number>();
  return {
    ...realDisk,
    openFile(filePath, mode) {
      const fd = realDisk.openFile(filePath, mode);
      allocatedBytes.set(fd, realDisk.fileSize(fd, filePath));
      return fd;
    },
    pwriteAll(fd, source, start, end, position, filePath) {
      if (position + (end - start) > (allocatedBytes.get(fd) ?? 0))
        throw ioError("pwrite", ENOSPC, filePath, "the disk is full");
      realDisk.pwriteAll(fd, source, start, end, position, filePath);
    },
    truncateFile(fd, sizeBytes, filePath) {
      realDisk.truncateFile(fd, sizeBytes, filePath);
      allocatedBytes.set(fd, Math.min(allocatedBytes.get(fd) ?? 0, sizeBytes));
    },
    closeFile(fd, filePath) {
      allocatedBytes.delete(fd);
      realDisk.closeFile(fd, filePath);
    },
  };
}

let restoreDisk: (() => void) | undefined;
afterEach(() => {
  restoreDisk?.();
  restoreDisk = undefined;
});

test("a full disk does not stop the lock: its old content is overwritten in place when it fits, left as it was when not", () => {
  using dir = tempDir("lock-full");
  const lockPath = path.join(dir.path, LOCK_FILE);
  // A previous broker's content, longer than this one's: it is overwritten in place and cut.
  fs.writeFileSync(
    lockPath,
    `pid 1 on ${"a-long-host-name.".repeat(8)}example, since 2026-12-02T00:00:00.000Z\n`,
  );
  restoreDisk = useDisk(fullDisk());
  const lock = DataDirLock.acquire(dir.path);
  try {
    expect(fs.readFileSync(lockPath, "utf8")).toStartWith(`pid ${process.pid} on `);
    // The lock holds: a second acquire is refused, naming this holder.
    expect(() => DataDirLock.acquire(dir.path)).toThrow(DataDirLockedError);
    expect(() => DataDirLock.acquire(dir.path)).toThrow(`pid ${process.pid} on `);
  } finally {
    lock.release();
  }

  // A shorter old content: the new one does not fit, and the old one stays; the lock is taken.
  fs.writeFileSync(lockPath, "pid 1\n");
  const second = DataDirLock.acquire(dir.path);
  try {
    expect(fs.readFileSync(lockPath, "utf8")).toBe("pid 1\n");
    expect(() => DataDirLock.acquire(dir.path)).toThrow(DataDirLockedError);
  } finally {
    second.release();
  }
});
