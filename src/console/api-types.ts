/**
 * The shapes the console's data API sends (src/console/sampler.ts, console-http.ts) and its page
 * reads (src/console/app). Types only, importing nothing, so the page's type check (its own
 * tsconfig, with the DOM library) does not pull in the broker.
 */

/** One second of the broker, as rates over the interval since the previous sample. */
export interface ConsoleSample {
  /** Milliseconds since the epoch. */
  atMs: number;
  produceRecordsPerSecond: number;
  produceBytesPerSecond: number;
  fetchRecordsPerSecond: number;
  fetchBytesPerSecond: number;
  requestsPerSecond: number;
  forcesPerSecond: number;
  /** Mean duration of the forces that ended in the interval; null when none did. */
  forceMeanMs: number | null;
  connections: number;
  /** Totals, so a page can show exact counts next to the rates. */
  produceRecordsTotal: number;
  fetchRecordsTotal: number;
}

export interface PartitionRow {
  partition: number;
  logStartOffset: number;
  nextOffset: number;
  sizeBytes: number;
  segments: number;
  /** Offsets appended per second since the previous listing; null on the first listing. */
  recordsPerSecond: number | null;
}

/** A topic's settings as the console shows them (a subset of src/broker/topic-config.ts TopicConfig). */
export interface TopicSettings {
  partitions: number;
  durability: string;
  flushIntervalMs: number;
  writeMode: string;
  segmentBytes: number;
  maxRecordBytes: number;
  retentionBytes: number | null;
  retentionMs: number | null;
  timestampType?: string;
}

export interface TopicRow {
  name: string;
  config: TopicSettings;
  partitions: PartitionRow[];
}

export interface ConnectionRows {
  count: number;
  byAddress: { address: string; connections: number }[];
}

/** One consumer group in the groups listing: Kafka groups with members and groups with commits. */
export interface GroupRow {
  group: string;
  /** The coordinator's state; "Empty" for a group that only has committed offsets. */
  state: string;
  /** "consumer" for Kafka consumers; "" for a group with no members. */
  protocolType: string;
  members: number;
  /** Partitions with a committed offset. */
  committedPartitions: number;
  /** Sum of the lag of its committed partitions (of topics that still exist). */
  lag: number;
}

/** One partition a member was assigned (decoded from Kafka's consumer protocol assignment). */
export interface AssignedPartitions {
  topic: string;
  partitions: number[];
}

export interface GroupMemberRow {
  memberId: string;
  /** A static member's group instance id (Kafka's group.instance.id); null for a dynamic member. */
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  /** Decoded assignment; null when the group's protocol is not Kafka's consumer protocol. */
  assignment: AssignedPartitions[] | null;
  /** The assignment's size in bytes, for the ones that cannot be decoded. */
  assignmentBytes: number;
}

export interface GroupOffsetRow {
  topic: string;
  partition: number;
  committedOffset: number;
  /** The partition's next offset (what a consumer can read); null when the topic is gone. */
  nextOffset: number | null;
  /** nextOffset − committedOffset, at least 0; null when the topic is gone. */
  lag: number | null;
  metadata: string | null;
  commitTimestampMs: number;
}

export interface GroupDetail {
  group: string;
  state: string;
  protocolType: string;
  /** The assignor chosen in the last rebalance ("" when none). */
  protocol: string;
  /** One more per completed rebalance; null for a group without live members. */
  generationId: number | null;
  members: GroupMemberRow[];
  offsets: GroupOffsetRow[];
  lag: number;
}

/** One point of a group's total lag over time. */
export interface LagPoint {
  atMs: number;
  lag: number;
}
