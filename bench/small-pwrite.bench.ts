/**
 * A small `pwrite` that grows a file against one over zeros written ahead, without a force: why the
 * `file` writer writes no zeros for a log that is not forced (src/storage/file-segment-writer.ts,
 * docs/benchmarks.md "Zeros ahead of the file writer").
 *
 *   BOOBLIK_BENCH_DIR=<disk> bun bench/small-pwrite.bench.ts [--bytes=180] [--seconds=2] [--rounds=3]
 *
 * Each run appends `--bytes` per `pwrite` (through ffi/file.ts, as the writer does) to a fresh file
 * for `--seconds`; `overwrite` first writes zeros ahead as the writer does (from 64 KiB past the
 * append's end, doubling per crossing up to 1 MiB, page-rounded), `grow` writes past the end of the
 * file. The two alternate, `--rounds` times each; median and range of µs per `pwrite` (the zeros'
 * own pwrites included, as the writer pays them). One process, no force: a system-call cost, not a
 * disk one. Refuses tmpfs.
 */
import path from "node:path";
import { closeFile, openFile, pwriteAll } from "../ffi/file.ts";
import { FILE_WINDOW_BYTES_MAX, FILE_WINDOW_BYTES_MIN } from "../src/domain/limits.ts";
import { roundUpToPage } from "../src/storage/zeros.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage: "bun bench/small-pwrite.bench.ts [--bytes=180] [--seconds=2] [--rounds=3]",
  options: { bytes: "180", seconds: "2", rounds: "3" },
});
const RECORD_BYTES = args.number("bytes");
const SECONDS = args.number("seconds");
const ROUNDS = args.number("rounds");

const directory = measurementDirectory("small-pwrite");
const record = new Uint8Array(RECORD_BYTES).fill(7);
// The writer's window, rounded as it rounds it, fits in this (roundUpToPage adds under a page).
const zeros = new Uint8Array(roundUpToPage(FILE_WINDOW_BYTES_MAX + 1));

/** µs per append of one run. */
function run(mode: "grow" | "overwrite", index: number): number {
  const file = path.join(directory.path, `${mode}-${index}.log`);
  const fd = openFile(file, "createNew");
  let end = 0;
  let written = 0;
  let windowBytes = FILE_WINDOW_BYTES_MIN;
  let appends = 0;
  const startMs = performance.now();
  try {
    while (performance.now() - startMs < SECONDS * 1000) {
      for (let i = 0; i < 1000; i++) {
        const appendEnd = end + RECORD_BYTES;
        if (mode === "overwrite" && appendEnd > written) {
          const target = roundUpToPage(appendEnd + windowBytes);
          pwriteAll(fd, zeros, 0, target - appendEnd, appendEnd, file);
          written = target;
          windowBytes = Math.min(FILE_WINDOW_BYTES_MAX, windowBytes * 2);
        }
        pwriteAll(fd, record, 0, RECORD_BYTES, end, file);
        end = appendEnd;
        appends++;
      }
    }
  } finally {
    closeFile(fd, file);
  }
  return ((performance.now() - startMs) * 1000) / appends;
}

console.log(describeMachine(directory.fileSystem));
console.log(
  `${RECORD_BYTES} B per pwrite, no force, ${SECONDS} s per run, ${ROUNDS} rounds, grow and overwrite alternated`,
);
const results = { grow: [] as number[], overwrite: [] as number[] };
const loads: number[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0
      ? (["grow", "overwrite"] as const)
      : (["overwrite", "grow"] as const)) {
      loads.push(loadAverage());
      results[mode].push(run(mode, round));
    }
  }
} finally {
  directory.remove();
}
console.log(`load avg ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`);
for (const mode of ["grow", "overwrite"] as const) {
  console.log(`${mode}: ${medianRange(results[mode], 2)} µs per pwrite`);
}
