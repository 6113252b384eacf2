/**
 * The bytes received on a connection and not yet framed: one growable buffer per connection, shared
 * in shape by the server (requests) and the client (responses). No I/O.
 *
 * Invariant: bytes [start, end) are received and not yet consumed. The buffer grows only to hold one
 * frame plus one chunk; the frame size is checked against its maximum before anyone waits for it, so
 * growth is bounded by the caller's limit.
 */
export class InboundBuffer {
  bytes: Uint8Array;
  start = 0;
  end = 0;

  constructor(initialBytes = 64 * 1024) {
    this.bytes = new Uint8Array(initialBytes);
  }

  get length(): number {
    return this.end - this.start;
  }

  /** Appends a chunk, compacting (or growing, doubling) when it does not fit behind the end. */
  append(chunk: Uint8Array): void {
    const length = this.end - this.start;
    if (this.end + chunk.length > this.bytes.length) {
      const needed = length + chunk.length;
      if (needed > this.bytes.length) {
        let capacity = this.bytes.length * 2;
        while (capacity < needed) capacity *= 2;
        const grown = new Uint8Array(capacity);
        grown.set(this.bytes.subarray(this.start, this.end));
        this.bytes = grown;
      } else {
        this.bytes.copyWithin(0, this.start, this.end);
      }
      this.start = 0;
      this.end = length;
    }
    this.bytes.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** Marks everything before `position` consumed. */
  consumeTo(position: number): void {
    this.start = position;
    if (this.start === this.end) {
      this.start = 0;
      this.end = 0;
    }
  }
}
