/**
 * Storage benchmarks: append (both write paths × record size × batch size × force policy), index
 * lookup, recovery speed, CRC32C, reading a long history under the read-descriptor bound. Not part
 * of `bun test`.
 *
 *   bun bench/storage.bench.ts [append|lookup|recovery|crc|history|all] [--seconds=N] [--gib=N]
 *     [--policies=none,force] [--records=100,1024] [--batches=1,100,1000]   (append rows to run)
 *
 * Every figure names the write path, durability policy, record size and batch size it was measured
 * with. Appends run on fresh segments that roll at the default segment size, sustained for
 * `--seconds` per configuration, and report the mean and the worst whole second. Each append does
 * the whole path of a record (format 2): encode a RecordBatch v2 of the batch's records (as a
 * producer does: varints, batch CRC32C), validate it as the broker does for PRODUCE (`validateBatch`:
 * batch CRC, every record walked), and append it (copy, stamp, frame CRC32C, write). Data goes to
 * BOOBLIK_BENCH_DIR (default ./bench-data), never to tmpfs.
 */

import fs from "node:fs";
import path from "node:path";
import { bench, do_not_optimize, run, summary } from "mitata";
import { crc32cClearsVectorState, crc32cImplementation, crc32cIsal, crc32cPortable } from "../ffi/crc32c.ts";
import type { Offset } from "../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES, SEGMENT_BYTES_DEFAULT } from "../src/domain/limits.ts";
import { forEachRecord, RecordBatchWriter, validateBatch } from "../src/record/batch.ts";
import { PartitionLog } from "../src/storage/partition-log.ts";
import { sealedReadDescriptors } from "../src/storage/read-descriptors.ts";
import { Segment, segmentConfig } from "../src/storage/segment.ts";
import { segmentFileName } from "../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../src/storage/segment-writer.ts";
import { type IndexEntry, SparseIndex } from "../src/storage/sparse-index.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, measurementDirectory, nowMs } from "./lib/environment.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/storage.bench.ts [all|append|stages|lookup|recovery|crc|history] [--seconds=3] [--gib=1] " +
    "[--policies=none,force] [--records=100,1024] [--batches=1,100,1000] [--encode=yes|no]",
  sections: ["all", "append", "stages", "lookup", "recovery", "crc", "history"],
  options: {
    seconds: "3",
    gib: "1",
    policies: "none,force",
    records: "100,1024",
    batches: "1,100,1000",
    encode: "yes",
  },
});
const section = args.section;
const SECONDS = args.number("seconds");
const RECOVERY_GIB = args.number("gib");
/** Which append rows run: a subset keeps a before/after comparison of a few rows short. */
const APPEND_FORCES = args
  .text("policies")
  .split(",")
  .map((policy) => {
    if (policy !== "none" && policy !== "force") {
      console.error(`--policies takes none and/or force, got ${policy}`);
      process.exit(2);
    }
    return policy === "force";
  });
const positiveList = (name: "records" | "batches"): number[] =>
  args
    .text(name)
    .split(",")
    .map((item) => {
      const value = Number(item);
      if (!Number.isInteger(value) || value < 1) {
        console.error(`--${name} takes positive integers, got ${item}`);
        process.exit(2);
      }
      return value;
    });
const APPEND_RECORD_BYTES = positiveList("records");
const APPEND_BATCH_RECORDS = positiveList("batches");
/**
 * `yes`: each append encodes its batch first (the producer's work). `no`: batches encoded before the
 * clock starts are validated and appended (what the broker does per PRODUCE; format 1's rows
 * measured this part: verify every record's CRC, append).
 */
const APPEND_ENCODES = args.text("encode") !== "no";

/** Values of `recordBytes` random bytes, `batchRecords` per batch, `count` batches. */
function randomValues(recordBytes: number, batchRecords: number, count: number): Uint8Array[][] {
  const sets: Uint8Array[][] = [];
  for (let b = 0; b < count; b++) {
    const values: Uint8Array[] = [];
    for (let r = 0; r < batchRecords; r++) values.push(crypto.getRandomValues(new Uint8Array(recordBytes)));
    sets.push(values);
  }
  return sets;
}

/** Whole bare batches of random values (null keys), for loops that do not measure encoding. */
function randomBatches(recordBytes: number, batchRecords: number, count: number): Uint8Array[] {
  const writer = new RecordBatchWriter();
  return randomValues(recordBytes, batchRecords, count).map((values) => {
    writer.begin();
    const timestamp = Date.now();
    for (const value of values) writer.add({ key: null, value, timestamp });
    return writer.finish().slice();
  });
}

interface AppendResult {
  recordsPerSecond: number;
  worstSecond: number | undefined;
  megabytesPerSecond: number;
  forces: number;
}

async function appendRun(
  directory: string,
  mode: WriteMode,
  recordBytes: number,
  batchRecords: number,
  forceEachBatch: boolean,
): Promise<AppendResult> {
  const config = segmentConfig({ writeMode: mode, segmentBytes: SEGMENT_BYTES_DEFAULT });
  const valueSets = randomValues(recordBytes, batchRecords, 16);
  const writer = new RecordBatchWriter();
  const encoded = randomBatches(recordBytes, batchRecords, 16);
  const batchBytes = ENTRY_HEADER_BYTES + encoded[0]!.length;
  let storedBytes = 0;
  let segment = Segment.create(directory, 0 as Offset, config);
  const sealed: Segment[] = [];
  let records = 0;
  let forces = 0;
  const start = nowMs();
  const end = start + SECONDS * 1000;
  const perSecond: number[] = [];
  let secondStart = start;
  let secondRecords = 0;
  let i = 0;
  for (;;) {
    if (!segment.hasRoomFor(batchBytes)) {
      segment.seal();
      sealed.push(segment);
      segment = Segment.create(directory, segment.nextOffset, config);
    }
    // The producer's part: encode the batch (varints, batch CRC32C).
    let batch: Uint8Array;
    if (APPEND_ENCODES) {
      const values = valueSets[i++ & 15]!;
      writer.begin();
      const timestamp = Date.now();
      for (let r = 0; r < batchRecords; r++) writer.add({ key: null, value: values[r]!, timestamp });
      batch = writer.finish();
    } else {
      batch = encoded[i++ & 15]!;
    }
    // The broker's part: validate as for PRODUCE, then append (stamp, frame CRC32C, write).
    validateBatch(batch, 0, batch.length);
    segment.append(batch);
    storedBytes += ENTRY_HEADER_BYTES + batch.length;
    records += batchRecords;
    secondRecords += batchRecords;
    if (forceEachBatch) {
      await segment.force();
      forces++;
    }
    // Checking the clock costs ~30 ns; do it every few batches when batches are tiny.
    if (forceEachBatch || batchRecords >= 100 || (i & 63) === 0) {
      const now = nowMs();
      if (now - secondStart >= 1000) {
        perSecond.push((secondRecords * 1000) / (now - secondStart));
        secondStart = now;
        secondRecords = 0;
      }
      if (now >= end) break;
    }
  }
  const elapsedSeconds = (nowMs() - start) / 1000;
  segment.close();
  for (const old of sealed) old.close();
  for (const name of fs.readdirSync(directory)) fs.unlinkSync(path.join(directory, name));
  return {
    recordsPerSecond: records / elapsedSeconds,
    worstSecond: perSecond.length >= 2 ? Math.min(...perSecond) : undefined,
    megabytesPerSecond: storedBytes / elapsedSeconds / 1e6,
    forces,
  };
}

async function appendSection(directory: string): Promise<void> {
  console.log(
    `\n## append (${SECONDS} s per run, segments of ${SEGMENT_BYTES_DEFAULT / 2 ** 20} MiB rolling; per batch: ` +
      `${APPEND_ENCODES ? "encode, " : ""}validate, append; CRC32C ${crc32cImplementation}${crc32cClearsVectorState ? " clearing the vector state" : ""})\n`,
  );
  console.log(
    "Each row runs mapped, file, mapped, file in turn and reports the better of the two runs of each",
  );
  console.log(
    "path (machine noise only ever slows a run down), the worst whole second of that run, and the ratio.\n",
  );
  console.log(
    "| policy | record B | batch | mapped rec/s | worst s | file rec/s | worst s | mapped/file | MB/s (best) | forces/s (best) |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const forceEachBatch of APPEND_FORCES) {
    for (const recordBytes of APPEND_RECORD_BYTES) {
      for (const batchRecords of APPEND_BATCH_RECORDS) {
        const best: Partial<Record<WriteMode, AppendResult>> = {};
        for (let repetition = 0; repetition < 2; repetition++) {
          for (const mode of WRITE_MODES) {
            const result = await appendRun(directory, mode, recordBytes, batchRecords, forceEachBatch);
            const previous = best[mode];
            if (previous === undefined || result.recordsPerSecond > previous.recordsPerSecond)
              best[mode] = result;
          }
        }
        const mapped = best.mapped!;
        const file = best.file!;
        const winner = mapped.recordsPerSecond >= file.recordsPerSecond ? mapped : file;
        const worst = (r: AppendResult) => (r.worstSecond === undefined ? "-" : formatRate(r.worstSecond));
        const policy = forceEachBatch ? "force per batch" : "no force";
        const forcesPerSecond = forceEachBatch ? formatRate(winner.forces / SECONDS) : "-";
        console.log(
          `| ${policy} | ${recordBytes} | ${batchRecords} | ${formatRate(mapped.recordsPerSecond)} | ${worst(mapped)} | ` +
            `${formatRate(file.recordsPerSecond)} | ${worst(file)} | ${(mapped.recordsPerSecond / file.recordsPerSecond).toFixed(2)} | ` +
            `${winner.megabytesPerSecond.toFixed(0)} | ${forcesPerSecond} |`,
        );
      }
    }
  }
}

/**
 * Where the time of one append goes, per stage, for a batch of 100 records of 100 B: the producer's
 * encoding, the broker's validation, the record walk alone, and the append on each write path (no
 * force). Plain loops (mitata misreports sub-microsecond FFI work, bun-platform §5), each stage
 * alone, so the CPU's vector state (ffi/crc32c.ts) is what each stage leaves for itself.
 */
function stagesSection(directory: string): void {
  const batchRecords = 100;
  const recordBytes = 100;
  const iterations = Math.max(2000, Math.floor(SECONDS * 20_000));
  console.log(
    `\n## append stages (${batchRecords} records of ${recordBytes} B per batch, ${iterations} batches per stage, ` +
      `CRC32C ${crc32cImplementation}${crc32cClearsVectorState ? " clearing the vector state" : ""})\n`,
  );
  const values = randomValues(recordBytes, batchRecords, 1)[0]!;
  const writer = new RecordBatchWriter();
  const encode = () => {
    writer.begin();
    const timestamp = Date.now();
    for (let r = 0; r < batchRecords; r++) writer.add({ key: null, value: values[r]!, timestamp });
    return writer.finish();
  };
  const batch = encode().slice();
  const time = (f: () => void): number => {
    for (let i = 0; i < Math.min(1000, iterations); i++) f();
    const start = Bun.nanoseconds();
    for (let i = 0; i < iterations; i++) f();
    return (Bun.nanoseconds() - start) / iterations / 1000;
  };
  const rows: [string, number][] = [
    ["encode (RecordBatchWriter: varints, batch CRC)", time(encode)],
    [
      "validate (validateBatch: batch CRC, records walked)",
      time(() => validateBatch(batch, 0, batch.length)),
    ],
    ["walk the records alone (forEachRecord)", time(() => forEachRecord(batch, 0, batch.length, () => {}))],
  ];
  for (const mode of WRITE_MODES) {
    const config = segmentConfig({ writeMode: mode, segmentBytes: SEGMENT_BYTES_DEFAULT });
    let segment = Segment.create(directory, 0 as Offset, config);
    const segments = [segment];
    rows.push([
      `append, ${mode} path (copy, stamp, frame CRC, write)`,
      time(() => {
        if (!segment.hasRoomFor(ENTRY_HEADER_BYTES + batch.length)) {
          segment.seal();
          segment = Segment.create(directory, segment.nextOffset, config);
          segments.push(segment);
        }
        segment.append(batch);
      }),
    ]);
    for (const each of segments) each.close();
    for (const name of fs.readdirSync(directory)) fs.unlinkSync(path.join(directory, name));
  }
  console.log("| stage | µs per batch | ns per record |");
  console.log("|---|---|---|");
  for (const [stage, microseconds] of rows)
    console.log(
      `| ${stage} | ${microseconds.toFixed(2)} | ${((microseconds * 1000) / batchRecords).toFixed(0)} |`,
    );
}

async function lookupSection(directory: string): Promise<void> {
  console.log(
    "\n## index lookup (index alone, then positionOf on a 128 MiB segment of 100 B records in batches of 1000)\n",
  );
  const index = new SparseIndex(4096, 32);
  let position = 32;
  for (let relative = 0; relative < 1_200_000; relative++) {
    index.offer(relative, position);
    position += 108;
  }
  const entry: IndexEntry = { relativeOffset: 0, position: 0 };
  const config = segmentConfig({ writeMode: "mapped" });
  const segment = Segment.create(directory, 0 as Offset, config);
  const batch = randomBatches(100, 1000, 1)[0]!;
  while (segment.hasRoomFor(ENTRY_HEADER_BYTES + batch.length)) segment.append(batch);
  const count = segment.recordCount;
  let target = 0;
  summary(() => {
    bench(`SparseIndex.lookup, ${index.entryCount} entries`, () => {
      target = (target + 7919) % 1_200_000;
      do_not_optimize(index.lookup(target, entry));
    });
    bench(`Segment.positionOf (lookup + walk over entry headers), ${count} records`, () => {
      target = (target + 7919) % count;
      do_not_optimize(segment.positionOf(target));
    });
  });
  await run({ colors: false });
  segment.close();
  fs.unlinkSync(path.join(directory, segmentFileName(0 as Offset)));
}

const RECOVERY_BATCH_RECORDS = 100;

function writeSegmentSet(directory: string, recordBytes: number, totalBytes: number): number {
  const config = segmentConfig({ writeMode: "file" });
  // Batches of 100 records, what the append rows and a typical producer use: one entry per batch,
  // so recovery pays its per-entry work (frame, header, offset check) at a realistic rate.
  const batch = randomBatches(recordBytes, RECOVERY_BATCH_RECORDS, 1)[0]!;
  let segment = Segment.create(directory, 0 as Offset, config);
  let written = 0;
  while (written < totalBytes) {
    if (!segment.hasRoomFor(ENTRY_HEADER_BYTES + batch.length)) {
      segment.close();
      segment = Segment.create(directory, segment.nextOffset, config);
    }
    segment.append(batch);
    written += ENTRY_HEADER_BYTES + batch.length;
  }
  segment.forceNow();
  segment.close();
  return written;
}

function dropPageCache(): boolean {
  try {
    fs.writeFileSync("/proc/sys/vm/drop_caches", "3");
    return true;
  } catch {
    return false;
  }
}

function recoverySection(directory: string): void {
  console.log(
    `\n## recovery (open for append = full scan with frame CRCs; ${RECOVERY_GIB} GiB per row; 128 MiB segments; batches of ${RECOVERY_BATCH_RECORDS} records)\n`,
  );
  console.log("| record B | page cache | GiB scanned | seconds | GiB/s | records/s |");
  console.log("|---|---|---|---|---|---|");
  for (const recordBytes of [100, 1024]) {
    const setDirectory = path.join(directory, `set-${recordBytes}`);
    fs.mkdirSync(setDirectory);
    writeSegmentSet(setDirectory, recordBytes, RECOVERY_GIB * 2 ** 30);
    const files = fs.readdirSync(setDirectory).sort();
    // "unforced": right after writing, much of the set is still dirty in the page cache and the
    // fdatasync that ends each segment's recovery writes it back (until 2026-12-01 this row was
    // printed as "warm"); "warm": the same set again, on disk and cached; "cold": cache dropped.
    // bench/recovery.bench.ts repeats these in fresh processes and compares two checkouts.
    for (const cache of ["unforced", "warm", "cold"] as const) {
      if (cache === "cold" && !dropPageCache()) {
        console.log(`| ${recordBytes} | cold | - | - | - | (cannot drop the page cache without root) |`);
        continue;
      }
      const start = nowMs();
      let bytes = 0;
      let records = 0;
      for (const name of files) {
        const { segment, report } = Segment.openForAppend(
          path.join(setDirectory, name),
          segmentConfig({ writeMode: "file" }),
        );
        bytes += report.scannedBytes;
        records += report.recordCount;
        segment.close();
      }
      const seconds = (nowMs() - start) / 1000;
      console.log(
        `| ${recordBytes} | ${cache} | ${(bytes / 2 ** 30).toFixed(2)} | ${seconds.toFixed(3)} | ${(bytes / 2 ** 30 / seconds).toFixed(2)} | ${formatRate(records / seconds)} |`,
      );
    }
    fs.rmSync(setDirectory, { recursive: true, force: true });
  }
}

function plainLoopNs(f: () => void, iterations: number): number {
  for (let i = 0; i < Math.min(1000, iterations); i++) f();
  const start = Bun.nanoseconds();
  for (let i = 0; i < iterations; i++) f();
  return (Bun.nanoseconds() - start) / iterations;
}

function crcSection(): void {
  console.log("\n## CRC32C (plain loop; mitata misreports sub-100 ns FFI calls, bun-platform §5)\n");
  console.log("| implementation | 100 B | 1 KiB | 64 KiB | 1 MiB |");
  console.log("|---|---|---|---|---|");
  const sizes = [100, 1024, 65536, 1 << 20];
  const buffers = sizes.map((size) => crypto.getRandomValues(new Uint8Array(size)));
  for (const [name, implementation] of [
    ["isa-l", crc32cIsal],
    ["portable", crc32cPortable],
  ] as const) {
    if (implementation === undefined) {
      console.log(`| ${name} | not installed | | | |`);
      continue;
    }
    const cells = buffers.map((buffer) => {
      let sink = 0;
      const iterations = Math.max(20, Math.floor(2e8 / (buffer.length * (name === "portable" ? 20 : 1))));
      const ns = plainLoopNs(() => {
        sink ^= implementation(buffer, 0, buffer.length);
      }, iterations);
      do_not_optimize(sink);
      return `${ns < 1000 ? `${ns.toFixed(0)} ns` : `${(ns / 1000).toFixed(1)} us`} (${(buffer.length / ns).toFixed(2)} GB/s)`;
    });
    console.log(`| ${name} | ${cells.join(" | ")} |`);
  }
}

/**
 * A consumer reading a partition of 2,000 small segments from the start, with the read-descriptor
 * bound far above the segment count (every descriptor stays open) and far below it (one close and one
 * reopen per segment). Two rounds each, alternating, so that page-cache warmth favours neither.
 */
async function historySection(directory: string): Promise<void> {
  const segmentBytes = 256 * 1024;
  const segments = 2000;
  const recordBytes = 100;
  const batchRecords = 100;
  const readBytes = 1 << 20;
  console.log(
    `\n## reading a history of ${segments} segments of ${segmentBytes / 1024} KiB (copying reads of ` +
      `${readBytes / 2 ** 20} MiB, ${recordBytes} B records written in batches of ${batchRecords}, durability append then one force)\n`,
  );
  const logDirectory = path.join(directory, "history");
  const config = segmentConfig({ writeMode: "file", segmentBytes });
  const batch = randomBatches(recordBytes, batchRecords, 1)[0]!;
  const writer = PartitionLog.open(logDirectory, config);
  while (writer.segmentCount < segments) writer.append(batch);
  await writer.force();
  writer.close();
  const previousLimit = sealedReadDescriptors.limit;
  console.log("| round | descriptor bound | records/s | MiB/s | descriptors closed by the bound |");
  console.log("|---|---|---|---|---|");
  try {
    for (const round of [1, 2]) {
      for (const limit of [4096, 16]) {
        sealedReadDescriptors.setLimit(limit);
        const log = PartitionLog.open(logDirectory, config);
        const closedBefore = sealedReadDescriptors.closedByLimitCount;
        const startMs = nowMs();
        let offset = 0;
        let bytes = 0;
        while (offset < log.nextOffset) {
          const read = log.read(offset, readBytes);
          offset = read.firstOffset + read.recordCount;
          bytes += read.records.length;
        }
        const seconds = (nowMs() - startMs) / 1000;
        console.log(
          `| ${round} | ${limit} | ${formatRate(offset / seconds)} | ${(bytes / 2 ** 20 / seconds).toFixed(0)} | ` +
            `${sealedReadDescriptors.closedByLimitCount - closedBefore} |`,
        );
        log.close();
      }
    }
  } finally {
    sealedReadDescriptors.setLimit(previousLimit);
    fs.rmSync(logDirectory, { recursive: true, force: true });
  }
}

const directory = measurementDirectory("storage");
console.log(
  `# booblik storage benchmark\n\n${describeMachine(directory.fileSystem)}\ndata: ${directory.path}`,
);
try {
  if (section === "append" || section === "all") await appendSection(directory.path);
  if (section === "stages" || section === "all") stagesSection(directory.path);
  if (section === "lookup" || section === "all") await lookupSection(directory.path);
  if (section === "recovery" || section === "all") recoverySection(directory.path);
  if (section === "crc" || section === "all") crcSection();
  if (section === "history" || section === "all") await historySection(directory.path);
} finally {
  directory.remove();
}
