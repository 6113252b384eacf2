/**
 * The compression codecs of a RecordBatch v2 (attributes bits 0-2) and the ones this build can run.
 * Owns the codec numbers and names and the calls into Bun's built-in zlib; nothing else.
 *
 *   id  name    here
 *   0   none    -
 *   1   gzip    node:zlib gzipSync / gunzipSync
 *   2   snappy  known, not implemented (a later npm package; the broker stores it untouched)
 *   3   lz4     known, not implemented (likewise)
 *   4   zstd    node:zlib zstdCompressSync / zstdDecompressSync (present in Bun 1.4.4; checked)
 *   5-7 -       unknown: an error naming the number
 *
 * Invariants:
 * - Decompression never produces more than `maxBytes` (RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT by
 *   default): zlib stops at `maxOutputLength` instead of inflating a bomb into memory.
 * - Failures are CorruptRecordError at the position the caller names (the start of the compressed
 *   records inside the batch), with zlib's own message as the reason.
 */
import zlib from "node:zlib";
import { CorruptRecordError, InvalidArgumentError } from "../domain/errors.ts";
import { RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT } from "../domain/limits.ts";

export const CODEC_NONE = 0;
export const CODEC_GZIP = 1;
export const CODEC_SNAPPY = 2;
export const CODEC_LZ4 = 3;
export const CODEC_ZSTD = 4;
/** Codec ids the format defines (Kafka 2.1+); 5-7 fit the three bits but mean nothing. */
export const CODEC_ID_MAX = CODEC_ZSTD;

export type CompressionCodec = "none" | "gzip" | "snappy" | "lz4" | "zstd";
/** The codecs this build can produce. */
export type ProducibleCodec = "none" | "gzip" | "zstd";

export const CODEC_NAMES: readonly CompressionCodec[] = ["none", "gzip", "snappy", "lz4", "zstd"];

/** "gzip (1)", or "unknown codec 5" for ids outside the format. */
export function describeCodec(codecId: number): string {
  const name = CODEC_NAMES[codecId];
  return name === undefined ? `unknown codec ${codecId}` : `${name} (${codecId})`;
}

export function codecIdOf(codec: CompressionCodec): number {
  return CODEC_NAMES.indexOf(codec);
}

/** Compresses the encoded records of a batch. Only "gzip" and "zstd" reach here. */
export function compressRecords(codecId: number, records: Uint8Array): Uint8Array {
  if (codecId === CODEC_GZIP) return zlib.gzipSync(records);
  if (codecId === CODEC_ZSTD) return zlib.zstdCompressSync(records);
  throw new InvalidArgumentError(`cannot compress with ${describeCodec(codecId)}: gzip and zstd can`);
}

/**
 * Decompresses `bytes[start, end)`; `position` is where errors say the compressed records begin.
 * Returns a fresh buffer (the only allocation of a compressed batch's walk).
 */
export function decompressRecords(
  codecId: number,
  bytes: Uint8Array,
  start: number,
  end: number,
  position: number,
  maxBytes = RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT,
): Uint8Array {
  const input = bytes.subarray(start, end);
  try {
    if (codecId === CODEC_GZIP) return zlib.gunzipSync(input, { maxOutputLength: maxBytes });
    if (codecId === CODEC_ZSTD) return zlib.zstdDecompressSync(input, { maxOutputLength: maxBytes });
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    const tooLarge =
      error instanceof Error && (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE"
        ? ` (the records inflate beyond the ${maxBytes}-byte limit)`
        : "";
    throw new CorruptRecordError(
      `${describeCodec(codecId)} records do not decompress: ${detail}${tooLarge}`,
      position,
    );
  }
  throw new CorruptRecordError(
    `${describeCodec(codecId)} records cannot be decompressed by this build (gzip and zstd can)`,
    position,
  );
}
