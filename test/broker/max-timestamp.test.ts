/**
 * A batch's MaxTimestamp as the broker stores it. The time index and retention by age read only
 * MaxTimestamp, so a producer that gets it wrong used to hide its records from time lookups (a value
 * below the records') or keep a segment from expiring (a value above). Kafka's LogValidator walks an
 * uncompressed batch's records and writes their largest timestamp into MaxTimestamp (recomputing the
 * batch CRC); booblik does the same for uncompressed CreateTime batches, on its own copy (the
 * caller's bytes are not modified). Compressed batches are not decompressed on append and keep the
 * MaxTimestamp they came with (docs/format.md "What an append checks").
 */
import { describe, expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import {
  CRC_OFFSET,
  computeBatchCrc,
  decodeBatch,
  encodeBatch,
  MAX_TIMESTAMP_OFFSET,
  type RecordInput,
} from "../../src/record/batch.ts";
import { scanEntries } from "../../src/record/entries.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const T = 1_700_000_000_000;
const encoder = new TextEncoder();

/** Three records whose largest timestamp is the middle one's, T + 5000. */
function records(prefix: string): RecordInput[] {
  return [
    { key: null, value: encoder.encode(`${prefix}0`), timestamp: T },
    { key: null, value: encoder.encode(`${prefix}1`), timestamp: T + 5000 },
    { key: null, value: encoder.encode(`${prefix}2`), timestamp: T + 2000 },
  ];
}

/** `batch` with MaxTimestamp replaced by `maxTimestampMs` and a valid batch CRC again. */
function withMaxTimestamp(batch: Uint8Array, maxTimestampMs: number): Uint8Array {
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  view.setBigInt64(MAX_TIMESTAMP_OFFSET, BigInt(maxTimestampMs));
  view.setUint32(CRC_OFFSET, computeBatchCrc(batch, 0, batch.length));
  return batch;
}

/** MaxTimestamp of every stored entry of a read; every frame CRC and batch CRC is checked. */
function storedMaxTimestamps(read: Uint8Array): number[] {
  const found: number[] = [];
  const scan = scanEntries(
    read,
    0,
    read.length,
    { framing: "framed", verifyCrc: true },
    undefined,
    (_e, start, end) => found.push(decodeBatch(read, start, end).header.maxTimestamp),
  );
  expect(scan.stop).toBe("end");
  return found;
}

describe.each(WRITE_MODES.map((mode) => [mode]))(
  "MaxTimestamp on append, %s write path",
  (writeMode: WriteMode) => {
    test("an uncompressed CreateTime batch is stored with its records' largest timestamp, whatever its header said", async () => {
      using dir = tempDir();
      let broker = Broker.open({ dataDir: dir.path, topicDefaults: { writeMode } });
      const request = Buffer.concat([
        withMaxTimestamp(encodeBatch(records("low")), T), // below the records': hid T + 1 … T + 5000
        withMaxTimestamp(encodeBatch(records("high")), T + 1_000_000), // above: kept a segment from expiring
        encodeBatch(records("right")), // as the encoder writes it: untouched
      ]);
      const sent = Uint8Array.from(request);
      try {
        broker.createTopic("m", { durability: "append" });
        const ack = await broker.append("m", 0, request);
        expect(ack.recordCount).toBe(9);
        expect(Buffer.compare(request, sent)).toBe(0); // the caller's bytes are not modified
        expect(storedMaxTimestamps(broker.read("m", 0, 0).records)).toEqual([T + 5000, T + 5000, T + 5000]);
        // The time index now sees the records: the first with a timestamp ≥ T + 3000 is offset 1.
        expect(broker.offsetForTimestamp("m", 0, T + 3000)).toEqual({ offset: 1, timestampMs: T + 5000 });
        expect(broker.offsetForTimestamp("m", 0, T + 5001)).toBeUndefined();
      } finally {
        await broker.close();
      }
      broker = Broker.open({ dataDir: dir.path });
      try {
        expect(broker.offsetForTimestamp("m", 0, T + 3000)).toEqual({ offset: 1, timestampMs: T + 5000 });
        expect(broker.offsetForTimestamp("m", 0, T + 5001)).toBeUndefined();
      } finally {
        await broker.close();
      }
    });

    test("a compressed batch keeps the MaxTimestamp it came with (not decompressed on append)", async () => {
      using dir = tempDir();
      const broker = Broker.open({ dataDir: dir.path, topicDefaults: { writeMode } });
      try {
        broker.createTopic("z", { durability: "append" });
        const batch = withMaxTimestamp(encodeBatch(records("gz"), { codec: "gzip" }), T + 9000);
        await broker.append("z", 0, batch);
        expect(storedMaxTimestamps(broker.read("z", 0, 0).records)).toEqual([T + 9000]);
      } finally {
        await broker.close();
      }
    });
  },
);
