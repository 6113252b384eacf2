/**
 * A Disk that fails on purpose, by seed (TigerBeetle's src/testing/storage.zig in spirit): it wraps
 * a real Disk (the files are real, so descriptors, mappings and recovery are the real ones) and, at
 * a configurable rate, turns a call into one of these faults, chosen by a seeded PRNG:
 *
 * | fault          | calls                                   | what happens                                   |
 * |----------------|-----------------------------------------|------------------------------------------------|
 * | eio-read       | preadFull                               | EIO, nothing read                              |
 * | eio-write      | pwriteAll, atomic file writes           | EIO, nothing written                           |
 * | short-write    | pwriteAll                               | a prefix (≥ 1 byte, not all) written, then EIO |
 * | enospc         | pwriteAll, open (create), growing       | ENOSPC; pwriteAll writes a prefix first (maybe |
 * |                | truncate, fsync, atomic file writes,    | empty), as a pwrite loop does when the disk    |
 * |                | availableBytes                          | fills; availableBytes reports 0 bytes free.    |
 * |                |                                         | Three times in ten the disk then stays full    |
 * |                |                                         | for 1-40 allocating calls                      |
 * | torn-write     | pwriteAll                               | a random prefix reaches the file, then "crash":|
 * |                |                                         | every later call but close throws CrashError   |
 * |                |                                         | until `restart()`                              |
 * | eio-fsync      | datasync(Now), fsyncDirectory(Async)    | EIO (and the sync is not done)                 |
 * | failed-rename  | atomic file writes                      | the temporary file is written and left, the    |
 * |                |                                         | target stays as it was, the rename fails (EIO) |
 * | eio-other      | open, fstat, stat, truncate, unlink,    | EIO                                            |
 * |                | readdir, read of a text file, statvfs   |                                                |
 * | eio-close      | closeFile                               | the descriptor is closed, then EIO is reported |
 *
 * The hint adviseWillNeed passes through untouched and draws nothing from the PRNG: it changes no
 * data and cannot fail, so a seed's faults hit the same calls with or without it.
 *
 * pwriteAll's contract is "all or a throw", so a short write is a prefix followed by an error, never
 * a short count. Every fault is logged with the call's number (`faultLog`), so a failing seed prints
 * what happened and when.
 *
 * Determinism: the async calls (datasync, fsyncDirectoryAsync, writeFileAtomically) do their work
 * synchronously and return a settled promise. Their real twins finish on Bun's thread pool in an
 * order that varies from run to run; here the order of calls, and so which call a seed's faults hit,
 * depends on the seed alone, so `BOOBLIK_SEED=<n>` replays a failure exactly.
 *
 * What this cannot do: drop the page cache. A "crash" (a torn write) leaves every byte written before
 * it readable, as a process crash does; losing unsynced writes is the power-loss harness's job. What
 * it does instead is bookkeeping: it knows which files hold writes (pwrite, ftruncate) that no
 * successful fdatasync of that file covered yet, and which created files' directory entries no
 * fsync of their directory covered yet (`unsynced()`, `stillUnsynced()`), so a test can check that
 * a force covered everything before it was acknowledged: what a power loss would take. Stores
 * through a mapping are invisible here; for the mapped path this covers its pwrites, truncations
 * and directory entries only.
 */
import fs from "node:fs";
import path from "node:path";
import { ioError } from "../../ffi/file.ts";
import type { Disk } from "../../src/storage/disk.ts";
import type { Random } from "./random.ts";

const EIO = 5;
const ENOSPC = 28;

export const FAULT_KINDS = [
  "eio-read",
  "eio-write",
  "short-write",
  "enospc",
  "torn-write",
  "eio-fsync",
  "failed-rename",
  "eio-other",
  "eio-close",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The simulated crash: thrown by a torn write and by every call after it until `restart()`. */
export class CrashError extends Error {
  constructor(call: number, what: string) {
    super(`simulated crash (call #${call}: ${what})`);
    this.name = "CrashError";
  }
}

export class FaultyDisk implements Disk {
  private readonly inner: Disk;
  private readonly random: Random;
  /** Probability that a call fails (0 = a healthy disk). */
  rate: number;
  /** While true every call goes through untouched and draws nothing from the PRNG (oracle reads). */
  paused = false;
  private crashedAtCall = 0;
  /** Allocating calls that still meet a full disk (see `full`). */
  private fullForCalls = 0;
  callCount = 0;
  faultCount = 0;
  /** Failed fsyncs of data or directories (the partition must stop after one: PostgreSQL's lesson). */
  fsyncFaultCount = 0;
  readonly faultLog: string[] = [];
  /** Orders writes and syncs for the bookkeeping of what a power loss would take. */
  private eventSeq = 0;
  /** File path → the last write to it that no fdatasync of it covered yet. */
  private readonly unsyncedData = new Map<string, number>();
  /** Created file path → its creation, while no fsync of its directory covered it. */
  private readonly unsyncedEntries = new Map<string, number>();

  constructor(inner: Disk, random: Random, rate: number) {
    this.inner = inner;
    this.random = random;
    this.rate = rate;
  }

  get crashed(): boolean {
    return this.crashedAtCall !== 0;
  }

  /** The process "restarted" after a crash: calls work again. */
  restart(): void {
    this.crashedAtCall = 0;
  }

  /**
   * What a power loss now could take: "data <path>" and "entry <path>" keys, each with the event
   * that made it unsynced. Compare later with `stillUnsynced`.
   */
  unsynced(): Map<string, number> {
    const snapshot = new Map<string, number>();
    for (const [file, seq] of this.unsyncedData) snapshot.set(`data ${file}`, seq);
    for (const [file, seq] of this.unsyncedEntries) snapshot.set(`entry ${file}`, seq);
    return snapshot;
  }

  /** The keys of `snapshot` that no sync has covered since (unlinked files count as covered). */
  stillUnsynced(snapshot: Map<string, number>): string[] {
    const left: string[] = [];
    for (const [key, seq] of snapshot) {
      const file = key.slice(key.indexOf(" ") + 1);
      const current = key.startsWith("data ") ? this.unsyncedData.get(file) : this.unsyncedEntries.get(file);
      if (current === seq) left.push(key);
    }
    return left;
  }

  private wrote(file: string | undefined): void {
    if (file !== undefined) this.unsyncedData.set(file, ++this.eventSeq);
  }

  /**
   * Records a pwrite unless it wrote only zeros: the mapped path's window of zeros ahead of its
   * stores changes nothing a power loss could take (a hole reads as zeros, and zeros end the log).
   */
  private wroteBytes(file: string | undefined, source: Uint8Array, start: number, end: number): void {
    for (let i = start; i < end; i++) {
      if (source[i] !== 0) {
        this.wrote(file);
        return;
      }
    }
  }

  private directorySynced(directory: string): void {
    for (const file of [...this.unsyncedEntries.keys()]) {
      if (path.dirname(file) === directory) this.unsyncedEntries.delete(file);
    }
  }

  /** Numbers the call, refuses it after a crash, and picks a fault among `kinds` at the rate. */
  private fault(call: string, where: string | undefined, kinds: readonly FaultKind[]): FaultKind | undefined {
    const number = ++this.callCount;
    if (this.paused) return undefined;
    if (this.crashedAtCall !== 0)
      throw new CrashError(number, `${call} after the crash at #${this.crashedAtCall}`);
    if (this.rate === 0 || this.random.next() >= this.rate) return undefined;
    const kind = kinds[Math.floor(this.random.next() * kinds.length)]!;
    this.faultCount++;
    if (kind === "enospc" && this.random.next() < 0.3) {
      // Sometimes the disk stays full for a while, as a real one does, rather than for one call.
      this.fullForCalls = this.random.int(1, 40);
      this.faultLog.push(`#${number} the disk is full for the next ${this.fullForCalls} allocating calls`);
    }
    if (kind === "eio-fsync" || (kind === "enospc" && call.includes("sync"))) this.fsyncFaultCount++;
    this.faultLog.push(`#${number} ${call}${where === undefined ? "" : ` ${path.basename(where)}`}: ${kind}`);
    return kind;
  }

  /**
   * A full disk: allocating calls (pwrite, create, growing truncate, atomic file writes, and
   * statvfs, which then reports nothing free) fail with ENOSPC until the period ends.
   */
  private full(call: string, where: string | undefined): boolean {
    if (this.fullForCalls === 0 || this.paused || this.crashedAtCall !== 0) return false;
    this.fullForCalls--;
    this.faultCount++;
    this.faultLog.push(
      `#${this.callCount + 1} ${call}${where === undefined ? "" : ` ${path.basename(where)}`}: disk full`,
    );
    return true;
  }

  private note(detail: string): void {
    this.faultLog[this.faultLog.length - 1] += ` (${detail})`;
  }

  private injected(call: string, errno: number, where: string | undefined) {
    return ioError(call, errno, where, `injected fault #${this.callCount}`);
  }

  openFile(filePath: string, mode: "read" | "readWrite" | "createNew"): number {
    if (mode === "createNew" && this.full("open", filePath)) throw this.injected("open", ENOSPC, filePath);
    const kind = this.fault("open", filePath, mode === "createNew" ? ["enospc", "eio-other"] : ["eio-other"]);
    if (kind !== undefined) throw this.injected("open", kind === "enospc" ? ENOSPC : EIO, filePath);
    const fd = this.inner.openFile(filePath, mode);
    if (mode === "createNew") this.unsyncedEntries.set(filePath, ++this.eventSeq);
    return fd;
  }

  closeFile(fd: number, filePath?: string): void {
    // Closes always reach the file, also after a crash: the test must be able to release everything.
    const number = ++this.callCount;
    this.inner.closeFile(fd, filePath);
    if (this.paused || this.crashedAtCall !== 0 || this.rate === 0) return;
    if (this.random.next() >= this.rate / 4) return; // rarer: a failing close is rare and says little
    this.faultCount++;
    this.faultLog.push(
      `#${number} close ${filePath === undefined ? fd : path.basename(filePath)}: eio-close`,
    );
    throw this.injected("close", EIO, filePath);
  }

  fileSize(fd: number, filePath?: string): number {
    if (this.fault("fstat", filePath, ["eio-other"]) !== undefined)
      throw this.injected("fstat", EIO, filePath);
    return this.inner.fileSize(fd, filePath);
  }

  fileModifiedMs(fd: number, filePath?: string): number {
    if (this.fault("fstat", filePath, ["eio-other"]) !== undefined)
      throw this.injected("fstat", EIO, filePath);
    return this.inner.fileModifiedMs(fd, filePath);
  }

  statFile(filePath: string): { sizeBytes: number; modifiedMs: number } {
    if (this.fault("stat", filePath, ["eio-other"]) !== undefined) throw this.injected("stat", EIO, filePath);
    return this.inner.statFile(filePath);
  }

  pwriteAll(
    fd: number,
    source: Uint8Array,
    start: number,
    end: number,
    position: number,
    filePath?: string,
  ): void {
    const kind = this.fault("pwrite", filePath, ["eio-write", "short-write", "enospc", "torn-write"]);
    if (kind === undefined) {
      this.inner.pwriteAll(fd, source, start, end, position, filePath);
      this.wroteBytes(filePath, source, start, end);
      return;
    }
    const length = end - start;
    if (kind === "eio-write" || length === 0) throw this.injected("pwrite", EIO, filePath);
    // short-write: at least one byte and not all; enospc and torn-write: any proper prefix.
    const prefix =
      kind === "short-write"
        ? length === 1
          ? 0
          : this.random.int(1, length - 1)
        : this.random.int(0, length - 1);
    this.note(`${prefix} of ${length} bytes at ${position} reached the file`);
    if (prefix > 0) {
      this.inner.pwriteAll(fd, source, start, start + prefix, position, filePath);
      this.wroteBytes(filePath, source, start, start + prefix);
    }
    if (kind === "torn-write") {
      this.crashedAtCall = this.callCount;
      throw new CrashError(this.callCount, `torn pwrite of ${filePath ?? fd}`);
    }
    throw this.injected("pwrite", kind === "enospc" ? ENOSPC : EIO, filePath);
  }

  preadFull(
    fd: number,
    target: Uint8Array,
    start: number,
    length: number,
    position: number,
    filePath?: string,
  ): number {
    if (this.fault("pread", filePath, ["eio-read"]) !== undefined)
      throw this.injected("pread", EIO, filePath);
    return this.inner.preadFull(fd, target, start, length, position, filePath);
  }

  truncateFile(fd: number, sizeBytes: number, filePath?: string): void {
    const growing = sizeBytes > this.inner.fileSize(fd, filePath);
    if (growing && this.full("ftruncate", filePath)) throw this.injected("ftruncate", ENOSPC, filePath);
    const kind = this.fault("ftruncate", filePath, growing ? ["enospc", "eio-other"] : ["eio-other"]);
    if (kind !== undefined) throw this.injected("ftruncate", kind === "enospc" ? ENOSPC : EIO, filePath);
    this.inner.truncateFile(fd, sizeBytes, filePath);
    // A cut matters (lost, it could bring cut bytes back); growing only adds a hole of zeros.
    if (!growing) this.wrote(filePath);
  }

  adviseWillNeed(fd: number, position: number, length: number): void {
    this.inner.adviseWillNeed(fd, position, length);
  }

  availableBytes(fd: number, filePath?: string): number {
    if (this.full("fstatvfs", filePath)) return 0;
    const kind = this.fault("fstatvfs", filePath, ["enospc", "eio-other"]);
    if (kind === "enospc") return 0;
    if (kind !== undefined) throw this.injected("fstatvfs", EIO, filePath);
    return this.inner.availableBytes(fd, filePath);
  }

  datasync(fd: number, filePath?: string): Promise<void> {
    try {
      this.datasyncNow(fd, filePath);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  datasyncNow(fd: number, filePath?: string): void {
    const kind = this.fault("fdatasync", filePath, ["eio-fsync", "enospc"]);
    if (kind !== undefined) throw this.injected("fdatasync", kind === "enospc" ? ENOSPC : EIO, filePath);
    this.inner.datasyncNow(fd, filePath);
    if (filePath !== undefined) this.unsyncedData.delete(filePath);
  }

  fsyncDirectory(directory: string): void {
    const kind = this.fault("fsync(dir)", directory, ["eio-fsync"]);
    if (kind !== undefined) throw this.injected("fsync(dir)", EIO, directory);
    this.inner.fsyncDirectory(directory);
    this.directorySynced(directory);
  }

  fsyncDirectoryAsync(directory: string): Promise<void> {
    try {
      this.fsyncDirectory(directory);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  unlinkFile(filePath: string): void {
    if (this.fault("unlink", filePath, ["eio-other"]) !== undefined)
      throw this.injected("unlink", EIO, filePath);
    this.inner.unlinkFile(filePath);
    this.unsyncedData.delete(filePath);
    this.unsyncedEntries.delete(filePath);
  }

  listDirectory(directory: string): string[] {
    if (this.fault("readdir", directory, ["eio-other"]) !== undefined)
      throw this.injected("readdir", EIO, directory);
    // Sorted: the real order depends on the file system's hash, and the seed must decide alone.
    return this.inner.listDirectory(directory).sort();
  }

  makeDirectory(directory: string): void {
    if (this.fault("mkdir", directory, ["eio-other"]) !== undefined)
      throw this.injected("mkdir", EIO, directory);
    this.inner.makeDirectory(directory);
  }

  removeDirectoryTree(directory: string): void {
    if (this.fault("rm", directory, ["eio-other"]) !== undefined) throw this.injected("rm", EIO, directory);
    this.inner.removeDirectoryTree(directory);
  }

  readTextFile(filePath: string): string | undefined {
    if (this.fault("read", filePath, ["eio-read"]) !== undefined) throw this.injected("read", EIO, filePath);
    return this.inner.readTextFile(filePath);
  }

  writeFileAtomicallyNow(filePath: string, bytes: Uint8Array | string): void {
    if (this.full("atomic write", filePath)) throw this.injected("write", ENOSPC, `${filePath}.tmp`);
    const kind = this.fault("atomic write", filePath, ["eio-write", "enospc", "failed-rename"]);
    if (kind === undefined) {
      // The real one fsyncs the file, renames it and fsyncs the directory.
      this.inner.writeFileAtomicallyNow(filePath, bytes);
      this.directorySynced(path.dirname(filePath));
      return;
    }
    if (kind === "failed-rename") {
      // What a rename that fails leaves: the new content complete in the temporary file.
      fs.writeFileSync(`${filePath}.tmp`, bytes);
      throw this.injected("rename", EIO, filePath);
    }
    throw this.injected("write", kind === "enospc" ? ENOSPC : EIO, `${filePath}.tmp`);
  }

  writeFileAtomically(
    filePath: string,
    bytes: Uint8Array | string,
    stillWanted: () => boolean,
  ): Promise<boolean> {
    try {
      if (!stillWanted()) return Promise.resolve(false);
      this.writeFileAtomicallyNow(filePath, bytes);
      return Promise.resolve(true);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
