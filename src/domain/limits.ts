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
 * The mapped writer keeps a window of *written* blocks ahead of its write position: before a store
 * reaches a page, zeros are written there with pwrite, so the file system allocates the blocks (or
 * refuses with ENOSPC, which the append reports) and a store through the mapping never needs a block.
 * Reserving with fallocate is not enough: fallocated extents are unwritten, and converting them on
 * the first store can need metadata blocks that a full ext4 or XFS no longer has, which ends in SIGBUS
 * and kills Bun (test/storage/disk-full-loop.test.ts: every run on a full 32 MiB ext4 and XFS).
 *
 * The window starts at MIN and doubles each time the writer crosses it, up to MAX: a partition costs
 * disk in proportion to what it writes (one small record: ~64 KiB, not 4 MiB; a 1,024-partition topic
 * with one record each: ~64 MiB, not 4 GiB), and a busy one extends rarely (one statvfs and a few
 * pwrite calls per 4 MiB).
 */
export const MAPPED_WINDOW_BYTES_MIN = 64 * 1024;
export const MAPPED_WINDOW_BYTES_MAX = 4 * 1024 * 1024;
/**
 * Zeros are written this many bytes per pwrite call (one shared buffer of this size). 1 MiB keeps
 * the buffer small and the syscall count low (four calls per full window at ~1.3 us each).
 */
export const MAPPED_ZERO_CHUNK_BYTES = 1024 * 1024;
/**
 * The mapped writer does not extend its window when that would leave less than this free for an
 * unprivileged writer (statvfs f_bavail): the append fails with ENOSPC instead. The room left is for
 * the small files the broker must still write on a full disk, above all each partition's recovery
 * point when it opens (a broker whose disk was filled to the last block did not start: writing
 * checkpoint.json.tmp failed with ENOSPC on XFS), and for metadata when the window's delayed
 * allocations are written back. 1 MiB is nothing on a real disk and 256 blocks of 4 KiB.
 */
export const MAPPED_FREE_SPACE_MARGIN_BYTES = 1024 * 1024;

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
assert(RECOVERY_CHUNK_BYTES >= 1024 * 1024, "recovery reads at least 1 MiB per syscall");
assert(SEGMENT_BYTES_MAX % 4096 === 0, "segment capacity is page aligned for the mapping");
assert(
  MAPPED_WINDOW_BYTES_MIN <= MAPPED_WINDOW_BYTES_MAX &&
    Number.isInteger(Math.log2(MAPPED_WINDOW_BYTES_MAX / MAPPED_WINDOW_BYTES_MIN)),
  "doubling the smallest mapped window reaches the largest exactly",
);
