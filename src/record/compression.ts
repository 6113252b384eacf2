/**
 * The compression codecs of a RecordBatch v2 (attributes bits 0-2) and the ones this build can run.
 * Owns the codec numbers and names and the calls into the codec libraries; nothing else.
 *
 *   id  name    compress   decompress
 *   0   none    -          -
 *   1   gzip    node:zlib gzipSync / gunzipSync
 *   2   snappy  no         snappyjs (pure JS): raw snappy, or the xerial framing Java clients write
 *   3   lz4     no         lz4js (pure JS): the LZ4 frame format (Kafka's since magic 1)
 *   4   zstd    node:zlib zstdCompressSync / zstdDecompressSync (present in Bun 1.4.4; checked; in
 *               Node.js since 22.15 and 23.8: older Node gets an error naming the codec, not a crash)
 *   5-7 -       unknown: an error naming the number
 *
 * Why these two packages (the README's dependency list says the same): Bun has no snappy or lz4;
 * snappyjs and lz4js are pure JavaScript (no native addon to build, nothing downloaded at install,
 * they run inside the single executable), MIT/ISC, small enough to read, and the most used pure-JS
 * implementations on npm (snappyjs is what kafkajs-snappy runs). Only the consumer side needs them:
 * the broker stores snappy and lz4 batches untouched and never inflates them.
 *
 * Invariants:
 * - Decompression never produces more than `maxBytes` (RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT by
 *   default): zlib stops at `maxOutputLength`; snappy's and lz4's declared or bounded sizes are
 *   checked before their output is allocated, so a bomb is refused, not inflated into memory.
 * - Failures are CorruptRecordError at the position the caller names (the start of the compressed
 *   records inside the batch), with the library's own message as the reason.
 */
import zlib from "node:zlib";
import lz4 from "lz4js";
import snappy from "snappyjs";
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

/**
 * Whether this runtime's node:zlib has zstd: Bun 1.4.4 does, Node.js only since 22.15 and 23.8 (the
 * client library runs on Node.js ≥ 20, where calling the absent function would be a bare TypeError).
 */
export const ZSTD_AVAILABLE: boolean =
  typeof zlib.zstdCompressSync === "function" && typeof zlib.zstdDecompressSync === "function";

/** Undefined when this runtime can run `codecId`, else the reason, naming the codec and the runtime. */
export function codecUnavailableReason(codecId: number): string | undefined {
  if (codecId !== CODEC_ZSTD || ZSTD_AVAILABLE) return undefined;
  return `${describeCodec(codecId)} is not available in this runtime: node:zlib has zstd in Bun and in Node.js 22.15, 23.8 and later; this is Node.js ${process.versions.node} (use a newer Node.js or Bun, or gzip)`;
}

/** Compresses the encoded records of a batch. Only "gzip" and "zstd" reach here. */
export function compressRecords(codecId: number, records: Uint8Array): Uint8Array {
  if (codecId === CODEC_GZIP) return zlib.gzipSync(records);
  const unavailable = codecUnavailableReason(codecId);
  if (unavailable !== undefined) throw new InvalidArgumentError(`cannot compress: ${unavailable}`);
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
  // Not corrupt: valid records this runtime cannot inflate (zstd on Node.js before 22.15).
  const unavailable = codecUnavailableReason(codecId);
  if (unavailable !== undefined) {
    throw new InvalidArgumentError(`cannot decompress the records at byte ${position}: ${unavailable}`);
  }
  try {
    if (codecId === CODEC_GZIP) return zlib.gunzipSync(input, { maxOutputLength: maxBytes });
    if (codecId === CODEC_ZSTD) return zlib.zstdDecompressSync(input, { maxOutputLength: maxBytes });
    if (codecId === CODEC_SNAPPY) return decompressSnappy(input, maxBytes);
    if (codecId === CODEC_LZ4) return decompressLz4(input, maxBytes);
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
  throw new CorruptRecordError(`${describeCodec(codecId)} records cannot be decompressed`, position);
}

class TooLargeError extends Error {
  readonly code = "ERR_BUFFER_TOO_LARGE";
}

/** xerial snappy-java's stream header: magic "\x82SNAPPY\0", version, compatible version (16 bytes). */
const XERIAL_MAGIC = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00];
const XERIAL_HEADER_BYTES = 16;

function isXerial(input: Uint8Array): boolean {
  if (input.length < XERIAL_HEADER_BYTES) return false;
  for (let i = 0; i < XERIAL_MAGIC.length; i++) if (input[i] !== XERIAL_MAGIC[i]) return false;
  return true;
}

/**
 * Snappy as Kafka clients send it: Java's producer (snappy-java) writes the xerial framing (a
 * 16-byte header, then blocks of [u32 length][raw snappy]); librdkafka and kafkajs write either
 * that or one raw snappy block. snappyjs checks each block's declared length against the room left.
 */
function decompressSnappy(input: Uint8Array, maxBytes: number): Uint8Array {
  if (!isXerial(input)) return snappy.uncompress(input, maxBytes);
  const blocks: Uint8Array[] = [];
  let total = 0;
  let position = XERIAL_HEADER_BYTES;
  while (position < input.length) {
    if (input.length - position < 4) throw new Error(`xerial block length cut at byte ${position}`);
    const length =
      ((input[position]! << 24) |
        (input[position + 1]! << 16) |
        (input[position + 2]! << 8) |
        input[position + 3]!) >>>
      0;
    position += 4;
    if (length > input.length - position)
      throw new Error(`xerial block of ${length} bytes at byte ${position - 4} runs past the end`);
    const block = snappy.uncompress(input.subarray(position, position + length), maxBytes - total);
    total += block.length;
    blocks.push(block);
    position += length;
  }
  if (blocks.length === 1) return blocks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const block of blocks) {
    out.set(block, at);
    at += block.length;
  }
  return out;
}

/**
 * LZ4 frames (Kafka's format for magic 1 and 2). lz4js bounds the output by the frame's content
 * size or by its blocks' maximum sizes (64 KiB each as Kafka's and librdkafka's producers write
 * them); the buffer is that bound, at most `maxBytes`. lz4js drops writes past the buffer's end but
 * still counts them, so a frame that inflates further is seen and refused. It does not check a
 * frame against its input's end either: the record walker checks the records, as for every codec.
 */
function decompressLz4(input: Uint8Array, maxBytes: number): Uint8Array {
  const bound = lz4.decompressBound(input) as unknown as number;
  if (!(Number.isSafeInteger(bound) && bound >= 0))
    throw new Error(`the LZ4 frame declares an impossible size ${String(bound)}`);
  const out = new Uint8Array(Math.min(bound, maxBytes));
  const written = lz4.decompressFrame(input, out);
  if (written > out.length) throw new TooLargeError(`the LZ4 frame inflates to ${written} bytes`);
  if (!(written >= 0)) throw new Error(`the LZ4 frame decoded to ${written} bytes`);
  return out.subarray(0, written);
}
