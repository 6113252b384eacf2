/**
 * The producer: records in, acknowledged offsets out, with batching, partitioning and backpressure.
 *
 * - Records are framed (with their CRC32C) on the client, into one batch per partition. A batch is
 *   sent when it reaches `batchBytes`, or `lingerMs` after its first record, or on `flush()`.
 * - Partitioning: a record with a key goes to `crc32c(key) mod partitions`, so a key always lands in
 *   the same partition; a record without one goes to the current "sticky" partition, which moves on
 *   to the next partition each time a batch is sent (spreads evenly, keeps batches full).
 * - Backpressure: at most `bufferBytes` of framed records wait in batches or in flight. `accept()`
 *   (and so `send()`) waits for room instead of letting memory grow when the broker is slower than
 *   the application.
 * - Per partition at most `maxInFlightBatches` PRODUCE requests are outstanding; requests on one
 *   connection are answered in order, so batches of a partition are appended in the order accepted.
 * - Delivery: a batch whose connection failed is sent again (up to the client's `retries`), so a
 *   record can be appended twice if only the acknowledgement was lost: at-least-once. Set
 *   `retryOnConnectionFailure: false` for at-most-once.
 * - `flush()` and `close()` resolve only when everything accepted before them was acknowledged (or
 *   failed, and then they reject): nothing accepted is silently dropped.
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { BooblikError, InvalidArgumentError } from "../domain/errors.ts";
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../domain/limits.ts";
import { RecordBatchBuilder } from "../record/batch-builder.ts";
import type { BooblikClient } from "./client.ts";

export interface ProducerOptions {
  /** Send a batch once it holds this many bytes. */
  batchBytes?: number;
  /** Send a batch at the latest this long after its first record. 0 sends on the next turn. */
  lingerMs?: number;
  /** Most framed bytes waiting or in flight before accept() waits. */
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
  open: Batch | undefined;
  inFlight: number;
  /** Batches closed but waiting for an in-flight place. */
  waiting: Batch[];
}

const ENCODER = new TextEncoder();

export class Producer {
  private readonly client: BooblikClient;
  private readonly batchBytes: number;
  private readonly lingerMs: number;
  private readonly bufferBytes: number;
  private readonly maxInFlightBatches: number;
  private readonly retry: boolean;
  private readonly partitions = new Map<string, PartitionState>();
  private readonly partitionCounts = new Map<string, number>();
  private readonly sticky = new Map<string, number>();
  private readonly batchLimits = new Map<string, number>();
  private readonly roomWaiters: (() => void)[] = [];
  private readonly settledWaiters: (() => void)[] = [];
  private bufferedBytes = 0;
  private failures: unknown[] = [];
  private unsettled = 0;
  private closed = false;
  /** PRODUCE requests sent (for tests and metrics). */
  requestsSent = 0;

  constructor(client: BooblikClient, options: ProducerOptions = {}) {
    this.client = client;
    this.batchBytes = options.batchBytes ?? 64 * 1024;
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
   * Accepts values into a batch, waiting for buffer room first (backpressure), and returns once they
   * are accepted; `acknowledged` resolves when the broker acknowledged them. Use this to stream:
   * `for (const v of values) await producer.accept(topic, v)` runs at the broker's pace.
   */
  async accept(
    topic: string,
    values: Value | readonly Value[],
    options: SendOptions = {},
  ): Promise<{ acknowledged: Promise<SendResult> }> {
    if (this.closed) throw new BooblikError("CLOSED", "producer is closed");
    const list = (typeof values === "string" || values instanceof Uint8Array ? [values] : values).map(
      (value) => (typeof value === "string" ? ENCODER.encode(value) : value),
    );
    if (list.length === 0) throw new InvalidArgumentError("nothing to send");
    let bytes = 0;
    for (const value of list) {
      if (value.length === 0) throw new InvalidArgumentError("a record must not be empty");
      bytes += RECORD_HEADER_BYTES + value.length;
    }
    // Wait for room. A send larger than the whole buffer still goes, alone, once the buffer is empty.
    while (this.bufferedBytes > 0 && this.bufferedBytes + bytes > this.bufferBytes) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
      if (this.closed) throw new BooblikError("CLOSED", "producer is closed");
    }
    const count = await this.partitionCount(topic);
    // Chosen synchronously with the append to the batch below, so the sticky partition a burst of
    // concurrent sends sees moves on as their batches fill.
    const partition = this.choosePartition(topic, options, count);
    this.bufferedBytes += bytes;
    this.unsettled++;
    const acknowledged = new Promise<SendResult>((resolve, reject) => {
      const state = this.stateOf(topic, partition);
      let batch = state.open;
      const limit = this.batchLimit(topic);
      if (batch !== undefined && batch.builder.byteLength > 0 && batch.builder.byteLength + bytes > limit) {
        this.closeBatch(state, batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = {
          topic,
          partition,
          builder: new RecordBatchBuilder(Math.max(bytes, 4096)),
          sends: [],
          timer: undefined,
        };
        state.open = batch;
        const opened = batch;
        batch.timer = setTimeout(() => {
          if (state.open === opened) this.closeBatch(state, opened);
        }, this.lingerMs);
      }
      const firstIndex = batch.builder.recordCount;
      for (const value of list) batch.builder.add(value);
      batch.sends.push({ firstIndex, count: list.length, resolve, reject });
      if (batch.builder.byteLength >= limit) this.closeBatch(state, batch);
    });
    // The caller may never look at `acknowledged`; flush()/close() report failures too.
    acknowledged.catch(() => undefined);
    return { acknowledged };
  }

  private stateOf(topic: string, partition: number): PartitionState {
    const key = `${partition}\u0000${topic}`;
    let state = this.partitions.get(key);
    if (state === undefined) {
      state = { open: undefined, inFlight: 0, waiting: [] };
      this.partitions.set(key, state);
    }
    return state;
  }

  private async partitionCount(topic: string): Promise<number> {
    const known = this.partitionCounts.get(topic);
    if (known !== undefined) return known;
    const metadata = await this.client.metadata([topic]);
    const info = metadata.topics[0];
    const count = info?.partitions.length ?? 0;
    this.partitionCounts.set(topic, count);
    // A batch never spans segments, so it must fit an empty one; a quarter of a segment keeps
    // segments at least three quarters full when batches roll them.
    const segmentBytes = Number(info?.config.segmentBytes);
    if (Number.isFinite(segmentBytes) && segmentBytes > 0) {
      this.batchLimits.set(
        topic,
        Math.max(1, Math.min(this.batchBytes, Math.floor((segmentBytes - SEGMENT_HEADER_BYTES) / 4))),
      );
    }
    return count;
  }

  private batchLimit(topic: string): number {
    return this.batchLimits.get(topic) ?? this.batchBytes;
  }

  private choosePartition(topic: string, options: SendOptions, count: number): number {
    if (options.partition !== undefined) return options.partition;
    if (count === 0)
      throw new BooblikError("UNKNOWN_TOPIC_OR_PARTITION", `unknown topic ${JSON.stringify(topic)}`);
    if (options.key !== undefined) {
      const key = typeof options.key === "string" ? ENCODER.encode(options.key) : options.key;
      return crc32c(key, 0, key.length) % count;
    }
    return (this.sticky.get(topic) ?? 0) % count;
  }

  private closeBatch(state: PartitionState, batch: Batch): void {
    if (state.open === batch) state.open = undefined;
    clearTimeout(batch.timer);
    batch.timer = undefined;
    // Unkeyed records move on to the next partition, batch by batch.
    const count = this.partitionCounts.get(batch.topic);
    if (count !== undefined && count > 0 && (this.sticky.get(batch.topic) ?? 0) === batch.partition % count) {
      this.sticky.set(batch.topic, (batch.partition + 1) % count);
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
          this.settle(state, batch, bytes);
        },
        (error: unknown) => {
          if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION") {
            this.partitionCounts.delete(batch.topic);
          }
          for (const send of batch.sends) send.reject(error);
          this.failures.push(error);
          this.settle(state, batch, bytes);
        },
      );
    }
  }

  private settle(state: PartitionState, batch: Batch, bytes: number): void {
    state.inFlight--;
    this.bufferedBytes -= bytes;
    this.unsettled -= batch.sends.length;
    for (const wake of this.roomWaiters.splice(0)) wake();
    if (this.unsettled === 0) for (const wake of this.settledWaiters.splice(0)) wake();
    this.pump(state);
  }

  /**
   * Sends every open batch now and resolves once everything accepted so far is acknowledged; rejects
   * (after everything settled) when any batch failed since the last flush.
   */
  async flush(): Promise<void> {
    for (const state of this.partitions.values())
      if (state.open !== undefined) this.closeBatch(state, state.open);
    while (this.unsettled > 0) await new Promise<void>((resolve) => this.settledWaiters.push(resolve));
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
    await this.flush();
    this.closed = true;
    for (const wake of this.roomWaiters.splice(0)) wake();
  }
}
