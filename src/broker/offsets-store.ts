/**
 * Committed offsets of consumer groups, stored in booblik's own log: the internal topic
 * `__consumer_offsets` (OFFSETS_TOPIC_NAME; 1 partition, `force` durability), replayed at start into
 * a map. Protocol-neutral: the Kafka listener's OffsetCommit/OffsetFetch and the native protocol's
 * OFFSET_COMMIT/OFFSET_FETCH/DELETE_GROUP (src/server/group-requests.ts) use it.
 *
 * Record layout (one Kafka record per committed partition; the topic holds ordinary RecordBatch v2):
 *   key   = UTF-8 `group \0 topic \0 partition` (the partition in decimal). Group ids and topic names
 *           cannot hold NUL (topic names are ASCII letters, digits, `._-`; group ids are refused when
 *           they hold NUL), so the key splits back unambiguously.
 *   value = UTF-8 JSON `{"offset":n,"leaderEpoch":n,"metadata":string|null,"commitTimestampMs":n}`,
 *           or null: a tombstone, the commit of that key is deleted.
 * Later records win (replay in offset order). The record's timestamp is the commit time.
 *
 * Group records (the group coordinator's membership, groups.ts; Kafka's GroupMetadataValue):
 *   key   = UTF-8 `group` alone (no NUL, so it cannot be an offset's key);
 *   value = UTF-8 JSON `{"protocolType":s,"protocol":s,"generationId":n,"leaderId":s,"members":[
 *           {"memberId":s,"groupInstanceId":s|null,"clientId":s,"clientHost":s,"sessionTimeoutMs":n,
 *           "rebalanceTimeoutMs":n,"protocols":[{"name":s,"metadata":base64}],"assignment":base64}]}`,
 *           or null: the group's record is deleted.
 *   A group record that does not parse is skipped at replay and counted (groupRecordsSkipped): it only
 *   saves members a rejoin, and losing it costs one rebalance, not data. A broker older than group
 *   records refuses to start on an offsets topic that holds one (it finds a key without NULs).
 *
 * Invariants:
 * - A commit resolves only after a force covered its records (the topic's `force` policy: Partition
 *   resolves an append after GroupCommit's fdatasync). Only then does the map change, so OffsetFetch
 *   never answers an offset that a machine crash could take back, and an acknowledged commit is in
 *   the log on the next start.
 * - One commit is one append (one or more batches, whole or nothing: Partition.append validates all
 *   before writing any), so a multi-partition commit is not applied halfway.
 * - The map entry of a key remembers the log offset of its record; an older record never overwrites
 *   a newer one, whatever order forces resolve in.
 * - Compaction by snapshot: once the topic has at least two sealed segments and at least as many
 *   records were written since the last snapshot as there are live records, every live commit of
 *   the map and every group record is appended again (appends of batches that each fit the topic's
 *   batch limit, all started in one synchronous step, at offsets ≥ S), and after the force that covers it the
 *   sealed segments wholly below K are deleted (PartitionLog.applyRetention, keepFromOffset K),
 *   where K = min(S, the first offset of every commit appended but not yet forced when the snapshot
 *   was taken). The snapshot leaves out every key with a commit in flight: the map still holds that
 *   key's older value, and repeating it after the newer record would make the older one win on
 *   replay (an acknowledged commit lost; test/broker/offsets-compaction-race.test.ts); the newer
 *   record is ≥ K, so it stays, and the snapshot's force covers it. Safe because replay lets later
 *   records win: every record below K belongs to a commit already in the map (so the snapshot
 *   repeats it, a later record supersedes it, or a commit of its key in flight does) or to a
 *   commit never acknowledged. A commit leaves the in-flight set and enters the map in one
 *   synchronous step, and the snapshot is built and appended in another, so nothing slips between.
 *   A failed compaction deletes nothing. Replay at start reads about the live commits plus two
 *   segments.
 */
import { BooblikError, CorruptRecordError, DamagedEntryError } from "../domain/errors.ts";
import {
  COMMIT_ENTRY_OVERHEAD_BYTES,
  COMMIT_METADATA_BYTES_MAX,
  COMMIT_RECORDS_PER_BATCH_MAX,
  COMMITTED_OFFSETS_BYTES_MAX,
  FETCH_BYTES_DEFAULT,
  GROUP_ID_BYTES_MAX,
  GROUP_RECORD_BYTES_MAX,
  OFFSETS_TOPIC_NAME,
  RECORD_BATCH_OVERHEAD_BYTES,
  RECORD_V2_OVERHEAD_BYTES_MAX,
} from "../domain/limits.ts";
import { encodeBatch, forEachRecord, type RecordInput, recordKey, recordValue } from "../record/batch.ts";
import { newEntryScanResult, scanEntries } from "../record/entries.ts";
import type { RecordsRead } from "../storage/segment.ts";
import type { GroupProtocol, GroupStore, StoredGroup, StoredMember } from "./groups.ts";
import type { Partition } from "./partition.ts";

/** One committed offset, as OffsetFetch answers it. */
export interface CommittedOffset {
  offset: number;
  /** −1: none (booblik stamps no leader epochs, common.md §2). */
  leaderEpoch: number;
  metadata: string | null;
  commitTimestampMs: number;
}

/** One partition's commit, as OffsetCommit carries it. */
export interface OffsetCommitEntry {
  topic: string;
  partition: number;
  offset: number;
  leaderEpoch: number;
  metadata: string | null;
}

interface StoredOffset extends CommittedOffset {
  /** The record's offset in the offsets topic: a record never overwrites a later one. */
  logOffset: number;
}

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder("utf-8", { fatal: true });
const SEPARATOR = "\0";

/** The reason a group id cannot be used, or undefined. */
export function groupIdProblem(groupId: string): string | undefined {
  if (groupId.length === 0) return "the group id is empty";
  if (groupId.includes(SEPARATOR)) return "the group id contains a NUL character";
  if (ENCODER.encode(groupId).length > GROUP_ID_BYTES_MAX)
    return `the group id is longer than ${GROUP_ID_BYTES_MAX} bytes`;
  return undefined;
}

/** The reason commit metadata cannot be stored, or undefined (Kafka: OFFSET_METADATA_TOO_LARGE). */
export function metadataProblem(metadata: string | null): string | undefined {
  if (metadata !== null && ENCODER.encode(metadata).length > COMMIT_METADATA_BYTES_MAX)
    return `commit metadata is longer than ${COMMIT_METADATA_BYTES_MAX} bytes (offset.metadata.max.bytes)`;
  return undefined;
}

function keyOf(group: string, topic: string, partition: number): string {
  return `${group}${SEPARATOR}${topic}${SEPARATOR}${partition}`;
}

/**
 * What one live commit costs in memory, roughly: its key and metadata as UTF-16 strings, and the
 * map entry and offset object around them (COMMIT_ENTRY_OVERHEAD_BYTES).
 */
function commitBytes(key: string, metadata: string | null): number {
  return COMMIT_ENTRY_OVERHEAD_BYTES + 2 * (key.length + (metadata?.length ?? 0));
}

export class OffsetsStore implements GroupStore {
  /** group → "topic\0partition" → committed offset. */
  private readonly groups = new Map<string, Map<string, StoredOffset>>();
  /** group → its coordinator's record (membership, generation) and that record's log offset. */
  private readonly groupRecords = new Map<string, { group: StoredGroup; logOffset: number }>();
  /** Group records the replay could not parse (skipped: their members rejoin). */
  groupRecordsSkipped = 0;
  /** Group records not stored because they exceed GROUP_RECORD_BYTES_MAX (the old one is deleted). */
  groupRecordsTooLarge = 0;
  private readonly partitionOf: () => Partition;
  /** Records replayed at open (for tests and the open report). */
  readonly replayedRecords: number;
  /** Damaged ranges of the offsets topic the replay stepped over (their commits are lost). */
  damagedRangesSkipped = 0;
  /** First log offset of every commit appended and not yet in the map, with how many (compaction keeps them). */
  private readonly inFlight = new Map<number, number>();
  /**
   * Keys of those records ("group\0topic\0partition" for a commit, "group" for a group record),
   * with how many are in flight: a snapshot
   * leaves them out, since the map still holds their older value and repeating it after the newer
   * record would make the older one win (the newer record is ≥ K, so it stays).
   */
  private readonly inFlightKeys = new Map<string, number>();
  /**
   * Keys of deleted topics' commits that are out of the map but whose tombstones are not forced yet
   * (being appended, or their append failed), by topic: forgetTopic writes them again.
   */
  private readonly unforgotten = new Map<string, Set<string>>();
  private compacting = false;
  /** Records appended since the last snapshot (at open: every record replayed). */
  private recordsSinceSnapshot = 0;
  /** Snapshots completed (for tests). */
  compactions = 0;
  /** Bytes of every live commit (`commitBytes`), bounded by `liveBytesMax` on commit. */
  liveBytes = 0;
  private readonly liveBytesMax: number;

  /**
   * Replays the offsets topic's visible records into the map. `partition` gives partition 0 of the
   * offsets topic, creating the topic on first use (so a broker that never saw a group has none).
   * `existing` is that partition when the topic exists at open.
   */
  constructor(
    partitionOf: () => Partition,
    existing: Partition | undefined,
    /** COMMITTED_OFFSETS_BYTES_MAX; tests lower it. */
    liveBytesMax = COMMITTED_OFFSETS_BYTES_MAX,
  ) {
    this.partitionOf = partitionOf;
    this.liveBytesMax = liveBytesMax;
    this.replayedRecords = existing === undefined ? 0 : this.replay(existing);
    this.recordsSinceSnapshot = this.replayedRecords;
  }

  private replay(partition: Partition): number {
    let offset = partition.logStartOffset;
    const end = partition.visibleNextOffset;
    let records = 0;
    const scan = newEntryScanResult();
    while (offset < end) {
      let read: RecordsRead;
      try {
        read = partition.read(offset, FETCH_BYTES_DEFAULT);
      } catch (error) {
        // A damaged range (issue 15): its commits are lost, so the groups it held fall back to their
        // earlier commits (consumers read again, nothing is skipped); refusing to start would stop
        // every partition. The read error named the range in the broker's log of the open.
        if (
          error instanceof DamagedEntryError &&
          error.nextReadableOffset !== undefined &&
          error.nextReadableOffset > offset
        ) {
          this.damagedRangesSkipped++;
          offset = error.nextReadableOffset;
          continue;
        }
        throw error;
      }
      if (read.recordCount === 0) break;
      const bytes = read.records;
      scanEntries(bytes, 0, bytes.length, { framing: "framed", verifyCrc: false }, scan, (_e, start, stop) =>
        forEachRecord(bytes, start, stop, (record) => {
          if (record.offset < offset) return;
          this.apply(recordKey(record), recordValue(record), record.offset, record.timestamp);
          records++;
        }),
      );
      if (scan.stop !== "end")
        throw new CorruptRecordError(
          `${OFFSETS_TOPIC_NAME}: entries stop at byte ${scan.endPosition} of a read from offset ${offset}: ${scan.stop} (${scan.detail})`,
          scan.endPosition,
        );
      offset = read.firstOffset + read.recordCount;
    }
    return records;
  }

  /** Applies one record of the offsets topic (replay, and a commit once forced). */
  private apply(
    key: Uint8Array | null,
    value: Uint8Array | null,
    logOffset: number,
    timestampMs: number,
  ): void {
    if (key === null)
      throw new CorruptRecordError(`${OFFSETS_TOPIC_NAME}: record ${logOffset} has no key`, 0);
    const text = DECODER.decode(key);
    const first = text.indexOf(SEPARATOR);
    if (first < 0) {
      this.applyGroupRecord(text, value, logOffset);
      return;
    }
    const second = text.indexOf(SEPARATOR, first + 1);
    if (first < 1 || second < 0)
      throw new CorruptRecordError(
        `${OFFSETS_TOPIC_NAME}: record ${logOffset} has the key ${JSON.stringify(text)}, not group\\0topic\\0partition`,
        0,
      );
    const group = text.slice(0, first);
    const partitionKey = text.slice(first + 1);
    let offsets = this.groups.get(group);
    const existing = offsets?.get(partitionKey);
    if (existing !== undefined && existing.logOffset > logOffset) return;
    if (existing !== undefined) this.liveBytes -= commitBytes(text, existing.metadata);
    if (value === null) {
      offsets?.delete(partitionKey);
      if (offsets?.size === 0) this.groups.delete(group);
      return;
    }
    const parsed = JSON.parse(DECODER.decode(value)) as Partial<CommittedOffset>;
    if (typeof parsed.offset !== "number")
      throw new CorruptRecordError(
        `${OFFSETS_TOPIC_NAME}: record ${logOffset} has no offset in its value`,
        0,
      );
    if (offsets === undefined) {
      offsets = new Map();
      this.groups.set(group, offsets);
    }
    this.liveBytes += commitBytes(text, parsed.metadata ?? null);
    offsets.set(partitionKey, {
      offset: parsed.offset,
      leaderEpoch: parsed.leaderEpoch ?? -1,
      metadata: parsed.metadata ?? null,
      commitTimestampMs: parsed.commitTimestampMs ?? timestampMs,
      logOffset,
    });
  }

  private applyGroupRecord(group: string, value: Uint8Array | null, logOffset: number): void {
    const existing = this.groupRecords.get(group);
    if (existing !== undefined && existing.logOffset > logOffset) return;
    if (value === null) {
      this.groupRecords.delete(group);
      return;
    }
    const parsed = parseStoredGroup(value);
    if (parsed === undefined) {
      this.groupRecordsSkipped++;
      this.groupRecords.delete(group);
      return;
    }
    this.groupRecords.set(group, { group: parsed, logOffset });
  }

  /** GroupStore: whether the group has a record, forced or being appended. */
  hasGroupRecord(group: string): boolean {
    return this.groupRecords.has(group) || this.inFlightKeys.has(group);
  }

  /** GroupStore: the groups whose records are in the log and forced. */
  storedGroups(): ReadonlyMap<string, StoredGroup> {
    const groups = new Map<string, StoredGroup>();
    for (const [id, { group }] of this.groupRecords) groups.set(id, group);
    return groups;
  }

  /**
   * GroupStore: appends a group's record (null: a tombstone, only when it has a record or one is in
   * flight); resolves after the force. A record above GROUP_RECORD_BYTES_MAX is not stored: the
   * old one is deleted instead, so that a restart never brings back members the group no longer
   * has; that group's members rejoin after a restart.
   */
  async storeGroup(group: string, record: StoredGroup | null): Promise<void> {
    let value: Uint8Array | null =
      record === null ? null : ENCODER.encode(JSON.stringify(jsonOfGroup(record)));
    if (value !== null && value.length > GROUP_RECORD_BYTES_MAX) {
      this.groupRecordsTooLarge++;
      console.error(
        `booblik: group ${JSON.stringify(group)} is not stored: its members' metadata take ${value.length} bytes, more than ${GROUP_RECORD_BYTES_MAX}; its members rejoin after a restart of the broker`,
      );
      value = null;
    }
    if (value === null && !this.groupRecords.has(group) && !this.inFlightKeys.has(group)) return;
    await this.appendRecords([{ key: ENCODER.encode(group), value, timestamp: Date.now() }]);
  }

  /**
   * Stores the commits of one group; resolves after a force covered them (then OffsetFetch answers
   * them). Whole request or nothing. Callers check group ids and metadata first (groupIdProblem,
   * metadataProblem); this throws INVALID_ARGUMENT for what they missed.
   */
  async commit(group: string, entries: readonly OffsetCommitEntry[], nowMs = Date.now()): Promise<void> {
    if (entries.length === 0) return;
    const problem = groupIdProblem(group);
    if (problem !== undefined) throw new BooblikError("INVALID_ARGUMENT", problem);
    // All live commits together stay within COMMITTED_OFFSETS_BYTES_MAX (they are all in memory,
    // and replayed at every start): 2,000 groups of 256 partitions with 4 KiB of metadata each took
    // a broker to 2.9 GiB and its next start to 7.7 s (a helper's run, 2026-12-03). Growth only:
    // a commit that replaces as much as it adds always goes through.
    let growth = 0;
    const offsets = this.groups.get(group);
    for (const entry of entries) {
      const key = keyOf(group, entry.topic, entry.partition);
      const existing = offsets?.get(key.slice(group.length + 1));
      growth +=
        commitBytes(key, entry.metadata) - (existing === undefined ? 0 : commitBytes(key, existing.metadata));
    }
    if (growth > 0 && this.liveBytes + growth > this.liveBytesMax)
      throw new BooblikError(
        "LIMIT_EXCEEDED",
        `the committed offsets of all groups would take more than ${this.liveBytesMax} bytes (COMMITTED_OFFSETS_BYTES_MAX; they take ${this.liveBytes}): delete groups no longer used, or commit less metadata`,
      );
    const records: RecordInput[] = entries.map((entry) => {
      const metadataTooLarge = metadataProblem(entry.metadata);
      if (metadataTooLarge !== undefined) throw new BooblikError("INVALID_ARGUMENT", metadataTooLarge);
      const value: CommittedOffset = {
        offset: entry.offset,
        leaderEpoch: entry.leaderEpoch,
        metadata: entry.metadata,
        commitTimestampMs: nowMs,
      };
      return {
        key: ENCODER.encode(keyOf(group, entry.topic, entry.partition)),
        value: ENCODER.encode(JSON.stringify(value)),
        timestamp: nowMs,
      };
    });
    await this.appendRecords(records);
  }

  /**
   * Deletes every committed offset of a group and its coordinator's record (tombstones); resolves
   * after the force.
   */
  async deleteGroup(group: string): Promise<void> {
    const offsets = this.groups.get(group);
    const nowMs = Date.now();
    const records: RecordInput[] = [...(offsets?.keys() ?? [])].map((partitionKey) => ({
      key: ENCODER.encode(`${group}${SEPARATOR}${partitionKey}`),
      value: null,
      timestamp: nowMs,
    }));
    if (this.groupRecords.has(group) || this.inFlightKeys.has(group))
      records.push({ key: ENCODER.encode(group), value: null, timestamp: nowMs });
    if (records.length > 0) await this.appendInChunks(records);
  }

  /**
   * Deletes the committed offsets of these partitions of a group (tombstones of those that exist;
   * Kafka's OffsetDelete); resolves after the force.
   */
  async deleteOffsets(
    group: string,
    partitions: readonly { topic: string; partition: number }[],
  ): Promise<void> {
    const offsets = this.groups.get(group);
    if (offsets === undefined) return;
    const nowMs = Date.now();
    const records: RecordInput[] = [];
    for (const { topic, partition } of partitions) {
      const key = keyOf(group, topic, partition);
      if (offsets.has(key.slice(group.length + 1)))
        records.push({ key: ENCODER.encode(key), value: null, timestamp: nowMs });
    }
    if (records.length > 0) await this.appendRecords(records);
  }

  private async appendRecords(records: readonly RecordInput[]): Promise<void> {
    const batches: Uint8Array[] = [];
    for (let start = 0; start < records.length; start += COMMIT_RECORDS_PER_BATCH_MAX)
      batches.push(encodeBatch(records.slice(start, start + COMMIT_RECORDS_PER_BATCH_MAX)));
    const bytes = batches.length === 1 ? batches[0]! : concat(batches);
    const partition = this.partitionOf();
    // appendInternal appends synchronously before its first await: from here the records are in
    // the log but not forced (inFlight keeps compaction away until they are in the map).
    const firstOffset = partition.log.nextOffset;
    // Counted: an append that fails without writing leaves nextOffset where it was, so the next
    // one, started before this settles, takes the same first offset. A Set let the failed one's
    // `finally` remove the other's mark, and a compaction then deleted that commit, acknowledged
    // a moment later (test/broker/offsets-failed-commit-compaction.test.ts).
    this.inFlight.set(firstOffset, (this.inFlight.get(firstOffset) ?? 0) + 1);
    const keys = records.map((record) => DECODER.decode(record.key!));
    for (const key of keys) this.inFlightKeys.set(key, (this.inFlightKeys.get(key) ?? 0) + 1);
    let ack: Awaited<ReturnType<Partition["appendInternal"]>>;
    try {
      ack = await partition.appendInternal(bytes);
    } finally {
      const left = this.inFlight.get(firstOffset)! - 1;
      if (left === 0) this.inFlight.delete(firstOffset);
      else this.inFlight.set(firstOffset, left);
      for (const key of keys) {
        const count = this.inFlightKeys.get(key)! - 1;
        if (count === 0) this.inFlightKeys.delete(key);
        else this.inFlightKeys.set(key, count);
      }
    }
    this.recordsSinceSnapshot += records.length;
    // Forced: now the map may say so. Records in order, offsets from the acknowledgement.
    let logOffset = ack.firstOffset;
    for (const record of records) this.apply(record.key, record.value, logOffset++, record.timestamp);
    this.maybeCompact(partition);
  }

  private liveCount(): number {
    let count = this.groupRecords.size;
    for (const offsets of this.groups.values()) count += offsets.size;
    return count;
  }

  /** Starts a compaction when it is due and safe (see the header); never waits, never throws. */
  private maybeCompact(partition: Partition): void {
    if (this.compacting || partition.log.segmentCount < 3) return;
    const live = this.liveCount();
    if (this.recordsSinceSnapshot < Math.max(live, 1)) return;
    const records: RecordInput[] = [];
    for (const [group, offsets] of this.groups) {
      for (const [partitionKey, stored] of offsets) {
        if (this.inFlightKeys.has(`${group}${SEPARATOR}${partitionKey}`)) continue;
        records.push({
          key: ENCODER.encode(`${group}${SEPARATOR}${partitionKey}`),
          value: ENCODER.encode(JSON.stringify(publicOf(stored))),
          timestamp: stored.commitTimestampMs,
        });
      }
    }
    for (const [group, { group: record }] of this.groupRecords) {
      if (this.inFlightKeys.has(group)) continue;
      records.push({
        key: ENCODER.encode(group),
        value: ENCODER.encode(JSON.stringify(jsonOfGroup(record))),
        timestamp: Date.now(),
      });
    }
    this.compacting = true;
    // K: below the snapshot, and below every commit not yet in the map.
    let keepFrom: number = partition.log.nextOffset;
    for (const offset of this.inFlight.keys()) keepFrom = Math.min(keepFrom, offset);
    let snapshot: Promise<number>;
    if (records.length === 0) {
      // Nothing live: every record below K is garbage.
      snapshot = Promise.resolve(keepFrom);
    } else {
      // One append per batch, all started in this synchronous step: a snapshot larger than a
      // segment still fits (one append must fit one segment), and they share the next force.
      const appends: Promise<void>[] = [];
      for (const chunk of snapshotChunks(records, partition.maxRecordBytes)) {
        appends.push(
          partition.appendInternal(encodeBatch(chunk)).then((ack) => {
            let logOffset = ack.firstOffset;
            for (const record of chunk) this.apply(record.key, record.value, logOffset++, record.timestamp);
          }),
        );
      }
      snapshot = Promise.all(appends).then(() => keepFrom);
    }
    this.recordsSinceSnapshot = 0;
    snapshot
      .then((snapshotOffset) => {
        partition.log.applyRetention({ retentionBytes: 0, keepFromOffset: snapshotOffset });
        this.compactions++;
      })
      .catch(() => {
        // The partition failed (it refuses appends with the cause from now on) or the broker is
        // closing: nothing was deleted, the next commit says what is wrong.
        this.recordsSinceSnapshot = 0;
      })
      .finally(() => {
        this.compacting = false;
      });
  }

  /** The committed offset of one partition, or undefined. */
  committed(group: string, topic: string, partition: number): CommittedOffset | undefined {
    const stored = this.groups.get(group)?.get(`${topic}${SEPARATOR}${partition}`);
    return stored === undefined ? undefined : publicOf(stored);
  }

  /** Every committed offset of a group, by topic and partition (sorted). */
  committedOf(group: string): { topic: string; partition: number; committed: CommittedOffset }[] {
    const offsets = this.groups.get(group);
    if (offsets === undefined) return [];
    return [...offsets]
      .map(([partitionKey, stored]) => {
        const at = partitionKey.lastIndexOf(SEPARATOR);
        return {
          topic: partitionKey.slice(0, at),
          partition: Number(partitionKey.slice(at + 1)),
          committed: publicOf(stored),
        };
      })
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }

  /** Whether the group has a committed offset. */
  hasCommits(group: string): boolean {
    return (this.groups.get(group)?.size ?? 0) > 0;
  }

  /** Groups that have committed offsets. */
  groupIds(): string[] {
    return [...this.groups.keys()].sort();
  }

  /**
   * Forgets every committed offset of `topic`, a topic just deleted: from the map at once (so
   * OffsetFetch answers none from here on), and by tombstones in the log, commits still in flight
   * included; resolves after the force that covers them. Kafka removes a deleted topic's offsets
   * from every group too (GroupCoordinator `onPartitionsDeleted`). Without it, a topic created
   * again under the name started each group at the old topic's offsets, and its consumers skipped
   * the new topic's first records silently (a helper's run, 2026-12-03).
   *
   * When the tombstones fail (a full disk, a failed force), the keys are kept and the next call for
   * the topic writes them again: the map no longer holds them, but the log still does, and a
   * restart would bring them back. Returns how many keys it tombstoned.
   */
  async forgetTopic(topic: string): Promise<number> {
    const keys = this.keysOfTopic(topic);
    if (keys.size === 0) return 0;
    for (const key of keys) {
      const at = key.indexOf(SEPARATOR);
      const group = key.slice(0, at);
      const offsets = this.groups.get(group);
      const stored = offsets?.get(key.slice(at + 1));
      if (offsets === undefined || stored === undefined) continue;
      this.liveBytes -= commitBytes(key, stored.metadata);
      offsets.delete(key.slice(at + 1));
      if (offsets.size === 0) this.groups.delete(group);
    }
    // A copy: a later call's keys may join it, and each chunk forced below removes only its own.
    this.unforgotten.set(topic, new Set(keys));
    const nowMs = Date.now();
    const records = [...keys].map((key) => ({ key: ENCODER.encode(key), value: null, timestamp: nowMs }));
    await this.appendInChunks(records, (chunk) => {
      const left = this.unforgotten.get(topic);
      if (left === undefined) return;
      for (const record of chunk) left.delete(DECODER.decode(record.key!));
      if (left.size === 0) this.unforgotten.delete(topic);
    });
    return keys.size;
  }

  /**
   * Appends `records` (tombstones: each stands alone, no atomicity needed across them) in appends
   * that each fit the offsets topic's batch limit (`snapshotChunks`), all started in one
   * synchronous step so that they share forces; `forced` runs per chunk once its force completed.
   * One append of them all must fit one empty segment (8 MiB): a topic committed by 100 groups on
   * 1,000 partitions needed more, and its delete could never finish (a reviewer's run, 2026-12-03).
   */
  private async appendInChunks(
    records: readonly RecordInput[],
    forced: (chunk: readonly RecordInput[]) => void = () => {},
  ): Promise<void> {
    const partition = this.partitionOf();
    await Promise.all(
      snapshotChunks(records, partition.maxRecordBytes).map((chunk) =>
        this.appendRecords(chunk).then(() => forced(chunk)),
      ),
    );
  }

  /** Whether anything of `topic` is committed: in the map, in flight, or with tombstones not forced. */
  holdsCommitsOf(topic: string): boolean {
    return this.keysOfTopic(topic).size > 0;
  }

  /**
   * The keys of every commit of `topic`: in the map, in flight (a commit appended, not yet forced,
   * gets a tombstone after it in the log; its force comes first, since GroupCommit resolves waiters
   * in the order they queued, so the map takes it and then the tombstone:
   * test/broker/offsets-store.test.ts), and those whose tombstones are not forced yet.
   */
  private keysOfTopic(topic: string): Set<string> {
    const keys = new Set(this.unforgotten.get(topic));
    for (const [group, offsets] of this.groups)
      for (const partitionKey of offsets.keys())
        if (partitionKey.slice(0, partitionKey.lastIndexOf(SEPARATOR)) === topic)
          keys.add(`${group}${SEPARATOR}${partitionKey}`);
    for (const key of this.inFlightKeys.keys()) if (topicOfKey(key) === topic) keys.add(key);
    return keys;
  }
}

/** The topic of an offset's key ("group\0topic\0partition"), or undefined for a group record's key. */
function topicOfKey(key: string): string | undefined {
  const first = key.indexOf(SEPARATOR);
  const last = key.lastIndexOf(SEPARATOR);
  return first < 0 || last === first ? undefined : key.slice(first + 1, last);
}

/**
 * The snapshot's records in batches that each fit the offsets topic's batch limit: at most
 * COMMIT_RECORDS_PER_BATCH_MAX records, and at most `maxBatchBytes` by a bound that is never below
 * the encoded size (key, value, and RECORD_V2_OVERHEAD_BYTES_MAX per record for its varints, plus
 * the batch header). Counting records alone was sized for commits (≤ ~26 KiB each); group records
 * are up to GROUP_RECORD_BYTES_MAX, and 32 of 40 KiB made a batch over 1 MiB that the append
 * refused, at every try, so the topic was never compacted again (a reviewer's run, 2026-12-03).
 * A record too large for a batch of its own gets one, and its append fails as it would have.
 */
function snapshotChunks(records: readonly RecordInput[], maxBatchBytes: number): RecordInput[][] {
  const chunks: RecordInput[][] = [];
  let chunk: RecordInput[] = [];
  let bytes = RECORD_BATCH_OVERHEAD_BYTES;
  for (const record of records) {
    const size = (record.key?.length ?? 0) + (record.value?.length ?? 0) + RECORD_V2_OVERHEAD_BYTES_MAX;
    if (chunk.length > 0 && (chunk.length >= COMMIT_RECORDS_PER_BATCH_MAX || bytes + size > maxBatchBytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = RECORD_BATCH_OVERHEAD_BYTES;
    }
    chunk.push(record);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function base64Of(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

function jsonOfGroup(group: StoredGroup): unknown {
  return {
    protocolType: group.protocolType,
    protocol: group.protocol,
    generationId: group.generationId,
    leaderId: group.leaderId,
    members: group.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      protocols: m.protocols.map((p) => ({ name: p.name, metadata: base64Of(p.metadata) })),
      assignment: base64Of(m.assignment),
    })),
  };
}

const isString = (x: unknown): x is string => typeof x === "string";
const isCount = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;

/** A group record's value, or undefined when any field is missing or of the wrong type. */
function parseStoredGroup(value: Uint8Array): StoredGroup | undefined {
  let json: unknown;
  try {
    json = JSON.parse(DECODER.decode(value));
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null) return undefined;
  const g = json as Record<string, unknown>;
  if (!isString(g.protocolType) || !isString(g.protocol) || !isString(g.leaderId)) return undefined;
  if (!isCount(g.generationId) || !Array.isArray(g.members)) return undefined;
  const members: StoredMember[] = [];
  for (const item of g.members as unknown[]) {
    if (typeof item !== "object" || item === null) return undefined;
    const m = item as Record<string, unknown>;
    if (!isString(m.memberId) || !isString(m.clientId) || !isString(m.clientHost)) return undefined;
    if (m.groupInstanceId !== null && !isString(m.groupInstanceId)) return undefined;
    if (!isCount(m.sessionTimeoutMs) || !isCount(m.rebalanceTimeoutMs) || !isString(m.assignment))
      return undefined;
    if (!Array.isArray(m.protocols)) return undefined;
    const protocols: GroupProtocol[] = [];
    for (const p of m.protocols as unknown[]) {
      if (typeof p !== "object" || p === null) return undefined;
      const { name, metadata } = p as Record<string, unknown>;
      if (!isString(name) || !isString(metadata)) return undefined;
      protocols.push({ name, metadata: new Uint8Array(Buffer.from(metadata, "base64")) });
    }
    members.push({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      protocols,
      assignment: new Uint8Array(Buffer.from(m.assignment, "base64")),
    });
  }
  return {
    protocolType: g.protocolType,
    protocol: g.protocol,
    generationId: g.generationId,
    leaderId: g.leaderId,
    members,
  };
}

function publicOf(stored: StoredOffset): CommittedOffset {
  return {
    offset: stored.offset,
    leaderEpoch: stored.leaderEpoch,
    metadata: stored.metadata,
    commitTimestampMs: stored.commitTimestampMs,
  };
}

function concat(pieces: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const piece of pieces) length += piece.length;
  const joined = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    joined.set(piece, at);
    at += piece.length;
  }
  return joined;
}
