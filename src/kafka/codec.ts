/**
 * The primitive types of the Kafka wire protocol, sans I/O: a bounds-checked reader over one request
 * frame and a growable writer for responses. Layouts from Apache Kafka's `protocol/types/Type.java`
 * and `ByteUtils.java` (kafka-wire.md §1.3); everything is big-endian.
 *
 *   int8/int16/int32      two's complement
 *   int64                 two's complement; read and written as a JS number, so a value beyond
 *                         ±(2^53 − 1) is refused (no BigInt on the request path)
 *   boolean               one byte, non-zero = true
 *   STRING                int16 length (≥ 0), UTF-8          NULLABLE_STRING: length −1 = null
 *   BYTES                 int32 length (≥ 0)                 NULLABLE_BYTES:  length −1 = null
 *   ARRAY                 int32 count, −1 = null
 *   UNSIGNED_VARINT       7 bits per byte, low first, ≤ 5 bytes (≤ 2^32 − 1)
 *   COMPACT_STRING/BYTES  UNSIGNED_VARINT length + 1 (0 = null), then the bytes
 *   COMPACT_ARRAY         UNSIGNED_VARINT count + 1 (0 = null)
 *   TAG_BUFFER            UNSIGNED_VARINT count, then per field: UNSIGNED_VARINT tag, UNSIGNED_VARINT
 *                         size, size bytes. A broker may skip tags it does not know (KIP-482).
 *
 * One composite lives here too, because several requests share its layout: a nullable list of
 * topics with partition indexes (`readNullableTopicPartitions`: DescribeLogDirs, ElectLeaders).
 *
 * The unsigned varints of flexible versions are not the zigzag varints of the record format
 * (src/record/varint.ts): sharing one helper would misread every length (kafka-wire.md §1.3).
 *
 * Invariants:
 * - A KafkaReader never reads outside [start, end) of its frame. A field that would cross the end,
 *   a negative length where none is allowed, an array count larger than the bytes left could hold,
 *   or invalid UTF-8 throws KafkaProtocolError naming the field and the byte position in the frame.
 *   Nothing else is thrown by a read.
 * - Byte fields are views into the frame (no copies); they are valid as long as the frame is.
 */
import { BooblikError } from "../domain/errors.ts";
import { STRING_BYTES_MAX } from "../domain/limits.ts";

/** A request that breaks Kafka's layout: the listener answers nothing and closes the connection. */
export class KafkaProtocolError extends BooblikError {
  /** Byte position inside the request frame (after its 4-byte size). */
  readonly position: number;
  constructor(message: string, position: number) {
    super("INVALID_REQUEST", message);
    this.position = position;
  }
}

const DECODER = new TextDecoder("utf-8", { fatal: true });
const ENCODER = new TextEncoder();
const TWO_TO_32 = 2 ** 32;

export class KafkaReader {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  position: number;
  readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.position = start;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.position;
  }

  private need(bytes: number, field: string): void {
    if (this.end - this.position < bytes) {
      throw new KafkaProtocolError(
        `${field} at byte ${this.position} needs ${bytes} bytes, ${Math.max(0, this.end - this.position)} left in the request`,
        this.position,
      );
    }
  }

  int8(field: string): number {
    this.need(1, field);
    return this.view.getInt8(this.position++);
  }

  boolean(field: string): boolean {
    return this.int8(field) !== 0;
  }

  int16(field: string): number {
    this.need(2, field);
    const value = this.view.getInt16(this.position, false);
    this.position += 2;
    return value;
  }

  int32(field: string): number {
    this.need(4, field);
    const value = this.view.getInt32(this.position, false);
    this.position += 4;
    return value;
  }

  int64(field: string): number {
    this.need(8, field);
    const high = this.view.getInt32(this.position, false);
    const low = this.view.getUint32(this.position + 4, false);
    const value = high * TWO_TO_32 + low;
    if (!Number.isSafeInteger(value)) {
      throw new KafkaProtocolError(
        `${field} at byte ${this.position} lies beyond ±2^53 and cannot be used exactly`,
        this.position,
      );
    }
    this.position += 8;
    return value;
  }

  uvarint(field: string): number {
    const start = this.position;
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      this.need(1, field);
      const byte = this.bytes[this.position++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) {
        if (value >= TWO_TO_32) break;
        return value;
      }
    }
    throw new KafkaProtocolError(
      `${field} at byte ${start} is an unsigned varint longer than 5 bytes or beyond 2^32 - 1`,
      start,
    );
  }

  private text(length: number, field: string): string {
    this.need(length, field);
    const start = this.position;
    let value: string;
    try {
      value = DECODER.decode(this.bytes.subarray(start, start + length));
    } catch {
      throw new KafkaProtocolError(`${field} at byte ${start} is not valid UTF-8`, start);
    }
    this.position += length;
    return value;
  }

  /** STRING or NULLABLE_STRING; `null` only when `nullable`. */
  nullableString(field: string): string | null {
    const at = this.position;
    const length = this.int16(field);
    if (length === -1) return null;
    if (length < 0) throw new KafkaProtocolError(`${field} at byte ${at} has length ${length}`, at);
    return this.text(length, field);
  }

  string(field: string): string {
    const at = this.position;
    const value = this.nullableString(field);
    if (value === null) throw new KafkaProtocolError(`${field} at byte ${at} is null`, at);
    return value;
  }

  compactNullableString(field: string): string | null {
    const lengthPlusOne = this.uvarint(field);
    if (lengthPlusOne === 0) return null;
    return this.text(lengthPlusOne - 1, field);
  }

  compactString(field: string): string {
    const at = this.position;
    const value = this.compactNullableString(field);
    if (value === null) throw new KafkaProtocolError(`${field} at byte ${at} is null`, at);
    return value;
  }

  /** NULLABLE_BYTES as a view into the frame. */
  nullableBytes(field: string): Uint8Array | null {
    const at = this.position;
    const length = this.int32(field);
    if (length === -1) return null;
    if (length < 0) throw new KafkaProtocolError(`${field} at byte ${at} has length ${length}`, at);
    this.need(length, field);
    const value = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  /** COMPACT_NULLABLE_BYTES (unsigned varint length + 1, 0 = null) as a view into the frame. */
  compactNullableBytes(field: string): Uint8Array | null {
    const at = this.position;
    const lengthPlusOne = this.uvarint(field);
    if (lengthPlusOne === 0) return null;
    const length = lengthPlusOne - 1;
    if (length < 0) throw new KafkaProtocolError(`${field} at byte ${at} has length ${length}`, at);
    this.need(length, field);
    const value = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return value;
  }

  /**
   * An ARRAY count (−1 = null only when `nullable`). The count is refused when the bytes left could
   * not hold that many elements of at least `elementBytesMin` bytes each: a 4-byte count must never
   * make the broker allocate or loop for 2^31 elements.
   */
  arrayCount(field: string, elementBytesMin: number, nullable = false): number {
    const at = this.position;
    const count = this.int32(field);
    if (count === -1 && nullable) return -1;
    return this.checkCount(count, field, elementBytesMin, at);
  }

  /** A COMPACT_ARRAY count (−1 = null only when `nullable`). */
  compactArrayCount(field: string, elementBytesMin: number, nullable = false): number {
    const at = this.position;
    const countPlusOne = this.uvarint(field);
    if (countPlusOne === 0) {
      if (nullable) return -1;
      throw new KafkaProtocolError(`${field} at byte ${at} is null`, at);
    }
    return this.checkCount(countPlusOne - 1, field, elementBytesMin, at);
  }

  private checkCount(count: number, field: string, elementBytesMin: number, at: number): number {
    if (count < 0) throw new KafkaProtocolError(`${field} at byte ${at} has a negative count ${count}`, at);
    if (count * elementBytesMin > this.end - this.position) {
      throw new KafkaProtocolError(
        `${field} at byte ${at} counts ${count} elements of at least ${elementBytesMin} bytes, but only ${this.end - this.position} bytes are left`,
        at,
      );
    }
    return count;
  }

  /** Skips a TAG_BUFFER: no tagged field of the versions served here means anything to booblik. */
  skipTaggedFields(field: string): void {
    const count = this.uvarint(`${field} tag count`);
    for (let i = 0; i < count; i++) {
      this.uvarint(`${field} tag`);
      const size = this.uvarint(`${field} tag size`);
      this.need(size, `${field} tagged field`);
      this.position += size;
    }
  }

  /** Refuses bytes after the last field: a request means exactly what it says. */
  expectEnd(what: string): void {
    if (this.position !== this.end) {
      throw new KafkaProtocolError(
        `${what} has ${this.end - this.position} unexpected bytes after its last field (at byte ${this.position})`,
        this.position,
      );
    }
  }
}

export class KafkaWriter {
  bytes: Uint8Array;
  private view: DataView;
  position = 0;
  /**
   * The non-zero error codes written with `errorCode` since the last `reset`, in order (one per
   * partition, member, topic… that has one): what /metrics counts per API and code.
   */
  readonly errorCodes: number[] = [];

  /**
   * A writer into a new buffer of `initial` bytes, or into the given buffer (a reused one may hold
   * earlier bytes: only `written()` is ever handed out). Either grows into a new buffer when full.
   */
  constructor(initial: number | Uint8Array = 1024) {
    this.bytes = typeof initial === "number" ? new Uint8Array(initial) : initial;
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  reset(): this {
    this.position = 0;
    this.errorCodes.length = 0;
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

  int8(value: number): this {
    this.ensure(1);
    this.view.setInt8(this.position++, value);
    return this;
  }

  boolean(value: boolean): this {
    return this.int8(value ? 1 : 0);
  }

  int16(value: number): this {
    this.ensure(2);
    this.view.setInt16(this.position, value, false);
    this.position += 2;
    return this;
  }

  /** An ERROR_CODE field (an int16); a non-zero one is also noted in `errorCodes`. */
  errorCode(code: number): this {
    if (code !== 0) this.errorCodes.push(code);
    return this.int16(code);
  }

  int32(value: number): this {
    this.ensure(4);
    this.view.setInt32(this.position, value, false);
    this.position += 4;
    return this;
  }

  /** A safe integer (−1 included) as a two's complement int64. */
  int64(value: number): this {
    this.ensure(8);
    const high = Math.floor(value / TWO_TO_32);
    this.view.setInt32(this.position, high, false);
    this.view.setUint32(this.position + 4, value - high * TWO_TO_32, false);
    this.position += 8;
    return this;
  }

  uvarint(value: number): this {
    this.ensure(5);
    let rest = value >>> 0;
    while (rest >= 0x80) {
      this.bytes[this.position++] = (rest & 0x7f) | 0x80;
      rest >>>= 7;
    }
    this.bytes[this.position++] = rest;
    return this;
  }

  /**
   * STRING / NULLABLE_STRING (int16 length). A value over STRING_BYTES_MAX bytes of UTF-8 is cut at
   * the last whole character that fits (`encodeInto` writes only whole characters): the length
   * used to wrap to a negative int16 and the frame became garbage for whoever read it. Only a
   * string the broker composes can be that long (a request's own strings have an int16 length);
   * the composers bound theirs (member ids: MEMBER_ID_PREFIX_CHARS_MAX), so this cuts at most an
   * error message that quotes a long name.
   */
  nullableString(value: string | null): this {
    if (value === null) return this.int16(-1);
    const room = Math.min(value.length * 3, STRING_BYTES_MAX);
    this.ensure(2 + room);
    const start = this.position + 2;
    const { written } = ENCODER.encodeInto(value, this.bytes.subarray(start, start + room));
    this.view.setInt16(this.position, written, false);
    this.position += 2 + written;
    return this;
  }

  string(value: string): this {
    return this.nullableString(value);
  }

  compactNullableString(value: string | null): this {
    if (value === null) return this.uvarint(0);
    const encoded = ENCODER.encode(value);
    this.uvarint(encoded.length + 1);
    return this.raw(encoded);
  }

  compactString(value: string): this {
    return this.compactNullableString(value);
  }

  /** NULLABLE_BYTES (int32 length). */
  nullableBytes(value: Uint8Array | null): this {
    if (value === null) return this.int32(-1);
    this.int32(value.length);
    return this.raw(value);
  }

  /** COMPACT_BYTES (unsigned varint length + 1). */
  compactBytes(value: Uint8Array): this {
    this.uvarint(value.length + 1);
    return this.raw(value);
  }

  arrayCount(count: number): this {
    return this.int32(count);
  }

  compactArrayCount(count: number): this {
    return this.uvarint(count + 1);
  }

  /** An empty TAG_BUFFER. */
  emptyTaggedFields(): this {
    return this.uvarint(0);
  }

  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length);
    this.bytes.set(bytes, this.position);
    this.position += bytes.length;
    return this;
  }

  patchInt32(at: number, value: number): void {
    this.view.setInt32(at, value, false);
  }

  /** The bytes written so far (a view, valid until the next write or reset). */
  written(): Uint8Array {
    return this.bytes.subarray(0, this.position);
  }
}

const NO_BYTES = new Uint8Array(0);

/**
 * The fields of one version of a request, read in that version's forms: STRING or COMPACT_STRING,
 * ARRAY or COMPACT_ARRAY, and a TAG_BUFFER where a flexible version (KIP-482) has one. For decoders
 * that serve both kinds of versions with one body (group-messages.ts).
 */
export class VersionedReader {
  constructor(
    readonly reader: KafkaReader,
    readonly flexible: boolean,
  ) {}

  string(field: string): string {
    return this.flexible ? this.reader.compactString(field) : this.reader.string(field);
  }

  nullableString(field: string): string | null {
    return this.flexible ? this.reader.compactNullableString(field) : this.reader.nullableString(field);
  }

  /** BYTES (a null one read as empty, as the group APIs treat it): a view into the frame. */
  bytes(field: string): Uint8Array {
    return (
      (this.flexible ? this.reader.compactNullableBytes(field) : this.reader.nullableBytes(field)) ?? NO_BYTES
    );
  }

  /** An array's count (−1: null, only when `nullable`); see KafkaReader.arrayCount. */
  count(field: string, elementBytesMin: number, nullable = false): number {
    return this.flexible
      ? this.reader.compactArrayCount(field, elementBytesMin, nullable)
      : this.reader.arrayCount(field, elementBytesMin, nullable);
  }

  /** The TAG_BUFFER of a flexible version (its fields mean nothing here); nothing otherwise. */
  tags(field: string): void {
    if (this.flexible) this.reader.skipTaggedFields(field);
  }
}

/** The writer's side of VersionedReader. */
export class VersionedWriter {
  constructor(
    readonly writer: KafkaWriter,
    readonly flexible: boolean,
  ) {}

  string(value: string): this {
    if (this.flexible) this.writer.compactString(value);
    else this.writer.string(value);
    return this;
  }

  nullableString(value: string | null): this {
    if (this.flexible) this.writer.compactNullableString(value);
    else this.writer.nullableString(value);
    return this;
  }

  bytes(value: Uint8Array): this {
    if (this.flexible) this.writer.compactBytes(value);
    else this.writer.nullableBytes(value);
    return this;
  }

  count(count: number): this {
    if (this.flexible) this.writer.compactArrayCount(count);
    else this.writer.arrayCount(count);
    return this;
  }

  /** An empty TAG_BUFFER in a flexible version; nothing otherwise. */
  tags(): this {
    if (this.flexible) this.writer.emptyTaggedFields();
    return this;
  }
}

/** A topic and partition indexes, as several requests name them (DescribeLogDirs, ElectLeaders). */
export interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/**
 * A NULLABLE ARRAY[topic STRING, partitions ARRAY[INT32]] (null: every partition), compact with a
 * TAG_BUFFER per topic when `flexible`. `what` names the request in errors.
 */
export function readNullableTopicPartitions(
  reader: KafkaReader,
  flexible: boolean,
  field: string,
  what: string,
): TopicPartitions[] | null {
  // topic (a string of at least its length: 2 bytes, 1 compact), partitions count (4, 1 compact),
  // and a tag buffer (1) when flexible.
  const topicCount = flexible
    ? reader.compactArrayCount(field, 1 + 1 + 1, true)
    : reader.arrayCount(field, 2 + 4, true);
  if (topicCount < 0) return null;
  const topics: TopicPartitions[] = [];
  for (let t = 0; t < topicCount; t++) {
    const topic = flexible ? reader.compactString("topic") : reader.string("topic");
    const partitionCount = flexible
      ? reader.compactArrayCount("partitions", 4)
      : reader.arrayCount("partitions", 4);
    const partitions: number[] = [];
    for (let p = 0; p < partitionCount; p++) partitions.push(reader.int32("partition"));
    if (flexible) reader.skipTaggedFields(`${what} topic`);
    topics.push({ topic, partitions });
  }
  return topics;
}
