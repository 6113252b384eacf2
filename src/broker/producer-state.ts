/**
 * Idempotent producers' state on one partition: for each producer id, its epoch and where its last
 * PRODUCER_BATCHES_RETAINED batches landed (first and last sequence, first and last offset). It is
 * what lets a partition answer a resent batch with the offsets of the original instead of appending
 * it twice, and refuse a batch that skips sequences.
 *
 * Owns: the sequence rules (checked for a whole request before anything is appended), the state,
 * its rebuild from the log, its snapshot file and the expiry of idle producer ids.
 *
 * Rules (Kafka's ProducerAppendInfo.checkSequence and ProducerStateEntry.findDuplicateBatch, read
 * in apache/kafka `storage/src/main/java/org/apache/kafka/storage/internals/log/`), for a batch with
 * ProducerId ≥ 0, epoch E, sequences [first, last]:
 * - known producer, E < its epoch: INVALID_PRODUCER_EPOCH (a fenced, older instance);
 * - known producer, same epoch, [first, last] equal to a remembered batch: a duplicate, answered
 *   with the original offsets and not appended;
 * - known producer, same epoch: `first` must follow its last sequence (last + 1, or 0 after
 *   2^31 − 1: sequences wrap at Int32 max), else OUT_OF_ORDER_SEQUENCE_NUMBER;
 * - known producer, E > its epoch (the client bumped it): `first` must be 0;
 * - unknown producer (never seen, or expired): accepted whatever `first` is. This is Kafka's
 *   behaviour since KIP-360 (2.5): UNKNOWN_PRODUCER_ID is no longer answered on produce, because a
 *   producer whose state was removed by retention must be able to continue.
 * A request is checked whole before anything is written: its batches are checked in order against
 * the state as the earlier batches of the same request would leave it. A request is either new or
 * a resend: all its idempotent batches duplicates (the answer is the original offsets) or none;
 * a mix is refused as out of order.
 *
 * Rebuild (after a crash or a clean close): the state is a function of the log, because every
 * stored batch header carries ProducerId, ProducerEpoch, BaseSequence and LastOffsetDelta. A
 * snapshot (`producer-state.json`, replaced atomically) names the offset N it describes: the state of
 * exactly the batches before N. It is written at every segment roll (N = the roll offset, in the
 * background) and by a clean close (N = the log end, after the final force). Opening loads it when
 * N ≤ the recovered log end and replays the batch headers from N on; a snapshot beyond the log end
 * (a power loss took an unforced tail it described) is deleted, durably, before anything is
 * appended, and the log is replayed from its start. So a clean restart reads nothing of the log, and
 * a restart after a crash about one segment (Kafka's bound: it snapshots at rolls too).
 *
 * Bounds (memory, about 250 bytes per remembered producer): PRODUCER_IDS_PER_PARTITION_MAX per
 * partition, and all partitions of a broker together `ProducerIdBudget.max` (`--max-producer-ids`).
 * Beyond either, a partition that meets a new producer forgets its own producer idle longest (a
 * later batch of that one is accepted as from a new producer, as after expiry). The per-partition
 * rule is replayed exactly by a rebuild; the broker-wide one depends on the order partitions meet
 * producers, so after a restart near the bound a partition may remember others than before.
 */
import path from "node:path";
import type { AtomicWriteBatch } from "../../ffi/file.ts";
import { DamagedEntryError, InvalidProducerEpochError, OutOfOrderSequenceError } from "../domain/errors.ts";
import {
  PRODUCER_BATCHES_RETAINED,
  PRODUCER_ID_EXPIRATION_MS,
  PRODUCER_IDS_PER_PARTITION_MAX,
} from "../domain/limits.ts";
import {
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_EXCLUDED_BYTES,
  BATCH_LENGTH_OFFSET,
  LAST_OFFSET_DELTA_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  type RecordBatchHeader,
} from "../record/batch.ts";
import { newEntryScanResult, scanEntries } from "../record/entries.ts";
import { disk } from "../storage/disk.ts";
import type { PartitionLog } from "../storage/partition-log.ts";
import type { RecordsRead } from "../storage/segment.ts";

export const PRODUCER_STATE_FILE = "producer-state.json";
const SNAPSHOT_VERSION = 1;
const INT32_MAX = 2_147_483_647;
/** Bytes read per step of a replay. */
const REPLAY_READ_BYTES = 1 << 20;

/** Where one batch of a producer landed. */
interface RetainedBatch {
  firstSequence: number;
  lastSequence: number;
  firstOffset: number;
  lastOffset: number;
}

interface ProducerEntry {
  epoch: number;
  /** Oldest first, at most PRODUCER_BATCHES_RETAINED. */
  batches: RetainedBatch[];
  /** When it last appended here (ms since the epoch; a replayed batch counts as appended at open). */
  lastAppendMs: number;
}

/** One idempotent batch of a checked request, to be recorded once the append succeeded. */
interface PendingBatch {
  producerId: number;
  epoch: number;
  firstSequence: number;
  lastSequence: number;
  /** Offset of its first record relative to the request's first offset. */
  offsetInRequest: number;
  recordCount: number;
}

/** The outcome of checking a request: nothing to record, batches to record, or a resend. */
/**
 * Whether any batch of `batches[from, to)` (bare, back to back, validated) carries a producer id (≥ 0): the
 * sign bit of each ProducerId's first byte, no allocation. The coalesced PRODUCE path takes only
 * requests without one (partition.ts `appendQueued`).
 */
export function hasProducerId(batches: Uint8Array, from = 0, to = batches.length): boolean {
  let start = from;
  while (start < to) {
    if ((batches[start + PRODUCER_ID_OFFSET]! & 0x80) === 0) return true;
    start += BATCH_LENGTH_EXCLUDED_BYTES + (int32At(batches, start + BATCH_LENGTH_OFFSET) >>> 0);
  }
  return false;
}

export type ProducerCheck =
  | { kind: "none" }
  | { kind: "append"; pending: PendingBatch[] }
  | { kind: "duplicate"; firstOffset: number; recordCount: number };

const NONE: ProducerCheck = { kind: "none" };

/** The sequence of the last record of a batch: Kafka's DefaultRecordBatch.incrementSequence. */
export function lastSequenceOf(baseSequence: number, lastOffsetDelta: number): number {
  if (baseSequence > INT32_MAX - lastOffsetDelta) return lastOffsetDelta - (INT32_MAX - baseSequence) - 1;
  return baseSequence + lastOffsetDelta;
}

function follows(lastSequence: number, nextSequence: number): boolean {
  return nextSequence === lastSequence + 1 || (nextSequence === 0 && lastSequence === INT32_MAX);
}

function int32At(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
}

/** A ProducerId field that validateBatch accepted (a safe integer): read without BigInt. */
function producerIdAt(bytes: Uint8Array, at: number): number {
  return int32At(bytes, at) * 2 ** 32 + (int32At(bytes, at + 4) >>> 0);
}

/**
 * The producer ids all partitions of one broker remember together (`count`), and their bound: a
 * client may name any producer id at sequence 0, so without it 4,096 partitions
 * (BROKER_PARTITIONS_DEFAULT_MAX) of PRODUCER_IDS_PER_PARTITION_MAX made-up ids could take about 10 GiB.
 */
export class ProducerIdBudget {
  count = 0;
  constructor(readonly max: number = Number.POSITIVE_INFINITY) {}
}

export class ProducerStateTable {
  private readonly producers = new Map<number, ProducerEntry>();
  private readonly budget: ProducerIdBudget;

  constructor(budget: ProducerIdBudget = new ProducerIdBudget()) {
    this.budget = budget;
  }

  get producerCount(): number {
    return this.producers.size;
  }

  /**
   * Checks the idempotent batches of `batches` (bare, back to back, each already validated by
   * `validateBatches`) against the state; throws OutOfOrderSequenceError or
   * InvalidProducerEpochError naming the batch and the sequences. Changes nothing.
   */
  check(batches: Uint8Array): ProducerCheck {
    let pending: PendingBatch[] | undefined;
    let duplicate: { firstOffset: number; recordCount: number; nextOffset: number } | undefined;
    let plainBatches = 0;
    let start = 0;
    let offsetInRequest = 0;
    let index = 0;
    while (start < batches.length) {
      const batchEnd =
        start + BATCH_LENGTH_EXCLUDED_BYTES + (int32At(batches, start + BATCH_LENGTH_OFFSET) >>> 0);
      const lastOffsetDelta = int32At(batches, start + LAST_OFFSET_DELTA_OFFSET);
      const recordCount = lastOffsetDelta + 1;
      // ProducerId −1 (no producer): the sign bit of its first byte; no further reading.
      if ((batches[start + PRODUCER_ID_OFFSET]! & 0x80) !== 0) {
        plainBatches++;
      } else {
        const producerId = producerIdAt(batches, start + PRODUCER_ID_OFFSET);
        const epoch =
          (((batches[start + PRODUCER_EPOCH_OFFSET]! << 8) | batches[start + PRODUCER_EPOCH_OFFSET + 1]!) <<
            16) >>
          16;
        const firstSequence = int32At(batches, start + BASE_SEQUENCE_OFFSET);
        const lastSequence = lastSequenceOf(firstSequence, lastOffsetDelta);
        const what = `batch ${index} of producer ${producerId} (epoch ${epoch}, sequences ${firstSequence}-${lastSequence})`;
        // The state as the earlier batches of this request leave it.
        let knownEpoch: number | undefined;
        let knownLast: number | undefined;
        let retained: RetainedBatch[] = [];
        const earlier = pending?.findLast((batch) => batch.producerId === producerId);
        const entry = this.producers.get(producerId);
        if (earlier !== undefined) {
          knownEpoch = earlier.epoch;
          knownLast = earlier.lastSequence;
        } else if (entry !== undefined) {
          knownEpoch = entry.epoch;
          knownLast = entry.batches.at(-1)?.lastSequence;
          retained = entry.batches;
        }
        if (knownEpoch !== undefined && epoch < knownEpoch)
          throw new InvalidProducerEpochError(
            `${what}: epoch ${epoch} is older than the producer's current epoch ${knownEpoch} on this partition (a newer instance of the producer took over); nothing appended`,
          );
        const original =
          knownEpoch === epoch
            ? retained.find(
                (batch) => batch.firstSequence === firstSequence && batch.lastSequence === lastSequence,
              )
            : undefined;
        if (original !== undefined) {
          if (pending !== undefined || plainBatches > 0) throw mixed(what);
          if (duplicate === undefined)
            duplicate = {
              firstOffset: original.firstOffset,
              recordCount: original.lastOffset - original.firstOffset + 1,
              nextOffset: original.lastOffset + 1,
            };
          else if (original.firstOffset === duplicate.nextOffset) {
            duplicate.recordCount += original.lastOffset - original.firstOffset + 1;
            duplicate.nextOffset = original.lastOffset + 1;
          } else
            throw new OutOfOrderSequenceError(
              `${what}: a resend names the batches it repeats in the order they were appended, back to back; this one was appended at offset ${original.firstOffset}, not right after the batch before it in the request (which ended before offset ${duplicate.nextOffset}); nothing appended`,
            );
        } else {
          if (duplicate !== undefined) throw mixed(what);
          if (knownEpoch !== undefined && epoch > knownEpoch && firstSequence !== 0)
            throw new OutOfOrderSequenceError(
              `${what}: a new epoch (the producer's last was ${knownEpoch}) starts at sequence 0; nothing appended`,
            );
          if (knownEpoch === epoch && knownLast !== undefined && !follows(knownLast, firstSequence)) {
            const expected = knownLast === INT32_MAX ? 0 : knownLast + 1;
            throw new OutOfOrderSequenceError(
              `${what}: expected sequence ${expected} next (the last one appended is ${knownLast}); nothing appended`,
            );
          }
          pending ??= [];
          pending.push({ producerId, epoch, firstSequence, lastSequence, offsetInRequest, recordCount });
        }
      }
      offsetInRequest += recordCount;
      start = batchEnd;
      index++;
    }
    if (duplicate !== undefined) {
      if (plainBatches > 0) throw mixed("a batch without a producer id beside a resend");
      return { kind: "duplicate", firstOffset: duplicate.firstOffset, recordCount: duplicate.recordCount };
    }
    return pending === undefined ? NONE : { kind: "append", pending };
  }

  /** Records the batches of a checked request once it was appended at `firstOffset`. */
  record(pending: readonly PendingBatch[], firstOffset: number, nowMs: number): void {
    for (const batch of pending) {
      const offset = firstOffset + batch.offsetInRequest;
      this.remember(
        batch.producerId,
        batch.epoch,
        batch.firstSequence,
        batch.lastSequence,
        offset,
        offset + batch.recordCount - 1,
        nowMs,
      );
    }
  }

  /** Takes a stored batch into the state without checking it (replay of the log). */
  replay(header: RecordBatchHeader, nowMs: number): void {
    if (header.producerId < 0) return;
    this.remember(
      header.producerId,
      header.producerEpoch,
      header.baseSequence,
      lastSequenceOf(header.baseSequence, header.lastOffsetDelta),
      header.baseOffset,
      header.baseOffset + header.lastOffsetDelta,
      nowMs,
    );
  }

  private remember(
    producerId: number,
    epoch: number,
    firstSequence: number,
    lastSequence: number,
    firstOffset: number,
    lastOffset: number,
    nowMs: number,
  ): void {
    let entry = this.producers.get(producerId);
    if (entry === undefined) {
      entry = { epoch, batches: [], lastAppendMs: nowMs };
      // The table stays in order of last append (oldest first): a new id beyond a bound forgets
      // this partition's producer idle longest (the header's Bounds).
      if (this.overBound()) this.forgetOldest();
      this.budget.count++;
    } else {
      this.producers.delete(producerId);
      if (epoch !== entry.epoch) {
        entry.epoch = epoch;
        entry.batches = [];
      }
    }
    this.producers.set(producerId, entry);
    entry.lastAppendMs = nowMs;
    entry.batches.push({ firstSequence, lastSequence, firstOffset, lastOffset });
    if (entry.batches.length > PRODUCER_BATCHES_RETAINED) entry.batches.shift();
  }

  /** Forgets producers idle for PRODUCER_ID_EXPIRATION_MS (Kafka's producer.id.expiration.ms). */
  expire(nowMs: number, expirationMs = PRODUCER_ID_EXPIRATION_MS): number {
    let removed = 0;
    for (const [producerId, entry] of this.producers) {
      if (nowMs - entry.lastAppendMs >= expirationMs) {
        this.producers.delete(producerId);
        removed++;
      }
    }
    this.budget.count -= removed;
    return removed;
  }

  /** Whether a new producer must first forget one: this partition's bound, or the broker's. */
  private overBound(): boolean {
    return (
      this.producers.size >= PRODUCER_IDS_PER_PARTITION_MAX ||
      (this.budget.count >= this.budget.max && this.producers.size > 0)
    );
  }

  private forgetOldest(): void {
    this.producers.delete(this.producers.keys().next().value!);
    this.budget.count--;
  }

  /** Gives the table's producers back to the broker's count (the partition closed or was deleted). */
  release(): void {
    this.budget.count -= this.producers.size;
    this.producers.clear();
  }

  // --- Snapshot and rebuild ----------------------------------------------------------------------

  /** The snapshot file's content for the state as of `nextOffset` (taken synchronously: consistent). */
  snapshotText(nextOffset: number): string {
    const producers: unknown[] = [];
    for (const [producerId, entry] of this.producers) {
      const batches: number[] = [];
      for (const batch of entry.batches)
        batches.push(batch.firstSequence, batch.lastSequence, batch.firstOffset, batch.lastOffset);
      producers.push([producerId, entry.epoch, entry.lastAppendMs, batches]);
    }
    return `${JSON.stringify({ version: SNAPSHOT_VERSION, nextOffset, producers })}\n`;
  }

  /**
   * Writes the snapshot of the state as of `nextOffset` (the log end: call it only when every batch
   * before it is recorded and none after it), atomically, now.
   */
  writeSnapshot(directory: string, nextOffset: number, batch?: AtomicWriteBatch): void {
    const file = path.join(directory, PRODUCER_STATE_FILE);
    if (batch !== undefined) batch.stage(file, this.snapshotText(nextOffset));
    else disk.writeFileAtomicallyNow(file, this.snapshotText(nextOffset));
  }

  /**
   * The same in the background (a segment roll): `text` from `snapshotText` at the roll, so it
   * describes exactly the log before the roll offset, whatever is appended while the disk works.
   */
  static writeSnapshotInBackground(
    directory: string,
    text: string,
    stillWanted: () => boolean,
  ): Promise<boolean> {
    return disk.writeFileAtomically(path.join(directory, PRODUCER_STATE_FILE), text, stillWanted);
  }

  /** The state of `log`: its snapshot (if usable) plus a replay of the batches after it. */
  static rebuild(
    log: PartitionLog,
    budget?: ProducerIdBudget,
    nowMs = Date.now(),
  ): { table: ProducerStateTable; replayedFrom: number } {
    const table = new ProducerStateTable(budget);
    const snapshotFile = path.join(log.directory, PRODUCER_STATE_FILE);
    const snapshot = readSnapshot(snapshotFile);
    let from: number = log.logStartOffset;
    // A snapshot beyond the log end describes batches the log no longer has (a crash took an
    // unforced tail): unusable. One below the log start is fine: what it adds are producers whose
    // batches retention removed, which Kafka forgets and remembering only protects more.
    if (snapshot !== undefined && snapshot.nextOffset <= log.nextOffset) {
      // In order of last append: beyond a bound (an older broker had none, or the broker's is
      // lower now) the latest are kept.
      for (const [producerId, entry] of snapshot.producers) {
        // A damaged or edited snapshot may name an id twice: the later entry replaces it, and the
        // count takes it once.
        if (table.producers.delete(producerId)) table.budget.count--;
        if (table.overBound()) table.forgetOldest();
        table.producers.set(producerId, entry);
        table.budget.count++;
      }
      from = Math.max(from, snapshot.nextOffset);
    } else if (snapshot !== undefined) {
      // Removed for good before anything is appended: once the log grew past its offset again, it
      // would describe batches that are not the ones the log holds.
      disk.unlinkFile(snapshotFile);
      disk.fsyncDirectory(log.directory);
    }
    const replayedFrom = from;
    const end = log.nextOffset;
    const scan = newEntryScanResult();
    while (from < end) {
      let read: RecordsRead;
      try {
        read = log.read(from, REPLAY_READ_BYTES, end);
      } catch (error) {
        // A damaged range (issue 15) is stepped over: its batches cannot be replayed, so a resend of
        // one of them would be appended again; refusing to start would cost every partition.
        if (
          error instanceof DamagedEntryError &&
          error.nextReadableOffset !== undefined &&
          error.nextReadableOffset > from
        ) {
          from = error.nextReadableOffset;
          continue;
        }
        if (error instanceof DamagedEntryError) break;
        throw error;
      }
      if (read.recordCount === 0) break;
      const skipBelow = from;
      scanEntries(
        read.records,
        0,
        read.records.length,
        { framing: "framed", verifyCrc: false },
        scan,
        (_e, _s, _b, header) => {
          if (header.baseOffset >= skipBelow) table.replay(header, nowMs);
        },
      );
      from = read.firstOffset + read.recordCount;
    }
    table.expire(nowMs);
    return { table, replayedFrom };
  }
}

function mixed(what: string): OutOfOrderSequenceError {
  return new OutOfOrderSequenceError(
    `${what}: a request is either a resend of batches already appended (all of them) or new batches (none appended before); this one mixes both; nothing appended`,
  );
}

interface Snapshot {
  nextOffset: number;
  producers: [number, ProducerEntry][];
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

/** The snapshot at `file`; undefined when missing or not trustworthy (then the log is replayed). */
function readSnapshot(file: string): Snapshot | undefined {
  const text = disk.readTextFile(file);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const candidate = parsed as { version?: unknown; nextOffset?: unknown; producers?: unknown };
  if (
    candidate.version !== SNAPSHOT_VERSION ||
    !isInteger(candidate.nextOffset) ||
    !Array.isArray(candidate.producers)
  )
    return undefined;
  const producers: [number, ProducerEntry][] = [];
  for (const item of candidate.producers as unknown[]) {
    if (!Array.isArray(item) || item.length !== 4) return undefined;
    const [producerId, epoch, lastAppendMs, flat] = item as unknown[];
    if (!isInteger(producerId) || !isInteger(epoch) || !isInteger(lastAppendMs) || !Array.isArray(flat))
      return undefined;
    if (flat.length % 4 !== 0 || !flat.every(isInteger)) return undefined;
    const numbers = flat as number[];
    const batches: RetainedBatch[] = [];
    for (let i = 0; i < flat.length; i += 4)
      batches.push({
        firstSequence: numbers[i]!,
        lastSequence: numbers[i + 1]!,
        firstOffset: numbers[i + 2]!,
        lastOffset: numbers[i + 3]!,
      });
    producers.push([producerId, { epoch, batches, lastAppendMs }]);
  }
  return { nextOffset: candidate.nextOffset, producers };
}
