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

// --- Topics --------------------------------------------------------------------------------------

/** Longest force interval of the `interval` durability: a day (beyond that, use `append`). */
export const FLUSH_INTERVAL_MS_MAX = 24 * 3600 * 1000;

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

// --- Connections and requests ----------------------------------------------------------------------

/** Stop reading a connection's requests while this many response bytes wait to be sent. */
export const OUTBOUND_HIGH_BYTES = 8 * 1024 * 1024;
/** Resume reading once the queue drained below this. */
export const OUTBOUND_LOW_BYTES = 2 * 1024 * 1024;
/** Stop reading while this many requests of one connection wait for their responses. */
export const INFLIGHT_MAX = 1024;
/**
 * Inbound buffer capacity every connection may hold without asking the broker-wide budget: one
 * ordinary request (a 1,000-record batch of 100-byte records is 108 KiB) plus a read chunk. Beyond
 * it, a connection reserves from the budget before its buffer grows (server/inbound-budget.ts), so
 * memory for unfinished requests is at most connections × this + the budget.
 */
export const INBOUND_FREE_BYTES = 128 * 1024;
/** What an inbound buffer starts with and shrinks back to once a large request was consumed. */
export const INBOUND_INITIAL_BYTES = 64 * 1024;
/** How far past its need an inbound buffer may grow at once (see protocol/inbound-buffer.ts). */
export const INBOUND_GROWTH_SLACK_BYTES = 64 * 1024;
/** Default broker-wide budget for inbound bytes beyond the free allowance (`--max-inbound-memory`). */
export const INBOUND_BUDGET_BYTES_DEFAULT = 256 * 1024 * 1024;
/**
 * A request must arrive whole within this long (`--request-timeout`) plus the time its size takes
 * at REQUEST_MIN_BYTES_PER_SECOND. A header claiming 16 MiB followed by a byte a second once held a
 * connection slot and 16 MiB past the 10-minute idle timeout.
 */
export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;
/** The slowest sender a large request is allowed to be: 16 MiB get 16 s on top of the timeout. */
export const REQUEST_MIN_BYTES_PER_SECOND = 1024 * 1024;
/** Default connection slots one client address may hold (`--max-connections-per-address`). */
export const CONNECTIONS_PER_ADDRESS_DEFAULT = 256;
/**
 * After its last response (an error frame before a close) the broker half-closes and keeps reading,
 * discarding, for at most this long: closing with unread input makes the kernel send RST, and a
 * reset can destroy the error frame the client has not read yet.
 */
export const CLOSE_LINGER_MS = 5_000;

// --- Offsets and names ---------------------------------------------------------------------------

/** Offsets are JS numbers on every hot path (no BigInt); they stay exact below 2^53. */
export const OFFSET_MAX = Number.MAX_SAFE_INTEGER;
/** Kafka's limit, so a name that works there works here. */
export const TOPIC_NAME_LENGTH_MAX = 249;
export const PARTITIONS_MAX = 1024;
/**
 * Longest file or directory name (Linux NAME_MAX, in bytes; topic names are ASCII). Every on-disk
 * name derived from a topic name must fit: a 249-character name once failed with ENAMETOOLONG
 * because its temporary config file `<topic>.json.tmp` was 258 bytes long.
 */
export const FILE_NAME_BYTES_MAX = 255;
/** Suffixes of the names derived from a topic name (src/broker/broker.ts uses these). */
export const TOPIC_FILE_SUFFIX = ".json";
export const TOPIC_TEMPORARY_FILE_SUFFIX = ".tmp";

// --- Command line (booblik-cli) --------------------------------------------------------------------

/** The broker's default TCP port (`--port`, BOOBLIK_PORT); the CLI's default `--broker` port too. */
export const BROKER_PORT_DEFAULT = 7979;
/**
 * The CLI gathers output in a buffer of this size and hands it to stdout when full, then waits for
 * the pipe to take it: memory stays at a few buffers however fast records come and however slowly
 * the reader reads (a 2 M-record `segment dump` once held all its output, 950 MB, and overflowed).
 */
export const CLI_OUTPUT_BUFFER_BYTES = 64 * 1024;
/**
 * `segment dump` reads this much of the segment per step and hands its output to stdout before the
 * next: with 4 MiB steps (RECOVERY_CHUNK_BYTES) a step of 16-byte records printed 16 MB and a dump
 * of 2 M records peaked at 149 MiB (218 MiB as JSON); with 256 KiB steps at 73-75 MiB, whatever
 * the format (getrusage's peak RSS; Bun alone takes about 50 MiB).
 */
export const CLI_DUMP_READ_BYTES = 256 * 1024;
/**
 * How often a waiting `consume --follow` checks whether its stdout reader has gone (`| head -1`):
 * it writes nothing while no record comes, so no EPIPE would ever tell it.
 */
export const CLI_CLOSED_PIPE_CHECK_MS = 250;
/** `consume --follow` reconnects after a lost broker with backoff from this pause… */
export const CLI_RECONNECT_BACKOFF_MS_MIN = 100;
/** …doubling up to this one, for as long as it runs (a restart usually takes well under a second). */
export const CLI_RECONNECT_BACKOFF_MS_MAX = 5_000;
/** `produce --skip-invalid` lists the numbers of this many skipped lines on stderr (and counts all). */
export const CLI_INVALID_LINES_LISTED = 10;
/** A progress line is redrawn at most this often. */
export const CLI_PROGRESS_REDRAW_MS = 100;

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
assert(INBOUND_INITIAL_BYTES <= INBOUND_FREE_BYTES, "a fresh connection needs no budget");
assert(OUTBOUND_LOW_BYTES < OUTBOUND_HIGH_BYTES, "backpressure resumes below where it paused");
assert(
  TOPIC_NAME_LENGTH_MAX + `-${PARTITIONS_MAX - 1}`.length <= FILE_NAME_BYTES_MAX,
  "every partition directory <topic>-<partition> fits NAME_MAX",
);
assert(
  TOPIC_NAME_LENGTH_MAX + Math.max(TOPIC_FILE_SUFFIX.length, TOPIC_TEMPORARY_FILE_SUFFIX.length) <=
    FILE_NAME_BYTES_MAX,
  "every topic file <topic>.json and its temporary file <topic>.tmp fit NAME_MAX",
);
assert(CLI_RECONNECT_BACKOFF_MS_MIN <= CLI_RECONNECT_BACKOFF_MS_MAX, "reconnect backoff grows");
