/**
 * The RecordBatch v2 codec (src/record/) on the CPU alone: no disk, no socket. Measures what the
 * coming storage and client paths will pay per record for encoding (with the batch CRC), for the
 * broker's PRODUCE validation (CRC + a walk of every record), for the walk a consumer does, and for
 * format 1's framing of the same payloads, side by side in one process.
 *
 *   bun bench/record.bench.ts [--seconds=2] [--record-bytes=100] [--batch-records=100]
 *
 * Every row names its record size (the value's bytes) and batch size. Each row runs for `--seconds`
 * after a warm-up of a quarter of that, and reports records/s, value MB/s and ns/record.
 * Target for the later storage path (issue 11): ≥ 5 M records/s of 100-byte records in batches of
 * 100, batch encoding and both CRCs (batch and storage frame) included: the "encode + stamp + frame"
 * row.
 */

import { cc } from "bun:ffi";
import path from "node:path";
import { crc32c, crc32cImplementation } from "../ffi/crc32c.ts";
import { RECORD_HEADER_BYTES } from "../src/domain/limits.ts";
import {
  encodeBatch,
  forEachRecord,
  RecordBatchWriter,
  type RecordInput,
  type RecordView,
  stampBatch,
  validateBatch,
} from "../src/record/batch.ts";
import { RecordBatchBuilder } from "../src/record/batch-builder.ts";
import { newEntryScanResult, scanEntries, writeFramedEntry } from "../src/record/entries.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, nowMs } from "./lib/environment.ts";

const args = parseBenchArgs({
  usage: "bun bench/record.bench.ts [--seconds=2] [--record-bytes=100] [--batch-records=100]",
  options: { seconds: "2", "record-bytes": "100", "batch-records": "100" },
});
const SECONDS = args.number("seconds");
const RECORD_BYTES = args.number("record-bytes");
const BATCH_RECORDS = args.number("batch-records");
const T = 1_700_000_000_000;

/** Values that compress like text (for the codec rows) but differ from record to record. */
function textValue(i: number): Uint8Array {
  const text = `record ${i} lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor `;
  return new TextEncoder().encode(text.repeat(Math.ceil(RECORD_BYTES / text.length)).slice(0, RECORD_BYTES));
}

const randomValues = Array.from({ length: BATCH_RECORDS }, () =>
  crypto.getRandomValues(new Uint8Array(RECORD_BYTES)),
);
const plainRecords: RecordInput[] = randomValues.map((value, i) => ({ key: null, value, timestamp: T + i }));
const keyedRecords: RecordInput[] = randomValues.map((value, i) => ({
  key: crypto.getRandomValues(new Uint8Array(16)),
  value,
  headers: [{ key: "trace-id", value: crypto.getRandomValues(new Uint8Array(16)) }],
  timestamp: T + i,
}));
const textRecords: RecordInput[] = randomValues.map((_, i) => ({
  key: null,
  value: textValue(i),
  timestamp: T + i,
}));

let sink = 0;

/**
 * A probe, not a fix: VZEROUPPER through TinyCC (bun:ffi `cc`), to measure what ISA-L's dirty upper
 * vector state costs the JS that runs after a CRC (docs/benchmarks.md). Undefined where cc fails.
 */
let vzeroupper: (() => number) | undefined;
let vzeroupperNote = "";
try {
  vzeroupper = cc({
    source: path.join(import.meta.dir, "lib", "vzeroupper.c"),
    symbols: { booblik_vzeroupper: { args: [], returns: "int" } },
  }).symbols.booblik_vzeroupper;
} catch (error) {
  vzeroupperNote = `VZEROUPPER rows skipped: bun:ffi cc failed (${error instanceof Error ? error.message : error})`;
}

interface Row {
  name: string;
  shape: string;
  recordsPerSecond: number;
}

/** Runs `batch` (which handles BATCH_RECORDS records) for SECONDS and returns records/s. */
function measure(name: string, shape: string, batch: () => void): Row {
  const warmUntil = nowMs() + (SECONDS * 1000) / 4;
  while (nowMs() < warmUntil) batch();
  let batches = 0;
  const started = nowMs();
  let elapsed = 0;
  do {
    batch();
    batches++;
    elapsed = nowMs() - started;
  } while (elapsed < SECONDS * 1000);
  return { name, shape, recordsPerSecond: (batches * BATCH_RECORDS) / (elapsed / 1000) };
}

const writer = new RecordBatchWriter(1024 * 1024);
function encodeInto(records: readonly RecordInput[], codec: "none" | "gzip" | "zstd" = "none"): Uint8Array {
  writer.begin({ codec });
  for (const record of records) writer.add(record);
  return writer.finish();
}

const visit = (record: RecordView) => {
  sink += record.valueLength + record.timestamp;
};

const rows: Row[] = [];
const sizes: string[] = [];
for (const [shape, records] of [
  ["value only", plainRecords],
  ["16 B key + 1 header", keyedRecords],
] as const) {
  const batch = encodeBatch(records);
  sizes.push(
    `${shape}: v2 batch ${batch.length} B = ${(batch.length / BATCH_RECORDS).toFixed(1)} B/record` +
      ` (format 1 frames a ${RECORD_BYTES} B payload in ${RECORD_BYTES + RECORD_HEADER_BYTES} B)`,
  );
  rows.push(
    measure("v2 encode + batch CRC", shape, () => {
      sink += encodeInto(records).length;
    }),
  );
  const frame = new Uint8Array(batch.length + 8);
  let nextOffset = 0;
  rows.push(
    measure("v2 encode + stamp + frame (both CRCs)", shape, () => {
      const encoded = encodeInto(records);
      stampBatch(encoded, 0, nextOffset, 0);
      nextOffset += BATCH_RECORDS;
      sink += writeFramedEntry(frame, 0, encoded);
    }),
  );
  if (shape === "value only") {
    // Two probes of where encoding time goes (see docs/benchmarks.md): the records alone, and the
    // records followed by an ISA-L CRC32C of an unrelated buffer of the batch's size.
    rows.push(
      measure("v2 add records only (no header, no CRC)", shape, () => {
        writer.begin();
        for (const record of records) writer.add(record);
        sink += writer.sizeBytes;
      }),
    );
    const unrelated = crypto.getRandomValues(new Uint8Array(batch.length));
    rows.push(
      measure("v2 add records + CRC32C of another buffer", shape, () => {
        writer.begin();
        for (const record of records) writer.add(record);
        sink += crc32c(unrelated, 0, unrelated.length);
      }),
    );
  }
  if (vzeroupper !== undefined) {
    const clear = vzeroupper;
    rows.push(
      measure("v2 encode + stamp + frame, VZEROUPPER after the CRCs", shape, () => {
        const encoded = encodeInto(records);
        stampBatch(encoded, 0, nextOffset, 0);
        nextOffset += BATCH_RECORDS;
        sink += writeFramedEntry(frame, 0, encoded);
        clear();
      }),
    );
  }
  rows.push(
    measure("v2 validate (CRC + walk every record)", shape, () => {
      sink += validateBatch(batch, 0, batch.length).recordCount;
    }),
  );
  rows.push(
    measure("v2 walk (views, no CRC)", shape, () => {
      sink += forEachRecord(batch, 0, batch.length, visit);
    }),
  );
}

// Format 1 for comparison: the producer's framing of the same payloads (one CRC per record).
const builder = new RecordBatchBuilder(BATCH_RECORDS * (RECORD_BYTES + RECORD_HEADER_BYTES));
rows.push(
  measure("format 1 frame (CRC per record)", "value only", () => {
    builder.reset();
    for (const value of randomValues) builder.addChecked(value);
    sink += builder.byteLength;
  }),
);

// Compression (text-like values), as a producer would pay it and a consumer would.
for (const codec of ["gzip", "zstd"] as const) {
  const compressed = encodeBatch(textRecords, { codec });
  sizes.push(
    `text values, ${codec}: batch ${compressed.length} B = ${(compressed.length / BATCH_RECORDS).toFixed(1)} B/record`,
  );
  rows.push(
    measure(`v2 encode, ${codec}`, "text values", () => {
      sink += encodeInto(textRecords, codec).length;
    }),
  );
  rows.push(
    measure(`v2 decompress + walk, ${codec}`, "text values", () => {
      sink += forEachRecord(compressed, 0, compressed.length, visit);
    }),
  );
}

// A recovery-style scan: 10,000 framed entries checked by their frame CRC.
const entryBatch = encodeBatch(plainRecords);
const entryCount = 10_000;
const log = new Uint8Array(entryCount * (entryBatch.length + 8));
let position = 0;
for (let i = 0; i < entryCount; i++) {
  stampBatch(entryBatch, 0, i * BATCH_RECORDS, 0);
  position = writeFramedEntry(log, position, entryBatch);
}
const scanResult = newEntryScanResult();
const scanRow = measure("scanEntries, framed, frame CRC checked", "value only", () => {
  // Scans the whole log per call; scale the count so the row reads per record.
  scanEntries(log, 0, log.length, { framing: "framed", verifyCrc: true, expectedBaseOffset: 0 }, scanResult);
  sink += scanResult.recordCount;
});
scanRow.recordsPerSecond *= entryCount;
rows.push(scanRow);

console.log(`# RecordBatch v2 codec benchmark\n\n${describeMachine("n/a (memory only)")}`);
console.log(
  `\n${SECONDS} s per row after a ${SECONDS / 4} s warm-up; record = ${RECORD_BYTES} B value; ` +
    `batch = ${BATCH_RECORDS} records; CRC32C ${crc32cImplementation}\n`,
);
for (const line of sizes) console.log(`- ${line}`);
if (vzeroupperNote !== "") console.log(`- ${vzeroupperNote}`);
console.log("\n| operation | records | record B | batch | records/s | value MB/s | ns/record |");
console.log("|---|---|---|---|---|---|---|");
for (const row of rows) {
  const mbPerSecond = (row.recordsPerSecond * RECORD_BYTES) / 1e6;
  console.log(
    `| ${row.name} | ${row.shape} | ${RECORD_BYTES} | ${BATCH_RECORDS} | ${formatRate(row.recordsPerSecond)} | ` +
      `${mbPerSecond.toFixed(0)} | ${(1e9 / row.recordsPerSecond).toFixed(1)} |`,
  );
}
console.log(
  `\nscanEntries over ${entryCount} entries (${(log.length / 2 ** 20).toFixed(1)} MiB): ` +
    `${(((scanRow.recordsPerSecond / BATCH_RECORDS) * (entryBatch.length + 8)) / 2 ** 30).toFixed(2)} GiB/s`,
);
if (sink === 0.5) console.log("unreachable: keeps the work observable");
