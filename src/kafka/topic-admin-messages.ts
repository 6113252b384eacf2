/**
 * Kafka's CreatePartitions (37), versions 0-1 (the non-flexible ones; v2 is flexible), decoded and
 * encoded for the listener: the Kafka face of booblik's ADD_PARTITIONS. Sans I/O.
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
    writer.string(result.name).int16(result.errorCode).nullableString(result.errorMessage);
  endResponse(writer, start);
}
