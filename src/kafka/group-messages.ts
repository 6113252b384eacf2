/**
 * Request decoders and response encoders of the Kafka group APIs booblik's listener speaks, sans
 * I/O: OffsetCommit (8) 0-8, OffsetFetch (9) 0-7, JoinGroup (11) 0-9, Heartbeat (12) 0-4,
 * LeaveGroup (13) 0-5, SyncGroup (14) 0-5, DescribeGroups (15) 0-6, ListGroups (16) 0-5: the
 * non-flexible versions, which cover what kcat (librdkafka 2.0.2) and kafkajs 2.2.4 send
 * (kafka-wire.md §1.2), and the flexible ones up to what the Java client 4.1.1 picks against Kafka
 * (JoinGroup 9 with KIP-814's skip_assignment, SyncGroup 5 with protocol type and name, OffsetFetch
 * 7 with require_stable; one body per API, VersionedReader/VersionedWriter choosing the field forms),
 * not the versions that batch groups (OffsetFetch 8+) or carry KIP-848 member epochs
 * (OffsetCommit 9+). DescribeGroups' v6 answers an unknown group GROUP_ID_NOT_FOUND (KIP-1043), the
 * answer the Java client 4.x turns into GroupIdNotFoundException as Kafka 4.x gives it (the
 * differential run, docs/kafka.md); ListGroups' v4-5 filter by state and type, which the Java
 * client needs to list groups by state (`kafka-consumer-groups.sh --list --state`).
 * FindCoordinator is in messages.ts. Field lists follow apache/kafka's message JSON files (clients/src/main/resources/common/message/<Name>Request.json and
 * <Name>Response.json); "(vN+)" marks a field that exists from version N on.
 *
 * Invariants: as messages.ts (a decoder reads exactly its request or throws KafkaProtocolError with
 * the byte position; byte fields are views into the frame; an encoder writes a whole frame).
 */
import {
  beginResponse,
  endResponse,
  isFlexible,
  KAFKA_API,
  type KafkaApiKey,
  responseHeaderVersion,
} from "./apis.ts";
import { type KafkaReader, type KafkaWriter, VersionedReader, VersionedWriter } from "./codec.ts";

const STRING_BYTES_MIN = 2;
/** A compact string's length varint (1 byte at least). */
const COMPACT_STRING_BYTES_MIN = 1;
const INT32_BYTES = 4;
const BYTES_MIN = 4;

function begin(writer: KafkaWriter, apiKey: KafkaApiKey, version: number, correlationId: number): number {
  return beginResponse(writer, correlationId, responseHeaderVersion(apiKey, version));
}

// --- JoinGroup (11) ------------------------------------------------------------------------------

export interface JoinGroupRequest {
  groupId: string;
  sessionTimeoutMs: number;
  /** (v1+; v0: the session timeout, as Kafka does) */
  rebalanceTimeoutMs: number;
  memberId: string;
  /** (v5+) static membership (KIP-345): the member's group instance id, or null. */
  groupInstanceId: string | null;
  protocolType: string;
  protocols: { name: string; metadata: Uint8Array }[];
  /** (v8+) why the member (re)joins; null before v8 or when not given. */
  reason: string | null;
}

/** The field forms of `version` of `apiKey` (flexible or not). */
function fieldsOf(reader: KafkaReader, apiKey: KafkaApiKey, version: number): VersionedReader {
  return new VersionedReader(reader, isFlexible(apiKey, version));
}

function fieldWriter(writer: KafkaWriter, apiKey: KafkaApiKey, version: number): VersionedWriter {
  return new VersionedWriter(writer, isFlexible(apiKey, version));
}

export function decodeJoinGroupRequest(reader: KafkaReader, version: number): JoinGroupRequest {
  const f = fieldsOf(reader, KAFKA_API.JOIN_GROUP, version);
  const stringMin = f.flexible ? COMPACT_STRING_BYTES_MIN : STRING_BYTES_MIN;
  const groupId = f.string("group_id");
  const sessionTimeoutMs = reader.int32("session_timeout_ms");
  const rebalanceTimeoutMs = version >= 1 ? reader.int32("rebalance_timeout_ms") : sessionTimeoutMs;
  const memberId = f.string("member_id");
  const groupInstanceId = version >= 5 ? f.nullableString("group_instance_id") : null;
  const protocolType = f.string("protocol_type");
  const count = f.count("protocols", stringMin + (f.flexible ? 2 : BYTES_MIN));
  const protocols: JoinGroupRequest["protocols"] = [];
  for (let i = 0; i < count; i++) {
    const name = f.string("protocol name");
    protocols.push({ name, metadata: f.bytes("protocol metadata") });
    f.tags("protocol");
  }
  const reason = version >= 8 ? f.nullableString("reason") : null;
  f.tags("JoinGroup request");
  reader.expectEnd("JoinGroup request");
  return {
    groupId,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    memberId,
    groupInstanceId,
    protocolType,
    protocols,
    reason,
  };
}

export interface JoinGroupResponse {
  errorCode: number;
  generationId: number;
  /** "" with an error: null from v7 (nullable there), "" before, as Kafka answers. */
  protocolName: string;
  /** (v7+) the group's protocol type; "" with an error (null on the wire). */
  protocolType: string;
  leader: string;
  /** (v9+) KIP-814: the leader is to skip the assignment. */
  skipAssignment: boolean;
  memberId: string;
  /** (group_instance_id: v5+) */
  members: readonly { memberId: string; groupInstanceId: string | null; metadata: Uint8Array }[];
}

export function encodeJoinGroupResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: JoinGroupResponse,
): void {
  const start = begin(writer, KAFKA_API.JOIN_GROUP, version, correlationId);
  const w = fieldWriter(writer, KAFKA_API.JOIN_GROUP, version);
  if (version >= 2) writer.int32(0); // throttle_time_ms
  writer.errorCode(response.errorCode).int32(response.generationId);
  if (version >= 7) {
    w.nullableString(response.protocolType === "" ? null : response.protocolType);
    w.nullableString(response.protocolName === "" ? null : response.protocolName);
  } else w.string(response.protocolName);
  w.string(response.leader);
  if (version >= 9) writer.boolean(response.skipAssignment);
  w.string(response.memberId);
  w.count(response.members.length);
  for (const member of response.members) {
    w.string(member.memberId);
    if (version >= 5) w.nullableString(member.groupInstanceId);
    w.bytes(member.metadata).tags();
  }
  w.tags();
  endResponse(writer, start);
}

// --- SyncGroup (14) ------------------------------------------------------------------------------

export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  /** (v3+) */
  groupInstanceId: string | null;
  /** (v5+) the protocol type and name the member joined with; null when not given. */
  protocolType: string | null;
  protocolName: string | null;
  assignments: { memberId: string; assignment: Uint8Array }[];
}

export function decodeSyncGroupRequest(reader: KafkaReader, version: number): SyncGroupRequest {
  const f = fieldsOf(reader, KAFKA_API.SYNC_GROUP, version);
  const stringMin = f.flexible ? COMPACT_STRING_BYTES_MIN : STRING_BYTES_MIN;
  const groupId = f.string("group_id");
  const generationId = reader.int32("generation_id");
  const memberId = f.string("member_id");
  const groupInstanceId = version >= 3 ? f.nullableString("group_instance_id") : null;
  const protocolType = version >= 5 ? f.nullableString("protocol_type") : null;
  const protocolName = version >= 5 ? f.nullableString("protocol_name") : null;
  const count = f.count("assignments", stringMin + (f.flexible ? 2 : BYTES_MIN));
  const assignments: SyncGroupRequest["assignments"] = [];
  for (let i = 0; i < count; i++) {
    const id = f.string("assignment member_id");
    assignments.push({ memberId: id, assignment: f.bytes("assignment") });
    f.tags("assignment");
  }
  f.tags("SyncGroup request");
  reader.expectEnd("SyncGroup request");
  return { groupId, generationId, memberId, groupInstanceId, protocolType, protocolName, assignments };
}

export function encodeSyncGroupResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: {
    errorCode: number;
    assignment: Uint8Array;
    /** (v5+) the group's protocol type and chosen protocol; null with an error. */
    protocolType?: string | null;
    protocolName?: string | null;
  },
): void {
  const start = begin(writer, KAFKA_API.SYNC_GROUP, version, correlationId);
  const w = fieldWriter(writer, KAFKA_API.SYNC_GROUP, version);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  writer.errorCode(response.errorCode);
  if (version >= 5)
    w.nullableString(response.protocolType ?? null).nullableString(response.protocolName ?? null);
  w.bytes(response.assignment).tags();
  endResponse(writer, start);
}

// --- Heartbeat (12) ------------------------------------------------------------------------------

export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  /** (v3+) */
  groupInstanceId: string | null;
}

export function decodeHeartbeatRequest(reader: KafkaReader, version: number): HeartbeatRequest {
  const f = fieldsOf(reader, KAFKA_API.HEARTBEAT, version);
  const groupId = f.string("group_id");
  const generationId = reader.int32("generation_id");
  const memberId = f.string("member_id");
  const groupInstanceId = version >= 3 ? f.nullableString("group_instance_id") : null;
  f.tags("Heartbeat request");
  reader.expectEnd("Heartbeat request");
  return { groupId, generationId, memberId, groupInstanceId };
}

export function encodeHeartbeatResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  errorCode: number,
): void {
  const start = begin(writer, KAFKA_API.HEARTBEAT, version, correlationId);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  writer.errorCode(errorCode);
  fieldWriter(writer, KAFKA_API.HEARTBEAT, version).tags();
  endResponse(writer, start);
}

// --- LeaveGroup (13) -----------------------------------------------------------------------------

export interface LeaveGroupRequest {
  groupId: string;
  /**
   * v0-2: the one member_id (no instance id); v3+: the members array, where a member may be named
   * by group_instance_id alone (member_id ""); v5+ each with an optional reason (read, not used).
   */
  members: { memberId: string; groupInstanceId: string | null }[];
}

export function decodeLeaveGroupRequest(reader: KafkaReader, version: number): LeaveGroupRequest {
  const f = fieldsOf(reader, KAFKA_API.LEAVE_GROUP, version);
  const stringMin = f.flexible ? COMPACT_STRING_BYTES_MIN : STRING_BYTES_MIN;
  const groupId = f.string("group_id");
  const members: LeaveGroupRequest["members"] = [];
  if (version < 3) members.push({ memberId: f.string("member_id"), groupInstanceId: null });
  else {
    const count = f.count("members", stringMin + stringMin);
    for (let i = 0; i < count; i++) {
      const memberId = f.string("member_id");
      members.push({ memberId, groupInstanceId: f.nullableString("group_instance_id") });
      if (version >= 5) f.nullableString("reason");
      f.tags("member");
    }
  }
  f.tags("LeaveGroup request");
  reader.expectEnd("LeaveGroup request");
  return { groupId, members };
}

export function encodeLeaveGroupResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: {
    errorCode: number;
    members: readonly { memberId: string; groupInstanceId: string | null; errorCode: number }[];
  },
): void {
  const start = begin(writer, KAFKA_API.LEAVE_GROUP, version, correlationId);
  const w = fieldWriter(writer, KAFKA_API.LEAVE_GROUP, version);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  writer.errorCode(response.errorCode);
  if (version >= 3) {
    w.count(response.members.length);
    for (const member of response.members) {
      w.string(member.memberId).nullableString(member.groupInstanceId);
      writer.errorCode(member.errorCode);
      w.tags();
    }
  }
  w.tags();
  endResponse(writer, start);
}

// --- OffsetCommit (8) ----------------------------------------------------------------------------

export interface OffsetCommitRequest {
  groupId: string;
  /** (v1+; −1 before) */
  generationId: number;
  /** (v1+; "" before) */
  memberId: string;
  /** (v7+) */
  groupInstanceId: string | null;
  topics: {
    name: string;
    partitions: { partition: number; offset: number; leaderEpoch: number; metadata: string | null }[];
  }[];
}

export function decodeOffsetCommitRequest(reader: KafkaReader, version: number): OffsetCommitRequest {
  const f = fieldsOf(reader, KAFKA_API.OFFSET_COMMIT, version);
  const stringMin = f.flexible ? COMPACT_STRING_BYTES_MIN : STRING_BYTES_MIN;
  const groupId = f.string("group_id");
  const generationId = version >= 1 ? reader.int32("generation_id") : -1;
  const memberId = version >= 1 ? f.string("member_id") : "";
  if (version >= 2 && version <= 4) reader.int64("retention_time_ms");
  const groupInstanceId = version >= 7 ? f.nullableString("group_instance_id") : null;
  // partition_index, committed_offset, (v6+) leader epoch, (v1) timestamp, metadata (its length).
  const partitionBytes =
    4 + 8 + (version >= 6 ? 4 : 0) + (version === 1 ? 8 : 0) + (f.flexible ? 2 : STRING_BYTES_MIN);
  const topicCount = f.count("topics", stringMin + (f.flexible ? 1 : INT32_BYTES));
  const topics: OffsetCommitRequest["topics"] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = f.string("topic name");
    const count = f.count("partitions", partitionBytes);
    const partitions: OffsetCommitRequest["topics"][number]["partitions"] = [];
    for (let p = 0; p < count; p++) {
      const partition = reader.int32("partition_index");
      const offset = reader.int64("committed_offset");
      const leaderEpoch = version >= 6 ? reader.int32("committed_leader_epoch") : -1;
      if (version === 1) reader.int64("commit_timestamp");
      const metadata = f.nullableString("committed_metadata");
      f.tags("partition");
      partitions.push({ partition, offset, leaderEpoch, metadata });
    }
    f.tags("topic");
    topics.push({ name, partitions });
  }
  f.tags("OffsetCommit request");
  reader.expectEnd("OffsetCommit request");
  return { groupId, generationId, memberId, groupInstanceId, topics };
}

export interface PartitionErrors {
  name: string;
  partitions: { partition: number; errorCode: number }[];
}

export function encodeOffsetCommitResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly PartitionErrors[],
): void {
  const start = begin(writer, KAFKA_API.OFFSET_COMMIT, version, correlationId);
  const w = fieldWriter(writer, KAFKA_API.OFFSET_COMMIT, version);
  if (version >= 3) writer.int32(0); // throttle_time_ms
  w.count(topics.length);
  for (const topic of topics) {
    w.string(topic.name).count(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.partition).errorCode(partition.errorCode);
      w.tags();
    }
    w.tags();
  }
  w.tags();
  endResponse(writer, start);
}

// --- OffsetFetch (9) -----------------------------------------------------------------------------

export interface OffsetFetchRequest {
  groupId: string;
  /** null (v2+): every partition the group committed. */
  topics: { name: string; partitions: number[] }[] | null;
  /**
   * (v7+) wait for pending transactional commits (UNSTABLE_OFFSET_COMMIT until they settle). booblik
   * has no transactions, so no commit is ever pending: read and answered like any OffsetFetch.
   */
  requireStable: boolean;
}

export function decodeOffsetFetchRequest(reader: KafkaReader, version: number): OffsetFetchRequest {
  const f = fieldsOf(reader, KAFKA_API.OFFSET_FETCH, version);
  const stringMin = f.flexible ? COMPACT_STRING_BYTES_MIN : STRING_BYTES_MIN;
  const groupId = f.string("group_id");
  const count = f.count("topics", stringMin + (f.flexible ? 1 : INT32_BYTES), version >= 2);
  let topics: OffsetFetchRequest["topics"] = null;
  if (count >= 0) {
    topics = [];
    for (let t = 0; t < count; t++) {
      const name = f.string("topic name");
      const partitionCount = f.count("partition_indexes", INT32_BYTES);
      const partitions: number[] = [];
      for (let p = 0; p < partitionCount; p++) partitions.push(reader.int32("partition_index"));
      f.tags("topic");
      topics.push({ name, partitions });
    }
  }
  const requireStable = version >= 7 ? reader.boolean("require_stable") : false;
  f.tags("OffsetFetch request");
  reader.expectEnd("OffsetFetch request");
  return { groupId, topics, requireStable };
}

export interface OffsetFetchPartition {
  partition: number;
  /** −1: nothing committed. */
  offset: number;
  leaderEpoch: number;
  metadata: string | null;
  errorCode: number;
}

export function encodeOffsetFetchResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: {
    errorCode: number;
    topics: readonly { name: string; partitions: readonly OffsetFetchPartition[] }[];
  },
): void {
  const start = begin(writer, KAFKA_API.OFFSET_FETCH, version, correlationId);
  const w = fieldWriter(writer, KAFKA_API.OFFSET_FETCH, version);
  if (version >= 3) writer.int32(0); // throttle_time_ms
  w.count(response.topics.length);
  for (const topic of response.topics) {
    w.string(topic.name).count(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.partition).int64(partition.offset);
      if (version >= 5) writer.int32(partition.leaderEpoch);
      w.nullableString(partition.metadata);
      writer.errorCode(partition.errorCode);
      w.tags();
    }
    w.tags();
  }
  if (version >= 2) writer.errorCode(response.errorCode);
  w.tags();
  endResponse(writer, start);
}

// --- ListGroups (16) -----------------------------------------------------------------------------

export interface ListGroupsRequest {
  /** v4+: only groups in these states (Kafka compares them ignoring case); empty: every state. */
  statesFilter: string[];
  /** v5+: only groups of these types ("classic", "consumer", …; ignoring case); empty: every type. */
  typesFilter: string[];
}

export function decodeListGroupsRequest(reader: KafkaReader, version: number): ListGroupsRequest {
  const flexible = isFlexible(KAFKA_API.LIST_GROUPS, version);
  const strings = (field: string): string[] => {
    const count = reader.compactArrayCount(field, COMPACT_STRING_BYTES_MIN);
    const values: string[] = [];
    for (let i = 0; i < count; i++) values.push(reader.compactString(field));
    return values;
  };
  const statesFilter = version >= 4 ? strings("states_filter") : [];
  const typesFilter = version >= 5 ? strings("types_filter") : [];
  if (flexible) reader.skipTaggedFields("ListGroups request");
  reader.expectEnd("ListGroups request");
  return { statesFilter, typesFilter };
}

export function encodeListGroupsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  groups: readonly { groupId: string; protocolType: string; state: string }[],
): void {
  const flexible = isFlexible(KAFKA_API.LIST_GROUPS, version);
  const text = (value: string) => (flexible ? writer.compactString(value) : writer.string(value));
  const start = begin(writer, KAFKA_API.LIST_GROUPS, version, correlationId);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  writer.int16(0);
  if (flexible) writer.compactArrayCount(groups.length);
  else writer.arrayCount(groups.length);
  for (const group of groups) {
    text(group.groupId);
    text(group.protocolType);
    if (version >= 4) text(group.state); // group_state
    // group_type (v5+): every group here is a classic one (no KIP-848 consumer groups).
    if (version >= 5) text(CLASSIC_GROUP_TYPE);
    if (flexible) writer.emptyTaggedFields();
  }
  if (flexible) writer.emptyTaggedFields();
  endResponse(writer, start);
}

/** ListGroups' group_type of a classic group (Kafka's `Group.GroupType.CLASSIC.toString()`). */
export const CLASSIC_GROUP_TYPE = "classic";

// --- DescribeGroups (15) -------------------------------------------------------------------------

export function decodeDescribeGroupsRequest(reader: KafkaReader, version: number): { groups: string[] } {
  const flexible = isFlexible(KAFKA_API.DESCRIBE_GROUPS, version);
  const count = flexible
    ? reader.compactArrayCount("groups", COMPACT_STRING_BYTES_MIN)
    : reader.arrayCount("groups", STRING_BYTES_MIN);
  const groups: string[] = [];
  for (let i = 0; i < count; i++)
    groups.push(flexible ? reader.compactString("group id") : reader.string("group id"));
  if (version >= 3) reader.boolean("include_authorized_operations");
  if (flexible) reader.skipTaggedFields("DescribeGroups request");
  reader.expectEnd("DescribeGroups request");
  return { groups };
}

export interface DescribedGroup {
  errorCode: number;
  /** (v6+) Words for `errorCode`, null when none. */
  errorMessage: string | null;
  groupId: string;
  state: string;
  protocolType: string;
  protocolData: string;
  members: readonly {
    memberId: string;
    /** (v4+) */
    groupInstanceId: string | null;
    clientId: string;
    clientHost: string;
    metadata: Uint8Array;
    assignment: Uint8Array;
  }[];
}

/** Kafka's "authorized operations were not requested" (DescribeGroupsResponse.json default). */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

export function encodeDescribeGroupsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  groups: readonly DescribedGroup[],
): void {
  const flexible = isFlexible(KAFKA_API.DESCRIBE_GROUPS, version);
  const text = (value: string) => (flexible ? writer.compactString(value) : writer.string(value));
  const nullableText = (value: string | null) =>
    flexible ? writer.compactNullableString(value) : writer.nullableString(value);
  const data = (value: Uint8Array) => (flexible ? writer.compactBytes(value) : writer.nullableBytes(value));
  const count = (n: number) => (flexible ? writer.compactArrayCount(n) : writer.arrayCount(n));
  const start = begin(writer, KAFKA_API.DESCRIBE_GROUPS, version, correlationId);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  count(groups.length);
  for (const group of groups) {
    writer.errorCode(group.errorCode);
    if (version >= 6) nullableText(group.errorMessage);
    text(group.groupId);
    text(group.state);
    text(group.protocolType);
    text(group.protocolData);
    count(group.members.length);
    for (const member of group.members) {
      text(member.memberId);
      if (version >= 4) nullableText(member.groupInstanceId);
      text(member.clientId);
      text(member.clientHost);
      data(member.metadata);
      data(member.assignment);
      if (flexible) writer.emptyTaggedFields();
    }
    if (version >= 3) writer.int32(AUTHORIZED_OPERATIONS_OMITTED);
    if (flexible) writer.emptyTaggedFields();
  }
  if (flexible) writer.emptyTaggedFields();
  endResponse(writer, start);
}
