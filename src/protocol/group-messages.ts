/**
 * Payloads of the group APIs of the native protocol: LIST_GROUPS (8), OFFSET_COMMIT (9),
 * OFFSET_FETCH (10) and DELETE_GROUP (11). Byte tables in docs/protocol.md ("Groups and committed offsets");
 * field order here is the order on the wire. The offsets themselves live in the broker's
 * OffsetsStore (src/broker/offsets-store.ts), shared with the Kafka listener's OffsetCommit and
 * OffsetFetch: a group committed over one protocol is read over the other.
 *
 * Invariants: a decoder consumes its frame exactly (leftover bytes are an error); a count is
 * checked against the bytes left before anything is allocated for it, so a hostile count cannot
 * make the broker allocate more than the frame holds. Group ids, metadata sizes and topic names
 * are checked by the server (their limits are the store's), not here: the codec only says what
 * the bytes are.
 */
import { type ByteReader, type ByteWriter, ProtocolError } from "./buffer.ts";
import { API } from "./frame.ts";
import { beginRequest, beginResponse, endFrame } from "./messages.ts";

/** One partition's commit in an OFFSET_COMMIT. */
export interface OffsetCommitItem {
  topic: string;
  partition: number;
  /** The next offset the group is to consume (Kafka's convention: last processed + 1). */
  offset: number;
  /** Free text stored with the offset; "" for none. At most COMMIT_METADATA_BYTES_MAX bytes. */
  metadata: string;
}

export interface OffsetCommitRequest {
  group: string;
  offsets: OffsetCommitItem[];
}

export interface OffsetFetchTopic {
  topic: string;
  /** Partitions to answer; empty means every partition of the topic. */
  partitions: number[];
}

export interface OffsetFetchRequest {
  group: string;
  /** Topics to answer; empty means every offset the group has committed. */
  topics: OffsetFetchTopic[];
}

/** One partition's committed offset in an OFFSET_FETCH answer. */
export interface FetchedOffset {
  topic: string;
  partition: number;
  /** The committed offset, or −1 when the group committed none for this partition. */
  offset: number;
  /** When the broker stored the commit (ms since the epoch); −1 with offset −1. */
  commitTimestampMs: number;
  /** The commit's metadata; "" when none. */
  metadata: string;
}

export interface DeleteGroupRequest {
  group: string;
}

/** Smallest encoded OFFSET_COMMIT item: topic length (2), partition (4), offset (8), metadata length (2). */
const COMMIT_ITEM_BYTES_MIN = 2 + 4 + 8 + 2;
/** Smallest encoded OFFSET_FETCH topic: name length (2), partition count (4). */
const FETCH_TOPIC_BYTES_MIN = 2 + 4;
/** Smallest encoded OFFSET_FETCH answer entry: topic (2), partition (4), offset (8), time (8), metadata (2). */
const FETCHED_OFFSET_BYTES_MIN = 2 + 4 + 8 + 8 + 2;

function checkCount(reader: ByteReader, count: number, itemBytesMin: number, what: string): void {
  if (count > reader.remaining / itemBytesMin)
    throw new ProtocolError(
      `${what} count ${count} at byte ${reader.framePosition - 4} cannot fit in the ${reader.remaining} bytes left in the frame`,
    );
}

// --- LIST_GROUPS (8) -----------------------------------------------------------------------------------

/** One group as LIST_GROUPS answers it. */
export interface ListedGroup {
  group: string;
  /** Partitions the group has a committed offset for. */
  committedPartitions: number;
  /** Members connected through the broker's Kafka listener. */
  kafkaMembers: number;
}

/** Smallest encoded LIST_GROUPS entry: group length (2), two counts (4 + 4). */
const LISTED_GROUP_BYTES_MIN = 2 + 4 + 4;

export function encodeListGroupsRequest(writer: ByteWriter, correlationId: number): void {
  const start = beginRequest(writer, API.LIST_GROUPS, correlationId);
  endFrame(writer, start);
}

export function encodeListGroupsResponse(
  writer: ByteWriter,
  correlationId: number,
  groups: readonly ListedGroup[],
): void {
  const start = beginResponse(writer, correlationId);
  writer.u32(groups.length);
  for (const group of groups)
    writer.string(group.group).u32(group.committedPartitions).u32(group.kafkaMembers);
  endFrame(writer, start);
}

export function decodeListGroupsResponse(reader: ByteReader): ListedGroup[] {
  const count = reader.u32("group count");
  checkCount(reader, count, LISTED_GROUP_BYTES_MIN, "group");
  const groups: ListedGroup[] = [];
  for (let i = 0; i < count; i++) {
    groups.push({
      group: reader.string("group"),
      committedPartitions: reader.u32("committedPartitions"),
      kafkaMembers: reader.u32("kafkaMembers"),
    });
  }
  reader.expectEnd("LIST_GROUPS response");
  return groups;
}

// --- OFFSET_COMMIT (9) ---------------------------------------------------------------------------------

export function encodeOffsetCommitRequest(
  writer: ByteWriter,
  correlationId: number,
  request: OffsetCommitRequest,
): void {
  const start = beginRequest(writer, API.OFFSET_COMMIT, correlationId);
  writer.string(request.group).u32(request.offsets.length);
  for (const item of request.offsets)
    writer.string(item.topic).u32(item.partition).u64(item.offset).string(item.metadata);
  endFrame(writer, start);
}

export function decodeOffsetCommitRequest(reader: ByteReader): OffsetCommitRequest {
  const group = reader.string("group");
  const count = reader.u32("offset count");
  checkCount(reader, count, COMMIT_ITEM_BYTES_MIN, "offset");
  const offsets: OffsetCommitItem[] = [];
  for (let i = 0; i < count; i++) {
    offsets.push({
      topic: reader.string("topic"),
      partition: reader.u32("partition"),
      offset: reader.u64("offset"),
      metadata: reader.string("metadata"),
    });
  }
  reader.expectEnd("OFFSET_COMMIT request");
  return { group, offsets };
}

// The response has an empty payload: a commit is stored whole or not at all.

// --- OFFSET_FETCH (10) ---------------------------------------------------------------------------------

export function encodeOffsetFetchRequest(
  writer: ByteWriter,
  correlationId: number,
  request: OffsetFetchRequest,
): void {
  const start = beginRequest(writer, API.OFFSET_FETCH, correlationId);
  writer.string(request.group).u32(request.topics.length);
  for (const topic of request.topics) {
    writer.string(topic.topic).u32(topic.partitions.length);
    for (const partition of topic.partitions) writer.u32(partition);
  }
  endFrame(writer, start);
}

export function decodeOffsetFetchRequest(reader: ByteReader): OffsetFetchRequest {
  const group = reader.string("group");
  const topicCount = reader.u32("topic count");
  checkCount(reader, topicCount, FETCH_TOPIC_BYTES_MIN, "topic");
  const topics: OffsetFetchTopic[] = [];
  for (let t = 0; t < topicCount; t++) {
    const topic = reader.string("topic");
    const partitionCount = reader.u32("partition count");
    checkCount(reader, partitionCount, 4, "partition");
    const partitions: number[] = [];
    for (let p = 0; p < partitionCount; p++) partitions.push(reader.u32("partition"));
    topics.push({ topic, partitions });
  }
  reader.expectEnd("OFFSET_FETCH request");
  return { group, topics };
}

export function encodeOffsetFetchResponse(
  writer: ByteWriter,
  correlationId: number,
  offsets: readonly FetchedOffset[],
): void {
  const start = beginResponse(writer, correlationId);
  writer.u32(offsets.length);
  for (const entry of offsets) {
    writer
      .string(entry.topic)
      .u32(entry.partition)
      .i64(entry.offset)
      .i64(entry.commitTimestampMs)
      .string(entry.metadata);
  }
  endFrame(writer, start);
}

export function decodeOffsetFetchResponse(reader: ByteReader): FetchedOffset[] {
  const count = reader.u32("offset count");
  checkCount(reader, count, FETCHED_OFFSET_BYTES_MIN, "offset");
  const offsets: FetchedOffset[] = [];
  for (let i = 0; i < count; i++) {
    offsets.push({
      topic: reader.string("topic"),
      partition: reader.u32("partition"),
      offset: reader.i64("offset"),
      commitTimestampMs: reader.i64("commitTimestampMs"),
      metadata: reader.string("metadata"),
    });
  }
  reader.expectEnd("OFFSET_FETCH response");
  return offsets;
}

// --- DELETE_GROUP (11) ---------------------------------------------------------------------------------

export function encodeDeleteGroupRequest(
  writer: ByteWriter,
  correlationId: number,
  request: DeleteGroupRequest,
): void {
  const start = beginRequest(writer, API.DELETE_GROUP, correlationId);
  writer.string(request.group);
  endFrame(writer, start);
}

export function decodeDeleteGroupRequest(reader: ByteReader): DeleteGroupRequest {
  const group = reader.string("group");
  reader.expectEnd("DELETE_GROUP request");
  return { group };
}
