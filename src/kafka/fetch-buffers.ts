/**
 * Reusable buffers for the Kafka listener's Fetch path: the read arena a Fetch's copying reads land
 * in (storage/segment.ts ReadArena) and the buffer its response frame is encoded into.
 *
 * Why: a fresh buffer per Fetch is zero-filled by the engine, page-faulted in by the kernel and
 * unmapped again after the collector frees it. With `perf record` on a broker serving kcat (64 MiB
 * of 100 B records, 1 MiB fetches, 2026-12-01) that was about 40 % of the broker's CPU on this path
 * (memset 10 %, page faults 10 %, unmapping, memcg charging and page-list locks the rest), against
 * 16 % for copying the file's bytes. A reused buffer costs none of it.
 *
 * Owns: the free buffers, by size (multiples of KAFKA_FETCH_BUFFER_STEP_BYTES up to
 * KAFKA_FETCH_BUFFER_BYTES_MAX), at most KAFKA_FETCH_BUFFER_POOL_BYTES_MAX bytes of them together.
 *
 * Invariants:
 * - A buffer is either free here or lent to one owner: `acquire` takes it out, `release` puts it
 *   back once (a second release of a free buffer is a programming error and throws). An owner that
 *   never releases a buffer (a closed connection with output pending) leaves it to the collector.
 * - A lent buffer holds an earlier owner's bytes. Owners hand out views of what they wrote or read
 *   into it, never of the whole buffer (KafkaWriter.written, Segment.read's result).
 * - Requests below one step, or above the largest size, are allocated as before and are not kept.
 *
 * Also owns the count of Fetch answer bytes held for their connections (encoded, not yet written
 * whole: a client that reads slowly or not at all keeps its answer here), against a limit, the
 * broker's `--max-inbound-memory`. A Fetch round reads at most the room left, and never less than
 * FETCH_ANSWER_FREE_BYTES (a first batch larger than that waits for room), so all answers together
 * stay within the limit plus that allowance per connection, and a reader is never starved by
 * others that do not read. Without the count, connections that asked for 64 MiB and never read held
 * 64 MiB each until the idle timeout (a hostile-input helper's run, 2026-12-03: 25 such
 * connections, 1.5 GiB of RSS); without the allowance, such readers starved every consumer.
 * Invariant: `heldBytes` is the sum of `hold` minus the sum of `unhold`; each answer's bytes are
 * held once when encoded and unheld once when written whole or when its connection closes.
 */
import { assert } from "../domain/assert.ts";
import {
  KAFKA_FETCH_BUFFER_BYTES_MAX,
  KAFKA_FETCH_BUFFER_POOL_BYTES_MAX,
  KAFKA_FETCH_BUFFER_STEP_BYTES,
} from "../domain/limits.ts";

export class FetchBufferPool {
  private readonly free = new Map<number, Uint8Array[]>();
  private readonly freeSet = new Set<Uint8Array>();
  private freeBytes = 0;
  /** Fetch answer bytes encoded and not yet written whole. */
  heldBytes = 0;
  /** Highest `heldBytes` seen, and Fetch rounds held to the free allowance (for /metrics). */
  heldPeakBytes = 0;
  roundsWithoutRoom = 0;
  readonly heldBytesMax: number;

  /** `heldBytesMax`: the limit of answer bytes held (the broker's `--max-inbound-memory`). */
  constructor(heldBytesMax = Number.MAX_SAFE_INTEGER) {
    this.heldBytesMax = heldBytesMax;
  }

  /** Bytes left under the limit (0 or less: none; a round still reads FETCH_ANSWER_FREE_BYTES). */
  roomBytes(): number {
    return this.heldBytesMax - this.heldBytes;
  }

  /** An answer of `bytes` is now held for its connection. */
  hold(bytes: number): void {
    this.heldBytes += bytes;
    if (this.heldBytes > this.heldPeakBytes) this.heldPeakBytes = this.heldBytes;
  }

  /** An answer held with `hold` was written whole, or its connection closed. */
  unhold(bytes: number): void {
    this.heldBytes -= bytes;
    assert(this.heldBytes >= 0, "more fetch answer bytes unheld than held");
  }

  /** A buffer of at least `minBytes`: a free one of its size if there is one. */
  acquire(minBytes: number): Uint8Array {
    const size = pooledSize(minBytes);
    if (size === undefined) return new Uint8Array(minBytes);
    const buffer = this.free.get(size)?.pop();
    if (buffer === undefined) return new Uint8Array(size);
    this.freeSet.delete(buffer);
    this.freeBytes -= size;
    return buffer;
  }

  /** Gives back a buffer from `acquire` whose views nobody uses any more. */
  release(buffer: Uint8Array): void {
    assert(!this.freeSet.has(buffer), "a fetch buffer is released twice");
    const size = buffer.length;
    if (pooledSize(size) !== size || buffer.byteOffset !== 0 || buffer.buffer.byteLength !== size) return;
    if (this.freeBytes + size > KAFKA_FETCH_BUFFER_POOL_BYTES_MAX) return;
    let list = this.free.get(size);
    if (list === undefined) {
      list = [];
      this.free.set(size, list);
    }
    list.push(buffer);
    this.freeSet.add(buffer);
    this.freeBytes += size;
  }
}

/** The pooled size for a request of `bytes`, or undefined when such requests are not pooled. */
function pooledSize(bytes: number): number | undefined {
  if (bytes < KAFKA_FETCH_BUFFER_STEP_BYTES || bytes > KAFKA_FETCH_BUFFER_BYTES_MAX) return undefined;
  return Math.ceil(bytes / KAFKA_FETCH_BUFFER_STEP_BYTES) * KAFKA_FETCH_BUFFER_STEP_BYTES;
}
