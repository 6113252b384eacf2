/**
 * The bytes received on a connection and not yet framed: one growable buffer per connection, shared
 * in shape by the server (requests) and the client (responses). No I/O.
 *
 * Invariants: bytes [start, end) are received and not yet consumed. The buffer grows only to hold one
 * frame plus one chunk; the frame size is checked against its maximum before anyone waits for it, so
 * growth is bounded by the caller's limit. Growth doubles while that overshoots the need by at most
 * INBOUND_GROWTH_SLACK_BYTES, and adds the need plus that slack beyond: a 16 MiB frame completed by a chunk
 * that also carries the next frame's first bytes must not double the buffer to 32 MiB. The server
 * accounts `capacity` against its memory budget, so capacity is what matters, not length.
 */
import { INBOUND_GROWTH_SLACK_BYTES, INBOUND_INITIAL_BYTES } from "../domain/limits.ts";

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
    const next = new Uint8Array(capacityBytes);
    next.set(this.bytes.subarray(this.start, this.end));
    this.bytes = next;
    this.start = 0;
    this.end = length;
  }
}
