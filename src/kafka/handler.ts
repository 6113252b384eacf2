/**
 * Answers one Kafka request frame against the socket-free Broker: decodes it (codec in messages.ts),
 * runs it, and encodes the whole response frame. No sockets: the listener (listener.ts) owns those,
 * so every answer here is testable over bytes.
 *
 * Owns: which APIs and versions are advertised (ApiVersions) and served, the single-node answers of
 * kafka-wire.md §1.4 (node id 1, leader 1, replicas [1], epoch −1), the mapping of booblik's errors
 * and topic settings to Kafka's, and what happens to a request booblik does not speak.
 *
 * Rules:
 * - A request for an API key this listener does not serve, or for a version outside the advertised
 *   range, cannot be answered in a layout the client expects: the result is `close` with the reason
 *   (Kafka closes the connection for an unknown API key, SocketServer.scala). Two exceptions:
 *   ApiVersions above v3 is answered UNSUPPORTED_VERSION (35) in the v0 layout with the full list
 *   (KIP-511; librdkafka retries lower).
 * - InitProducerId (v0-4) hands out a new producer id with epoch 0 to every producer that is not
 *   transactional (Kafka does the same for a null transactional_id, bump request or not); a
 *   transactional one is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): booblik has no
 *   transactions, and this is the code every client treats as fatal at once with a message naming
 *   the transactional id (a retriable code would make the Java client retry until its timeout).
 * - A malformed request is `close` too: the stream cannot be trusted past it.
 * - Per-topic and per-partition failures are error codes in the response, never a closed connection.
 */
import fs from "node:fs";
import {
  ACL_OPERATION,
  type AclFilter,
  type AclResourceType,
  ANONYMOUS_PRINCIPAL,
  CLUSTER_RESOURCE_NAME,
  describeAcl,
  RESOURCE_TYPE,
  validateAcl,
  validateFilter,
} from "../auth/acl.ts";
import { Broker, type TopicDescription } from "../broker/broker.ts";
import { type CoordinatorOptions, GroupCoordinator, type GroupError } from "../broker/groups.ts";
import { groupIdProblem, metadataProblem, type OffsetCommitEntry } from "../broker/offsets-store.ts";
import type { AppendSender } from "../broker/partition.ts";
import {
  type CleanupPolicy,
  DEFAULT_TOPIC_CONFIG,
  type TopicConfig,
  validateTopicConfig,
} from "../broker/topic-config.ts";
import { BooblikError, UnknownTopicOrPartitionError } from "../domain/errors.ts";
import { toTopicName } from "../domain/ids.ts";
import {
  ACL_REQUEST_ENTRIES_MAX,
  GROUP_SESSION_TIMEOUT_MS_MAX,
  GROUP_SESSION_TIMEOUT_MS_MIN,
  OFFSETS_TOPIC_NAME,
  PARTITIONS_MAX,
} from "../domain/limits.ts";
import {
  type AclResult,
  type DeleteAclsFilterResult,
  decodeCreateAclsRequest,
  decodeDeleteAclsRequest,
  decodeDescribeAclsRequest,
  encodeCreateAclsResponse,
  encodeDeleteAclsResponse,
  encodeDescribeAclsResponse,
} from "./acl-messages.ts";
import {
  CONFIG_SOURCE,
  CONFIG_TYPE,
  type DescribeConfigsResult,
  decodeDeleteGroupsRequest,
  decodeDescribeClusterRequest,
  decodeDescribeConfigsRequest,
  decodeOffsetDeleteRequest,
  decodeOffsetForLeaderEpochRequest,
  ENDPOINT_TYPE,
  type EpochEndOffset,
  encodeDeleteGroupsResponse,
  encodeDescribeClusterResponse,
  encodeDescribeConfigsResponse,
  encodeOffsetDeleteResponse,
  encodeOffsetForLeaderEpochResponse,
  type PartitionOutcomes,
} from "./admin-messages.ts";
import {
  CODEC_VERSIONS,
  isKafkaApiKey,
  KAFKA_API,
  KAFKA_API_NAMES,
  KAFKA_ERROR,
  type KafkaApiKey,
  peekRequestHeader,
  readRequestHeader,
  requestHeaderVersion,
  type VersionRange,
} from "./apis.ts";
import { KafkaProtocolError, KafkaReader, KafkaWriter } from "./codec.ts";
import {
  type DeleteRecordsPartitionResult,
  type DeleteRecordsTopicResult,
  decodeDeleteRecordsRequest,
  encodeDeleteRecordsResponse,
} from "./delete-records-messages.ts";
import {
  decodeElectLeadersRequest,
  type ElectionResult,
  encodeElectLeadersResponse,
} from "./elect-leaders-messages.ts";
import { type KafkaError, kafkaErrorOf } from "./errors.ts";
import { FetchBufferPool } from "./fetch-buffers.ts";
import {
  CLASSIC_GROUP_TYPE,
  type DescribedGroup,
  decodeDescribeGroupsRequest,
  decodeHeartbeatRequest,
  decodeJoinGroupRequest,
  decodeLeaveGroupRequest,
  decodeListGroupsRequest,
  decodeOffsetCommitRequest,
  decodeOffsetFetchRequest,
  decodeSyncGroupRequest,
  encodeDescribeGroupsResponse,
  encodeHeartbeatResponse,
  encodeJoinGroupResponse,
  encodeLeaveGroupResponse,
  encodeListGroupsResponse,
  encodeOffsetCommitResponse,
  encodeOffsetFetchResponse,
  encodeSyncGroupResponse,
  type OffsetFetchPartition,
  type PartitionErrors,
} from "./group-messages.ts";
import {
  decodeDescribeLogDirsRequest,
  encodeDescribeLogDirsResponse,
  type LogDirTopic,
} from "./log-dirs-messages.ts";
import {
  decodeApiVersionsRequest,
  decodeCreateTopicsRequest,
  decodeDeleteTopicsRequest,
  decodeFetchRequest,
  decodeFindCoordinatorRequest,
  decodeInitProducerIdRequest,
  decodeListOffsetsRequest,
  decodeMetadataRequest,
  decodeProduceRequest,
  encodeApiVersionsResponse,
  encodeCreateTopicsResponse,
  encodeDeleteTopicsResponse,
  encodeFetchResponse,
  encodeFindCoordinatorResponse,
  encodeInitProducerIdResponse,
  encodeListOffsetsResponse,
  encodeMetadataResponse,
  encodeProduceResponse,
  type FetchResponse,
  type FileCut,
  LIST_OFFSETS_EARLIEST,
  LIST_OFFSETS_EARLIEST_LOCAL,
  LIST_OFFSETS_LATEST,
  LIST_OFFSETS_LATEST_TIERED,
  LIST_OFFSETS_MAX_TIMESTAMP,
  type ListOffsetsPartitionResponse,
  type MetadataTopic,
  pieceBytes,
  type TopicResult,
} from "./messages.ts";
import { fetchRecords, type KafkaTraffic, newKafkaTraffic, produceRecords } from "./records.ts";
import {
  type AlterableConfig,
  type AlterConfigsResult,
  CONFIG_OPERATION,
  CONFIG_RESOURCE_BROKER,
  CONFIG_RESOURCE_TOPIC,
  decodeAlterConfigsRequest,
  decodeCreatePartitionsRequest,
  decodeIncrementalAlterConfigsRequest,
  encodeAlterConfigsResponse,
  encodeCreatePartitionsResponse,
  encodeIncrementalAlterConfigsResponse,
  type IncrementalAlterConfigsRequest,
} from "./topic-admin-messages.ts";

/** This broker's node id in every answer: a single node is its own leader, controller, coordinator. */
export const KAFKA_NODE_ID = 1;
/** Kafka's "no leader epoch": booblik stamps −1 into every batch (common.md §2). */
export const NO_LEADER_EPOCH = -1;
/** A member's metadata in DescribeGroups while its group rebalances: none, as Kafka answers. */
const NO_METADATA = new Uint8Array(0);

/** MetadataResponse cluster_id (v2+): a constant, there is one node. */
export const KAFKA_CLUSTER_ID = "booblik";

/**
 * APIs advertised and served now, with their versions. Produce from v0, so that librdkafka 2.0
 * enables RecordBatch v2 (it needs Produce 3 and Fetch 4 inside the ranges, kafka-wire.md §0.2);
 * a magic 0/1 message set is refused (records.ts). The group APIs (this node is every group's
 * coordinator; src/broker/groups.ts) in the versions kcat and kafkajs send (kafka-wire.md §1.2);
 * librdkafka 2.0.2 also needs FindCoordinator advertised to enable lz4 (docs/kafka.md).
 */
export const ADVERTISED_VERSIONS: ReadonlyMap<KafkaApiKey, VersionRange> = new Map<KafkaApiKey, VersionRange>(
  [
    [KAFKA_API.API_VERSIONS, CODEC_VERSIONS[KAFKA_API.API_VERSIONS]],
    [KAFKA_API.PRODUCE, CODEC_VERSIONS[KAFKA_API.PRODUCE]],
    [KAFKA_API.FETCH, CODEC_VERSIONS[KAFKA_API.FETCH]],
    [KAFKA_API.METADATA, CODEC_VERSIONS[KAFKA_API.METADATA]],
    [KAFKA_API.LIST_OFFSETS, CODEC_VERSIONS[KAFKA_API.LIST_OFFSETS]],
    [KAFKA_API.CREATE_TOPICS, CODEC_VERSIONS[KAFKA_API.CREATE_TOPICS]],
    [KAFKA_API.DELETE_TOPICS, CODEC_VERSIONS[KAFKA_API.DELETE_TOPICS]],
    [KAFKA_API.FIND_COORDINATOR, CODEC_VERSIONS[KAFKA_API.FIND_COORDINATOR]],
    [KAFKA_API.JOIN_GROUP, CODEC_VERSIONS[KAFKA_API.JOIN_GROUP]],
    [KAFKA_API.SYNC_GROUP, CODEC_VERSIONS[KAFKA_API.SYNC_GROUP]],
    [KAFKA_API.HEARTBEAT, CODEC_VERSIONS[KAFKA_API.HEARTBEAT]],
    [KAFKA_API.LEAVE_GROUP, CODEC_VERSIONS[KAFKA_API.LEAVE_GROUP]],
    [KAFKA_API.OFFSET_COMMIT, CODEC_VERSIONS[KAFKA_API.OFFSET_COMMIT]],
    [KAFKA_API.OFFSET_FETCH, CODEC_VERSIONS[KAFKA_API.OFFSET_FETCH]],
    [KAFKA_API.LIST_GROUPS, CODEC_VERSIONS[KAFKA_API.LIST_GROUPS]],
    [KAFKA_API.DESCRIBE_GROUPS, CODEC_VERSIONS[KAFKA_API.DESCRIBE_GROUPS]],
    // Topics that change (Broker.addPartitions).
    [KAFKA_API.CREATE_PARTITIONS, CODEC_VERSIONS[KAFKA_API.CREATE_PARTITIONS]],
    [KAFKA_API.INCREMENTAL_ALTER_CONFIGS, CODEC_VERSIONS[KAFKA_API.INCREMENTAL_ALTER_CONFIGS]],
    [KAFKA_API.ALTER_CONFIGS, CODEC_VERSIONS[KAFKA_API.ALTER_CONFIGS]],
    // What the Java AdminClient and consumers use beyond the core set (admin-messages.ts).
    [KAFKA_API.DESCRIBE_CONFIGS, CODEC_VERSIONS[KAFKA_API.DESCRIBE_CONFIGS]],
    [KAFKA_API.DESCRIBE_CLUSTER, CODEC_VERSIONS[KAFKA_API.DESCRIBE_CLUSTER]],
    [KAFKA_API.DELETE_GROUPS, CODEC_VERSIONS[KAFKA_API.DELETE_GROUPS]],
    [KAFKA_API.OFFSET_DELETE, CODEC_VERSIONS[KAFKA_API.OFFSET_DELETE]],
    [KAFKA_API.OFFSET_FOR_LEADER_EPOCH, CODEC_VERSIONS[KAFKA_API.OFFSET_FOR_LEADER_EPOCH]],
    // Records purged below a point (Broker.purge).
    [KAFKA_API.DELETE_RECORDS, CODEC_VERSIONS[KAFKA_API.DELETE_RECORDS]],
    // The data directory and each partition's size on disk (log-dirs-messages.ts).
    [KAFKA_API.DESCRIBE_LOG_DIRS, CODEC_VERSIONS[KAFKA_API.DESCRIBE_LOG_DIRS]],
    // One node leads every partition: Kafka's "not needed" (elect-leaders-messages.ts).
    [KAFKA_API.ELECT_LEADERS, CODEC_VERSIONS[KAFKA_API.ELECT_LEADERS]],
    // Idempotent producers (producer-state.ts); transactional ids are refused.
    [KAFKA_API.INIT_PRODUCER_ID, CODEC_VERSIONS[KAFKA_API.INIT_PRODUCER_ID]],
    // ACLs (acl-messages.ts; src/broker/acl-store.ts): SECURITY_DISABLED without --authorizer acl.
    [KAFKA_API.DESCRIBE_ACLS, CODEC_VERSIONS[KAFKA_API.DESCRIBE_ACLS]],
    [KAFKA_API.CREATE_ACLS, CODEC_VERSIONS[KAFKA_API.CREATE_ACLS]],
    [KAFKA_API.DELETE_ACLS, CODEC_VERSIONS[KAFKA_API.DELETE_ACLS]],
    // SASL (sasl.ts): answered by the listener before a login; here only when there are no users.
    [KAFKA_API.SASL_HANDSHAKE, CODEC_VERSIONS[KAFKA_API.SASL_HANDSHAKE]],
    [KAFKA_API.SASL_AUTHENTICATE, CODEC_VERSIONS[KAFKA_API.SASL_AUTHENTICATE]],
  ],
);

export interface KafkaHandlerOptions {
  /** What Metadata tells clients to connect to (the advertised listener). */
  advertisedHost: string;
  advertisedPort: number;
  /**
   * The admin request rate per client address (server/admin-rate.ts has the implementation): takes
   * one topic create or delete, or throws a retriable LIMIT_EXCEEDED naming the wait.
   */
  adminRate?: { take(clientAddress: string): void };
  /** The group coordinator's session-timeout bounds (tests lower the minimum). */
  groups?: CoordinatorOptions;
  /**
   * The groups of another handler of the same listener (a TLS port beside the plain one advertises
   * itself but shares the groups): one coordinator per broker.
   */
  sharedGroups?: GroupCoordinator;
  /** The listener's Fetch buffers (fetch-buffers.ts), shared by its ports; default: a pool of its own. */
  fetchBuffers?: FetchBufferPool;
  /**
   * Send large stored batches from their segment files with sendfile (`--kafka-fetch-path
   * sendfile`); only for a plain port: sendfile would bypass TLS. Default: copy every batch, each
   * checked (docs/kafka.md "Fetch path" says why that is the default).
   */
  fetchSendfile?: boolean;
  /**
   * `--kafka-auto-create-topics on`: a Metadata request naming a topic that does not exist, with
   * `allow_auto_topic_creation` (always, before v4), creates it with this many partitions and the
   * broker's topic defaults. Absent: off (the default), topics are created only when asked for.
   */
  autoCreateTopics?: { partitions: number };
  /** One audit line per ACL denial and ACL change (the listener's log). */
  audit?: (line: string) => void;
}

/** Who sends a request: the principal (`User:<name>`, or `User:ANONYMOUS`) and the client's address. */
interface Who {
  principal: string;
  host: string;
  /** The SASL user name, for audit lines (undefined: anonymous). */
  user: string | undefined;
  /** The connection, for the gather before a force (src/broker/partition.ts); none in tests. */
  sender: AppendSender | undefined;
}

/** Kafka's code for each outcome of the group coordinator. */
const GROUP_ERROR_CODES: Record<GroupError, number> = {
  NONE: KAFKA_ERROR.NONE,
  COORDINATOR_NOT_AVAILABLE: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
  ILLEGAL_GENERATION: KAFKA_ERROR.ILLEGAL_GENERATION,
  INCONSISTENT_GROUP_PROTOCOL: KAFKA_ERROR.INCONSISTENT_GROUP_PROTOCOL,
  INVALID_GROUP_ID: KAFKA_ERROR.INVALID_GROUP_ID,
  UNKNOWN_MEMBER_ID: KAFKA_ERROR.UNKNOWN_MEMBER_ID,
  INVALID_SESSION_TIMEOUT: KAFKA_ERROR.INVALID_SESSION_TIMEOUT,
  REBALANCE_IN_PROGRESS: KAFKA_ERROR.REBALANCE_IN_PROGRESS,
  GROUP_MAX_SIZE_REACHED: KAFKA_ERROR.GROUP_MAX_SIZE_REACHED,
  MEMBER_ID_REQUIRED: KAFKA_ERROR.MEMBER_ID_REQUIRED,
  FENCED_INSTANCE_ID: KAFKA_ERROR.FENCED_INSTANCE_ID,
};

/** What to do with a request: send these bytes (none for Produce acks=0), or close the connection. */
export type KafkaOutcome =
  /**
   * `release`: called once the response was sent whole, or its connection closed (a Fetch's pooled
   * buffer, fetch-buffers.ts, and the leases of its file pieces). `files`: ranges of segment files
   * sent with sendfile between the bytes, each before the byte of `bytes` at its `at`.
   */
  | {
      kind: "respond";
      bytes: Uint8Array;
      release?: () => void;
      files?: readonly FileCut[];
      /** The non-zero error codes the answer carries (KafkaWriter.errorCodes), for /metrics. */
      errorCodes?: readonly number[];
    }
  | { kind: "silent" }
  | { kind: "close"; reason: string };

/**
 * Kafka topic configs booblik has, by Kafka's name (TopicConfig.java), and how each value maps onto
 * booblik's setting. Booblik's own settings go under `booblik.`. Anything else is INVALID_CONFIG.
 */
const TOPIC_CONFIGS: Record<string, (value: string) => Partial<TopicConfig>> = {
  "retention.ms": (value) => ({ retentionMs: kafkaLimit("retention.ms", value) }),
  "retention.bytes": (value) => ({ retentionBytes: kafkaLimit("retention.bytes", value) }),
  "segment.bytes": (value) => ({ segmentBytes: kafkaInteger("segment.bytes", value) }),
  "max.message.bytes": (value) => ({ maxRecordBytes: kafkaInteger("max.message.bytes", value) }),
  "message.timestamp.type": (value) => ({ timestampType: value as TopicConfig["timestampType"] }),
  "cleanup.policy": (value) => ({ cleanupPolicy: kafkaCleanupPolicy(value) }),
  "booblik.durability": (value) => ({ durability: value as TopicConfig["durability"] }),
  "booblik.flush.interval.ms": (value) => ({
    flushIntervalMs: kafkaInteger("booblik.flush.interval.ms", value),
  }),
  "booblik.write.mode": (value) => ({ writeMode: value as TopicConfig["writeMode"] }),
};

/** The booblik setting each Kafka config name of TOPIC_CONFIGS sets (for DELETE: back to the default). */
const TOPIC_CONFIG_KEYS: Record<string, keyof TopicConfig> = {
  "retention.ms": "retentionMs",
  "retention.bytes": "retentionBytes",
  "segment.bytes": "segmentBytes",
  "max.message.bytes": "maxRecordBytes",
  "message.timestamp.type": "timestampType",
  "cleanup.policy": "cleanupPolicy",
  "booblik.durability": "durability",
  "booblik.flush.interval.ms": "flushIntervalMs",
  "booblik.write.mode": "writeMode",
};

/**
 * A refusal of Broker.alterTopic, which starts with booblik's setting name ("maxRecordBytes can only
 * increase …"), with the Kafka config name the client sent instead ("max.message.bytes can only
 * increase …"): the client knows no other (a reviewer's run, 2026-12-02).
 */
function withKafkaConfigName(message: string): string {
  for (const [kafkaName, key] of Object.entries(TOPIC_CONFIG_KEYS))
    if (message.startsWith(`${key} `)) return `${kafkaName}${message.slice(key.length)}`;
  return message;
}

/** What DescribeConfigs answers for each setting of TOPIC_CONFIGS: Kafka's type and a line of text. */
const DESCRIBED_CONFIGS: Record<string, { configType: number; documentation: string }> = {
  "retention.ms": {
    configType: CONFIG_TYPE.LONG,
    documentation: "Delete sealed segments older than this (-1: keep).",
  },
  "retention.bytes": {
    configType: CONFIG_TYPE.LONG,
    documentation: "Delete old sealed segments beyond this many bytes per partition (-1: keep).",
  },
  "segment.bytes": { configType: CONFIG_TYPE.INT, documentation: "Size at which a segment is sealed." },
  "max.message.bytes": {
    configType: CONFIG_TYPE.INT,
    documentation: "Largest record batch accepted, whole.",
  },
  "message.timestamp.type": {
    configType: CONFIG_TYPE.STRING,
    documentation: "CreateTime (the producer's) or LogAppendTime (the broker's clock at append).",
  },
  "cleanup.policy": {
    configType: CONFIG_TYPE.LIST,
    documentation:
      "delete (retention applies), compact or compact,delete. booblik never compacts: a compacted topic keeps every record (so readers still see at least the latest per key), needs a key on every record, and compact alone applies no retention.",
  },
  "booblik.durability": {
    configType: CONFIG_TYPE.STRING,
    documentation: "When a produce is acknowledged: append, force (after fdatasync) or interval.",
  },
  "booblik.flush.interval.ms": {
    configType: CONFIG_TYPE.LONG,
    documentation: "Force interval of the interval durability policy.",
  },
  "booblik.write.mode": { configType: CONFIG_TYPE.STRING, documentation: "How segments are written." },
};

/** One broker setting as DescribeConfigs answers it. */
interface BrokerConfig {
  name: string;
  value: string;
  /** booblik's default, not set at the broker's start. */
  isDefault: boolean;
  configType: number;
  documentation: string;
}

/** A booblik setting in Kafka's form: null limits are −1. */
function kafkaValue(value: TopicConfig[keyof TopicConfig]): string {
  return value === null ? "-1" : String(value);
}

/**
 * Topics the live members of a group subscribe to (for OffsetDelete): read from each member's
 * ConsumerProtocol subscription (version INT16, topics ARRAY[STRING], …). A group of another
 * protocol type, or a subscription that does not parse, counts as subscribed to everything, which
 * refuses rather than deletes an offset a member may be using.
 */
function subscribedTopics(
  protocolType: string,
  members: readonly { metadata: Uint8Array }[],
): Set<string> | "all" {
  const topics = new Set<string>();
  if (members.length === 0) return topics;
  if (protocolType !== "consumer") return "all";
  for (const member of members) {
    try {
      const reader = new KafkaReader(member.metadata);
      reader.int16("subscription version");
      const count = reader.arrayCount("subscribed topics", 2);
      for (let i = 0; i < count; i++) topics.add(reader.string("subscribed topic"));
    } catch {
      return "all";
    }
  }
  return topics;
}

class InvalidConfigError extends BooblikError {
  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
  }
}

function kafkaInteger(name: string, value: string): number {
  const parsed = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(parsed))
    throw new InvalidConfigError(`${name} must be an integer, got ${JSON.stringify(value)}`);
  return parsed;
}

/**
 * Kafka's `cleanup.policy`, a list of `delete` and `compact` in any order (Kafka's LIST type: commas,
 * spaces around them), as booblik's canonical value. An empty list (Kafka 4.x: no cleanup at all) is
 * not one booblik has, and is refused with the rest.
 */
function kafkaCleanupPolicy(value: string): CleanupPolicy {
  const policies = new Set(value.split(",").map((policy) => policy.trim()));
  if (policies.size === 1 && policies.has("delete")) return "delete";
  if (policies.size === 1 && policies.has("compact")) return "compact";
  if (policies.size === 2 && policies.has("delete") && policies.has("compact")) return "compact,delete";
  throw new InvalidConfigError(
    `cleanup.policy must be delete, compact or compact,delete, got ${JSON.stringify(value)}`,
  );
}

/** cleanup.policy after an APPEND (`append`) or SUBTRACT of the comma-separated `values`. */
function appliedListOperation(current: CleanupPolicy, append: boolean, values: string): CleanupPolicy {
  const named = values.split(",").map((value) => value.trim());
  const policies = current.split(",").filter((policy) => append || !named.includes(policy));
  if (append) for (const value of named) if (!policies.includes(value)) policies.push(value);
  return kafkaCleanupPolicy(policies.join(","));
}

/** Kafka's −1 means "no limit", booblik's null. */
function kafkaLimit(name: string, value: string): number | null {
  const parsed = kafkaInteger(name, value);
  return parsed === -1 ? null : parsed;
}

export class KafkaHandler {
  private readonly broker: Broker;
  private readonly options: KafkaHandlerOptions;
  /** One writer for every response: each is encoded without an await and copied out at once. */
  private readonly writer = new KafkaWriter(4096);
  /** Buffers of the Fetch path's reads and responses, reused (fetch-buffers.ts). */
  private readonly fetchBuffers: FetchBufferPool;
  private readonly stopSignal: { stopped: boolean; promise: Promise<void> };
  private resolveStop!: () => void;
  /** Groups and their members (kept across restarts in the broker's OffsetsStore, with the commits). */
  readonly groups: GroupCoordinator;
  /** Records and bytes this port's clients produced and fetched (the listener sums its ports). */
  readonly traffic: KafkaTraffic = newKafkaTraffic();

  constructor(broker: Broker, options: KafkaHandlerOptions) {
    this.broker = broker;
    this.options = options;
    this.groups =
      options.sharedGroups ??
      new GroupCoordinator({
        ...options.groups,
        hasCommittedOffsets: (groupId) => broker.offsets.hasCommits(groupId),
        store: broker.offsets,
      });
    this.fetchBuffers = options.fetchBuffers ?? new FetchBufferPool();
    this.stopSignal = {
      stopped: false,
      promise: new Promise<void>((resolve) => {
        this.resolveStop = resolve;
      }),
    };
  }

  /** Ends every long poll now (each is answered with what there is); for the listener's stop. */
  stop(): void {
    // Parked JoinGroup and SyncGroup requests are answered COORDINATOR_NOT_AVAILABLE.
    this.groups.close();
    this.stopSignal.stopped = true;
    this.resolveStop();
  }

  /** Answers one request frame (the bytes after its 4-byte size). */
  async handle(
    frame: Uint8Array,
    clientAddress = "",
    user?: string,
    sender?: AppendSender,
  ): Promise<KafkaOutcome> {
    const who: Who = {
      principal: user === undefined ? ANONYMOUS_PRINCIPAL : `User:${user}`,
      host: clientAddress,
      user,
      sender,
    };
    let peeked: ReturnType<typeof peekRequestHeader>;
    try {
      peeked = peekRequestHeader(frame);
    } catch (error) {
      return { kind: "close", reason: (error as Error).message };
    }
    const { apiKey, apiVersion, correlationId } = peeked;
    const name = KAFKA_API_NAMES[apiKey];
    if (!isKafkaApiKey(apiKey)) {
      return {
        kind: "close",
        reason: `unknown API key ${apiKey} (version ${apiVersion}); booblik serves ${describeAdvertised()}`,
      };
    }
    const advertised = ADVERTISED_VERSIONS.get(apiKey);
    if (apiKey === KAFKA_API.API_VERSIONS && advertised !== undefined && apiVersion > advertised.max) {
      return this.respond(this.apiVersions(apiVersion, correlationId, KAFKA_ERROR.UNSUPPORTED_VERSION));
    }
    if (advertised === undefined || apiVersion < advertised.min || apiVersion > advertised.max) {
      const range =
        advertised === undefined ? "not served" : `served in versions ${advertised.min}-${advertised.max}`;
      return {
        kind: "close",
        reason: `${name} (API key ${apiKey}) version ${apiVersion} is not supported: ${range}`,
      };
    }
    const reader = new KafkaReader(frame);
    try {
      const header = readRequestHeader(reader, requestHeaderVersion(apiKey, apiVersion));
      switch (apiKey) {
        case KAFKA_API.API_VERSIONS:
          decodeApiVersionsRequest(reader, apiVersion);
          return this.respond(this.apiVersions(apiVersion, correlationId, KAFKA_ERROR.NONE));
        case KAFKA_API.PRODUCE:
          return await this.produce(reader, apiVersion, correlationId, who);
        case KAFKA_API.FETCH: {
          const request = decodeFetchRequest(reader, apiVersion);
          return await fetchRecords(
            this.broker,
            request,
            apiVersion,
            this.stopSignal,
            (topic) => this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, topic),
            this.fetchBuffers,
            (response, leases): KafkaOutcome => {
              // A buffer of its own (from the pool, for sizes worth reusing), sized for the records
              // and handed over without a copy: the records are most of a fetch response, and the
              // shared writer would copy them a second time. The listener gives it back once the
              // response is written whole.
              const buffer = this.fetchBuffers.acquire(fetchResponseBytesHint(response));
              const writer = new KafkaWriter(buffer);
              const files: FileCut[] = [];
              try {
                encodeFetchResponse(writer, apiVersion, correlationId, response, files);
              } catch (error) {
                this.fetchBuffers.release(buffer);
                throw error; // fetchRecords releases the leases
              }
              for (const topic of response.topics)
                for (const partition of topic.partitions)
                  for (const piece of partition.records ?? []) this.traffic.fetchBytes += pieceBytes(piece);
              // The hint was short and the writer grew into a buffer of its own (not expected;
              // correct either way): the pooled one holds nothing the answer needs.
              const pooled = writer.bytes === buffer;
              if (!pooled) this.fetchBuffers.release(buffer);
              const bytes = writer.written();
              const outcome: Extract<KafkaOutcome, { kind: "respond" }> = { kind: "respond", bytes };
              if (writer.errorCodes.length > 0) outcome.errorCodes = writer.errorCodes;
              if (files.length > 0) outcome.files = files;
              // Held until written whole or its connection closes (the listener calls `release`
              // once, either way), against the room later Fetch rounds read into.
              this.fetchBuffers.hold(bytes.length);
              outcome.release = () => {
                this.fetchBuffers.unhold(bytes.length);
                if (pooled) this.fetchBuffers.release(buffer);
                for (const lease of leases) lease.release();
              };
              return outcome;
            },
            this.options.fetchSendfile === true,
          );
        }
        case KAFKA_API.METADATA:
          return this.metadata(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.LIST_OFFSETS:
          return this.listOffsets(reader, apiVersion, correlationId, who);
        case KAFKA_API.CREATE_TOPICS:
          return await this.createTopics(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.DELETE_TOPICS:
          return await this.deleteTopics(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.CREATE_PARTITIONS:
          return this.createPartitions(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.INCREMENTAL_ALTER_CONFIGS:
          return await this.incrementalAlterConfigs(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.ALTER_CONFIGS:
          return await this.alterConfigs(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.FIND_COORDINATOR: {
          // This node coordinates every group (and would every transaction: key_type 1 gets the
          // same answer, kafka-wire.md §1.4; InitProducerId then refuses).
          const { keyType, key } = decodeFindCoordinatorRequest(reader, apiVersion);
          const groupRefusal =
            keyType === 0 ? this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, key) : undefined;
          if (groupRefusal !== undefined) {
            return this.respond((writer) =>
              encodeFindCoordinatorResponse(writer, apiVersion, correlationId, {
                errorCode: groupRefusal.code,
                errorMessage: groupRefusal.message,
                nodeId: -1,
                host: "",
                port: -1,
              }),
            );
          }
          // A group's coordinator: Kafka creates __consumer_offsets at that moment; so does booblik.
          // While it cannot (a full disk), Kafka answers COORDINATOR_NOT_AVAILABLE and clients ask
          // again; before 2026-12-03 the error closed the connection
          // (test/kafka/offsets-full-disk.test.ts).
          if (keyType === 0) {
            try {
              this.broker.ensureOffsetsTopic();
            } catch (error) {
              const { message } = kafkaErrorOf(error);
              return this.respond((writer) =>
                encodeFindCoordinatorResponse(writer, apiVersion, correlationId, {
                  errorCode: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
                  errorMessage: `the offsets topic ${OFFSETS_TOPIC_NAME} cannot be created: ${message}`,
                  nodeId: -1,
                  host: "",
                  port: -1,
                }),
              );
            }
          }
          return this.respond((writer) =>
            encodeFindCoordinatorResponse(writer, apiVersion, correlationId, {
              errorCode: KAFKA_ERROR.NONE,
              errorMessage: null,
              nodeId: KAFKA_NODE_ID,
              host: this.options.advertisedHost,
              port: this.options.advertisedPort,
            }),
          );
        }
        case KAFKA_API.JOIN_GROUP:
          return await this.joinGroup(
            who,
            reader,
            apiVersion,
            correlationId,
            header.clientId ?? "",
            clientAddress,
          );
        case KAFKA_API.SYNC_GROUP: {
          const request = decodeSyncGroupRequest(reader, apiVersion);
          const refusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.GROUP, request.groupId);
          if (refusal !== undefined) {
            return this.respond((writer) =>
              encodeSyncGroupResponse(writer, apiVersion, correlationId, {
                errorCode: refusal.code,
                assignment: new Uint8Array(0),
              }),
            );
          }
          const result = await this.groups.sync(
            request.groupId,
            request.generationId,
            request.memberId,
            request.assignments,
            request.groupInstanceId,
            { type: request.protocolType, name: request.protocolName },
          );
          // v5+ answers the group's protocol type and name (the Java client checks them against
          // its own); null with an error, as Kafka answers.
          const protocols = result.error === "NONE" ? this.groups.protocolsOf(request.groupId) : undefined;
          return this.respond((writer) =>
            encodeSyncGroupResponse(writer, apiVersion, correlationId, {
              errorCode: GROUP_ERROR_CODES[result.error],
              assignment: result.assignment,
              protocolType: protocols?.protocolType ?? null,
              protocolName: protocols?.protocolName ?? null,
            }),
          );
        }
        case KAFKA_API.HEARTBEAT: {
          const request = decodeHeartbeatRequest(reader, apiVersion);
          const refusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.GROUP, request.groupId);
          const errorCode =
            refusal?.code ??
            GROUP_ERROR_CODES[
              this.groups.heartbeat(
                request.groupId,
                request.generationId,
                request.memberId,
                request.groupInstanceId,
              )
            ];
          return this.respond((writer) =>
            encodeHeartbeatResponse(writer, apiVersion, correlationId, errorCode),
          );
        }
        case KAFKA_API.LEAVE_GROUP: {
          const request = decodeLeaveGroupRequest(reader, apiVersion);
          const refusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.GROUP, request.groupId);
          if (refusal !== undefined) {
            return this.respond((writer) =>
              encodeLeaveGroupResponse(writer, apiVersion, correlationId, {
                errorCode: refusal.code,
                members: request.members.map((member) => ({ ...member, errorCode: refusal.code })),
              }),
            );
          }
          const errors = this.groups.leave(request.groupId, request.members);
          // v0-2 carry one member: its outcome is the response's error; v3+ answer per member.
          const errorCode = apiVersion < 3 ? GROUP_ERROR_CODES[errors[0]!] : KAFKA_ERROR.NONE;
          return this.respond((writer) =>
            encodeLeaveGroupResponse(writer, apiVersion, correlationId, {
              errorCode,
              members: request.members.map((member, i) => ({
                ...member,
                errorCode: GROUP_ERROR_CODES[errors[i]!],
              })),
            }),
          );
        }
        case KAFKA_API.OFFSET_COMMIT:
          return await this.offsetCommit(reader, apiVersion, correlationId, who);
        case KAFKA_API.OFFSET_FETCH:
          return this.offsetFetch(reader, apiVersion, correlationId, who);
        case KAFKA_API.LIST_GROUPS: {
          const request = decodeListGroupsRequest(reader, apiVersion);
          const all = this.groups.list();
          const known = new Set(all.map((group) => group.groupId));
          // Groups without members but with committed offsets exist too (Kafka lists them Empty).
          for (const groupId of this.broker.offsets.groupIds())
            if (!known.has(groupId))
              all.push({ groupId, protocolType: this.groups.emptiedProtocolType(groupId), state: "Empty" });
          // Kafka's ListGroups: every group with DESCRIBE on the cluster, else those it may describe.
          const everyGroup = this.may(
            who,
            ACL_OPERATION.DESCRIBE,
            RESOURCE_TYPE.CLUSTER,
            CLUSTER_RESOURCE_NAME,
          );
          // The filters compare ignoring case, as Kafka's GroupMetadataManager.listGroups does.
          const states = new Set(request.statesFilter.map((state) => state.toLowerCase()));
          const types = new Set(request.typesFilter.map((type) => type.toLowerCase()));
          const groups = all.filter(
            (group) =>
              (states.size === 0 || states.has(group.state.toLowerCase())) &&
              (types.size === 0 || types.has(CLASSIC_GROUP_TYPE)) &&
              (everyGroup || this.may(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, group.groupId)),
          );
          return this.respond((writer) =>
            encodeListGroupsResponse(writer, apiVersion, correlationId, groups),
          );
        }
        case KAFKA_API.DESCRIBE_GROUPS: {
          const request = decodeDescribeGroupsRequest(reader, apiVersion);
          const described = request.groups.map((groupId): DescribedGroup => {
            const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, groupId);
            if (refusal === undefined) return this.describeGroup(groupId, apiVersion);
            return {
              errorCode: refusal.code,
              errorMessage: null,
              groupId,
              state: "",
              protocolType: "",
              protocolData: "",
              members: [],
            };
          });
          return this.respond((writer) =>
            encodeDescribeGroupsResponse(writer, apiVersion, correlationId, described),
          );
        }
        case KAFKA_API.INIT_PRODUCER_ID:
          return await this.initProducerId(reader, apiVersion, correlationId, who);
        case KAFKA_API.DESCRIBE_CONFIGS:
          return this.describeConfigs(reader, apiVersion, correlationId, who);
        case KAFKA_API.DESCRIBE_CLUSTER:
          return this.describeCluster(reader, apiVersion, correlationId, who);
        case KAFKA_API.DESCRIBE_LOG_DIRS:
          return this.describeLogDirs(reader, apiVersion, correlationId, who);
        case KAFKA_API.ELECT_LEADERS:
          return this.electLeaders(reader, apiVersion, correlationId, who);
        case KAFKA_API.DELETE_GROUPS:
          return await this.deleteGroups(reader, apiVersion, correlationId, who);
        case KAFKA_API.OFFSET_DELETE:
          return await this.offsetDelete(reader, apiVersion, correlationId, who);
        case KAFKA_API.OFFSET_FOR_LEADER_EPOCH:
          return this.offsetForLeaderEpoch(reader, apiVersion, correlationId, who);
        case KAFKA_API.DELETE_RECORDS:
          return await this.deleteRecords(reader, apiVersion, correlationId, clientAddress, who);
        case KAFKA_API.CREATE_ACLS:
          return await this.createAcls(reader, apiVersion, correlationId, who);
        case KAFKA_API.DESCRIBE_ACLS:
          return this.describeAcls(reader, apiVersion, correlationId, who);
        case KAFKA_API.DELETE_ACLS:
          return await this.deleteAcls(reader, apiVersion, correlationId, who);
        case KAFKA_API.SASL_HANDSHAKE:
        case KAFKA_API.SASL_AUTHENTICATE:
          // The listener's SASL (sasl.ts) answers these until a connection logged in.
          return {
            kind: "close",
            reason: `${name}: this connection is logged in already, or the broker has no users (--users-file), so there is no SASL to do`,
          };
        default:
          return { kind: "close", reason: `${name} (API key ${apiKey}) is not served yet` };
      }
    } catch (error) {
      if (error instanceof KafkaProtocolError) {
        return { kind: "close", reason: `malformed ${name} v${apiVersion} request: ${error.message}` };
      }
      throw error;
    }
  }

  private async initProducerId(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeInitProducerIdRequest(reader, version);
    let answer: { errorCode: number; producerId: number; producerEpoch: number } = {
      errorCode: KAFKA_ERROR.NONE,
      producerId: -1,
      producerEpoch: -1,
    };
    const acls = this.broker.acls;
    if (request.transactionalId !== null) {
      answer.errorCode = KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    } else if (acls.enforcing && !acls.allowedIdempotentWrite(who.principal, who.host)) {
      // Kafka ≥ 2.8: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic (KIP-679).
      answer.errorCode = this.refused(
        who,
        ACL_OPERATION.IDEMPOTENT_WRITE,
        RESOURCE_TYPE.CLUSTER,
        CLUSTER_RESOURCE_NAME,
      )!.code;
    } else {
      try {
        answer = { errorCode: KAFKA_ERROR.NONE, ...(await this.broker.initProducerId()) };
      } catch (error) {
        answer.errorCode = kafkaErrorOf(error).code;
      }
    }
    return this.respond((writer) => encodeInitProducerIdResponse(writer, version, correlationId, answer));
  }

  private async joinGroup(
    who: Who,
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientId: string,
    clientAddress: string,
  ): Promise<KafkaOutcome> {
    const request = decodeJoinGroupRequest(reader, version);
    const refusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.GROUP, request.groupId);
    if (refusal !== undefined) {
      return this.respond((writer) =>
        encodeJoinGroupResponse(writer, version, correlationId, {
          errorCode: refusal.code,
          generationId: -1,
          protocolName: "",
          protocolType: "",
          leader: "",
          skipAssignment: false,
          memberId: request.memberId,
          members: [],
        }),
      );
    }
    const result = await this.groups.join({
      groupId: request.groupId,
      memberId: request.memberId,
      sessionTimeoutMs: request.sessionTimeoutMs,
      rebalanceTimeoutMs: request.rebalanceTimeoutMs,
      protocolType: request.protocolType,
      protocols: request.protocols,
      clientId,
      clientHost: `/${clientAddress}`,
      requireKnownMemberId: version >= 4,
      groupInstanceId: request.groupInstanceId,
      supportSkippingAssignment: version >= 9,
    });
    return this.respond((writer) =>
      encodeJoinGroupResponse(writer, version, correlationId, {
        errorCode: GROUP_ERROR_CODES[result.error],
        generationId: result.generationId,
        protocolName: result.protocolName,
        protocolType: result.protocolType,
        leader: result.leaderId,
        skipAssignment: result.skipAssignment,
        memberId: result.memberId,
        members: result.members,
      }),
    );
  }

  /**
   * OffsetCommit: the coordinator says whether this member of this generation may commit; each
   * partition is checked (known, metadata size), and the rest is stored in one append to the
   * offsets topic, answered after the force that covers it.
   */
  private async offsetCommit(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeOffsetCommitRequest(reader, version);
    // READ on the group first (every partition refused with 30), then READ on each topic (29).
    const groupRefusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.GROUP, request.groupId);
    const allowed =
      groupRefusal === undefined
        ? this.groups.checkCommit(
            request.groupId,
            request.generationId,
            request.memberId,
            request.groupInstanceId,
            () => this.broker.offsets.hasCommits(request.groupId),
          )
        : "NONE";
    const topics: PartitionErrors[] = request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((p) => ({
        partition: p.partition,
        errorCode: groupRefusal?.code ?? GROUP_ERROR_CODES[allowed],
      })),
    }));
    if (groupRefusal === undefined && allowed === "NONE") {
      const entries: OffsetCommitEntry[] = [];
      const pending: { errorCode: number }[] = [];
      request.topics.forEach((topic, t) => {
        const topicRefusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, topic.name);
        topic.partitions.forEach((asked, p) => {
          const answer = topics[t]!.partitions[p]!;
          if (topicRefusal !== undefined) {
            answer.errorCode = topicRefusal.code;
            return;
          }
          if (metadataProblem(asked.metadata) !== undefined) {
            answer.errorCode = KAFKA_ERROR.OFFSET_METADATA_TOO_LARGE;
            return;
          }
          try {
            this.broker.partition(topic.name, asked.partition);
          } catch (error) {
            answer.errorCode = kafkaErrorOf(error).code;
            return;
          }
          entries.push({
            topic: topic.name,
            partition: asked.partition,
            offset: asked.offset,
            leaderEpoch: asked.leaderEpoch,
            metadata: asked.metadata,
          });
          pending.push(answer);
        });
      });
      try {
        await this.broker.offsets.commit(request.groupId, entries);
      } catch (error) {
        // A commit larger than the offsets topic takes is INVALID_COMMIT_OFFSET_SIZE, as Kafka
        // before 4.0 answered it (GroupMetadataManager mapped its append's MESSAGE_TOO_LARGE so);
        // the Java client raises it to the application as such. Kafka 4.x's new coordinator answers
        // UNKNOWN_SERVER_ERROR there, which says less.
        // So is one the store refuses for the memory of all commits (COMMITTED_OFFSETS_BYTES_MAX).
        let code = kafkaErrorOf(error).code;
        if (code === KAFKA_ERROR.MESSAGE_TOO_LARGE || code === KAFKA_ERROR.POLICY_VIOLATION)
          code = KAFKA_ERROR.INVALID_COMMIT_OFFSET_SIZE;
        // A storage error (a full disk) is NOT_COORDINATOR, as Kafka's GroupMetadataManager maps
        // KAFKA_STORAGE_ERROR of the offsets append: clients find the coordinator again and retry.
        // The Java consumer does not handle 56 in a commit answer: it threw "Unexpected error in
        // commit" into the application (test/kafka/offsets-full-disk.test.ts).
        if (code === KAFKA_ERROR.KAFKA_STORAGE_ERROR) code = KAFKA_ERROR.NOT_COORDINATOR;
        for (const answer of pending) answer.errorCode = code;
      }
    }
    return this.respond((writer) => encodeOffsetCommitResponse(writer, version, correlationId, topics));
  }

  /** OffsetFetch: committed offsets (−1 where none); topics null (v2+) = every one of the group. */
  private offsetFetch(reader: KafkaReader, version: number, correlationId: number, who: Who): KafkaOutcome {
    const request = decodeOffsetFetchRequest(reader, version);
    const store = this.broker.offsets;
    const groupRefusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, request.groupId);
    if (groupRefusal !== undefined) {
      // v2+ carry a top-level error; v0-1 only per partition.
      const topics = (request.topics ?? []).map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((partition) => ({
          partition,
          offset: -1,
          leaderEpoch: NO_LEADER_EPOCH,
          metadata: "",
          errorCode: groupRefusal.code,
        })),
      }));
      return this.respond((writer) =>
        encodeOffsetFetchResponse(writer, version, correlationId, { errorCode: groupRefusal.code, topics }),
      );
    }
    // Leader epochs are −1 everywhere (common.md §2), so the committed one is answered −1 too.
    const answer = (partition: number, offset: number, metadata: string | null): OffsetFetchPartition => ({
      partition,
      offset,
      leaderEpoch: NO_LEADER_EPOCH,
      metadata,
      errorCode: KAFKA_ERROR.NONE,
    });
    let topics: { name: string; partitions: OffsetFetchPartition[] }[];
    if (request.topics === null) {
      const byTopic = new Map<string, OffsetFetchPartition[]>();
      for (const { topic, partition, committed } of store.committedOf(request.groupId)) {
        // Every offset of the group: those of topics the principal may describe (Kafka's filter).
        if (!this.may(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic)) continue;
        let list = byTopic.get(topic);
        if (list === undefined) {
          list = [];
          byTopic.set(topic, list);
        }
        list.push(answer(partition, committed.offset, committed.metadata ?? ""));
      }
      topics = [...byTopic].map(([name, partitions]) => ({ name, partitions }));
    } else {
      topics = request.topics.map((topic) => {
        const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic.name);
        return {
          name: topic.name,
          partitions: topic.partitions.map((partition) => {
            if (refusal !== undefined) return { ...answer(partition, -1, ""), errorCode: refusal.code };
            const committed = store.committed(request.groupId, topic.name, partition);
            return committed === undefined
              ? answer(partition, -1, "")
              : answer(partition, committed.offset, committed.metadata ?? "");
          }),
        };
      });
    }
    return this.respond((writer) =>
      encodeOffsetFetchResponse(writer, version, correlationId, { errorCode: KAFKA_ERROR.NONE, topics }),
    );
  }

  private describeGroup(groupId: string, version: number): DescribedGroup {
    const group = this.groups.describe(groupId);
    if (group !== undefined) {
      // Only a Stable group names its protocol and its members' metadata, as Kafka 4.1.1 answers
      // (GroupMetadataManager.describeGroups and ClassicGroupMember.describeNoMetadata, read in its
      // bytecode): during a rebalance the protocol is "" and the metadata empty.
      const stable = group.state === "Stable";
      return {
        errorCode: KAFKA_ERROR.NONE,
        errorMessage: null,
        groupId,
        state: group.state,
        protocolType: group.protocolType,
        protocolData: stable ? group.protocol : "",
        members: stable
          ? group.members
          : group.members.map((member) => ({ ...member, metadata: NO_METADATA })),
      };
    }
    // No members: Empty when it has committed offsets, Dead otherwise. A Dead group is error NONE
    // up to v5 and GROUP_ID_NOT_FOUND from v6 on (KIP-1043), with Kafka 4.x's message.
    const hasOffsets = this.broker.offsets.committedOf(groupId).length > 0;
    const notFound = !hasOffsets && version >= 6;
    return {
      errorCode: notFound ? KAFKA_ERROR.GROUP_ID_NOT_FOUND : KAFKA_ERROR.NONE,
      errorMessage: notFound ? `Group ${groupId} not found.` : null,
      groupId,
      state: hasOffsets ? "Empty" : "Dead",
      protocolType: hasOffsets ? this.groups.emptiedProtocolType(groupId) : "",
      protocolData: "",
      members: [],
    };
  }

  private respond(encode: (writer: KafkaWriter) => void): KafkaOutcome {
    const writer = this.writer.reset();
    encode(writer);
    const bytes = writer.written().slice();
    return writer.errorCodes.length === 0
      ? { kind: "respond", bytes }
      : { kind: "respond", bytes, errorCodes: writer.errorCodes.slice() };
  }

  private apiVersions(
    version: number,
    correlationId: number,
    errorCode: number,
  ): (writer: KafkaWriter) => void {
    const apiKeys = [...ADVERTISED_VERSIONS].map(([apiKey, range]) => ({ apiKey, ...range }));
    // An unsupported request version is answered in the v0 layout (KIP-511).
    const layout = errorCode === KAFKA_ERROR.UNSUPPORTED_VERSION ? 0 : version;
    return (writer) => encodeApiVersionsResponse(writer, layout, correlationId, { errorCode, apiKeys });
  }

  private async produce(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeProduceRequest(reader, version);
    const topics = await produceRecords(
      this.broker,
      request,
      (topic) => this.refused(who, ACL_OPERATION.WRITE, RESOURCE_TYPE.TOPIC, topic),
      this.traffic,
      who.sender,
    );
    // acks=0: Kafka sends no response at all. A failed partition closes the connection instead, the
    // only way to tell such a producer (KafkaApis.handleProduceRequest: "closing connection due to
    // error during produce request with correlation id … acks = 0").
    if (request.acks === 0) {
      for (const topic of topics) {
        for (const partition of topic.partitions) {
          if (partition.errorCode !== KAFKA_ERROR.NONE) {
            return {
              kind: "close",
              reason: `a Produce with acks=0 failed for ${topic.name}/${partition.index} (error ${partition.errorCode}): ${partition.errorMessage ?? ""}`,
            };
          }
        }
      }
      return { kind: "silent" };
    }
    return this.respond((writer) => encodeProduceResponse(writer, version, correlationId, topics));
  }

  private metadata(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): KafkaOutcome {
    const request = decodeMetadataRequest(reader, version);
    const autoCreate = request.allowAutoTopicCreation ? this.options.autoCreateTopics : undefined;
    // All topics includes the internal offsets topic, flagged `is_internal`, as Kafka lists its own
    // (KafkaApis.handleTopicMetadataRequest): clients decide on the flag (the Java consumer's
    // exclude.internal.topics=true keeps it out of pattern subscriptions; franz-go's TestConsumeRegex
    // checks it is reported). The native protocol's listing still hides it (Broker.listTopics).
    // All topics: only those the principal may describe, silently (Kafka's Metadata); named ones it
    // may not describe are answered TOPIC_AUTHORIZATION_FAILED whether they exist or not.
    const names =
      request.topics ??
      this.broker
        .listTopics({ includeInternal: true })
        .map((topic) => topic.name)
        .filter((name) => this.may(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, name));
    const topics: MetadataTopic[] = names.map((name) => {
      if (request.topics !== null) {
        const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, name);
        if (refusal !== undefined)
          return { errorCode: refusal.code, name, isInternal: false, partitions: [] };
      }
      try {
        toTopicName(name);
      } catch {
        return { errorCode: KAFKA_ERROR.INVALID_TOPIC_EXCEPTION, name, isInternal: false, partitions: [] };
      }
      try {
        let description: TopicDescription;
        try {
          description = this.broker.describeTopic(name);
        } catch (error) {
          if (!(error instanceof UnknownTopicOrPartitionError) || autoCreate === undefined) throw error;
          // Creating needs CREATE on the cluster or on the topic, as CreateTopics does.
          const createRefusal = this.createRefusal(who, name);
          if (createRefusal !== undefined)
            return { errorCode: createRefusal.code, name, isInternal: false, partitions: [] };
          // Auto-creation (a broker option, off by default), as Kafka's auto.create.topics.enable.
          // Kafka answers LEADER_NOT_AVAILABLE while the new topic's leader is elected and the
          // client asks again; here the topic exists once createTopic returns, so it is answered
          // at once. A topic created this way counts as one admin request of the address, as a
          // CreateTopics would (beyond the rate: POLICY_VIOLATION, errors.ts).
          this.options.adminRate?.take(clientAddress);
          description = this.broker.createTopic(name, { partitions: autoCreate.partitions });
        }
        return {
          errorCode: KAFKA_ERROR.NONE,
          name,
          isInternal: Broker.isInternalTopic(name),
          partitions: description.partitions.map((partition) => ({
            errorCode: KAFKA_ERROR.NONE,
            partitionIndex: partition.partition,
            leaderId: KAFKA_NODE_ID,
            leaderEpoch: NO_LEADER_EPOCH,
            replicaNodes: [KAFKA_NODE_ID],
            isrNodes: [KAFKA_NODE_ID],
          })),
        };
      } catch (error) {
        // Unknown (auto-creation off or not allowed by the request), or the creation failed.
        return { errorCode: kafkaErrorOf(error).code, name, isInternal: false, partitions: [] };
      }
    });
    return this.respond((writer) =>
      encodeMetadataResponse(writer, version, correlationId, {
        brokers: [
          { nodeId: KAFKA_NODE_ID, host: this.options.advertisedHost, port: this.options.advertisedPort },
        ],
        clusterId: KAFKA_CLUSTER_ID,
        controllerId: KAFKA_NODE_ID,
        topics,
      }),
    );
  }

  private listOffsets(reader: KafkaReader, version: number, correlationId: number, who: Who): KafkaOutcome {
    const request = decodeListOffsetsRequest(reader, version);
    const topics = request.topics.map((topic) => {
      const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic.name);
      return {
        name: topic.name,
        partitions: topic.partitions.map((asked): ListOffsetsPartitionResponse => {
          const answer: ListOffsetsPartitionResponse = {
            partition: asked.partition,
            errorCode: refusal?.code ?? KAFKA_ERROR.NONE,
            timestamp: -1,
            offset: -1,
          };
          if (refusal !== undefined) return answer;
          try {
            const partition = this.broker.partition(topic.name, asked.partition);
            // Every record is on the broker's own disk (no tiered storage): the earliest local offset
            // is the log start, and nothing was ever tiered (−1 and −1, Kafka's answer for such a log).
            if (asked.timestamp === LIST_OFFSETS_EARLIEST || asked.timestamp === LIST_OFFSETS_EARLIEST_LOCAL)
              answer.offset = partition.logStartOffset;
            else if (asked.timestamp === LIST_OFFSETS_LATEST_TIERED) answer.offset = -1;
            // read_committed and read_uncommitted agree: no transactions, so the last stable offset is
            // the high watermark (the visible end).
            else if (asked.timestamp === LIST_OFFSETS_LATEST) answer.offset = partition.visibleNextOffset;
            else if (asked.timestamp === LIST_OFFSETS_MAX_TIMESTAMP && version >= 1) {
              // The visible record with the largest timestamp, the first of several (KIP-734); none:
              // −1 and −1. librdkafka asks at any version, Kafka's own clients from v7.
              const found = partition.offsetForLargestTimestamp();
              if (found !== undefined) {
                answer.offset = found.offset;
                answer.timestamp = found.timestampMs;
              }
            } else if (asked.timestamp >= 0) {
              // The first offset whose record timestamp is ≥ the one asked for (the time index);
              // none: −1 and −1, as Kafka answers.
              const found = partition.offsetForTimestamp(asked.timestamp);
              if (found !== undefined) {
                answer.offset = found.offset;
                answer.timestamp = found.timestampMs;
              }
            } else answer.errorCode = KAFKA_ERROR.INVALID_REQUEST;
          } catch (error) {
            answer.errorCode = kafkaErrorOf(error).code;
          }
          return answer;
        }),
      };
    });
    return this.respond((writer) => encodeListOffsetsResponse(writer, version, correlationId, topics));
  }

  private async createTopics(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeCreateTopicsRequest(reader, version);
    const results: TopicResult[] = [];
    const seen = new Set<string>();
    for (const topic of request.topics) {
      const result = (code: number, message: string | null) =>
        results.push({ name: topic.name, errorCode: code, errorMessage: message });
      if (seen.has(topic.name)) {
        result(
          KAFKA_ERROR.INVALID_REQUEST,
          `topic ${JSON.stringify(topic.name)} is named twice in one request`,
        );
        continue;
      }
      seen.add(topic.name);
      const createRefusal = this.createRefusal(who, topic.name);
      if (createRefusal !== undefined) {
        result(createRefusal.code, createRefusal.message);
        continue;
      }
      const refusal = this.refuseCreatable(topic);
      if (refusal !== undefined) {
        result(refusal.code, refusal.message);
        continue;
      }
      let settings: Partial<TopicConfig>;
      try {
        settings = {};
        if (topic.numPartitions !== -1) settings.partitions = topic.numPartitions;
        for (const config of topic.configs) {
          const mapping = TOPIC_CONFIGS[config.name];
          if (mapping === undefined) {
            throw new InvalidConfigError(
              `topic config ${JSON.stringify(config.name)} is not supported; booblik knows ${Object.keys(TOPIC_CONFIGS).join(", ")}`,
            );
          }
          if (config.value === null) continue; // null = the default
          Object.assign(settings, mapping(config.value));
        }
      } catch (error) {
        result(KAFKA_ERROR.INVALID_CONFIG, (error as Error).message);
        continue;
      }
      // A delete of the same name still removing its directories: wait for it, as the native
      // listener does, so that a delete and a create sent in that order apply in that order.
      await this.broker.deletion(topic.name);
      try {
        if (request.validateOnly) {
          toTopicName(topic.name);
          if (this.broker.listTopics().some((existing) => existing.name === topic.name)) {
            result(KAFKA_ERROR.TOPIC_ALREADY_EXISTS, `topic ${JSON.stringify(topic.name)} already exists`);
            continue;
          }
          // Validation only: the broker's own check, without creating anything.
          validateTopicConfig(settings, this.broker.topicDefaults);
        } else {
          // One admin request per topic created, from the address's allowance (throws LIMIT_EXCEEDED).
          this.options.adminRate?.take(clientAddress);
          const created = this.broker.createTopic(topic.name, settings);
          const { partitions, durability, writeMode, segmentBytes } = created.config;
          this.audit(
            who,
            `created topic ${JSON.stringify(topic.name)} (${partitions} partitions, ${durability}, ${writeMode}, segments of ${segmentBytes} bytes)`,
          );
        }
        result(KAFKA_ERROR.NONE, null);
      } catch (error) {
        const mapped = kafkaErrorOf(error);
        if (!request.validateOnly) {
          this.audit(who, `create topic ${JSON.stringify(topic.name)} refused: ${mapped.message}`);
        }
        const code =
          mapped.code !== KAFKA_ERROR.INVALID_REQUEST
            ? mapped.code
            : /topic name/.test(mapped.message)
              ? KAFKA_ERROR.INVALID_TOPIC_EXCEPTION
              : /^partitions /.test(mapped.message)
                ? KAFKA_ERROR.INVALID_PARTITIONS
                : KAFKA_ERROR.INVALID_CONFIG;
        result(code, mapped.message);
      }
    }
    return this.respond((writer) => encodeCreateTopicsResponse(writer, version, correlationId, results));
  }

  /** Replication and manual assignment: a single node has one replica of every partition. */
  private refuseCreatable(topic: {
    numPartitions: number;
    replicationFactor: number;
    assignments: { partitionIndex: number; brokerIds: number[] }[];
  }): KafkaError | undefined {
    if (topic.numPartitions !== -1 && (topic.numPartitions < 1 || topic.numPartitions > PARTITIONS_MAX)) {
      return {
        code: KAFKA_ERROR.INVALID_PARTITIONS,
        message: `num_partitions must be from 1 to ${PARTITIONS_MAX} (or -1 for the broker's default), got ${topic.numPartitions}`,
      };
    }
    if (topic.replicationFactor !== -1 && topic.replicationFactor !== 1) {
      return {
        code: KAFKA_ERROR.INVALID_REPLICATION_FACTOR,
        message: `booblik is a single broker: replication_factor must be 1 (or -1), got ${topic.replicationFactor}`,
      };
    }
    if (topic.assignments.length > 0) {
      return {
        code: KAFKA_ERROR.INVALID_REPLICA_ASSIGNMENT,
        message:
          "booblik is a single broker: manual replica assignments are not accepted; give num_partitions instead",
      };
    }
    return undefined;
  }

  private async deleteTopics(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeDeleteTopicsRequest(reader, version);
    const results: TopicResult[] = [];
    for (const name of request.topicNames) {
      const refusal = this.refused(who, ACL_OPERATION.DELETE, RESOURCE_TYPE.TOPIC, name);
      if (refusal !== undefined) {
        results.push({ name, errorCode: refusal.code, errorMessage: refusal.message });
        continue;
      }
      try {
        this.options.adminRate?.take(clientAddress);
        await this.broker.deleteTopic(name);
        this.audit(who, `deleted topic ${JSON.stringify(name)}`);
        results.push({ name, errorCode: KAFKA_ERROR.NONE, errorMessage: null });
      } catch (error) {
        const mapped = kafkaErrorOf(error);
        this.audit(who, `delete topic ${JSON.stringify(name)} refused: ${mapped.message}`);
        results.push({ name, errorCode: mapped.code, errorMessage: null });
      }
    }
    return this.respond((writer) => encodeDeleteTopicsResponse(writer, version, correlationId, results));
  }

  /**
   * DeleteRecords: moves each named partition's log start (Broker.purge: durable before the answer,
   * whole segments below it deleted); low_watermark is the start after it. One admin request per
   * topic from the address's allowance, as CreatePartitions. Per partition: OFFSET_OUT_OF_RANGE for
   * an offset beyond the high watermark (or below −1), UNKNOWN_TOPIC_OR_PARTITION,
   * INVALID_TOPIC_EXCEPTION for the internal offsets topic, POLICY_VIOLATION beyond the admin rate,
   * KAFKA_STORAGE_ERROR. timeout_ms is not needed: the answer waits for the purge itself.
   */
  private async deleteRecords(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeDeleteRecordsRequest(reader, version);
    const topics: DeleteRecordsTopicResult[] = [];
    for (const topic of request.topics) {
      let refusal = this.refused(who, ACL_OPERATION.DELETE, RESOURCE_TYPE.TOPIC, topic.name)?.code;
      try {
        if (refusal === undefined) this.options.adminRate?.take(clientAddress);
      } catch (error) {
        refusal = kafkaErrorOf(error).code;
      }
      const partitions: DeleteRecordsPartitionResult[] = [];
      for (const entry of topic.partitions) {
        const result = (lowWatermark: number, errorCode: number) =>
          partitions.push({ partition: entry.partition, lowWatermark, errorCode });
        if (refusal !== undefined) {
          result(-1, refusal);
          continue;
        }
        try {
          const purged = await this.broker.purge(topic.name, entry.partition, entry.offset);
          this.audit(
            who,
            `purged topic ${JSON.stringify(topic.name)}: partition ${entry.partition} before ${entry.offset}; it now starts from ${purged.logStartOffset}`,
          );
          result(purged.logStartOffset, KAFKA_ERROR.NONE);
        } catch (error) {
          const mapped = kafkaErrorOf(error);
          this.audit(
            who,
            `purge topic ${JSON.stringify(topic.name)} partition ${entry.partition} before ${entry.offset} refused: ${mapped.message}`,
          );
          result(-1, mapped.code);
        }
      }
      topics.push({ name: topic.name, partitions });
    }
    return this.respond((writer) => encodeDeleteRecordsResponse(writer, version, correlationId, topics));
  }

  /**
   * CreatePartitions: raises each topic's partition count (Broker.addPartitions), one admin request
   * per topic from the address's allowance. Manual assignments are refused (a single node has one
   * replica of every partition); validate_only checks without changing anything.
   */
  private createPartitions(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): KafkaOutcome {
    const request = decodeCreatePartitionsRequest(reader, version);
    const results: TopicResult[] = [];
    const seen = new Set<string>();
    for (const topic of request.topics) {
      const result = (code: number, message: string | null) =>
        results.push({ name: topic.name, errorCode: code, errorMessage: message });
      if (seen.has(topic.name)) {
        result(
          KAFKA_ERROR.INVALID_REQUEST,
          `topic ${JSON.stringify(topic.name)} is named twice in one request`,
        );
        continue;
      }
      seen.add(topic.name);
      const refusal = this.refused(who, ACL_OPERATION.ALTER, RESOURCE_TYPE.TOPIC, topic.name);
      if (refusal !== undefined) {
        result(refusal.code, refusal.message);
        continue;
      }
      if (topic.assignments !== null) {
        result(
          KAFKA_ERROR.INVALID_REPLICA_ASSIGNMENT,
          "booblik is a single node: every partition has its one replica there; send no assignments",
        );
        continue;
      }
      try {
        if (request.validateOnly) {
          const current = this.broker.describeTopic(topic.name).config.partitions;
          if (topic.count <= current) {
            throw new InvalidConfigError(
              `partitions can only increase: topic ${JSON.stringify(topic.name)} has ${current}, got ${topic.count}`,
            );
          }
        } else {
          this.options.adminRate?.take(clientAddress);
          const before = this.broker.describeTopic(topic.name).config.partitions;
          this.broker.addPartitions(topic.name, topic.count);
          this.audit(
            who,
            `added partitions to topic ${JSON.stringify(topic.name)}: ${before} → ${topic.count}`,
          );
        }
        result(KAFKA_ERROR.NONE, null);
      } catch (error) {
        const mapped = kafkaErrorOf(error);
        if (!request.validateOnly) {
          this.audit(who, `add partitions to topic ${JSON.stringify(topic.name)} refused: ${mapped.message}`);
        }
        // A count that is not more than now, or beyond a topic's maximum: Kafka's INVALID_PARTITIONS.
        const code =
          mapped.code === KAFKA_ERROR.INVALID_REQUEST ? KAFKA_ERROR.INVALID_PARTITIONS : mapped.code;
        result(code, mapped.message);
      }
    }
    return this.respond((writer) => encodeCreatePartitionsResponse(writer, version, correlationId, results));
  }

  /**
   * IncrementalAlterConfigs v0 for topics: SET maps a Kafka config name onto booblik's setting
   * (TOPIC_CONFIGS), DELETE sets it back to the broker's default; then Broker.alterTopic, which
   * refuses what cannot change on a live topic (INVALID_CONFIG with its reason). APPEND and SUBTRACT
   * apply to cleanup.policy, the one list config, and are refused on the others; other resource types
   * and validate_only are refused. One admin
   * request per topic from the address's allowance.
   */
  private async incrementalAlterConfigs(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeIncrementalAlterConfigsRequest(reader, version);
    const results = await this.applyConfigChanges(request, false, clientAddress, who);
    return this.respond((writer) =>
      encodeIncrementalAlterConfigsResponse(writer, version, correlationId, results),
    );
  }

  /**
   * AlterConfigs (33), the legacy form: a resource's configs are replaced whole, as Kafka replaces
   * a topic's dynamic configs (the ones named are set, a null value or any one not named goes back
   * to the default). booblik's settings that cannot change on a live topic (`segment.bytes`,
   * `booblik.write.mode`) keep their value when not named, and so does a `max.message.bytes`
   * raised above the default (it cannot shrink: batches up to it are stored); naming them with
   * another value is refused as in IncrementalAlterConfigs. Sarama's `AlterConfig` and kafka-go's
   * `Client.AlterConfigs` send it (bench/compat/go.ts); before 2026-12-03 kafka-go's was answered
   * by closing the connection.
   */
  private async alterConfigs(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    clientAddress: string,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeAlterConfigsRequest(reader, version);
    const results = await this.applyConfigChanges(request, true, clientAddress, who);
    return this.respond((writer) => encodeAlterConfigsResponse(writer, version, correlationId, results));
  }

  /**
   * Applies each resource's config operations (topic resources only); `replaceAll` first sets every
   * config the resource does not name back to its default, where the live topic allows it
   * (`alterConfigs`).
   */
  private async applyConfigChanges(
    request: IncrementalAlterConfigsRequest,
    replaceAll: boolean,
    clientAddress: string,
    who: Who,
  ): Promise<AlterConfigsResult[]> {
    const results: AlterConfigsResult[] = [];
    // Kafka's ConfigAdminManager.preprocess refuses the request's shape before anything is applied:
    // a resource named twice (both get it; before 2026-12-03 the second replace-all silently undid
    // the first), a config named twice in one resource, a null value (in IncrementalAlterConfigs
    // only a DELETE may have one). A reviewer's reading of Kafka 4.1.1, checked in its source.
    const occurrences = new Map<string, number>();
    for (const resource of request.resources) {
      const key = `${resource.resourceType}\0${resource.resourceName}`;
      occurrences.set(key, (occurrences.get(key) ?? 0) + 1);
    }
    for (const resource of request.resources) {
      const result = (errorCode: number, errorMessage: string | null) =>
        results.push({
          errorCode,
          errorMessage,
          resourceType: resource.resourceType,
          resourceName: resource.resourceName,
        });
      if (occurrences.get(`${resource.resourceType}\0${resource.resourceName}`)! > 1) {
        result(KAFKA_ERROR.INVALID_REQUEST, "Each resource must appear at most once.");
        continue;
      }
      if (new Set(resource.configs.map((config) => config.name)).size < resource.configs.length) {
        result(KAFKA_ERROR.INVALID_REQUEST, "Error due to duplicate config keys");
        continue;
      }
      const nulls = resource.configs
        .filter(
          (config) => config.value === null && (replaceAll || config.operation !== CONFIG_OPERATION.DELETE),
        )
        .map((config) => config.name);
      if (nulls.length > 0) {
        result(KAFKA_ERROR.INVALID_REQUEST, `Null value not supported for : ${nulls.join(", ")}`);
        continue;
      }
      if (resource.resourceType !== CONFIG_RESOURCE_TOPIC) {
        result(
          KAFKA_ERROR.INVALID_REQUEST,
          resource.resourceType === CONFIG_RESOURCE_BROKER
            ? `only topic configs (resource type ${CONFIG_RESOURCE_TOPIC}) can change: the broker's settings are its command-line options, fixed at its start`
            : `only topic configs (resource type ${CONFIG_RESOURCE_TOPIC}) can change`,
        );
        continue;
      }
      const refusal = this.refused(
        who,
        ACL_OPERATION.ALTER_CONFIGS,
        RESOURCE_TYPE.TOPIC,
        resource.resourceName,
      );
      if (refusal !== undefined) {
        result(refusal.code, refusal.message);
        continue;
      }
      if (request.validateOnly) {
        result(KAFKA_ERROR.INVALID_REQUEST, "validate_only is not supported by booblik for config changes");
        continue;
      }
      let changes: Partial<TopicConfig>;
      try {
        changes = replaceAll ? this.defaultsOfUnnamed(resource.resourceName, resource.configs) : {};
        for (const config of resource.configs) {
          const mapping = TOPIC_CONFIGS[config.name];
          if (mapping === undefined) {
            throw new InvalidConfigError(
              `topic config ${JSON.stringify(config.name)} is not supported; booblik knows ${Object.keys(TOPIC_CONFIGS).join(", ")}`,
            );
          }
          if (config.operation === CONFIG_OPERATION.SET) {
            // A null value was refused above, as Kafka's preprocess refuses it.
            Object.assign(changes, mapping(config.value!));
          } else if (config.operation === CONFIG_OPERATION.DELETE) {
            const key = TOPIC_CONFIG_KEYS[config.name]!;
            Object.assign(changes, { [key]: this.broker.topicDefaults[key] });
          } else if (
            config.name === "cleanup.policy" &&
            (config.operation === CONFIG_OPERATION.APPEND || config.operation === CONFIG_OPERATION.SUBTRACT)
          ) {
            // Kafka's one LIST config booblik has: APPEND adds the values not there yet, SUBTRACT
            // removes them, from the value in force (ConfigAdminManager.prepareIncrementalConfigs).
            // Refused as "no list configs" before the review of 2026-12-03.
            Object.assign(changes, {
              cleanupPolicy: appliedListOperation(
                changes.cleanupPolicy ?? this.currentCleanupPolicy(resource.resourceName),
                config.operation === CONFIG_OPERATION.APPEND,
                config.value!,
              ),
            });
          } else {
            throw new InvalidConfigError(
              `config operation ${config.operation} on ${config.name} is not supported (SET 0 and DELETE 1 are; APPEND 2 and SUBTRACT 3 only on cleanup.policy, the one list config)`,
            );
          }
        }
      } catch (error) {
        result(KAFKA_ERROR.INVALID_CONFIG, (error as Error).message);
        continue;
      }
      try {
        this.options.adminRate?.take(clientAddress);
        await this.broker.alterTopic(resource.resourceName, changes);
        this.audit(who, `altered topic ${JSON.stringify(resource.resourceName)}: ${JSON.stringify(changes)}`);
        result(KAFKA_ERROR.NONE, null);
      } catch (error) {
        const mapped = kafkaErrorOf(error);
        const message = withKafkaConfigName(mapped.message);
        this.audit(who, `alter topic ${JSON.stringify(resource.resourceName)} refused: ${message}`);
        result(
          mapped.code === KAFKA_ERROR.INVALID_REQUEST ? KAFKA_ERROR.INVALID_CONFIG : mapped.code,
          message,
        );
      }
    }
    return results;
  }

  /** A topic's cleanup.policy in force; an unknown topic's does not matter (alterTopic names it). */
  private currentCleanupPolicy(topic: string): CleanupPolicy {
    try {
      return this.broker.describeTopic(topic).config.cleanupPolicy;
    } catch {
      return DEFAULT_TOPIC_CONFIG.cleanupPolicy;
    }
  }

  /**
   * For AlterConfigs' replace-all: the broker's default of every topic setting `configs` does not
   * name, leaving out those a live topic cannot take (see `alterConfigs`). An unknown topic gives
   * none here: alterTopic then names it.
   */
  private defaultsOfUnnamed(topic: string, configs: readonly AlterableConfig[]): Partial<TopicConfig> {
    let current: TopicConfig;
    try {
      current = this.broker.describeTopic(topic).config;
    } catch {
      return {};
    }
    const named = new Set(configs.map((config) => config.name));
    const defaults = this.broker.topicDefaults;
    const changes: Partial<TopicConfig> = {};
    for (const [name, key] of Object.entries(TOPIC_CONFIG_KEYS)) {
      // booblik's own settings (`booblik.*`) keep their value: a Kafka client does not know them,
      // and a replace-all that only meant retention.ms must not weaken a topic's durability.
      if (named.has(name) || name.startsWith("booblik.") || key === "segmentBytes") continue;
      if (key === "maxRecordBytes" && current.maxRecordBytes > defaults.maxRecordBytes) continue;
      Object.assign(changes, { [key]: defaults[key] });
    }
    return changes;
  }

  /**
   * DescribeConfigs for topics: every setting of TOPIC_CONFIGS with its current value in Kafka's
   * form (−1 for "no limit"), source DEFAULT_CONFIG when it equals the broker's default and
   * DYNAMIC_TOPIC_CONFIG otherwise (booblik does not remember whether a value was set explicitly).
   * Keys booblik does not have are left out, as Kafka leaves out unknown keys. Brokers:
   * `describeBrokerConfigs`. Other resource types (groups, client metrics, …) get INVALID_REQUEST.
   */
  private describeConfigs(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): KafkaOutcome {
    const request = decodeDescribeConfigsRequest(reader, version);
    const results: DescribeConfigsResult[] = request.resources.map((resource) => {
      const result: DescribeConfigsResult = {
        errorCode: KAFKA_ERROR.NONE,
        errorMessage: null,
        resourceType: resource.resourceType,
        resourceName: resource.resourceName,
        configs: [],
      };
      if (resource.resourceType === CONFIG_RESOURCE_BROKER)
        return this.describeBrokerConfigs(resource, result, who);
      if (resource.resourceType !== CONFIG_RESOURCE_TOPIC) {
        result.errorCode = KAFKA_ERROR.INVALID_REQUEST;
        result.errorMessage = `booblik describes only topic (resource type ${CONFIG_RESOURCE_TOPIC}) and broker (${CONFIG_RESOURCE_BROKER}) configs, not resource type ${resource.resourceType}`;
        return result;
      }
      const refusal = this.refused(
        who,
        ACL_OPERATION.DESCRIBE_CONFIGS,
        RESOURCE_TYPE.TOPIC,
        resource.resourceName,
      );
      if (refusal !== undefined) {
        result.errorCode = refusal.code;
        result.errorMessage = refusal.message;
        return result;
      }
      try {
        const config = this.broker.describeTopic(resource.resourceName).config;
        const defaults = this.broker.topicDefaults;
        for (const [name, described] of Object.entries(DESCRIBED_CONFIGS)) {
          if (resource.configurationKeys !== null && !resource.configurationKeys.includes(name)) continue;
          const key = TOPIC_CONFIG_KEYS[name]!;
          result.configs.push({
            name,
            value: kafkaValue(config[key]),
            readOnly: false,
            source:
              config[key] === defaults[key]
                ? CONFIG_SOURCE.DEFAULT_CONFIG
                : CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG,
            configType: described.configType,
            documentation: described.documentation,
          });
        }
      } catch (error) {
        const mapped = kafkaErrorOf(error);
        result.errorCode = mapped.code;
        result.errorMessage = mapped.message;
      }
      return result;
    });
    return this.respond((writer) =>
      encodeDescribeConfigsResponse(writer, version, correlationId, request, results),
    );
  }

  /**
   * DescribeLogDirs: booblik has one log directory, its data directory, holding every partition
   * (the internal offsets topic's too, as Kafka lists its own). Per partition: the bytes of its
   * segments, and the offset lag, the log end above the high watermark (under `force`, records
   * whose fdatasync is in flight; 0 otherwise). A topic or partition that does not exist is left
   * out, and so is a topic with no partition left, as Kafka's ReplicaManager.describeLogDirs does.
   * Needs DESCRIBE on the cluster: without it the answer holds no directory (v3+:
   * CLUSTER_AUTHORIZATION_FAILED), as Kafka answers. v4's volume sizes come from statfs of the
   * data directory.
   */
  private describeLogDirs(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): KafkaOutcome {
    const request = decodeDescribeLogDirsRequest(reader, version);
    const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    if (refusal !== undefined) {
      return this.respond((writer) =>
        encodeDescribeLogDirsResponse(writer, version, correlationId, refusal.code, []),
      );
    }
    const wanted =
      request.topics === null
        ? undefined
        : new Map(request.topics.map((topic) => [topic.topic, new Set(topic.partitions)]));
    const topics: LogDirTopic[] = [];
    for (const topic of this.broker.listTopics({ includeInternal: true })) {
      const partitions = wanted === undefined ? undefined : wanted.get(topic.name);
      if (wanted !== undefined && partitions === undefined) continue;
      const described = topic.partitions
        .filter((partition) => partitions === undefined || partitions.has(partition.partition))
        .map((partition) => ({
          partition: partition.partition,
          sizeBytes: partition.sizeBytes,
          offsetLag: Math.max(0, partition.logEndOffset - partition.nextOffset),
        }));
      if (described.length > 0) topics.push({ name: topic.name, partitions: described });
    }
    let totalBytes = -1;
    let usableBytes = -1;
    try {
      const volume = fs.statfsSync(this.broker.dataDir);
      totalBytes = volume.blocks * volume.bsize;
      usableBytes = volume.bavail * volume.bsize;
    } catch {
      // Sizes stay −1, Kafka's "unknown": the answer about the partitions still holds.
    }
    return this.respond((writer) =>
      encodeDescribeLogDirsResponse(writer, version, correlationId, KAFKA_ERROR.NONE, [
        { errorCode: KAFKA_ERROR.NONE, logDir: this.broker.dataDir, topics, totalBytes, usableBytes },
      ]),
    );
  }

  /**
   * The broker's settings under Kafka's broker config names, for DescribeConfigs of resource type
   * BROKER: what `kafka-configs.sh --entity-type brokers --entity-name 1 --describe --all` prints.
   * Only settings whose meaning booblik has, with the value booblik acts on: the topic defaults
   * under their `log.` names, the Kafka listener's auto-creation, the group coordinator's bounds,
   * the single node's replication facts, and booblik's own topic defaults under `booblik.`. All
   * are read-only: they are command-line options, fixed at the start (no dynamic broker configs).
   */
  private brokerConfigs(): BrokerConfig[] {
    const defaults = this.broker.topicDefaults;
    const topicDefault = (
      name: string,
      key: keyof TopicConfig,
      configType: number,
      documentation: string,
    ) => ({
      name,
      value: kafkaValue(defaults[key]),
      isDefault: defaults[key] === DEFAULT_TOPIC_CONFIG[key],
      configType,
      documentation,
    });
    const fixed = (name: string, value: string, configType: number, documentation: string) => ({
      name,
      value,
      isDefault: true,
      configType,
      documentation,
    });
    const autoCreate = this.options.autoCreateTopics;
    const delayMs = this.options.groups?.initialRebalanceDelayMs ?? 0;
    const configs: BrokerConfig[] = [
      fixed("node.id", String(KAFKA_NODE_ID), CONFIG_TYPE.INT, "This node's id: booblik is one node."),
      fixed("broker.id", String(KAFKA_NODE_ID), CONFIG_TYPE.INT, "The same as node.id."),
      // Always reported as set at the start, as Kafka's server.properties always sets it.
      {
        name: "log.dirs",
        value: this.broker.dataDir,
        isDefault: false,
        configType: CONFIG_TYPE.STRING,
        documentation: "The data directory (--data-dir).",
      },
      {
        name: "auto.create.topics.enable",
        value: String(autoCreate !== undefined),
        isDefault: autoCreate === undefined,
        configType: CONFIG_TYPE.BOOLEAN,
        documentation: "Whether Metadata creates an unknown topic (--kafka-auto-create-topics).",
      },
      ...(autoCreate === undefined
        ? []
        : [
            {
              name: "num.partitions",
              value: String(autoCreate.partitions),
              isDefault: autoCreate.partitions === 1,
              configType: CONFIG_TYPE.INT,
              documentation: "Partitions of an auto-created topic (--kafka-auto-create-partitions).",
            },
          ]),
      fixed("default.replication.factor", "1", CONFIG_TYPE.INT, "One node: one replica of everything."),
      fixed("offsets.topic.replication.factor", "1", CONFIG_TYPE.SHORT, "One node: one replica."),
      fixed("min.insync.replicas", "1", CONFIG_TYPE.INT, "One node: its own write is the quorum."),
      fixed("delete.topic.enable", "true", CONFIG_TYPE.BOOLEAN, "DeleteTopics deletes."),
      topicDefault(
        "log.retention.ms",
        "retentionMs",
        CONFIG_TYPE.LONG,
        "Default retention.ms of new topics.",
      ),
      topicDefault("log.retention.bytes", "retentionBytes", CONFIG_TYPE.LONG, "Default retention.bytes."),
      topicDefault("log.segment.bytes", "segmentBytes", CONFIG_TYPE.INT, "Default segment.bytes."),
      topicDefault("message.max.bytes", "maxRecordBytes", CONFIG_TYPE.INT, "Default max.message.bytes."),
      topicDefault(
        "log.message.timestamp.type",
        "timestampType",
        CONFIG_TYPE.STRING,
        "Default message.timestamp.type.",
      ),
      topicDefault(
        "booblik.durability",
        "durability",
        CONFIG_TYPE.STRING,
        "Default durability (--durability).",
      ),
      topicDefault(
        "booblik.flush.interval.ms",
        "flushIntervalMs",
        CONFIG_TYPE.LONG,
        "Default force interval of the interval policy.",
      ),
      topicDefault(
        "booblik.write.mode",
        "writeMode",
        CONFIG_TYPE.STRING,
        "Default write path (--write-mode).",
      ),
      {
        name: "group.initial.rebalance.delay.ms",
        value: String(delayMs),
        isDefault: delayMs === 0,
        configType: CONFIG_TYPE.INT,
        documentation: "How long a new group's first rebalance waits (--group-initial-rebalance-delay).",
      },
      fixed(
        "group.min.session.timeout.ms",
        String(this.options.groups?.sessionTimeoutMsMin ?? GROUP_SESSION_TIMEOUT_MS_MIN),
        CONFIG_TYPE.INT,
        "The shortest session a member may ask for.",
      ),
      fixed(
        "group.max.session.timeout.ms",
        String(this.options.groups?.sessionTimeoutMsMax ?? GROUP_SESSION_TIMEOUT_MS_MAX),
        CONFIG_TYPE.INT,
        "The longest session a member may ask for.",
      ),
    ];
    return configs;
  }

  /**
   * DescribeConfigs of a broker, as Kafka's ConfigHelper answers it: node "1" gets every setting of
   * `brokerConfigs` (source STATIC_BROKER_CONFIG when set at the start, DEFAULT_CONFIG otherwise,
   * all read-only); "" (the cluster-wide dynamic defaults) gets none, booblik having no dynamic
   * broker configs; another id is INVALID_REQUEST. Needs DESCRIBE_CONFIGS on the cluster.
   */
  private describeBrokerConfigs(
    resource: { resourceName: string; configurationKeys: string[] | null },
    result: DescribeConfigsResult,
    who: Who,
  ): DescribeConfigsResult {
    const refusal = this.refused(
      who,
      ACL_OPERATION.DESCRIBE_CONFIGS,
      RESOURCE_TYPE.CLUSTER,
      CLUSTER_RESOURCE_NAME,
    );
    if (refusal !== undefined) {
      result.errorCode = refusal.code;
      result.errorMessage = refusal.message;
      return result;
    }
    if (resource.resourceName === "") return result;
    if (resource.resourceName !== String(KAFKA_NODE_ID)) {
      result.errorCode = KAFKA_ERROR.INVALID_REQUEST;
      result.errorMessage = `Unexpected broker id, expected ${KAFKA_NODE_ID} or empty string, but received ${resource.resourceName}`;
      return result;
    }
    for (const config of this.brokerConfigs()) {
      if (resource.configurationKeys !== null && !resource.configurationKeys.includes(config.name)) continue;
      result.configs.push({
        name: config.name,
        value: config.value,
        readOnly: true,
        source: config.isDefault ? CONFIG_SOURCE.DEFAULT_CONFIG : CONFIG_SOURCE.STATIC_BROKER_CONFIG,
        configType: config.configType,
        documentation: config.documentation,
      });
    }
    return result;
  }

  /**
   * ElectLeaders, answered as Kafka's controller answers for partitions that already have the
   * leader asked for (ReplicationControlManager.electLeaders): booblik's one node is the only
   * replica and the leader of every partition, so each named partition gets ELECTION_NOT_NEEDED
   * (84), preferred or unclean alike, and an unknown one UNKNOWN_TOPIC_OR_PARTITION (3). Asked for
   * every partition (null), Kafka leaves out the ones not needing an election: every topic, each
   * with no partition. An unknown election type is INVALID_REQUEST for the whole request. Needs
   * ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED, 31, on every partition named otherwise).
   */
  private electLeaders(reader: KafkaReader, version: number, correlationId: number, who: Who): KafkaOutcome {
    const request = decodeElectLeadersRequest(reader, version);
    const everyPartition = (errorCode: number, errorMessage: string | null): ElectionResult[] =>
      (request.topics ?? []).map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.map((partition) => ({ partition, errorCode, errorMessage })),
      }));
    const refusal = this.refused(who, ACL_OPERATION.ALTER, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    if (refusal !== undefined) {
      return this.respond((writer) =>
        encodeElectLeadersResponse(
          writer,
          version,
          correlationId,
          refusal.code,
          everyPartition(refusal.code, refusal.message),
        ),
      );
    }
    if (request.electionType !== 0 && request.electionType !== 1) {
      const message = `Unknown election type ${request.electionType}`;
      return this.respond((writer) =>
        encodeElectLeadersResponse(
          writer,
          version,
          correlationId,
          KAFKA_ERROR.INVALID_REQUEST,
          everyPartition(KAFKA_ERROR.INVALID_REQUEST, message),
        ),
      );
    }
    const results: ElectionResult[] =
      request.topics === null
        ? this.broker
            .listTopics({ includeInternal: true })
            .map((topic) => ({ topic: topic.name, partitions: [] }))
        : request.topics.map(({ topic, partitions }) => {
            let count = -1;
            try {
              count = this.broker.describeTopic(topic).partitions.length;
            } catch (error) {
              if (!(error instanceof UnknownTopicOrPartitionError)) throw error;
            }
            return {
              topic,
              partitions: partitions.map((partition) =>
                count < 0
                  ? {
                      partition,
                      errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
                      errorMessage: `No such topic as ${topic}`,
                    }
                  : partition < 0 || partition >= count
                    ? {
                        partition,
                        errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
                        errorMessage: `No such partition as ${topic}-${partition}`,
                      }
                    : {
                        partition,
                        errorCode: KAFKA_ERROR.ELECTION_NOT_NEEDED,
                        errorMessage: "Leader election not needed for topic partition.",
                      },
              ),
            };
          });
    return this.respond((writer) =>
      encodeElectLeadersResponse(writer, version, correlationId, KAFKA_ERROR.NONE, results),
    );
  }

  /** DescribeCluster: this one node, as Metadata describes it; asked for controllers, Kafka's refusal. */
  private describeCluster(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): KafkaOutcome {
    const request = decodeDescribeClusterRequest(reader, version);
    const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    if (refusal !== undefined) {
      return this.respond((writer) =>
        encodeDescribeClusterResponse(writer, version, correlationId, {
          errorCode: refusal.code,
          errorMessage: refusal.message,
          endpointType: request.endpointType,
          clusterId: KAFKA_CLUSTER_ID,
          controllerId: -1,
          brokers: [],
        }),
      );
    }
    const brokers =
      request.endpointType === ENDPOINT_TYPE.BROKERS
        ? [{ brokerId: KAFKA_NODE_ID, host: this.options.advertisedHost, port: this.options.advertisedPort }]
        : [];
    return this.respond((writer) =>
      encodeDescribeClusterResponse(writer, version, correlationId, {
        // KafkaApis.handleDescribeCluster answers a broker listener asked for controllers this way.
        errorCode:
          request.endpointType === ENDPOINT_TYPE.BROKERS
            ? KAFKA_ERROR.NONE
            : KAFKA_ERROR.MISMATCHED_ENDPOINT_TYPE,
        errorMessage:
          request.endpointType === ENDPOINT_TYPE.BROKERS
            ? null
            : `this is a broker endpoint; endpoint type ${request.endpointType} was asked for`,
        endpointType: request.endpointType,
        clusterId: KAFKA_CLUSTER_ID,
        controllerId: KAFKA_NODE_ID,
        brokers,
      }),
    );
  }

  /**
   * DeleteGroups: a group with live members is NON_EMPTY_GROUP, one with neither members nor
   * committed offsets GROUP_ID_NOT_FOUND (Kafka's answers for a Dead group); otherwise its committed
   * offsets are deleted (tombstones, answered after the force).
   */
  private async deleteGroups(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const groupIds = decodeDeleteGroupsRequest(reader, version);
    const results: { groupId: string; errorCode: number }[] = [];
    for (const groupId of groupIds) {
      let errorCode: number = KAFKA_ERROR.NONE;
      const refusal = this.refused(who, ACL_OPERATION.DELETE, RESOURCE_TYPE.GROUP, groupId);
      if (refusal !== undefined) errorCode = refusal.code;
      else if (groupIdProblem(groupId) !== undefined) errorCode = KAFKA_ERROR.INVALID_GROUP_ID;
      else if (this.groups.describe(groupId) !== undefined) errorCode = KAFKA_ERROR.NON_EMPTY_GROUP;
      else if (this.broker.offsets.committedOf(groupId).length === 0)
        errorCode = KAFKA_ERROR.GROUP_ID_NOT_FOUND;
      else {
        try {
          await this.broker.offsets.deleteGroup(groupId);
          this.audit(who, `deleted group ${JSON.stringify(groupId)}`);
        } catch (error) {
          const mapped = kafkaErrorOf(error);
          this.audit(who, `delete group ${JSON.stringify(groupId)} refused: ${mapped.message}`);
          errorCode = mapped.code;
        }
      }
      results.push({ groupId, errorCode });
    }
    return this.respond((writer) => encodeDeleteGroupsResponse(writer, version, correlationId, results));
  }

  /**
   * OffsetDelete: deletes the committed offsets of some partitions of a group. As Kafka: a group
   * that does not exist is GROUP_ID_NOT_FOUND for the whole request; a partition of a topic that a
   * live member of a consumer group subscribes to is GROUP_SUBSCRIBED_TO_TOPIC; an unknown topic or
   * partition is UNKNOWN_TOPIC_OR_PARTITION; a partition without a commit is simply answered NONE.
   */
  private async offsetDelete(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const request = decodeOffsetDeleteRequest(reader, version);
    const groupRefusal = this.refused(who, ACL_OPERATION.DELETE, RESOURCE_TYPE.GROUP, request.groupId);
    if (groupRefusal !== undefined) {
      return this.respond((writer) =>
        encodeOffsetDeleteResponse(writer, version, correlationId, groupRefusal.code, []),
      );
    }
    const live = this.groups.describe(request.groupId);
    const topics: PartitionOutcomes[] = request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition) => ({ partition, errorCode: KAFKA_ERROR.NONE })),
    }));
    let errorCode: number = KAFKA_ERROR.NONE;
    if (groupIdProblem(request.groupId) !== undefined) errorCode = KAFKA_ERROR.INVALID_GROUP_ID;
    else if (live === undefined && this.broker.offsets.committedOf(request.groupId).length === 0)
      errorCode = KAFKA_ERROR.GROUP_ID_NOT_FOUND;
    if (errorCode !== KAFKA_ERROR.NONE) {
      return this.respond((writer) =>
        encodeOffsetDeleteResponse(writer, version, correlationId, errorCode, []),
      );
    }
    const subscribed =
      live === undefined ? new Set<string>() : subscribedTopics(live.protocolType, live.members);
    const deletable: { topic: string; partition: number }[] = [];
    const pending: { errorCode: number }[] = [];
    request.topics.forEach((topic, t) => {
      const topicRefusal = this.refused(who, ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, topic.name);
      for (const answer of topics[t]!.partitions) {
        if (topicRefusal !== undefined) {
          answer.errorCode = topicRefusal.code;
          continue;
        }
        if (subscribed === "all" || subscribed.has(topic.name)) {
          answer.errorCode = KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC;
          continue;
        }
        try {
          this.broker.partition(topic.name, answer.partition);
        } catch (error) {
          answer.errorCode = kafkaErrorOf(error).code;
          continue;
        }
        deletable.push({ topic: topic.name, partition: answer.partition });
        pending.push(answer);
      }
    });
    const what = `offsets of group ${JSON.stringify(request.groupId)}: ${deletable.map((p) => `${p.topic}/${p.partition}`).join(", ")}`;
    try {
      await this.broker.offsets.deleteOffsets(request.groupId, deletable);
      if (deletable.length > 0) this.audit(who, `deleted ${what}`);
    } catch (error) {
      const mapped = kafkaErrorOf(error);
      this.audit(who, `delete ${what} refused: ${mapped.message}`);
      for (const answer of pending) answer.errorCode = mapped.code;
    }
    return this.respond((writer) =>
      encodeOffsetDeleteResponse(writer, version, correlationId, KAFKA_ERROR.NONE, topics),
    );
  }

  /**
   * OffsetForLeaderEpoch for a log of one epoch: booblik has no leader epochs (every batch carries
   * −1, Metadata answers −1), so it is what Kafka answers for a partition whose whole log is one
   * epoch: epoch −1 or 0 ends at the high watermark (answered with the epoch asked for); a later
   * epoch is unknown, answered −1 and −1 (Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET).
   * current_leader_epoch is not checked: there is no epoch to fence against.
   */
  private offsetForLeaderEpoch(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): KafkaOutcome {
    const request = decodeOffsetForLeaderEpochRequest(reader, version);
    const topics = request.topics.map((topic) => {
      const refusal = this.refused(who, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic.name);
      return {
        name: topic.name,
        partitions: topic.partitions.map((asked): EpochEndOffset => {
          const answer: EpochEndOffset = {
            errorCode: refusal?.code ?? KAFKA_ERROR.NONE,
            partition: asked.partition,
            leaderEpoch: NO_LEADER_EPOCH,
            endOffset: -1,
          };
          if (refusal !== undefined) return answer;
          try {
            const partition = this.broker.partition(topic.name, asked.partition);
            if (asked.leaderEpoch === NO_LEADER_EPOCH || asked.leaderEpoch === 0) {
              answer.leaderEpoch = asked.leaderEpoch;
              answer.endOffset = partition.visibleNextOffset;
            }
          } catch (error) {
            answer.errorCode = kafkaErrorOf(error).code;
          }
          return answer;
        }),
      };
    });
    return this.respond((writer) =>
      encodeOffsetForLeaderEpochResponse(writer, version, correlationId, topics),
    );
  }

  // --- Authorization (src/auth/acl.ts, src/broker/acl-store.ts) -------------------------------------

  /** May `who` do `operation` on the resource? Not counted: for the silent filters (Metadata, lists). */
  private may(who: Who, operation: number, type: AclResourceType, name: string): boolean {
    const acls = this.broker.acls;
    return !acls.enforcing || acls.allowed(who.principal, who.host, operation, { type, name });
  }

  /** The error to answer when `who` may not (counted in /metrics and audited), else undefined. */
  private refused(who: Who, operation: number, type: AclResourceType, name: string): KafkaError | undefined {
    if (this.may(who, operation, type, name)) return undefined;
    const error = this.broker.acls.denied("kafka", who.principal, who.host, operation, { type, name });
    this.audit(who, `denied: ${error.message}`);
    return kafkaErrorOf(error);
  }

  /** CreateTopics (and Metadata's auto-creation): CREATE on the cluster, or on the topic. */
  private createRefusal(who: Who, topic: string): KafkaError | undefined {
    if (this.may(who, ACL_OPERATION.CREATE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME)) return undefined;
    return this.refused(who, ACL_OPERATION.CREATE, RESOURCE_TYPE.TOPIC, topic);
  }

  private audit(who: Who, what: string): void {
    const name = who.user === undefined ? "anonymous" : `user ${JSON.stringify(who.user)}`;
    this.options.audit?.(`booblik: audit: ${name} from ${who.host} (kafka): ${what}`);
  }

  /**
   * The refusal shared by the three ACL APIs, or undefined: SECURITY_DISABLED without an authorizer
   * (Kafka's answer), CLUSTER_AUTHORIZATION_FAILED without `operation` on the cluster.
   */
  private aclApiRefusal(who: Who, operation: number): AclResult | undefined {
    try {
      this.broker.acls.checkEnabled();
    } catch (error) {
      return { errorCode: KAFKA_ERROR.SECURITY_DISABLED, errorMessage: (error as Error).message };
    }
    const refusal = this.refused(who, operation, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    return refusal === undefined ? undefined : { errorCode: refusal.code, errorMessage: refusal.message };
  }

  /**
   * CreateAcls: each creation is validated on its own (INVALID_REQUEST naming the problem, as Kafka
   * answers a bad enum or principal); the valid ones are stored in one durable write, answered
   * after it. More than ACL_REQUEST_ENTRIES_MAX creations: every one refused, nothing stored.
   */
  private async createAcls(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const creations = decodeCreateAclsRequest(reader, version);
    const results: AclResult[] = creations.map(() => ({ errorCode: KAFKA_ERROR.NONE, errorMessage: null }));
    const refuseAll = (result: AclResult) => {
      for (let i = 0; i < results.length; i++) results[i] = result;
    };
    const refusal = this.aclApiRefusal(who, ACL_OPERATION.ALTER);
    if (refusal !== undefined) refuseAll(refusal);
    else if (creations.length > ACL_REQUEST_ENTRIES_MAX) {
      refuseAll({
        errorCode: KAFKA_ERROR.INVALID_REQUEST,
        errorMessage: `${creations.length} ACLs in one CreateAcls: at most ${ACL_REQUEST_ENTRIES_MAX}`,
      });
    } else {
      const valid: typeof creations = [];
      const pending: number[] = [];
      creations.forEach((acl, i) => {
        try {
          validateAcl(acl);
          valid.push(acl);
          pending.push(i);
        } catch (error) {
          results[i] = { errorCode: KAFKA_ERROR.INVALID_REQUEST, errorMessage: (error as Error).message };
        }
      });
      if (valid.length > 0) {
        try {
          // A durable file write: one admin request of the address's allowance (beyond it,
          // POLICY_VIOLATION, as for CreateTopics).
          this.options.adminRate?.take(who.host);
          await this.broker.acls.add(valid);
          this.audit(who, `created ACLs: ${valid.map(describeAcl).join("; ")}`);
        } catch (error) {
          const mapped = kafkaErrorOf(error);
          this.audit(who, `create ACLs refused: ${mapped.message}`);
          for (const i of pending) results[i] = { errorCode: mapped.code, errorMessage: mapped.message };
        }
      }
    }
    return this.respond((writer) => encodeCreateAclsResponse(writer, version, correlationId, results));
  }

  private describeAcls(reader: KafkaReader, version: number, correlationId: number, who: Who): KafkaOutcome {
    const filter = decodeDescribeAclsRequest(reader, version);
    let result = this.aclApiRefusal(who, ACL_OPERATION.DESCRIBE) ?? {
      errorCode: KAFKA_ERROR.NONE,
      errorMessage: null,
    };
    let found: ReturnType<Broker["acls"]["list"]> = [];
    if (result.errorCode === KAFKA_ERROR.NONE) {
      try {
        found = this.broker.acls.list(filter);
      } catch (error) {
        result = { errorCode: KAFKA_ERROR.INVALID_REQUEST, errorMessage: (error as Error).message };
      }
    }
    return this.respond((writer) =>
      encodeDescribeAclsResponse(writer, version, correlationId, result, found),
    );
  }

  /** DeleteAcls: every ACL matching a valid filter is removed in one durable write; per filter, what it removed. */
  private async deleteAcls(
    reader: KafkaReader,
    version: number,
    correlationId: number,
    who: Who,
  ): Promise<KafkaOutcome> {
    const filters = decodeDeleteAclsRequest(reader, version);
    const results: DeleteAclsFilterResult[] = filters.map(() => ({
      errorCode: KAFKA_ERROR.NONE,
      errorMessage: null,
      matching: [],
    }));
    const refusal =
      this.aclApiRefusal(who, ACL_OPERATION.ALTER) ??
      (filters.length > ACL_REQUEST_ENTRIES_MAX
        ? {
            errorCode: KAFKA_ERROR.INVALID_REQUEST,
            errorMessage: `${filters.length} filters in one DeleteAcls: at most ${ACL_REQUEST_ENTRIES_MAX}`,
          }
        : undefined);
    if (refusal !== undefined) {
      for (const result of results) Object.assign(result, refusal);
    } else {
      const valid: AclFilter[] = [];
      const pending: number[] = [];
      filters.forEach((filter, i) => {
        try {
          validateFilter(filter);
          valid.push(filter);
          pending.push(i);
        } catch (error) {
          Object.assign(results[i]!, {
            errorCode: KAFKA_ERROR.INVALID_REQUEST,
            errorMessage: (error as Error).message,
          });
        }
      });
      if (valid.length > 0) {
        try {
          this.options.adminRate?.take(who.host);
          const removed = await this.broker.acls.remove(valid);
          pending.forEach((i, j) => {
            results[i]!.matching = removed[j]!;
          });
          const gone = removed.flat();
          this.audit(
            who,
            `deleted ${gone.length} ACL${gone.length === 1 ? "" : "s"}${gone.length === 0 ? "" : `: ${gone.map(describeAcl).join("; ")}`}`,
          );
        } catch (error) {
          const mapped = kafkaErrorOf(error);
          for (const i of pending)
            Object.assign(results[i]!, { errorCode: mapped.code, errorMessage: mapped.message });
        }
      }
    }
    return this.respond((writer) => encodeDeleteAclsResponse(writer, version, correlationId, results));
  }
}

/** An upper bound of a Fetch response's size for the versions served: records plus fixed fields. */
function fetchResponseBytesHint(response: FetchResponse): number {
  let bytes = 64;
  for (const topic of response.topics) {
    bytes += 8 + topic.topic.length * 3;
    for (const partition of topic.partitions) {
      bytes += 48;
      // File pieces are sent from their files: no room for them in the buffer.
      for (const piece of partition.records ?? []) if (piece instanceof Uint8Array) bytes += piece.length;
    }
  }
  return bytes;
}

function describeAdvertised(): string {
  return [...ADVERTISED_VERSIONS]
    .map(([apiKey, range]) => `${KAFKA_API_NAMES[apiKey]} ${range.min}-${range.max}`)
    .join(", ");
}
