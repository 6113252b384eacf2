/**
 * The bytes received on a connection and not yet framed: one growable buffer per connection, shared
 * in shape by the server (requests) and the client (responses). No I/O.
 *
 * Invariants: bytes [start, end) are received and not yet consumed. The buffer grows only to hold one
 * frame plus one chunk; the frame size is checked against its maximum before anyone waits for it, so
 * growth is bounded by the caller's limit. Growth doubles while that overshoots the need by at most
 * INBOUND_GROWTH_SLACK_BYTES, and adds the need plus that slack beyond: a 16 MiB frame completed by a chunk
 * that also carries the next frame's first bytes must not double the buffer to 32 MiB. The server
 * accounts `capacity` against its memory budget, so capacity is what matters, not length. A buffer
 * given away by `detach` is never written again (its new owner keeps views into it).
 */
import { INBOUND_GROWTH_SLACK_BYTES, INBOUND_INITIAL_BYTES } from "../domain/limits.ts";

/**
 * `length` bytes that are not zeroed first: a 1 MiB FETCH answer's buffer cost 116-209 µs zeroed
 * and filled against 66-74 µs unzeroed (Bun 1.4.4, one loop of 300, `new Uint8Array` against
 * `Buffer.allocUnsafe`); the zeroing was a tenth of a consumer's CPU (perf, 1 KiB records). Safe
 * here because only [start, end), bytes received, is ever read. A plain Uint8Array view, so that
 * what is handed out (record views) stays a Uint8Array rather than a Buffer. Above 4 KiB
 * `allocUnsafe` never takes from its shared pool (Node's and Bun's poolSize is 8 KiB).
 */
function uninitializedBytes(length: number): Uint8Array {
  if (length <= 4096) return new Uint8Array(length);
  const bytes = Buffer.allocUnsafe(length);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, length);
}

export class InboundBuffer {
  bytes: Uint8Array;
  start = 0;
  end = 0;

  constructor(initialBytes = INBOUND_INITIAL_BYTES) {
    this.bytes = new Uint8Array(initialBytes);
  }

  get length(): number {
    return this.end - this.start;
  }

  /** Bytes allocated, used or not. */
  get capacity(): number {
    return this.bytes.length;
  }

  /** Appends a chunk, compacting (or growing) when it does not fit behind the end. */
  append(chunk: Uint8Array): void {
    if (this.end + chunk.length > this.bytes.length) {
      const needed = this.end - this.start + chunk.length;
      if (needed > this.bytes.length) {
        this.reallocate(
          Math.max(needed, Math.min(this.bytes.length * 2, needed + INBOUND_GROWTH_SLACK_BYTES)),
        );
      } else {
        this.compact();
      }
    }
    this.bytes.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** Grows to exactly `capacityBytes` when smaller (a frame whose size is known and admitted). */
  ensureCapacity(capacityBytes: number): void {
    if (capacityBytes > this.bytes.length) this.reallocate(capacityBytes);
  }

  /**
   * Makes room for the whole frame of `frameBytes` that starts at `frameStart` (received in part),
   * plus INBOUND_GROWTH_SLACK_BYTES for what may follow it in the same chunk, so that no later
   * append moves the frame again: growing by doubling from 64 KiB copied a 1 MiB FETCH answer about
   * once more in all (64 + 128 + … + 512 KiB) before it was even complete. Everything before
   * `frameStart` counts as consumed. The caller checked `frameBytes` against its limit.
   */
  reserveFrame(frameStart: number, frameBytes: number): void {
    this.start = frameStart;
    if (frameStart + frameBytes <= this.bytes.length) return;
    if (frameBytes > this.bytes.length) this.reallocate(frameBytes + INBOUND_GROWTH_SLACK_BYTES);
    else this.compact();
  }

  /**
   * Gives the whole buffer away, bytes [0, frameEnd) included, and goes on with a new one holding
   * the received bytes after `frameEnd` (INBOUND_INITIAL_BYTES, or more when more follow). The caller may keep views into the returned bytes for as long as it likes: nothing here
   * writes to them again. For a response whose decoder keeps its payload (a FETCH's records): the
   * copy it would otherwise make is saved.
   */
  detach(frameEnd: number): Uint8Array {
    const given = this.bytes;
    const rest = this.end - frameEnd;
    this.bytes = uninitializedBytes(Math.max(INBOUND_INITIAL_BYTES, rest));
    if (rest > 0) this.bytes.set(given.subarray(frameEnd, this.end));
    this.start = 0;
    this.end = rest;
    return given;
  }

  /** Shrinks to `capacityBytes` when larger and the unconsumed bytes fit; returns whether it did. */
  shrinkTo(capacityBytes: number): boolean {
    if (this.bytes.length <= capacityBytes || this.end - this.start > capacityBytes) return false;
    this.reallocate(capacityBytes);
    return true;
  }

  /** Drops everything, unconsumed bytes included, and the allocation beyond `capacityBytes`. */
  clear(capacityBytes: number): void {
    this.start = 0;
    this.end = 0;
    if (this.bytes.length > capacityBytes) this.bytes = new Uint8Array(capacityBytes);
  }

  /** Marks everything before `position` consumed. */
  consumeTo(position: number): void {
    this.start = position;
    if (this.start === this.end) {
      this.start = 0;
      this.end = 0;
    }
  }

  private compact(): void {
    const length = this.end - this.start;
    this.bytes.copyWithin(0, this.start, this.end);
    this.start = 0;
    this.end = length;
  }

  private reallocate(capacityBytes: number): void {
    const length = this.end - this.start;
    const next = uninitializedBytes(capacityBytes);
    next.set(this.bytes.subarray(this.start, this.end));
    this.bytes = next;
    this.start = 0;
    this.end = length;
  }
}
