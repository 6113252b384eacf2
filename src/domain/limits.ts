/**
 * Every limit booblik enforces, in one place, with the relationships between them checked when this
 * module loads (TigerBeetle's constants.zig idea): a limit that contradicts another one is a bug that
 * must stop the process before it opens a single file, not a surprise found under load.
 *
 * Units are in the names. "Bytes" always means bytes on disk or on the wire.
 */
import { assert } from "./assert.ts";

// --- Records -------------------------------------------------------------------------------------

/** `[int32 length][int32 crc32c(payload)]` in front of every payload. */
export const RECORD_HEADER_BYTES = 8;
/** A payload of zero bytes would be indistinguishable from the end-of-log marker in a mapped file. */
export const RECORD_PAYLOAD_BYTES_MIN = 1;
/** Default largest payload a partition accepts. Configurable per broker up to the hard limit below. */
export const RECORD_PAYLOAD_BYTES_DEFAULT_MAX = 1024 * 1024;
/** Hard ceiling on a payload, whatever the configuration says. */
export const RECORD_PAYLOAD_BYTES_LIMIT = 64 * 1024 * 1024;

// --- RecordBatch v2 (src/record/batch.ts; the coming format 2) ----------------------------------

/**
 * Fixed part of a RecordBatch v2, BaseOffset through RecordCount (Kafka's DefaultRecordBatch
 * RECORD_BATCH_OVERHEAD). A batch shorter than this cannot even be read.
 */
export const RECORD_BATCH_OVERHEAD_BYTES = 61;
/**
 * Largest batch the codec accepts, whole (header included): the hard record limit, because a batch
 * becomes the payload of one storage frame. Brokers pass their configured, smaller maximum.
 */
export const RECORD_BATCH_BYTES_LIMIT = RECORD_PAYLOAD_BYTES_LIMIT;
/**
 * Largest size the records of one compressed batch may inflate to. Without a bound, a 1 MiB gzip
 * batch of zeros inflates to ~1 GiB (gzip's ratio tops out near 1032:1), which is a memory attack
 * on a broker or client that walks it. The same bound as an uncompressed batch: compression must not
 * let a producer send records larger than it could have sent plainly.
 */
export const RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT = RECORD_PAYLOAD_BYTES_LIMIT;
/**
 * Smallest encoded record: length varint (1) + attributes (1) + timestamp delta (1) + offset delta
 * (1) + key length (1) + value length (1) + header count (1). Bounds RecordCount against the bytes
 * a batch has before anything is walked.
 */
export const RECORD_V2_BYTES_MIN = 7;

// --- Segments ------------------------------------------------------------------------------------

/** Fixed segment header; records start right after it. Layout in docs/format.md. */
export const SEGMENT_HEADER_BYTES = 32;
/**
 * Positions are int32 (DESIGN invariant 6), so a segment must stay below 2 GiB. 1 GiB keeps room for
 * a record that straddles the configured size check and matches Kafka's default segment size.
 */
export const SEGMENT_BYTES_MAX = 1024 * 1024 * 1024;
/** Small enough for tests that roll every few records; large enough to hold a header and a record. */
export const SEGMENT_BYTES_MIN = 256;
export const SEGMENT_BYTES_DEFAULT = 128 * 1024 * 1024;
/** Segment files are named by their base offset in this many zero-padded decimal digits (Kafka's form). */
export const SEGMENT_NAME_DIGITS = 20;

// --- Sparse index --------------------------------------------------------------------------------

/** One index entry per this many bytes of log (Kafka's value: a forward scan stays within a page). */
export const INDEX_INTERVAL_BYTES_DEFAULT = 4096;
/** Initial entries per segment index. It doubles on demand; see sparse-index.ts for why not more. */
export const INDEX_INITIAL_ENTRIES = 16;

// --- I/O sizes -----------------------------------------------------------------------------------

/**
 * Recovery and verification read this much per syscall. One read per record made the predecessor
 * 28x slower (174 vs 4900 MiB/s); a syscall costs ~1.3 us in this VM.
 */
export const RECOVERY_CHUNK_BYTES = 4 * 1024 * 1024;
/**
 * The mapped writer reserves disk blocks with fallocate this far ahead of its write position, so that a
 * full disk shows up as ENOSPC from fallocate instead of SIGBUS from a page fault (which kills Bun).
 */
export const MAPPED_RESERVE_STEP_BYTES = 4 * 1024 * 1024;

// --- Offsets and names ---------------------------------------------------------------------------

/** Offsets are JS numbers on every hot path (no BigInt); they stay exact below 2^53. */
export const OFFSET_MAX = Number.MAX_SAFE_INTEGER;
/** Kafka's limit, so a name that works there works here. */
export const TOPIC_NAME_LENGTH_MAX = 249;
export const PARTITIONS_MAX = 1024;

// --- Relationships -------------------------------------------------------------------------------

assert(SEGMENT_BYTES_MAX <= 2 ** 31 - 1, "positions are int32: a segment must stay below 2 GiB");
assert(SEGMENT_BYTES_MIN > SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES, "a minimal segment holds one record");
assert(
  RECORD_PAYLOAD_BYTES_LIMIT + RECORD_HEADER_BYTES + SEGMENT_HEADER_BYTES <= SEGMENT_BYTES_MAX,
  "the largest record fits into the largest segment",
);
assert(
  RECORD_PAYLOAD_BYTES_DEFAULT_MAX <= RECORD_PAYLOAD_BYTES_LIMIT,
  "default record limit within hard limit",
);
assert(
  RECORD_BATCH_BYTES_LIMIT <= RECORD_PAYLOAD_BYTES_LIMIT,
  "a whole record batch fits into one storage frame",
);
assert(
  RECORD_BATCH_DECOMPRESSED_BYTES_LIMIT >= RECORD_BATCH_BYTES_LIMIT - RECORD_BATCH_OVERHEAD_BYTES,
  "the records of any uncompressed batch we accept would also be accepted compressed",
);
assert(RECOVERY_CHUNK_BYTES >= 1024 * 1024, "recovery reads at least 1 MiB per syscall");
assert(SEGMENT_BYTES_MAX % 4096 === 0, "segment capacity is page aligned for the mapping");
