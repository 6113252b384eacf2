/**
 * The disk's own force latency, for comparison with the broker's (issue 13: produce→fetch latency
 * under `force` within 1 ms of the disk's fdatasync p99 measured in the same run). A loop of one
 * 100-byte `pwrite` at the end of a file, then `fdatasync`, on the calling thread through libc
 * (ffi/file.ts), as a log append under `force` does, for `seconds`. Its own process, so the broker
 * and the load generators are not running while it measures (the benchmark runs it between rows).
 * Usage: bun fdatasync.ts <directory> <seconds> [recordBytes=100]
 * Prints one JSON line: forces, p50/p99/p99.9/max in milliseconds.
 */
import fs from "node:fs";
import path from "node:path";
import { closeFile, datasyncNow, openFile, pwriteAll } from "../../ffi/file.ts";

const [directory, secondsText, recordBytesText] = process.argv.slice(2);
const seconds = Number(secondsText);
const recordBytes = Number(recordBytesText ?? 100);
if (directory === undefined || !(seconds > 0)) {
  console.error("usage: bun fdatasync.ts <directory> <seconds> [recordBytes=100]");
  process.exit(2);
}
const file = path.join(directory, `fdatasync-probe-${process.pid}`);
const fd = openFile(file, "createNew");
const record = new Uint8Array(recordBytes).fill(0x61);
const latenciesUs: number[] = [];
let position = 0;
try {
  const endNs = Bun.nanoseconds() + seconds * 1e9;
  while (Bun.nanoseconds() < endNs) {
    pwriteAll(fd, record, 0, recordBytes, position);
    position += recordBytes;
    const startNs = Bun.nanoseconds();
    datasyncNow(fd, file);
    latenciesUs.push((Bun.nanoseconds() - startNs) / 1000);
  }
} finally {
  closeFile(fd, file);
  fs.rmSync(file, { force: true });
}
latenciesUs.sort((a, b) => a - b);
const at = (q: number) =>
  latenciesUs[Math.min(latenciesUs.length - 1, Math.floor(q * latenciesUs.length))]! / 1000;
console.log(
  JSON.stringify({
    forces: latenciesUs.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    p999Ms: at(0.999),
    maxMs: latenciesUs.at(-1)! / 1000,
  }),
);
