/**
 * Kafka's variable-length integers, as RecordBatch v2 records use them (Kafka's ByteUtils
 * readVarint/readVarlong/writeVarint/writeVarlong; protobuf's base-128 encoding). Owns nothing but
 * these encodings; no I/O, no allocation on a read or a write.
 *
 * Encoding, least significant group first:
 *
 *   byte  = 7 payload bits | 0x80 when another byte follows
 *   uvarint  unsigned, at most 5 bytes for 32 bits (the 5th byte carries 4 bits)
 *   varint   zigzag of an int32:  (n << 1) ^ (n >> 31)  →  0→0, -1→1, 1→2, -2→3 …; ≤ 5 bytes
 *   varlong  zigzag of an int64:  (n << 1) ^ (n >> 63); ≤ 10 bytes (the 10th carries 1 bit)
 *
 *   value          bytes
 *   0              00
 *   -1             01
 *   1              02
 *   63             7e
 *   -64            7f
 *   64             80 01
 *   2^31-1         fe ff ff ff 0f
 *   -2^31          ff ff ff ff 0f
 *
 * Invariants and choices:
 * - Record varints are zigzag; the lengths of Kafka's flexible protocol versions are unsigned
 *   (kafka-wire.md §1.3). Both exist here under different names so nobody shares one blindly.
 * - A read never looks at or past `end`: a value that runs into `end` is "truncated", one longer
 *   than 5 (10) bytes is "too long", and a 5th (10th) byte with bits beyond 32 (64) set is refused
 *   too (Kafka silently drops those bits; a canonical writer never sets them, so they mean damage).
 *   Each is a CorruptRecordError whose position is the varint's first byte in `bytes`.
 * - varlongs are JS numbers, never BigInt: read as two 32-bit halves and combined. Every value a
 *   record carries (timestamp deltas, in ms) is far below 2^53 (year 287,000); a varlong whose
 *   value lies outside ±(2^53 − 1) is a CorruptRecordError ("beyond 2^53"), never a rounded number.
 *   Writing such a value is an InvalidArgumentError.
 */
import { CorruptRecordError, InvalidArgumentError } from "../domain/errors.ts";

/** Where the next read starts; every read moves it past the bytes it consumed. */
export interface ReadCursor {
  position: number;
}

export const UVARINT_BYTES_MAX = 5;
export const VARLONG_BYTES_MAX = 10;

const TWO_TO_31 = 2 ** 31;
/** A zigzag varlong's high 32-bit half must stay below this for the value to be a safe integer. */
const SAFE_HIGH_HALF_LIMIT = 2 ** 22;

function truncated(what: string, start: number): CorruptRecordError {
  return new CorruptRecordError(`${what} is truncated: its last byte has the continuation bit set`, start);
}

/** An unsigned varint of at most 32 bits (returned as a non-negative number). */
export function readUnsignedVarint(bytes: Uint8Array, cursor: ReadCursor, end: number): number {
  const start = cursor.position;
  let position = start;
  if (position >= end) throw truncated("varint", start);
  let byte = bytes[position++]!;
  // One-byte values are by far the most common (small lengths, deltas); keep them branch-light.
  if (byte < 0x80) {
    cursor.position = position;
    return byte;
  }
  let value = byte & 0x7f;
  for (let shift = 7; shift <= 28; shift += 7) {
    if (position >= end) throw truncated("varint", start);
    byte = bytes[position++]!;
    if (shift === 28) {
      if (byte > 0x0f)
        throw new CorruptRecordError(
          byte >= 0x80 ? "varint is longer than 5 bytes" : "varint has bits beyond 32 set",
          start,
        );
      value = (value | (byte << 28)) >>> 0;
      cursor.position = position;
      return value;
    }
    value |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      cursor.position = position;
      return value >>> 0;
    }
  }
  throw new CorruptRecordError("varint is longer than 5 bytes", start);
}

/** A zigzag varint: an int32. */
export function readVarint(bytes: Uint8Array, cursor: ReadCursor, end: number): number {
  const position = cursor.position;
  // Fast path for one byte: values -64..63, which covers every attribute, most deltas and lengths.
  if (position < end) {
    const byte = bytes[position]!;
    if (byte < 0x80) {
      cursor.position = position + 1;
      return (byte >>> 1) ^ -(byte & 1);
    }
    // And for two: -8192..8191, the lengths of records and values below 8 KiB and the offset
    // deltas of a batch of up to 8,192 records (a 100-byte record has three such fields).
    if (position + 1 < end) {
      const second = bytes[position + 1]!;
      if (second < 0x80) {
        const raw = (byte & 0x7f) | (second << 7);
        cursor.position = position + 2;
        return (raw >>> 1) ^ -(raw & 1);
      }
    }
  }
  const raw = readUnsignedVarint(bytes, cursor, end);
  return (raw >>> 1) ^ -(raw & 1);
}

/**
 * A zigzag varlong as a JS number. Throws CorruptRecordError for a value outside ±(2^53 − 1)
 * instead of returning a rounded one.
 */
export function readVarlong(bytes: Uint8Array, cursor: ReadCursor, end: number): number {
  const start = cursor.position;
  let position = start;
  if (position < end) {
    const byte = bytes[position]!;
    if (byte < 0x80) {
      cursor.position = position + 1;
      return (byte >>> 1) ^ -(byte & 1);
    }
  }
  // Bits 0..27 from bytes 0..3, bits 28..31 from byte 4's low nibble, bits 32..63 from the rest.
  let low = 0;
  let high = 0;
  let shift = 0;
  for (let index = 0; ; index++) {
    if (index >= VARLONG_BYTES_MAX) throw new CorruptRecordError("varlong is longer than 10 bytes", start);
    if (position >= end) throw truncated("varlong", start);
    const byte = bytes[position++]!;
    const payload = byte & 0x7f;
    if (index < 4) {
      low |= payload << shift;
    } else if (index === 4) {
      low |= (payload & 0x0f) << 28;
      high = payload >>> 4;
    } else if (index === 9) {
      if (payload > 1) throw new CorruptRecordError("varlong has bits beyond 64 set", start);
      high |= payload << 31;
    } else {
      high |= payload << (shift - 32);
    }
    shift += 7;
    if (byte < 0x80) break;
  }
  low >>>= 0;
  high >>>= 0;
  // Zigzag: the lowest bit is the sign; the magnitude is the remaining 63 bits.
  const negative = (low & 1) === 1;
  if (high >= SAFE_HIGH_HALF_LIMIT)
    throw new CorruptRecordError("varlong value lies beyond 2^53 and cannot be a JS number exactly", start);
  const magnitude = high * TWO_TO_31 + (low >>> 1);
  // For a negative value the magnitude is (−n − 1), so −n − 1 ≤ 2^53 − 2 keeps n safe.
  if (negative && magnitude > Number.MAX_SAFE_INTEGER - 1)
    throw new CorruptRecordError("varlong value lies beyond 2^53 and cannot be a JS number exactly", start);
  cursor.position = position;
  return negative ? -magnitude - 1 : magnitude;
}

/** Writes an unsigned 32-bit varint at `position`; returns the position after it. */
export function writeUnsignedVarint(bytes: Uint8Array, position: number, value: number): number {
  let rest = value >>> 0;
  while (rest >= 0x80) {
    bytes[position++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  bytes[position++] = rest;
  return position;
}

/** Writes a zigzag int32 varint; the caller passes an int32 (checked: anything else is refused). */
export function writeVarint(bytes: Uint8Array, position: number, value: number): number {
  if ((value | 0) !== value)
    throw new InvalidArgumentError(`${value} does not fit a varint (an integer from -2^31 to 2^31 - 1)`);
  return writeUnsignedVarint(bytes, position, ((value << 1) ^ (value >> 31)) >>> 0);
}

/** Writes a zigzag varlong of a safe integer; returns the position after it. */
export function writeVarlong(bytes: Uint8Array, position: number, value: number): number {
  if (!Number.isSafeInteger(value))
    throw new InvalidArgumentError(`${value} does not fit a varlong here (a safe integer, |n| < 2^53)`);
  if (value >= -64 && value < 64) {
    bytes[position] = value >= 0 ? value << 1 : (-value << 1) - 1;
    return position + 1;
  }
  const negative = value < 0;
  const magnitude = negative ? -value - 1 : value;
  // raw = 2·magnitude + sign as (high, low) halves, computed without leaving exact integers.
  let low = (((magnitude % TWO_TO_31) * 2) | (negative ? 1 : 0)) >>> 0;
  let high = Math.floor(magnitude / TWO_TO_31);
  while (high !== 0 || low >= 0x80) {
    bytes[position++] = (low & 0x7f) | 0x80;
    low = ((low >>> 7) | ((high & 0x7f) << 25)) >>> 0;
    high = high >>> 7;
  }
  bytes[position++] = low;
  return position;
}

/** Bytes `writeUnsignedVarint` uses for `value`. */
export function sizeOfUnsignedVarint(value: number): number {
  const rest = value >>> 0;
  if (rest < 0x80) return 1;
  if (rest < 0x4000) return 2;
  if (rest < 0x200000) return 3;
  if (rest < 0x10000000) return 4;
  return 5;
}

/** Bytes `writeVarint` uses for the int32 `value`. */
export function sizeOfVarint(value: number): number {
  return sizeOfUnsignedVarint(((value << 1) ^ (value >> 31)) >>> 0);
}

/** Bytes `writeVarlong` uses for the safe integer `value`. */
export function sizeOfVarlong(value: number): number {
  const magnitude = value < 0 ? -value - 1 : value;
  // 2·magnitude + sign < 2^(7k) ⇔ magnitude < 2^(7k − 1).
  let size = 1;
  let limit = 64; // 2^6
  while (magnitude >= limit) {
    size++;
    limit *= 128;
  }
  return size;
}
