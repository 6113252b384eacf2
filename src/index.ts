/**
 * The package entry point: `import { … } from "booblik"`.
 *
 * - The embedded broker (`Broker`): topics and partitions in a data directory, no sockets.
 * - The storage engine on its own (`PartitionLog`, `Segment`) for embedding a log without topics.
 * - Everything of the client library's own entry, `booblik/client` (src/client/index.ts: the
 *   client, producer and consumer, the record codec shared by disk and wire, CRC32C, ids, limits
 *   and typed errors), re-exported rather than listed twice.
 */

export {
  Broker,
  type BrokerOpenReport,
  type BrokerOptions,
  type PartitionDescription,
  type TopicDescription,
} from "./broker/broker.ts";
export type { AppendAck, FileLease, PurgeResult } from "./broker/partition.ts";
export {
  CLEANUP_POLICIES,
  type CleanupPolicy,
  DEFAULT_TOPIC_CONFIG,
  DURABILITY_POLICIES,
  type DurabilityPolicy,
  TIMESTAMP_TYPES,
  type TimestampType,
  type TopicConfig,
} from "./broker/topic-config.ts";
export * from "./client/index.ts";
export { PartitionLog, type PartitionOpenReport, type RetentionPolicy } from "./storage/partition-log.ts";
export {
  type RecordsRead,
  Segment,
  type SegmentConfig,
  segmentConfig,
  type TimestampLookup,
} from "./storage/segment.ts";
export { WRITE_MODES, type WriteMode } from "./storage/segment-writer.ts";
