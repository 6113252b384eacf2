/**
 * The producer: records in, acknowledged offsets out, with batching, partitioning and backpressure.
 *
 * Three ways in, one mechanism:
 * - `send()` resolves with the offsets the broker assigned, once acknowledged (simplest, one promise
 *   per call);
 * - `accept()` resolves once the records are buffered (waiting while the buffer is full) and hands
 *   back the acknowledgement as a promise: streaming at the broker's pace with per-call results;
 * - `write()` is synchronous, like a Node stream: it buffers the record and returns false once the
 *   buffer is full, then `await drained()`. No promise per record, so it is the fast path; failures
 *   surface from `flush()`/`close()`.
 *
 * - Records are framed (with their CRC32C) on the client, into one open batch per partition. A batch
 *   is sent when it reaches `batchBytes` (capped so that it fits a quarter of the topic's segment:
 *   a batch never spans segments), or `lingerMs` after its first record, or on `flush()`.
 * - Partitioning: a record with a key goes to `crc32c(key) mod partitions`, so a key always lands in
 *   the same partition; a record without one goes to the current "sticky" partition, which moves on
 *   to the next partition each time one of its batches is sent (spreads evenly, keeps batches full).
 *   A producer's first sticky partition is random, so that many short-lived producers spread too.
 * - Backpressure: at most `bufferBytes` of framed records wait or are in flight.
 * - Per partition at most `maxInFlightBatches` PRODUCE requests are outstanding; requests on one
 *   connection are answered in order, so a partition's batches are appended in the order accepted.
 * - Delivery: a batch whose connection failed is sent again (up to the client's `retries`), so a
 *   record can be appended twice if only the acknowledgement was lost: at-least-once. Set
 *   `retryOnConnectionFailure: false` for at-most-once.
 * - Metadata: a topic's partition count and limits come from one METADATA request, made by its
 *   first record. Records for it (from any way in) queue in call order until it answers, are counted
 *   by flush()/close() like batches, and then join batches in that order; the queue is emptied in
 *   the same step that makes the topic known, so no later record can overtake a queued one.
 * - A record larger than the topic's `maxRecordBytes` is refused alone before it joins a batch (the
 *   broker refuses a whole batch for one such record): `accept()`/`send()` reject, `write()` reports
 *   it from `flush()`/`close()`, and either way flush()/close() reject.
 * - `flush()` and `close()` resolve only when everything accepted before them was acknowledged; if
 *   any batch failed (or a record was refused) they reject once everything settled. Nothing accepted
 *   is silently dropped.
 */
import { crc32c } from "../../ffi/crc32c.ts";
import {
  BooblikError,
  InvalidArgumentError,
  RecordTooLargeError,
  UnknownTopicOrPartitionError,
} from "../domain/errors.ts";
import { RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_LIMIT, SEGMENT_HEADER_BYTES } from "../domain/limits.ts";
import { RecordBatchBuilder } from "../record/batch-builder.ts";
import type { BooblikClient, MetadataInfo } from "./client.ts";

export interface ProducerOptions {
  /** Send a batch once it holds this many bytes. */
  batchBytes?: number;
  /** Send a batch at the latest this long after its first record. */
  lingerMs?: number;
  /** Most framed bytes waiting or in flight before accept() waits and write() returns false. */
  bufferBytes?: number;
  /** Most PRODUCE requests in flight per partition. */
  maxInFlightBatches?: number;
  /** Resend a batch whose connection failed (at-least-once). */
  retryOnConnectionFailure?: boolean;
}

export interface SendOptions {
  partition?: number;
  key?: Uint8Array | string;
}

export interface SendResult {
  topic: string;
  partition: number;
  /** Offset of the first of the values given to this send; the others follow it. */
  offset: number;
  count: number;
  durability: "appended" | "forced";
}

type Value = Uint8Array | string;

interface PendingSend {
  firstIndex: number;
  count: number;
  resolve: (result: SendResult) => void;
  reject: (error: unknown) => void;
}

interface Batch {
  topic: string;
  partition: number;
  builder: RecordBatchBuilder;
  sends: PendingSend[];
  timer: ReturnType<typeof setTimeout> | undefined;
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
}

interface TopicInfo {
  partitions: number;
  batchLimitBytes: number;
  /** The topic's largest record payload: a larger one is refused before it joins a batch. */
  maxRecordBytes: number;
}

/** Records given (by write() or accept()) before the topic's metadata arrived. */
interface Deferred {
  values: Uint8Array[];
  /** Framed bytes, counted in `bufferedBytes` while they wait. */
  bytes: number;
  options: SendOptions;
  /** accept()'s: its acknowledgement, and settling accept() itself; undefined for write(). */
  accept: { send: PendingSend; accepted: () => void; refused: (error: unknown) => void } | undefined;
}

const ENCODER = new TextEncoder();

function encode(value: Value): Uint8Array {
  const bytes = typeof value === "string" ? ENCODER.encode(value) : value;
  if (bytes.length === 0)
    throw new InvalidArgumentError("a record must not be empty: a zero length marks the end of a log");
  return bytes;
}

export class Producer {
  private readonly client: BooblikClient;
  private readonly batchBytes: number;
  private readonly lingerMs: number;
  private readonly bufferBytes: number;
  private readonly maxInFlightBatches: number;
  private readonly retry: boolean;
  private readonly partitions = new Map<string, PartitionState>();
  private lastState: PartitionState | undefined;
  private readonly freeBuilders: RecordBatchBuilder[] = [];
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

  constructor(client: BooblikClient, options: ProducerOptions = {}) {
    this.client = client;
    // 256 KiB: against 64 KiB it moved one producer of 100-byte records from 3.6 to 4.2 M records/s
    // (bench/client.bench.ts), and it is still a small fraction of a default segment.
    this.batchBytes = options.batchBytes ?? 256 * 1024;
    this.lingerMs = options.lingerMs ?? 5;
    this.bufferBytes = options.bufferBytes ?? 32 * 1024 * 1024;
    this.maxInFlightBatches = options.maxInFlightBatches ?? 4;
    this.retry = options.retryOnConnectionFailure ?? true;
    if (this.bufferBytes < this.batchBytes) {
      throw new InvalidArgumentError(
        `bufferBytes (${this.bufferBytes}) must be at least batchBytes (${this.batchBytes})`,
      );
    }
  }

  /** Framed bytes currently waiting or in flight. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  // --- Ways in -----------------------------------------------------------------------------------

  /**
   * Sends one value or several (they go to one partition, in order) and resolves with the offsets
   * the broker assigned, once acknowledged under the topic's durability policy.
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
   * Buffers values (waiting for room first: backpressure) and returns once they are accepted;
   * `acknowledged` resolves when the broker acknowledged them.
   */
  async accept(
    topic: string,
    values: Value | readonly Value[],
    options: SendOptions = {},
  ): Promise<{ acknowledged: Promise<SendResult> }> {
    this.checkOpen();
    const list =
      typeof values === "string" || values instanceof Uint8Array ? [encode(values)] : values.map(encode);
    if (list.length === 0) throw new InvalidArgumentError("nothing to send");
    let bytes = 0;
    for (const value of list) bytes += RECORD_HEADER_BYTES + value.length;
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
        this.defer(topic, { values: list, bytes, options, accept: { send, accepted, refused } }),
      );
    } else {
      const refused = this.acceptInto(topic, list, bytes, options, send, info);
      if (refused !== undefined) throw refused;
    }
    return { acknowledged };
  }

  /**
   * Buffers one value synchronously. Returns false once the buffer is full: stop writing until
   * `drained()` resolves (the value was still accepted). Failures surface from flush()/close().
   */
  write(topic: string, value: Value, options: SendOptions = {}): boolean {
    this.checkOpen();
    const bytes = encode(value);
    const info = this.topics.get(topic);
    if (info === undefined) {
      // The partition count is not known yet: keep the record until metadata arrives.
      const framed = RECORD_HEADER_BYTES + bytes.length;
      this.defer(topic, { values: [bytes], bytes: framed, options, accept: undefined });
    } else {
      this.writeInto(topic, bytes, options, info);
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
    // A batch never spans segments, so it must fit an empty one; a quarter of a segment keeps
    // segments at least three quarters full when batches roll them.
    const batchLimitBytes =
      Number.isFinite(segmentBytes) && segmentBytes > SEGMENT_HEADER_BYTES
        ? Math.max(1, Math.min(this.batchBytes, Math.floor((segmentBytes - SEGMENT_HEADER_BYTES) / 4)))
        : this.batchBytes;
    // The config is the broker's JSON: without the setting, only the format's own limit applies.
    const maxRecordBytes =
      typeof found.config.maxRecordBytes === "number"
        ? found.config.maxRecordBytes
        : RECORD_PAYLOAD_BYTES_LIMIT;
    return { partitions: found.partitions.length, batchLimitBytes, maxRecordBytes };
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
        this.writeInto(topic, entry.values[0]!, entry.options, info);
        continue;
      }
      const refused = this.acceptInto(topic, entry.values, entry.bytes, entry.options, accept.send, info);
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

  /** Refuses a record over the topic's limit; the error is also kept for flush()/close(). */
  private tooLarge(topic: string, length: number, info: TopicInfo): RecordTooLargeError {
    const error = new RecordTooLargeError(
      length,
      info.maxRecordBytes,
      "record",
      `the maxRecordBytes of topic ${JSON.stringify(topic)}`,
    );
    this.failures.push(error);
    return error;
  }

  /** write()'s record into a batch, unless it is too large (then flush() reports it). */
  private writeInto(topic: string, value: Uint8Array, options: SendOptions, info: TopicInfo): void {
    if (value.length > info.maxRecordBytes) this.tooLarge(topic, value.length, info);
    else this.enqueueOne(topic, this.choosePartition(topic, options, info), value, info);
  }

  /** accept()'s values into one batch; the refusal instead when one of them is too large. */
  private acceptInto(
    topic: string,
    values: Uint8Array[],
    bytes: number,
    options: SendOptions,
    send: PendingSend,
    info: TopicInfo,
  ): RecordTooLargeError | undefined {
    for (const value of values) {
      if (value.length > info.maxRecordBytes) {
        // The values stay together, so one too large refuses them all (and nothing else).
        const refused = this.tooLarge(topic, value.length, info);
        send.reject(refused);
        return refused;
      }
    }
    this.enqueue(topic, this.choosePartition(topic, options, info), values, bytes, send, info);
    return undefined;
  }

  private choosePartition(topic: string, options: SendOptions, info: TopicInfo): number {
    if (options.partition !== undefined) return options.partition;
    if (options.key !== undefined) {
      const key = typeof options.key === "string" ? ENCODER.encode(options.key) : options.key;
      return crc32c(key, 0, key.length) % info.partitions;
    }
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
    if (batch !== undefined && batch.builder.byteLength > 0 && batch.builder.byteLength + bytes > limit) {
      this.closeBatch(state, batch);
      batch = undefined;
    }
    if (batch === undefined) {
      const opened: Batch = {
        topic,
        partition,
        builder: this.takeBuilder(Math.max(bytes, limit)),
        sends: [],
        timer: undefined,
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
   * A batch buffer of at least `bytes`, reused from settled batches when one is free: allocating (and
   * zeroing) 256 KiB per batch, then regrowing it, cost a visible share of a 100-byte record's time.
   */
  private takeBuilder(bytes: number): RecordBatchBuilder {
    const reused = this.freeBuilders.pop();
    if (reused !== undefined && reused.capacityBytes >= bytes) {
      reused.reset();
      return reused;
    }
    return new RecordBatchBuilder(bytes);
  }

  private returnBuilder(builder: RecordBatchBuilder): void {
    if (this.freeBuilders.length < this.maxInFlightBatches + 2) this.freeBuilders.push(builder);
  }

  /** The write() path: one record, no promise. */
  private enqueueOne(topic: string, partition: number, value: Uint8Array, info: TopicInfo): void {
    const bytes = RECORD_HEADER_BYTES + value.length;
    const state = this.stateOf(topic, partition, info);
    const batch = this.batchFor(state, bytes);
    batch.builder.addChecked(value);
    this.bufferedBytes += bytes;
    if (batch.builder.byteLength >= state.limitBytes) this.closeBatch(state, batch);
  }

  /** The accept()/send() path: values that stay together, with their acknowledgement. */
  private enqueue(
    topic: string,
    partition: number,
    values: Uint8Array[],
    bytes: number,
    send: PendingSend,
    info: TopicInfo,
  ): void {
    const state = this.stateOf(topic, partition, info);
    const batch = this.batchFor(state, bytes);
    send.firstIndex = batch.builder.recordCount;
    for (const value of values) batch.builder.addChecked(value);
    batch.sends.push(send);
    this.bufferedBytes += bytes;
    if (batch.builder.byteLength >= state.limitBytes) this.closeBatch(state, batch);
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
    this.pump(state);
  }

  private pump(state: PartitionState): void {
    while (state.inFlight < this.maxInFlightBatches && state.waiting.length > 0) {
      const batch = state.waiting.shift()!;
      state.inFlight++;
      this.requestsSent++;
      const bytes = batch.builder.byteLength;
      this.client.produce(batch.topic, batch.partition, batch.builder.bytes(), this.retry).then(
        (response) => {
          for (const send of batch.sends) {
            send.resolve({
              topic: batch.topic,
              partition: batch.partition,
              offset: response.firstOffset + send.firstIndex,
              count: send.count,
              durability: response.durability,
            });
          }
          this.settle(state, bytes);
          this.returnBuilder(batch.builder);
        },
        (error: unknown) => {
          if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION") {
            this.topics.delete(batch.topic);
          }
          for (const send of batch.sends) send.reject(error);
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
