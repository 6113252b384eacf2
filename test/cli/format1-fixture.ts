/**
 * Format-1 data directories for the tests of `booblik-cli migrate`, written with the format-1 codec
 * itself (`encodeSegmentHeader(base, 1)` + `writeRecord`), and a reader of the format-2 result that
 * walks it with the format-2 walker (`scanEntries`, `decodeBatch`), so a test compares what went in
 * with what came out without trusting the converter.
 */
import { expect } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { DEFAULT_TOPIC_CONFIG, encodeTopicFile, type TopicConfig } from "../../src/broker/topic-config.ts";
import { type Offset, toTopicName } from "../../src/domain/ids.ts";
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { decodeBatch, PARTITION_LEADER_EPOCH_OFFSET } from "../../src/record/batch.ts";
import { writeRecord } from "../../src/record/codec.ts";
import { newEntryScanResult, scanEntries } from "../../src/record/entries.ts";
import {
  decodeSegmentHeader,
  encodeSegmentHeader,
  parseSegmentFileName,
  segmentFileName,
} from "../../src/storage/segment-header.ts";

export interface Format1Segment {
  base: number;
  payloads: Uint8Array[];
  /** The file's modification time in ms (becomes the records' timestamp). */
  mtimeMs: number;
  /** "mapped": zeros after the records up to `paddedBytes` (a mapped segment's unused capacity). */
  tail?: { kind: "mapped"; paddedBytes: number } | { kind: "bytes"; bytes: Uint8Array };
  /** Write no header at all (a kill right after a roll): the file holds `bytes` zeros. */
  headerless?: { zeroBytes: number };
}

export interface Format1Partition {
  topic: string;
  partition: number;
  segments: Format1Segment[];
  checkpoint?: { cleanShutdown: boolean; segmentBaseOffset: number; position: number; nextOffset: number };
}

/** Bytes of a format-1 segment holding `payloads` from `base`, header included. */
export function format1SegmentBytes(segment: Format1Segment): Uint8Array {
  if (segment.headerless !== undefined) return new Uint8Array(segment.headerless.zeroBytes);
  let size = SEGMENT_HEADER_BYTES;
  for (const payload of segment.payloads) size += RECORD_HEADER_BYTES + payload.length;
  const recordsEnd = size;
  if (segment.tail?.kind === "mapped") size = Math.max(size, segment.tail.paddedBytes);
  if (segment.tail?.kind === "bytes") size += segment.tail.bytes.length;
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  bytes.set(encodeSegmentHeader(segment.base as Offset, 1), 0);
  let position = SEGMENT_HEADER_BYTES;
  for (const payload of segment.payloads) position = writeRecord(bytes, view, position, payload);
  if (segment.tail?.kind === "bytes") bytes.set(segment.tail.bytes, recordsEnd);
  return bytes;
}

/** Writes a partition directory (and nothing else) below `dataDir`. */
export function writeFormat1Partition(dataDir: string, partition: Format1Partition): string {
  const directory = path.join(dataDir, `${partition.topic}-${partition.partition}`);
  fs.mkdirSync(directory, { recursive: true });
  for (const segment of partition.segments) {
    const file = path.join(directory, segmentFileName(segment.base as Offset));
    fs.writeFileSync(file, format1SegmentBytes(segment));
    fs.utimesSync(file, segment.mtimeMs / 1000, segment.mtimeMs / 1000);
  }
  if (partition.checkpoint !== undefined) {
    const { cleanShutdown, ...recoveryPoint } = partition.checkpoint;
    fs.writeFileSync(
      path.join(directory, "checkpoint.json"),
      JSON.stringify({ version: 1, cleanShutdown, recoveryPoint }),
    );
  }
  return directory;
}

/**
 * A topic file as a format-1 broker wrote it: every setting, no timestampType, and maxRecordBytes
 * (the largest payload there) shrunk to fit the segment when not given, as format 1 did.
 */
export function writeTopicFile(dataDir: string, topic: string, config: Partial<TopicConfig>): void {
  fs.mkdirSync(path.join(dataDir, "topics"), { recursive: true });
  const { timestampType: _none, ...full } = { ...DEFAULT_TOPIC_CONFIG, ...config };
  if (config.maxRecordBytes === undefined)
    full.maxRecordBytes = Math.min(
      full.maxRecordBytes,
      full.segmentBytes - SEGMENT_HEADER_BYTES - RECORD_HEADER_BYTES,
    );
  fs.writeFileSync(
    path.join(dataDir, "topics", `${topic}.json`),
    encodeTopicFile(toTopicName(topic), full as TopicConfig),
  );
}

/** The record a format-1 partition holds at an offset, as migrate must keep it. */
export interface ExpectedRecord {
  offset: number;
  timestamp: number;
  value: Uint8Array;
}

/** What `partition` holds, record by record, as the broker of format 1 would have served it. */
export function expectedRecords(partition: Format1Partition): ExpectedRecord[] {
  const out: ExpectedRecord[] = [];
  for (const segment of partition.segments) {
    segment.payloads.forEach((value, index) => {
      out.push({ offset: segment.base + index, timestamp: Math.floor(segment.mtimeMs), value });
    });
  }
  return out;
}

export interface ReadSegment {
  name: string;
  base: number;
  /** Per batch: its base offset, record count and stored size in bytes. */
  batches: { baseOffset: number; count: number; bytes: number; leaderEpoch: number }[];
  records: (ExpectedRecord & { key: Uint8Array | null; headerCount: number })[];
}

/**
 * Reads every segment of a format-2 partition directory with the format-2 walker: the header must be
 * version 2, the entries whole with valid frame and batch CRCs and contiguous offsets from the base.
 */
export function readFormat2Partition(directory: string): ReadSegment[] {
  const segments: ReadSegment[] = [];
  const names = fs
    .readdirSync(directory)
    .filter((name) => parseSegmentFileName(name) !== undefined)
    .sort();
  for (const name of names) {
    const file = path.join(directory, name);
    const bytes = new Uint8Array(fs.readFileSync(file));
    const base = decodeSegmentHeader(bytes, bytes.length, file, parseSegmentFileName(name), 2);
    const segment: ReadSegment = { name, base, batches: [], records: [] };
    const scan = scanEntries(
      bytes,
      SEGMENT_HEADER_BYTES,
      bytes.length,
      { framing: "framed", verifyCrc: true, expectedBaseOffset: base },
      newEntryScanResult(),
      (_entry, batchStart, batchEnd, header) => {
        const view = new DataView(bytes.buffer, bytes.byteOffset);
        segment.batches.push({
          baseOffset: header.baseOffset,
          count: header.lastOffsetDelta + 1,
          bytes: batchEnd - batchStart,
          leaderEpoch: view.getInt32(batchStart + PARTITION_LEADER_EPOCH_OFFSET, false),
        });
        for (const record of decodeBatch(bytes, batchStart, batchEnd, true).records)
          segment.records.push({
            offset: record.offset,
            timestamp: record.timestamp,
            value: record.value ?? new Uint8Array(0),
            key: record.key,
            headerCount: record.headers.length,
          });
      },
    );
    if (scan.stop !== "end")
      throw new Error(`${file}: entries stop at byte ${scan.endPosition}: ${scan.stop} (${scan.detail})`);
    segments.push(segment);
  }
  return segments;
}

/** Every file below `directory` (relative path → bytes), `.lock` left out: migrate creates it. */
export function snapshotTree(directory: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (at: string, relative: string) => {
    for (const name of fs.readdirSync(at).sort()) {
      if (relative === "" && name === ".lock") continue;
      const full = path.join(at, name);
      const stat = fs.lstatSync(full);
      if (stat.isDirectory()) {
        out.set(`${relative}${name}/`, `dir ${(stat.mode & 0o777).toString(8)}`);
        walk(full, `${relative}${name}/`);
      } else {
        const hash = new Bun.CryptoHasher("sha256").update(fs.readFileSync(full)).digest("hex");
        out.set(`${relative}${name}`, `${hash} ${(stat.mode & 0o777).toString(8)}`);
      }
    }
  };
  walk(directory, "");
  return out;
}

function payloads(topic: string, from: number, count: number, maxExtraBytes = 120): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let offset = from; offset < from + count; offset++) {
    const text = new TextEncoder().encode(`${topic}:${offset}:`);
    const extra = (offset * 7919) % (maxExtraBytes + 1);
    const payload = new Uint8Array(text.length + extra);
    payload.set(text, 0);
    // Binary bytes, a newline and zeros included: migrate must keep bytes, not text.
    for (let i = 0; i < extra; i++) payload[text.length + i] = (offset * 31 + i * 17) & 0xff;
    out.push(payload);
  }
  return out;
}

const T0 = 1_700_000_000_123;

/**
 * The directory most migrate tests start from: three topics, five partitions, eight segments, every
 * ending a format-1 segment can have (clean, mapped zeros, torn tail, header only, headerless
 * newest), a base offset above 0, checkpoints present and absent, and files that are not segments.
 * Returns the partitions and what each must hold after migrating.
 */
export function writeStandardFixture(dataDir: string): {
  partitions: Format1Partition[];
  expected: Map<string, ExpectedRecord[]>;
} {
  fs.mkdirSync(dataDir, { recursive: true });
  writeTopicFile(dataDir, "events", { partitions: 3, segmentBytes: 64 * 1024 });
  writeTopicFile(dataDir, "logs", { partitions: 1, writeMode: "mapped" });
  writeTopicFile(dataDir, "tiny", { partitions: 1, maxRecordBytes: 300 });
  const events0: Format1Partition = {
    topic: "events",
    partition: 0,
    segments: [
      { base: 0, payloads: payloads("events", 0, 40), mtimeMs: T0 },
      { base: 40, payloads: payloads("events", 40, 30), mtimeMs: T0 + 1000 },
      {
        base: 70,
        payloads: payloads("events", 70, 10),
        mtimeMs: T0 + 2000.75,
        tail: { kind: "mapped", paddedBytes: 64 * 1024 },
      },
    ],
  };
  const sizeOf = (segment: Format1Segment) =>
    SEGMENT_HEADER_BYTES + segment.payloads.reduce((sum, p) => sum + RECORD_HEADER_BYTES + p.length, 0);
  events0.checkpoint = {
    cleanShutdown: true,
    segmentBaseOffset: 70,
    position: sizeOf(events0.segments[2]!),
    nextOffset: 80,
  };
  // The first 11 bytes of a record: a write torn by a kill, in the newest segment, no checkpoint.
  const tornTail = format1SegmentBytes({ base: 0, payloads: payloads("x", 0, 1), mtimeMs: 0 }).subarray(
    SEGMENT_HEADER_BYTES,
    SEGMENT_HEADER_BYTES + 11,
  );
  const events1: Format1Partition = {
    topic: "events",
    partition: 1,
    segments: [
      {
        base: 0,
        payloads: payloads("events", 1000, 25),
        mtimeMs: T0 + 3000,
        tail: { kind: "bytes", bytes: tornTail },
      },
    ],
  };
  const events2: Format1Partition = {
    topic: "events",
    partition: 2,
    segments: [{ base: 0, payloads: [], mtimeMs: T0 + 4000 }],
    checkpoint: { cleanShutdown: true, segmentBaseOffset: 0, position: SEGMENT_HEADER_BYTES, nextOffset: 0 },
  };
  const logs0: Format1Partition = {
    topic: "logs",
    partition: 0,
    segments: [
      { base: 1000, payloads: payloads("logs", 1000, 50, 3000), mtimeMs: T0 + 5000 },
      { base: 1050, payloads: payloads("logs", 1050, 20, 3000), mtimeMs: T0 + 6000 },
      { base: 1070, payloads: [], mtimeMs: T0 + 7000, headerless: { zeroBytes: 20 } },
    ],
    checkpoint: { cleanShutdown: false, segmentBaseOffset: 1000, position: 100, nextOffset: 1001 },
  };
  const tiny0: Format1Partition = {
    topic: "tiny",
    partition: 0,
    segments: [{ base: 0, payloads: payloads("tiny", 0, 40, 250), mtimeMs: T0 + 8000 }],
  };
  const partitions = [events0, events1, events2, logs0, tiny0];
  for (const partition of partitions) writeFormat1Partition(dataDir, partition);
  // Not segments: copied as they are.
  fs.writeFileSync(path.join(dataDir, "users.json"), '{"users":[]}\n', { mode: 0o600 });
  fs.chmodSync(path.join(dataDir, "users.json"), 0o600);
  fs.mkdirSync(path.join(dataDir, "notes"));
  fs.writeFileSync(path.join(dataDir, "notes", "readme.txt"), "kept as it is\n");
  fs.writeFileSync(path.join(dataDir, "events-0", "operator-note.txt"), "also kept\n");
  const expected = new Map<string, ExpectedRecord[]>();
  for (const partition of partitions)
    expected.set(`${partition.topic}-${partition.partition}`, expectedRecords(partition));
  return { partitions, expected };
}

/** Checks that `dataDir` holds, partition by partition, exactly `expected` in format 2. */
export function expectMigrated(dataDir: string, expected: Map<string, ExpectedRecord[]>): void {
  for (const [name, records] of expected) {
    const segments = readFormat2Partition(path.join(dataDir, name));
    const read = segments.flatMap((segment) => segment.records);
    expect(read.map((r) => r.offset)).toEqual(records.map((r) => r.offset));
    expect(read.map((r) => Buffer.from(r.value).toString("hex"))).toEqual(
      records.map((r) => Buffer.from(r.value).toString("hex")),
    );
    expect(read.map((r) => r.timestamp)).toEqual(records.map((r) => r.timestamp));
    expect(read.every((r) => r.key === null && r.headerCount === 0)).toBe(true);
    for (const segment of segments) for (const batch of segment.batches) expect(batch.leaderEpoch).toBe(-1);
    expect(fs.existsSync(path.join(dataDir, name, "checkpoint.json"))).toBe(false);
  }
  expect(fs.existsSync(path.join(dataDir, ".format2-migration"))).toBe(false);
}

/**
 * Opens `dataDir` with the embedded format-2 Broker (its recovery checks every entry, as the first
 * start after a migration does) and reads every partition in `expected` through `Broker.read`:
 * every record at its offset, with its value and timestamp.
 */
export async function expectBrokerReads(
  dataDir: string,
  expected: Map<string, ExpectedRecord[]>,
): Promise<void> {
  const broker = await Broker.openAsync({ dataDir });
  try {
    for (const [name, records] of expected) {
      const match = /^(.+)-(\d+)$/.exec(name)!;
      const topic = match[1]!;
      const partition = Number(match[2]);
      const read: ExpectedRecord[] = [];
      let offset = records[0]?.offset ?? 0;
      while (read.length < records.length) {
        const got = broker.read(topic, partition, offset, 1024 * 1024);
        expect(got.recordCount).toBeGreaterThan(0);
        scanEntries(
          got.records,
          0,
          got.records.length,
          { framing: "framed", verifyCrc: true },
          newEntryScanResult(),
          (_entry, batchStart, batchEnd) => {
            for (const record of decodeBatch(got.records, batchStart, batchEnd, true).records)
              if (record.offset >= offset)
                read.push({
                  offset: record.offset,
                  timestamp: record.timestamp,
                  value: record.value ?? new Uint8Array(0),
                });
          },
        );
        offset = read.at(-1)!.offset + 1;
      }
      expect(read.map((r) => r.offset)).toEqual(records.map((r) => r.offset));
      expect(read.map((r) => Buffer.from(r.value).toString("hex"))).toEqual(
        records.map((r) => Buffer.from(r.value).toString("hex")),
      );
      expect(read.map((r) => r.timestamp)).toEqual(records.map((r) => r.timestamp));
      // The time index answers by the converted timestamps: each segment's first record.
      for (const record of records)
        expect(broker.offsetForTimestamp(topic, partition, record.timestamp)?.offset).toBe(
          records.find((r) => r.timestamp >= record.timestamp)!.offset,
        );
    }
  } finally {
    await broker.close();
  }
}
