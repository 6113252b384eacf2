/**
 * Request decoders and response encoders of the Kafka admin APIs the Java AdminClient and consumers
 * use beyond the core set: DescribeConfigs (32) v0-3, DescribeCluster (60) v0-1 (every version is
 * flexible), DeleteGroups (42) v0-1, OffsetDelete (47) v0, OffsetForLeaderEpoch (23) v0-3. Sans I/O.
 *
 * Layouts follow apache/kafka `clients/src/main/resources/common/message/<Name>Request.json` and
 * `<Name>Response.json`; "(vN+)" marks a field that exists from version N on:
 *   DescribeConfigs request:  resources ARRAY[resource_type INT8, resource_name STRING,
 *                             configuration_keys NULLABLE ARRAY[STRING]], include_synonyms BOOL (v1+),
 *                             include_documentation BOOL (v3+)
 *   DescribeConfigs response: throttle_time_ms INT32, results ARRAY[error_code INT16,
 *                             error_message NULLABLE_STRING, resource_type INT8, resource_name STRING,
 *                             configs ARRAY[name STRING, value NULLABLE_STRING, read_only BOOL,
 *                             is_default BOOL (v0 only), config_source INT8 (v1+), is_sensitive BOOL,
 *                             synonyms ARRAY[name STRING, value NULLABLE_STRING, source INT8] (v1+),
 *                             config_type INT8 (v3+), documentation NULLABLE_STRING (v3+)]]
 *   DescribeCluster request:  include_cluster_authorized_operations BOOL, endpoint_type INT8 (v1+), TAGS
 *   DescribeCluster response: throttle_time_ms INT32, error_code INT16, error_message COMPACT_NULLABLE_STRING,
 *                             endpoint_type INT8 (v1+), cluster_id COMPACT_STRING, controller_id INT32,
 *                             brokers COMPACT_ARRAY[broker_id INT32, host COMPACT_STRING, port INT32,
 *                             rack COMPACT_NULLABLE_STRING, TAGS], cluster_authorized_operations INT32, TAGS
 *   DeleteGroups request:     groups_names ARRAY[STRING]
 *   DeleteGroups response:    throttle_time_ms INT32, results ARRAY[group_id STRING, error_code INT16]
 *   OffsetDelete request:     group_id STRING, topics ARRAY[name STRING, partitions ARRAY[partition_index INT32]]
 *   OffsetDelete response:    error_code INT16, throttle_time_ms INT32, topics ARRAY[name STRING,
 *                             partitions ARRAY[partition_index INT32, error_code INT16]]
 *   OffsetForLeaderEpoch request:  replica_id INT32 (v3+), topics ARRAY[topic STRING, partitions
 *                             ARRAY[partition INT32, current_leader_epoch INT32 (v2+), leader_epoch INT32]]
 *   OffsetForLeaderEpoch response: throttle_time_ms INT32 (v2+), topics ARRAY[topic STRING, partitions
 *                             ARRAY[error_code INT16, partition INT32, leader_epoch INT32 (v1+), end_offset INT64]]
 *
 * Invariants: a decoder consumes its frame exactly or throws KafkaProtocolError with the byte
 * position; counts are checked against the bytes left before anything is allocated
 * (KafkaReader.arrayCount); an encoder writes one whole response frame.
 */
import { beginResponse, endResponse, KAFKA_API, type KafkaApiKey, responseHeaderVersion } from "./apis.ts";
import type { KafkaReader, KafkaWriter } from "./codec.ts";

const STRING_BYTES_MIN = 2;
const INT32_BYTES = 4;

function begin(writer: KafkaWriter, apiKey: KafkaApiKey, version: number, correlationId: number): number {
  return beginResponse(writer, correlationId, responseHeaderVersion(apiKey, version));
}

// --- DescribeConfigs (32) ------------------------------------------------------------------------

export interface DescribeConfigsResource {
  resourceType: number;
  resourceName: string;
  /** null: every config of the resource. */
  configurationKeys: string[] | null;
}

export interface DescribeConfigsRequest {
  resources: DescribeConfigsResource[];
  includeSynonyms: boolean;
  includeDocumentation: boolean;
}

export function decodeDescribeConfigsRequest(reader: KafkaReader, version: number): DescribeConfigsRequest {
  // resource_type (1), resource_name (2), configuration_keys (4).
  const count = reader.arrayCount("resources", 1 + STRING_BYTES_MIN + INT32_BYTES);
  const resources: DescribeConfigsResource[] = [];
  for (let r = 0; r < count; r++) {
    const resourceType = reader.int8("resource_type");
    const resourceName = reader.string("resource_name");
    const keyCount = reader.arrayCount("configuration_keys", STRING_BYTES_MIN, true);
    let configurationKeys: string[] | null = null;
    if (keyCount !== -1) {
      configurationKeys = [];
      for (let k = 0; k < keyCount; k++) configurationKeys.push(reader.string("configuration key"));
    }
    resources.push({ resourceType, resourceName, configurationKeys });
  }
  const includeSynonyms = version >= 1 ? reader.boolean("include_synonyms") : false;
  const includeDocumentation = version >= 3 ? reader.boolean("include_documentation") : false;
  reader.expectEnd("DescribeConfigs request");
  return { resources, includeSynonyms, includeDocumentation };
}

/** Kafka's DescribeConfigsResponse.ConfigSource values booblik answers. */
export const CONFIG_SOURCE = { DYNAMIC_TOPIC_CONFIG: 1, STATIC_BROKER_CONFIG: 4, DEFAULT_CONFIG: 5 } as const;
/** Kafka's DescribeConfigsResponse.ConfigType values booblik answers. */
export const CONFIG_TYPE = { BOOLEAN: 1, STRING: 2, INT: 3, SHORT: 4, LONG: 5, LIST: 7 } as const;

export interface DescribedConfig {
  name: string;
  value: string | null;
  readOnly: boolean;
  /**
   * DEFAULT_CONFIG (5) when the value is booblik's default; otherwise DYNAMIC_TOPIC_CONFIG (1) for a
   * topic's setting, STATIC_BROKER_CONFIG (4) for the broker's (set at its start).
   */
  source: number;
  configType: number;
  documentation: string;
}

export interface DescribeConfigsResult {
  errorCode: number;
  errorMessage: string | null;
  resourceType: number;
  resourceName: string;
  configs: DescribedConfig[];
}

export function encodeDescribeConfigsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  request: Pick<DescribeConfigsRequest, "includeSynonyms" | "includeDocumentation">,
  results: readonly DescribeConfigsResult[],
): void {
  const start = begin(writer, KAFKA_API.DESCRIBE_CONFIGS, version, correlationId);
  writer.int32(0); // throttle_time_ms
  writer.arrayCount(results.length);
  for (const result of results) {
    writer
      .errorCode(result.errorCode)
      .nullableString(result.errorMessage)
      .int8(result.resourceType)
      .string(result.resourceName);
    writer.arrayCount(result.configs.length);
    for (const config of result.configs) {
      writer.string(config.name).nullableString(config.value).boolean(config.readOnly);
      if (version === 0) writer.boolean(config.source === CONFIG_SOURCE.DEFAULT_CONFIG);
      else writer.int8(config.source);
      writer.boolean(false); // is_sensitive: no setting described is a secret
      if (version >= 1) {
        // Kafka lists the value itself as its first synonym when synonyms are asked for.
        if (request.includeSynonyms) {
          writer.arrayCount(1).string(config.name).nullableString(config.value).int8(config.source);
        } else writer.arrayCount(0);
      }
      if (version >= 3) {
        writer.int8(config.configType);
        writer.nullableString(request.includeDocumentation ? config.documentation : null);
      }
    }
  }
  endResponse(writer, start);
}

// --- DescribeCluster (60), flexible from v0 ------------------------------------------------------

/** DescribeCluster endpoint_type (v1+): 1 brokers, 2 controllers. */
export const ENDPOINT_TYPE = { BROKERS: 1, CONTROLLERS: 2 } as const;

export interface DescribeClusterRequest {
  includeClusterAuthorizedOperations: boolean;
  endpointType: number;
}

export function decodeDescribeClusterRequest(reader: KafkaReader, version: number): DescribeClusterRequest {
  const includeClusterAuthorizedOperations = reader.boolean("include_cluster_authorized_operations");
  const endpointType = version >= 1 ? reader.int8("endpoint_type") : ENDPOINT_TYPE.BROKERS;
  reader.skipTaggedFields("DescribeCluster request");
  reader.expectEnd("DescribeCluster request");
  return { includeClusterAuthorizedOperations, endpointType };
}

export interface DescribeClusterResponse {
  errorCode: number;
  errorMessage: string | null;
  endpointType: number;
  clusterId: string;
  controllerId: number;
  brokers: { brokerId: number; host: string; port: number }[];
}

/** Kafka's "authorized operations not asked for" (Integer.MIN_VALUE). */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

export function encodeDescribeClusterResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  response: DescribeClusterResponse,
): void {
  const start = begin(writer, KAFKA_API.DESCRIBE_CLUSTER, version, correlationId);
  writer.int32(0).errorCode(response.errorCode).compactNullableString(response.errorMessage);
  if (version >= 1) writer.int8(response.endpointType);
  writer.compactString(response.clusterId).int32(response.controllerId);
  writer.compactArrayCount(response.brokers.length);
  for (const broker of response.brokers) {
    writer.int32(broker.brokerId).compactString(broker.host).int32(broker.port);
    writer.compactNullableString(null).emptyTaggedFields(); // rack
  }
  writer.int32(AUTHORIZED_OPERATIONS_OMITTED).emptyTaggedFields();
  endResponse(writer, start);
}

// --- DeleteGroups (42) ---------------------------------------------------------------------------

export function decodeDeleteGroupsRequest(reader: KafkaReader, _version: number): string[] {
  const count = reader.arrayCount("groups_names", STRING_BYTES_MIN);
  const groups: string[] = [];
  for (let g = 0; g < count; g++) groups.push(reader.string("group name"));
  reader.expectEnd("DeleteGroups request");
  return groups;
}

export function encodeDeleteGroupsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  results: readonly { groupId: string; errorCode: number }[],
): void {
  const start = begin(writer, KAFKA_API.DELETE_GROUPS, version, correlationId);
  writer.int32(0).arrayCount(results.length);
  for (const result of results) writer.string(result.groupId).errorCode(result.errorCode);
  endResponse(writer, start);
}

// --- OffsetDelete (47) ---------------------------------------------------------------------------

export interface OffsetDeleteRequest {
  groupId: string;
  topics: { name: string; partitions: number[] }[];
}

export function decodeOffsetDeleteRequest(reader: KafkaReader, _version: number): OffsetDeleteRequest {
  const groupId = reader.string("group_id");
  const topicCount = reader.arrayCount("topics", STRING_BYTES_MIN + INT32_BYTES);
  const topics: OffsetDeleteRequest["topics"] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic name");
    const partitionCount = reader.arrayCount("partitions", INT32_BYTES);
    const partitions: number[] = [];
    for (let p = 0; p < partitionCount; p++) partitions.push(reader.int32("partition_index"));
    topics.push({ name, partitions });
  }
  reader.expectEnd("OffsetDelete request");
  return { groupId, topics };
}

export interface PartitionOutcomes {
  name: string;
  partitions: { partition: number; errorCode: number }[];
}

export function encodeOffsetDeleteResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  errorCode: number,
  topics: readonly PartitionOutcomes[],
): void {
  const start = begin(writer, KAFKA_API.OFFSET_DELETE, version, correlationId);
  writer.errorCode(errorCode).int32(0).arrayCount(topics.length);
  for (const topic of topics) {
    writer.string(topic.name).arrayCount(topic.partitions.length);
    for (const partition of topic.partitions)
      writer.int32(partition.partition).errorCode(partition.errorCode);
  }
  endResponse(writer, start);
}

// --- OffsetForLeaderEpoch (23) -------------------------------------------------------------------

export interface OffsetForLeaderEpochRequest {
  topics: {
    name: string;
    partitions: { partition: number; currentLeaderEpoch: number; leaderEpoch: number }[];
  }[];
}

export function decodeOffsetForLeaderEpochRequest(
  reader: KafkaReader,
  version: number,
): OffsetForLeaderEpochRequest {
  if (version >= 3) reader.int32("replica_id");
  const topicCount = reader.arrayCount("topics", STRING_BYTES_MIN + INT32_BYTES);
  const topics: OffsetForLeaderEpochRequest["topics"] = [];
  const partitionBytes = version >= 2 ? 3 * INT32_BYTES : 2 * INT32_BYTES;
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic");
    const partitionCount = reader.arrayCount("partitions", partitionBytes);
    const partitions: OffsetForLeaderEpochRequest["topics"][number]["partitions"] = [];
    for (let p = 0; p < partitionCount; p++) {
      const partition = reader.int32("partition");
      const currentLeaderEpoch = version >= 2 ? reader.int32("current_leader_epoch") : -1;
      partitions.push({ partition, currentLeaderEpoch, leaderEpoch: reader.int32("leader_epoch") });
    }
    topics.push({ name, partitions });
  }
  reader.expectEnd("OffsetForLeaderEpoch request");
  return { topics };
}

export interface EpochEndOffset {
  errorCode: number;
  partition: number;
  leaderEpoch: number;
  endOffset: number;
}

export function encodeOffsetForLeaderEpochResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly { name: string; partitions: readonly EpochEndOffset[] }[],
): void {
  const start = begin(writer, KAFKA_API.OFFSET_FOR_LEADER_EPOCH, version, correlationId);
  if (version >= 2) writer.int32(0);
  writer.arrayCount(topics.length);
  for (const topic of topics) {
    writer.string(topic.name).arrayCount(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.errorCode(partition.errorCode).int32(partition.partition);
      if (version >= 1) writer.int32(partition.leaderEpoch);
      writer.int64(partition.endOffset);
    }
  }
  endResponse(writer, start);
}
