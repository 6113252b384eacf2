/**
 * Kafka API keys, the versions booblik's Kafka listener decodes, where each API's flexible versions
 * begin, the request and response header layouts, and Kafka's error codes. Sans I/O.
 *
 * Sources: apache/kafka `clients/src/main/resources/common/message/*.json` (versions, "flexibleVersions")
 * and `Errors.java` (codes), as summarized in kafka-wire.md §1.2-1.3.
 *
 * Request header (every version starts with the same 8 bytes, so the key, version and correlation
 * id can be read before the API is known):
 *   v0  api_key int16, api_version int16, correlation_id int32
 *   v1  v0 + client_id NULLABLE_STRING (int16 length; stays non-compact even in v2)
 *   v2  v1 + TAG_BUFFER                     (flexible versions of every API)
 * Response header:
 *   v0  correlation_id int32
 *   v1  v0 + TAG_BUFFER                     (flexible versions, except ApiVersions: always v0, so a
 *                                            client that does not know the broker's versions yet
 *                                            can read it; ApiVersionsResponse.json)
 */
import type { KafkaReader, KafkaWriter } from "./codec.ts";
import { KafkaProtocolError } from "./codec.ts";

export const KAFKA_API = {
  PRODUCE: 0,
  FETCH: 1,
  LIST_OFFSETS: 2,
  METADATA: 3,
  OFFSET_COMMIT: 8,
  OFFSET_FETCH: 9,
  FIND_COORDINATOR: 10,
  JOIN_GROUP: 11,
  HEARTBEAT: 12,
  LEAVE_GROUP: 13,
  SYNC_GROUP: 14,
  DESCRIBE_GROUPS: 15,
  LIST_GROUPS: 16,
  API_VERSIONS: 18,
  CREATE_TOPICS: 19,
  DELETE_TOPICS: 20,
  INIT_PRODUCER_ID: 22,
  CREATE_PARTITIONS: 37,
  INCREMENTAL_ALTER_CONFIGS: 44,
  ALTER_CONFIGS: 33,
  DESCRIBE_CONFIGS: 32,
  DESCRIBE_CLUSTER: 60,
  DELETE_GROUPS: 42,
  OFFSET_DELETE: 47,
  OFFSET_FOR_LEADER_EPOCH: 23,
  DELETE_RECORDS: 21,
  SASL_HANDSHAKE: 17,
  SASL_AUTHENTICATE: 36,
  DESCRIBE_ACLS: 29,
  CREATE_ACLS: 30,
  DELETE_ACLS: 31,
  DESCRIBE_LOG_DIRS: 35,
  ELECT_LEADERS: 43,
} as const;

export type KafkaApiKey = (typeof KAFKA_API)[keyof typeof KAFKA_API];

export const KAFKA_API_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(KAFKA_API).map(([name, key]) => [key, name]),
);

export interface VersionRange {
  min: number;
  max: number;
}

/**
 * Versions the codec decodes and encodes. Every maximum is the last non-flexible version except
 * ApiVersions (v3 is what librdkafka sends first), ListOffsets (v7: the first version at which the
 * Java client and kafka-python ask for MAX_TIMESTAMP, KIP-734; up to v10, below) and the APIs noted below:
 * kafkajs 2.2.4 never uses a flexible version, and librdkafka 2.0.2 only for ApiVersions
 * (kafka-wire.md §0.3). Minimums are 0: librdkafka enables
 * RecordBatch v2 only when Produce 3 and Fetch 4 lie inside the advertised ranges (§0.2).
 */
export const CODEC_VERSIONS: Record<KafkaApiKey, VersionRange> = {
  [KAFKA_API.PRODUCE]: { min: 0, max: 8 },
  [KAFKA_API.FETCH]: { min: 0, max: 11 },
  // v6 is flexible; v7 is what the Java client and kafka-python need for MAX_TIMESTAMP (−3), v8 and
  // v9 what the Java client needs for EARLIEST_LOCAL (−4) and LATEST_TIERED (−5)
  // (`kafka-get-offsets.sh --time -4`); v10 adds a timeout the request does not need here.
  [KAFKA_API.LIST_OFFSETS]: { min: 0, max: 10 },
  [KAFKA_API.METADATA]: { min: 0, max: 8 },
  // The group APIs to the last version before KIP-848 and topic ids, flexible ones included: what
  // the Java client 4.x and franz-go pick against Kafka 4.x (JoinGroup 9: KIP-814's
  // skip_assignment; OffsetCommit 9 and OffsetFetch 8-9 and FindCoordinator 4 batch groups or carry
  // KIP-848 member epochs, not served). Served up to the non-flexible ones until 2026-12-03.
  [KAFKA_API.OFFSET_COMMIT]: { min: 0, max: 8 },
  [KAFKA_API.OFFSET_FETCH]: { min: 0, max: 7 },
  [KAFKA_API.FIND_COORDINATOR]: { min: 0, max: 3 },
  [KAFKA_API.JOIN_GROUP]: { min: 0, max: 9 },
  [KAFKA_API.HEARTBEAT]: { min: 0, max: 4 },
  [KAFKA_API.LEAVE_GROUP]: { min: 0, max: 5 },
  [KAFKA_API.SYNC_GROUP]: { min: 0, max: 5 },
  // v6 (flexible from v5) answers an unknown group GROUP_ID_NOT_FOUND, as Kafka 4.x does to the
  // Java client 4.x, which asks for v6 (KIP-1043).
  [KAFKA_API.DESCRIBE_GROUPS]: { min: 0, max: 6 },
  // v3 is flexible; v4 (states filter, group state) is what the Java client needs to list groups by
  // state (`kafka-consumer-groups.sh --list --state`); v5 adds the types filter and group type.
  [KAFKA_API.LIST_GROUPS]: { min: 0, max: 5 },
  // v4 is v3's layout ("Version 4 fixes KAFKA-17011, which blocked SupportedFeatures.MinVersion in
  // the response from being 0": ApiVersionsRequest.json of kafka-clients 4.1.1). Sarama from
  // V3_9_0_0 asks v4 first on every connection, and logged an error for each UNSUPPORTED_VERSION.
  [KAFKA_API.API_VERSIONS]: { min: 0, max: 4 },
  [KAFKA_API.CREATE_TOPICS]: { min: 0, max: 4 },
  [KAFKA_API.DELETE_TOPICS]: { min: 0, max: 3 },
  [KAFKA_API.INIT_PRODUCER_ID]: { min: 0, max: 4 },
  [KAFKA_API.CREATE_PARTITIONS]: { min: 0, max: 1 },
  [KAFKA_API.INCREMENTAL_ALTER_CONFIGS]: { min: 0, max: 0 },
  // The legacy replace-all form, for clients that still send it (Sarama's AlterConfig, kafka-go's
  // Client.AlterConfigs); v1 is v0's layout, v2 flexible.
  [KAFKA_API.ALTER_CONFIGS]: { min: 0, max: 1 },
  // DescribeCluster has only flexible versions (v0+); v2 (include_fenced_brokers) is not decoded.
  [KAFKA_API.DESCRIBE_CONFIGS]: { min: 0, max: 3 },
  [KAFKA_API.DESCRIBE_CLUSTER]: { min: 0, max: 1 },
  [KAFKA_API.DELETE_GROUPS]: { min: 0, max: 1 },
  [KAFKA_API.OFFSET_DELETE]: { min: 0, max: 0 },
  [KAFKA_API.OFFSET_FOR_LEADER_EPOCH]: { min: 0, max: 3 },
  [KAFKA_API.DELETE_RECORDS]: { min: 0, max: 1 },
  // SASL (sasl.ts): handshake 0-1 advertised (librdkafka 2.0.2 enables SASL only when v0 lies in
  // the range), v0 itself refused (raw tokens follow it); authenticate non-flexible.
  [KAFKA_API.SASL_HANDSHAKE]: { min: 0, max: 1 },
  [KAFKA_API.SASL_AUTHENTICATE]: { min: 0, max: 1 },
  // ACLs (acl-messages.ts): v1 added pattern types; v2 is the first flexible version.
  [KAFKA_API.DESCRIBE_ACLS]: { min: 0, max: 1 },
  [KAFKA_API.CREATE_ACLS]: { min: 0, max: 1 },
  [KAFKA_API.DELETE_ACLS]: { min: 0, max: 1 },
  // log-dirs-messages.ts: every version, the flexible ones (v2+) included, so that the Java
  // AdminClient gets v4's volume sizes (kafka-log-dirs.sh prints them).
  [KAFKA_API.DESCRIBE_LOG_DIRS]: { min: 0, max: 4 },
  // elect-leaders-messages.ts: every version; v2 (flexible) is what the Java AdminClient picks.
  [KAFKA_API.ELECT_LEADERS]: { min: 0, max: 2 },
};

/** The first flexible version of each API ("flexibleVersions" in the message JSON). */
export const FLEXIBLE_FROM: Record<KafkaApiKey, number> = {
  [KAFKA_API.PRODUCE]: 9,
  [KAFKA_API.FETCH]: 12,
  [KAFKA_API.LIST_OFFSETS]: 6,
  [KAFKA_API.METADATA]: 9,
  [KAFKA_API.OFFSET_COMMIT]: 8,
  [KAFKA_API.OFFSET_FETCH]: 6,
  [KAFKA_API.FIND_COORDINATOR]: 3,
  [KAFKA_API.JOIN_GROUP]: 6,
  [KAFKA_API.HEARTBEAT]: 4,
  [KAFKA_API.LEAVE_GROUP]: 4,
  [KAFKA_API.SYNC_GROUP]: 4,
  [KAFKA_API.DESCRIBE_GROUPS]: 5,
  [KAFKA_API.LIST_GROUPS]: 3,
  [KAFKA_API.API_VERSIONS]: 3,
  [KAFKA_API.CREATE_TOPICS]: 5,
  [KAFKA_API.DELETE_TOPICS]: 4,
  [KAFKA_API.INIT_PRODUCER_ID]: 2,
  [KAFKA_API.CREATE_PARTITIONS]: 2,
  [KAFKA_API.INCREMENTAL_ALTER_CONFIGS]: 1,
  [KAFKA_API.ALTER_CONFIGS]: 2,
  [KAFKA_API.DESCRIBE_CONFIGS]: 4,
  [KAFKA_API.DESCRIBE_CLUSTER]: 0,
  [KAFKA_API.DELETE_GROUPS]: 2,
  [KAFKA_API.OFFSET_DELETE]: 1,
  [KAFKA_API.OFFSET_FOR_LEADER_EPOCH]: 4,
  [KAFKA_API.DELETE_RECORDS]: 2,
  // SaslHandshake has no flexible version.
  [KAFKA_API.SASL_HANDSHAKE]: Number.POSITIVE_INFINITY,
  [KAFKA_API.SASL_AUTHENTICATE]: 2,
  [KAFKA_API.DESCRIBE_ACLS]: 2,
  [KAFKA_API.CREATE_ACLS]: 2,
  [KAFKA_API.DELETE_ACLS]: 2,
  [KAFKA_API.DESCRIBE_LOG_DIRS]: 2,
  [KAFKA_API.ELECT_LEADERS]: 2,
};

export function isKafkaApiKey(apiKey: number): apiKey is KafkaApiKey {
  return KAFKA_API_NAMES[apiKey] !== undefined;
}

export function isFlexible(apiKey: KafkaApiKey, version: number): boolean {
  return version >= FLEXIBLE_FROM[apiKey];
}

/** The response header version: 1 for flexible versions, except ApiVersions (always 0). */
export function responseHeaderVersion(apiKey: KafkaApiKey, version: number): 0 | 1 {
  return apiKey !== KAFKA_API.API_VERSIONS && isFlexible(apiKey, version) ? 1 : 0;
}

/** Smallest request: api_key, api_version, correlation_id. */
export const REQUEST_HEADER_FIXED_BYTES = 8;

export interface KafkaRequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/**
 * Reads the request header of a frame (positioned at its first byte, after the size). Header v0 has
 * no client id; v1 adds it; v2 (flexible versions) adds a tag buffer.
 */
export function readRequestHeader(reader: KafkaReader, headerVersion: 0 | 1 | 2): KafkaRequestHeader {
  const apiKey = reader.int16("api_key");
  const apiVersion = reader.int16("api_version");
  const correlationId = reader.int32("correlation_id");
  const clientId = headerVersion >= 1 ? reader.nullableString("client_id") : null;
  if (headerVersion === 2) reader.skipTaggedFields("request header");
  return { apiKey, apiVersion, correlationId, clientId };
}

/** The header version a request of this API and version carries (only ControlledShutdown v0 uses 0). */
export function requestHeaderVersion(apiKey: KafkaApiKey, version: number): 1 | 2 {
  return isFlexible(apiKey, version) ? 2 : 1;
}

/**
 * Starts a response frame: a 4-byte size to patch, then the response header. Returns the size's
 * position for `endResponse`.
 */
export function beginResponse(writer: KafkaWriter, correlationId: number, headerVersion: 0 | 1): number {
  const start = writer.position;
  writer.int32(0).int32(correlationId);
  if (headerVersion === 1) writer.emptyTaggedFields();
  return start;
}

export function endResponse(writer: KafkaWriter, start: number): void {
  writer.patchInt32(start, writer.position - start - 4);
}

/** Reads the fixed 8 header bytes without moving anything: what every version shares. */
export function peekRequestHeader(frame: Uint8Array): {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
} {
  if (frame.length < REQUEST_HEADER_FIXED_BYTES) {
    throw new KafkaProtocolError(
      `a request of ${frame.length} bytes cannot hold the ${REQUEST_HEADER_FIXED_BYTES}-byte header`,
      0,
    );
  }
  const view = new DataView(frame.buffer, frame.byteOffset, REQUEST_HEADER_FIXED_BYTES);
  return { apiKey: view.getInt16(0), apiVersion: view.getInt16(2), correlationId: view.getInt32(4) };
}

/** Kafka's error codes (Errors.java) that booblik's listener answers. */
export const KAFKA_ERROR = {
  UNKNOWN_SERVER_ERROR: -1,
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  NOT_LEADER_OR_FOLLOWER: 6,
  REQUEST_TIMED_OUT: 7,
  MESSAGE_TOO_LARGE: 10,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  INVALID_TOPIC_EXCEPTION: 17,
  INVALID_REQUIRED_ACKS: 21,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  INVALID_COMMIT_OFFSET_SIZE: 28,
  UNSUPPORTED_VERSION: 35,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  INVALID_REPLICATION_FACTOR: 38,
  INVALID_REPLICA_ASSIGNMENT: 39,
  INVALID_CONFIG: 40,
  INVALID_REQUEST: 42,
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 43,
  POLICY_VIOLATION: 44,
  KAFKA_STORAGE_ERROR: 56,
  UNSUPPORTED_COMPRESSION_TYPE: 76,
  MEMBER_ID_REQUIRED: 79,
  GROUP_MAX_SIZE_REACHED: 81,
  FENCED_INSTANCE_ID: 82,
  INVALID_RECORD: 87,
  // DescribeCluster, DeleteGroups, OffsetDelete.
  NON_EMPTY_GROUP: 68,
  GROUP_ID_NOT_FOUND: 69,
  GROUP_SUBSCRIBED_TO_TOPIC: 86,
  MISMATCHED_ENDPOINT_TYPE: 114,
  // ElectLeaders: every partition of the one node already has its preferred leader.
  ELECTION_NOT_NEEDED: 84,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  INVALID_PRODUCER_EPOCH: 47,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  // ACLs (src/auth/acl.ts, acl-messages.ts).
  TOPIC_AUTHORIZATION_FAILED: 29,
  GROUP_AUTHORIZATION_FAILED: 30,
  CLUSTER_AUTHORIZATION_FAILED: 31,
  SECURITY_DISABLED: 54,
  // SASL (sasl.ts).
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  SASL_AUTHENTICATION_FAILED: 58,
} as const;

/** Kafka's name of each error code booblik answers (Errors.java); /metrics labels errors with it. */
export const KAFKA_ERROR_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(KAFKA_ERROR).map(([name, code]) => [code, name]),
);
