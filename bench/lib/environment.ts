/**
 * What every benchmark shares: a measurement directory that refuses memory-backed file systems, and
 * a description of the machine printed with the results.
 *
 * Why refuse tmpfs: the predecessor once "fsynced" 32 MiB in 10 us on a tmpfs /tmp, i.e. 3.2 TB/s,
 * and printed a verdict about msync from it. A number measured on memory looks like any other number.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { crc32cImplementation } from "../../ffi/crc32c.ts";

const MEMORY_FILE_SYSTEMS: Record<number, string> = {
  16914836: "tmpfs",
  2240043254: "ramfs",
  1650812274: "sysfs",
};
const FILE_SYSTEM_NAMES: Record<number, string> = {
  61267: "ext2/3/4",
  1481003842: "xfs",
  2435016766: "btrfs",
};

/** A fresh directory for data under BOOBLIK_BENCH_DIR (default ./bench-data); refuses memory. */
export function measurementDirectory(name: string): { path: string; fileSystem: string; remove(): void } {
  const root = path.resolve(process.env.BOOBLIK_BENCH_DIR ?? "bench-data");
  fs.mkdirSync(root, { recursive: true });
  const type = fs.statfsSync(root).type;
  const memory = MEMORY_FILE_SYSTEMS[type];
  if (memory !== undefined) {
    console.error(`refusing to measure on ${memory} (${root}): that measures memory, not a disk.`);
    console.error("Set BOOBLIK_BENCH_DIR to a directory on a real disk.");
    process.exit(2);
  }
  const directory = fs.mkdtempSync(path.join(root, `${name}-`));
  return {
    path: directory,
    fileSystem: FILE_SYSTEM_NAMES[type] ?? `0x${type.toString(16)}`,
    remove: () => fs.rmSync(directory, { recursive: true, force: true }),
  };
}

export function describeMachine(fileSystem: string): string {
  const cpus = os.cpus();
  return [
    `machine: ${cpus.length} x ${cpus[0]?.model ?? "unknown cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM`,
    `kernel ${os.release()}, Bun ${Bun.version}, file system ${fileSystem}, CRC32C ${crc32cImplementation}`,
  ].join("\n");
}

/** The 1-minute load average, recorded with every figure. */
export function loadAverage(): number {
  return os.loadavg()[0]!;
}

/** The 1-, 5- and 15-minute load averages, as /proc/loadavg prints them (`1.52 1.31 1.20`). */
export function loadAverages(): string {
  return fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

export function formatRate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)} M`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)} K`;
  return perSecond.toFixed(0);
}

export function nowMs(): number {
  return performance.now();
}
