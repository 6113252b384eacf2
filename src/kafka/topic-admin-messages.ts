/**
 * Kafka's CreatePartitions (37), versions 0-1 (the non-flexible ones; v2 is flexible), decoded and
 * encoded for the listener: the Kafka face of booblik's ADD_PARTITIONS; and IncrementalAlterConfigs
 * (44), version 0, and AlterConfigs (33), versions 0-1, the faces of ALTER_TOPIC (below). Sans I/O.
 *
 * Layout (apache/kafka `CreatePartitionsRequest.json` / `CreatePartitionsResponse.json`; v1 only
 * changed the quota behaviour, not the bytes):
 *   request:  topics ARRAY[name STRING, count INT32, assignments NULLABLE ARRAY[broker_ids ARRAY[INT32]]],
 *             timeout_ms INT32, validate_only BOOLEAN
 *   response: throttle_time_ms INT32, results ARRAY[name STRING, error_code INT16,
 *             error_message NULLABLE_STRING]
 *
 * Invariants: a decoder consumes its frame exactly; counts are checked against the bytes left
 * before anything is allocated (KafkaReader.arrayCount).
 */
import { beginResponse, endResponse, KAFKA_API, responseHeaderVersion } from "./apis.ts";
import type { KafkaReader, KafkaWriter } from "./codec.ts";
import type { TopicResult } from "./messages.ts";

export interface CreatePartitionsTopic {
  name: string;
  /** The new partition count of the topic. */
  count: number;
  /** Manual replica assignments (null: none); a single node cannot honour them. */
  assignments: number[][] | null;
}

export interface CreatePartitionsRequest {
  topics: CreatePartitionsTopic[];
  timeoutMs: number;
  validateOnly: boolean;
}

export function decodeCreatePartitionsRequest(
  reader: KafkaReader,
  _version: number,
): CreatePartitionsRequest {
  // name (2), count (4), assignments (4).
  const topicCount = reader.arrayCount("topics", 2 + 4 + 4);
  const topics: CreatePartitionsTopic[] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic name");
    const count = reader.int32("count");
    const assignmentCount = reader.arrayCount("assignments", 4, true);
    let assignments: number[][] | null = null;
    if (assignmentCount !== -1) {
      assignments = [];
      for (let a = 0; a < assignmentCount; a++) {
        const brokerCount = reader.arrayCount("broker_ids", 4);
        const brokerIds: number[] = [];
        for (let b = 0; b < brokerCount; b++) brokerIds.push(reader.int32("broker_id"));
        assignments.push(brokerIds);
      }
    }
    topics.push({ name, count, assignments });
  }
  const timeoutMs = reader.int32("timeout_ms");
  const validateOnly = reader.boolean("validate_only");
  reader.expectEnd("CreatePartitions request");
  return { topics, timeoutMs, validateOnly };
}

export function encodeCreatePartitionsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  results: readonly TopicResult[],
): void {
  const start = beginResponse(
    writer,
    correlationId,
    responseHeaderVersion(KAFKA_API.CREATE_PARTITIONS, version),
  );
  writer.int32(0); // throttle_time_ms
  writer.arrayCount(results.length);
  for (const result of results)
    writer.string(result.name).errorCode(result.errorCode).nullableString(result.errorMessage);
  endResponse(writer, start);
}

// --- IncrementalAlterConfigs (44), version 0 (v1 is flexible) --------------------------------------
//   request:  resources ARRAY[resource_type INT8, resource_name STRING,
//             configs ARRAY[name STRING, config_operation INT8, value NULLABLE_STRING]], validate_only BOOLEAN
//   response: throttle_time_ms INT32, responses ARRAY[error_code INT16, error_message NULLABLE_STRING,
//             resource_type INT8, resource_name STRING]

/** Kafka's ConfigResource.Type of a topic. */
export const CONFIG_RESOURCE_TOPIC = 2;
/** Kafka's ConfigResource.Type of a broker: by node id ("1"), or "" for the cluster-wide defaults. */
export const CONFIG_RESOURCE_BROKER = 4;

/** AlterConfigOp.OpType: SET 0, DELETE 1 (back to the default), APPEND 2 and SUBTRACT 3 (list configs). */
export const CONFIG_OPERATION = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

export interface AlterableConfig {
  name: string;
  operation: number;
  value: string | null;
}

export interface AlterConfigsResource {
  resourceType: number;
  resourceName: string;
  configs: AlterableConfig[];
}

export interface IncrementalAlterConfigsRequest {
  resources: AlterConfigsResource[];
  validateOnly: boolean;
}

export interface AlterConfigsResult {
  errorCode: number;
  errorMessage: string | null;
  resourceType: number;
  resourceName: string;
}

export function decodeIncrementalAlterConfigsRequest(
  reader: KafkaReader,
  _version: number,
): IncrementalAlterConfigsRequest {
  return decodeConfigResources(reader, true, "IncrementalAlterConfigs request");
}

/**
 * AlterConfigs v0-1 (apache/kafka `AlterConfigsRequest.json`: "Version 1 is the same as version 0"):
 *   request:  resources ARRAY[resource_type INT8, resource_name STRING,
 *             configs ARRAY[name STRING, value NULLABLE_STRING]], validate_only BOOLEAN
 *   response: throttle_time_ms INT32, responses ARRAY[error_code INT16, error_message
 *             NULLABLE_STRING, resource_type INT8, resource_name STRING] (IncrementalAlterConfigs v0's)
 * Decoded as IncrementalAlterConfigs resources whose every config is a SET (a null value: DELETE);
 * the replace-all meaning is the handler's.
 */
export function decodeAlterConfigsRequest(
  reader: KafkaReader,
  _version: number,
): IncrementalAlterConfigsRequest {
  return decodeConfigResources(reader, false, "AlterConfigs request");
}

/** The two requests' common layout; IncrementalAlterConfigs carries an operation per config. */
function decodeConfigResources(
  reader: KafkaReader,
  withOperation: boolean,
  what: string,
): IncrementalAlterConfigsRequest {
  // resource_type (1), resource_name (2), configs (4).
  const resourceCount = reader.arrayCount("resources", 1 + 2 + 4);
  const resources: AlterConfigsResource[] = [];
  for (let r = 0; r < resourceCount; r++) {
    const resourceType = reader.int8("resource_type");
    const resourceName = reader.string("resource_name");
    // name (2), config_operation (1, incremental only), value (2).
    const configCount = reader.arrayCount("configs", withOperation ? 2 + 1 + 2 : 2 + 2);
    const configs: AlterableConfig[] = [];
    for (let c = 0; c < configCount; c++) {
      const name = reader.string("config name");
      const operation = withOperation ? reader.int8("config_operation") : undefined;
      const value = reader.nullableString("config value");
      configs.push({
        name,
        operation: operation ?? (value === null ? CONFIG_OPERATION.DELETE : CONFIG_OPERATION.SET),
        value,
      });
    }
    resources.push({ resourceType, resourceName, configs });
  }
  const validateOnly = reader.boolean("validate_only");
  reader.expectEnd(what);
  return { resources, validateOnly };
}

export function encodeAlterConfigsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  results: readonly AlterConfigsResult[],
): void {
  encodeConfigResults(writer, KAFKA_API.ALTER_CONFIGS, version, correlationId, results);
}

export function encodeIncrementalAlterConfigsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  results: readonly AlterConfigsResult[],
): void {
  encodeConfigResults(writer, KAFKA_API.INCREMENTAL_ALTER_CONFIGS, version, correlationId, results);
}

/** The two responses' common layout (non-flexible versions only). */
function encodeConfigResults(
  writer: KafkaWriter,
  apiKey: typeof KAFKA_API.ALTER_CONFIGS | typeof KAFKA_API.INCREMENTAL_ALTER_CONFIGS,
  version: number,
  correlationId: number,
  results: readonly AlterConfigsResult[],
): void {
  const start = beginResponse(writer, correlationId, responseHeaderVersion(apiKey, version));
  writer.int32(0); // throttle_time_ms
  writer.arrayCount(results.length);
  for (const result of results) {
    writer
      .errorCode(result.errorCode)
      .nullableString(result.errorMessage)
      .int8(result.resourceType)
      .string(result.resourceName);
  }
  endResponse(writer, start);
}
