/**
 * The console's view of consumer groups: the listing and one group's members, committed offsets
 * and lag, from the Kafka listener's coordinator (src/broker/groups.ts: live members, in memory)
 * and the broker's OffsetsStore (src/broker/offsets-store.ts: committed offsets, durable, written
 * by Kafka's OffsetCommit and the native OFFSET_COMMIT alike). A group exists for the console when
 * either knows it, as for Kafka's ListGroups: a group with only committed offsets is "Empty".
 *
 * Lag of a partition = its visible next offset (what a consumer can read; under `force` the durable
 * end) − the committed offset, at least 0: the same figure as /metrics' booblik_group_lag. A commit
 * for a topic that no longer exists (or a partition beyond its count) has no lag (null) and adds
 * nothing to the group's total.
 *
 * Owns: nothing but the computation; reads only, writes nothing.
 */
import type { Broker } from "../broker/broker.ts";
import type { GroupDescription, GroupSummary } from "../broker/groups.ts";
import { UnknownTopicOrPartitionError } from "../domain/errors.ts";
import type { AssignedPartitions, GroupDetail, GroupOffsetRow, GroupRow } from "./api-types.ts";

/** What the console reads of the Kafka listener's coordinator (GroupCoordinator has both). */
export interface ConsoleGroupsView {
  list(): GroupSummary[];
  describe(groupId: string): GroupDescription | undefined;
}

const DECODER = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes Kafka's ConsumerProtocolAssignment (versions 0-3 share this prefix: INT16 version, then
 * an INT32-counted array of { STRING topic, INT32-counted array of INT32 partition }, then user
 * data, which is skipped). Returns undefined for bytes that do not hold it whole: an assignor of
 * another protocol type, or a member that has none yet (empty bytes). Never throws.
 */
export function decodeConsumerAssignment(bytes: Uint8Array): AssignedPartitions[] | undefined {
  if (bytes.length < 6) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 2;
  const topicCount = view.getInt32(at);
  at += 4;
  // Each topic takes at least 6 bytes: a count beyond what is left is not this format.
  if (topicCount < 0 || topicCount * 6 > bytes.length - at) return undefined;
  const topics: AssignedPartitions[] = [];
  for (let t = 0; t < topicCount; t++) {
    if (at + 2 > bytes.length) return undefined;
    const nameBytes = view.getInt16(at);
    at += 2;
    if (nameBytes < 0 || at + nameBytes + 4 > bytes.length) return undefined;
    let topic: string;
    try {
      topic = DECODER.decode(bytes.subarray(at, at + nameBytes));
    } catch {
      return undefined;
    }
    at += nameBytes;
    const partitionCount = view.getInt32(at);
    at += 4;
    if (partitionCount < 0 || at + partitionCount * 4 > bytes.length) return undefined;
    const partitions: number[] = [];
    for (let p = 0; p < partitionCount; p++, at += 4) partitions.push(view.getInt32(at));
    topics.push({ topic, partitions });
  }
  return topics;
}

/** The visible next offset of a partition, or null when the topic or partition is gone. */
function nextOffsetOf(broker: Broker, topic: string, partition: number): number | null {
  try {
    return broker.partition(topic, partition).visibleNextOffset;
  } catch (error) {
    if (error instanceof UnknownTopicOrPartitionError) return null;
    throw error;
  }
}

/**
 * Which topics a reader may see (topic DESCRIBE, as OffsetFetch filters a group's offsets on both
 * protocols); every topic when no ACLs apply.
 */
export type TopicVisible = (topic: string) => boolean;
const EVERY_TOPIC: TopicVisible = () => true;

/** A group's committed offsets with their lag, sorted by topic and partition; only visible topics. */
export function groupOffsets(
  broker: Broker,
  group: string,
  visible: TopicVisible = EVERY_TOPIC,
): GroupOffsetRow[] {
  const committed = broker.offsets.committedOf(group);
  const shown = visible === EVERY_TOPIC ? committed : committed.filter(({ topic }) => visible(topic));
  return shown.map(({ topic, partition, committed }) => {
    const nextOffset = nextOffsetOf(broker, topic, partition);
    return {
      topic,
      partition,
      committedOffset: committed.offset,
      nextOffset,
      lag: nextOffset === null ? null : Math.max(0, nextOffset - committed.offset),
      metadata: committed.metadata,
      commitTimestampMs: committed.commitTimestampMs,
    };
  });
}

function totalLag(rows: readonly GroupOffsetRow[]): number {
  let sum = 0;
  for (const row of rows) sum += row.lag ?? 0;
  return sum;
}

function groupNames(broker: Broker, coordinator: ConsoleGroupsView | undefined): string[] {
  const names = new Set(broker.offsets.groupIds());
  for (const summary of coordinator?.list() ?? []) names.add(summary.groupId);
  return [...names].sort();
}

/**
 * The total lag of the first groups by name, while their committed partitions add up to at most
 * `partitionsMax` (the console's per-tick lag history: bounded work, see CONSOLE_LAG_PARTITIONS_MAX).
 */
export function groupLags(
  broker: Broker,
  coordinator: ConsoleGroupsView | undefined,
  partitionsMax: number,
): Map<string, number> {
  const lags = new Map<string, number>();
  let partitions = 0;
  for (const group of groupNames(broker, coordinator)) {
    const committed = broker.offsets.committedOf(group);
    partitions += committed.length;
    if (partitions > partitionsMax) break;
    let lag = 0;
    for (const { topic, partition, committed: offset } of committed) {
      const nextOffset = nextOffsetOf(broker, topic, partition);
      if (nextOffset !== null) lag += Math.max(0, nextOffset - offset.offset);
    }
    lags.set(group, lag);
  }
  return lags;
}

/** Every group the coordinator or the offsets store knows, sorted by name. */
export function groupRows(
  broker: Broker,
  coordinator: ConsoleGroupsView | undefined,
  visible: TopicVisible = EVERY_TOPIC,
): GroupRow[] {
  const live = new Map<string, GroupSummary>();
  for (const summary of coordinator?.list() ?? []) live.set(summary.groupId, summary);
  return groupNames(broker, coordinator).map((group) => {
    const summary = live.get(group);
    const offsets = groupOffsets(broker, group, visible);
    return {
      group,
      state: summary?.state ?? "Empty",
      protocolType: summary?.protocolType ?? "",
      members: summary === undefined ? 0 : (coordinator?.describe(group)?.members.length ?? 0),
      committedPartitions: offsets.length,
      lag: totalLag(offsets),
    };
  });
}

/** One group's members, committed offsets and lag; undefined when neither source knows it. */
export function groupDetail(
  broker: Broker,
  coordinator: ConsoleGroupsView | undefined,
  group: string,
  visible: TopicVisible = EVERY_TOPIC,
): GroupDetail | undefined {
  const description = coordinator?.describe(group);
  const offsets = groupOffsets(broker, group, visible);
  // A group whose commits are all of hidden topics still exists (the groups list shows it).
  if (description === undefined && offsets.length === 0 && broker.offsets.committedOf(group).length === 0)
    return undefined;
  const consumer = description?.protocolType === "consumer";
  return {
    group,
    state: description?.state ?? "Empty",
    protocolType: description?.protocolType ?? "",
    protocol: description?.protocol ?? "",
    generationId: description?.generationId ?? null,
    members: (description?.members ?? []).map((member) => ({
      memberId: member.memberId,
      groupInstanceId: member.groupInstanceId,
      clientId: member.clientId,
      clientHost: member.clientHost,
      assignment: consumer ? (decodeConsumerAssignment(member.assignment) ?? null) : null,
      assignmentBytes: member.assignment.length,
    })),
    offsets,
    lag: totalLag(offsets),
  };
}
