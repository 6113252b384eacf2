/**
 * The sparse index against a sorted-array model (Kafka's OffsetIndexTest idea): for random entry
 * layouts, every lookup returns the largest stored entry at or below the target (by offset, by
 * position, and by time: the last entry whose running maximum timestamp before it is below the
 * target), entries stay an interval apart, and the arrays start small and grow on demand.
 */
import { expect, test } from "bun:test";
import { INDEX_INITIAL_ENTRIES } from "../../src/domain/limits.ts";
import { type IndexEntry, SparseIndex } from "../../src/storage/sparse-index.ts";
import { Random, testSeed } from "../helpers/random.ts";

const SEED = testSeed();

test(`lookups agree with a model for random layouts (seed ${SEED})`, () => {
  const random = new Random(SEED);
  for (let layout = 0; layout < 50; layout++) {
    const interval = random.int(1, 5000);
    const index = new SparseIndex(interval, 32);
    const model: [number, number][] = [];
    /** The running maximum timestamp before each stored entry. */
    const timestamps: number[] = [];
    let position = 32;
    let lastStored = 32;
    let maxTimestamp = -1;
    const recordCount = random.int(1, 3000);
    for (let relative = 0; relative < recordCount; relative++) {
      index.offer(relative, position, maxTimestamp);
      if (position - lastStored >= interval) {
        model.push([relative, position]);
        timestamps.push(maxTimestamp);
        lastStored = position;
      }
      // Non-monotonic timestamps, as CreateTime allows.
      maxTimestamp = Math.max(maxTimestamp, 1000 + relative * 10 + random.int(-500, 500));
      position += 8 + (random.next() < 0.02 ? random.int(1, 20_000) : random.int(1, 200));
    }
    expect(index.entryCount).toBe(model.length);
    const out: IndexEntry = { relativeOffset: -1, position: -1 };
    for (let trial = 0; trial < 200; trial++) {
      const target = random.int(0, recordCount + 5);
      let expected: [number, number] = [0, 32];
      for (const entry of model) if (entry[0] <= target) expected = entry;
      index.lookup(target, out);
      expect([out.relativeOffset, out.position]).toEqual(expected);
      const targetPosition = random.int(0, position + 10);
      let expectedByPosition: [number, number] = [0, 32];
      for (const entry of model) if (entry[1] <= targetPosition) expectedByPosition = entry;
      index.floorByPosition(targetPosition, out);
      expect([out.relativeOffset, out.position]).toEqual(expectedByPosition);
      // By time: the last entry before which no timestamp reaches the target.
      const targetTime = random.int(0, 1000 + recordCount * 10 + 600);
      let expectedByTime: [number, number] = [0, 32];
      model.forEach((entry, i) => {
        if (timestamps[i]! < targetTime) expectedByTime = entry;
      });
      index.lookupByTimestamp(targetTime, out);
      expect([out.relativeOffset, out.position]).toEqual(expectedByTime);
    }
  }
});

test("the entry arrays start small and double on demand", () => {
  const index = new SparseIndex(100, 32);
  // Per entry: relative offset and position (int32 each) and the timestamp before it (float64).
  expect(index.memoryBytes).toBe(INDEX_INITIAL_ENTRIES * (2 * 4 + 8));
  for (let i = 0; i < 1000; i++) index.offer(i, 32 + (i + 1) * 100, i);
  expect(index.entryCount).toBe(1000);
  expect(index.memoryBytes).toBe(1024 * (2 * 4 + 8));
});
