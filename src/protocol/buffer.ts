/**
 * Byte cursors for the wire codec: a growable writer that the caller reuses, and a bounds-checked
 * reader over a frame payload. No I/O.
 *
 * Encodings (big-endian, like the record format):
 * - u8, u16, u32: unsigned integers. The writer refuses a u32 that is not an integer in [0, 2^32)
 *   rather than wrapping it (2^32 as a partition once went out as partition 0).
 * - u64: two u32 halves, high first. Values stay below 2^53 (offsets are JS numbers; no BigInt on
 *   the hot path): the writer refuses anything but a non-negative safe integer, the reader larger ones.
 * - i64: as u64, with -1 encoded as 0xFFFFFFFF_FFFFFFFF (used for "no limit").
 * - string: u16 byte length, then UTF-8 bytes.
 * - bytes: u32 byte length, then the bytes.
 *
 * Invariant: a Reader never reads outside [start, end) of its frame; a field that would cross the end
 * throws ProtocolError naming the field, its position and how many bytes it needed and had.
 */
import { BooblikError, InvalidArgumentError } from "../domain/errors.ts";
import { DECODED_STRING_CACHED_BYTES_MAX } from "../domain/limits.ts";

/** A request or frame that breaks the protocol: answered with INVALID_REQUEST or a closed connection. */
export class ProtocolError extends BooblikError {
  constructor(message: string) {
    super("INVALID_REQUEST", message);
  }
}

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder("utf-8", { fatal: true });
const TWO_TO_32 = 2 ** 32;

/**
 * A value a writer cannot encode: an argument of the caller (a client API, the CLI), so an
 * InvalidArgumentError; built only when throwing.
 */
function outOfRange(type: string, value: number, range: string): InvalidArgumentError {
  return new InvalidArgumentError(`${value} does not fit a ${type} field (${range})`);
}

export class ByteWriter {
  bytes: Uint8Array;
  view: DataView;
  position = 0;

  constructor(initialBytes = 1024) {
    this.bytes = new Uint8Array(initialBytes);
    this.view = new DataView(this.bytes.buffer);
  }

  reset(): this {
    this.position = 0;
    return this;
  }

  ensure(moreBytes: number): void {
    const needed = this.position + moreBytes;
    if (needed <= this.bytes.length) return;
    let capacity = this.bytes.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.bytes.subarray(0, this.position));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }

  u8(value: number): this {
    this.ensure(1);
    this.bytes[this.position++] = value;
    return this;
  }

  u16(value: number): this {
    this.ensure(2);
    this.view.setUint16(this.position, value, false);
    this.position += 2;
    return this;
  }

  u32(value: number): this {
    // One comparison: `>>> 0` maps every value that is not an integer in [0, 2^32) (NaN, fractions,
    // negatives, 2^32 and up) to a different number.
    if (value >>> 0 !== value) throw outOfRange("u32", value, "an integer from 0 to 2^32 - 1");
    this.ensure(4);
    this.view.setUint32(this.position, value, false);
    this.position += 4;
    return this;
  }

  u64(value: number): this {
    if (!(value >= 0 && Number.isSafeInteger(value)))
      throw outOfRange("u64", value, "an integer from 0 to 2^53 - 1");
    this.ensure(8);
    this.view.setUint32(this.position, Math.floor(value / TWO_TO_32), false);
    this.view.setUint32(this.position + 4, value >>> 0, false);
    this.position += 8;
    return this;
  }

  /** -1 or a non-negative value below 2^53 (anything else is refused by u64). */
  i64(value: number): this {
    if (value === -1) {
      this.ensure(8);
      this.view.setUint32(this.position, 0xffffffff, false);
      this.view.setUint32(this.position + 4, 0xffffffff, false);
      this.position += 8;
      return this;
    }
    return this.u64(value);
  }

  string(value: string): this {
    // Worst case 3 bytes per UTF-16 unit; encodeInto writes in place.
    this.ensure(2 + value.length * 3);
    const { written } = ENCODER.encodeInto(value, this.bytes.subarray(this.position + 2));
    if (written > 0xffff) throw new ProtocolError(`string of ${written} bytes is longer than 65535`);
    this.view.setUint16(this.position, written, false);
    this.position += 2 + written;
    return this;
  }

  bytesField(value: Uint8Array): this {
    this.ensure(4 + value.length);
    this.view.setUint32(this.position, value.length, false);
    this.bytes.set(value, this.position + 4);
    this.position += 4 + value.length;
    return this;
  }

  /** Overwrites a u32 at an earlier position (a size filled in afterwards). */
  patchU32(at: number, value: number): void {
    // A frame size of 4 GiB or more would wrap into a small, wrong one.
    if (value >>> 0 !== value) throw outOfRange("u32", value, "an integer from 0 to 2^32 - 1");
    this.view.setUint32(at, value, false);
  }

  /** The bytes written so far (a view, valid until the next write or reset). */
  written(): Uint8Array {
    return this.bytes.subarray(0, this.position);
  }
}

/**
 * The last string decoded and its UTF-8 bytes: a connection names the same topic request after
 * request, and comparing up to 249 bytes costs less than a subarray, a decode and a new string per
 * request (issue 13's profile of 1-record PRODUCEs). One entry, shared by every reader (one thread).
 */
let cachedStringBytes = new Uint8Array(0);
let cachedString = "";

/** `origin`: where the frame starts in `bytes`, so that an error gives the position in the frame. */
function decodedString(
  bytes: Uint8Array,
  start: number,
  length: number,
  field: string,
  origin: number,
): string {
  const cached = cachedStringBytes;
  if (cached.length === length) {
    let same = true;
    for (let i = 0; i < length; i++) {
      if (bytes[start + i] !== cached[i]) {
        same = false;
        break;
      }
    }
    if (same) return cachedString;
  }
  let value: string;
  try {
    value = DECODER.decode(bytes.subarray(start, start + length));
  } catch {
    throw new ProtocolError(`${field} at byte ${start - origin} is not valid UTF-8`);
  }
  if (length <= DECODED_STRING_CACHED_BYTES_MAX) {
    cachedStringBytes = bytes.slice(start, start + length);
    cachedString = value;
  }
  return value;
}

export class ByteReader {
  private bytes: Uint8Array;
  position: number;
  end: number;
  /** Where the frame starts in `bytes`: errors give positions from it (`at byte N` of the frame). */
  private readonly origin: number;

  /** Reads `bytes[start, end)`, which belongs to a frame starting at `bytes[origin]`. */
  constructor(bytes: Uint8Array, start = 0, end = bytes.length, origin = 0) {
    // No DataView: one per request was a measurable share of a 1-record PRODUCE (issue 13); the
    // big-endian reads below are a few byte loads each.
    this.bytes = bytes;
    this.position = start;
    this.end = end;
    this.origin = origin;
  }

  /** Position in the frame (from its size field), for error messages. */
  get framePosition(): number {
    return this.position - this.origin;
  }

  private u16At(at: number): number {
    const bytes = this.bytes;
    return (bytes[at]! << 8) | bytes[at + 1]!;
  }

  private u32At(at: number): number {
    const bytes = this.bytes;
    return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
  }

  get remaining(): number {
    return this.end - this.position;
  }

  /**
   * Throws unless `bytes` more are left. The field's name is `field` + `suffix`, joined only when
   * throwing: callers pass constants, so a field read that succeeds builds no string.
   */
  private need(bytes: number, field: string, suffix = ""): void {
    if (this.end - this.position < bytes) {
      throw new ProtocolError(
        `${field}${suffix} at byte ${this.position - this.origin} needs ${bytes} bytes, ${Math.max(0, this.end - this.position)} left in the frame`,
      );
    }
  }

  u8(field: string): number {
    this.need(1, field);
    return this.bytes[this.position++]!;
  }

  u16(field: string): number {
    this.need(2, field);
    const value = this.u16At(this.position);
    this.position += 2;
    return value;
  }

  u32(field: string): number {
    this.need(4, field);
    const value = this.u32At(this.position);
    this.position += 4;
    return value;
  }

  u64(field: string): number {
    this.need(8, field);
    const high = this.u32At(this.position);
    const low = this.u32At(this.position + 4);
    this.position += 8;
    if (high >= 0x200000) throw new ProtocolError(`${field} is ${high} * 2^32 + ${low}, beyond 2^53`);
    return high * TWO_TO_32 + low;
  }

  i64(field: string): number {
    this.need(8, field);
    if (this.u32At(this.position) === 0xffffffff && this.u32At(this.position + 4) === 0xffffffff) {
      this.position += 8;
      return -1;
    }
    return this.u64(field);
  }

  string(field: string): string {
    this.need(2, field, " length");
    const length = this.u16At(this.position);
    this.position += 2;
    this.need(length, field);
    const value = decodedString(this.bytes, this.position, length, field, this.origin);
    this.position += length;
    return value;
  }

  /** A length-prefixed byte field, as a view into the frame (no copy). */
  bytesField(field: string): Uint8Array {
    this.need(4, field, " length");
    const length = this.u32At(this.position);
    this.position += 4;
    this.need(length, field);
    const value = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  /**
   * A length-prefixed byte field left where it is: returns where its bytes start in `source`; they
   * end at the reader's position after the call. No view (the broker's PRODUCE path, issue 13).
   */
  bytesFieldStart(field: string): number {
    this.need(4, field, " length");
    const length = this.u32At(this.position);
    this.position += 4;
    this.need(length, field);
    const start = this.position;
    this.position += length;
    return start;
  }

  /** The bytes being read (positions are into them). */
  get source(): Uint8Array {
    return this.bytes;
  }

  /** The rest of the frame as a view (no copy); the reader ends up at the end. */
  restView(): Uint8Array {
    const value = this.bytes.subarray(this.position, this.end);
    this.position = this.end;
    return value;
  }

  /** Refuses bytes left over after the last field: a frame means exactly what it says. */
  expectEnd(what: string): void {
    if (this.position !== this.end) {
      throw new ProtocolError(
        `${what} has ${this.end - this.position} unexpected bytes after its last field`,
      );
    }
  }
}
