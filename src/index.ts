/**
 * The package entry point: `import { … } from "booblik"`.
 *
 * - The embedded broker (`Broker`): topics and partitions in a data directory, no sockets.
 * - The storage engine on its own (`PartitionLog`, `Segment`) for embedding a log without topics.
 * - The record codec shared by disk and wire, CRC32C, ids, limits and typed errors.
 */
export { crc32c, crc32cImplementation } from "../ffi/crc32c.ts";
export {
  Broker,
  type BrokerOpenReport,
  type BrokerOptions,
  type PartitionDescription,
  type TopicDescription,
} from "./broker/broker.ts";
export type { AppendAck, FileLease, PurgeResult } from "./broker/partition.ts";
export {
  DEFAULT_TOPIC_CONFIG,
  DURABILITY_POLICIES,
  type DurabilityPolicy,
  TIMESTAMP_TYPES,
  type TimestampType,
  type TopicConfig,
} from "./broker/topic-config.ts";
export {
  BooblikClient,
  type ClientOptions,
  type CommitOffset,
  type FetchedOffset,
  type FetchOptions,
  type FetchResult,
  type MetadataInfo,
  type OffsetForTime,
  type OffsetsInfo,
  type TopicInfo,
} from "./client/client.ts";
export {
  BrokerConnection,
  BrokerError,
  ConnectionError,
  type ConnectionOptions,
  TimeoutError,
} from "./client/connection.ts";
export {
  type ConsumedBatch,
  type ConsumedRecord,
  Consumer,
  type ConsumerOptions,
  forEachConsumedRecord,
  headersTextOf,
  keyTextOf,
  type StartPosition,
  textOf,
} from "./client/consumer.ts";
export { checkFetchedEntries, forEachFetchedRecord } from "./client/fetched.ts";
export { PositionFile } from "./client/position-file.ts";
export {
  Producer,
  type ProducerHeaders,
  type ProducerOptions,
  type ProducerRecord,
  type SendOptions,
  type SendResult,
} from "./client/producer.ts";
export * from "./domain/errors.ts";
export {
  type Offset,
  type PartitionId,
  type Position,
  type TopicName,
  toOffset,
  toPartitionId,
  toTopicName,
} from "./domain/ids.ts";
export * as limits from "./domain/limits.ts";
export type { PurgedPartition, PurgePartition } from "./protocol/topic-admin.ts";
export type { DecodedHeader, DecodedRecord, HeaderInput, RecordInput, RecordView } from "./record/batch.ts";
export {
  decodeBatch,
  encodeBatch,
  RecordBatchReader,
  RecordBatchWriter,
  recordHeaders,
  recordKey,
  recordValue,
} from "./record/batch.ts";
export { frameRecords, RecordBatchBuilder } from "./record/batch-builder.ts";
export { payloadsOf } from "./record/codec.ts";
export { batchOfValues, valuesOfEntries } from "./record/entries.ts";
export { partitionForKey } from "./record/partitioner.ts";
export { verifyRecords } from "./record/verify.ts";
export { PartitionLog, type PartitionOpenReport, type RetentionPolicy } from "./storage/partition-log.ts";
export {
  type RecordsRead,
  Segment,
  type SegmentConfig,
  segmentConfig,
  type TimestampLookup,
} from "./storage/segment.ts";
export { WRITE_MODES, type WriteMode } from "./storage/segment-writer.ts";
