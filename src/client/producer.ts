/**
 * The producer: records in, acknowledged offsets out, with batching, partitioning and backpressure.
 *
 * Three ways in, one mechanism:
 * - `send()` resolves with the offsets the broker assigned, once acknowledged (simplest, one promise
 *   per call);
 * - `accept()` resolves once the records are buffered (waiting while the buffer is full) and hands
 *   back the acknowledgement as a promise: streaming at the broker's pace with per-call results.
 *   One record that fits the buffer and whose topic is known is buffered synchronously and
 *   accept() returns the `Accepted` itself, no promise: the record's acknowledgement is derived
 *   from its batch's (one `BatchAck` per batch), and only made a promise when `acknowledged` is
 *   read. `await` takes either;
 * - `write()` is synchronous, like a Node stream: it buffers the record and returns false once the
 *   buffer is full, then `await drained()`. No promise per record, so it is the fast path; failures
 *   surface from `flush()`/`close()`.
 *
 * - A record is Kafka's: `{ key, value, headers, timestamp }` (a bare string or bytes is a value with
 *   no key). Records are encoded on the client into one open RecordBatch v2 per partition
 *   (`RecordBatchWriter`, src/record/batch.ts; compressed at the end with `compression`), and one
 *   batch goes per PRODUCE request. A batch is sent when it reaches `batchBytes` (capped at a
 *   quarter of the topic's segment, since a batch never spans segments, and at the topic's
 *   `maxRecordBytes`, its largest batch), or `lingerMs` after its first record, or on `flush()`.
 * - Partitioning: a record with a key goes to Kafka's default partition for it
 *   (`partitionForKey`: murmur2 of the key bytes, positive, modulo the partition count), so a key
 *   lands on the same partition here as in a Kafka cluster; a record without one goes to the current
 *   "sticky" partition, which moves on to the next partition each time one of its batches is sent
 *   (spreads evenly, keeps batches full). A producer's first sticky partition is random, so that
 *   many short-lived producers spread too.
 * - Backpressure: at most `bufferBytes` of encoded records wait or are in flight.
 * - Per partition at most `maxInFlightBatches` PRODUCE requests are outstanding; requests on one
 *   connection are answered in order, so a partition's batches are appended in the order accepted.
 * - Delivery: a batch whose connection failed is sent again (up to the client's `retries`). With
 *   `idempotent` (the default) the producer asks the broker for a producer id (INIT_PRODUCER_ID)
 *   before its first batch and stamps every batch with it, an epoch and the partition's next
 *   sequence, so a resend of a batch the broker already appended (only the acknowledgement was lost)
 *   is answered with the original offsets and not appended again: exactly once per partition for as
 *   long as the broker remembers the producer (its last 5 batches per partition, for a day; docs/
 *   architecture.md). A batch that fails for good (the broker refused it, or every retry failed) may
 *   or may not have been appended; the partition then starts over at the next epoch, sequence 0,
 *   and batches already in flight behind it fail too (OUT_OF_ORDER_SEQUENCE_NUMBER or
 *   INVALID_PRODUCER_EPOCH). `idempotent: false` sends plain batches: a resend after a lost
 *   acknowledgement can then append twice (at-least-once). Set `retryOnConnectionFailure: false`
 *   for at-most-once.
 * - Metadata: a topic's partition count and limits come from one METADATA request, made by its
 *   first record, and are read again in the background when a batch for the topic is sent while
 *   they are older than `metadataMaxAgeMs` (Kafka's metadata.max.age.ms, 5 minutes), and at the
 *   next record after an UNKNOWN_TOPIC_OR_PARTITION; records go on with the old count until the
 *   answer arrives, so partitions added to the topic get records within about that age. Records for it (from any way in) queue in call order until it answers, are counted
 *   by flush()/close() like batches, and then join batches in that order; the queue is emptied in
 *   the same step that makes the topic known, so no later record can overtake a queued one.
 * - A record that cannot fit a batch of the topic's `maxRecordBytes` on its own is refused alone
 *   before it joins a batch (the broker would refuse the whole batch): `accept()`/`send()` reject,
 *   `write()` reports it from `flush()`/`close()`, and either way flush()/close() reject.
 * - `flush()` and `close()` resolve only when everything accepted before them was acknowledged; if
 *   any batch failed (or a record was refused) they reject once everything settled. Nothing accepted
 *   is silently dropped.
 */
import {
  BooblikError,
  InvalidArgumentError,
  RecordTooLargeError,
  UnknownTopicOrPartitionError,
} from "../domain/errors.ts";
import {
  ENTRY_HEADER_BYTES,
  PRODUCER_BATCHES_RETAINED,
  PRODUCER_CLOCK_REUSE_RECORDS_MAX,
  PRODUCER_METADATA_MAX_AGE_MS_DEFAULT,
  RECORD_BATCH_BYTES_LIMIT,
  RECORD_BATCH_OVERHEAD_BYTES,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { type HeaderInput, RecordBatchWriter, type RecordInput, utf8Length } from "../record/batch.ts";
import { codecIdOf, codecUnavailableReason, type ProducibleCodec } from "../record/compression.ts";
import { partitionForKey } from "../record/partitioner.ts";
import { sizeOfVarint } from "../record/varint.ts";
import type { BooblikClient, MetadataInfo } from "./client.ts";

export interface ProducerOptions {
  /** Send a batch once it holds this many bytes. */
  batchBytes?: number;
  /** Send a batch at the latest this long after its first record. */
  lingerMs?: number;
  /** Most framed bytes waiting or in flight before accept() waits and write() returns false. */
  bufferBytes?: number;
  /**
   * Most PRODUCE requests in flight per partition (default 4). At most 5 with `idempotent`: the
   * broker remembers a producer's last 5 batches per partition (PRODUCER_BATCHES_RETAINED).
   */
  maxInFlightBatches?: number;
  /** Resend a batch whose connection failed (at-least-once). */
  retryOnConnectionFailure?: boolean;
  /** Compression of every batch this producer sends (Bun's zlib; default none). */
  compression?: ProducibleCodec;
  /**
   * Re-read a topic's partition count and limits once they are this old (Kafka's
   * metadata.max.age.ms; default 5 minutes), so that partitions added since get records.
   */
  metadataMaxAgeMs?: number;
  /**
   * Stamp batches with a producer id and sequences so that resends are not appended twice (default
   * true). Against a broker without INIT_PRODUCER_ID the producer sends plain batches.
   */
  idempotent?: boolean;
}

export interface SendOptions {
  /** The partition, whatever the records' keys say. */
  partition?: number;
  /** The key of every record of the call that does not carry its own (stored with the record). */
  key?: Uint8Array | string;
}

export interface SendResult {
  topic: string;
  partition: number;
  /** Offset of the first of the records given to this send; the others follow it. */
  offset: number;
  count: number;
  durability: "appended" | "forced";
  /** The broker's append time when the topic's timestampType is LogAppendTime; −1 otherwise. */
  logAppendTimeMs: number;
}

/** Bytes, or a string sent as its UTF-8 bytes. */
export type Bytes = Uint8Array | string;

/** Headers as a list (order kept, keys may repeat) or as an object. */
export type ProducerHeaders =
  | readonly { key: string; value: Bytes | null }[]
  | Readonly<Record<string, Bytes | null>>;

/** A record to send: Kafka's record. A bare string or bytes is a record with only a value. */
export interface ProducerRecord {
  /** Keyed records go to Kafka's default partition for the key (unless a partition is given). */
  key?: Bytes | null;
  value: Bytes | null;
  headers?: ProducerHeaders;
  /** CreateTime in ms since the epoch (or a Date); default: now. */
  timestamp?: number | Date;
}

type Value = Bytes | ProducerRecord;

interface PendingSend {
  firstIndex: number;
  count: number;
  resolve: (result: SendResult) => void;
  reject: (error: unknown) => void;
}

/**
 * A batch's outcome, for the records accept() buffered on its fast path: one object per batch
 * instead of a promise (and its resolve/reject closures) per record. The promise is made only when
 * some record's `acknowledged` is read before the batch settled.
 */
class BatchAck {
  readonly topic: string;
  readonly partition: number;
  /** 0 pending, 1 acknowledged, 2 failed. */
  state = 0;
  firstOffset = 0;
  durability: "appended" | "forced" = "appended";
  logAppendTimeMs = -1;
  error: unknown;
  private waiting: Promise<BatchAck> | undefined;
  private wake: ((ack: BatchAck) => void) | undefined;
  private fail: ((error: unknown) => void) | undefined;

  constructor(topic: string, partition: number) {
    this.topic = topic;
    this.partition = partition;
  }

  /** Resolves with this object once acknowledged; rejects with the batch's error. */
  settled(): Promise<BatchAck> {
    if (this.state === 1) return Promise.resolve(this);
    if (this.state === 2) return Promise.reject(this.error);
    if (this.waiting === undefined) {
      this.waiting = new Promise<BatchAck>((resolve, reject) => {
        this.wake = resolve;
        this.fail = reject;
      });
      // Read only through Accepted.acknowledged, which handles it; this one must not be unhandled.
      this.waiting.catch(() => undefined);
    }
    return this.waiting;
  }

  succeed(firstOffset: number, durability: "appended" | "forced", logAppendTimeMs: number): void {
    this.firstOffset = firstOffset;
    this.durability = durability;
    this.logAppendTimeMs = logAppendTimeMs;
    this.state = 1;
    this.wake?.(this);
  }

  failWith(error: unknown): void {
    this.error = error;
    this.state = 2;
    this.fail?.(error);
  }
}

/**
 * What accept() hands back for the records it buffered. `acknowledged` resolves with their offsets
 * once the broker acknowledged their batch (rejects if the batch failed for good; flush()/close()
 * report that too, so it need not be read). Immutable once created: it never changes under the
 * caller, and it holds only its batch's small BatchAck (not the batch's bytes).
 */
export class Accepted {
  private readonly ack: BatchAck | undefined;
  private readonly index: number;
  private promise: Promise<SendResult> | undefined;

  /** @internal Made by the Producer: from a batch's ack and the record's index in it, or a promise. */
  constructor(ack: BatchAck | undefined, index: number, promise?: Promise<SendResult>) {
    this.ack = ack;
    this.index = index;
    this.promise = promise;
  }

  /** The offsets the broker assigned, once acknowledged under the topic's durability policy. */
  get acknowledged(): Promise<SendResult> {
    if (this.promise !== undefined) return this.promise;
    const ack = this.ack!;
    const index = this.index;
    const promise = ack.settled().then((settled) => ({
      topic: settled.topic,
      partition: settled.partition,
      offset: settled.firstOffset + index,
      count: 1,
      durability: settled.durability,
      logAppendTimeMs: settled.logAppendTimeMs,
    }));
    // As before: the caller may never handle it; flush()/close() report failures too.
    promise.catch(() => undefined);
    this.promise = promise;
    return promise;
  }
}

interface Batch {
  topic: string;
  partition: number;
  writer: RecordBatchWriter;
  /** Uncompressed bytes counted in `bufferedBytes` for this batch. */
  bytes: number;
  sends: PendingSend[];
  /** The acknowledgement of the records accept() buffered on its fast path (see Accepted). */
  ack: BatchAck | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The epoch it was stamped with (−1: sent as a plain batch). */
  epoch: number;
}

interface PartitionState {
  topic: string;
  partition: number;
  /** Largest batch for this topic (see the header). */
  limitBytes: number;
  open: Batch | undefined;
  inFlight: number;
  /** Batches closed but waiting for an in-flight place. */
  waiting: Batch[];
  /** The epoch stamped on this partition's batches (−1: plain batches), and the next sequence. */
  producerEpoch: number;
  nextSequence: number;
}

interface TopicInfo {
  /** When the METADATA answer it came from arrived (Date.now()). */
  fetchedAtMs: number;
  /** A background re-read is under way (maybeRefresh). */
  refreshing: boolean;
  partitions: number;
  batchLimitBytes: number;
  /** The topic's largest batch: a record that cannot fit one alone is refused before it joins one. */
  maxRecordBytes: number;
}

/** Records given (by write() or accept()) before the topic's metadata arrived. */
interface Deferred {
  records: RecordInput[];
  /** Upper bound of their encoded size, counted in `bufferedBytes` while they wait. */
  bytes: number;
  options: SendOptions;
  /** accept()'s: its acknowledgement, and settling accept() itself; undefined for write(). */
  accept: { send: PendingSend; accepted: () => void; refused: (error: unknown) => void } | undefined;
}

const ENCODER = new TextEncoder();

function bytesOf(value: Bytes): Uint8Array {
  if (typeof value === "string") return ENCODER.encode(value);
  // Checked, not trusted: a number or an object would otherwise be encoded as garbage lengths.
  if (!(value instanceof Uint8Array))
    throw new InvalidArgumentError(`a key, value or header value is a string or bytes, got ${typeof value}`);
  return value;
}

function nullableBytesOf(value: Bytes | null | undefined): Uint8Array | null {
  return value === null || value === undefined ? null : bytesOf(value);
}

function headersOf(headers: ProducerHeaders | undefined): readonly HeaderInput[] | undefined {
  if (headers === undefined) return undefined;
  if (Array.isArray(headers)) {
    const given = headers as readonly { key: string; value: Bytes | null }[];
    // A list already in the writer's shape (string keys; bytes or null values) is used as it is:
    // copying it cost a list and an object per header per record (a CPU profile of write() with one
    // header, bench/producer-cpu.bench.ts). Like a key or value, it is read when the record is encoded: at once, or when the
    // topic's metadata arrives.
    let asGiven = true;
    for (let h = 0; h < given.length; h++) {
      const header = given[h];
      if (typeof header?.key !== "string")
        throw new InvalidArgumentError("a header is { key: string, value: string | bytes | null }");
      const value = header.value;
      if (!(value === null || value instanceof Uint8Array)) asGiven = false;
    }
    if (given.length === 0) return undefined;
    if (asGiven) return given as readonly HeaderInput[];
  }
  const list: HeaderInput[] = [];
  if (Array.isArray(headers)) {
    for (const header of headers as readonly { key: string; value: Bytes | null }[])
      list.push({ key: header.key, value: nullableBytesOf(header.value) });
  } else {
    for (const [key, value] of Object.entries(headers as Record<string, Bytes | null>))
      list.push({ key, value: nullableBytesOf(value) });
  }
  return list.length === 0 ? undefined : list;
}

/** Reusable records for write(), which encodes its record at once (see Producer.write). */
interface ScratchRecords {
  plain: RecordInput;
  withHeaders: RecordInput & { headers: readonly HeaderInput[] };
}

/**
 * A record as the batch writer takes it: bytes, a header list, a timestamp. Into `scratch` when
 * given (write()'s record, encoded before the next call), otherwise a new object.
 */
function recordOf(
  value: Value,
  defaultKey: Uint8Array | null,
  nowMs: number,
  scratch?: ScratchRecords,
): RecordInput {
  if (typeof value === "string" || value instanceof Uint8Array)
    return { key: defaultKey, value: bytesOf(value), timestamp: nowMs };
  if (value === null || typeof value !== "object" || !("value" in value))
    throw new InvalidArgumentError("a record is a string, bytes, or { key?, value, headers?, timestamp? }");
  const timestamp =
    value.timestamp === undefined
      ? nowMs
      : value.timestamp instanceof Date
        ? value.timestamp.getTime()
        : value.timestamp;
  if (!(Number.isSafeInteger(timestamp) && timestamp >= 0))
    throw new InvalidArgumentError(
      `timestamp ${String(value.timestamp)} is not a time in ms since the epoch`,
    );
  const headers = headersOf(value.headers);
  const key = value.key === undefined ? defaultKey : nullableBytesOf(value.key);
  const bytes = nullableBytesOf(value.value);
  if (scratch !== undefined) {
    // Two reused objects, one per shape: `headers` cannot be unset without changing the shape.
    const record = headers === undefined ? scratch.plain : scratch.withHeaders;
    record.key = key;
    record.value = bytes;
    record.timestamp = timestamp;
    if (headers !== undefined) scratch.withHeaders.headers = headers;
    return record;
  }
  // Two object literals rather than a spread: no temporary object per record.
  return headers === undefined ? { key, value: bytes, timestamp } : { key, value: bytes, timestamp, headers };
}

/**
 * An upper bound of `record`'s encoded size in a batch: exact for the key, value and headers, the
 * most a varint can take for the Length, TimestampDelta (10) and OffsetDelta (5). Used to decide
 * when a batch is full and to count buffered bytes before a record is encoded.
 */
function recordBytesBound(record: RecordInput): number {
  const key = record.key;
  const value = record.value;
  let body =
    1 +
    10 +
    5 +
    (key === null ? 1 : sizeOfVarint(key.length) + key.length) +
    (value === null ? 1 : sizeOfVarint(value.length) + value.length);
  const headers = record.headers;
  const headerCount = headers === undefined ? 0 : headers.length;
  body += sizeOfVarint(headerCount);
  for (let h = 0; h < headerCount; h++) {
    const header = headers![h]!;
    const keyBytes = utf8Length(header.key);
    body += sizeOfVarint(keyBytes) + keyBytes;
    body += header.value === null ? 1 : sizeOfVarint(header.value.length) + header.value.length;
  }
  return sizeOfVarint(body) + body;
}

/** Fails every acknowledgement waiting on a batch: accept()'s and send()'s. */
function rejectBatch(batch: Batch, error: unknown): void {
  for (const send of batch.sends) send.reject(error);
  batch.ack?.failWith(error);
}

const INT32_MAX = 2_147_483_647;
/** Kafka's producer epoch is an int16. */
const PRODUCER_EPOCH_MAX = 32_767;

export class Producer {
  private readonly client: BooblikClient;
  private readonly batchBytes: number;
  private readonly lingerMs: number;
  private readonly bufferBytes: number;
  private readonly maxInFlightBatches: number;
  private readonly retry: boolean;
  private readonly compression: ProducibleCodec;
  private readonly metadataMaxAgeMs: number;
  /** Turned off for good when the broker does not know INIT_PRODUCER_ID. */
  private idempotent: boolean;
  /** From INIT_PRODUCER_ID before the first batch is sent; −1 until then, and for plain batches. */
  private producerId = -1;
  private producerIdRequest: Promise<void> | undefined;
  private readonly partitions = new Map<string, PartitionState>();
  private lastState: PartitionState | undefined;
  private readonly freeWriters: RecordBatchWriter[] = [];
  /** See returnWriter. */
  private readonly freeWritersMax: number;
  /** Encodes a group of records alone, to learn exactly whether it fits a topic's largest batch. */
  private readonly probe = new RecordBatchWriter(4096);
  /** write()'s record, reused: the batch writer encodes it at once and keeps nothing of it. */
  private readonly scratch: ScratchRecords = {
    plain: { key: null, value: null, timestamp: 0 },
    withHeaders: { key: null, value: null, timestamp: 0, headers: [] },
  };
  private readonly topics = new Map<string, TopicInfo>();
  /** Per topic whose METADATA request is in flight: the records waiting for it, in call order. */
  private readonly deferred = new Map<string, Deferred[]>();
  private readonly sticky = new Map<string, number>();
  private roomWaiters: (() => void)[] = [];
  private settledWaiters: (() => void)[] = [];
  private bufferedBytes = 0;
  /** Batches open, waiting or in flight, plus topics whose deferred records wait for metadata. */
  private outstanding = 0;
  private failures: unknown[] = [];
  private closed = false;
  /** PRODUCE requests sent (for tests and metrics). */
  requestsSent = 0;
  /** The clock as last read, or −1 once a microtask turn passed (see nowMs). */
  private clockMs = -1;
  private clockUses = 0;
  private readonly forgetClock = () => {
    this.clockMs = -1;
  };

  constructor(client: BooblikClient, options: ProducerOptions = {}) {
    this.client = client;
    // 256 KiB: against 64 KiB it moved one producer of 100-byte records from 3.6 to 4.2 M records/s
    // (bench/client.bench.ts), and it is still a small fraction of a default segment.
    this.batchBytes = options.batchBytes ?? 256 * 1024;
    this.lingerMs = options.lingerMs ?? 5;
    this.bufferBytes = options.bufferBytes ?? 32 * 1024 * 1024;
    this.maxInFlightBatches = options.maxInFlightBatches ?? 4;
    this.retry = options.retryOnConnectionFailure ?? true;
    this.compression = options.compression ?? "none";
    this.metadataMaxAgeMs = options.metadataMaxAgeMs ?? PRODUCER_METADATA_MAX_AGE_MS_DEFAULT;
    if (!(this.metadataMaxAgeMs >= 0))
      throw new InvalidArgumentError(`metadataMaxAgeMs must be a number ≥ 0, got ${this.metadataMaxAgeMs}`);
    this.idempotent = options.idempotent ?? true;
    if (!(Number.isInteger(this.maxInFlightBatches) && this.maxInFlightBatches >= 1))
      throw new InvalidArgumentError(
        `maxInFlightBatches must be an integer ≥ 1, got ${this.maxInFlightBatches}`,
      );
    // The broker remembers a producer's last PRODUCER_BATCHES_RETAINED batches per partition: with
    // more in flight, the resends after a lost connection of the oldest ones were refused as
    // sequence gaps though the broker had stored them (reported failed, stored once; a helper's
    // stress run, 2026-12-02). Kafka refuses max.in.flight.requests.per.connection > 5 with
    // idempotence the same way.
    if (this.idempotent && this.maxInFlightBatches > PRODUCER_BATCHES_RETAINED)
      throw new InvalidArgumentError(
        `maxInFlightBatches ${this.maxInFlightBatches} is above ${PRODUCER_BATCHES_RETAINED}, the batches per partition the broker remembers of an idempotent producer: a resend of an older one after a lost connection would be refused; use at most ${PRODUCER_BATCHES_RETAINED}, or idempotent: false`,
      );
    if (!["none", "gzip", "zstd"].includes(this.compression))
      throw new InvalidArgumentError(
        `compression ${JSON.stringify(this.compression)} is not one of none, gzip, zstd`,
      );
    // At construction, not at the first send: zstd on Node.js before 22.15 (compression.ts).
    const unavailable = codecUnavailableReason(codecIdOf(this.compression));
    if (unavailable !== undefined)
      throw new InvalidArgumentError(`compression ${this.compression}: ${unavailable}`);
    if (this.bufferBytes < this.batchBytes) {
      throw new InvalidArgumentError(
        `bufferBytes (${this.bufferBytes}) must be at least batchBytes (${this.batchBytes})`,
      );
    }
    this.freeWritersMax = Math.ceil(this.bufferBytes / this.batchBytes) + this.maxInFlightBatches;
  }

  /** Encoded record bytes currently waiting or in flight. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  // --- Ways in -----------------------------------------------------------------------------------

  /**
   * Sends one record or several (they go to one partition, in order, in one batch) and resolves
   * with the offsets the broker assigned, once acknowledged under the topic's durability policy.
   * A record is `{ key, value, headers, timestamp }`, or a bare string or bytes (a value).
   */
  async send(
    topic: string,
    values: Value | readonly Value[],
    options: SendOptions = {},
  ): Promise<SendResult> {
    const accepted = await this.accept(topic, values, options);
    return accepted.acknowledged;
  }

  /**
   * Buffers records (waiting for room first: backpressure) and returns once they are accepted;
   * `acknowledged` resolves when the broker acknowledged them. `await` the result: one record that
   * fits the buffer, for a topic whose metadata the producer has, is buffered at once and the
   * `Accepted` comes back directly (no promise per record); otherwise, and on any error, a promise.
   */
  accept(
    topic: string,
    values: Value | readonly Value[],
    options: SendOptions = {},
  ): Accepted | Promise<Accepted> {
    if (!Array.isArray(values) && !this.closed) {
      const info = this.topics.get(topic);
      if (info !== undefined) {
        try {
          const accepted = this.acceptOne(topic, values as Value, options, info);
          if (accepted !== undefined) return accepted;
        } catch (error) {
          return Promise.reject(error);
        }
      }
    }
    return this.acceptWaiting(topic, values, options);
  }

  /**
   * accept()'s fast path: one record into its partition's open batch, synchronously, when the
   * buffer has room; undefined (nothing done) when it has not. Throws what accept() rejects with.
   */
  private acceptOne(
    topic: string,
    value: Value,
    options: SendOptions,
    info: TopicInfo,
  ): Accepted | undefined {
    // One clock read per call: a loop of awaited accept()s takes a turn per record, where the cached
    // clock of write() would cost a microtask to forget (a third of accept()'s time in a CPU profile).
    let record: RecordInput;
    if (typeof value === "string" || value instanceof Uint8Array) {
      // A bare value into the reused record (as write() does): it is encoded below, before any
      // other call can reuse it, and the batch writer keeps nothing of it.
      record = this.scratch.plain;
      record.key = options.key === undefined ? null : bytesOf(options.key);
      record.value = bytesOf(value);
      record.timestamp = Date.now();
    } else {
      record = recordOf(value, nullableBytesOf(options.key), Date.now(), this.scratch);
    }
    const bytes = recordBytesBound(record);
    if (this.bufferedBytes > 0 && this.bufferedBytes + bytes > this.bufferBytes) return undefined;
    const partition = this.choosePartition(topic, options, record.key, info);
    const oversize =
      RECORD_BATCH_OVERHEAD_BYTES + bytes <= info.maxRecordBytes
        ? undefined
        : this.oversize([record], bytes, info);
    if (oversize !== undefined) throw this.tooLarge(topic, [record], oversize, info);
    const state = this.stateOf(topic, partition, info);
    const batch = this.batchFor(state, bytes);
    const writer = batch.writer;
    const index = writer.recordCount;
    const before = writer.sizeBytes;
    writer.add(record);
    const added = writer.sizeBytes - before;
    batch.bytes += added;
    this.bufferedBytes += added;
    let ack = batch.ack;
    if (ack === undefined) {
      ack = new BatchAck(topic, partition);
      batch.ack = ack;
    }
    if (writer.sizeBytes >= state.limitBytes) this.closeBatch(state, batch);
    return new Accepted(ack, index);
  }

  /** accept() when it may have to wait: for room, or for the topic's metadata; and for several records. */
  private async acceptWaiting(
    topic: string,
    values: Value | readonly Value[],
    options: SendOptions,
  ): Promise<Accepted> {
    this.checkOpen();
    const defaultKey = nullableBytesOf(options.key);
    const nowMs = Date.now();
    const list = Array.isArray(values)
      ? (values as readonly Value[]).map((value) => recordOf(value, defaultKey, nowMs))
      : [recordOf(values as Value, defaultKey, nowMs)];
    if (list.length === 0) throw new InvalidArgumentError("nothing to send");
    let bytes = 0;
    for (const record of list) bytes += recordBytesBound(record);
    // A send larger than the whole buffer still goes, alone, once the buffer is empty.
    while (this.bufferedBytes > 0 && this.bufferedBytes + bytes > this.bufferBytes) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
      this.checkOpen();
    }
    let send!: PendingSend;
    const acknowledged = new Promise<SendResult>((resolve, reject) => {
      send = { firstIndex: 0, count: list.length, resolve, reject };
    });
    // The caller may never look at `acknowledged`; flush()/close() report failures too.
    acknowledged.catch(() => undefined);
    const info = this.topics.get(topic);
    if (info === undefined) {
      // Queued with the topic's other waiting records, so flush()/close() wait for this one too
      // (close() cannot finish, and close the producer, while it waits).
      await new Promise<void>((accepted, refused) =>
        this.defer(topic, { records: list, bytes, options, accept: { send, accepted, refused } }),
      );
    } else {
      const refused = this.acceptInto(topic, list, bytes, options, send, info);
      if (refused !== undefined) throw refused;
    }
    return new Accepted(undefined, 0, acknowledged);
  }

  /**
   * Buffers one record synchronously. Returns false once the buffer is full: stop writing until
   * `drained()` resolves (the record was still accepted). Failures surface from flush()/close().
   */
  write(topic: string, value: Value, options: SendOptions = {}): boolean {
    this.checkOpen();
    const info = this.topics.get(topic);
    let record: RecordInput;
    if (info === undefined) {
      record = recordOf(value, nullableBytesOf(options.key), this.nowMs());
    } else if (typeof value === "string" || value instanceof Uint8Array) {
      // The fast path: a bare value into the reused record, encoded into the batch at once.
      record = this.scratch.plain;
      record.key = options.key === undefined ? null : bytesOf(options.key);
      record.value = bytesOf(value);
      record.timestamp = this.nowMs();
    } else {
      // Encoded at once too (writeInto keeps nothing of it), so a reused object serves.
      record = recordOf(value, nullableBytesOf(options.key), this.nowMs(), this.scratch);
    }
    if (info === undefined) {
      // The partition count is not known yet: keep the record until metadata arrives.
      this.defer(topic, { records: [record], bytes: recordBytesBound(record), options, accept: undefined });
    } else {
      this.writeInto(topic, record, options, info);
    }
    return this.bufferedBytes < this.bufferBytes;
  }

  /** Resolves once the buffer has room again (at once when it has). */
  async drained(): Promise<void> {
    // A loop: a wake-up means room may have come back, not that it did.
    while (this.bufferedBytes >= this.bufferBytes && !this.closed) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
  }

  /**
   * The time a record gets as its CreateTime: Date.now(), read once per synchronous run of writes
   * and at least every PRODUCER_CLOCK_REUSE_RECORDS_MAX records (limits.ts says why). A microtask
   * forgets it, so a record written after any await reads the clock afresh.
   */
  private nowMs(): number {
    if (this.clockMs < 0 || ++this.clockUses >= PRODUCER_CLOCK_REUSE_RECORDS_MAX) {
      if (this.clockMs < 0) queueMicrotask(this.forgetClock);
      this.clockMs = Date.now();
      this.clockUses = 0;
    }
    return this.clockMs;
  }

  // --- Batching ----------------------------------------------------------------------------------

  private checkOpen(): void {
    if (this.closed) throw new BooblikError("CLOSED", "producer is closed");
  }

  /** Queues records until the topic's metadata arrives; the first one asks for it. */
  private defer(topic: string, entry: Deferred): void {
    this.bufferedBytes += entry.bytes;
    let waiting = this.deferred.get(topic);
    if (waiting === undefined) {
      waiting = [];
      this.deferred.set(topic, waiting);
      this.outstanding++;
      this.client
        .metadata([topic])
        .then((metadata) => this.topicInfoOf(topic, metadata))
        .then(
          (info) => this.replayDeferred(topic, info),
          (error: unknown) => this.failDeferred(topic, error),
        );
    }
    waiting.push(entry);
  }

  private topicInfoOf(topic: string, metadata: MetadataInfo): TopicInfo {
    const found = metadata.topics[0];
    // A broker answers an unknown topic with an error; an empty answer means the same.
    if (found === undefined || found.partitions.length === 0) throw new UnknownTopicOrPartitionError(topic);
    const segmentBytes = Number(found.config.segmentBytes);
    // The config is the broker's JSON: without the setting, only the format's own limit applies.
    const maxRecordBytes =
      typeof found.config.maxRecordBytes === "number"
        ? Math.min(found.config.maxRecordBytes, RECORD_BATCH_BYTES_LIMIT)
        : RECORD_BATCH_BYTES_LIMIT;
    // A batch never spans segments, so it must fit an empty one; a quarter of a segment keeps
    // segments at least three quarters full when batches roll them.
    const segmentShare =
      Number.isFinite(segmentBytes) && segmentBytes > SEGMENT_HEADER_BYTES + ENTRY_HEADER_BYTES
        ? Math.floor((segmentBytes - SEGMENT_HEADER_BYTES) / 4) - ENTRY_HEADER_BYTES
        : this.batchBytes;
    const batchLimitBytes = Math.max(
      RECORD_BATCH_OVERHEAD_BYTES + 1,
      Math.min(this.batchBytes, segmentShare, maxRecordBytes),
    );
    return {
      fetchedAtMs: Date.now(),
      refreshing: false,
      partitions: found.partitions.length,
      batchLimitBytes,
      maxRecordBytes,
    };
  }

  /**
   * Makes the topic known and moves its waiting records into batches, in one step: a record given
   * after this point finds the topic known, and none given before can be overtaken by it.
   */
  private replayDeferred(topic: string, info: TopicInfo): void {
    this.topics.set(topic, info);
    const waiting = this.deferred.get(topic)!; // set by defer() before it asked for the metadata
    this.deferred.delete(topic);
    const before = this.bufferedBytes;
    for (const entry of waiting) {
      this.bufferedBytes -= entry.bytes;
      const accept = entry.accept;
      if (accept === undefined) {
        this.writeInto(topic, entry.records[0]!, entry.options, info);
        continue;
      }
      const refused = this.acceptInto(topic, entry.records, entry.bytes, entry.options, accept.send, info);
      if (refused === undefined) accept.accepted();
      else accept.refused(refused);
    }
    if (this.bufferedBytes < before) this.wakeRoomWaiters(); // refused records gave their room back
    this.settleOutstanding();
  }

  private failDeferred(topic: string, error: unknown): void {
    const waiting = this.deferred.get(topic)!; // set by defer() before it asked for the metadata
    this.deferred.delete(topic);
    let writes = false;
    for (const entry of waiting) {
      this.bufferedBytes -= entry.bytes;
      if (entry.accept === undefined) writes = true;
      else {
        entry.accept.send.reject(error);
        entry.accept.refused(error);
      }
    }
    // accept() callers were just told; write() callers learn it from flush()/close().
    if (writes) this.failures.push(error);
    this.wakeRoomWaiters();
    this.settleOutstanding();
  }

  /**
   * The exact size of `records` as one batch of their own (before compression) when that is above
   * the topic's largest batch; undefined when they fit. The upper bound `bytes` decides almost
   * always; only near the limit are they encoded to know exactly.
   */
  private oversize(records: readonly RecordInput[], bytes: number, info: TopicInfo): number | undefined {
    if (RECORD_BATCH_OVERHEAD_BYTES + bytes <= info.maxRecordBytes) return undefined;
    const probe = this.probe.begin();
    for (const record of records) probe.add(record);
    return probe.sizeBytes <= info.maxRecordBytes ? undefined : probe.sizeBytes;
  }

  /** Refuses records too large for the topic; the error is also kept for flush()/close(). */
  private tooLarge(
    topic: string,
    records: readonly RecordInput[],
    batchBytes: number,
    info: TopicInfo,
  ): RecordTooLargeError {
    const error = new RecordTooLargeError(
      batchBytes,
      info.maxRecordBytes,
      records.length === 1 ? "a batch of this one record" : `a batch of these ${records.length} records`,
      `the maxRecordBytes (largest batch) of topic ${JSON.stringify(topic)}`,
    );
    this.failures.push(error);
    return error;
  }

  /** write()'s record into a batch, unless it is too large (then flush() reports it). */
  private writeInto(topic: string, record: RecordInput, options: SendOptions, info: TopicInfo): void {
    const bytes = recordBytesBound(record);
    const partition = this.choosePartition(topic, options, record.key, info);
    // The bound decides without allocating; only a record near the limit is measured exactly.
    const oversize =
      RECORD_BATCH_OVERHEAD_BYTES + bytes <= info.maxRecordBytes
        ? undefined
        : this.oversize([record], bytes, info);
    if (oversize !== undefined) this.tooLarge(topic, [record], oversize, info);
    else this.enqueueOne(topic, partition, record, bytes, info);
  }

  /** accept()'s records into one batch; the refusal instead when they cannot fit one together. */
  private acceptInto(
    topic: string,
    records: RecordInput[],
    bytes: number,
    options: SendOptions,
    send: PendingSend,
    info: TopicInfo,
  ): RecordTooLargeError | undefined {
    let partition: number;
    try {
      partition = this.choosePartition(
        topic,
        options,
        options.partition === undefined ? this.commonKey(records) : null,
        info,
      );
    } catch (error) {
      // Keys that would place the records apart: refused like a record too large, alone.
      this.failures.push(error);
      send.reject(error);
      return error as RecordTooLargeError;
    }
    const oversize = this.oversize(records, bytes, info);
    if (oversize !== undefined) {
      // The records stay together, so one too large refuses them all (and nothing else).
      const refused = this.tooLarge(topic, records, oversize, info);
      send.reject(refused);
      return refused;
    }
    this.enqueue(topic, partition, records, bytes, send, info);
    return undefined;
  }

  /**
   * The key that places records sent together: theirs when they share one (or none has one).
   * Records of one call go to one partition; keys that would place them apart are refused rather
   * than sent to a partition their keys do not name.
   */
  private commonKey(records: readonly RecordInput[]): Uint8Array | null {
    const first = records[0]!.key;
    for (let i = 1; i < records.length; i++) {
      const key = records[i]!.key;
      if (key === first) continue;
      if (key === null || first === null || Buffer.compare(key, first) !== 0)
        throw new InvalidArgumentError(
          "records sent together go to one partition: give them one key, or a partition, or send them apart",
        );
    }
    return first;
  }

  private choosePartition(
    topic: string,
    options: SendOptions,
    key: Uint8Array | null,
    info: TopicInfo,
  ): number {
    if (options.partition !== undefined) return options.partition;
    if (key !== null) return partitionForKey(key, info.partitions);
    let sticky = this.sticky.get(topic);
    if (sticky === undefined) {
      // Each producer starts at a random partition: starting every one at 0 put all of six
      // short keyless runs (CLI `produce` calls, one batch each) into partition 0 of four.
      sticky = Math.floor(Math.random() * info.partitions);
      this.sticky.set(topic, sticky);
    }
    return sticky % info.partitions;
  }

  private stateOf(topic: string, partition: number, info: TopicInfo): PartitionState {
    // Records usually come in runs for one partition: skip building the map key for them.
    const last = this.lastState;
    if (last !== undefined && last.partition === partition && last.topic === topic) return last;
    const key = `${partition}\u0000${topic}`;
    let state = this.partitions.get(key);
    if (state === undefined) {
      state = {
        topic,
        partition,
        limitBytes: info.batchLimitBytes,
        open: undefined,
        inFlight: 0,
        waiting: [],
        producerEpoch: 0,
        nextSequence: 0,
      };
      this.partitions.set(key, state);
    }
    this.lastState = state;
    return state;
  }

  /** The open batch of a partition with room for `bytes` more (closing a full one first). */
  private batchFor(state: PartitionState, bytes: number): Batch {
    const { topic, partition } = state;
    const limit = state.limitBytes;
    let batch = state.open;
    if (batch !== undefined && batch.writer.recordCount > 0 && batch.writer.sizeBytes + bytes > limit) {
      this.closeBatch(state, batch);
      batch = undefined;
    }
    if (batch === undefined) {
      const opened: Batch = {
        topic,
        partition,
        writer: this.takeWriter(Math.max(bytes + RECORD_BATCH_OVERHEAD_BYTES, limit)),
        bytes: 0,
        sends: [],
        ack: undefined,
        timer: undefined,
        epoch: -1,
      };
      opened.timer = setTimeout(() => {
        if (state.open === opened) this.closeBatch(state, opened);
      }, this.lingerMs);
      state.open = opened;
      this.outstanding++;
      batch = opened;
    }
    return batch;
  }

  /**
   * A batch writer with room for at least `bytes`, reused from settled batches when one is free:
   * allocating (and zeroing) 256 KiB per batch, then regrowing it, cost a visible share of a
   * 100-byte record's time (format 1's measurement; the writer grows on its own if it must).
   */
  private takeWriter(bytes: number): RecordBatchWriter {
    const reused = this.freeWriters.pop();
    const writer = reused ?? new RecordBatchWriter(bytes);
    return writer.begin({ codec: this.compression });
  }

  /**
   * Keeps as many settled writers as full batches fit the buffer (plus those in flight): when the
   * producer outruns the broker the buffer fills with waiting batches, and a list capped at
   * maxInFlightBatches + 2 (the earlier rule) threw most of them away, so every later batch
   * allocated and zeroed a fresh 256 KiB (7-10 % of write()'s CPU profile for 100-byte records,
   * bench/producer-cpu.bench.ts). The memory kept is what `bufferBytes` allows
   * anyway.
   */
  private returnWriter(writer: RecordBatchWriter): void {
    if (this.freeWriters.length < this.freeWritersMax) this.freeWriters.push(writer);
  }

  /** The write() path: one record, no promise. */
  private enqueueOne(
    topic: string,
    partition: number,
    record: RecordInput,
    boundBytes: number,
    info: TopicInfo,
  ): void {
    const state = this.stateOf(topic, partition, info);
    const batch = this.batchFor(state, boundBytes);
    const writer = batch.writer;
    const before = writer.sizeBytes;
    writer.add(record);
    const added = writer.sizeBytes - before;
    batch.bytes += added;
    this.bufferedBytes += added;
    if (writer.sizeBytes >= state.limitBytes) this.closeBatch(state, batch);
  }

  /** The accept()/send() path: records that stay together, with their acknowledgement. */
  private enqueue(
    topic: string,
    partition: number,
    records: RecordInput[],
    boundBytes: number,
    send: PendingSend,
    info: TopicInfo,
  ): void {
    const state = this.stateOf(topic, partition, info);
    const batch = this.batchFor(state, boundBytes);
    const writer = batch.writer;
    send.firstIndex = writer.recordCount;
    const before = writer.sizeBytes;
    for (const record of records) writer.add(record);
    const added = writer.sizeBytes - before;
    batch.bytes += added;
    batch.sends.push(send);
    this.bufferedBytes += added;
    if (writer.sizeBytes >= state.limitBytes) this.closeBatch(state, batch);
  }

  private closeBatch(state: PartitionState, batch: Batch): void {
    if (state.open === batch) state.open = undefined;
    clearTimeout(batch.timer);
    batch.timer = undefined;
    // Unkeyed records move on to the next partition, batch by batch.
    const partitions = this.topics.get(batch.topic)?.partitions ?? 0;
    if (partitions > 0 && (this.sticky.get(batch.topic) ?? 0) === batch.partition % partitions) {
      this.sticky.set(batch.topic, (batch.partition + 1) % partitions);
    }
    state.waiting.push(batch);
    this.maybeRefresh(batch.topic);
    this.pump(state);
  }

  /**
   * Asks for the topic's metadata again, in the background, when it is older than
   * `metadataMaxAgeMs` (checked once per batch, not per record). Records keep the old partition
   * count until the answer arrives; then keyed records go to `partitionForKey(key, new count)` and
   * keyless ones spread over every partition. A failed re-read changes nothing and is tried again
   * one age later (a deleted topic shows as UNKNOWN_TOPIC_OR_PARTITION on the next PRODUCE).
   */
  private maybeRefresh(topic: string): void {
    const info = this.topics.get(topic);
    if (info === undefined || info.refreshing || Date.now() - info.fetchedAtMs < this.metadataMaxAgeMs)
      return;
    info.refreshing = true;
    this.client
      .metadata([topic])
      .then((metadata) => this.topicInfoOf(topic, metadata))
      .then(
        (fresh) => {
          // Unless the topic was forgotten (or re-read) meanwhile: then that newer state stands.
          if (this.topics.get(topic) === info) this.topics.set(topic, fresh);
        },
        () => {
          info.refreshing = false;
          info.fetchedAtMs = Date.now();
        },
      );
  }

  /**
   * Asks for the producer id once; every partition's waiting batches go out when it arrives. A
   * broker that does not know INIT_PRODUCER_ID (UNSUPPORTED_VERSION, or INVALID_REQUEST for an
   * unknown API) gets plain batches; any other failure fails the waiting batches, and the next
   * batch asks again.
   */
  private requestProducerId(): void {
    if (this.producerIdRequest !== undefined) return;
    this.producerIdRequest = this.client.initProducerId().then(
      (response) => {
        this.producerId = response.producerId;
        this.producerIdRequest = undefined;
        for (const state of this.partitions.values()) this.pump(state);
      },
      (error: unknown) => {
        this.producerIdRequest = undefined;
        const unknownApi =
          error instanceof BooblikError &&
          (error.code === "UNSUPPORTED_VERSION" || error.code === "INVALID_REQUEST");
        if (unknownApi) this.idempotent = false;
        for (const state of this.partitions.values()) {
          if (unknownApi) {
            this.pump(state);
            continue;
          }
          for (const batch of state.waiting.splice(0)) {
            state.inFlight++;
            rejectBatch(batch, error);
            this.failures.push(error);
            this.settle(state, batch.bytes);
          }
        }
      },
    );
  }

  private pump(state: PartitionState): void {
    if (this.idempotent && this.producerId < 0 && state.producerEpoch >= 0 && state.waiting.length > 0) {
      this.requestProducerId();
      return;
    }
    while (state.inFlight < this.maxInFlightBatches && state.waiting.length > 0) {
      const batch = state.waiting.shift()!;
      state.inFlight++;
      this.requestsSent++;
      const bytes = batch.bytes;
      const stamped = this.idempotent && state.producerEpoch >= 0;
      if (stamped) batch.writer.idempotence(this.producerId, state.producerEpoch, state.nextSequence);
      let encoded: Uint8Array;
      try {
        encoded = batch.writer.finish();
      } catch (error) {
        // Only a compressed batch that grew past the limit can get here: its records fail alone
        // (and use no sequence: nothing was sent).
        rejectBatch(batch, error);
        this.failures.push(error);
        this.settle(state, bytes);
        continue;
      }
      if (stamped) {
        batch.epoch = state.producerEpoch;
        // Sequences wrap at Int32 max (Kafka's DefaultRecordBatch.incrementSequence).
        const next = state.nextSequence + batch.writer.recordCount;
        state.nextSequence = next > INT32_MAX ? next - INT32_MAX - 1 : next;
      }
      this.client.produce(batch.topic, batch.partition, encoded, this.retry).then(
        (response) => {
          for (const send of batch.sends) {
            send.resolve({
              topic: batch.topic,
              partition: batch.partition,
              offset: response.firstOffset + send.firstIndex,
              count: send.count,
              durability: response.durability,
              logAppendTimeMs: response.logAppendTimeMs,
            });
          }
          batch.ack?.succeed(response.firstOffset, response.durability, response.logAppendTimeMs);
          this.settle(state, bytes);
          this.returnWriter(batch.writer);
        },
        (error: unknown) => {
          if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION") {
            this.topics.delete(batch.topic);
          }
          // Appended or not, nobody knows: the partition's later batches start a new epoch at
          // sequence 0, which the broker accepts whatever it holds. Past the largest epoch (32,767
          // failures on one partition) the partition's batches go out plain.
          if (batch.epoch >= 0 && batch.epoch === state.producerEpoch) {
            state.producerEpoch = batch.epoch < PRODUCER_EPOCH_MAX ? batch.epoch + 1 : -1;
            state.nextSequence = 0;
          }
          rejectBatch(batch, error);
          this.failures.push(error);
          this.settle(state, bytes);
        },
      );
    }
  }

  private settle(state: PartitionState, bytes: number): void {
    state.inFlight--;
    this.bufferedBytes -= bytes;
    this.wakeRoomWaiters();
    this.settleOutstanding();
    this.pump(state);
  }

  private wakeRoomWaiters(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }

  private settleOutstanding(): void {
    this.outstanding--;
    if (this.outstanding === 0) {
      const waiters = this.settledWaiters;
      this.settledWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  // --- Flush and close ---------------------------------------------------------------------------

  /**
   * Sends every open batch now and resolves once everything accepted so far is acknowledged; rejects
   * (after everything settled) when any batch failed since the last flush.
   */
  async flush(): Promise<void> {
    for (const state of this.partitions.values())
      if (state.open !== undefined) this.closeBatch(state, state.open);
    while (this.outstanding > 0) {
      await new Promise<void>((resolve) => this.settledWaiters.push(resolve));
      for (const state of this.partitions.values())
        if (state.open !== undefined) this.closeBatch(state, state.open);
    }
    const failures = this.failures;
    this.failures = [];
    if (failures.length > 0) {
      const first = failures[0];
      const reason = first instanceof Error ? first.message : String(first);
      throw new BooblikError(
        first instanceof BooblikError ? first.code : "CONNECTION_ERROR",
        `${failures.length} batch(es) failed since the last flush; first: ${reason}`,
        { cause: first, retriable: first instanceof BooblikError && first.retriable },
      );
    }
  }

  /** Flushes, then refuses further sends. Does not close the client (it may be shared). */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      this.closed = true;
      this.wakeRoomWaiters();
    }
  }
}
