/**
 * The segment file header and file naming.
 *
 * Every segment starts with a header that repeats its base offset, checked against the file name
 * when the segment is opened: a renamed or copied file is refused rather than read under the wrong
 * offsets. (Format 1's records carried no offsets at all; format 2's entries carry their stamped
 * BaseOffset, which recovery also checks against the header's base offset.) The version says how
 * the rest of the file is laid out: 2 = framed RecordBatch v2 entries (docs/format.md); 1 = format
 * 1's framed payloads, read only by `booblik-cli migrate`.
 *
 * Header (big-endian), 32 bytes, see docs/format.md:
 *
 *   offset  size  field
 *   0       4     magic          0x424B4C47 ("BKLG")
 *   4       2     formatVersion  2 (1: format 1, migrate only)
 *   6       2     headerBytes    32 (records start here)
 *   8       4     baseOffset     high 32 bits
 *   12      4     baseOffset     low 32 bits
 *   16      12    reserved       zero
 *   28      4     crc32c         CRC32C of bytes [0, 28)
 *
 * File name: the base offset in 20 zero-padded decimal digits, then ".log" (Kafka's form), so that a
 * directory listing sorts segments by offset.
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { BadSegmentFileError, SegmentFormatVersionError } from "../domain/errors.ts";
import { type Offset, toOffset } from "../domain/ids.ts";
import { SEGMENT_HEADER_BYTES, SEGMENT_NAME_DIGITS } from "../domain/limits.ts";

export const SEGMENT_MAGIC = 0x424b4c47;
export const SEGMENT_FORMAT_VERSION = 2;

const MAGIC_OFFSET = 0;
const VERSION_OFFSET = MAGIC_OFFSET + 4;
const HEADER_BYTES_OFFSET = VERSION_OFFSET + 2;
const BASE_OFFSET_HIGH_OFFSET = HEADER_BYTES_OFFSET + 2;
const BASE_OFFSET_LOW_OFFSET = BASE_OFFSET_HIGH_OFFSET + 4;
const RESERVED_OFFSET = BASE_OFFSET_LOW_OFFSET + 4;
const HEADER_CRC_OFFSET = RESERVED_OFFSET + 12;
if (HEADER_CRC_OFFSET + 4 !== SEGMENT_HEADER_BYTES)
  throw new Error("segment header layout changed; update docs");

export const SEGMENT_FILE_SUFFIX = ".log";
const SEGMENT_FILE_PATTERN = new RegExp(`^(\\d{${SEGMENT_NAME_DIGITS}})\\.log$`);

export function segmentFileName(baseOffset: Offset): string {
  return `${String(baseOffset).padStart(SEGMENT_NAME_DIGITS, "0")}${SEGMENT_FILE_SUFFIX}`;
}

/** The base offset a segment file name claims, or undefined when the name is not a segment's. */
export function parseSegmentFileName(name: string): Offset | undefined {
  const match = SEGMENT_FILE_PATTERN.exec(name);
  if (match === null) return undefined;
  const value = Number(match[1]);
  return Number.isSafeInteger(value) ? (value as Offset) : undefined;
}

/**
 * Quarantine files (issue 15): bytes recovery cut from a segment while they held whole, valid entries
 * are copied first into `<segment file>.quarantine-<file position>` next to it. Each belongs to its
 * segment: retention, a purge and a topic's deletion remove it with the segment (PartitionLog).
 */
const QUARANTINE_FILE_PATTERN = new RegExp(`^(\\d{${SEGMENT_NAME_DIGITS}})\\.log\\.quarantine-(\\d+)$`);

export function quarantineFileName(baseOffset: Offset, position: number): string {
  return `${segmentFileName(baseOffset)}.quarantine-${position}`;
}

/** The segment and file position a quarantine file's name claims, or undefined for other names. */
export function parseQuarantineFileName(name: string): { baseOffset: Offset; position: number } | undefined {
  const match = QUARANTINE_FILE_PATTERN.exec(name);
  if (match === null) return undefined;
  const baseOffset = Number(match[1]);
  const position = Number(match[2]);
  if (!Number.isSafeInteger(baseOffset) || !Number.isSafeInteger(position)) return undefined;
  return { baseOffset: baseOffset as Offset, position };
}

/** `formatVersion` other than the current one is for `booblik-cli migrate` and tests only. */
export function encodeSegmentHeader(baseOffset: Offset, formatVersion = SEGMENT_FORMAT_VERSION): Uint8Array {
  const bytes = new Uint8Array(SEGMENT_HEADER_BYTES);
  const view = new DataView(bytes.buffer);
  view.setUint32(MAGIC_OFFSET, SEGMENT_MAGIC, false);
  view.setUint16(VERSION_OFFSET, formatVersion, false);
  view.setUint16(HEADER_BYTES_OFFSET, SEGMENT_HEADER_BYTES, false);
  view.setUint32(BASE_OFFSET_HIGH_OFFSET, Math.floor(baseOffset / 2 ** 32), false);
  view.setUint32(BASE_OFFSET_LOW_OFFSET, baseOffset >>> 0, false);
  view.setUint32(HEADER_CRC_OFFSET, crc32c(bytes, 0, HEADER_CRC_OFFSET), false);
  return bytes;
}

/**
 * Whether a header's magic and checksum hold (whatever its version and base offset say): a header
 * that fails either is damaged, not a file of another format or another name.
 */
export function segmentHeaderIntact(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, SEGMENT_HEADER_BYTES);
  return (
    view.getUint32(MAGIC_OFFSET, false) === SEGMENT_MAGIC &&
    view.getUint32(HEADER_CRC_OFFSET, false) === crc32c(bytes, 0, HEADER_CRC_OFFSET)
  );
}

/**
 * Checks a header read from `path` and returns its base offset. `expectedBaseOffset` is what the file
 * name says; a mismatch means the file was renamed or copied and is refused. A header of another
 * format version than `formatVersion` (the current one unless `booblik-cli migrate` reads an old
 * segment) is a `SegmentFormatVersionError`, so the broker can name the conversion command.
 */
export function decodeSegmentHeader(
  bytes: Uint8Array,
  bytesRead: number,
  path: string,
  expectedBaseOffset: Offset | undefined,
  formatVersion = SEGMENT_FORMAT_VERSION,
): Offset {
  if (bytesRead < SEGMENT_HEADER_BYTES) {
    throw new BadSegmentFileError(
      path,
      `file is ${bytesRead} bytes long, shorter than the ${SEGMENT_HEADER_BYTES}-byte header`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, SEGMENT_HEADER_BYTES);
  const magic = view.getUint32(MAGIC_OFFSET, false);
  if (magic !== SEGMENT_MAGIC) {
    throw new BadSegmentFileError(
      path,
      `not a booblik segment (magic 0x${magic.toString(16).padStart(8, "0")})`,
    );
  }
  const storedCrc = view.getUint32(HEADER_CRC_OFFSET, false);
  const actualCrc = crc32c(bytes, 0, HEADER_CRC_OFFSET);
  if (storedCrc !== actualCrc) throw new BadSegmentFileError(path, "header checksum mismatch");
  const version = view.getUint16(VERSION_OFFSET, false);
  if (version !== formatVersion) throw new SegmentFormatVersionError(path, version, formatVersion);
  const headerBytes = view.getUint16(HEADER_BYTES_OFFSET, false);
  if (headerBytes !== SEGMENT_HEADER_BYTES) {
    throw new BadSegmentFileError(path, `header size ${headerBytes} is not ${SEGMENT_HEADER_BYTES}`);
  }
  const baseOffset = toOffset(
    view.getUint32(BASE_OFFSET_HIGH_OFFSET, false) * 2 ** 32 + view.getUint32(BASE_OFFSET_LOW_OFFSET, false),
    "segment base offset",
  );
  if (expectedBaseOffset !== undefined && baseOffset !== expectedBaseOffset) {
    throw new BadSegmentFileError(
      path,
      `header says base offset ${baseOffset} but the file name says ${expectedBaseOffset} (renamed or copied file?)`,
    );
  }
  return baseOffset;
}
