/**
 * Topic configuration: what it holds, its defaults, its validation, and its file.
 *
 * `<dataDir>/topics/<name>.json`, written atomically (temporary file, fsync, rename, fsync of the
 * directory). The config file is the commit point of both create and delete: a topic exists exactly
 * when its file exists. Create writes the partition directories first and the file last; delete
 * removes the file first and the directories after; at start-up, partition directories without a
 * config file are leftovers of an interrupted create or delete and are removed.
 */
import { InvalidArgumentError } from "../domain/errors.ts";
import { type TopicName, toTopicName } from "../domain/ids.ts";
import {
  ENTRY_HEADER_BYTES,
  FLUSH_INTERVAL_MS_MAX,
  INDEX_INTERVAL_BYTES_DEFAULT,
  PARTITIONS_MAX,
  RECORD_BATCH_BYTES_MIN,
  RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  RECORD_PAYLOAD_BYTES_LIMIT,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { segmentConfig } from "../storage/segment.ts";
import { WRITE_MODES, type WriteMode } from "../storage/segment-writer.ts";

/**
 * When a PRODUCE is acknowledged:
 * - `append`: after the records are written to the page cache; the OS writes them back later. A crash
 *   of the process loses nothing; a crash of the machine can lose the last seconds.
 * - `force`: after a force (fdatasync) that covers them; group commit lets one force answer every
 *   producer waiting. Nothing acknowledged is lost, whatever crashes.
 * - `interval`: like `append`, plus a force every `flushIntervalMs`: a machine crash loses at most
 *   about that much.
 */
export const DURABILITY_POLICIES = ["append", "force", "interval"] as const;
export type DurabilityPolicy = (typeof DURABILITY_POLICIES)[number];

/**
 * Which timestamp a topic's records carry (Kafka's `message.timestamp.type`):
 * - `CreateTime`: the producer's, stored as sent;
 * - `LogAppendTime`: the broker's clock at append; every batch is stamped (attribute bit 3,
 *   MaxTimestamp = the append time, batch CRC recomputed) and every record of it reads that time.
 */
export const TIMESTAMP_TYPES = ["CreateTime", "LogAppendTime"] as const;
export type TimestampType = (typeof TIMESTAMP_TYPES)[number];

/**
 * What a topic does with old records (Kafka's `cleanup.policy`):
 * - `delete`: sealed segments go by `retentionMs` and `retentionBytes` (Kafka's default).
 * - `compact`: Kafka keeps at least the latest record of each key and applies no retention. booblik
 *   does not compact: it keeps every record, and applies no retention either. That gives a reader
 *   every guarantee Kafka gives one of a compacted topic (the latest record of each key, in order,
 *   at unchanged offsets; Kafka too leaves the active segment and recent records uncompacted, so
 *   readers already see superseded records) but frees no space. Every record needs a key, as in
 *   Kafka (Partition.append refuses one without).
 * - `compact,delete`: both: retention applies, and every record needs a key.
 * Why accepted at all: the tools that make compacted topics (Kafka Connect's internal topics, Kafka
 * Streams' changelogs, MirrorMaker 2's offset syncs) refuse to run without them.
 */
export const CLEANUP_POLICIES = ["delete", "compact", "compact,delete"] as const;
export type CleanupPolicy = (typeof CLEANUP_POLICIES)[number];

export interface TopicConfig {
  partitions: number;
  durability: DurabilityPolicy;
  /** Force interval of the `interval` policy. */
  flushIntervalMs: number;
  writeMode: WriteMode;
  segmentBytes: number;
  /** Largest record batch accepted, whole (Kafka's max.message.bytes): the payload of one entry frame. */
  maxRecordBytes: number;
  indexIntervalBytes: number;
  /** Delete old sealed segments beyond this many bytes per partition; null keeps everything. */
  retentionBytes: number | null;
  /**
   * Delete sealed segments whose largest record timestamp (or last append, when that timestamp
   * lies in the future) is older than this; null keeps everything.
   */
  retentionMs: number | null;
  timestampType: TimestampType;
  /** Kafka's `cleanup.policy` (CLEANUP_POLICIES): no retention when `compact`, keys required when compacted. */
  cleanupPolicy: CleanupPolicy;
}

export const DEFAULT_TOPIC_CONFIG: Readonly<TopicConfig> = {
  partitions: 1,
  durability: "force",
  flushIntervalMs: 1000,
  writeMode: "file",
  segmentBytes: SEGMENT_BYTES_DEFAULT,
  maxRecordBytes: RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  indexIntervalBytes: INDEX_INTERVAL_BYTES_DEFAULT,
  retentionBytes: null,
  retentionMs: null,
  timestampType: "CreateTime",
  cleanupPolicy: "delete",
};

const KEYS = Object.keys(DEFAULT_TOPIC_CONFIG) as (keyof TopicConfig)[];

/**
 * An integer setting within [min, max]. The message names the key and the range the value really
 * has (and, in `why`, what bounds it when that is another setting or the broker): clients are
 * written from docs/protocol.md, which promises "a message naming the key".
 */
function integerIn(key: string, value: unknown, min: number, max: number, why?: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const reason = why === undefined ? "" : ` (${why})`;
    throw new InvalidArgumentError(
      `${key} must be an integer in [${min}, ${max}]${reason}, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function optionalLimit(key: string, value: unknown): number | null {
  if (value === null || value === undefined) return null;
  return integerIn(key, value, 1, Number.MAX_SAFE_INTEGER);
}

/**
 * A bound on record payloads from outside the topic's settings: the broker's maximum request frame,
 * which a PRODUCE of one record must fit. Given when a topic is created over the wire, not when one
 * is read back from its file (a topic made under a larger frame limit stays readable).
 */
export interface RecordBytesCeiling {
  bytes: number;
  /** Why, for the message: names the frame limit. */
  why: string;
}

/** The largest maxRecordBytes for `segmentBytes` (and `ceiling`), and what sets it. */
function recordBytesMax(segmentBytes: number, ceiling?: RecordBytesCeiling): { max: number; why: string } {
  const fitsSegment = segmentBytes - SEGMENT_HEADER_BYTES - ENTRY_HEADER_BYTES;
  let bound = {
    max: RECORD_PAYLOAD_BYTES_LIMIT,
    why: `the hard limit of ${RECORD_PAYLOAD_BYTES_LIMIT} bytes`,
  };
  if (fitsSegment < bound.max) {
    bound = {
      max: fitsSegment,
      why:
        `a batch and its ${ENTRY_HEADER_BYTES}-byte frame must fit a segment of ${segmentBytes} ` +
        `bytes after its ${SEGMENT_HEADER_BYTES}-byte header`,
    };
  }
  if (ceiling !== undefined && ceiling.bytes < bound.max) bound = { max: ceiling.bytes, why: ceiling.why };
  return bound;
}

/**
 * Merges `partial` over `defaults` and validates every field; unknown fields are refused. A
 * maxRecordBytes that `partial` does not set shrinks to the largest that fits (segment, `ceiling`).
 */
export function validateTopicConfig(
  partial: Record<string, unknown>,
  defaults: Readonly<TopicConfig>,
  ceiling?: RecordBytesCeiling,
): TopicConfig {
  for (const key of Object.keys(partial)) {
    if (!(KEYS as string[]).includes(key)) {
      throw new InvalidArgumentError(
        `unknown topic setting ${JSON.stringify(key)}; known: ${KEYS.join(", ")}`,
      );
    }
  }
  const merged = { ...defaults, ...partial } as Record<keyof TopicConfig, unknown>;
  const durability = merged.durability;
  if (!DURABILITY_POLICIES.includes(durability as DurabilityPolicy)) {
    throw new InvalidArgumentError(
      `durability must be one of ${DURABILITY_POLICIES.join(", ")}, got ${JSON.stringify(durability)}`,
    );
  }
  const writeMode = merged.writeMode;
  if (!WRITE_MODES.includes(writeMode as WriteMode)) {
    throw new InvalidArgumentError(
      `writeMode must be one of ${WRITE_MODES.join(", ")}, got ${JSON.stringify(writeMode)}`,
    );
  }
  const timestampType = merged.timestampType;
  if (!TIMESTAMP_TYPES.includes(timestampType as TimestampType)) {
    throw new InvalidArgumentError(
      `timestampType must be one of ${TIMESTAMP_TYPES.join(", ")}, got ${JSON.stringify(timestampType)}`,
    );
  }
  const cleanupPolicy = merged.cleanupPolicy;
  if (!CLEANUP_POLICIES.includes(cleanupPolicy as CleanupPolicy)) {
    throw new InvalidArgumentError(
      `cleanupPolicy must be one of ${CLEANUP_POLICIES.join(", ")}, got ${JSON.stringify(cleanupPolicy)}`,
    );
  }
  const segmentBytes = integerIn("segmentBytes", merged.segmentBytes, SEGMENT_BYTES_MIN, SEGMENT_BYTES_MAX);
  const records = recordBytesMax(segmentBytes, ceiling);
  // Without an explicit record limit in `partial`, a small segment or frame gets the largest record
  // that fits it, rather than an error about a default the user never chose.
  if (partial.maxRecordBytes === undefined && typeof merged.maxRecordBytes === "number") {
    merged.maxRecordBytes = Math.min(merged.maxRecordBytes, records.max);
  }
  const config: TopicConfig = {
    partitions: integerIn("partitions", merged.partitions, 1, PARTITIONS_MAX),
    durability: durability as DurabilityPolicy,
    flushIntervalMs: integerIn("flushIntervalMs", merged.flushIntervalMs, 1, FLUSH_INTERVAL_MS_MAX),
    writeMode: writeMode as WriteMode,
    segmentBytes,
    maxRecordBytes: integerIn(
      "maxRecordBytes",
      merged.maxRecordBytes,
      RECORD_BATCH_BYTES_MIN,
      records.max,
      records.why,
    ),
    indexIntervalBytes: integerIn(
      "indexIntervalBytes",
      merged.indexIntervalBytes,
      1,
      Number.MAX_SAFE_INTEGER,
    ),
    retentionBytes: optionalLimit("retentionBytes", merged.retentionBytes),
    retentionMs: optionalLimit("retentionMs", merged.retentionMs),
    timestampType: timestampType as TimestampType,
    cleanupPolicy: cleanupPolicy as CleanupPolicy,
  };
  // Checked above already, key by key; the segment layer's own checks must agree (a backstop).
  segmentConfig(storageConfigOf(config));
  return config;
}

export function storageConfigOf(config: TopicConfig) {
  return {
    writeMode: config.writeMode,
    segmentBytes: config.segmentBytes,
    maxPayloadBytes: config.maxRecordBytes,
    indexIntervalBytes: config.indexIntervalBytes,
  };
}

const FILE_VERSION = 1;

/**
 * The topic file's text. `cleanupPolicy` is written only when not `delete`: a file without it reads
 * as `delete` (files written before it existed, 2026-12-03), and a binary from before then can still
 * open the topics that do not use it.
 */
export function encodeTopicFile(name: TopicName, config: TopicConfig): string {
  const { cleanupPolicy, ...rest } = config;
  const stored = cleanupPolicy === "delete" ? rest : config;
  return `${JSON.stringify({ version: FILE_VERSION, name, config: stored }, null, 2)}\n`;
}

/** Whether a topic of `config` keeps at least the latest record of each key (Kafka's compacted topic). */
export function isCompacted(config: Pick<TopicConfig, "cleanupPolicy">): boolean {
  return config.cleanupPolicy !== "delete";
}

/** Parses a topic file; throws InvalidArgumentError naming the file when it is not one. */
export function decodeTopicFile(
  text: string,
  filePath: string,
  defaults: Readonly<TopicConfig>,
): {
  name: TopicName;
  config: TopicConfig;
} {
  let parsed: { version?: unknown; name?: unknown; config?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (error) {
    throw new InvalidArgumentError(`topic file ${filePath} is not JSON: ${(error as Error).message}`);
  }
  if (
    parsed.version !== FILE_VERSION ||
    typeof parsed.name !== "string" ||
    typeof parsed.config !== "object"
  ) {
    throw new InvalidArgumentError(`topic file ${filePath} has an unknown format`);
  }
  const name = toTopicName(parsed.name);
  // Not the broker's default: a file without the key predates it, and meant `delete`.
  const stored = { cleanupPolicy: "delete", ...(parsed.config as Record<string, unknown>) };
  const config = validateTopicConfig(stored, defaults);
  return { name, config };
}
