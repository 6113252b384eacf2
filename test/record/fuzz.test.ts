/**
 * The walker trusts nothing: seeded random damage to real batches (byte flips, random bytes, cuts,
 * with the CRC recomputed so the damage reaches the record walk) must end in a pass or a typed
 * CorruptRecordError / RecordTooLargeError, never a RangeError, a wrong-typed error or a hang; and
 * the entry walker never throws at all. A failure prints the seed and iteration to replay.
 */
import { expect, test } from "bun:test";
import { CorruptRecordError, RecordTooLargeError } from "../../src/domain/errors.ts";
import {
  decodeBatch,
  encodeBatch,
  type RecordInput,
  stampBatch,
  validateBatch,
} from "../../src/record/batch.ts";
import { scanEntries, writeFramedEntry } from "../../src/record/entries.ts";
import { resign, utf8 } from "./helpers.ts";

const SEED = Number(process.env.BOOBLIK_FUZZ_SEED ?? 20261130);
const ITERATIONS = 20_000;

function generator(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

const RECORDS: RecordInput[] = Array.from({ length: 12 }, (_, i) => ({
  key: i % 3 === 0 ? null : utf8(`key-${i}`),
  value: i % 5 === 4 ? null : utf8(`value ${i} `.repeat(i % 4)),
  headers: i % 2 === 0 ? [{ key: `h${i}`, value: i % 4 === 0 ? null : utf8("v") }] : [],
  timestamp: 1_700_000_000_000 + (i % 3) * 1000 - 500 * i,
}));

test(`random damage ends in a typed error or a pass (seed ${SEED}, ${ITERATIONS} cases)`, () => {
  const random = generator(SEED);
  const originals = [
    encodeBatch(RECORDS),
    encodeBatch(RECORDS, { codec: "gzip" }),
    encodeBatch(RECORDS, { codec: "zstd" }),
  ];
  let passed = 0;
  let rejected = 0;
  for (let iteration = 0; iteration < ITERATIONS; iteration++) {
    const original = originals[iteration % originals.length]!;
    let batch = original.slice();
    const damage = Math.floor(random() * 4);
    const count = 1 + Math.floor(random() * 4);
    for (let d = 0; d < count; d++) {
      // Mostly inside the records (where the walker works), sometimes in the header.
      const position =
        random() < 0.8 ? 61 + Math.floor(random() * (batch.length - 61)) : 21 + Math.floor(random() * 40);
      if (damage === 0) batch[position]! ^= 1 << Math.floor(random() * 8);
      else if (damage === 1) batch[position] = Math.floor(random() * 256);
      else if (damage === 2) batch[position] = [0x00, 0x01, 0x7f, 0x80, 0xff][Math.floor(random() * 5)]!;
    }
    if (damage === 3) {
      batch = batch.subarray(0, 61 + Math.floor(random() * (batch.length - 61)));
      new DataView(batch.buffer, batch.byteOffset).setInt32(8, batch.length - 12);
    }
    resign(batch);
    try {
      validateBatch(batch, 0, batch.length, { walkCompressed: true });
      decodeBatch(batch);
      passed++;
    } catch (error) {
      if (!(error instanceof CorruptRecordError || error instanceof RecordTooLargeError)) {
        throw new Error(`seed ${SEED} iteration ${iteration}: ${String(error)}`);
      }
      rejected++;
    }
  }
  expect(passed + rejected).toBe(ITERATIONS);
  expect(rejected).toBeGreaterThan(ITERATIONS / 2);
});

test(`the entry walker never throws on damaged logs (seed ${SEED})`, () => {
  const random = generator(SEED + 1);
  const batch = encodeBatch(RECORDS);
  const entryBytes = batch.length + 8;
  const log = new Uint8Array(entryBytes * 8);
  for (let i = 0; i < 8; i++) {
    stampBatch(batch, 0, i * RECORDS.length, 0);
    writeFramedEntry(log, i * entryBytes, batch);
  }
  for (let iteration = 0; iteration < 2_000; iteration++) {
    const damaged = log.slice();
    for (let d = 0; d < 1 + Math.floor(random() * 3); d++) {
      damaged[Math.floor(random() * damaged.length)] = Math.floor(random() * 256);
    }
    const end = Math.floor(random() * (damaged.length + 1));
    for (const framing of ["framed", "bare"] as const) {
      const result = scanEntries(damaged, 0, end, { framing, verifyCrc: random() < 0.5 });
      expect(result.endPosition).toBeLessThanOrEqual(end);
    }
  }
});
