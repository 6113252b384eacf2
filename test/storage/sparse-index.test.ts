/**
 * The sparse index against a sorted-array model (Kafka's OffsetIndexTest idea): for random record
 * layouts, every lookup returns the largest stored entry at or below the target, entries stay an
 * interval apart, and the arrays start small and grow on demand.
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
    let position = 32;
    let lastStored = 32;
    const recordCount = random.int(1, 3000);
    for (let relative = 0; relative < recordCount; relative++) {
      index.offer(relative, position);
      if (position - lastStored >= interval) {
        model.push([relative, position]);
        lastStored = position;
      }
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
    }
  }
});

test("the entry arrays start small and double on demand", () => {
  const index = new SparseIndex(100, 32);
  expect(index.memoryBytes).toBe(INDEX_INITIAL_ENTRIES * 2 * 4);
  for (let i = 0; i < 1000; i++) index.offer(i, 32 + (i + 1) * 100);
  expect(index.entryCount).toBe(1000);
  expect(index.memoryBytes).toBe(1024 * 2 * 4);
});
