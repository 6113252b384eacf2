/**
 * The FFI file layer turns every failure into a typed IoError naming the call, the errno name and the
 * path, and a mapping detaches its views before unmapping (a view over unmapped memory would kill the
 * process), never leaking the mapping or its descriptor.
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import {
  availableBytes,
  closeFile,
  datasyncNow,
  openFile,
  preadFull,
  pwriteAll,
  truncateFile,
} from "../../ffi/file.ts";
import { PAGE_BYTES } from "../../ffi/libc.ts";
import { Mapping } from "../../ffi/mapping.ts";
import { IoError } from "../../src/domain/errors.ts";
import { mappingsContaining } from "../helpers/proc.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";
import { tempDir } from "../helpers/temp-dir.ts";

test("failures are IoErrors with the call, errno name and path", () => {
  using dir = tempDir();
  const missing = dir.file("missing");
  expect(() => openFile(missing, "read")).toThrow(IoError);
  try {
    openFile(missing, "read");
  } catch (error) {
    expect(error).toMatchObject({ call: "open", errnoName: "ENOENT", path: missing, code: "STORAGE_ERROR" });
    expect((error as Error).message).toBe(`open failed: ENOENT on ${missing}`);
  }
  const filePath = dir.file("data");
  const fd = openFile(filePath, "createNew");
  expect(() => openFile(filePath, "createNew")).toThrow(/EEXIST/);
  closeFile(fd, filePath);
  const readOnly = openFile(filePath, "read");
  try {
    pwriteAll(readOnly, new Uint8Array(4), 0, 4, 0, filePath);
    throw new Error("expected EBADF");
  } catch (error) {
    expect(error).toMatchObject({ call: "pwrite", errnoName: "EBADF", errno: 9, path: filePath });
  } finally {
    closeFile(readOnly, filePath);
  }
  expect(() => datasyncNow(-1, "nowhere")).toThrow(/fdatasync failed: EBADF on nowhere/);
  expect(() => truncateFile(-1, 0)).toThrow(/ftruncate failed: EBADF/);
});

test("positional writes and reads never use a file cursor", () => {
  using dir = tempDir();
  const filePath = dir.file("data");
  const fd = openFile(filePath, "createNew");
  try {
    pwriteAll(fd, new TextEncoder().encode("__world"), 2, 7, 10, filePath);
    pwriteAll(fd, new TextEncoder().encode("hello"), 0, 5, 4, filePath);
    const target = new Uint8Array(20);
    expect(preadFull(fd, target, 3, 15, 0, filePath)).toBe(15);
    expect(Buffer.from(target.subarray(3 + 4, 3 + 15)).toString("latin1")).toBe("hello\0world");
    expect(preadFull(fd, target, 0, 10, 100, filePath)).toBe(0); // past the end
  } finally {
    closeFile(fd, filePath);
  }
});

test("a closed mapping detaches its views and releases mapping and descriptor", () => {
  using dir = tempDir();
  const filePath = dir.file("mapped");
  const fd = openFile(filePath, "createNew");
  truncateFile(fd, 4 * PAGE_BYTES, filePath);
  const mapping = Mapping.mapShared(filePath, fd, 4 * PAGE_BYTES);
  const view = mapping.bytes;
  view.set(new TextEncoder().encode("through the mapping"), 100);
  mapping.msync(0, 200, true);
  expect(fs.readFileSync(filePath).subarray(100, 119).toString()).toBe("through the mapping");
  mapping.close();
  expect(mapping.closed).toBe(true);
  // The old view is detached, not dangling: reading it cannot touch unmapped memory.
  expect(view.length).toBe(0);
  expect(view[0]).toBeUndefined();
  expect(mapping.bytes.length).toBe(0);
  expect(() => fs.fstatSync(fd)).toThrow(/EBADF/);
  expect(mappingsContaining(filePath)).toBe(0);
  mapping.close(); // idempotent
});

test("mmap failure closes the descriptor it was given and reports the call", () => {
  using dir = tempDir();
  const filePath = dir.file("readonly");
  fs.writeFileSync(filePath, new Uint8Array(PAGE_BYTES));
  const fd = openFile(filePath, "read"); // PROT_WRITE + MAP_SHARED on a read-only descriptor: EACCES
  expect(() => Mapping.mapShared(filePath, fd, PAGE_BYTES)).toThrow(/mmap failed: EACCES/);
  expect(() => fs.fstatSync(fd)).toThrow(/EBADF/);
});

test.skipIf(smallFileSystemUnavailable !== undefined)(
  "availableBytes (fstatvfs through FFI) agrees with node's statfs, and sees a file take space",
  () => {
    // A tmpfs of our own: nobody else writes there between the two readings.
    using small = mountSmallFileSystem(4 * 1024 * 1024);
    const filePath = path.join(small.path, "data");
    const fd = openFile(filePath, "createNew");
    try {
      const statfsBytes = () => {
        const stat = fs.statfsSync(small.path);
        return stat.bavail * stat.bsize;
      };
      const before = availableBytes(fd, filePath);
      expect(before).toBe(statfsBytes());
      expect(before).toBeGreaterThan(3 * 1024 * 1024);
      pwriteAll(fd, new Uint8Array(1024 * 1024).fill(1), 0, 1024 * 1024, 0, filePath);
      expect(availableBytes(fd, filePath)).toBe(statfsBytes());
      expect(availableBytes(fd, filePath)).toBe(before - 1024 * 1024);
    } finally {
      closeFile(fd, filePath);
    }
  },
);
