/**
 * Typed operating errors shared by every layer.
 *
 * Two kinds of failure exist in booblik (TigerStyle's split):
 * - operating errors: bad input, a full disk, a corrupt file, a peer that hung up. They are values of
 *   `BooblikError` with a closed `code` and a `retriable` flag, so that a caller (and, through the wire
 *   codes in `src/protocol`, a remote client) can decide what to do without parsing messages;
 * - programmer errors: a broken invariant. They are `assert` failures and are not meant to be caught.
 *
 * The code names are stable API. The wire numbers live in `src/protocol/error-codes.ts`.
 */

export const ERROR_CODES = [
  "UNKNOWN_TOPIC_OR_PARTITION",
  "OFFSET_OUT_OF_RANGE",
  "CORRUPT_RECORD",
  "RECORD_TOO_LARGE",
  "INVALID_REQUEST",
  "UNSUPPORTED_VERSION",
  "TOPIC_EXISTS",
  "STORAGE_ERROR",
  "TOO_MANY_CONNECTIONS",
  "INVALID_ARGUMENT",
  "SEGMENT_FULL",
  "PARTITION_FAILED",
  "BAD_SEGMENT_FILE",
  "DATA_DIR_LOCKED",
  "CLOSED",
  "TIMEOUT",
  "CONNECTION_ERROR",
  "LIMIT_EXCEEDED",
  "AUTHENTICATION_FAILED",
  "OUT_OF_ORDER_SEQUENCE_NUMBER",
  "INVALID_PRODUCER_EPOCH",
  "TOPIC_AUTHORIZATION_FAILED",
  "GROUP_AUTHORIZATION_FAILED",
  "CLUSTER_AUTHORIZATION_FAILED",
  "SECURITY_DISABLED",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class BooblikError extends Error {
  readonly code: ErrorCode;
  /** True when repeating the same operation later can succeed without anyone changing anything. */
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options?: { retriable?: boolean; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options?.retriable ?? false;
  }
}

/** A value from outside (configuration, a name, an API argument) is not acceptable. */
export class InvalidArgumentError extends BooblikError {
  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
  }
}

/** A system call failed. Carries the call, the errno and its name, and the path where one exists. */
export class IoError extends BooblikError {
  readonly call: string;
  readonly errno: number;
  readonly errnoName: string;
  readonly path: string | undefined;

  constructor(call: string, errno: number, errnoName: string, path: string | undefined, detail?: string) {
    const where = path === undefined ? "" : ` on ${path}`;
    const extra = detail === undefined ? "" : ` (${detail})`;
    // ENOSPC and EDQUOT clear up when an operator frees space; EAGAIN/EINTR clear up by themselves.
    const retriable = isDiskFullErrnoName(errnoName) || errnoName === "EAGAIN";
    super("STORAGE_ERROR", `${call} failed: ${errnoName}${where}${extra}`, { retriable });
    this.call = call;
    this.errno = errno;
    this.errnoName = errnoName;
    this.path = path;
  }
}

/**
 * A file replaced atomically (rename over the old one) whose directory's fsync then failed: the new
 * content is in place, and every read sees it, but a crash may bring the old file back. Callers
 * that mirror the file in memory apply the change before passing this on, so that the running
 * broker shows what its next start will most likely show (before 2026-12-03 they kept the old
 * state, and the next start applied a change its caller had been told failed:
 * test/server/dir-fsync-failure.test.ts).
 */
export class UnsyncedReplaceError extends IoError {
  constructor(cause: IoError, file: string) {
    super(
      cause.call,
      cause.errno,
      cause.errnoName,
      cause.path,
      `${file} was replaced and the change is in force, but its directory could not be synced: a crash may undo it`,
    );
  }
}

/** The errno names of a full file system: out of space (ENOSPC) or out of quota (EDQUOT). */
function isDiskFullErrnoName(errnoName: string): boolean {
  return errnoName === "ENOSPC" || errnoName === "EDQUOT";
}

/**
 * True for an IoError that says the file system is full: retriable once space is freed, and a write
 * that the segment writers undo instead of stopping the partition.
 */
export function isDiskFull(error: unknown): error is IoError {
  return error instanceof IoError && isDiskFullErrnoName(error.errnoName);
}

/** A record failed its length or CRC check. `position` is the byte position inside `file` (if any). */
export class CorruptRecordError extends BooblikError {
  readonly file: string | undefined;
  readonly position: number;
  readonly reason: string;

  constructor(reason: string, position: number, file?: string) {
    const where = file === undefined ? `at byte ${position}` : `in ${file} at file position ${position}`;
    super("CORRUPT_RECORD", `corrupt record ${where}: ${reason}`);
    this.file = file;
    this.position = position;
    this.reason = reason;
  }
}

/**
 * A damaged stored entry met by a read (issue 15): the offset it should begin at and, when one
 * was found, the next offset that can be read after it (the caller may resume there).
 */
export class DamagedEntryError extends CorruptRecordError {
  readonly offset: number;
  readonly nextReadableOffset: number | undefined;
  constructor(reason: string, position: number, file: string, offset: number, nextReadableOffset?: number) {
    super(reason, position, file);
    this.offset = offset;
    this.nextReadableOffset = nextReadableOffset;
  }
}

/** A segment file whose header is missing, foreign, or disagrees with its name. */
export class BadSegmentFileError extends BooblikError {
  readonly file: string;
  /** Why, without the file: what a caller that adds to the message builds on. */
  readonly reason: string;
  constructor(file: string, reason: string) {
    super("BAD_SEGMENT_FILE", `refusing segment ${file}: ${reason}`);
    this.file = file;
    this.reason = reason;
  }
}

/**
 * A segment written in another on-disk format version than the one this build writes. Format 1
 * (one frame per record) is converted offline by `booblik-cli migrate <dir>`; the broker refuses
 * to open it rather than guess (issue 11).
 */
export class SegmentFormatVersionError extends BadSegmentFileError {
  readonly formatVersion: number;
  readonly supportedVersion: number;
  constructor(file: string, formatVersion: number, supportedVersion: number) {
    super(file, `format version ${formatVersion} is not supported (this build reads ${supportedVersion})`);
    this.formatVersion = formatVersion;
    this.supportedVersion = supportedVersion;
  }
}

/**
 * A data directory written by an older storage format: the broker does not open it (no partial
 * start), and the message names the offline conversion command.
 */
export class DataDirFormatError extends BooblikError {
  readonly dataDir: string;
  readonly file: string;
  readonly formatVersion: number;
  constructor(dataDir: string, file: string, formatVersion: number, supportedVersion: number) {
    super(
      "BAD_SEGMENT_FILE",
      `data directory ${dataDir} holds segments of storage format ${formatVersion} (first found: ${file}); ` +
        `this build reads format ${supportedVersion}. Stop the broker and convert the directory offline ` +
        `with: booblik-cli migrate ${dataDir}`,
    );
    this.dataDir = dataDir;
    this.file = file;
    this.formatVersion = formatVersion;
  }
}

export class RecordTooLargeError extends BooblikError {
  readonly recordBytes: number;
  readonly maxBytes: number;
  /** `what` names the thing ("record", "a batch of 12 records"); `limitName` says what the limit is. */
  constructor(recordBytes: number, maxBytes: number, what = "record", limitName = "the limit") {
    super("RECORD_TOO_LARGE", `${what} of ${recordBytes} bytes exceeds ${limitName} of ${maxBytes} bytes`);
    this.recordBytes = recordBytes;
    this.maxBytes = maxBytes;
  }
}

/** The requested offset is outside [logStartOffset, nextOffset]. Both bounds travel with the error. */
export class OffsetOutOfRangeError extends BooblikError {
  readonly offset: number;
  readonly logStartOffset: number;
  readonly nextOffset: number;
  constructor(offset: number, logStartOffset: number, nextOffset: number) {
    super(
      "OFFSET_OUT_OF_RANGE",
      `offset ${offset} is out of range: the log holds [${logStartOffset}, ${nextOffset})`,
    );
    this.offset = offset;
    this.logStartOffset = logStartOffset;
    this.nextOffset = nextOffset;
  }
}

/** The active segment has no room for the batch; the partition log rolls and retries. */
export class SegmentFullError extends BooblikError {
  constructor(needBytes: number, freeBytes: number) {
    super("SEGMENT_FULL", `segment full: batch needs ${needBytes} bytes, ${freeBytes} free`);
  }
}

/**
 * A write or force failed earlier; the log refuses appends until it is reopened and recovered.
 * A retried fsync that succeeds proves nothing about the data of the failed one (PostgreSQL's 2018
 * "fsyncgate"), so the only honest state after a failure is "stopped".
 */
export class PartitionFailedError extends BooblikError {
  constructor(what: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      "PARTITION_FAILED",
      `${what} refuses appends after an earlier failure: ${reason}; reopen it to recover`,
      {
        cause,
      },
    );
  }
}

export class ClosedError extends BooblikError {
  constructor(what: string) {
    super("CLOSED", `${what} is closed`);
  }
}

export class UnknownTopicOrPartitionError extends BooblikError {
  constructor(topic: string, partition?: number) {
    super(
      "UNKNOWN_TOPIC_OR_PARTITION",
      partition === undefined
        ? `unknown topic ${JSON.stringify(topic)}`
        : `unknown partition ${topic}/${partition}`,
    );
  }
}

export class TopicExistsError extends BooblikError {
  constructor(topic: string) {
    super("TOPIC_EXISTS", `topic ${JSON.stringify(topic)} already exists`);
  }
}

/** Another process (or another Broker in this one) holds the data directory. */
export class DataDirLockedError extends BooblikError {
  readonly holder: string;
  constructor(dataDir: string, holder: string) {
    super("DATA_DIR_LOCKED", `data directory ${dataDir} is in use by ${holder}`);
    this.holder = holder;
  }
}

/**
 * A client tried to write or delete an internal topic (the offsets topic, `__consumer_offsets`):
 * only the broker writes it. Kafka answers INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic").
 */
export class InternalTopicError extends BooblikError {
  readonly topic: string;
  constructor(topic: string, what: string) {
    super(
      "INVALID_ARGUMENT",
      `topic ${JSON.stringify(topic)} is internal to the broker and cannot be ${what}`,
    );
    this.topic = topic;
  }
}

/**
 * A request the topic's settings forbid (Kafka's PolicyViolationException): DeleteRecords on a
 * compact-only topic. INVALID_ARGUMENT on the native protocol, POLICY_VIOLATION (44) on Kafka's.
 */
export class PolicyViolationError extends BooblikError {
  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
  }
}

/**
 * An idempotent producer's batch does not continue its sequence on this partition (a gap, or a
 * sequence that is neither the next one nor one of the batches remembered): Kafka's
 * OUT_OF_ORDER_SEQUENCE_NUMBER. Nothing of the request was appended.
 */
export class OutOfOrderSequenceError extends BooblikError {
  constructor(message: string) {
    super("OUT_OF_ORDER_SEQUENCE_NUMBER", message);
  }
}

/**
 * An idempotent producer's batch carries an epoch older than one this partition already took from
 * the same producer id (Kafka's INVALID_PRODUCER_EPOCH): a zombie instance. Nothing was appended.
 */
export class InvalidProducerEpochError extends BooblikError {
  constructor(message: string) {
    super("INVALID_PRODUCER_EPOCH", message);
  }
}

/**
 * An ACL refused a request (src/auth/acl.ts): the message names the principal, the operation and
 * the resource. Not retriable: repeating it succeeds only after someone changes the ACLs.
 */
export class AuthorizationError extends BooblikError {
  constructor(
    code: "TOPIC_AUTHORIZATION_FAILED" | "GROUP_AUTHORIZATION_FAILED" | "CLUSTER_AUTHORIZATION_FAILED",
    message: string,
  ) {
    super(code, message);
  }
}
