/**
 * Builds a batch of framed records in one reusable, growable buffer: the unit of append on disk and of
 * PRODUCE on the wire. `bytes()` is a view into the builder's buffer (no copy); it is valid until the
 * next `add` or `reset`.
 */
import { InvalidArgumentError, RecordTooLargeError } from "../domain/errors.ts";
import {
  RECORD_HEADER_BYTES,
  RECORD_PAYLOAD_BYTES_LIMIT,
  RECORD_PAYLOAD_BYTES_MIN,
} from "../domain/limits.ts";
import { writeRecord } from "./codec.ts";

const ENCODER = new TextEncoder();

export class RecordBatchBuilder {
  private buffer: Uint8Array;
  private view: DataView;
  private sizeBytes = 0;
  private count = 0;
  private readonly maxPayloadBytes: number;

  constructor(initialBytes = 64 * 1024, maxPayloadBytes = RECORD_PAYLOAD_BYTES_LIMIT) {
    this.buffer = new Uint8Array(initialBytes);
    this.view = new DataView(this.buffer.buffer);
    this.maxPayloadBytes = maxPayloadBytes;
  }

  /** Appends one record; strings are encoded as UTF-8. Refuses empty and oversized payloads. */
  add(value: Uint8Array | string): this {
    const payload = typeof value === "string" ? ENCODER.encode(value) : value;
    if (payload.length < RECORD_PAYLOAD_BYTES_MIN) {
      throw new InvalidArgumentError("a record must not be empty: a zero length marks the end of a log");
    }
    if (payload.length > this.maxPayloadBytes)
      throw new RecordTooLargeError(payload.length, this.maxPayloadBytes);
    this.ensureRoom(RECORD_HEADER_BYTES + payload.length);
    this.sizeBytes = writeRecord(this.buffer, this.view, this.sizeBytes, payload);
    this.count++;
    return this;
  }

  /**
   * Appends one record whose payload the caller already checked (non-empty, within the limit): the
   * producer's per-record path, without the checks and the string branch of `add`.
   */
  addChecked(payload: Uint8Array): void {
    this.ensureRoom(RECORD_HEADER_BYTES + payload.length);
    this.sizeBytes = writeRecord(this.buffer, this.view, this.sizeBytes, payload);
    this.count++;
  }

  /** The framed records added so far (a view, not a copy). */
  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.sizeBytes);
  }

  get recordCount(): number {
    return this.count;
  }

  get byteLength(): number {
    return this.sizeBytes;
  }

  /** Bytes the buffer holds before it must grow. */
  get capacityBytes(): number {
    return this.buffer.length;
  }

  reset(): void {
    this.sizeBytes = 0;
    this.count = 0;
  }

  private ensureRoom(moreBytes: number): void {
    const needed = this.sizeBytes + moreBytes;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.buffer.subarray(0, this.sizeBytes));
    this.buffer = grown;
    this.view = new DataView(grown.buffer);
  }
}

/** Frames `values` into a fresh buffer: convenient for tests and one-off appends. */
export function frameRecords(values: readonly (Uint8Array | string)[]): Uint8Array {
  const builder = new RecordBatchBuilder(Math.max(64, values.length * 64));
  for (const value of values) builder.add(value);
  return builder.bytes();
}
