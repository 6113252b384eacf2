/**
 * The in-memory sparse index of one segment: (relative offset, position) pairs, one per
 * `intervalBytes` of log. It is derived data, rebuilt by scanning, never written to disk.
 *
 * Invariants:
 * - An implicit first entry maps relative offset 0 to the first record position (after the header);
 *   it is not stored.
 * - Stored entries are strictly increasing in both relative offset and position, and each stored
 *   position is at least `intervalBytes` past the previous one (stored or implicit).
 * - Entries are only added for records whose bytes are completely written.
 *
 * Storage: one Int32Array of interleaved pairs that starts at INDEX_INITIAL_ENTRIES and doubles.
 * A fixed large array per segment once killed a 64 MiB predecessor broker with many small segments,
 * and capacity / interval is no upper bound because a record can be larger than the interval.
 * Relative offsets and positions both fit int32 because a segment stays below 2^31 bytes.
 */
import { INDEX_INITIAL_ENTRIES } from "../domain/limits.ts";

/** A lookup result, filled in place (the caller keeps one and reuses it). */
export interface IndexEntry {
  relativeOffset: number;
  position: number;
}

export class SparseIndex {
  readonly intervalBytes: number;
  readonly firstPosition: number;
  private pairs: Int32Array;
  private count = 0;
  private lastPosition: number;

  constructor(intervalBytes: number, firstPosition: number) {
    this.intervalBytes = intervalBytes;
    this.firstPosition = firstPosition;
    this.lastPosition = firstPosition;
    this.pairs = new Int32Array(INDEX_INITIAL_ENTRIES * 2);
  }

  get entryCount(): number {
    return this.count;
  }

  /** Bytes held by the entry arrays (for memory accounting and the growth test). */
  get memoryBytes(): number {
    return this.pairs.byteLength;
  }

  /** Offers a record that starts at `position`; stores it when it is an interval past the last entry. */
  offer(relativeOffset: number, position: number): void {
    if (position - this.lastPosition < this.intervalBytes) return;
    if (this.count * 2 === this.pairs.length) {
      const grown = new Int32Array(this.pairs.length * 2);
      grown.set(this.pairs);
      this.pairs = grown;
    }
    this.pairs[this.count * 2] = relativeOffset;
    this.pairs[this.count * 2 + 1] = position;
    this.count++;
    this.lastPosition = position;
  }

  /** The entry with the largest relative offset ≤ `targetRelativeOffset` (the implicit one if none). */
  lookup(targetRelativeOffset: number, out: IndexEntry): IndexEntry {
    const pairs = this.pairs;
    let low = 0;
    let high = this.count - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (pairs[middle * 2]! <= targetRelativeOffset) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    if (found < 0) {
      out.relativeOffset = 0;
      out.position = this.firstPosition;
    } else {
      out.relativeOffset = pairs[found * 2]!;
      out.position = pairs[found * 2 + 1]!;
    }
    return out;
  }

  /** The entry with the largest position ≤ `targetPosition` (the implicit one if none). */
  floorByPosition(targetPosition: number, out: IndexEntry): IndexEntry {
    const pairs = this.pairs;
    let low = 0;
    let high = this.count - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (pairs[middle * 2 + 1]! <= targetPosition) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    if (found < 0) {
      out.relativeOffset = 0;
      out.position = this.firstPosition;
    } else {
      out.relativeOffset = pairs[found * 2]!;
      out.position = pairs[found * 2 + 1]!;
    }
    return out;
  }
}
