/**
 * Every limit booblik enforces, in one place, with the relationships between them checked when this
 * module loads (TigerBeetle's constants.zig idea): a limit that contradicts another one is a bug that
 * must stop the process before it opens a single file, not a surprise found under load.
 *
 * Units are in the names. "Bytes" always means bytes on disk or on the wire.
 */
import { assert } from "./assert.ts";

// --- Records -------------------------------------------------------------------------------------

/**
 * Format 1's record header `[int32 length][int32 crc32c(payload)]` (read only by `booblik-cli
 * migrate`). Format 2 keeps the same frame around each stored batch: ENTRY_HEADER_BYTES.
 */
export const RECORD_HEADER_BYTES = 8;
/**
 * Format 2's entry frame `[u32 length][u32 crc32c(batch)]` in front of every stored RecordBatch v2
 * (docs/format.md "Segment file"). The same 8 bytes as format 1's record header, on purpose.
 */
export const ENTRY_HEADER_BYTES = 8;
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
 * Bytes of one record v2 besides its key, value and headers, at most: length, attributes, timestamp
 * delta, offset delta, key length, value length and header count as varints (5 + 1 + 10 + 5 + 5 + 5
 * + 1). A bound for sizing batches before encoding them (offsets-store.ts's snapshot).
 */
export const RECORD_V2_OVERHEAD_BYTES_MAX = 32;
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
/**
 * Smallest whole batch: the fixed part and one minimal record. A topic's largest batch
 * (`maxRecordBytes`, the frame payload limit of its segments) may not be set below it.
 */
export const RECORD_BATCH_BYTES_MIN = RECORD_BATCH_OVERHEAD_BYTES + RECORD_V2_BYTES_MIN;

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
/**
 * The file path frames an append's entries into one reusable staging buffer and writes it with one
 * pwrite. The buffer grows to the largest append seen; beyond this it is not kept (a one-off large
 * append gets a buffer of its own), so an idle broker does not hold 64 MiB per large batch it saw.
 */
export const APPEND_STAGING_BYTES_KEPT_MAX = 4 * 1024 * 1024;

// --- I/O sizes -----------------------------------------------------------------------------------

/**
 * Recovery and verification read this much per syscall. One read per record made the predecessor
 * 28x slower (174 vs 4900 MiB/s); a syscall costs ~1.3 us in this VM.
 */
export const RECOVERY_CHUNK_BYTES = 4 * 1024 * 1024;
/**
 * A scan's first read of a file; each next read doubles, up to RECOVERY_CHUNK_BYTES. A file whose
 * data ends early (a preallocated `mapped` segment after a crash) then costs one small read.
 */
export const RECOVERY_FIRST_READ_BYTES = 64 * 1024;
/**
 * While a recovery scan reads one chunk, the kernel is asked to read up to this much after it in the
 * background (posix_fadvise WILLNEED, src/storage/recovery.ts; twice the read while the reads still
 * grow from RECOVERY_FIRST_READ_BYTES). Two chunks: from a cold page cache a
 * 1 GiB scan ran 2-3× faster with it than with the kernel's own readahead alone (docs/benchmarks.md,
 * "Recovery speed"); the page cache it fills is what the scan reads next anyway.
 */
export const RECOVERY_READAHEAD_BYTES = 2 * RECOVERY_CHUNK_BYTES;
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
export const ZERO_CHUNK_BYTES = 1024 * 1024;
/**
 * The `file` writer keeps zeros written ahead of its position too (file-segment-writer.ts), for a
 * different reason: a record written over blocks that already exist inside the file's length is an
 * overwrite, and ext4's fdatasync of an overwrite skips the journal commit that an append (the
 * file growing) needs. `bun bench/load/fdatasync.ts <ext4 dir> 3 2048 0 overwrite|append`,
 * alternated: p50 0.053-0.062 ms against 0.084-0.103 (docs/benchmarks.md). The window starts at MIN
 * and doubles per crossing up to MAX. MAX is smaller than the mapped window's because under `force`
 * the first fdatasync after an extension also writes the window's zeros to the disk, on the path of
 * the requests it acknowledges.
 */
export const FILE_WINDOW_BYTES_MIN = 64 * 1024;
export const FILE_WINDOW_BYTES_MAX = 1024 * 1024;
/**
 * An append larger than this that reaches past the file window writes no zeros: it grows the file
 * itself. Under `force` each fdatasync also writes the window's zeros to the disk, so every byte of
 * the log is written twice; that pays while appends are small and the commit is most of a force, not
 * for large ones. `bun bench/storage.bench.ts append --policies=force`, window on every append:
 * 1 KiB × 100 (~100 KiB per append) 5-11 % and 1 KiB × 1,000 10-26 % slower than without, 100 B ×
 * 100 (~11 KiB) 34-62 % faster (docs/benchmarks.md, "Zeros ahead of the file writer").
 */
export const FILE_WINDOW_APPEND_BYTES_MAX = 32 * 1024;
/**
 * The mapped writer does not extend its window when that would leave less than this free for an
 * unprivileged writer (statvfs f_bavail): the append fails with ENOSPC instead. (The file writer
 * writes no window then, and its append grows the file itself.) The room left is for the small
 * files the broker must still write on a full disk, above all each partition's recovery point when
 * it opens (a broker whose disk was filled to the last block did not start: writing
 * checkpoint.json.tmp failed with ENOSPC on XFS), and for metadata when the window's delayed
 * allocations are written back. 1 MiB is nothing on a real disk and 256 blocks of 4 KiB.
 */
export const FREE_SPACE_MARGIN_BYTES = 1024 * 1024;

// --- Reading -----------------------------------------------------------------------------------

/** Smallest `--max-open-segment-files`: a handful of sealed segments read at once must fit. */
export const SEALED_READ_DESCRIPTORS_MIN = 4;
/** The read-descriptor bound when the open-files limit cannot be read. */
export const SEALED_READ_DESCRIPTORS_FALLBACK = 1024;
/** `auto` takes a quarter of the open-files limit, at most this (storage/read-descriptors.ts). */
export const SEALED_READ_DESCRIPTORS_AUTO_MAX = 4096;
/** Record bytes a read or FETCH returns when the caller names no size (Kafka's max.partition.fetch.bytes). */
export const FETCH_BYTES_DEFAULT = 1024 * 1024;
/** The broker caps one FETCH response's records at this, whatever the client asks for. */
export const FETCH_RESPONSE_BYTES_MAX = 64 * 1024 * 1024;
/**
 * The native listener's copying FETCH (TLS connections, `--fetch-path copy`) reads into one reused
 * buffer of the server's (server.ts answerFetch) up to this size; a larger read gets a buffer of
 * its own, so one huge fetch does not pin its size in memory for good. Same bound and reason as
 * KAFKA_FETCH_BUFFER_BYTES_MAX.
 */
export const COPY_FETCH_ARENA_BYTES_MAX = 8 * 1024 * 1024;
/**
 * On the native sendfile path (`--fetch-path sendfile`, the default), a FETCH answer whose records
 * take fewer bytes than this is read, every entry CRC-checked, and written with its header in one
 * socket write, as on the copy path; from this size on the records leave from the segment file
 * with sendfile. Why: a small answer sent from the file costs a header write, a `pread` of its first
 * entry (checked before it is sent) and a `sendfile`: two TCP segments, which wake the consumer
 * twice. With perf and a CPU profile of a broker answering a consumer that follows a topic at 50 K
 * records/s of 100 B (one 5.5 KB batch per answer, 2026-12-02), `sendfile` and the socket writes
 * were half of the broker's main-thread samples; with those answers copied the broker's main
 * thread ran 127 ms/s against 148 at the median and the consumer's 81 against 93
 * (bench/latency-attribution.ts --runs=5 --baseline, interleaved; docs/benchmarks.md, "Small FETCH
 * answers copied"). The same bound as KAFKA_SENDFILE_BATCH_BYTES_MIN, where kcat read small
 * batches faster copied.
 */
export const FETCH_SENDFILE_ANSWER_BYTES_MIN = 64 * 1024;

// --- Connections and requests ----------------------------------------------------------------------

/** Default ceiling on a request frame's `size` (`--max-frame-size`): a 1 MiB batch with room to spare. */
export const FRAME_BYTES_DEFAULT_MAX = 16 * 1024 * 1024;
/** How long a stopping broker waits for pending responses to leave before it closes the sockets. */
export const SHUTDOWN_DRAIN_MS = 10_000;
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
/**
 * Fetch answer bytes a connection gets whatever the answers held for other connections add up to
 * (both listeners' copying fetch paths): beyond it, an answer takes only the room left under
 * `--max-inbound-memory`. Without it, clients that asked for large answers and never read them
 * took all the room, and every other consumer got empty answers until they disconnected (a
 * helper's run, 2026-12-03). So the answers held are at most the budget plus this per connection
 * (a first batch larger than an answer may take waits for room; on the native path a connection
 * with unread answers gets no allowance).
 */
export const FETCH_ANSWER_FREE_BYTES = 256 * 1024;
/**
 * The largest request frame before a login, on a broker with users (both listeners): the requests
 * allowed then (ApiVersions, SaslHandshake, SaslAuthenticate, the native AUTHENTICATE) are a few
 * hundred bytes. Within INBOUND_FREE_BYTES, so a connection that never logs in takes nothing of the
 * shared budget: 17 such connections announcing 16 MiB frames had reserved all 256 MiB of it and
 * stalled every logged-in user's large request (a security helper's run, 2026-12-03). Kafka caps
 * the same at 512 KiB (`sasl.server.max.receive.size`).
 */
export const PRE_LOGIN_FRAME_BYTES_MAX = 64 * 1024;
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
 * Admin requests (CREATE_TOPIC, DELETE_TOPIC) one client address may make per second
 * (`--max-admin-requests-per-second`), refused beyond it with a retriable LIMIT_EXCEEDED
 * (src/server/admin-rate.ts). Each one creates or removes directories and files with their
 * fsyncs, and is audited: a loop of them from anyone who reaches the port churns the disk and the
 * log. Normal work creates a topic once.
 */
export const ADMIN_REQUESTS_PER_SECOND_DEFAULT = 10;
/** The burst an address may spend at once: this many seconds of its rate (100 at the default). */
export const ADMIN_REQUEST_BURST_SECONDS = 10;
/**
 * Remembered client addresses past which those whose allowance has refilled completely are
 * forgotten (forgetting a full allowance changes nothing), so the table holds only addresses active
 * within the last burst period.
 */
export const ADMIN_RATE_ADDRESSES_SWEEP = 1024;
/**
 * After its last response (an error frame before a close) the broker half-closes and keeps reading,
 * discarding, for at most this long: closing with unread input makes the kernel send RST, and a
 * reset can destroy the error frame the client has not read yet.
 */
export const CLOSE_LINGER_MS = 5_000;
/**
 * At shutdown a lingering connection (its last frame an error) is closed once no input arrived for
 * this long after its FIN: whatever the client had in flight has been read and discarded, so the
 * close sends nothing more (no RST), and a shutdown does not wait the whole linger for clients that
 * read the FIN but keep their side open.
 */
export const LINGER_QUIET_MS = 100;
/**
 * Refused connections lingering after their error frame at most; a new refusal beyond closes the
 * oldest (its FIN was sent and its input read, so quietly). Each holds a descriptor for up to
 * CLOSE_LINGER_MS: a client opening connections in a loop against a full broker once made the
 * lingering set unbounded, and the descriptors ran out.
 */
export const REFUSED_LINGERING_MAX = 64;

// --- Broker-wide resource limits (refused with LIMIT_EXCEEDED; --max-topics, --max-partitions, --max-mapped-memory)

/**
 * Topics and partitions a broker takes by default. Each partition costs two descriptors, a
 * checkpoint and a force at shutdown: ~19,000 partitions made a SIGTERM take 87 s and a restart
 * 44 s (found by a user test); the default keeps both within seconds (docs/operations.md).
 */
export const BROKER_TOPICS_DEFAULT_MAX = 1024;
export const BROKER_PARTITIONS_DEFAULT_MAX = 4096;
/**
 * Address space that the active segments of `mapped` partitions may map together (partitions ×
 * segmentBytes). One create of 1,024 partitions of 1 GiB mapped reserves 1 TiB; x86-64 user space
 * is 128 TiB. 1 TiB fits the default partition limit at the default 128 MiB segments (512 GiB).
 */
export const MAPPED_ADDRESS_SPACE_BYTES_DEFAULT_MAX = 1024 * 1024 * 1024 * 1024;

// --- Authorization (src/auth/acl.ts, src/broker/acl-store.ts) ------------------------------------

/**
 * ACLs a broker stores. Every ACL is checked per request of its principal against the resource
 * (a linear scan, src/auth/acl.ts), and the file is rewritten whole per change: 10,000 keeps both
 * small (the file is about 1.5 MB at 150 bytes an ACL). Kafka has no limit; a deployment with more
 * distinct rules than this is better served by PREFIXED ACLs.
 */
export const ACLS_MAX = 10_000;
/**
 * ACLs or filters one CreateAcls / DeleteAcls (or native CREATE_ACLS / DELETE_ACLS) may carry: a
 * hostile count is refused before anything is allocated for it.
 */
export const ACL_REQUEST_ENTRIES_MAX = 1_000;
/**
 * ACL hosts kept in their canonical spelling (auth/acl.ts canonicalHost, one entry per distinct host
 * of an ACL in force, at most ACLS_MAX of them); beyond this the cache is emptied and refilled, so
 * hosts of removed ACLs cannot make it grow without bound.
 */
export const ACL_CANONICAL_HOSTS_MAX = 20_000;

/** Longest resource name, principal or host in an ACL (bytes of UTF-8; a topic name is at most 249). */
export const ACL_FIELD_BYTES_MAX = 1024;
/**
 * Access decisions remembered per ACL version (principal, host, operation, resource → allowed), so
 * that a PRODUCE does not rescan the ACLs; cleared on any ACL change and when full.
 */
export const ACL_DECISION_CACHE_MAX = 65_536;

// --- Authentication --------------------------------------------------------------------------------

/** PBKDF2 rounds of a new SCRAM credential (RFC 7677 asks for at least 4096; Kafka's default). */
export const SCRAM_ITERATIONS_DEFAULT = 4096;
/** Fewer rounds are refused: cheap to brute-force if the users file leaks. */
export const SCRAM_ITERATIONS_MIN = 4096;
export const SCRAM_SALT_BYTES = 16;
/** A SCRAM message longer than this is malformed (user names, nonces and proofs are short). */
export const SCRAM_MESSAGE_BYTES_MAX = 4096;
/**
 * After a failed login the broker waits before it answers and closes: FAILED_DELAY_MIN_MS for the
 * first failure of a client address, doubling per further failure within
 * AUTHENTICATION_FAILURE_MEMORY_MS, at most FAILED_DELAY_MAX_MS. Guessing passwords gets slow.
 */
export const AUTHENTICATION_FAILED_DELAY_MIN_MS = 100;
export const AUTHENTICATION_FAILED_DELAY_MAX_MS = 5_000;
export const AUTHENTICATION_FAILURE_MEMORY_MS = 60_000;
/**
 * Logins of one address that may wait for its hold at once (LoginDelays.enterHold), all listeners
 * together; one more is refused at once. Each holds a connection (and a copied SCRAM step of at most
 * SCRAM_MESSAGE_BYTES_MAX) until the hold ends; without a bound an address that opened, sent and
 * closed connections in a loop piled them up (a reviewer's run, 2026-12-03).
 */
export const LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX = 16;
/**
 * While a password check of an address runs off the event loop (the console's PBKDF2 on the thread
 * pool, a few ms at 4,096 iterations), its other logins ask again after this long: one check at a
 * time per address across the listeners (LoginDelays.beginCheck).
 */
export const LOGIN_CHECK_POLL_MS = 5;
/**
 * Console logins of one address queued for their check at once (they are checked one at a time):
 * one more is answered 429. Above LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX, so that a burst of right
 * logins (a dashboard's parallel HTTP Basic requests) passes, while a flood of wrong ones cannot
 * queue without bound before the first failure holds the address (a reviewer's run, 2026-12-03).
 */
export const CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX = 64;

// --- Full disk ---------------------------------------------------------------------------------

/**
 * How often a broker that opened partitions read-only on a full disk tries their checkpoint again,
 * so that /ready and the metrics say when space came back even without a PRODUCE (one small file
 * write per read-only partition; none once all take writes).
 */
export const DISK_FULL_RETRY_MS = 5_000;

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

// --- Client library --------------------------------------------------------------------------------

/**
 * A Producer's write() reads the clock once and stamps it on at most this many records written in
 * one synchronous run (the clock is read again at the next microtask turn whatever the count). In a
 * loop of write() of 100-byte records against a stub client, Date.now() per record made 430-480 ns a
 * record, the clock read once per run 170-260 ns (Bun 1.4.4 on the project's 2-core VM, both run
 * alternately, best of five rounds each; the loop is not in the repository). 256 records take well
 * under a millisecond, so a CreateTime stays exact to the millisecond Kafka stores.
 */
export const PRODUCER_CLOCK_REUSE_RECORDS_MAX = 256;

// --- Kafka listener (src/kafka; docs/kafka.md) -----------------------------------------------------

/**
 * The port Kafka clients expect (Kafka's own default), and `--kafka-port`'s default. Brokers started
 * in parallel by the tests and benchmarks would fight over it, so those start theirs with
 * `BOOBLIK_KAFKA_PORT=off` (test/preload.ts, bench/lib/processes.ts) unless they ask for a port.
 */
export const KAFKA_PORT_DEFAULT = 9092;
/**
 * How long the Kafka listener waits for answers in flight at shutdown before it closes the sockets
 * (the same bound as the native listener's drain).
 */
export const KAFKA_SHUTDOWN_DRAIN_MS = SHUTDOWN_DRAIN_MS;
/**
 * While a request is being answered (Kafka handles one request per connection at a time), a
 * connection keeps reading until this many bytes of later requests are buffered, then pauses: a
 * pipelining client (kafkajs sends several requests at once) cannot make the broker buffer more.
 */
export const KAFKA_PIPELINED_BYTES_MAX = INBOUND_FREE_BYTES;
/**
 * The largest inbound buffer a Kafka connection keeps as its spare (kafka/listener.ts): enough for a
 * 1 MiB request (the Java producer's max.request.size and librdkafka's message.max.bytes are about
 * that) plus a 512 KiB socket chunk, rounded up by doubling. A larger one, left by a larger request,
 * is dropped instead of kept for the life of the connection.
 */
export const KAFKA_SPARE_BUFFER_BYTES_MAX = 4 * 1024 * 1024;
/**
 * A Kafka connection that held no bytes and answered nothing for this long gives back its buffers
 * beyond INBOUND_INITIAL_BYTES (checked by the listener's sweep, at most once a second): a client
 * that sent large requests once does not keep two large buffers for as long as it stays connected.
 */
export const KAFKA_BUFFER_TRIM_IDLE_MS = 5_000;
/**
 * Longest long poll of a Kafka Fetch, whatever max_wait_ms says (kafkajs waits 5 s by default,
 * librdkafka 0.5 s). The same as the request timeout of kafkajs (30 s): an answer at the cap is an
 * empty fetch the client simply repeats.
 */
export const KAFKA_FETCH_WAIT_MS_MAX = 30_000;
/**
 * Fetch buffers of the Kafka listener (src/kafka/fetch-buffers.ts): the copy path's reads and the
 * Fetch response frames reuse buffers instead of allocating, zero-filling and page-faulting fresh
 * ones per Fetch (about 40 % of the broker's CPU on that path, measured with perf; segment.ts
 * ReadArena). Sizes are rounded up to a multiple of the step, so that a buffer fits the next Fetch
 * of the same shape (a 1 MiB partition fetch and its response's few dozen bytes of fields).
 * Smaller requests allocate as before: their buffers are cheap and would crowd the pool.
 */
export const KAFKA_FETCH_BUFFER_STEP_BYTES = 256 * 1024;
/** The largest buffer kept for reuse; a larger one is allocated and collected as before. */
export const KAFKA_FETCH_BUFFER_BYTES_MAX = 8 * 1024 * 1024;
/**
 * Free buffers kept, all sizes together, by the Kafka listener (one pool for its plain and TLS
 * ports): the most memory at rest. It is a sixteenth of the inbound limit's default (256 MiB), and holds the two
 * buffers of seven consumers at 1 MiB per fetch (a 1 MiB read arena and a 1.25 MiB response).
 */
export const KAFKA_FETCH_BUFFER_POOL_BYTES_MAX = 16 * 1024 * 1024;
/**
 * With `--kafka-fetch-path sendfile`, a stored batch of at least this size goes to the socket with
 * sendfile; a smaller one is read and copied as on the copy path (a response holds a run of large
 * batches, or the copy path's batches). Each batch sent from the file costs a `pread` of its header
 * and a `sendfile` of its own. Measured with bench/kafka.bench.ts and this bound at 1 KiB, kcat
 * batch.size 4,096 / 16,384 / 65,536 (docs/kafka.md "Fetch path"): the bench's own fetch loop moved
 * 1.3-2× more per batch from the file at every size, but kcat consuming 1 KiB records was slower
 * from 3 KiB and 15 KiB batches (440 against 615, 479 against 559 MiB/s: one small sendfile per
 * batch), and level or faster at the median from 63-64 KiB ones (849 against 677 at 1 KiB).
 */
export const KAFKA_SENDFILE_BATCH_BYTES_MIN = 64 * 1024;

/**
 * After a crash, how far past the end of a segment's entries recovery looks for non-zero bytes when
 * the tail starts with a zero length (a mapped append writes its length last): the start line's
 * "torn bytes cut" counts up to the last non-zero byte within this, and not the zeros reserved ahead
 * of the writer (a mapped file's capacity, a `file` writer's window). One read per crashed segment.
 */
export const TORN_TAIL_PROBE_BYTES = 64 * 1024;

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

// --- Web console (src/console) ---------------------------------------------------------------------

/**
 * The console computes one snapshot of the broker's counters per this interval, shared by every
 * open live stream: the cost is per broker, not per tab.
 */
export const CONSOLE_SAMPLE_INTERVAL_MS = 1000;
/** Samples kept for the live charts: five minutes at one a second. */
export const CONSOLE_HISTORY_SAMPLES = 300;
/** Live streams (server-sent events) open at once; one more is refused with 503. */
export const CONSOLE_STREAMS_MAX = 32;
/**
 * Bytes a live stream may have queued for a reader that does not read; past it the stream is
 * closed (a stalled tab must not make the broker hold memory for it).
 */
export const CONSOLE_STREAM_QUEUED_BYTES_MAX = 1024 * 1024;
/** Records the record browser shows per page (default and ceiling). */
export const CONSOLE_RECORDS_PAGE_DEFAULT = 20;
export const CONSOLE_RECORDS_PAGE_MAX = 200;
/** Bytes of record entries one page reads from a partition (at least one entry is always read). */
export const CONSOLE_RECORDS_READ_BYTES = 1024 * 1024;
/** Bytes of a key, value or header value a page carries; longer ones are cut and say so. */
export const CONSOLE_FIELD_PREVIEW_BYTES = 4096;
/**
 * Console logins (with --users-file; src/console/console-auth.ts): sessions held at once (a new
 * login past it forgets the least recently used), how long an unused one lives, how long any one
 * lives, and the largest login body read (a user name and a password as JSON).
 */
export const CONSOLE_SESSIONS_MAX = 1024;
export const CONSOLE_SESSION_IDLE_MS = 30 * 60_000;
export const CONSOLE_SESSION_LIFETIME_MS = 12 * 60 * 60_000;
export const CONSOLE_LOGIN_BODY_BYTES_MAX = 4096;

// --- Relationships -------------------------------------------------------------------------------

assert(SEGMENT_BYTES_MAX <= 2 ** 31 - 1, "positions are int32: a segment must stay below 2 GiB");
assert(PRE_LOGIN_FRAME_BYTES_MAX <= INBOUND_FREE_BYTES, "a frame before a login takes nothing of the budget");
assert(
  SEGMENT_BYTES_MIN >= SEGMENT_HEADER_BYTES + ENTRY_HEADER_BYTES + RECORD_BATCH_BYTES_MIN,
  "a minimal segment holds one entry of one record",
);
assert(ENTRY_HEADER_BYTES === RECORD_HEADER_BYTES, "format 2 keeps format 1's 8-byte frame");
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
assert(RECOVERY_FIRST_READ_BYTES <= RECOVERY_CHUNK_BYTES, "a scan's first read is at most one chunk");
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
assert(
  RECORD_PAYLOAD_BYTES_DEFAULT_MAX + ENTRY_HEADER_BYTES + 256 <= FRAME_BYTES_DEFAULT_MAX,
  "the default frame carries a PRODUCE of the default largest batch",
);
assert(
  RECORD_BATCH_BYTES_MIN <= RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  "the default largest batch holds at least the smallest one",
);
assert(FETCH_BYTES_DEFAULT <= FETCH_RESPONSE_BYTES_MAX, "the default fetch size is within the cap");
assert(
  MAPPED_WINDOW_BYTES_MIN <= MAPPED_WINDOW_BYTES_MAX &&
    Number.isInteger(Math.log2(MAPPED_WINDOW_BYTES_MAX / MAPPED_WINDOW_BYTES_MIN)),
  "doubling the smallest mapped window reaches the largest exactly",
);
assert(
  FILE_WINDOW_BYTES_MIN <= FILE_WINDOW_BYTES_MAX &&
    Number.isInteger(Math.log2(FILE_WINDOW_BYTES_MAX / FILE_WINDOW_BYTES_MIN)),
  "doubling the smallest file window reaches the largest exactly",
);
assert(CLI_RECONNECT_BACKOFF_MS_MIN <= CLI_RECONNECT_BACKOFF_MS_MAX, "reconnect backoff grows");

/**
 * `booblik-cli migrate` (src/storage/migrate-format1.ts): a converted batch holds at most this many
 * records and about this many bytes (less when the topic's maxRecordBytes is smaller; a larger record
 * gets a batch of its own). A read returns whole batches, so a batch is what a consumer gets at the
 * least: 1 MiB matches FETCH_BYTES_DEFAULT, and larger batches would save nothing measurable (the
 * 69 bytes of frame and batch header per batch are 0.007 % of 1 MiB).
 */
export const MIGRATE_BATCH_BYTES_MAX = 1024 * 1024;
export const MIGRATE_BATCH_RECORDS_MAX = 10_000;
/** Old segments are read in chunks of this size (a larger record gets a buffer of its own). */
export const MIGRATE_READ_CHUNK_BYTES = 4 * 1024 * 1024;
/** Converted batches are gathered into one pwrite of up to this size. */
export const MIGRATE_WRITE_BUFFER_BYTES = 4 * 1024 * 1024;
/**
 * Room `migrate` wants free next to the data directory before it starts: the data (its allocated
 * blocks) times this factor plus the slack. Format 2 adds 1-3 bytes per small record and 69 per
 * batch (measured on 1 GiB of 100-byte records: 1044 MiB written for 1024 MiB read, +2 %).
 */
export const MIGRATE_SPACE_FACTOR = 1.1;
export const MIGRATE_SPACE_SLACK_BYTES = 64 * 1024 * 1024;

// --- Consumer groups and committed offsets (src/broker/offsets-store.ts, src/broker/groups.ts) ---

/**
 * The internal topic holding committed offsets (Kafka's name: tools that know Kafka recognize it).
 * One partition, `force` durability; hidden from topic listings unless asked for by name, refused
 * for client produce and delete.
 */
export const OFFSETS_TOPIC_NAME = "__consumer_offsets";
/**
 * Segment size of the offsets topic: small, so that compaction (offsets-store.ts) can delete whole
 * sealed segments soon after a snapshot of the live commits, and replay at start stays short.
 */
export const OFFSETS_SEGMENT_BYTES_DEFAULT = 8 * 1024 * 1024;
/** Kafka's `offset.metadata.max.bytes` default: longer commit metadata is OFFSET_METADATA_TOO_LARGE. */
export const COMMIT_METADATA_BYTES_MAX = 4096;
/**
 * Memory of all live committed offsets together (offsets-store.ts commitBytes: key and metadata as
 * strings plus COMMIT_ENTRY_OVERHEAD_BYTES each); a commit that would grow them past it is refused
 * (LIMIT_EXCEEDED; Kafka's OffsetCommit: INVALID_COMMIT_OFFSET_SIZE). 256 MiB hold about 1.5 million
 * commits without metadata. Kafka bounds them by time only (offsets.retention.minutes).
 */
export const COMMITTED_OFFSETS_BYTES_MAX = 256 * 1024 * 1024;
/** The map entry, offset object and numbers of one live commit, besides its strings (estimated). */
export const COMMIT_ENTRY_OVERHEAD_BYTES = 128;
/** Kafka's group-id limit is none; booblik bounds it like a topic name's bytes, ×4 for UTF-8 margin. */
export const GROUP_ID_BYTES_MAX = 1024;
/**
 * Records per batch of one commit: a commit of many partitions is split into batches of at most
 * this many records, so that each stays below the offsets topic's batch limit (a record is at most
 * ~GROUP_ID_BYTES_MAX + 249 + 11 + COMMIT_METADATA_BYTES_MAX × 6 bytes of JSON ≈ 26 KiB; 32 of them
 * ≈ 830 KiB < 1 MiB).
 */
export const COMMIT_RECORDS_PER_BATCH_MAX = 32;
/**
 * Partitions in one native OFFSET_COMMIT: a commit is one append to the offsets topic, and one
 * append must fit one of its segments (256 records of at most ~26 KiB ≈ 6.7 MiB < 8 MiB).
 */
export const COMMIT_OFFSETS_PER_REQUEST_MAX = 256;
/**
 * A Consumer with a `group` commits its position at most once per this many records and once per
 * this interval (and on close): a commit costs the broker one fdatasync, so committing per record
 * would cap a consumer at the disk's sync rate. At-least-once: a crash repeats at most this much.
 */
export const CONSUMER_COMMIT_EVERY_RECORDS_DEFAULT = 1000;
export const CONSUMER_COMMIT_INTERVAL_MS_DEFAULT = 1000;
/**
 * The record iterator of a group consumer checks whether a commit is due every this many records
 * it hands out (or every `commitEveryRecords`, when fewer): one clock read per 64 records keeps the
 * per-record path as it was, and the interval is overshot by at most 64 records' processing time.
 */
export const COMMIT_CHECK_EVERY_RECORDS = 64;
/** Kafka's `group.min.session.timeout.ms` and `group.max.session.timeout.ms` defaults. */
export const GROUP_SESSION_TIMEOUT_MS_MIN = 6_000;
export const GROUP_SESSION_TIMEOUT_MS_MAX = 1_800_000;
/** The longest rebalance a member may ask for (Kafka bounds it by max.poll.interval.ms, int32). */
export const GROUP_REBALANCE_TIMEOUT_MS_MAX = 2_147_483_647;
/**
 * The longest `--group-initial-rebalance-delay`: 5 minutes, the Java client's default rebalance
 * timeout (max.poll.interval.ms). A client gives up on a JoinGroup some seconds after its rebalance
 * timeout, so a longer first wait would only make every first JoinGroup of a group fail.
 */
export const GROUP_INITIAL_REBALANCE_DELAY_MS_MAX = 300_000;
/** Members of one group: a JoinGroup beyond it is refused (Kafka's group.max.size default is unbounded; 1000 keeps memory bounded). */
export const GROUP_MEMBERS_MAX = 1_000;
/** The longest STRING or NULLABLE_STRING of the Kafka protocol: its length is an int16. */
export const STRING_BYTES_MAX = 32_767;
/**
 * The characters of a client id or group instance id that start a member id (Kafka names a member
 * `<client id>-<UUID>`). A client id may be 32,767 bytes; the id built from it then no longer fit
 * the int16 length of a STRING, and every JoinGroup and DescribeGroups answer naming that member
 * carried a wrapped, negative length (a hostile-input helper's run, 2026-12-03: other members'
 * clients failed to parse them). 255 characters are at most 765 bytes of UTF-8.
 */
export const MEMBER_ID_PREFIX_CHARS_MAX = 255;
/**
 * The Kafka group coordinator's members' protocol metadata and assignments, all groups together
 * (GroupCoordinator.heldBytes). A JoinGroup that would pass it gets GROUP_MAX_SIZE_REACHED; a
 * leader's SyncGroup whose assignments would, makes its group rebalance. Ordinary consumers send
 * well under 1 KiB of each: 64 MiB hold some 30,000 such members. Not more: the leader's JoinGroup
 * answer carries its whole group's metadata, another copy of up to this much (at 256 MiB a helper's
 * 30 members of 15 MiB each still took a broker to 1.27 GiB at peak).
 */
export const GROUPS_HELD_BYTES_MAX = 64 * 1024 * 1024;
/**
 * Pending member ids (KIP-394: a JoinGroup told MEMBER_ID_REQUIRED and its id, that has not come
 * back with it yet), all groups together; beyond it the oldest is dropped (groups.ts addPending).
 */
export const GROUP_PENDING_MEMBERS_MAX = 10_000;
/** How many of the oldest pending ids a new group looks through for a group to replace. */
export const GROUP_PENDING_SCAN_MAX = 100;
/** Groups with members at once (Empty groups are forgotten; their offsets stay in the store). */
export const GROUPS_MAX = 10_000;
/**
 * The largest group record (a group's members, their protocols and assignments as JSON,
 * offsets-store.ts) that is stored: one record in one batch of the offsets topic, whose batch limit
 * is RECORD_PAYLOAD_BYTES_DEFAULT_MAX; 16 KiB are left for the key (≤ GROUP_ID_BYTES_MAX) and the
 * batch and record headers. A larger group is kept in memory only: its members rejoin after a
 * restart.
 */
export const GROUP_RECORD_BYTES_MAX = RECORD_PAYLOAD_BYTES_DEFAULT_MAX - 16 * 1024;

assert(
  COMMIT_RECORDS_PER_BATCH_MAX *
    (GROUP_ID_BYTES_MAX + TOPIC_NAME_LENGTH_MAX + 11 + COMMIT_METADATA_BYTES_MAX * 6 + 200) <
    RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  "a commit batch fits the offsets topic's batch limit",
);
assert(
  COMMIT_OFFSETS_PER_REQUEST_MAX *
    (GROUP_ID_BYTES_MAX + TOPIC_NAME_LENGTH_MAX + 11 + COMMIT_METADATA_BYTES_MAX * 6 + 200) <
    OFFSETS_SEGMENT_BYTES_DEFAULT - 1024,
  "a native commit of the most partitions fits one segment of the offsets topic",
);
assert(GROUP_SESSION_TIMEOUT_MS_MIN < GROUP_SESSION_TIMEOUT_MS_MAX, "session timeout range");

// --- Issue 15 (purge15): the producer's metadata age ---------------------------------------------

/**
 * How old a topic's metadata (partition count, record limit) may grow in a Producer before the next
 * batch sent to the topic asks for it again in the background: Kafka's metadata.max.age.ms default,
 * 5 minutes. Partitions added meanwhile get records within about this long.
 */
export const PRODUCER_METADATA_MAX_AGE_MS_DEFAULT = 300_000;

// --- Idempotent producers (issue 12) ---------------------------------------------------------------

/**
 * Batches remembered per producer and partition for answering a resend with its original offsets:
 * Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN, which is why clients cap
 * max.in.flight.requests.per.connection at 5 with idempotence on.
 */
export const PRODUCER_BATCHES_RETAINED = 5;
/**
 * A producer id a partition has not seen an append from for this long is forgotten (Kafka's
 * `producer.id.expiration.ms` default, 1 day); a later batch of it is then accepted as from a new
 * producer, whatever its sequence.
 */
export const PRODUCER_ID_EXPIRATION_MS = 86_400_000;
/**
 * Producer ids one partition remembers; beyond it the one whose last append is oldest is forgotten
 * (a later batch of it is then accepted as from a new producer, as after PRODUCER_ID_EXPIRATION_MS).
 * A client may name any producer id at sequence 0 without InitProducerId (so may Kafka's): 1.1
 * million made-up ids on one partition took a broker to 532 MiB and a 50 MB producer-state.json (a
 * helper's run, 2026-12-03). About 500 bytes each: some 5 MiB per partition at most.
 */
export const PRODUCER_IDS_PER_PARTITION_MAX = 10_000;
/**
 * Producer ids all partitions of a broker remember together (`--max-producer-ids`); beyond it a
 * partition that meets a new producer forgets its own producer idle longest. The per-partition
 * bound alone let 4,096 partitions (BROKER_PARTITIONS_DEFAULT_MAX) hold 41 million made-up ids, about
 * 10 GiB: 400,000 ids on 40 partitions took 98 MiB of heap and 222 MiB RSS, 55 and 165 MiB with this
 * bound, about 250 bytes an id (`bun bench/producer-ids.bench.ts`, docs/benchmarks.md). 200,000 is
 * 200 idempotent producers writing to each of 1,000 partitions.
 */
export const PRODUCER_IDS_BROKER_DEFAULT_MAX = 200_000;
/**
 * Producer ids reserved per fsync of the allocator file: ids are unique across restarts because the
 * file always names the first id not yet handed out in a reserved block (a restart skips the rest of
 * the block). Ids are 63-bit in Kafka; 2^53 here (safe integers) is beyond any real use.
 */
export const PRODUCER_ID_BLOCK_SIZE = 1_000;

// --- Client sends (perf11) -----------------------------------------------------------------------

/**
 * A request body (a PRODUCE's record batches) up to this size is copied into the request frame and
 * sent with one socket write; a larger one is written after the frame header as it is. One write
 * after the copy cost the client 5.7 instead of 7.0 µs of CPU per 11 KB request and 53.6 instead of
 * 66.8 per 110 KB one (`bun bench/client-send.bench.ts`, docs/benchmarks.md "One write per
 * request"); at 253 KB the copy no longer paid in a first run (154 against 133 µs), so the bound
 * lies between: 128 KiB.
 */
export const SEND_BODY_COPY_BYTES_MAX = 128 * 1024;

// --- Per-request cost: coalesced appends (issue 13) --------------------------------------------------

/**
 * A PRODUCE whose records are at most this many bytes is copied into its partition's pending group
 * and written with every other one that arrived in the same event-loop turn (one pwrite, one group
 * commit); a larger one is written at once, as before, so a big batch pays no extra copy.
 */
export const COALESCED_APPEND_BYTES_MAX = 64 * 1024;
/**
 * A PRODUCE's records of at most this many bytes are copied into the pending group byte by byte from
 * the request frame, not through a `subarray` for `TypedArray.set`. At one 100 B record per request
 * (16 connections, 1 in flight) the broker's user CPU was 3.30 µs per request (2.95-4.21) with the
 * loop against 3.54 (3.43-4.38) with this at 0, and equal (1.65) at 8 in flight: a small gain,
 * within the spread (`bench/request-floor.bench.ts --baseline`, 5 rounds; docs/benchmarks.md, "Fewer
 * views and clock reads per request"). Larger ones take the view: it costs less than a long loop.
 */
export const PRODUCE_COPY_LOOP_BYTES_MAX = 512;
/** Framed bytes one coalesced group may hold; the next append starts a new group. */
export const COALESCED_GROUP_BYTES_MAX = 1024 * 1024;
assert(COALESCED_APPEND_BYTES_MAX <= COALESCED_GROUP_BYTES_MAX, "a coalesced append fits a group");
/**
 * Pending-group buffers kept for reuse, shared by every partition (a partition holds one only while
 * its group waits for the end of the turn): at most this many, so idle partitions hold none and the
 * spares hold at most 4 × COALESCED_GROUP_BYTES_MAX.
 */
export const COALESCED_SPARE_BUFFERS_MAX = 4;
/**
 * A forced group that is the only one of its event-loop turn is forced on the event loop
 * (src/storage/group-commit.ts, issue 13). A force that took longer than this sends the next forces
 * to the thread pool, until one there completes within FORCE_ON_LOOP_SLOW_MS again (the disk is fast
 * again) and for FORCE_ON_LOOP_BACKOFF_MS at most (src/broker/partition.ts, forceOnPoolCompleted): a
 * stalling disk then stops only the forced appends, not every connection. The disk's own fdatasync of an appended 100 B took 0.08 ms (p50),
 * 0.16 ms (p99) and up to 2 ms on the measurement machine (bench/load/fdatasync.ts); at 2 ms the
 * broker backed off twice in 3 s of 16 connections forcing (a 2.6 ms and a 2.8 ms force) and so ran
 * on the pool two thirds of the time. 10 ms is a stall (the platform notes measured fsync stalls of
 * 9-100 ms on a shared disk), not an ordinary force.
 */
export const FORCE_ON_LOOP_SLOW_MS = 10;
export const FORCE_ON_LOOP_BACKOFF_MS = 1000;
/**
 * The longest a partition waits, after a force on the loop, for the senders that force answered
 * before it forces again (src/broker/partition.ts, the gather); the wait is also never longer than
 * that force took. Forces on this disk take 0.17 ms at the median (bench/load/fdatasync.ts), so
 * the force's own time is the bound there; this caps it for a slow disk, where a force near
 * FORCE_ON_LOOP_SLOW_MS would otherwise let a partition wait as long.
 */
export const FORCE_GATHER_MAX_MS = 1;
/**
 * After a gather in which fewer than three quarters of the awaited senders came back, a
 * partition's next forces run without one: 1 after the first failure, doubling with each failure
 * in a row (a success halves the count), up to this many (src/broker/partition.ts, gatherEnded).
 * At 2,000-5,000 forces a second on this disk, 4,096 forces are 1-2 s: a load whose producers send
 * on their own clock then pays one gather's window in 4,096 forces, below its p99.9 (with 256 the
 * probes showed there: docs/benchmarks.md, "The gather"), and a load that turns into one request in
 * flight per connection gathers again within that long.
 */
export const FORCE_GATHER_SKIP_MAX = 4096;
/**
 * How often the broker looks for new JavaScriptCore compiler threads to put in SCHED_IDLE, under
 * `--compiler-priority idle` (src/server/compiler-threads.ts). A sweep lists /proc/self/task (about
 * 15 threads; 11 µs measured by a reviewer) and reads the name of each thread it has not placed; a
 * new compiler thread runs at normal priority until two sweeps have seen it. JavaScriptCore ends a
 * compiler thread idle for about 10 s (a reviewer saw both gone after 12 s) and starts new ones on
 * demand, so after a lull that happens again.
 */
export const COMPILER_THREADS_SWEEP_MS = 1000;
/**
 * The wire codec keeps the last string it decoded (with its bytes) up to this size: a topic name
 * (249 bytes at most) is asked for request after request; longer strings are not kept.
 */
export const DECODED_STRING_CACHED_BYTES_MAX = 256;
/** PRODUCE waiters the server keeps for reuse (src/server/server.ts): about the requests in flight. */
export const PRODUCE_WAITERS_KEPT = 4096;

// --- Console: consumer groups (issue 16) ---------------------------------------------------------
/**
 * Committed partitions whose lag the console sums per CONSOLE_SAMPLE_INTERVAL_MS for the groups'
 * "lag over time" charts: the first groups by name, while their committed partitions add up to at
 * most this many. The sum runs every tick whether or not a tab is open (a history must be kept to
 * be shown), so it is bounded: about 0.3 µs per committed partition measured
 * (bench/console-tick.bench.ts --groups), so at most ~1.2 ms a second. Groups beyond it are listed
 * and described, without a chart.
 */
export const CONSOLE_LAG_PARTITIONS_MAX = 4096;
// --- Damage (issue 15) ----------------------------------------------------------------------------
/**
 * Bytes a segment reads at a time while searching for the next readable entry after a damaged one
 * (Segment.nextReadableAfter): only on that error path, one buffer per search.
 */
export const DAMAGE_SEARCH_CHUNK_BYTES = 1024 * 1024;
/**
 * The largest first entry of a zero-copy FETCH that is checked in the one shared buffer (the entry
 * is read and its CRC checked before it is sent; Segment.fileRange): the default largest batch
 * (1 MiB) and its frame. A larger entry gets a buffer of its own for that check, so one huge batch
 * does not pin its size in memory.
 */
export const FETCH_CHECK_BUFFER_MAX_BYTES = 1024 * 1024 + 8;
// --- Security: TLS, SASL on the Kafka listener (issue 14, sec14) ---------------------------------

/** Client addresses whose recent failed logins are remembered (login-delays.ts); oldest forgotten. */
export const LOGIN_FAILURE_ADDRESSES_MAX = 10_000;
/**
 * Password checks that derive keys (SASL PLAIN, the console's login: PBKDF2 on the runtime's thread
 * pool) running at once in the process, and waiting beyond those (src/auth/password-checks.ts). One
 * at a time leaves the pool's other thread (Bun 1.4.4 runs two, "Bun Pool 0" and "Bun Pool 1", on
 * this 2-core machine) to the broker's pooled fdatasync, which a reviewer measured queued 568 ms
 * behind six derivations of 300,000 rounds; a right login waits behind at most 64 checks (3.1 ms each at 4,096 rounds
 * and both mechanisms, measured: about 0.2 s).
 */
export const PASSWORD_CHECKS_RUNNING_MAX = 1;
export const PASSWORD_CHECKS_WAITING_MAX = 64;
/** A SASL PLAIN message longer than this is malformed (authzid, user and password are short). */
export const SASL_PLAIN_MESSAGE_BYTES_MAX = 4096;

/**
 * A partition writes its checkpoint (the recovery point) after a force at most this often, and once
 * more this long after the last write when forces came in between (partition-log.ts): a restart
 * after a crash scans what follows the point, and recovery trusts what precedes it as forced.
 */
export const CHECKPOINT_INTERVAL_MS_DEFAULT = 5000;
