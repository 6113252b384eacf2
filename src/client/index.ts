/**
 * The client library's entry point: `import { … } from "booblik/client"`. Runs on Bun and on
 * Node.js ≥ 20 (built by `bun run build:client` into dist/client, scripts/build-client.mjs; docs/client.md "Node.js").
 *
 * It owns nothing but the list: the connection, client, producer and consumer, the record codec
 * they share with the broker, CRC32C, ids, limits and typed errors. Nothing here may reach the broker,
 * the storage engine or any `bun:` module (the broker is Bun-only; test/node/node-client.test.ts
 * imports this file's build under Node).
 */
export { crc32c, crc32cImplementation } from "../../ffi/crc32c.ts";
export {
  ACL_OPERATION,
  ACL_PERMISSION,
  type Acl,
  type AclFilter,
  CLUSTER_RESOURCE_NAME,
  describeAcl,
  MATCH_ALL_ACLS,
  PATTERN_TYPE,
  RESOURCE_TYPE,
} from "../auth/acl.ts";
export * from "../domain/errors.ts";
export {
  type Offset,
  type PartitionId,
  type Position,
  type TopicName,
  toOffset,
  toPartitionId,
  toTopicName,
} from "../domain/ids.ts";
export * as limits from "../domain/limits.ts";
export type { PurgedPartition, PurgePartition } from "../protocol/topic-admin.ts";
export type { DecodedHeader, DecodedRecord, HeaderInput, RecordInput, RecordView } from "../record/batch.ts";
export {
  decodeBatch,
  encodeBatch,
  RecordBatchReader,
  RecordBatchWriter,
  recordHeaders,
  recordKey,
  recordValue,
} from "../record/batch.ts";
export { frameRecords, RecordBatchBuilder } from "../record/batch-builder.ts";
export { payloadsOf } from "../record/codec.ts";
export { type CompressionCodec, type ProducibleCodec, ZSTD_AVAILABLE } from "../record/compression.ts";
export { batchOfValues, valuesOfEntries } from "../record/entries.ts";
export { partitionForKey } from "../record/partitioner.ts";
export { verifyRecords } from "../record/verify.ts";
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
} from "./client.ts";
export {
  BrokerConnection,
  BrokerError,
  ConnectionError,
  type ConnectionOptions,
  TimeoutError,
} from "./connection.ts";
export {
  type ConsumedBatch,
  type ConsumedRecord,
  type ConsumedRecords,
  Consumer,
  type ConsumerOptions,
  forEachConsumedRecord,
  headersTextOf,
  keyTextOf,
  type StartPosition,
  textOf,
} from "./consumer.ts";
export { checkFetchedEntries, forEachFetchedRecord } from "./fetched.ts";
export { PositionFile } from "./position-file.ts";
export {
  type Accepted,
  Producer,
  type ProducerHeaders,
  type ProducerOptions,
  type ProducerRecord,
  type SendOptions,
  type SendResult,
} from "./producer.ts";
