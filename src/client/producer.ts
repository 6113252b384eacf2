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
 * - Backpressure: at most `bufferBytes` of framed records wait or are in flight.
 * - Per partition at most `maxInFlightBatches` PRODUCE requests are outstanding; requests on one
 *   connection are answered in order, so a partition's batches are appended in the order accepted.
 * - Delivery: a batch whose connection failed is sent again (up to the client's `retries`), so a
 *   record can be appended twice if only the acknowledgement was lost: at-least-once. Set
 *   `retryOnConnectionFailure: false` for at-most-once.
 * - `flush()` and `close()` resolve only when everything accepted before them was acknowledged; if
 *   any batch failed they reject once everything settled. Nothing accepted is silently dropped.
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { BooblikError, InvalidArgumentError } from "../domain/errors.ts";
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../domain/limits.ts";
import { RecordBatchBuilder } from "../record/batch-builder.ts";
import type { BooblikClient } from "./client.ts";

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
}

/** Records written before the topic's metadata arrived. */
interface Deferred {
  value: Uint8Array;
  options: SendOptions;
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
  private readonly loading = new Map<string, Promise<TopicInfo>>();
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
    const info = this.topics.get(topic) ?? (await this.load(topic));
    let send!: PendingSend;
    const acknowledged = new Promise<SendResult>((resolve, reject) => {
      send = { firstIndex: 0, count: list.length, resolve, reject };
    });
    // The caller may never look at `acknowledged`; flush()/close() report failures too.
    acknowledged.catch(() => undefined);
    this.enqueue(topic, this.choosePartition(topic, options, info), list, bytes, send);
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
      this.bufferedBytes += RECORD_HEADER_BYTES + bytes.length;
      let waiting = this.deferred.get(topic);
      if (waiting === undefined) {
        waiting = [];
        this.deferred.set(topic, waiting);
        this.outstanding++;
        this.load(topic).then(
          () => this.replayDeferred(topic),
          (error: unknown) => this.failDeferred(topic, error),
        );
      }
      waiting.push({ value: bytes, options });
    } else {
      this.enqueueOne(topic, this.choosePartition(topic, options, info), bytes);
    }
    return this.bufferedBytes < this.bufferBytes;
  }

  /** Resolves once the buffer has room again (at once when it has). */
  drained(): Promise<void> {
    if (this.bufferedBytes < this.bufferBytes || this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  // --- Batching ----------------------------------------------------------------------------------

  private checkOpen(): void {
    if (this.closed) throw new BooblikError("CLOSED", "producer is closed");
  }

  private load(topic: string): Promise<TopicInfo> {
    let loading = this.loading.get(topic);
    if (loading === undefined) {
      loading = this.client.metadata([topic]).then(
        (metadata) => {
          const found = metadata.topics[0];
          const segmentBytes = Number(found?.config.segmentBytes);
          // A batch never spans segments, so it must fit an empty one; a quarter of a segment keeps
          // segments at least three quarters full when batches roll them.
          const batchLimitBytes =
            Number.isFinite(segmentBytes) && segmentBytes > SEGMENT_HEADER_BYTES
              ? Math.max(1, Math.min(this.batchBytes, Math.floor((segmentBytes - SEGMENT_HEADER_BYTES) / 4)))
              : this.batchBytes;
          const info = { partitions: found?.partitions.length ?? 0, batchLimitBytes };
          this.topics.set(topic, info);
          this.loading.delete(topic);
          return info;
        },
        (error: unknown) => {
          this.loading.delete(topic);
          throw error;
        },
      );
      this.loading.set(topic, loading);
    }
    return loading;
  }

  private replayDeferred(topic: string): void {
    const waiting = this.deferred.get(topic) ?? [];
    this.deferred.delete(topic);
    const info = this.topics.get(topic)!;
    for (const { value, options } of waiting) {
      this.bufferedBytes -= RECORD_HEADER_BYTES + value.length;
      try {
        this.enqueueOne(topic, this.choosePartition(topic, options, info), value);
      } catch (error) {
        this.failures.push(error);
      }
    }
    this.settleOutstanding();
  }

  private failDeferred(topic: string, error: unknown): void {
    const waiting = this.deferred.get(topic) ?? [];
    this.deferred.delete(topic);
    for (const { value } of waiting) this.bufferedBytes -= RECORD_HEADER_BYTES + value.length;
    this.failures.push(error);
    this.settleOutstanding();
  }

  private choosePartition(topic: string, options: SendOptions, info: TopicInfo): number {
    if (options.partition !== undefined) return options.partition;
    if (info.partitions === 0)
      throw new BooblikError("UNKNOWN_TOPIC_OR_PARTITION", `unknown topic ${JSON.stringify(topic)}`);
    if (options.key !== undefined) {
      const key = typeof options.key === "string" ? ENCODER.encode(options.key) : options.key;
      return crc32c(key, 0, key.length) % info.partitions;
    }
    return (this.sticky.get(topic) ?? 0) % info.partitions;
  }

  private stateOf(topic: string, partition: number): PartitionState {
    // Records usually come in runs for one partition: skip building the map key for them.
    const last = this.lastState;
    if (last !== undefined && last.partition === partition && last.topic === topic) return last;
    const key = `${partition}\u0000${topic}`;
    let state = this.partitions.get(key);
    if (state === undefined) {
      const limitBytes = this.topics.get(topic)?.batchLimitBytes ?? this.batchBytes;
      state = { topic, partition, limitBytes, open: undefined, inFlight: 0, waiting: [] };
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
  private enqueueOne(topic: string, partition: number, value: Uint8Array): void {
    const bytes = RECORD_HEADER_BYTES + value.length;
    const state = this.stateOf(topic, partition);
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
  ): void {
    const state = this.stateOf(topic, partition);
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
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
    this.settleOutstanding();
    this.pump(state);
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
      const waiters = this.roomWaiters;
      this.roomWaiters = [];
      for (const wake of waiters) wake();
    }
  }
}
