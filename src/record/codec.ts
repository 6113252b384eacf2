/**
 * The record format: the same bytes live on disk, travel on the wire, and are checked by the client
 * (DESIGN invariant 4). This module owns that layout and nothing else; it does no I/O, so storage,
 * protocol and client all import it and it imports only the CRC and the domain.
 *
 * Record (big-endian), see docs/format.md:
 *
 *   offset  size  field
 *   0       4     length   payload length in bytes, 1 ≤ length ≤ maxPayloadBytes
 *   4       4     crc32c   CRC32C (Castagnoli) of the payload bytes only
 *   8       n     payload
 *
 * Invariants:
 * - length ≥ 1: a zero length is the end-of-log marker of a preallocated (mapped) segment.
 * - The CRC covers the payload, not the length: a damaged length is caught by the range check or by
 *   the CRC of the bytes it then points at; including it would not catch more and would cost a copy.
 * - Records carry no offsets; an offset is the record's index in the log, which is why the segment
 *   header carries the base offset (see storage/segment-header.ts).
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { RECORD_HEADER_BYTES } from "../domain/limits.ts";

export const LENGTH_OFFSET = 0;
export const LENGTH_BYTES = 4;
export const CRC_OFFSET = LENGTH_OFFSET + LENGTH_BYTES;
export const CRC_BYTES = 4;
export const PAYLOAD_OFFSET = CRC_OFFSET + CRC_BYTES;
if (PAYLOAD_OFFSET !== RECORD_HEADER_BYTES)
  throw new Error("record header layout changed; update docs/format.md");

/**
 * Writes one framed record at `target[position]` and returns the position after it. The caller
 * guarantees room; `view` is a DataView over the same buffer as `target` (reused, never created here).
 */
export function writeRecord(
  target: Uint8Array,
  view: DataView,
  position: number,
  payload: Uint8Array,
): number {
  const payloadBytes = payload.length;
  view.setUint32(position + CRC_OFFSET, crc32c(payload, 0, payloadBytes), false);
  target.set(payload, position + PAYLOAD_OFFSET);
  // The length goes last: it is what a reader of a mapped file looks at first.
  view.setUint32(position + LENGTH_OFFSET, payloadBytes, false);
  return position + RECORD_HEADER_BYTES + payloadBytes;
}

/** Why a scan stopped. */
export type ScanStop =
  /** Reached `end` exactly on a record boundary. */
  | "end"
  /** A zero length: the end-of-log marker of a mapped segment (or a hole). */
  | "zero-length"
  /** A length above the maximum payload (or negative as int32). */
  | "bad-length"
  /** The record's header or payload runs past `end`. */
  | "truncated"
  /** The payload does not match its CRC. */
  | "crc-mismatch";

/** Result of `scanRecords`, filled in place so a scan allocates nothing. */
export interface ScanResult {
  /** Position right after the last complete, valid record (relative to the same origin as `start`). */
  endPosition: number;
  /** Number of complete, valid records in [start, endPosition). */
  recordCount: number;
  stop: ScanStop;
}

export function newScanResult(): ScanResult {
  return { endPosition: 0, recordCount: 0, stop: "end" };
}

/** Called for each valid record a scan passes: (position of the record, its index in the scan). */
export type RecordVisitor = (position: number, recordIndex: number) => void;

/**
 * Walks the records in `bytes[start, end)` and stops at the first that is incomplete or invalid.
 * `verifyCrc = false` hops over length prefixes only (for trusted data, e.g. building an index of a
 * segment that was verified before). Never throws for bad data: the stop reason says what was found.
 */
export function scanRecords(
  bytes: Uint8Array,
  view: DataView,
  start: number,
  end: number,
  maxPayloadBytes: number,
  verifyCrc: boolean,
  out: ScanResult,
  visitor?: RecordVisitor,
): ScanResult {
  let position = start;
  let count = 0;
  let stop: ScanStop = "end";
  while (position < end) {
    if (end - position < RECORD_HEADER_BYTES) {
      // A zero length prefix that happens to sit in the last few bytes is still the end marker.
      stop =
        end - position >= LENGTH_BYTES && view.getUint32(position, false) === 0 ? "zero-length" : "truncated";
      break;
    }
    const length = view.getUint32(position + LENGTH_OFFSET, false);
    if (length === 0) {
      stop = "zero-length";
      break;
    }
    if (length > maxPayloadBytes) {
      stop = "bad-length";
      break;
    }
    const payloadStart = position + PAYLOAD_OFFSET;
    const recordEnd = payloadStart + length;
    if (recordEnd > end) {
      stop = "truncated";
      break;
    }
    if (
      verifyCrc &&
      crc32c(bytes, payloadStart, recordEnd) !== view.getUint32(position + CRC_OFFSET, false)
    ) {
      stop = "crc-mismatch";
      break;
    }
    if (visitor !== undefined) visitor(position, count);
    count++;
    position = recordEnd;
  }
  out.endPosition = position;
  out.recordCount = count;
  out.stop = stop;
  return out;
}

/**
 * Payload views of the complete records in `framed` (no copies; trailing partial bytes are ignored).
 * For tests, tools and the embedded API; hot paths walk records with `scanRecords`.
 */
export function payloadsOf(framed: Uint8Array): Uint8Array[] {
  const view = new DataView(framed.buffer, framed.byteOffset, framed.byteLength);
  const payloads: Uint8Array[] = [];
  let position = 0;
  while (framed.length - position >= RECORD_HEADER_BYTES) {
    const length = view.getUint32(position, false);
    const end = position + RECORD_HEADER_BYTES + length;
    if (length === 0 || end > framed.length) break;
    payloads.push(framed.subarray(position + RECORD_HEADER_BYTES, end));
    position = end;
  }
  return payloads;
}

/** Big-endian uint32 at `bytes[position]` without a DataView (so callers need not allocate one). */
export function readUint32(bytes: Uint8Array, position: number): number {
  return (
    ((bytes[position]! << 24) |
      (bytes[position + 1]! << 16) |
      (bytes[position + 2]! << 8) |
      bytes[position + 3]!) >>>
    0
  );
}
