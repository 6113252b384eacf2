/**
 * The in-memory sparse indexes of one segment, offset and time: (relative offset, position,
 * largest timestamp before) triples, one per `intervalBytes` of log, each at the start of an
 * entry (a stored batch). Derived data, rebuilt by scanning, never written to disk.
 *
 * Offset lookup: the last entry whose relative offset ≤ the target starts an entry at or before
 * the one containing the target; the caller walks entry headers forward from it (at most about one
 * interval). Time lookup: the last entry whose "largest timestamp before" is < T. No record before
 * it has a timestamp ≥ T, so the first such record is at or after it; the caller walks forward.
 *
 * Invariants:
 * - An implicit first entry maps relative offset 0 to the first entry position (after the header),
 *   with no timestamp before it; it is not stored.
 * - Stored entries are strictly increasing in both relative offset and position, each stored
 *   position is at least `intervalBytes` past the previous one (stored or implicit), and the
 *   timestamps are non-decreasing (each is a running maximum).
 * - Entries are only added for entries whose bytes are completely written.
 *
 * Storage: one Int32Array of interleaved pairs (relative offset, position) and one Float64Array of
 * the running timestamp maximum per stored entry, both starting at INDEX_INITIAL_ENTRIES and
 * doubling together.
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
  /** Per stored entry: the largest record timestamp of every entry before it (ms). */
  private timestamps: Float64Array;
  private count = 0;
  private lastPosition: number;

  constructor(intervalBytes: number, firstPosition: number) {
    this.intervalBytes = intervalBytes;
    this.firstPosition = firstPosition;
    this.lastPosition = firstPosition;
    this.pairs = new Int32Array(INDEX_INITIAL_ENTRIES * 2);
    this.timestamps = new Float64Array(INDEX_INITIAL_ENTRIES);
  }

  get entryCount(): number {
    return this.count;
  }

  /** Bytes held by the entry arrays (for memory accounting and the growth test). */
  get memoryBytes(): number {
    return this.pairs.byteLength + this.timestamps.byteLength;
  }

  /**
   * Offers an entry that starts at `position` with its first relative offset; `maxTimestampBefore`
   * is the largest record timestamp of all entries before it (−1 when none). Stored when it is an
   * interval past the last stored entry.
   */
  offer(relativeOffset: number, position: number, maxTimestampBefore = -1): void {
    if (position - this.lastPosition < this.intervalBytes) return;
    if (this.count * 2 === this.pairs.length) {
      const grown = new Int32Array(this.pairs.length * 2);
      grown.set(this.pairs);
      this.pairs = grown;
      const grownTimestamps = new Float64Array(this.timestamps.length * 2);
      grownTimestamps.set(this.timestamps);
      this.timestamps = grownTimestamps;
    }
    this.pairs[this.count * 2] = relativeOffset;
    this.pairs[this.count * 2 + 1] = position;
    this.timestamps[this.count] = maxTimestampBefore;
    this.count++;
    this.lastPosition = position;
  }

  /** Index entry `found` into `out`; −1 is the implicit entry at the segment's first position. */
  private entryAt(found: number, out: IndexEntry): void {
    if (found < 0) {
      out.relativeOffset = 0;
      out.position = this.firstPosition;
    } else {
      out.relativeOffset = this.pairs[found * 2]!;
      out.position = this.pairs[found * 2 + 1]!;
    }
  }

  /** The entry with the largest relative offset ≤ `targetRelativeOffset` (the implicit one if none). */
  lookup(targetRelativeOffset: number, out: IndexEntry): IndexEntry {
    this.entryAt(this.floorByRelativeOffset(targetRelativeOffset), out);
    return out;
  }

  /** The stored entry with the largest relative offset ≤ the target; −1: the implicit one. */
  private floorByRelativeOffset(targetRelativeOffset: number): number {
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
    return found;
  }

  /**
   * The largest record timestamp of every entry before the one `lookup(targetRelativeOffset)`
   * finds (−1 for the implicit entry): with a walk from that entry, the largest timestamp of a
   * prefix of the segment without reading the prefix.
   */
  maxTimestampBefore(targetRelativeOffset: number): number {
    const found = this.floorByRelativeOffset(targetRelativeOffset);
    return found < 0 ? -1 : this.timestamps[found]!;
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
    this.entryAt(found, out);
    return out;
  }

  /**
   * The last entry before which no record has a timestamp ≥ `timestampMs` (the implicit one if
   * none): the first record with a timestamp ≥ `timestampMs` lies at or after it.
   */
  lookupByTimestamp(timestampMs: number, out: IndexEntry): IndexEntry {
    const timestamps = this.timestamps;
    let low = 0;
    let high = this.count - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (timestamps[middle]! < timestampMs) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    this.entryAt(found, out);
    return out;
  }
}
