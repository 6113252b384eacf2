/**
 * A partition as the broker runs it: a PartitionLog plus the topic's durability policy, timestamp
 * type and the validation of every appended batch.
 *
 * Owns: validating what producers send (the server and the embedded broker share it), when to force
 * (the policy; storage only knows how), group commit, the interval timer, the LogAppendTime clock,
 * and the acknowledgement that says which guarantee an append reached.
 *
 * - Every append is one or more bare RecordBatch v2 back to back (Kafka's "records" field). Each is
 *   checked with `validateBatch` (src/record/batch.ts) before anything is written: the whole
 *   request or nothing. A rejection names the batch, the rule and the byte position. An
 *   uncompressed CreateTime batch whose MaxTimestamp is not its records' largest timestamp is
 *   stored with the records' value (and its batch CRC recomputed), as Kafka's LogValidator does:
 *   the time index and retention by age read MaxTimestamp. Compressed batches are taken on trust.
 * - Batches with a producer id are then checked against the partition's producer state
 *   (producer-state.ts, rebuilt at open, snapshotted at every roll and at a clean close): a resend
 *   is answered with the original offsets and not written; a sequence gap or an old epoch is refused
 *   before anything is written.
 *
 * - `append`: acknowledged once written; sealed segments are forced in the background after a roll,
 *   so the recovery point keeps up and a restart after a crash scans at most about one segment.
 * - `force`: acknowledged after a force that covers the batch; at most one force in flight, batches
 *   that arrive meanwhile wait for the next one (GroupCommit). A coalesced group that is the only
 *   forced group of its event-loop turn is forced on the event loop right after its pwrite and
 *   answered at once (the Redis way; why, with the measurements: src/storage/group-commit.ts);
 *   groups of several partitions in one turn are forced in parallel on the thread pool, and so is
 *   every force while the loop backs off after a slow one (until a force on the pool is fast again,
 *   FORCE_ON_LOOP_BACKOFF_MS at most). Waiters queued behind a force on the pool are forced on the
 *   loop once it completes, when no other force is on the pool (GroupCommit.drain).
 *   The gather: after a force on the loop, the partition waits for the senders (connections) that
 *   force answered before it forces again, one event-loop turn at a time, until each of them has
 *   appended again (here, or elsewhere: then it is not waited for) or as long as that force took
 *   (FORCE_GATHER_MAX_MS at most). Why: clients that send their next request when answered (one in
 *   flight each) otherwise split into two halves that alternate, the requests read during a force
 *   making up the next one alone while the answered half is still on its way: 16 connections with
 *   one request in flight each shared a force 8.5 at a time, one force per half (perf stat of the
 *   broker's fdatasync against the requests answered, bench/load/produce-pipelined.ts; with the
 *   gather 15.5 of 16). The wait is never longer than the force it saves, and costs nothing when
 *   the answered senders are back before the turn ends (a single producer pipelining; the
 *   latency benchmark under `force`: p99 unchanged). Producers that send on their own clock do not
 *   come back within a force's time: a gather that sees fewer than three quarters of its senders
 *   back makes the next forces skip theirs, 1, 2, 4, … up to FORCE_GATHER_SKIP_MAX
 *   (`gatherEnded`); without that, 16 such producers' p99 from send was 2.32 ms against 1.43
 *   with it, and the broker spent 31 against 18 µs of CPU per record. Figures: docs/benchmarks.md,
 *   "The gather" (bench/force-gather.bench.ts).
 * - `interval`: acknowledged once written; a timer forces every `flushIntervalMs` if anything is
 *   unforced.
 *
 * Coalesced appends (`appendQueued`, the Produce path of both listeners; issue 13): a small append is
 * validated at once (so its refusal is its own), copied into the partition's pending group, and
 * written together with every other one that arrived in the same event-loop turn: one
 * `PartitionLog.append` (one pwrite) and, under `force`, one group-commit request per group. Appends
 * stay in arrival order and each is atomic (a group is written whole or not at all; a group that
 * fails is retried one append at a time, so each append gets its own outcome), and each waiter is
 * told exactly its own offsets. Nothing of a pending append is visible or acknowledged before the
 * group was written. Every other append path (`append`, `appendInternal`, `close`) writes the
 * pending group first, so order holds across paths. Why a turn and not a microtask: Bun runs the
 * microtasks after each socket's data callback, so a microtask would group one connection's
 * requests only; an immediate runs after every socket that was ready in the turn was read. One
 * immediate per turn writes the groups of every partition (`flushTurn`), so it knows how many of
 * them need a force.
 */
import type { AtomicWriteBatch } from "../../ffi/file.ts";
import { InternalTopicError, OffsetOutOfRangeError, PolicyViolationError } from "../domain/errors.ts";
import type { Offset, PartitionId, TopicName } from "../domain/ids.ts";
import {
  COALESCED_APPEND_BYTES_MAX,
  COALESCED_GROUP_BYTES_MAX,
  COALESCED_SPARE_BUFFERS_MAX,
  ENTRY_HEADER_BYTES,
  FETCH_BYTES_DEFAULT,
  FORCE_GATHER_MAX_MS,
  FORCE_GATHER_SKIP_MAX,
  FORCE_ON_LOOP_BACKOFF_MS,
  FORCE_ON_LOOP_SLOW_MS,
  PRODUCE_COPY_LOOP_BYTES_MAX,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import {
  BATCH_LENGTH_EXCLUDED_BYTES,
  BATCH_LENGTH_OFFSET,
  type DecodedRecord,
  InvalidBatchError,
  newBatchHeader,
  setMaxTimestamp,
  validateBatch,
} from "../record/batch.ts";
import { type ForceWaiter, GroupCommit } from "../storage/group-commit.ts";
import type { PartitionLog } from "../storage/partition-log.ts";
import {
  type CopyBelow,
  type FileRange,
  newFileRange,
  type ReadArena,
  type RecordsRead,
  type Segment,
  type TimestampLookup,
} from "../storage/segment.ts";
import {
  hasProducerId,
  type ProducerCheck,
  type ProducerIdBudget,
  ProducerStateTable,
} from "./producer-state.ts";

/** The arena a copying read may land in (Segment.read), for the protocol layers above the broker. */
export type { CopyBelow, ReadArena };

import { type DurabilityPolicy, isCompacted, type TimestampType, type TopicConfig } from "./topic-config.ts";

export interface AppendAck {
  /** The offset of the first record appended. */
  firstOffset: Offset;
  /** Offsets assigned: the records of every batch of the append. */
  recordCount: number;
  /** What the acknowledgement guarantees: written to the OS, or forced to the disk. */
  durability: "appended" | "forced";
  /** The broker's timestamp of every record under LogAppendTime; −1 under CreateTime (Kafka's rule). */
  logAppendTimeMs: number;
  /**
   * True when the request was a resend of idempotent batches already appended (producer-state.ts):
   * nothing was appended and the offsets are the original ones.
   */
  duplicate?: boolean;
}

/** The outcome of `Partition.purge`. */
export interface PurgeResult {
  /** The first readable offset after the purge (Kafka's low_watermark). */
  logStartOffset: number;
  segmentsDeleted: number;
  bytesDeleted: number;
}

/**
 * Whole entries (stored batches) of one segment file to send as they are (sendfile). The descriptor
 * stays open until `release()`, which the holder calls exactly once, after the last byte left or
 * when it gives up: retention and the descriptor bound wait for it instead of closing the file
 * under a send. `firstOffset` is the first entry's BaseOffset (≤ the offset asked for: the entry
 * containing it), `recordCount` the offsets the entries cover.
 */
export interface FileLease {
  readonly fd: number;
  readonly position: number;
  readonly lengthBytes: number;
  readonly firstOffset: number;
  readonly recordCount: number;
  /**
   * The entries themselves, read and checked, when the range was below the caller's copy bound
   * (`fetchLease`'s `copyBelow`): then nothing is held, and `release()` does nothing.
   */
  readonly copied: Uint8Array | undefined;
  release(): void;
}

class SegmentLease implements FileLease {
  readonly fd: number;
  readonly position: number;
  readonly lengthBytes: number;
  readonly firstOffset: number;
  readonly recordCount: number;
  readonly copied: Uint8Array | undefined;
  private segment: Segment | undefined;

  constructor(range: FileRange, segment: Segment | undefined) {
    this.fd = range.fd;
    this.position = range.position;
    this.lengthBytes = range.lengthBytes;
    this.firstOffset = range.firstOffset;
    this.recordCount = range.recordCount;
    this.copied = range.copied;
    this.segment = segment;
  }

  release(): void {
    const segment = this.segment;
    this.segment = undefined; // a second release must not release someone else's hold
    segment?.release();
  }
}

/**
 * Told the outcome of one `appendQueued` (an object the caller may reuse, so the PRODUCE path needs
 * no promise and no closure per request). Exactly one of the two is called, once.
 */
export interface AppendWaiter {
  /**
   * Who sent the append (a connection of either listener), for the gather before a force on the loop (see
   * the header); undefined when there is no such sender (then the partition never waits for it).
   */
  readonly sender?: AppendSender | undefined;
  appended(
    firstOffset: number,
    recordCount: number,
    durability: "appended" | "forced",
    logAppendTimeMs: number,
  ): void;
  appendFailed(error: unknown): void;
}

/**
 * A sender of appends (a connection) as the gather sees it: the partition whose force on the loop
 * last answered one of its appends, and that force (`ForcedGroup.id`), until its next coalesced
 * append (here or on another partition) clears both. Written only by partitions.
 */
export interface AppendSender {
  answeredBy: Partition | undefined;
  answeredByForce: number;
}

/** Ids of forced groups (`ForcedGroup.id`), unique in the process; 0 means none. */
let lastForcedGroupId = 0;

/** What `validateBatches` measured: offsets the append takes and its batch (entry) count. */
export interface ValidatedBatches {
  offsetCount: number;
  batchCount: number;
}

/**
 * Appends written together that wait for one force (`force` policy): told by the group commit,
 * it tells each waiter its own offsets. One per written group, not per append.
 */
class ForcedGroup implements ForceWaiter {
  readonly id = ++lastForcedGroupId;
  /** Distinct senders of the group's appends, counted by `resolve` (−1 until it ran). */
  answeredSenders = -1;
  private readonly partition: Partition;
  private readonly waiters: AppendWaiter[];
  private readonly firstOffsets: number[];
  private readonly recordCounts: number[];
  private readonly logAppendTimeMs: number;

  constructor(
    partition: Partition,
    waiters: AppendWaiter[],
    firstOffsets: number[],
    recordCounts: number[],
    logAppendTimeMs: number,
  ) {
    this.partition = partition;
    this.waiters = waiters;
    this.firstOffsets = firstOffsets;
    this.recordCounts = recordCounts;
    this.logAppendTimeMs = logAppendTimeMs;
  }

  resolve(): void {
    const waiters = this.waiters;
    let senders = 0;
    for (let i = 0; i < waiters.length; i++) {
      const waiter = waiters[i]!;
      // Read before telling: the waiter is reused once told (server.ts's free list).
      const sender = waiter.sender;
      if (sender !== undefined && sender.answeredByForce !== this.id) {
        // Counted by this force's gather from now on, and no longer by the one it was counted in.
        sender.answeredBy?.senderGone(sender, undefined);
        sender.answeredBy = this.partition;
        sender.answeredByForce = this.id;
        senders++;
      }
      tell(waiter, this.firstOffsets[i]!, this.recordCounts[i]!, "forced", this.logAppendTimeMs);
    }
    this.answeredSenders = senders;
  }

  reject(error: unknown): void {
    for (const waiter of this.waiters) tellFailure(waiter, error);
  }
}

/** A waiter that throws must not keep the others of its group from hearing (it is the caller's bug). */
function tell(
  waiter: AppendWaiter,
  firstOffset: number,
  recordCount: number,
  durability: "appended" | "forced",
  logAppendTimeMs: number,
): void {
  try {
    waiter.appended(firstOffset, recordCount, durability, logAppendTimeMs);
  } catch (error) {
    console.error("booblik: an append waiter threw:", error);
  }
}

function tellFailure(waiter: AppendWaiter, error: unknown): void {
  try {
    waiter.appendFailed(error);
  } catch (thrown) {
    console.error("booblik: an append waiter threw:", thrown);
  }
}

/**
 * Pending-group buffers not in use, shared by every partition: a busy turn reuses the last turn's
 * buffers instead of growing new ones (a group of 1 MiB grown from nothing each turn cost more than
 * the pwrites it saved), and an idle partition holds none.
 */
const spareBuffers: Uint8Array[] = [];
const NO_BYTES = new Uint8Array(0);
/** Until this time (performance.now()), forces go to the thread pool: a force on the loop was slow. */
let forceOnLoopBackoffUntilMs = 0;
/** When the current (or last) back-off began: only a pool force started since then can end it. */
let forceOnLoopBackoffSinceMs = 0;

/**
 * A force on the thread pool that started during the back-off and completed within
 * FORCE_ON_LOOP_SLOW_MS (its time includes the hand-off to the pool and back, so it can only
 * overstate the disk's) ends the back-off: the disk is fast again, and each further force on the
 * pool costs a hand-off and a wake-up of the loop. The stalls that start a back-off were isolated on
 * the measurement machine (2026-12-01, one connection producing 50 K records/s under `force`, load
 * 4: three forces on the loop of 14.7, 40.5 and 10.4 ms in 5 s, 2.4 and 2.6 s apart), so a fixed
 * second on the pool after each one kept 15-66 % of all forces off the loop in six of eight runs
 * (`perf trace`, docs/benchmarks.md, "What the force tail is made of"); with this rule, 0-3.5 %. A
 * force started before the back-off began proves nothing (it may have finished before the stall).
 */
function forceOnPoolCompleted(startMs: number, elapsedMs: number): void {
  if (startMs >= forceOnLoopBackoffSinceMs && elapsedMs <= FORCE_ON_LOOP_SLOW_MS)
    forceOnLoopBackoffUntilMs = Math.min(forceOnLoopBackoffUntilMs, startMs + elapsedMs);
}

function takeSpareBuffer(capacityBytes: number): Uint8Array | undefined {
  for (let i = 0; i < spareBuffers.length; i++) {
    const buffer = spareBuffers[i]!;
    if (buffer.length >= capacityBytes) {
      spareBuffers[i] = spareBuffers[spareBuffers.length - 1]!;
      spareBuffers.pop();
      return buffer;
    }
  }
  return undefined;
}

function giveSpareBuffer(buffer: Uint8Array): void {
  if (buffer.length === 0) return;
  if (spareBuffers.length < COALESCED_SPARE_BUFFERS_MAX) {
    spareBuffers.push(buffer);
    return;
  }
  // Keep the larger ones: the turns that need a buffer most are the big ones.
  let smallest = 0;
  for (let i = 1; i < spareBuffers.length; i++)
    if (spareBuffers[i]!.length < spareBuffers[smallest]!.length) smallest = i;
  if (spareBuffers[smallest]!.length < buffer.length) spareBuffers[smallest] = buffer;
}

/** Filled in place by every fileRange call (one per process: the calls never overlap). */
const scratchRange = newFileRange();
const validatedHeader = newBatchHeader();
/** validateBatches' options for validateBatch, reused: no object per batch (JS runs one at a time). */
const validateOptions: { maxBatchBytes: number; requireKeys: boolean } = {
  maxBatchBytes: 0,
  requireKeys: false,
};

/**
 * Copies `source[from, to)` to `target[at]`; a small range byte by byte, without a view
 * (PRODUCE_COPY_LOOP_BYTES_MAX says why).
 */
function copyRange(source: Uint8Array, from: number, to: number, target: Uint8Array, at: number): void {
  if (to - from > PRODUCE_COPY_LOOP_BYTES_MAX) {
    target.set(source.subarray(from, to), at);
    return;
  }
  for (let i = from; i < to; i++) target[at++] = source[i]!;
}

/** Names a batch of a request, only when something is refused (no string per valid batch). */
function where(index: number, start: number): string {
  return `batch ${index} (at byte ${start} of the records)`;
}

/** A batch of a request whose MaxTimestamp disagrees with its records (see validateBatches). */
export interface MaxTimestampCorrection {
  start: number;
  end: number;
  /** The largest timestamp of the batch's records. */
  maxTimestampMs: number;
}

/**
 * Validates every batch of `batches[from, to)` (bare, back to back) with `validateBatch`; throws the
 * first rejection, naming the batch and where it starts (the caller appends all or none). Returns
 * the batches whose MaxTimestamp is not their records' largest timestamp (walked batches only: the
 * uncompressed ones), or undefined when there is none, the usual case, which allocates nothing.
 * Every position, in errors and corrections, counts from `from`: a range of a request frame is
 * validated without a view of it (appendQueued).
 */
export function validateBatches(
  batches: Uint8Array,
  config: Pick<TopicConfig, "maxRecordBytes" | "cleanupPolicy">,
  measured?: ValidatedBatches,
  from = 0,
  to = batches.length,
): MaxTimestampCorrection[] | undefined {
  let corrections: MaxTimestampCorrection[] | undefined;
  const end = to;
  let offsetCount = 0;
  if (end === from)
    throw new InvalidBatchError("size", "no record batch: an append holds at least one", 0, "the records");
  let start = from;
  let index = 0;
  while (start < end) {
    if (end - start < BATCH_LENGTH_EXCLUDED_BYTES)
      throw new InvalidBatchError(
        "size",
        `${end - start} trailing bytes cannot hold BaseOffset and BatchLength`,
        0,
        where(index, start - from),
      );
    const batchLength =
      ((batches[start + BATCH_LENGTH_OFFSET]! << 24) |
        (batches[start + BATCH_LENGTH_OFFSET + 1]! << 16) |
        (batches[start + BATCH_LENGTH_OFFSET + 2]! << 8) |
        batches[start + BATCH_LENGTH_OFFSET + 3]!) >>>
      0;
    // A BatchLength that runs past the records: validate what is there, so the error says so.
    const batchEnd = Math.min(end, start + BATCH_LENGTH_EXCLUDED_BYTES + batchLength);
    try {
      validateOptions.maxBatchBytes = config.maxRecordBytes;
      validateOptions.requireKeys = isCompacted(config);
      validateBatch(batches, start, batchEnd, validateOptions, validatedHeader);
    } catch (error) {
      if (error instanceof InvalidBatchError) {
        // A request of one batch: the batch's own positions say it all.
        if (index === 0 && batchEnd === end) throw error;
        throw new InvalidBatchError(error.check, error.reason, error.position, where(index, start - from));
      }
      throw error;
    }
    if (validatedHeader.recordsMaxTimestamp !== validatedHeader.maxTimestamp) {
      corrections ??= [];
      corrections.push({
        start: start - from,
        end: batchEnd - from,
        maxTimestampMs: validatedHeader.recordsMaxTimestamp,
      });
    }
    offsetCount += validatedHeader.lastOffsetDelta + 1;
    start = batchEnd;
    index++;
  }
  if (measured !== undefined) {
    measured.offsetCount = offsetCount;
    measured.batchCount = index;
  }
  return corrections;
}

/**
 * A copy of `batches` with each correction applied (MaxTimestamp and batch CRC rewritten): the
 * caller's bytes stay as they were, and only a request that needs it pays the copy.
 */
function withMaxTimestampsCorrected(batches: Uint8Array, corrections: MaxTimestampCorrection[]): Uint8Array {
  // Not `batches.slice()`: on a Buffer (a request frame) that is a view, and the caller's bytes
  // would change.
  const copy = new Uint8Array(batches);
  for (const { start, end, maxTimestampMs } of corrections) setMaxTimestamp(copy, start, end, maxTimestampMs);
  return copy;
}

/** A reader waiting for the visible end to move (see `Partition.addVisibleWaiter`). */
export interface VisibleWaiter {
  visibleMoved(): void;
}

export class Partition {
  readonly topic: TopicName;
  readonly id: PartitionId;
  readonly log: PartitionLog;
  readonly groupCommit: GroupCommit;
  /** A partition of an internal topic (the offsets topic): only the broker appends to it. */
  readonly internal: boolean;
  /**
   * Which topic of its name this partition belongs to, in this process (Broker: a topic created
   * again under a name gets a new one): the native server refuses a FETCH of a replaced topic once.
   */
  readonly topicIncarnation: number;
  /** Replaced as a whole by `reconfigure` (Broker.alterTopic); read at each append and retention run. */
  private config: TopicConfig;
  private timer: ReturnType<typeof setInterval> | undefined;
  /**
   * Under `force`, the visible end never goes below this: the log end when the policy became
   * `force` on a live partition (records already visible under `append` or `interval` stay visible
   * while the force that reconfigure awaits covers them). 0 otherwise.
   */
  private visibleFloor = 0;
  /**
   * Readers waiting for the visible end to move (`addVisibleWaiter`, and `onVisible` through an
   * adapter). The partition subscribes to its log once, while the set is not empty, and wakes them
   * under the policy in force: a waiting FETCH costs one set entry, not five closures and two log
   * subscriptions (issue 13: they were most of the broker's garbage at 50 K records/s, measured
   * with bun:jsc heapStats() in docs/benchmarks.md).
   */
  private readonly visibleWaiters = new Set<VisibleWaiter>();
  /** Subscribed to the log's force and append events (`onLogForce`, `onLogAppend`). */
  private listeningToLog = false;
  /** Waiters woken by the current `wakeVisibleWaiters`, reused between calls (no array per append). */
  private wakeScratch: VisibleWaiter[] = [];
  private waking = false;
  private collecting: VisibleWaiter[] = [];
  private readonly collectWaiter = (waiter: VisibleWaiter): void => {
    this.collecting.push(waiter);
  };
  /** Idempotent producers' sequences on this partition (producer-state.ts), rebuilt at open. */
  readonly producers: ProducerStateTable;
  /** The offset the producer state was replayed from at open (the log end after a clean close). */
  readonly producerStateReplayedFrom: number;
  /**
   * The pending group of coalesced appends (see the header): their bare batches back to back, and
   * per append its waiter, byte length and offset count. Reused from group to group.
   */
  private pendingBytes: Uint8Array = NO_BYTES;
  private pendingLength = 0;
  private pendingFramedBytes = 0;
  private pendingWaiters: AppendWaiter[] = [];
  private pendingLengths: number[] = [];
  private pendingCounts: number[] = [];
  /** True while this partition is in `turnPartitions` (its pending group is written at the end of the turn). */
  private flushScheduled = false;
  private readonly observeForceSeconds: ((seconds: number) => void) | undefined;
  /** Partitions whose pending group `flushTurn` writes at the end of this turn, in arrival order. */
  private static turnPartitions: Partition[] = [];
  /** The other list, swapped in while `flushTurn` runs (no allocation per turn). */
  private static spareTurnPartitions: Partition[] = [];
  private static turnScheduled = false;
  /**
   * The gather (see the header): the last group forced on the loop, how many distinct senders it
   * answered, how many of them have appended here since, and until when they are waited for.
   */
  private gatherForceId = 0;
  private gatherSenders = 0;
  private gatherReturned = 0;
  private gatherUntilMs = 0;
  /** Forces on the loop still to run without a gather, and how many the last failed gather set. */
  private gatherSkip = 0;
  private gatherBackoff = 0;
  private readonly measured: ValidatedBatches = { offsetCount: 0, batchCount: 0 };

  constructor(
    topic: TopicName,
    id: PartitionId,
    log: PartitionLog,
    config: TopicConfig,
    observeForceSeconds?: (seconds: number) => void,
    internal = false,
    topicIncarnation = 0,
    /** The broker's count of remembered producer ids, shared by its partitions (producer-state.ts). */
    producerIds?: ProducerIdBudget,
  ) {
    this.internal = internal;
    this.topicIncarnation = topicIncarnation;
    this.topic = topic;
    this.id = id;
    this.log = log;
    this.config = config;
    // An internal topic takes only the broker's own plain batches: nothing to rebuild (and no
    // snapshot is written for it, so a rebuild would read its whole log at every open).
    let rebuilt: { table: ProducerStateTable; replayedFrom: number };
    try {
      rebuilt = internal
        ? { table: new ProducerStateTable(producerIds), replayedFrom: log.nextOffset }
        : ProducerStateTable.rebuild(log, producerIds);
    } catch (error) {
      // The caller handed over an open log and gets no partition to close it through.
      log.close(false);
      throw error;
    }
    this.producers = rebuilt.table;
    this.producerStateReplayedFrom = rebuilt.replayedFrom;
    this.observeForceSeconds = observeForceSeconds;
    this.groupCommit = new GroupCommit(
      async () => {
        const startMs = performance.now();
        await log.force();
        const elapsedMs = performance.now() - startMs;
        observeForceSeconds?.(elapsedMs / 1000);
        forceOnPoolCompleted(startMs, elapsedMs);
      },
      { forceNow: this.forceOnLoop, allowed: this.forceOnLoopAllowed },
    );
    this.startTimer();
  }

  get policy(): DurabilityPolicy {
    return this.config.durability;
  }

  get timestampType(): TimestampType {
    return this.config.timestampType;
  }

  /** The largest batch an append takes (the topic's `max.message.bytes`). */
  get maxRecordBytes(): number {
    return this.config.maxRecordBytes;
  }

  private startTimer(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.config.durability === "interval" && !this.log.isClosed) {
      this.timer = setInterval(() => this.backgroundForce(), this.config.flushIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * Applies a changed topic configuration to this live partition (Broker.alterTopic validated it and
   * refused the settings that cannot change: write mode, segment and index sizes, and a smaller
   * maxRecordBytes). Retention, the record limit and the timestamp type hold from the next append or
   * retention run. A durability change holds from the next append; becoming `force`, the partition
   * keeps what was visible visible and resolves once a force covered the log end of that moment.
   */
  async reconfigure(config: TopicConfig): Promise<void> {
    const before = this.config;
    // The storage recognises batches up to its maxPayloadBytes; only ever raised (a lower bound would
    // make batches already stored unreadable to recovery).
    if (config.maxRecordBytes > this.log.config.maxPayloadBytes)
      this.log.raiseMaxPayloadBytes(config.maxRecordBytes);
    this.config = config;
    if (before.durability !== config.durability || before.flushIntervalMs !== config.flushIntervalMs)
      this.startTimer();
    if (before.durability === config.durability) return;
    if (config.durability === "force") {
      this.visibleFloor = this.log.nextOffset;
      if (!this.log.isClosed && this.log.failure === undefined && this.log.hasUnforcedData)
        await this.groupCommit.request();
    } else {
      // The visible end may jump from the durable end to the log end: wake waiting readers.
      this.wakeVisibleWaiters();
    }
  }

  /**
   * Appends one or more bare RecordBatch v2 (back to back; BaseOffset 0, as a producer sends them)
   * and resolves when the topic's policy is satisfied. Every batch is validated first (whole
   * request or nothing: a rejection is an InvalidBatchError naming the batch, the rule and the
   * byte position, or RecordTooLargeError); the broker then stamps offsets, and under
   * LogAppendTime the append time. `batches` is not modified. An internal topic refuses clients'
   * appends (InternalTopicError): only the broker writes it, through `appendInternal`.
   */
  append(batches: Uint8Array): Promise<AppendAck> {
    if (this.internal) return Promise.reject(new InternalTopicError(this.topic, "appended to by clients"));
    return this.appendInternal(batches);
  }

  /** `append` without the internal-topic refusal: for the broker's own records (offsets-store.ts). */
  async appendInternal(batches: Uint8Array): Promise<AppendAck> {
    const corrections = validateBatches(batches, this.config);
    this.writePending(); // appends stay in arrival order across paths
    return this.appendValidated(batches, corrections, this.producers.check(batches));
  }

  /**
   * The append of a validated request, after the pending group was written: `producerCheck` is the
   * producer state's verdict on it (taken after that group, which never holds an idempotent batch),
   * `corrections` the MaxTimestamps to rewrite. Synchronous up to the log's copy of the bytes.
   */
  private async appendValidated(
    batches: Uint8Array,
    corrections: MaxTimestampCorrection[] | undefined,
    producerCheck: ProducerCheck,
  ): Promise<AppendAck> {
    const log = this.log;
    if (producerCheck.kind === "duplicate")
      return this.duplicateAck(producerCheck.firstOffset, producerCheck.recordCount);
    const before = log.nextOffset;
    const segmentsBefore = log.segmentCount;
    const nowMs = Date.now();
    const logAppendTimeMs = this.timestampType === "LogAppendTime" ? nowMs : -1;
    // Under LogAppendTime the append stamps MaxTimestamp anyway.
    const stored =
      corrections === undefined || this.timestampType === "LogAppendTime"
        ? batches
        : withMaxTimestampsCorrected(batches, corrections);
    const firstOffset = log.append(stored, logAppendTimeMs);
    const recordCount = log.nextOffset - before;
    // A roll: snapshot the producer state as of the roll offset (this request not yet recorded), so
    // a restart after a crash replays about one segment (producer-state.ts).
    if (log.segmentCount !== segmentsBefore && !this.internal) this.snapshotProducers(before);
    if (producerCheck.kind === "append") this.producers.record(producerCheck.pending, firstOffset, nowMs);
    if (this.policy === "force") {
      await this.groupCommit.request();
      return { firstOffset, recordCount, durability: "forced", logAppendTimeMs };
    }
    if (this.policy === "append" && log.unforcedSealedCount > 0) this.backgroundForce();
    return { firstOffset, recordCount, durability: "appended", logAppendTimeMs };
  }

  /** Writes the producer state snapshot as of `nextOffset` in the background; a failure costs a replay. */
  private snapshotProducers(nextOffset: number): void {
    const text = this.producers.snapshotText(nextOffset);
    ProducerStateTable.writeSnapshotInBackground(this.log.directory, text, () => !this.log.isClosed).catch(
      () => {
        // A full disk or a failed write: the older snapshot stays, and a restart replays more.
      },
    );
  }

  /**
   * The answer to a resend: the original offsets, once they are as durable as the policy promises
   * (under `force` the original may still wait for its force: the resend waits for the same).
   */
  private async duplicateAck(firstOffset: number, recordCount: number): Promise<AppendAck> {
    const logAppendTimeMs = -1;
    if (this.policy === "force") {
      if (this.log.recoveryPoint.nextOffset < firstOffset + recordCount) await this.groupCommit.request();
      return {
        firstOffset: firstOffset as Offset,
        recordCount,
        durability: "forced",
        logAppendTimeMs,
        duplicate: true,
      };
    }
    return {
      firstOffset: firstOffset as Offset,
      recordCount,
      durability: "appended",
      logAppendTimeMs,
      duplicate: true,
    };
  }

  /**
   * `appendQueued` for an idempotent or corrected append: the path of `append`, after the pending
   * group. Its own method because its closures would otherwise give every `appendQueued` call a
   * scope object (JSC makes one at entry for locals a closure captures; issue 13).
   */
  private appendQueuedAlone(
    batches: Uint8Array,
    corrections: ReturnType<typeof validateBatches>,
    waiter: AppendWaiter,
  ): void {
    this.writePending();
    const producerCheck = this.producers.check(batches); // a refusal throws, as validation does
    this.appendValidated(batches, corrections, producerCheck).then(
      (ack) => tell(waiter, ack.firstOffset, ack.recordCount, ack.durability, ack.logAppendTimeMs),
      (error: unknown) => tellFailure(waiter, error),
    );
  }

  /**
   * `append` for the Produce path of both listeners: validates `batches` now (a refusal throws, as `append`
   * rejects), and tells `waiter` once the topic's policy is satisfied. A small append joins the
   * pending group written at the end of this event-loop turn (see the header); `batches` is copied,
   * so it may be reused once this returns. A larger one is written at once (after the pending
   * group). No promise and no closure per call.
   */
  appendQueued(batches: Uint8Array, waiter: AppendWaiter, from = 0, to = batches.length): void {
    if (this.internal) throw new InternalTopicError(this.topic, "appended to by clients");
    const measured = this.measured;
    const corrections = validateBatches(batches, this.config, measured, from, to);
    // Only plain batches with nothing to correct join a group: an idempotent batch is checked
    // against the producer state and recorded in it around its own log append (a group written
    // later would see neither its predecessors in the group nor a failed write), and a corrected
    // one is stored as a copy. Both take the path of `append`, after the pending group.
    if (corrections !== undefined || hasProducerId(batches, from, to)) {
      this.appendQueuedAlone(batches.subarray(from, to), corrections, waiter);
      return;
    }
    const length = to - from;
    const framedBytes = length + measured.batchCount * ENTRY_HEADER_BYTES;
    if (length > COALESCED_APPEND_BYTES_MAX) {
      this.writePending();
      this.writeOne(batches.subarray(from, to), measured.offsetCount, waiter);
      return;
    }
    // A group must fit an empty segment (PartitionLog.append refuses one that does not): one that
    // would grow past that, or past the group limit, is written first. An append too large for
    // any segment is then alone in its group and refused alone, as it would be on its own.
    const groupLimit = Math.min(
      COALESCED_GROUP_BYTES_MAX,
      this.log.config.segmentBytes - SEGMENT_HEADER_BYTES,
    );
    if (this.pendingWaiters.length > 0 && this.pendingFramedBytes + framedBytes > groupLimit)
      this.writePending();
    if (this.pendingLength + length > this.pendingBytes.length) {
      let capacity = Math.max(4096, this.pendingBytes.length * 2);
      while (capacity < this.pendingLength + length) capacity *= 2;
      const grown = takeSpareBuffer(capacity) ?? new Uint8Array(capacity);
      if (this.pendingLength > 0) grown.set(this.pendingBytes.subarray(0, this.pendingLength));
      giveSpareBuffer(this.pendingBytes);
      this.pendingBytes = grown;
    }
    copyRange(batches, from, to, this.pendingBytes, this.pendingLength);
    this.pendingLength += length;
    this.pendingFramedBytes += framedBytes;
    const sender = waiter.sender;
    if (sender?.answeredBy !== undefined) sender.answeredBy.senderGone(sender, this);
    this.pendingWaiters.push(waiter);
    this.pendingLengths.push(length);
    this.pendingCounts.push(measured.offsetCount);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      Partition.inNextTurn(this);
    }
  }

  /** Puts `partition` in the list `flushTurn` writes, and schedules that turn's end once. */
  private static inNextTurn(partition: Partition): void {
    Partition.turnPartitions.push(partition);
    if (!Partition.turnScheduled) {
      Partition.turnScheduled = true;
      setImmediate(Partition.flushTurn);
    }
  }

  /**
   * The end of a turn: writes the pending group of every partition that got one. A forced group that
   * is the only one of the turn is forced on the loop (`forceGroup`); several go to their group
   * commits, which force them in parallel on the thread pool (one after another on the loop would
   * add their fdatasyncs up).
   */
  private static readonly flushTurn = (): void => {
    Partition.turnScheduled = false;
    const partitions = Partition.turnPartitions;
    Partition.turnPartitions = Partition.spareTurnPartitions;
    let first: Partition | undefined;
    let firstGroup: ForcedGroup | undefined;
    let forcedGroups = 0;
    let nowMs = -1;
    for (let i = 0; i < partitions.length; i++) {
      const partition = partitions[i]!;
      if (partition.gatherSenders > 0 && partition.pendingWaiters.length > 0) {
        if (partition.gatherReturned < partition.gatherSenders) {
          if (nowMs < 0) nowMs = performance.now();
          if (nowMs < partition.gatherUntilMs) {
            // Wait a turn more for the senders the last force answered (the header's gather).
            Partition.inNextTurn(partition);
            continue;
          }
        }
        partition.gatherEnded();
      }
      partition.flushScheduled = false;
      let group: ForcedGroup | undefined;
      try {
        group = partition.writePending(true);
      } catch (error) {
        // writePending tells its waiters of every failure it expects; a throw here is a bug, and
        // must not keep the other partitions' groups of this turn from being written.
        console.error("booblik: writing a partition's pending group threw:", error);
        continue;
      }
      if (group === undefined) continue;
      forcedGroups++;
      if (forcedGroups === 1) {
        first = partition;
        firstGroup = group;
        continue;
      }
      if (forcedGroups === 2) first!.groupCommit.enqueue(firstGroup!);
      partition.groupCommit.enqueue(group);
    }
    partitions.length = 0;
    Partition.spareTurnPartitions = partitions;
    if (forcedGroups === 1) first!.forceGroup(firstGroup!);
  };

  /**
   * Forces `group` on the event loop and answers it, unless a force is in flight (the group waits
   * for the next one) or `forceOnLoopAllowed` says no.
   */
  private forceGroup(group: ForcedGroup): void {
    const startMs = performance.now();
    this.groupCommit.forceNowOrEnqueue(group);
    // Answered now (forced on the loop): wait for its senders before the next force, for at most
    // as long as this one took. Queued for the pool: no gather (forces there overlap arrivals).
    // After a failed gather, the next forces run without one (gatherEnded).
    const gather = group.answeredSenders > 0 && this.gatherSkip === 0;
    if (group.answeredSenders > 0 && this.gatherSkip > 0) this.gatherSkip--;
    this.gatherForceId = gather ? group.id : 0;
    this.gatherSenders = gather ? group.answeredSenders : 0;
    this.gatherReturned = 0;
    if (gather) {
      const endMs = performance.now();
      this.gatherUntilMs = endMs + Math.min(endMs - startMs, FORCE_GATHER_MAX_MS);
    }
  }

  /**
   * The gather of the last force ends (its senders are back, or its window closed): one that saw
   * fewer than three quarters of them back failed, and then the next forces run without one, 1 after a
   * first failure, twice as many after each further one (FORCE_GATHER_SKIP_MAX at most); one that
   * succeeded halves that count. Senders that do not come back within a force's time are not
   * waiting for their answer to send again (producers on their own clock, not one request in flight
   * each): waiting for them only delays the requests already pending, which an open-loop load
   * measured (docs/benchmarks.md, "The gather"). Halving, not clearing: such a load still sees a
   * sender back now and then, which must not restart the gathers.
   */
  private gatherEnded(): void {
    if (this.gatherReturned * 4 >= this.gatherSenders * 3) this.gatherBackoff >>= 1;
    else {
      this.gatherBackoff = Math.min(Math.max(1, this.gatherBackoff * 2), FORCE_GATHER_SKIP_MAX);
      this.gatherSkip = this.gatherBackoff;
    }
    this.gatherSenders = 0;
    this.gatherForceId = 0;
  }

  /**
   * `sender`, counted by this partition's gather, appended to `to` (or was answered by another force:
   * `to` undefined): it no longer counts as awaited here, and came back if `to` is this partition.
   * Internal to this file (ForcedGroup calls it).
   */
  senderGone(sender: AppendSender, to: Partition | undefined): void {
    if (sender.answeredByForce === this.gatherForceId) {
      if (to === this) this.gatherReturned++;
      else this.gatherSenders--;
    }
    sender.answeredBy = undefined;
    sender.answeredByForce = 0;
  }

  /**
   * Not while the loop backs off after a slow force, and not on the mapped write path (its force on
   * the calling thread adds an msync over the mapping; not measured, so it keeps the thread pool).
   */
  private readonly forceOnLoopAllowed = (): boolean =>
    this.log.config.writeMode === "file" && performance.now() >= forceOnLoopBackoffUntilMs;

  private readonly forceOnLoop = (): void => {
    const startMs = performance.now();
    this.log.forceNow(true);
    const elapsedMs = performance.now() - startMs;
    this.observeForceSeconds?.(elapsedMs / 1000);
    if (elapsedMs > FORCE_ON_LOOP_SLOW_MS) {
      forceOnLoopBackoffSinceMs = startMs + elapsedMs;
      forceOnLoopBackoffUntilMs = forceOnLoopBackoffSinceMs + FORCE_ON_LOOP_BACKOFF_MS;
    }
  };

  /**
   * Writes the pending group as one append and tells its waiters (or hands them to the group
   * commit). A group that fails is retried one append at a time: each then gets its own outcome
   * (a full disk may leave room for the smaller ones; a failed log refuses each at once). With
   * `deferForce`, a group written under `force` is returned instead, for the caller to force.
   */
  private writePending(deferForce = false): ForcedGroup | undefined {
    const count = this.pendingWaiters.length;
    if (count === 0) return undefined;
    const waiters = this.pendingWaiters;
    const lengths = this.pendingLengths;
    const counts = this.pendingCounts;
    const buffer = this.pendingBytes;
    const bytes = buffer.subarray(0, this.pendingLength);
    // Fresh lists for appends that arrive while the waiters are told (they do not, today: waiters
    // only schedule work; but a group must never see its lists change under it).
    this.pendingWaiters = [];
    this.pendingLengths = [];
    this.pendingCounts = [];
    this.pendingLength = 0;
    this.pendingFramedBytes = 0;
    // The buffer leaves this partition: appends the waiters may cause start a new one, so `bytes`
    // stays as it is until it goes back to the spares below (after its last use).
    this.pendingBytes = NO_BYTES;
    const log = this.log;
    const logAppendTimeMs = this.timestampType === "LogAppendTime" ? Date.now() : -1;
    const segmentsBefore = log.segmentCount;
    let firstOffset: number;
    try {
      firstOffset = log.append(bytes, logAppendTimeMs);
    } catch (error) {
      if (count === 1) {
        giveSpareBuffer(buffer);
        tellFailure(waiters[0]!, error);
        return undefined;
      }
      // One at a time from a copy: the buffer goes back to the spares first.
      const copy = bytes.slice();
      giveSpareBuffer(buffer);
      let at = 0;
      for (let i = 0; i < count; i++) {
        this.writeOne(copy.subarray(at, at + lengths[i]!), counts[i]!, waiters[i]!);
        at += lengths[i]!;
      }
      return undefined;
    }
    giveSpareBuffer(buffer);
    // A roll (a group fits an empty segment, so it rolls before its first batch): the producer
    // state as of the roll, which the group's plain batches do not change (see appendQueued).
    if (log.segmentCount !== segmentsBefore) this.snapshotProducers(firstOffset);
    if (this.policy === "force") {
      const firstOffsets = new Array<number>(count);
      let offset = firstOffset;
      for (let i = 0; i < count; i++) {
        firstOffsets[i] = offset;
        offset += counts[i]!;
      }
      const group = new ForcedGroup(this, waiters, firstOffsets, counts, logAppendTimeMs);
      if (deferForce) return group;
      this.groupCommit.enqueue(group);
      return undefined;
    }
    if (this.policy === "append" && log.unforcedSealedCount > 0) this.backgroundForce();
    let offset = firstOffset;
    for (let i = 0; i < count; i++) {
      tell(waiters[i]!, offset, counts[i]!, "appended", logAppendTimeMs);
      offset += counts[i]!;
    }
    return undefined;
  }

  /** Writes one validated append now and tells its waiter (or hands it to the group commit). */
  private writeOne(batches: Uint8Array, offsetCount: number, waiter: AppendWaiter): void {
    const log = this.log;
    const logAppendTimeMs = this.timestampType === "LogAppendTime" ? Date.now() : -1;
    const segmentsBefore = log.segmentCount;
    let firstOffset: number;
    try {
      firstOffset = log.append(batches, logAppendTimeMs);
    } catch (error) {
      tellFailure(waiter, error);
      return;
    }
    if (log.segmentCount !== segmentsBefore) this.snapshotProducers(firstOffset);
    if (this.policy === "force") {
      this.groupCommit.enqueue(
        new ForcedGroup(this, [waiter], [firstOffset], [offsetCount], logAppendTimeMs),
      );
      return;
    }
    if (this.policy === "append" && log.unforcedSealedCount > 0) this.backgroundForce();
    tell(waiter, firstOffset, offsetCount, "appended", logAppendTimeMs);
  }

  /**
   * A force nobody waits for: under `append` after a roll (so sealed segments reach the disk and the
   * recovery point advances; a restart after a crash then scans about one segment), and under
   * `interval` on the timer.
   */
  private backgroundForce(): void {
    if (this.log.isClosed || this.log.failure !== undefined || !this.log.hasUnforcedData) return;
    if (this.groupCommit.inFlight) return;
    this.groupCommit.request().catch(() => {
      // The log marked itself failed; appends now refuse with that cause.
    });
  }

  /**
   * The end of what consumers may read. Under `force` it is the durable end: a record becomes
   * visible once a force covered it (when its producer is acknowledged), so no consumer ever acts on
   * a record that a machine crash could take back, and an offset a consumer saw is never reused for
   * another record after a restart. Under `append` and `interval` it is the end of the log.
   */
  get visibleNextOffset(): number {
    if (this.config.durability !== "force") return this.log.nextOffset;
    const durable = this.log.recoveryPoint.nextOffset;
    return Math.max(durable, this.visibleFloor);
  }

  /** Calls `listener` whenever the visible end may have moved, until the returned function is called. */
  onVisible(listener: () => void): () => void {
    const waiter: VisibleWaiter = { visibleMoved: listener };
    this.addVisibleWaiter(waiter);
    return () => this.removeVisibleWaiter(waiter);
  }

  /**
   * Calls `waiter.visibleMoved()` whenever the visible end may have moved, until it is removed.
   * A waiter added while others are being woken is first woken by the next event.
   */
  addVisibleWaiter(waiter: VisibleWaiter): void {
    this.visibleWaiters.add(waiter);
    if (this.listeningToLog) return;
    // The policy can change while a reader waits (reconfigure): each event wakes readers only under
    // the policy it belongs to, and a change to a policy that shows more wakes them too.
    this.log.addListeners(this.onLogForce, this.onLogAppend);
    this.listeningToLog = true;
  }

  private stopListeningToLog(): void {
    if (!this.listeningToLog) return;
    this.log.removeListeners(this.onLogForce, this.onLogAppend);
    this.listeningToLog = false;
  }

  removeVisibleWaiter(waiter: VisibleWaiter): void {
    this.visibleWaiters.delete(waiter);
    // Kept subscribed while waking (the loop below still runs); dropped once nobody waits, so a
    // partition nobody reads costs its appends nothing.
    if (this.visibleWaiters.size === 0 && !this.waking) this.stopListeningToLog();
  }

  private readonly onLogForce = (): void => {
    if (this.config.durability === "force") this.wakeVisibleWaiters();
  };

  private readonly onLogAppend = (): void => {
    if (this.config.durability !== "force") this.wakeVisibleWaiters();
  };

  private wakeVisibleWaiters(): void {
    if (this.visibleWaiters.size === 0) return;
    // A snapshot, so that a waiter that removes itself or adds another is safe; reentrant calls
    // (a woken reader's answer that appends) take an array of their own.
    const reentrant = this.waking;
    const list = reentrant ? [] : this.wakeScratch;
    // forEach with a callback made once: a for…of here allocated a Set iterator per wake-up
    // (bun:jsc heapStats, 2026-12-01).
    this.collecting = list;
    this.visibleWaiters.forEach(this.collectWaiter);
    this.waking = true;
    try {
      for (let i = 0; i < list.length; i++) {
        const waiter = list[i]!;
        // Removed by an earlier one's wake-up (its connection closed, say): not woken.
        if (this.visibleWaiters.has(waiter)) waiter.visibleMoved();
      }
    } finally {
      list.length = 0;
      if (!reentrant) {
        this.waking = false;
        if (this.visibleWaiters.size === 0) this.stopListeningToLog();
      }
    }
  }

  /** The oldest readable offset (retention and purges move it). */
  get logStartOffset(): number {
    return this.log.logStartOffset;
  }

  /** The log was closed: its topic was deleted, or the broker is closing. */
  get isClosed(): boolean {
    return this.log.isClosed;
  }

  /** Throws OffsetOutOfRangeError unless logStartOffset ≤ offset ≤ the visible end; returns that end. */
  checkFetchable(offset: number): number {
    const visible = this.visibleNextOffset;
    const start = this.log.logStartOffset;
    if (offset < start || offset > visible) throw new OffsetOutOfRangeError(offset, start, visible);
    return visible;
  }

  /**
   * Copying read of visible entries (CRC-checked) from the one containing `offset`;
   * `firstOffset` of the result is its BaseOffset (≤ `offset`). `oneSegment` stops at a segment's
   * end as FETCH does. With an `arena`, the bytes land in it where they fit (Segment.read).
   */
  read(offset: number, maxBytes: number, oneSegment = false, arena?: ReadArena): RecordsRead {
    return this.log.read(offset, maxBytes, this.visibleNextOffset, oneSegment, arena);
  }

  /**
   * Zero-copy read of visible entries from the one containing `offset`: whole entries of one
   * segment, at most `maxBytes` (but always the first one), held for the caller until it releases
   * the lease. A range below `copyBelow`'s bound is read and checked into its arena instead
   * (`copied`; nothing held). Undefined when nothing is visible at `offset`.
   */
  fetchLease(offset: number, maxBytes: number, copyBelow?: CopyBelow): FileLease | undefined {
    const range = scratchRange;
    const segment = this.log.fileRange(offset, maxBytes, range, this.visibleNextOffset, copyBelow);
    if (segment === undefined) return undefined;
    return new SegmentLease(range, range.copied === undefined ? segment : undefined);
  }

  /** The visible record with the largest timestamp, the earliest of several (PartitionLog). */
  offsetForLargestTimestamp(): TimestampLookup | undefined {
    return this.log.offsetForLargestTimestamp(this.visibleNextOffset);
  }

  /**
   * The first visible offset whose record timestamp is ≥ `timestampMs`, with that timestamp
   * (Kafka's ListOffsets by time); undefined when no visible record has one.
   */
  offsetForTimestamp(timestampMs: number): TimestampLookup | undefined {
    return this.log.offsetForTimestamp(timestampMs, this.visibleNextOffset);
  }

  /** Visible records from `offset` on as they come; ends when the log closes. */
  tail(offset: number): AsyncGenerator<DecodedRecord> {
    return this.log.tail(
      offset,
      FETCH_BYTES_DEFAULT,
      () => this.visibleNextOffset,
      (listener) => this.onVisible(listener),
    );
  }

  /** Applies the topic's retention to this partition, and forgets producers idle too long. */
  applyRetention(nowMs = Date.now()) {
    this.producers.expire(nowMs);
    // A compact-only topic has no retention, as in Kafka: its latest record per key stays.
    const retains = this.config.cleanupPolicy !== "compact";
    return this.log.applyRetention(
      {
        retentionBytes: retains ? (this.config.retentionBytes ?? undefined) : undefined,
        retentionMs: retains ? (this.config.retentionMs ?? undefined) : undefined,
        keepFromOffset: this.visibleNextOffset,
      },
      nowMs,
    );
  }

  /**
   * Throws what `purge(beforeOffset)` would refuse (an internal topic, a point beyond the visible end
   * or below −1); returns the point, −1 resolved to the visible end. Lets a request naming several
   * partitions check them all before any moves.
   */
  checkPurgeable(beforeOffset: number): number {
    if (this.internal) throw new InternalTopicError(this.topic, "purged");
    // Kafka's Partition.deleteRecordsOnLeader refuses a topic whose cleanup.policy lacks `delete`
    // (PolicyViolationException, before the offset check): a purge would take the latest record of
    // keys away, the one promise a compacted topic makes its readers (review of 2026-12-03).
    if (this.config.cleanupPolicy === "compact")
      throw new PolicyViolationError(
        `cannot purge ${this.topic}/${this.id}: its cleanup.policy is compact (the latest record of each key stays), so its records cannot be deleted; Kafka refuses the same`,
      );
    const visible = this.visibleNextOffset;
    const target = beforeOffset === -1 ? visible : beforeOffset;
    if (!Number.isSafeInteger(target) || target < 0 || target > visible) {
      const error = new OffsetOutOfRangeError(beforeOffset, this.log.logStartOffset, visible);
      // A PURGE names several partitions: say which one refused.
      error.message = `cannot purge ${this.topic}/${this.id}: ${error.message}`;
      throw error;
    }
    return target;
  }

  /**
   * Purges (Kafka's DeleteRecords): records below `beforeOffset` stop being readable, durably; −1
   * means the visible end (Kafka's high watermark). Refused with OffsetOutOfRangeError beyond the
   * visible end or below −1; a point at or below the log start changes nothing. Resolves with the
   * log start after the purge (Kafka's low_watermark) and what was deleted.
   */
  async purge(beforeOffset: number): Promise<PurgeResult> {
    const target = this.checkPurgeable(beforeOffset);
    // The records below the point must be durable before the start moves past them: a crash that
    // took them back would otherwise leave the start beyond the end of the log (under `force` the
    // visible end is durable already; under `append` and `interval` this is one force).
    if (target > this.log.recoveryPoint.nextOffset) await this.groupCommit.request();
    const deleted = this.log.purge(target);
    return { logStartOffset: this.log.logStartOffset, ...deleted };
  }

  /**
   * Waits for forces in flight, then closes the log (forcing and checkpointing when `clean`).
   * `batch`: see PartitionLog.close (the broker's clean shutdown stages every partition's files).
   */
  async close(clean = true, batch?: AtomicWriteBatch): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    // Appends already accepted into the pending group are written (and their waiters told) first;
    // a deleted topic's log refuses them, and each waiter hears that.
    this.writePending();
    // Wait for the force in flight without queueing another: a clean close forces in log.close, and a
    // delete (`clean` false) needs none. A failed force already marked the log failed; idle() never
    // rejects. The loop covers a request made by an append while we waited.
    while (this.groupCommit.inFlight) await this.groupCommit.idle();
    await this.log.settled();
    const forcedClean = clean && this.log.failure === undefined;
    try {
      this.log.close(clean, batch);
      // After the final force: the snapshot describes exactly the log up to its end. A crash before
      // it is written leaves an older snapshot (or none), and the next open replays more.
      if (forcedClean && !this.internal) {
        try {
          this.producers.writeSnapshot(this.log.directory, this.log.nextOffset, batch);
        } catch {
          // A full disk or a failed write only costs the next open a replay of the log.
        }
      }
    } finally {
      // The snapshot's text was taken above: the broker's count of producer ids may forget them
      // now, also when the close failed (else the count kept them for good).
      this.producers.release();
    }
  }
}
