/**
 * Kafka's DescribeLogDirs (35), versions 0-4, decoded and encoded for the listener: where each
 * partition's log lives and how large it is, as `kafka-log-dirs.sh` (LogDirsCommand) and the Java
 * AdminClient's `describeLogDirs` ask for it. Sans I/O.
 *
 * Layout (apache/kafka `DescribeLogDirsRequest.json` / `DescribeLogDirsResponse.json`; v1 only
 * changed the quota behaviour; v2 is the first flexible version: COMPACT strings and arrays, a
 * TAG_BUFFER after every struct):
 *   request:  topics NULLABLE ARRAY[topic STRING, partitions ARRAY[INT32]] (null: every topic)
 *   response: throttle_time_ms INT32, error_code INT16 (v3+), results ARRAY[error_code INT16,
 *             log_dir STRING, topics ARRAY[name STRING, partitions ARRAY[partition_index INT32,
 *             partition_size INT64, offset_lag INT64, is_future_key BOOL]], total_bytes INT64 (v4+),
 *             usable_bytes INT64 (v4+)]
 *
 * Invariants: a decoder consumes its frame exactly or throws KafkaProtocolError with the byte
 * position; counts are checked against the bytes left before anything is allocated
 * (KafkaReader.arrayCount); an encoder writes one whole response frame.
 */
import { beginResponse, endResponse, isFlexible, KAFKA_API, responseHeaderVersion } from "./apis.ts";
import {
  type KafkaReader,
  type KafkaWriter,
  readNullableTopicPartitions,
  type TopicPartitions,
} from "./codec.ts";

export interface DescribeLogDirsRequest {
  /** null: every topic. */
  topics: TopicPartitions[] | null;
}

export interface LogDirPartition {
  partition: number;
  /** Bytes of the partition's segments. */
  sizeBytes: number;
  /** The log end minus the high watermark (booblik: records appended whose force is in flight). */
  offsetLag: number;
}

export interface LogDirTopic {
  name: string;
  partitions: LogDirPartition[];
}

export interface LogDirResult {
  errorCode: number;
  /** The absolute path of the log directory (booblik's data directory). */
  logDir: string;
  topics: LogDirTopic[];
  /** Of the volume holding the directory; −1 when unknown (v4+ only). */
  totalBytes: number;
  usableBytes: number;
}

export function decodeDescribeLogDirsRequest(reader: KafkaReader, version: number): DescribeLogDirsRequest {
  const flexible = isFlexible(KAFKA_API.DESCRIBE_LOG_DIRS, version);
  const topics = readNullableTopicPartitions(reader, flexible, "topics", "DescribeLogDirs");
  if (flexible) reader.skipTaggedFields("DescribeLogDirs request");
  reader.expectEnd("DescribeLogDirs request");
  return { topics };
}

export function encodeDescribeLogDirsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  errorCode: number,
  results: readonly LogDirResult[],
): void {
  const flexible = isFlexible(KAFKA_API.DESCRIBE_LOG_DIRS, version);
  const start = beginResponse(
    writer,
    correlationId,
    responseHeaderVersion(KAFKA_API.DESCRIBE_LOG_DIRS, version),
  );
  const count = (n: number) => (flexible ? writer.compactArrayCount(n) : writer.arrayCount(n));
  const text = (value: string) => (flexible ? writer.compactString(value) : writer.string(value));
  writer.int32(0); // throttle_time_ms
  if (version >= 3) writer.errorCode(errorCode);
  count(results.length);
  for (const result of results) {
    writer.errorCode(result.errorCode);
    text(result.logDir);
    count(result.topics.length);
    for (const topic of result.topics) {
      text(topic.name);
      count(topic.partitions.length);
      for (const partition of topic.partitions) {
        writer
          .int32(partition.partition)
          .int64(partition.sizeBytes)
          .int64(partition.offsetLag)
          .boolean(false);
        if (flexible) writer.emptyTaggedFields();
      }
      if (flexible) writer.emptyTaggedFields();
    }
    if (version >= 4) writer.int64(result.totalBytes).int64(result.usableBytes);
    if (flexible) writer.emptyTaggedFields();
  }
  if (flexible) writer.emptyTaggedFields();
  endResponse(writer, start);
}
