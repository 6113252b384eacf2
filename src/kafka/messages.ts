/**
 * Request decoders and response encoders of the Kafka APIs booblik's listener speaks, sans I/O, for
 * the versions in CODEC_VERSIONS (apis.ts). Field lists follow apache/kafka's message JSON files
 * (clients/src/main/resources/common/message/<Name>Request.json and <Name>Response.json); a field
 * marked "(vN+)" exists from version N on, "(v0)" only in version 0.
 *
 * Invariants:
 * - A decoder reads exactly its request: a missing field, a short or overlong frame, or a count the
 *   frame cannot hold is a KafkaProtocolError with the byte position (codec.ts). Record sets are
 *   views into the frame, never copies.
 * - An encoder writes a whole response frame (size, header, body) into the caller's writer.
 */
import {
  beginResponse,
  endResponse,
  isFlexible,
  KAFKA_API,
  type KafkaApiKey,
  responseHeaderVersion,
  type VersionRange,
} from "./apis.ts";
import type { KafkaReader, KafkaWriter } from "./codec.ts";

// Smallest encodings, for the array-count checks: an int16-length string is 2 bytes, an int32 is 4.
const STRING_BYTES_MIN = 2;
const INT32_BYTES = 4;
/** A COMPACT_STRING's smallest encoding: its one-byte length (0 = null). */
const COMPACT_STRING_BYTES_MIN = 1;

function arrayOfInt32(reader: KafkaReader, field: string): number[] {
  const count = reader.arrayCount(field, INT32_BYTES);
  const values: number[] = [];
  for (let i = 0; i < count; i++) values.push(reader.int32(field));
  return values;
}

function writeInt32Array(writer: KafkaWriter, values: readonly number[]): void {
  writer.arrayCount(values.length);
  for (const value of values) writer.int32(value);
}

function finish(writer: KafkaWriter, start: number): void {
  endResponse(writer, start);
}

function begin(writer: KafkaWriter, apiKey: KafkaApiKey, version: number, correlationId: number): number {
  return beginResponse(writer, correlationId, responseHeaderVersion(apiKey, version));
}

// --- ApiVersions (18) ----------------------------------------------------------------------------

export interface ApiVersionsRequest {
  /** (v3+) */
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
}

export function decodeApiVersionsRequest(reader: KafkaReader, version: number): ApiVersionsRequest {
  if (version < 3) {
    reader.expectEnd("ApiVersions request");
    return { clientSoftwareName: null, clientSoftwareVersion: null };
  }
  const clientSoftwareName = reader.compactString("client_software_name");
  const clientSoftwareVersion = reader.compactString("client_software_version");
  reader.skipTaggedFields("ApiVersions request");
  reader.expectEnd("ApiVersions request");
  return { clientSoftwareName, clientSoftwareVersion };
}

export interface ApiVersionsResponse {
  errorCode: number;
  apiKeys: readonly (VersionRange & { apiKey: number })[];
}

/**
 * ApiVersions response; the header is always v0. A request for a version above the broker's maximum
 * is answered in the v0 layout (KIP-511): error_code, api_keys (int32 count), nothing else.
 */
export function encodeApiVersionsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: ApiVersionsResponse,
): void {
  const start = beginResponse(writer, correlationId, 0);
  writer.errorCode(response.errorCode);
  const flexible = version >= 3; // v4 is v3's layout
  if (flexible) writer.compactArrayCount(response.apiKeys.length);
  else writer.arrayCount(response.apiKeys.length);
  for (const { apiKey, min, max } of response.apiKeys) {
    writer.int16(apiKey).int16(min).int16(max);
    if (flexible) writer.emptyTaggedFields();
  }
  if (version >= 1) writer.int32(0); // throttle_time_ms
  if (flexible) writer.emptyTaggedFields();
  finish(writer, start);
}

// --- Metadata (3) --------------------------------------------------------------------------------

export interface MetadataRequest {
  /** null = every topic (v0: an empty array means every topic; v1+: null does, empty means none). */
  topics: string[] | null;
  /** (v4+; true before) */
  allowAutoTopicCreation: boolean;
}

export function decodeMetadataRequest(reader: KafkaReader, version: number): MetadataRequest {
  const count = reader.arrayCount("topics", STRING_BYTES_MIN, version >= 1);
  let topics: string[] | null = null;
  if (count >= 0) {
    topics = [];
    for (let i = 0; i < count; i++) topics.push(reader.string("topic name"));
    if (version === 0 && count === 0) topics = null;
  }
  const allowAutoTopicCreation = version >= 4 ? reader.boolean("allow_auto_topic_creation") : true;
  if (version >= 8) {
    reader.boolean("include_cluster_authorized_operations");
    reader.boolean("include_topic_authorized_operations");
  }
  reader.expectEnd("Metadata request");
  return { topics, allowAutoTopicCreation };
}

export interface MetadataBroker {
  nodeId: number;
  host: string;
  port: number;
}

export interface MetadataPartition {
  errorCode: number;
  partitionIndex: number;
  leaderId: number;
  leaderEpoch: number;
  replicaNodes: readonly number[];
  isrNodes: readonly number[];
}

export interface MetadataTopic {
  errorCode: number;
  name: string;
  isInternal: boolean;
  partitions: readonly MetadataPartition[];
}

export interface MetadataResponse {
  brokers: readonly MetadataBroker[];
  clusterId: string | null;
  controllerId: number;
  topics: readonly MetadataTopic[];
}

/** Kafka's "authorized operations were not requested" (MetadataResponse.json default). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

export function encodeMetadataResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: MetadataResponse,
): void {
  const start = begin(writer, KAFKA_API.METADATA, version, correlationId);
  if (version >= 3) writer.int32(0); // throttle_time_ms
  writer.arrayCount(response.brokers.length);
  for (const broker of response.brokers) {
    writer.int32(broker.nodeId).string(broker.host).int32(broker.port);
    if (version >= 1) writer.nullableString(null); // rack
  }
  if (version >= 2) writer.nullableString(response.clusterId);
  if (version >= 1) writer.int32(response.controllerId);
  writer.arrayCount(response.topics.length);
  for (const topic of response.topics) {
    writer.errorCode(topic.errorCode).string(topic.name);
    if (version >= 1) writer.boolean(topic.isInternal);
    writer.arrayCount(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.errorCode(partition.errorCode).int32(partition.partitionIndex).int32(partition.leaderId);
      if (version >= 7) writer.int32(partition.leaderEpoch);
      writeInt32Array(writer, partition.replicaNodes);
      writeInt32Array(writer, partition.isrNodes);
      if (version >= 5) writeInt32Array(writer, []); // offline_replicas
    }
    if (version >= 8) writer.int32(AUTHORIZED_OPERATIONS_OMITTED);
  }
  if (version >= 8) writer.int32(AUTHORIZED_OPERATIONS_OMITTED);
  finish(writer, start);
}

// --- Produce (0) ---------------------------------------------------------------------------------

export interface ProducePartitionData {
  index: number;
  /** The record set as sent: a view into the request frame (null only from a broken client). */
  records: Uint8Array | null;
}

export interface ProduceTopicData {
  name: string;
  partitions: ProducePartitionData[];
}

export interface ProduceRequest {
  /** (v3+) */
  transactionalId: string | null;
  acks: number;
  timeoutMs: number;
  topics: ProduceTopicData[];
}

export function decodeProduceRequest(reader: KafkaReader, version: number): ProduceRequest {
  const transactionalId = version >= 3 ? reader.nullableString("transactional_id") : null;
  const acks = reader.int16("acks");
  const timeoutMs = reader.int32("timeout_ms");
  const topicCount = reader.arrayCount("topic_data", STRING_BYTES_MIN + INT32_BYTES);
  const topics: ProduceTopicData[] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic name");
    const partitionCount = reader.arrayCount("partition_data", INT32_BYTES + INT32_BYTES);
    const partitions: ProducePartitionData[] = [];
    for (let p = 0; p < partitionCount; p++) {
      const index = reader.int32("partition index");
      const records = reader.nullableBytes("records");
      partitions.push({ index, records });
    }
    topics.push({ name, partitions });
  }
  reader.expectEnd("Produce request");
  return { transactionalId, acks, timeoutMs, topics };
}

export interface ProducePartitionResponse {
  index: number;
  errorCode: number;
  baseOffset: number;
  /** (v2+) −1 for CreateTime topics. */
  logAppendTimeMs: number;
  /** (v5+) */
  logStartOffset: number;
  /** (v8+) null when no error. */
  errorMessage: string | null;
}

export interface ProduceTopicResponse {
  name: string;
  partitions: readonly ProducePartitionResponse[];
}

export function encodeProduceResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly ProduceTopicResponse[],
): void {
  const start = begin(writer, KAFKA_API.PRODUCE, version, correlationId);
  writer.arrayCount(topics.length);
  for (const topic of topics) {
    writer.string(topic.name).arrayCount(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.index).errorCode(partition.errorCode).int64(partition.baseOffset);
      if (version >= 2) writer.int64(partition.logAppendTimeMs);
      if (version >= 5) writer.int64(partition.logStartOffset);
      if (version >= 8) {
        writer.arrayCount(0); // record_errors
        writer.nullableString(partition.errorMessage);
      }
    }
  }
  if (version >= 1) writer.int32(0); // throttle_time_ms
  finish(writer, start);
}

// --- Fetch (1) -----------------------------------------------------------------------------------

export interface FetchPartitionRequest {
  partition: number;
  fetchOffset: number;
  partitionMaxBytes: number;
}

export interface FetchTopicRequest {
  topic: string;
  partitions: FetchPartitionRequest[];
}

export interface FetchRequest {
  maxWaitMs: number;
  minBytes: number;
  /** (v3+; unlimited before) */
  maxBytes: number;
  /** (v4+) 0 read_uncommitted, 1 read_committed: the same here (no transactions). */
  isolationLevel: number;
  /** (v7+) 0 = no fetch session. */
  sessionId: number;
  sessionEpoch: number;
  topics: FetchTopicRequest[];
}

export function decodeFetchRequest(reader: KafkaReader, version: number): FetchRequest {
  reader.int32("replica_id");
  const maxWaitMs = reader.int32("max_wait_ms");
  const minBytes = reader.int32("min_bytes");
  const maxBytes = version >= 3 ? reader.int32("max_bytes") : 0x7fffffff;
  const isolationLevel = version >= 4 ? reader.int8("isolation_level") : 0;
  const sessionId = version >= 7 ? reader.int32("session_id") : 0;
  const sessionEpoch = version >= 7 ? reader.int32("session_epoch") : -1;
  const partitionBytes = 4 + (version >= 9 ? 4 : 0) + 8 + (version >= 5 ? 8 : 0) + 4;
  const topicCount = reader.arrayCount("topics", STRING_BYTES_MIN + INT32_BYTES);
  const topics: FetchTopicRequest[] = [];
  for (let t = 0; t < topicCount; t++) {
    const topic = reader.string("topic");
    const count = reader.arrayCount("partitions", partitionBytes);
    const partitions: FetchPartitionRequest[] = [];
    for (let p = 0; p < count; p++) {
      const partition = reader.int32("partition");
      if (version >= 9) reader.int32("current_leader_epoch");
      const fetchOffset = reader.int64("fetch_offset");
      if (version >= 5) reader.int64("log_start_offset");
      const partitionMaxBytes = reader.int32("partition_max_bytes");
      partitions.push({ partition, fetchOffset, partitionMaxBytes });
    }
    topics.push({ topic, partitions });
  }
  if (version >= 7) {
    const forgotten = reader.arrayCount("forgotten_topics_data", STRING_BYTES_MIN + INT32_BYTES);
    for (let i = 0; i < forgotten; i++) {
      reader.string("forgotten topic");
      arrayOfInt32(reader, "forgotten partitions");
    }
  }
  if (version >= 11) reader.string("rack_id");
  reader.expectEnd("Fetch request");
  return { maxWaitMs, minBytes, maxBytes, isolationLevel, sessionId, sessionEpoch, topics };
}

export interface FetchPartitionResponse {
  partition: number;
  errorCode: number;
  highWatermark: number;
  /** (v4+) */
  lastStableOffset: number;
  /** (v5+) */
  logStartOffset: number;
  /**
   * The partition's records: bare RecordBatches back to back (Kafka's "records" field), given as
   * pieces written one after the other (each stored entry without its 8-byte frame), or null. A
   * piece is bytes in memory, or a batch left in its segment file for sendfile (FileBatch).
   */
  records: readonly FetchRecordPiece[] | null;
}

/**
 * A stored batch sent from its segment file with sendfile (`--kafka-fetch-path sendfile`), not read
 * into memory: `[position, position + lengthBytes)` of the file `fd` holds the bare batch (after its
 * 8-byte storage frame). The descriptor is held by a lease until the response was sent.
 */
export interface FileBatch {
  readonly fd: number;
  readonly position: number;
  readonly lengthBytes: number;
}

export type FetchRecordPiece = Uint8Array | FileBatch;

/** Where a FileBatch's bytes go in an encoded response: before the response byte at `at`. */
export interface FileCut {
  readonly at: number;
  readonly batch: FileBatch;
}

/** Bytes a piece puts on the wire. */
export function pieceBytes(piece: FetchRecordPiece): number {
  return piece instanceof Uint8Array ? piece.length : piece.lengthBytes;
}

export interface FetchTopicResponse {
  topic: string;
  partitions: readonly FetchPartitionResponse[];
}

export interface FetchResponse {
  /** (v7+) top-level error and fetch session (0: none). */
  errorCode: number;
  sessionId: number;
  topics: readonly FetchTopicResponse[];
}

/**
 * Encodes a Fetch response. A FileBatch piece is not written: its place (the writer's position, where
 * its bytes belong) goes to `files`, and the frame's size counts its bytes; the sender interleaves the
 * file ranges with the written bytes (kafka/listener.ts). Without `files` every piece must be bytes.
 */
export function encodeFetchResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: FetchResponse,
  files?: FileCut[],
): void {
  const start = begin(writer, KAFKA_API.FETCH, version, correlationId);
  let fileBytes = 0;
  if (version >= 1) writer.int32(0); // throttle_time_ms
  if (version >= 7) writer.errorCode(response.errorCode).int32(response.sessionId);
  writer.arrayCount(response.topics.length);
  for (const topic of response.topics) {
    writer.string(topic.topic).arrayCount(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.partition).errorCode(partition.errorCode).int64(partition.highWatermark);
      if (version >= 4) writer.int64(partition.lastStableOffset);
      if (version >= 5) writer.int64(partition.logStartOffset);
      if (version >= 4) writer.arrayCount(0); // aborted_transactions: none (no transactions)
      if (version >= 11) writer.int32(-1); // preferred_read_replica: none (kafka-wire.md §1.4)
      const pieces = partition.records;
      if (pieces === null) {
        writer.int32(-1);
        continue;
      }
      let length = 0;
      for (const piece of pieces) length += pieceBytes(piece);
      writer.int32(length);
      for (const piece of pieces) {
        if (piece instanceof Uint8Array) {
          writer.raw(piece);
        } else {
          if (files === undefined) throw new Error("a Fetch response with file pieces needs a list for them");
          files.push({ at: writer.position, batch: piece });
          fileBytes += piece.lengthBytes;
        }
      }
    }
  }
  writer.patchInt32(start, writer.position - start - 4 + fileBytes);
}

// --- ListOffsets (2) -----------------------------------------------------------------------------

/** ListOffsets timestamps with a meaning of their own (ListOffsetsRequest.java). */
export const LIST_OFFSETS_LATEST = -1;
export const LIST_OFFSETS_EARLIEST = -2;
/** The record with the largest timestamp (KIP-734; Kafka's clients send it from v7, librdkafka at any). */
export const LIST_OFFSETS_MAX_TIMESTAMP = -3;
/**
 * The start of the log kept on the broker's own disk (KIP-405; Kafka's clients send it from v8). Without
 * tiered storage that is the log start, and Kafka answers it so (UnifiedLog.fetchOffsetByTimestamp).
 */
export const LIST_OFFSETS_EARLIEST_LOCAL = -4;
/**
 * The last offset copied to tiered storage (KIP-1005; from v9). Kafka answers a log without tiered
 * storage with offset −1, timestamp −1 and leader epoch −1.
 */
export const LIST_OFFSETS_LATEST_TIERED = -5;

export interface ListOffsetsPartitionRequest {
  partition: number;
  timestamp: number;
  /** (v0) */
  maxNumOffsets: number;
}

export interface ListOffsetsRequest {
  isolationLevel: number;
  topics: { name: string; partitions: ListOffsetsPartitionRequest[] }[];
}

/**
 * v0-10. v6 is flexible (compact strings and arrays, tagged fields after each partition, topic and
 * the request); v7, v8 and v9 only allow the timestamps −3, −4 and −5 (which booblik answers at every
 * version from 1, as Kafka does); v10 adds `timeout_ms` (for reads from tiered storage: not used).
 */
export function decodeListOffsetsRequest(reader: KafkaReader, version: number): ListOffsetsRequest {
  const flexible = isFlexible(KAFKA_API.LIST_OFFSETS, version);
  reader.int32("replica_id");
  const isolationLevel = version >= 2 ? reader.int8("isolation_level") : 0;
  const partitionBytes = 4 + (version >= 4 ? 4 : 0) + 8 + (version === 0 ? 4 : 0) + (flexible ? 1 : 0);
  const topicCount = flexible
    ? reader.compactArrayCount("topics", COMPACT_STRING_BYTES_MIN + 2) // name, partitions count, tags
    : reader.arrayCount("topics", STRING_BYTES_MIN + INT32_BYTES);
  const topics: ListOffsetsRequest["topics"] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = flexible ? reader.compactString("topic name") : reader.string("topic name");
    const count = flexible
      ? reader.compactArrayCount("partitions", partitionBytes)
      : reader.arrayCount("partitions", partitionBytes);
    const partitions: ListOffsetsPartitionRequest[] = [];
    for (let p = 0; p < count; p++) {
      const partition = reader.int32("partition_index");
      if (version >= 4) reader.int32("current_leader_epoch");
      const timestamp = reader.int64("timestamp");
      const maxNumOffsets = version === 0 ? reader.int32("max_num_offsets") : 1;
      if (flexible) reader.skipTaggedFields("ListOffsets partition");
      partitions.push({ partition, timestamp, maxNumOffsets });
    }
    if (flexible) reader.skipTaggedFields("ListOffsets topic");
    topics.push({ name, partitions });
  }
  if (version >= 10) reader.int32("timeout_ms");
  if (flexible) reader.skipTaggedFields("ListOffsets request");
  reader.expectEnd("ListOffsets request");
  return { isolationLevel, topics };
}

export interface ListOffsetsPartitionResponse {
  partition: number;
  errorCode: number;
  /** −1 when the answer is not about a record's time (earliest, latest, none found). */
  timestamp: number;
  /** −1 when no offset answers the request. */
  offset: number;
}

export function encodeListOffsetsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly { name: string; partitions: readonly ListOffsetsPartitionResponse[] }[],
): void {
  const flexible = isFlexible(KAFKA_API.LIST_OFFSETS, version);
  const start = begin(writer, KAFKA_API.LIST_OFFSETS, version, correlationId);
  if (version >= 2) writer.int32(0); // throttle_time_ms
  if (flexible) writer.compactArrayCount(topics.length);
  else writer.arrayCount(topics.length);
  for (const topic of topics) {
    if (flexible) writer.compactString(topic.name).compactArrayCount(topic.partitions.length);
    else writer.string(topic.name).arrayCount(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.int32(partition.partition).errorCode(partition.errorCode);
      if (version === 0) {
        // old_style_offsets: Kafka answers one offset, or none when there is none.
        if (partition.offset < 0) writer.arrayCount(0);
        else writer.arrayCount(1).int64(partition.offset);
        continue;
      }
      writer.int64(partition.timestamp).int64(partition.offset);
      if (version >= 4) writer.int32(-1); // leader_epoch: none (common.md §2: epoch −1 everywhere)
      if (flexible) writer.emptyTaggedFields();
    }
    if (flexible) writer.emptyTaggedFields();
  }
  if (flexible) writer.emptyTaggedFields();
  finish(writer, start);
}

// --- FindCoordinator (10) ------------------------------------------------------------------------

export interface FindCoordinatorRequest {
  key: string;
  /** (v1+) 0 group, 1 transaction. */
  keyType: number;
}

export function decodeFindCoordinatorRequest(reader: KafkaReader, version: number): FindCoordinatorRequest {
  // v3 is flexible (compact strings, tag buffers); v4 (a batch of keys) is not served.
  const flexible = isFlexible(KAFKA_API.FIND_COORDINATOR, version);
  const key = flexible ? reader.compactString("key") : reader.string("key");
  const keyType = version >= 1 ? reader.int8("key_type") : 0;
  if (flexible) reader.skipTaggedFields("FindCoordinator request");
  reader.expectEnd("FindCoordinator request");
  return { key, keyType };
}

export interface FindCoordinatorResponse {
  errorCode: number;
  errorMessage: string | null;
  nodeId: number;
  host: string;
  port: number;
}

export function encodeFindCoordinatorResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: FindCoordinatorResponse,
): void {
  const start = begin(writer, KAFKA_API.FIND_COORDINATOR, version, correlationId);
  const flexible = isFlexible(KAFKA_API.FIND_COORDINATOR, version);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  writer.errorCode(response.errorCode);
  if (version >= 1) {
    if (flexible) writer.compactNullableString(response.errorMessage);
    else writer.nullableString(response.errorMessage);
  }
  writer.int32(response.nodeId);
  if (flexible) writer.compactString(response.host);
  else writer.string(response.host);
  writer.int32(response.port);
  if (flexible) writer.emptyTaggedFields();
  finish(writer, start);
}

// --- CreateTopics (19) ---------------------------------------------------------------------------

export interface CreatableTopic {
  name: string;
  /** −1: the broker's default (v4+). */
  numPartitions: number;
  /** −1: the broker's default (v4+). */
  replicationFactor: number;
  /** Manual replica assignments: partition index → broker ids. */
  assignments: { partitionIndex: number; brokerIds: number[] }[];
  configs: { name: string; value: string | null }[];
}

export interface CreateTopicsRequest {
  topics: CreatableTopic[];
  timeoutMs: number;
  /** (v1+) */
  validateOnly: boolean;
}

export function decodeCreateTopicsRequest(reader: KafkaReader, version: number): CreateTopicsRequest {
  // name, num_partitions, replication_factor, two empty arrays.
  const topicCount = reader.arrayCount("topics", STRING_BYTES_MIN + 4 + 2 + 4 + 4);
  const topics: CreatableTopic[] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic name");
    const numPartitions = reader.int32("num_partitions");
    const replicationFactor = reader.int16("replication_factor");
    const assignmentCount = reader.arrayCount("assignments", INT32_BYTES + INT32_BYTES);
    const assignments: CreatableTopic["assignments"] = [];
    for (let a = 0; a < assignmentCount; a++) {
      const partitionIndex = reader.int32("partition_index");
      assignments.push({ partitionIndex, brokerIds: arrayOfInt32(reader, "broker_ids") });
    }
    const configCount = reader.arrayCount("configs", STRING_BYTES_MIN + STRING_BYTES_MIN);
    const configs: CreatableTopic["configs"] = [];
    for (let c = 0; c < configCount; c++) {
      const configName = reader.string("config name");
      configs.push({ name: configName, value: reader.nullableString("config value") });
    }
    topics.push({ name, numPartitions, replicationFactor, assignments, configs });
  }
  const timeoutMs = reader.int32("timeout_ms");
  const validateOnly = version >= 1 ? reader.boolean("validate_only") : false;
  reader.expectEnd("CreateTopics request");
  return { topics, timeoutMs, validateOnly };
}

export interface TopicResult {
  name: string;
  errorCode: number;
  /** (v1+ of CreateTopics; not in DeleteTopics v0-3) */
  errorMessage: string | null;
}

export function encodeCreateTopicsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly TopicResult[],
): void {
  const start = begin(writer, KAFKA_API.CREATE_TOPICS, version, correlationId);
  if (version >= 2) writer.int32(0); // throttle_time_ms
  writer.arrayCount(topics.length);
  for (const topic of topics) {
    writer.string(topic.name).errorCode(topic.errorCode);
    if (version >= 1) writer.nullableString(topic.errorMessage);
  }
  finish(writer, start);
}

// --- DeleteTopics (20) ---------------------------------------------------------------------------

export interface DeleteTopicsRequest {
  topicNames: string[];
  timeoutMs: number;
}

export function decodeDeleteTopicsRequest(reader: KafkaReader, _version: number): DeleteTopicsRequest {
  const count = reader.arrayCount("topic_names", STRING_BYTES_MIN);
  const topicNames: string[] = [];
  for (let i = 0; i < count; i++) topicNames.push(reader.string("topic name"));
  const timeoutMs = reader.int32("timeout_ms");
  reader.expectEnd("DeleteTopics request");
  return { topicNames, timeoutMs };
}

export function encodeDeleteTopicsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly TopicResult[],
): void {
  const start = begin(writer, KAFKA_API.DELETE_TOPICS, version, correlationId);
  if (version >= 1) writer.int32(0); // throttle_time_ms
  writer.arrayCount(topics.length);
  for (const topic of topics) writer.string(topic.name).errorCode(topic.errorCode);
  finish(writer, start);
}

// --- InitProducerId (22) -------------------------------------------------------------------------

export interface InitProducerIdRequest {
  transactionalId: string | null;
  transactionTimeoutMs: number;
  /** (v3+) The producer's current id and epoch when it asks for a bump; −1 otherwise and before v3. */
  producerId: number;
  producerEpoch: number;
}

/**
 * v0-1: transactional_id NULLABLE_STRING, transaction_timeout_ms INT32. v2+ flexible (COMPACT
 * strings, tagged fields). v3+ adds producer_id INT64, producer_epoch INT16 (KIP-360). v4 has the
 * v3 layout (it only tells the broker the client understands PRODUCER_FENCED).
 */
export function decodeInitProducerIdRequest(reader: KafkaReader, version: number): InitProducerIdRequest {
  const flexible = isFlexible(KAFKA_API.INIT_PRODUCER_ID, version);
  const transactionalId = flexible
    ? reader.compactNullableString("transactional_id")
    : reader.nullableString("transactional_id");
  const transactionTimeoutMs = reader.int32("transaction_timeout_ms");
  let producerId = -1;
  let producerEpoch = -1;
  if (version >= 3) {
    producerId = reader.int64("producer_id");
    producerEpoch = reader.int16("producer_epoch");
  }
  if (flexible) reader.skipTaggedFields("InitProducerId request");
  reader.expectEnd("InitProducerId request");
  return { transactionalId, transactionTimeoutMs, producerId, producerEpoch };
}

/** All versions: throttle_time_ms, error_code, producer_id, producer_epoch (+ tags from v2). */
export function encodeInitProducerIdResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: { errorCode: number; producerId: number; producerEpoch: number },
): void {
  const start = begin(writer, KAFKA_API.INIT_PRODUCER_ID, version, correlationId);
  writer.int32(0); // throttle_time_ms
  writer.errorCode(response.errorCode).int64(response.producerId).int16(response.producerEpoch);
  if (isFlexible(KAFKA_API.INIT_PRODUCER_ID, version)) writer.emptyTaggedFields();
  finish(writer, start);
}
