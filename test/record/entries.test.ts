/**
 * The walker over consecutive entries (src/record/entries.ts): several stamped batches, framed as
 * the coming storage entries or bare as in a Kafka log, cut at every byte of the last entry (a torn
 * tail) and damaged in each way it must name.
 */
import { describe, expect, test } from "bun:test";
import { encodeBatch, type RecordBatchHeader, stampBatch } from "../../src/record/batch.ts";
import {
  batchOfValues,
  type EntryFraming,
  type EntryScanOptions,
  newEntryScanResult,
  scanEntries,
  valuesOfEntries,
  writeFramedEntry,
} from "../../src/record/entries.ts";
import { resign, utf8 } from "./helpers.ts";

const T = 1_700_000_000_000;

/** Four batches of 1, 3, 2 and 5 records, stamped at offsets 100, 101, 104, 106. */
function log(framing: EntryFraming): { bytes: Uint8Array; starts: number[] } {
  const sizes = [1, 3, 2, 5];
  const parts: Uint8Array[] = [];
  const starts: number[] = [];
  let offset = 100;
  let total = 0;
  for (const [index, count] of sizes.entries()) {
    const batch = encodeBatch(
      Array.from({ length: count }, (_, i) => ({
        key: utf8(`k${i}`),
        value: utf8(`batch ${index} record ${i}`),
        timestamp: T + index * 10 + i,
      })),
      { codec: index === 2 ? "gzip" : "none" },
    );
    stampBatch(batch, 0, offset, 0);
    offset += count;
    const entry = new Uint8Array(batch.length + (framing === "framed" ? 8 : 0));
    if (framing === "framed") writeFramedEntry(entry, 0, batch);
    else entry.set(batch);
    starts.push(total);
    total += entry.length;
    parts.push(entry);
  }
  const bytes = new Uint8Array(total);
  parts.forEach((part, i) => {
    bytes.set(part, starts[i]!);
  });
  return { bytes, starts };
}

describe.each([["framed"], ["bare"]] as const)("%s entries", (framing) => {
  const options: EntryScanOptions = { framing, verifyCrc: true, expectedBaseOffset: 100 };

  test("walks every entry to the end, visiting each with its header", () => {
    const { bytes, starts } = log(framing);
    const seen: [number, number, number][] = [];
    const result = scanEntries(
      bytes,
      0,
      bytes.length,
      options,
      newEntryScanResult(),
      (position, _s, _e, header) => {
        seen.push([position, header.baseOffset, header.lastOffsetDelta]);
      },
    );
    expect(result).toMatchObject({
      stop: "end",
      endPosition: bytes.length,
      entryCount: 4,
      recordCount: 11,
      nextOffset: 111,
      maxTimestamp: T + 34,
    });
    expect(seen).toEqual([
      [starts[0]!, 100, 0],
      [starts[1]!, 101, 2],
      [starts[2]!, 104, 1],
      [starts[3]!, 106, 4],
    ]);
  });

  test("a torn tail at every byte of the last entry stops cleanly after the third", () => {
    const { bytes, starts } = log(framing);
    const last = starts[3]!;
    for (let cut = last + 1; cut < bytes.length; cut++) {
      const result = scanEntries(bytes, 0, cut, options);
      expect(result.stop).toBe("truncated");
      expect(result.endPosition).toBe(last);
      expect(result.entryCount).toBe(3);
      expect(result.nextOffset).toBe(106);
      expect(result.detail).not.toBe("");
    }
  });

  test("a flipped byte inside an entry is a CRC mismatch at that entry", () => {
    const { bytes, starts } = log(framing);
    bytes[starts[1]! + 40]! ^= 1;
    const result = scanEntries(bytes, 0, bytes.length, options);
    expect(result).toMatchObject({ stop: "crc-mismatch", endPosition: starts[1], entryCount: 1 });
    // Without CRC checks the walk only hops over lengths and goes on.
    expect(scanEntries(bytes, 0, bytes.length, { ...options, verifyCrc: false }).stop).toBe("end");
  });

  test("a batch that does not continue the previous one is an offset gap", () => {
    const { bytes, starts } = log(framing);
    const batchStart = starts[2]! + (framing === "framed" ? 8 : 0);
    stampBatch(bytes, batchStart, 105, 0);
    const result = scanEntries(bytes, 0, bytes.length, { ...options, verifyCrc: false });
    expect(result).toMatchObject({ stop: "offset-gap", endPosition: starts[2], nextOffset: 104 });
    expect(result.detail).toBe("BaseOffset 105, expected 104");
    expect(scanEntries(bytes, 0, bytes.length, { ...options, expectedBaseOffset: 99 }).stop).toBe(
      "offset-gap",
    );
  });

  test("a magic other than 2 stops the walk", () => {
    const { bytes, starts } = log(framing);
    bytes[starts[3]! + (framing === "framed" ? 8 : 0) + 16] = 1;
    expect(scanEntries(bytes, 0, bytes.length, { ...options, verifyCrc: false })).toMatchObject({
      stop: "bad-magic",
      endPosition: starts[3],
    });
  });

  test("a length below a batch header or above the limit is bad-length", () => {
    const { bytes, starts } = log(framing);
    const at = starts[1]! + (framing === "framed" ? 0 : 8);
    const view = new DataView(bytes.buffer);
    view.setUint32(at, framing === "framed" ? 60 : 48);
    expect(scanEntries(bytes, 0, bytes.length, options)).toMatchObject({
      stop: "bad-length",
      endPosition: starts[1],
    });
    expect(scanEntries(bytes, 0, bytes.length, { ...options, maxBatchBytes: 100 }).stop).toBe("bad-length");
  });
});

describe("framed only", () => {
  test("zeros after the last entry are the end marker of a preallocated file", () => {
    const { bytes } = log("framed");
    const padded = new Uint8Array(bytes.length + 64);
    padded.set(bytes);
    expect(scanEntries(padded, 0, padded.length, { framing: "framed", verifyCrc: true })).toMatchObject({
      stop: "zero-length",
      endPosition: bytes.length,
      entryCount: 4,
    });
    // Four zero bytes at the very end are still the marker, not a torn header.
    expect(scanEntries(padded, 0, bytes.length + 5, { framing: "framed", verifyCrc: true }).stop).toBe(
      "zero-length",
    );
  });

  test("the frame CRC covers the stamped BaseOffset (the batch CRC does not)", () => {
    const { bytes, starts } = log("framed");
    stampBatch(bytes, starts[3]! + 8, 106 + 2 ** 32, 0);
    expect(scanEntries(bytes, 0, bytes.length, { framing: "framed", verifyCrc: true })).toMatchObject({
      stop: "crc-mismatch",
      endPosition: starts[3],
    });
  });

  test("a frame length that disagrees with BatchLength is bad-length", () => {
    const { bytes, starts } = log("framed");
    const view = new DataView(bytes.buffer);
    const batchStart = starts[2]! + 8;
    view.setInt32(batchStart + 8, view.getInt32(batchStart + 8) - 1);
    resign(bytes.subarray(batchStart, starts[3]!));
    const result = scanEntries(bytes, 0, bytes.length, { framing: "framed", verifyCrc: false });
    expect(result).toMatchObject({ stop: "bad-length", endPosition: starts[2] });
  });

  test("the visitor's header is one reused object", () => {
    const { bytes } = log("framed");
    const headers = new Set<RecordBatchHeader>();
    scanEntries(
      bytes,
      0,
      bytes.length,
      { framing: "framed", verifyCrc: true },
      newEntryScanResult(),
      (_p, _s, _e, h) => headers.add(h),
    );
    expect(headers.size).toBe(1);
  });
});

describe("batchOfValues and valuesOfEntries (test and tool conveniences)", () => {
  test("values round-trip through a bare batch and a framed entry; damage is refused", () => {
    const batch = batchOfValues(["a", "bc", null, new Uint8Array([0xff, 0])]);
    const bare = valuesOfEntries(batch, "bare");
    expect(bare.map((v) => (v === null ? null : [...v]))).toEqual([[0x61], [0x62, 0x63], null, [0xff, 0]]);
    stampBatch(batch, 0, 5, -1);
    const framed = new Uint8Array(batch.length + 8);
    writeFramedEntry(framed, 0, batch);
    expect(valuesOfEntries(framed)).toHaveLength(4);
    const last = framed.length - 1;
    framed[last] = (framed[last] ?? 0) ^ 1;
    expect(() => valuesOfEntries(framed)).toThrow(/crc-mismatch/);
  });
});
