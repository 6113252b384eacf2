/**
 * The consumer: `for await (const record of consumer)` over one partition, from a start position,
 * with long-poll fetches. The position is the application's: the broker keeps none.
 *
 * - Every entry's CRC32C (and its batch's) is checked before a record of it is handed out (the
 *   broker sends file bytes untouched; see fetched.ts). A mismatch ends the iteration with
 *   CorruptRecordError naming the offset.
 * - A fetch returns whole entries (RecordBatches) from the one containing the position: records
 *   below the position are dropped here, never yielded. A fetch may end at a segment end or (from a
 *   broker that does not trim) inside an entry: the next fetch starts at the first offset not
 *   received whole, so nothing is skipped or repeated.
 * - Records are decoded by the shared walker (RecordBatchReader, src/record/batch.ts), one reader
 *   per consumer, so an uncompressed batch costs one object per record and views, no copies.
 * - An offset outside the partition (retention removed it, or a saved position is from another log)
 *   is an OffsetOutOfRangeError carrying both bounds, or, when asked, a reset to the earliest or
 *   latest offset.
 * - Connection failures are retried by the client (a fetch is safe to repeat), so a broker restart is
 *   a pause, not an error, within the client's retries.
 * - With a `group`, the start is the group's committed offset (else `from`), and the position is
 *   committed to the broker in batches, once `commitEveryRecords` records were handed out or
 *   `commitIntervalMs` passed since the last commit (what is committed was handed out and the
 *   application came back for more: at-least-once), and on `close()`. `for await` over the records
 *   checks that every min(commitEveryRecords, COMMIT_CHECK_EVERY_RECORDS) records it hands out, and
 *   before each fetch; `batches()` only before each fetch (what the application did with a batch's
 *   records is not known until it asks for the next batch). Checking only before fetches left a
 *   1 MiB fetch of small records (about 55,000) uncommitted until all were handed out: a consumer
 *   killed every second or two never committed and read the same records forever (a helper's run,
 *   2026-12-03). One commit in flight at a time, not awaited by the iteration; a failed commit ends
 *   the iteration with its error at the next check.
 */
import { BooblikError, OffsetOutOfRangeError } from "../domain/errors.ts";
import {
  COMMIT_CHECK_EVERY_RECORDS,
  CONSUMER_COMMIT_EVERY_RECORDS_DEFAULT,
  CONSUMER_COMMIT_INTERVAL_MS_DEFAULT,
} from "../domain/limits.ts";
import { RecordBatchReader, type RecordView } from "../record/batch.ts";
import type { BooblikClient } from "./client.ts";
import { type ConsumedRecord, consumedRecord, forEachFetchedRecord } from "./fetched.ts";

export type { ConsumedRecord } from "./fetched.ts";

/**
 * Where to start: the oldest record, the next one to be produced, an offset, or the first record
 * whose timestamp is at or after a time (ms since the epoch; the end of the partition when none is).
 */
export type StartPosition = "earliest" | "latest" | number | { timestampMs: number };

export interface ConsumerOptions {
  topic: string;
  partition?: number;
  /** Where to start (see StartPosition). Default "earliest". */
  from?: StartPosition;
  /** Record bytes per fetch. */
  maxBytes?: number;
  /** How long a fetch waits at the end of the partition for new records. */
  maxWaitMs?: number;
  /** What to do when the position is outside the partition. */
  onOutOfRange?: "error" | "earliest" | "latest";
  /** Stop (end the iteration) at the end of the partition instead of waiting for more. */
  stopAtEnd?: boolean;
  /**
   * A consumer group: start from its committed offset for this partition (`from` when it has none)
   * and commit the position to the broker as records are consumed and on `close()`.
   */
  group?: string;
  /**
   * With `group`: commit once this many records were handed out since the last commit (checked
   * every min(this, 64) records by `for await` over the records; before each fetch by `batches()`).
   * Default 1000.
   */
  commitEveryRecords?: number;
  /**
   * With `group`: commit once this long passed since the last commit (checked as above, and before
   * each fetch, so also while the partition is idle). Default 1000 ms.
   */
  commitIntervalMs?: number;
}

const DECODER = new TextDecoder();

/** The value as UTF-8 text ("" for a null value). */
export function textOf(record: { value: Uint8Array | null }): string {
  return record.value === null ? "" : DECODER.decode(record.value);
}

/** The key as UTF-8 text, or null for a null key. */
export function keyTextOf(record: { key: Uint8Array | null }): string | null {
  return record.key === null ? null : DECODER.decode(record.key);
}

/** The headers as an object of UTF-8 texts (a later header wins over an earlier one of the same key). */
export function headersTextOf(record: {
  headers: readonly { key: string; value: Uint8Array | null }[];
}): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const header of record.headers)
    out[header.key] = header.value === null ? null : DECODER.decode(header.value);
  return out;
}

export class Consumer implements AsyncIterable<ConsumedRecord> {
  private readonly client: BooblikClient;
  readonly topic: string;
  readonly partition: number;
  private readonly from: StartPosition;
  private readonly maxBytes: number;
  private readonly maxWaitMs: number;
  private readonly onOutOfRange: "error" | "earliest" | "latest";
  private readonly stopAtEnd: boolean;
  private next: number | undefined;
  private stopped = false;
  readonly group: string | undefined;
  private readonly commitEveryRecords: number;
  private readonly commitIntervalMs: number;
  /**
   * The position the last commit started with (at the start: the start position, after an
   * out-of-range reset: the new position): the records handed out since are the position minus it.
   */
  private lastCommitStartPosition = -1;
  /** Records the record iterator handed out since it last checked whether a commit is due. */
  private handedOutSinceCheck = 0;
  private readonly commitCheckEveryRecords: number;
  private lastCommitMs = 0;
  /** The position the broker acknowledged last (−1: none this session). */
  private committedPosition = -1;
  private commitInFlight: Promise<void> | undefined;
  private commitError: unknown;
  /** Set when a fetch found the topic gone or replaced: the position is not committed any more. */
  private positionLost: BooblikError | undefined;
  /** Offsets reset because of OFFSET_OUT_OF_RANGE (for the application to notice). */
  resets = 0;

  constructor(client: BooblikClient, options: ConsumerOptions) {
    this.client = client;
    this.topic = options.topic;
    this.partition = options.partition ?? 0;
    this.from = options.from ?? "earliest";
    this.maxBytes = options.maxBytes ?? 1024 * 1024;
    this.maxWaitMs = options.maxWaitMs ?? 1000;
    this.onOutOfRange = options.onOutOfRange ?? "error";
    this.stopAtEnd = options.stopAtEnd ?? false;
    this.group = options.group;
    this.commitEveryRecords = options.commitEveryRecords ?? CONSUMER_COMMIT_EVERY_RECORDS_DEFAULT;
    this.commitIntervalMs = options.commitIntervalMs ?? CONSUMER_COMMIT_INTERVAL_MS_DEFAULT;
    this.commitCheckEveryRecords = Math.max(1, Math.min(this.commitEveryRecords, COMMIT_CHECK_EVERY_RECORDS));
  }

  /** The position the broker last acknowledged as the group's committed offset; −1 before any. */
  get committed(): number {
    return this.committedPosition;
  }

  /**
   * Commits the current position now (with a `group`), after any commit in flight; resolves when
   * the broker forced it.
   */
  async commit(): Promise<void> {
    if (this.group === undefined) throw new TypeError("commit() needs the consumer option `group`");
    if (this.commitInFlight !== undefined) await this.commitInFlight;
    this.throwCommitError();
    if (this.positionLost !== undefined) throw this.positionLost;
    if (this.next === undefined || this.next === this.committedPosition) return;
    await this.startCommit(this.group);
    this.throwCommitError();
  }

  /** Stops the iteration and, with a `group`, commits the final position. */
  async close(): Promise<void> {
    this.stopped = true;
    // A position of a topic that is gone or replaced is not committed (the iteration already ended
    // with that error).
    if (this.group !== undefined && this.positionLost === undefined) await this.commit();
  }

  private throwCommitError(): void {
    if (this.commitError === undefined) return;
    const error = this.commitError;
    this.commitError = undefined;
    throw error;
  }

  /** Starts a commit of the current position; remembers a failure for the iteration to throw. */
  private startCommit(group: string, position = this.next!): Promise<void> {
    this.handedOutSinceCheck = 0;
    this.lastCommitStartPosition = position;
    this.lastCommitMs = performance.now();
    const done = this.client
      .commitOffsets(group, [{ topic: this.topic, partition: this.partition, offset: position }])
      .then(
        () => {
          this.committedPosition = Math.max(this.committedPosition, position);
        },
        (error: unknown) => {
          this.commitError = error;
          // Refused because the topic is gone or was replaced (server.ts checkNotReplaced): as after
          // such a FETCH, the position is not committed again.
          if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION")
            this.positionLost = error;
        },
      )
      .finally(() => {
        if (this.commitInFlight === done) this.commitInFlight = undefined;
      });
    this.commitInFlight = done;
    return done;
  }

  /**
   * Called before each fetch: everything handed out before was processed. Commits when due
   * (records or time) and none is in flight; throws a failed commit's error.
   */
  private maybeCommit(): void {
    const group = this.group;
    if (group === undefined) return;
    this.throwCommitError();
    if (this.commitInFlight !== undefined || this.next === undefined || this.next === this.committedPosition)
      return;
    if (
      this.next - this.lastCommitStartPosition >= this.commitEveryRecords ||
      performance.now() - this.lastCommitMs >= this.commitIntervalMs
    )
      void this.startCommit(group);
  }

  /**
   * Called by the record iterator every `commitCheckEveryRecords` records, before it hands out the
   * next one: `position` (the offset after the records handed out before) was processed. Commits
   * when due (records since the last commit, or time) and none is in flight; throws a failed
   * commit's error.
   */
  private maybeCommitAt(group: string, position: number): void {
    this.handedOutSinceCheck = 0;
    this.throwCommitError();
    if (this.commitInFlight !== undefined || position === this.committedPosition) return;
    if (
      position - this.lastCommitStartPosition >= this.commitEveryRecords ||
      performance.now() - this.lastCommitMs >= this.commitIntervalMs
    )
      void this.startCommit(group, position);
  }

  /**
   * The offset of the next record the iteration will yield: after processing a record, save this
   * (it is that record's offset + 1) to resume exactly after it.
   */
  get position(): number | undefined {
    return this.next;
  }

  /** Ends the iteration after the record being processed. */
  stop(): void {
    this.stopped = true;
  }

  private async resolveStart(where: StartPosition): Promise<number> {
    if (this.group !== undefined) {
      const [stored] = await this.client.fetchOffsets(this.group, [
        { topic: this.topic, partitions: [this.partition] },
      ]);
      this.lastCommitMs = performance.now();
      if (stored !== undefined && stored.offset >= 0) {
        this.committedPosition = stored.offset;
        return stored.offset;
      }
    }
    if (typeof where === "number") return where;
    if (typeof where === "object") {
      const found = await this.client.offsetForTime(this.topic, this.partition, where.timestampMs);
      return found.offset >= 0 ? found.offset : found.nextOffset;
    }
    const offsets = await this.client.listOffsets(this.topic, this.partition);
    return where === "earliest" ? offsets.logStartOffset : offsets.nextOffset;
  }

  /**
   * The records one by one. Hand-written rather than an async generator: a generator's `yield`
   * costs a promise and a suspension per record, which made per-record iteration 3× slower than the
   * fetches feeding it. Records of a fetch are handed out from a buffer without awaiting anything;
   * what remains per record is the already-resolved promise that `for await` awaits (the language
   * awaits every step; a scratch loop of `for await` over resolved promises cost about 65 ns of
   * CPU per step in Bun 1.4.4). For one promise per fetch instead, iterate `batches()` and each
   * batch with `for…of`. (Going
   * through the batch's iterator here instead of this closure cost 365 against 319 CPU ns per
   * record in one bench:client run, load average 21, so the closure stays.)
   */
  [Symbol.asyncIterator](): AsyncIterator<ConsumedRecord> {
    const batches = this.batches();
    const reader = new RecordBatchReader();
    const topic = this.topic;
    const partition = this.partition;
    let current: ConsumedBatch | undefined;
    /** Next batch bound pair to open in `current`. */
    let bound = 0;
    /** Whether the reader is inside one of `current`'s batches. */
    let inBatch = false;
    /**
     * The next record at or after the batch's start offset, or undefined when `current` is used up.
     * Walks the entries with the one reader: the shared walker, no parsing here.
     */
    const advance = (): RecordView | undefined => {
      const batch = current!;
      for (;;) {
        if (inBatch) {
          const view = reader.next();
          if (view !== undefined) {
            if (view.offset < batch.fromOffset) continue;
            return view;
          }
          inBatch = false;
        }
        if (bound >= batch.batchBounds.length) return undefined;
        reader.open(batch.records, batch.batchBounds[bound]!, batch.batchBounds[bound + 1]!);
        inBatch = true;
        bound += 2;
      }
    };
    const group = this.group;
    const take = (view: RecordView): ConsumedRecord => {
      // Back for this record: the ones handed out before it were processed (at-least-once).
      if (group !== undefined && ++this.handedOutSinceCheck >= this.commitCheckEveryRecords)
        this.maybeCommitAt(group, this.next!);
      this.next = view.offset + 1;
      return consumedRecord(topic, partition, view);
    };
    const refill = async (): Promise<IteratorResult<ConsumedRecord>> => {
      for (;;) {
        if (this.stopped) return { value: undefined, done: true };
        if (current !== undefined) {
          const view = advance();
          if (view !== undefined) return { value: take(view), done: false };
        }
        const result = await batches.next();
        if (result.done) return { value: undefined, done: true };
        current = result.value;
        bound = 0;
        inBatch = false;
      }
    };
    return {
      // Not an async function: a buffered record costs one already-resolved promise, nothing more.
      next: (): Promise<IteratorResult<ConsumedRecord>> => {
        if (current !== undefined && !this.stopped) {
          const view = advance();
          if (view !== undefined) return Promise.resolve({ value: take(view), done: false });
        }
        return refill();
      },
      return: async (): Promise<IteratorResult<ConsumedRecord>> => {
        this.stopped = true;
        await batches.return(undefined);
        return { value: undefined, done: true };
      },
    };
  }

  /**
   * The records fetch by fetch: each batch holds the whole, CRC-checked entries of one fetch
   * (framed, as stored) and iterates its records synchronously (`for (const record of batch)`), or
   * read them with `forEachConsumedRecord` / `forEachFetchedRecord`. The cheapest way to consume:
   * one promise per fetch, none per record. `position` advances past a batch when the next one is
   * requested.
   */
  async *batches(): AsyncGenerator<ConsumedRecords> {
    let next = this.next ?? (await this.resolveStart(this.from));
    this.next = next;
    if (this.lastCommitStartPosition < 0) this.lastCommitStartPosition = next;
    while (!this.stopped) {
      // Back for more: what was handed out before was processed. Checked per fetch, not per record
      // (nothing added to the per-record path); an empty long poll comes back here too, so the
      // interval is kept within maxWaitMs while the partition is idle.
      this.maybeCommit();
      let result: Awaited<ReturnType<BooblikClient["fetch"]>>;
      try {
        result = await this.client.fetch(this.topic, this.partition, next, {
          maxBytes: this.maxBytes,
          maxWaitMs: this.stopAtEnd ? 0 : this.maxWaitMs,
        });
      } catch (error) {
        // The topic is gone, or was deleted and created again since this consumer fetched from
        // it: its position belongs to the old topic, and committing it (close(), commit()) would
        // start the group past the new topic's first records.
        if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION")
          this.positionLost = error;
        if (error instanceof OffsetOutOfRangeError && this.onOutOfRange !== "error") {
          this.resets++;
          next = this.onOutOfRange === "earliest" ? error.logStartOffset : error.nextOffset;
          this.next = next;
          this.lastCommitStartPosition = next;
          continue;
        }
        throw error;
      }
      if (result.recordCount === 0) {
        if (this.stopAtEnd && next >= result.nextOffset) return;
        continue;
      }
      const batch = new ConsumedRecords(
        this.topic,
        this.partition,
        next,
        result.recordCount,
        result.records,
        result.batchBounds,
      );
      next += result.recordCount;
      yield batch;
      this.next = Math.max(this.next ?? next, next);
    }
  }
}

/** The whole, CRC-checked entries of one fetch, framed as stored. */
export interface ConsumedBatch {
  /** The offset this fetch asked for: records below it (in the first entry) are not this batch's. */
  fromOffset: number;
  /** Records from `fromOffset` on. */
  count: number;
  /** Framed entries (docs/format.md). */
  records: Uint8Array;
  /** [batchStart, batchEnd) of each entry's RecordBatch in `records`, flattened. */
  batchBounds: number[];
}

/**
 * One fetch's records as `batches()` yields them: a ConsumedBatch that also iterates its records
 * synchronously, from `fromOffset` on, as ConsumedRecord objects (views into `records`, which
 * nothing reuses: a record stays valid, and unchanged, for as long as it is referenced). Each
 * iteration is independent (its own reader), so a batch can be iterated again.
 */
export class ConsumedRecords implements ConsumedBatch, Iterable<ConsumedRecord> {
  readonly topic: string;
  readonly partition: number;
  readonly fromOffset: number;
  readonly count: number;
  readonly records: Uint8Array;
  readonly batchBounds: number[];

  constructor(
    topic: string,
    partition: number,
    fromOffset: number,
    count: number,
    records: Uint8Array,
    batchBounds: number[],
  ) {
    this.topic = topic;
    this.partition = partition;
    this.fromOffset = fromOffset;
    this.count = count;
    this.records = records;
    this.batchBounds = batchBounds;
  }

  [Symbol.iterator](): ConsumedRecordIterator {
    return new ConsumedRecordIterator(this);
  }
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * Walks a ConsumedRecords' entries with one RecordBatchReader (the shared walker: no parsing here).
 * A fresh result object and ConsumedRecord per record (about 8 ns): a reused one would change under
 * code that holds an earlier result.
 */
class ConsumedRecordIterator implements IterableIterator<ConsumedRecord> {
  private readonly batch: ConsumedRecords;
  private readonly reader = new RecordBatchReader();
  /** Next batch bound pair to open. */
  private bound = 0;
  /** Whether the reader is inside one of the batches. */
  private inBatch = false;

  constructor(batch: ConsumedRecords) {
    this.batch = batch;
  }

  next(): IteratorResult<ConsumedRecord> {
    const batch = this.batch;
    const bounds = batch.batchBounds;
    for (;;) {
      if (this.inBatch) {
        const view = this.reader.next();
        if (view !== undefined) {
          if (view.offset < batch.fromOffset) continue;
          return { value: consumedRecord(batch.topic, batch.partition, view), done: false };
        }
        this.inBatch = false;
      }
      if (this.bound >= bounds.length) return DONE;
      this.reader.open(batch.records, bounds[this.bound]!, bounds[this.bound + 1]!);
      this.inBatch = true;
      this.bound += 2;
    }
  }

  [Symbol.iterator](): this {
    return this;
  }
}

/** Calls `visit` for each record of `batch` from its `fromOffset` on, as ConsumedRecords. */
export function forEachConsumedRecord(
  topic: string,
  partition: number,
  batch: ConsumedBatch,
  visit: (record: ConsumedRecord) => void,
  reader: RecordBatchReader = new RecordBatchReader(),
): number {
  return forEachFetchedRecord(batch.records, batch.batchBounds, batch.fromOffset, reader, (view) =>
    visit(consumedRecord(topic, partition, view)),
  );
}
