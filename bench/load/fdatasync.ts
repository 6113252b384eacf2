/**
 * The disk's own force latency, for comparison with the broker's (issue 13: produce→fetch latency
 * under `force` within 1 ms of the disk's fdatasync p99 measured in the same run). Its own process,
 * so the broker and the load generators are not running while it measures (the benchmark runs it
 * between rows). Each force is one `pwrite` at the end of a file (the file grows, as a segment
 * does; `overwrite` below is the exception), then one `fdatasync`, on the calling thread through
 * libc (ffi/file.ts), as a log append under `force` does on the event loop
 * (src/broker/partition.ts). The figures are the `fdatasync` call's own durations (the `pwrite` is
 * not in them).
 *
 * Two shapes:
 * - `intervalUs` 0 (the default): a tight loop of `bytesPerForce` each (the old probe: 100 B, about
 *   12,000 forces/s). A 4 KiB block then holds 40 forces, so most fdatasyncs allocate no block.
 * - `intervalUs` > 0: paced like the latency benchmark's producer: force `i` is due at start +
 *   i × intervalUs; the probe sleeps until then (`Atomics.wait`, a futex sleep: no spinning), and a
 *   force that starts late writes every due slot's bytes in one `pwrite`, as the broker writes every
 *   batch that arrived in an event-loop turn in one. With `bytesPerForce` the stored size of the
 *   latency run's batch (5,519 B for 50 records of 100 B) and 1,000 µs, this is what the broker's
 *   disk does at 50 K records/s under `force`: every force allocates one or two new blocks, and the
 *   disk idles between forces.
 *
 * The fifth argument, `overwrite` (default `append`), first writes PREWRITTEN_BYTES of zeros to the
 * file and forces them, then writes the forces over them from the start: the file's size never
 * changes, so an fdatasync has no size to record in the file system's journal. This is what the
 * broker's file writer does since it writes zeros ahead of itself (src/storage/file-segment-writer.ts;
 * real zeros, not `fallocate`, whose unwritten extents are converted, and journaled, on the first
 * write): docs/benchmarks.md, "Zeros ahead of the file writer".
 *
 * Usage: bun fdatasync.ts <directory> <seconds> [bytesPerForce=100] [intervalUs=0] [append|overwrite]
 * Prints one JSON line: forces, mode, bytesPerForce, intervalUs, late (forces that started over
 * intervalUs after their due time, paced only), p50/p99/p99.9/max of fdatasync in milliseconds.
 */
import fs from "node:fs";
import path from "node:path";
import { closeFile, datasyncNow, openFile, pwriteAll } from "../../ffi/file.ts";

const [directory, secondsText, bytesText, intervalText, modeText] = process.argv.slice(2);
const seconds = Number(secondsText);
const bytesPerForce = Number(bytesText ?? 100);
const intervalUs = Number(intervalText ?? 0);
const mode = modeText ?? "append";
if (
  directory === undefined ||
  !(seconds > 0) ||
  !(bytesPerForce > 0) ||
  !(intervalUs >= 0) ||
  (mode !== "append" && mode !== "overwrite")
) {
  console.error(
    "usage: bun fdatasync.ts <directory> <seconds> [bytesPerForce=100] [intervalUs=0] [append|overwrite]",
  );
  process.exit(2);
}
/** Zeros written (and forced) before an `overwrite` run: more than any run of a few seconds overwrites. */
const PREWRITTEN_BYTES = 512 * 1024 * 1024;
/** A late paced force writes the due slots' bytes in one pwrite; beyond this many slots it writes this many. */
const MAX_SLOTS_PER_FORCE = 64;
const file = path.join(directory, `fdatasync-probe-${process.pid}`);
const fd = openFile(file, "createNew");
const bytes = new Uint8Array(bytesPerForce * (intervalUs > 0 ? MAX_SLOTS_PER_FORCE : 1)).fill(0x61);
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const latenciesUs: number[] = [];
let position = 0;
let late = 0;
try {
  if (mode === "overwrite") {
    const zeros = new Uint8Array(1024 * 1024);
    for (let at = 0; at < PREWRITTEN_BYTES; at += zeros.length)
      pwriteAll(fd, zeros, 0, zeros.length, at, file);
    datasyncNow(fd, file);
  }
  const startNs = Bun.nanoseconds();
  const endNs = startNs + seconds * 1e9;
  let slot = 0;
  while (Bun.nanoseconds() < endNs) {
    let writeBytes = bytesPerForce;
    if (intervalUs > 0) {
      const dueNs = startNs + slot * intervalUs * 1000;
      const nowNs = Bun.nanoseconds();
      if (nowNs < dueNs) {
        Atomics.wait(sleeper, 0, 0, (dueNs - nowNs) / 1e6);
        continue;
      }
      if (nowNs - dueNs > intervalUs * 1000) late++;
      // Every slot due by now rides this force, as batches that arrived during a force ride the next.
      const dueSlots = Math.min(MAX_SLOTS_PER_FORCE, Math.floor((nowNs - dueNs) / (intervalUs * 1000)) + 1);
      slot += dueSlots;
      writeBytes = bytesPerForce * dueSlots;
    }
    if (position + writeBytes > PREWRITTEN_BYTES && mode === "overwrite") {
      // Thrown, not process.exit: the `finally` below removes the probe file.
      throw new Error(`overwrote all ${PREWRITTEN_BYTES} prewritten bytes; run for fewer seconds`);
    }
    pwriteAll(fd, bytes, 0, writeBytes, position);
    position += writeBytes;
    const syncStartNs = Bun.nanoseconds();
    datasyncNow(fd, file);
    latenciesUs.push((Bun.nanoseconds() - syncStartNs) / 1000);
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
    mode,
    bytesPerForce,
    intervalUs,
    late,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    p999Ms: at(0.999),
    maxMs: latenciesUs.at(-1)! / 1000,
  }),
);
