/**
 * Kafka's DeleteRecords (21), versions 0-1 (the non-flexible ones; v2 is flexible), decoded and
 * encoded for the listener: the Kafka face of booblik's PURGE. Sans I/O.
 *
 * Layout (apache/kafka `DeleteRecordsRequest.json` / `DeleteRecordsResponse.json`; v1 only changed
 * the quota behaviour, not the bytes):
 *   request:  topics ARRAY[name STRING, partitions ARRAY[partition_index INT32, offset INT64]],
 *             timeout_ms INT32
 *   response: throttle_time_ms INT32, topics ARRAY[name STRING, partitions ARRAY[partition_index
 *             INT32, low_watermark INT64, error_code INT16]]
 *
 * Invariants: a decoder consumes its frame exactly; counts are checked against the bytes left
 * before anything is allocated (KafkaReader.arrayCount).
 */
import { beginResponse, endResponse, KAFKA_API, responseHeaderVersion } from "./apis.ts";
import type { KafkaReader, KafkaWriter } from "./codec.ts";

export interface DeleteRecordsPartition {
  partition: number;
  /** Records below it are deleted; −1: the high watermark (every record). */
  offset: number;
}

export interface DeleteRecordsTopic {
  name: string;
  partitions: DeleteRecordsPartition[];
}

export interface DeleteRecordsRequest {
  topics: DeleteRecordsTopic[];
  timeoutMs: number;
}

export interface DeleteRecordsPartitionResult {
  partition: number;
  /** The partition's log start after the deletion; −1 with an error. */
  lowWatermark: number;
  errorCode: number;
}

export interface DeleteRecordsTopicResult {
  name: string;
  partitions: DeleteRecordsPartitionResult[];
}

export function decodeDeleteRecordsRequest(reader: KafkaReader, _version: number): DeleteRecordsRequest {
  // name (2), partitions (4).
  const topicCount = reader.arrayCount("topics", 2 + 4);
  const topics: DeleteRecordsTopic[] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic name");
    // partition_index (4), offset (8).
    const partitionCount = reader.arrayCount("partitions", 4 + 8);
    const partitions: DeleteRecordsPartition[] = [];
    for (let p = 0; p < partitionCount; p++)
      partitions.push({ partition: reader.int32("partition_index"), offset: reader.int64("offset") });
    topics.push({ name, partitions });
  }
  const timeoutMs = reader.int32("timeout_ms");
  reader.expectEnd("DeleteRecords request");
  return { topics, timeoutMs };
}

export function encodeDeleteRecordsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  topics: readonly DeleteRecordsTopicResult[],
): void {
  const start = beginResponse(
    writer,
    correlationId,
    responseHeaderVersion(KAFKA_API.DELETE_RECORDS, version),
  );
  writer.int32(0); // throttle_time_ms
  writer.arrayCount(topics.length);
  for (const topic of topics) {
    writer.string(topic.name).arrayCount(topic.partitions.length);
    for (const partition of topic.partitions)
      writer.int32(partition.partition).int64(partition.lowWatermark).errorCode(partition.errorCode);
  }
  endResponse(writer, start);
}
