/**
 * `booblik-cli migrate` speed: MiB/s of format-1 segment bytes converted to format 2, fsyncs of every
 * file and directory included (migrate always does them), on a generated data directory.
 *
 *   bun bench/migrate.bench.ts [--size-mib=1024] [--record-bytes=100,1000] [--repeat=3] [--partitions=4]
 *
 * For each record size a format-1 directory of `--size-mib` MiB is written once (`--partitions`
 * partitions of 128 MiB segments, the default segment size). Each repetition then migrates every
 * variant in turn (interleaved, so drift hits all alike) and moves the backup back in place for
 * the next round. Prints per variant the median and range of MiB/s and records/s. The source was
 * just written or just read, so it is mostly in the page cache: this measures conversion and
 * writing, not reading a cold disk. In-process (`migrateFormat1`); the CLI adds its start-up.
 */
import fs from "node:fs";
import path from "node:path";
import { DataDirLock } from "../src/broker/data-dir-lock.ts";
import { DEFAULT_TOPIC_CONFIG, encodeTopicFile } from "../src/broker/topic-config.ts";
import { type Offset, toTopicName } from "../src/domain/ids.ts";
import {
  MIGRATE_BATCH_BYTES_MAX,
  MIGRATE_BATCH_RECORDS_MAX,
  RECORD_HEADER_BYTES,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_HEADER_BYTES,
} from "../src/domain/limits.ts";
import { writeRecord } from "../src/record/codec.ts";
import { migrateFormat1 } from "../src/storage/migrate-format1.ts";
import { encodeSegmentHeader, segmentFileName } from "../src/storage/segment-header.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, measurementDirectory, nowMs } from "./lib/environment.ts";
import { median as medianOf } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/migrate.bench.ts [--size-mib=1024] [--record-bytes=100,1000] [--repeat=3] [--partitions=4]",
  options: { "size-mib": "1024", "record-bytes": "100,1000", repeat: "3", partitions: "4" },
});
const SIZE_BYTES = args.number("size-mib") * 1024 * 1024;
const RECORD_SIZES = args
  .text("record-bytes")
  .split(",")
  .map((text) => Number(text));
const REPEAT = args.number("repeat");
const PARTITIONS = args.number("partitions");

/** Writes a format-1 directory of about SIZE_BYTES; returns its record count. */
function writeSource(dataDir: string, recordBytes: number): number {
  fs.mkdirSync(path.join(dataDir, "topics"), { recursive: true });
  fs.writeFileSync(
    path.join(dataDir, "topics", "bench.json"),
    encodeTopicFile(toTopicName("bench"), { ...DEFAULT_TOPIC_CONFIG, partitions: PARTITIONS }),
  );
  const recordsPerSegment = Math.floor(
    (SEGMENT_BYTES_DEFAULT - SEGMENT_HEADER_BYTES) / (RECORD_HEADER_BYTES + recordBytes),
  );
  const segmentBytes = SEGMENT_HEADER_BYTES + recordsPerSegment * (RECORD_HEADER_BYTES + recordBytes);
  const perPartition = SIZE_BYTES / PARTITIONS;
  const buffer = new Uint8Array(segmentBytes);
  const view = new DataView(buffer.buffer);
  const payload = new Uint8Array(recordBytes);
  const payloadView = new DataView(payload.buffer);
  let records = 0;
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const directory = path.join(dataDir, `bench-${partition}`);
    fs.mkdirSync(directory);
    let base = 0;
    for (let written = 0; written < perPartition; written += segmentBytes) {
      const count = Math.min(
        recordsPerSegment,
        Math.ceil((perPartition - written - SEGMENT_HEADER_BYTES) / (RECORD_HEADER_BYTES + recordBytes)),
      );
      buffer.set(encodeSegmentHeader(base as Offset, 1), 0);
      let position = SEGMENT_HEADER_BYTES;
      for (let i = 0; i < count; i++) {
        // Differs per record (CRCs differ), cheap to make.
        payloadView.setUint32(0, base + i);
        payload[0] = (base + i) & 0xff;
        payload[recordBytes - 1] = partition;
        position = writeRecord(buffer, view, position, payload);
      }
      fs.writeFileSync(path.join(directory, segmentFileName(base as Offset)), buffer.subarray(0, position));
      base += count;
      records += count;
    }
  }
  return records;
}

function segmentBytesOf(dataDir: string): number {
  let total = 0;
  for (const name of fs.readdirSync(dataDir)) {
    if (!/-\d+$/.test(name)) continue;
    for (const file of fs.readdirSync(path.join(dataDir, name)))
      if (file.endsWith(".log")) total += fs.statSync(path.join(dataDir, name, file)).size;
  }
  return total;
}

const place = measurementDirectory("migrate");
console.log(describeMachine(place.fileSystem));
console.log(
  `migrate: ${args.number("size-mib")} MiB of format-1 segments per variant, ${PARTITIONS} partitions, 128 MiB segments; ` +
    `batches of at most ${MIGRATE_BATCH_RECORDS_MAX} records / ${MIGRATE_BATCH_BYTES_MAX / 1024 / 1024} MiB; ` +
    `policy: fsync every file and directory (as migrate always does); ${REPEAT} rounds, variants interleaved`,
);
try {
  const variants = RECORD_SIZES.map((recordBytes) => {
    const dataDir = path.join(place.path, `records-${recordBytes}`, "data");
    const records = writeSource(dataDir, recordBytes);
    return {
      recordBytes,
      dataDir,
      records,
      sourceBytes: segmentBytesOf(dataDir),
      mibPerSecond: [] as number[],
    };
  });
  for (let round = 0; round < REPEAT; round++) {
    for (const variant of variants) {
      const started = nowMs();
      const report = migrateFormat1(variant.dataDir, { lockDirectory: (d) => DataDirLock.acquire(d) });
      const seconds = (nowMs() - started) / 1000;
      if (report.outcome !== "migrated" || report.records !== variant.records)
        throw new Error(`migrated ${report.records} of ${variant.records} records (${report.outcome})`);
      variant.mibPerSecond.push(variant.sourceBytes / 1024 / 1024 / seconds);
      console.log(
        `  round ${round + 1}, ${variant.recordBytes}-byte records: ${(variant.sourceBytes / 1024 / 1024).toFixed(0)} MiB in ${seconds.toFixed(2)} s, ` +
          `${report.batches} batches, ${(report.bytesWritten / 1024 / 1024).toFixed(0)} MiB written`,
      );
      // Back to format 1 for the next round.
      fs.rmSync(variant.dataDir, { recursive: true });
      fs.renameSync(report.backupDir, variant.dataDir);
    }
  }
  for (const variant of variants) {
    const median = medianOf(variant.mibPerSecond);
    const recordsPerMib = variant.records / (variant.sourceBytes / 1024 / 1024);
    console.log(
      `${variant.recordBytes}-byte records (${variant.records} records, batches ≤ ${MIGRATE_BATCH_RECORDS_MAX} records / 1 MiB, fsync every file): ` +
        `median ${median.toFixed(0)} MiB/s (range ${Math.min(...variant.mibPerSecond).toFixed(0)}-${Math.max(...variant.mibPerSecond).toFixed(0)}), ` +
        `${formatRate(median * recordsPerMib)} records/s`,
    );
  }
} finally {
  place.remove();
}
