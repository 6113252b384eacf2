/**
 * The broker as an object with no sockets: a data directory of topics and partitions. This is the
 * embedded form of booblik, and what the server wraps.
 *
 * Layout:
 *   <dataDir>/.lock                      flock held while the broker runs (data-dir-lock.ts)
 *   <dataDir>/topics/<topic>.json        topic configuration, the commit point of create/delete
 *   <dataDir>/topics/<topic>.tmp         its temporary file while it is written (removed at open)
 *   <dataDir>/<topic>-<partition>/       one partition log (segments, checkpoint.json,
 *                                        producer-state.json: producer-state.ts)
 *   <dataDir>/producer-ids.json          the next block of producer ids (producer-ids.ts)
 *
 * Owns: the lock, the topic registry, the partitions, the retention timer, the open report, the
 * names of topics whose delete is still removing their directories (reserved until it finished), and
 * the committed offsets of consumer groups (offsets-store.ts), kept in the internal topic
 * `__consumer_offsets`: created on the first commit, replayed at open, hidden from `listTopics`
 * unless asked for, and refused to clients' appends, creates and deletes.
 *
 * Invariant: every name above fits NAME_MAX for every allowed topic name and partition (checked in
 * src/domain/limits.ts), so no valid CREATE_TOPIC fails with ENAMETOOLONG.
 */
import path from "node:path";
import {
  AtomicWriteBatch,
  fsyncDirectory,
  listDirectory,
  makeDirectoryDurably,
  pathExists,
  readTextFile,
  removeDirectoryTree,
  unlinkFile,
  writeFileAtomicallyNow,
} from "../../ffi/file.ts";
import {
  BooblikError,
  ClosedError,
  DataDirFormatError,
  InternalTopicError,
  InvalidArgumentError,
  SegmentFormatVersionError,
  TopicExistsError,
  UnknownTopicOrPartitionError,
  type UnsyncedReplaceError,
} from "../domain/errors.ts";
import { type PartitionId, type TopicName, toTopicName } from "../domain/ids.ts";
import {
  BROKER_PARTITIONS_DEFAULT_MAX,
  BROKER_TOPICS_DEFAULT_MAX,
  DISK_FULL_RETRY_MS,
  ENTRY_HEADER_BYTES,
  FETCH_BYTES_DEFAULT,
  MAPPED_ADDRESS_SPACE_BYTES_DEFAULT_MAX,
  OFFSETS_SEGMENT_BYTES_DEFAULT,
  OFFSETS_TOPIC_NAME,
  PRODUCER_IDS_BROKER_DEFAULT_MAX,
  RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
  SEGMENT_HEADER_BYTES,
  TOPIC_FILE_SUFFIX,
  TOPIC_TEMPORARY_FILE_SUFFIX,
} from "../domain/limits.ts";
import { replacedUnsynced } from "../domain/replaced.ts";
import { type BatchOptions, type DecodedRecord, encodeBatches, type RecordInput } from "../record/batch.ts";
import { batchOfValues } from "../record/entries.ts";
import { PartitionLog } from "../storage/partition-log.ts";
import { sealedReadDescriptors } from "../storage/read-descriptors.ts";
import type { RecordsRead, TimestampLookup } from "../storage/segment.ts";
import { segmentConfig } from "../storage/segment.ts";
import { AclStore, type AuthorizationOptions } from "./acl-store.ts";
import { DataDirLock } from "./data-dir-lock.ts";
import { Histogram } from "./metrics.ts";
import { OffsetsStore } from "./offsets-store.ts";
import { type AppendAck, Partition, type PurgeResult } from "./partition.ts";
import { ProducerIdAllocator } from "./producer-ids.ts";
import { ProducerIdBudget } from "./producer-state.ts";
import {
  DEFAULT_TOPIC_CONFIG,
  decodeTopicFile,
  encodeTopicFile,
  type RecordBytesCeiling,
  storageConfigOf,
  type TopicConfig,
  validateTopicConfig,
} from "./topic-config.ts";

export interface BrokerOptions {
  dataDir: string;
  /** Defaults for topics created without a setting (and the broker-wide durability default). */
  topicDefaults?: Partial<TopicConfig>;
  /** How often retention runs. */
  retentionCheckIntervalMs?: number;
  /** How often a partition writes its recovery point after forces. */
  checkpointIntervalMs?: number;
  /** Broker-wide limits a CREATE_TOPIC may not pass (defaults in src/domain/limits.ts). */
  limits?: Partial<BrokerLimits>;
  /** Segment size of the offsets topic when it is created (tests make it small to see compaction). */
  offsetsSegmentBytes?: number;
  /**
   * Enforce the ACLs of `acls.json` (`--authorizer acl`; acl-store.ts). Absent: every request is
   * allowed and the ACL requests are refused (SECURITY_DISABLED), as before ACLs existed.
   */
  authorization?: AuthorizationOptions | undefined;
  /** The memory bound of all committed offsets (COMMITTED_OFFSETS_BYTES_MAX; tests lower it). */
  committedOffsetsBytesMax?: number;
}

export interface BrokerLimits {
  maxTopics: number;
  maxPartitions: number;
  /** Σ partitions × segmentBytes over `mapped` topics. */
  maxMappedBytes: number;
  /** Idempotent producer ids all partitions remember together (producer-state.ts, Bounds). */
  maxProducerIds: number;
}

export interface BrokerOpenReport {
  dataDir: string;
  topics: number;
  partitions: number;
  segments: number;
  /** Every partition was closed cleanly last time (nothing sealed was scanned). */
  cleanShutdown: boolean;
  segmentsScanned: number;
  bytesScanned: number;
  /**
   * Torn or invalid tails cut after the recovery points (normal after a crash); zeros reserved ahead
   * of a writer are cut too but not counted (PartitionOpenReport.bytesCut).
   */
  bytesCut: number;
  /** Bytes before a recovery point that failed their check: forced data lost (PartitionOpenReport). */
  durableBytesLost: number;
  /** Partitions where that happened. */
  partitionsWithDurableLoss: string[];
  /** Offsets in damaged ranges kept in the middle of logs (PartitionOpenReport.offsetsLost). */
  offsetsLost: number;
  /** Those ranges, for people (file, file position, offsets). */
  damagedRanges: string[];
  /** Cut bytes holding valid entries, copied aside into quarantine files (PartitionOpenReport). */
  quarantined: string[];
  /** Zeroed segment headers written again, records kept (PartitionOpenReport.headersRewritten). */
  headersRewritten: string[];
  /**
   * Partitions of a topic file whose directory was missing at the start, created again empty: a
   * crash while the partition was being created, or a directory removed by hand (its records are
   * gone). Before, the start said nothing (a reviewer's fault harness, 2026-12-02).
   */
  partitionDirectoriesMissing: string[];
  /** Quarantine files on disk after the open, from this open and earlier ones, and their bytes. */
  quarantineFiles: number;
  quarantineBytes: number;
  /** Quarantine files removed at the open because their segment was gone. */
  quarantineFilesRemoved: number;
  segmentsDropped: number;
  /** Partitions opened read-only because the disk was full (they take writes once space returns). */
  readOnlyPartitions: number;
  /** Partitions whose purge start file could not be read, with why (they start at their first segment). */
  logStartProblems: string[];
  durationMs: number;
}

export interface PartitionDescription {
  partition: number;
  logStartOffset: number;
  /** The next offset a consumer can read (under `force`: the durable end). */
  nextOffset: number;
  /** The end of the appended log; above nextOffset only while a force is in flight. */
  logEndOffset: number;
  sizeBytes: number;
  segments: number;
}

export interface TopicDescription {
  name: string;
  config: TopicConfig;
  partitions: PartitionDescription[];
}

interface Topic {
  name: TopicName;
  config: TopicConfig;
  partitions: Partition[];
  /** Which topic of this name this is, in this process: a topic created again gets a new one. */
  incarnation: number;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Removes everything inside `directory`, keeping the directory itself. */
function emptyDirectory(directory: string): void {
  for (const entry of listDirectory(directory)) removeDirectoryTree(path.join(directory, entry));
}

/** Incarnations are unique within the process (nextTopicIncarnation++ per topic opened or made). */
let nextTopicIncarnation = 1;

const TOPICS_DIRECTORY = "topics";

function partitionDirectory(dataDir: string, topic: string, partition: number): string {
  return path.join(dataDir, `${topic}-${partition}`);
}

function topicFilePath(dataDir: string, topic: string): string {
  return path.join(dataDir, TOPICS_DIRECTORY, `${topic}${TOPIC_FILE_SUFFIX}`);
}

export class Broker {
  readonly dataDir: string;
  readonly topicDefaults: Readonly<TopicConfig>;
  readonly openReport: BrokerOpenReport;
  private readonly topics = new Map<string, Topic>();
  /**
   * Deletes past their commit point that are still closing partitions and removing directories, by
   * topic name. The name stays reserved until the delete finished: the directories it removes are
   * named after the topic, so a topic created under the same name in the meantime would lose its
   * directories (and records) to the delete resuming after its await.
   */
  private readonly deletions = new Map<string, Promise<void>>();
  /** Names whose partition directories the open found without a topic file: stopped deletes or creates. */
  private readonly interruptedTopicNames = new Set<string>();
  /**
   * Deleted topics whose groups' committed offsets are not yet removed from the log (the tombstones'
   * append or force failed, e.g. on a full disk), with why. Their partition directories stay until
   * the tombstones are forced: they are what makes the next start forget those commits, and the
   * name cannot be created again before (a restart would hand the old commits to the new topic).
   * `deletion(name)` tries again.
   */
  private readonly unforgottenTopics = new Map<string, string>();
  private readonly lock: DataDirLock;
  private readonly checkpointIntervalMs: number | undefined;
  readonly limits: Readonly<BrokerLimits>;
  private retentionTimer: ReturnType<typeof setInterval> | undefined;
  private readOnlyTimer: ReturnType<typeof setInterval> | undefined;
  /** Partitions whose clean-shutdown mark did not fit on a full disk at close (the next start scans them). */
  cleanMarksSkipped = 0;
  private closed = false;
  private openStartMs = 0;
  /** Where opening stands (for readiness probes while a large data directory recovers). */
  readonly recoveryProgress = { partitionsTotal: 0, partitionsOpened: 0, done: false };
  /** Duration of every completed force, in seconds. */
  readonly forceLatency = new Histogram();
  private offsetsStore: OffsetsStore | undefined;
  private producerIds: ProducerIdAllocator | undefined;
  /** How many producer ids the partitions remember together, within limits.maxProducerIds. */
  readonly producerIdBudget: ProducerIdBudget;
  private aclStore: AclStore | undefined;
  private readonly offsetsSegmentBytes: number;

  private constructor(dataDir: string, lock: DataDirLock, defaults: TopicConfig, options: BrokerOptions) {
    this.dataDir = dataDir;
    this.lock = lock;
    this.topicDefaults = defaults;
    this.checkpointIntervalMs = options.checkpointIntervalMs;
    this.offsetsSegmentBytes = options.offsetsSegmentBytes ?? OFFSETS_SEGMENT_BYTES_DEFAULT;
    this.limits = {
      maxTopics: options.limits?.maxTopics ?? BROKER_TOPICS_DEFAULT_MAX,
      maxPartitions: options.limits?.maxPartitions ?? BROKER_PARTITIONS_DEFAULT_MAX,
      maxMappedBytes: options.limits?.maxMappedBytes ?? MAPPED_ADDRESS_SPACE_BYTES_DEFAULT_MAX,
      maxProducerIds: options.limits?.maxProducerIds ?? PRODUCER_IDS_BROKER_DEFAULT_MAX,
    };
    this.producerIdBudget = new ProducerIdBudget(this.limits.maxProducerIds);
    this.openReport = {
      dataDir,
      topics: 0,
      partitions: 0,
      segments: 0,
      cleanShutdown: true,
      segmentsScanned: 0,
      bytesScanned: 0,
      bytesCut: 0,
      durableBytesLost: 0,
      partitionsWithDurableLoss: [],
      offsetsLost: 0,
      damagedRanges: [],
      quarantined: [],
      headersRewritten: [],
      partitionDirectoriesMissing: [],
      quarantineFiles: 0,
      quarantineBytes: 0,
      quarantineFilesRemoved: 0,
      segmentsDropped: 0,
      readOnlyPartitions: 0,
      logStartProblems: [],
      durationMs: 0,
    };
  }

  /**
   * Opens (creating if needed) a data directory: takes its lock, removes leftovers of interrupted
   * topic creations and deletions, and opens every partition (recovering what needs it).
   */
  static open(options: BrokerOptions): Broker {
    const { broker, steps } = Broker.begin(options);
    try {
      for (let step = steps.next(); !step.done; step = steps.next()) {
        // Synchronous open: no pause between partitions.
      }
    } catch (error) {
      broker.abandon();
      throw error;
    }
    return broker.finishOpen(options);
  }

  /**
   * Like open, but yields to the event loop after each partition, so that a process can answer
   * health and readiness probes (and report `recoveryProgress`) while a large data directory opens.
   */
  static async openAsync(options: BrokerOptions, onBroker?: (broker: Broker) => void): Promise<Broker> {
    const { broker, steps } = Broker.begin(options);
    onBroker?.(broker);
    try {
      for (let step = steps.next(); !step.done; step = steps.next()) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      broker.abandon();
      throw error;
    }
    return broker.finishOpen(options);
  }

  private static begin(options: BrokerOptions): { broker: Broker; steps: Generator<void> } {
    const dataDir = path.resolve(options.dataDir);
    const defaults = validateTopicConfig(options.topicDefaults ?? {}, DEFAULT_TOPIC_CONFIG);
    // Durably: on a first start these directories are new, and a power loss would take them (and
    // every record below them) if no fsync covered their entries.
    makeDirectoryDurably(path.join(dataDir, TOPICS_DIRECTORY));
    const lock = DataDirLock.acquire(dataDir);
    const broker = new Broker(dataDir, lock, defaults, options);
    broker.openStartMs = performance.now();
    return { broker, steps: broker.loadTopics() };
  }

  /**
   * After a failed open: closes what was opened and releases the lock. A close that fails (EIO from
   * close(2)) must neither hide the open's cause nor keep the lock: it is logged and the rest go on
   * (test/broker/open-failure-cleanup.test.ts).
   */
  private abandon(): void {
    for (const topic of this.topics.values()) {
      for (const partition of topic.partitions) {
        try {
          partition.log.close(false);
        } catch (error) {
          console.error(
            `booblik: while giving up the start, closing ${topic.name}-${partition.id} failed: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
    }
    this.lock.release();
  }

  private finishOpen(options: BrokerOptions): Broker {
    try {
      this.offsetsStore = new OffsetsStore(
        () => this.offsetsPartition(),
        this.topics.get(OFFSETS_TOPIC_NAME)?.partitions[0],
        options.committedOffsetsBytesMax,
      );
      this.producerIds = ProducerIdAllocator.open(this.dataDir);
      this.aclStore = AclStore.open(this.dataDir, options.authorization);
      // A delete stopped after its commit point leaves its partition directories, and may have left
      // its groups' committed offsets: finishDelete tombstones them, then removes the directories.
      // Last, so that nothing after it can fail the open under these appends.
      for (const name of this.interruptedTopicNames) {
        if (!this.offsetsStore.holdsCommitsOf(name)) {
          // Its records go only once the unlink is durable (finishDelete, the same).
          if (this.topicsDirectorySynced(name)) this.removeDirectoriesOf(name);
          continue;
        }
        const deletion = this.finishDelete(name, "at start").finally(() => this.deletions.delete(name));
        this.deletions.set(name, deletion);
      }
    } catch (error) {
      this.abandon();
      throw error;
    }
    this.openReport.durationMs = performance.now() - this.openStartMs;
    this.recoveryProgress.done = true;
    const interval = options.retentionCheckIntervalMs ?? 60_000;
    this.retentionTimer = setInterval(() => this.applyRetention(), interval);
    this.retentionTimer.unref();
    if (this.openReport.readOnlyPartitions > 0) {
      // Partitions opened on a full disk take writes again once their mark fits: the next append
      // retries it, and so does this timer, so /ready and metrics say when space came back.
      this.readOnlyTimer = setInterval(() => {
        if (this.readOnlyPartitionCount() === 0) clearInterval(this.readOnlyTimer);
      }, DISK_FULL_RETRY_MS);
      this.readOnlyTimer.unref();
    }
    return this;
  }

  /** The process-wide bound on read descriptors of sealed segments, as the metrics show it. */
  get readDescriptors(): { openCount: number; limit: number; closedByLimitCount: number } {
    return sealedReadDescriptors;
  }

  /**
   * Partitions stopped by a failed write or fdatasync (they refuse appends until a restart recovers
   * them; PostgreSQL's lesson: after a failed fsync the page cache cannot be trusted). Reads work.
   */
  failedPartitionCount(): number {
    let count = 0;
    for (const topic of this.topics.values())
      for (const partition of topic.partitions) if (partition.log.failure !== undefined) count++;
    return count;
  }

  /**
   * Partitions that cannot take writes because the disk was full when they opened; tries each one's
   * mark again first (a small file write per read-only partition, nothing for the others).
   */
  readOnlyPartitionCount(): number {
    let count = 0;
    for (const topic of this.topics.values()) {
      for (const partition of topic.partitions) {
        const log = partition.log;
        if (!log.readOnly || log.isClosed) continue;
        try {
          if (!log.writeUncleanMark()) count++;
        } catch {
          // Not a full disk: the log failed and says so on its next append.
        }
      }
    }
    return count;
  }

  /** Opens the topics' partitions one by one (a step per partition), then tallies the report. */
  private *loadTopics(): Generator<void> {
    const topicsDir = path.join(this.dataDir, TOPICS_DIRECTORY);
    const found: { topicName: TopicName; config: TopicConfig }[] = [];
    for (const name of listDirectory(topicsDir)) {
      const filePath = path.join(topicsDir, name);
      if (name.endsWith(TOPIC_TEMPORARY_FILE_SUFFIX)) {
        unlinkFile(filePath);
        continue;
      }
      if (!name.endsWith(TOPIC_FILE_SUFFIX)) continue;
      const text = readTextFile(filePath) ?? "";
      const { name: topicName, config } = decodeTopicFile(text, filePath, this.topicDefaults);
      found.push({ topicName, config });
      this.recoveryProgress.partitionsTotal += config.partitions;
    }
    // Partition directories without a topic file: an interrupted create or delete.
    const partitionsOf = new Map(
      found.map(({ topicName, config }) => [topicName as string, config.partitions]),
    );
    for (const name of listDirectory(this.dataDir)) {
      const match = /^(.+)-(\d+)$/.exec(name);
      if (match === null || name === TOPICS_DIRECTORY) continue;
      const count = partitionsOf.get(match[1]!);
      // A stopped delete's directories stay until its groups' commits are forgotten (finishOpen).
      if (count === undefined) this.interruptedTopicNames.add(match[1]!);
      else if (Number(match[2]) >= count) removeDirectoryTree(path.join(this.dataDir, name));
    }
    for (const { topicName, config } of found) {
      const partitions: Partition[] = [];
      const incarnation = nextTopicIncarnation++;
      this.topics.set(topicName, { name: topicName, config, partitions, incarnation });
      for (let id = 0; id < config.partitions; id++) {
        if (!pathExists(partitionDirectory(this.dataDir, topicName, id)))
          this.openReport.partitionDirectoriesMissing.push(`${topicName}-${id}`);
        partitions.push(this.openPartition(topicName, id, config, incarnation));
        this.recoveryProgress.partitionsOpened++;
        yield;
      }
    }
    const report = this.openReport;
    for (const topic of this.topics.values()) {
      report.topics++;
      for (const partition of topic.partitions) {
        const opened = partition.log.openReport;
        report.partitions++;
        report.segments += opened.segments;
        report.cleanShutdown &&= opened.cleanShutdown;
        report.segmentsScanned += opened.segmentsScanned;
        report.bytesScanned += opened.bytesScanned;
        report.bytesCut += opened.bytesCut;
        report.durableBytesLost += opened.durableBytesLost;
        report.offsetsLost += opened.offsetsLost;
        report.damagedRanges.push(...opened.damagedRanges);
        report.quarantined.push(...opened.quarantined);
        report.headersRewritten.push(...opened.headersRewritten);
        report.quarantineFiles += opened.quarantineFiles;
        report.quarantineBytes += opened.quarantineBytes;
        report.quarantineFilesRemoved += opened.quarantineFilesRemoved;
        if (opened.damageBeforeRecoveryPoint)
          report.partitionsWithDurableLoss.push(`${topic.name}-${partition.id}`);
        report.segmentsDropped += opened.segmentsDropped;
        if (opened.readOnlyCause !== undefined) report.readOnlyPartitions++;
        if (opened.logStartProblem !== undefined)
          report.logStartProblems.push(`${topic.name}-${partition.id}: ${opened.logStartProblem}`);
      }
    }
  }

  private openPartition(topic: TopicName, id: number, config: TopicConfig, incarnation: number): Partition {
    let log: PartitionLog;
    try {
      log = PartitionLog.open(
        partitionDirectory(this.dataDir, topic, id),
        segmentConfig(storageConfigOf(config)),
        this.checkpointIntervalMs === undefined ? {} : { checkpointIntervalMs: this.checkpointIntervalMs },
      );
    } catch (error) {
      // A data directory of an older storage format: name the command that converts it.
      if (error instanceof SegmentFormatVersionError && error.formatVersion < error.supportedVersion)
        throw new DataDirFormatError(this.dataDir, error.file, error.formatVersion, error.supportedVersion);
      throw error;
    }
    return new Partition(
      topic,
      id as PartitionId,
      log,
      config,
      (seconds) => this.forceLatency.observe(seconds),
      topic === OFFSETS_TOPIC_NAME,
      incarnation,
      this.producerIdBudget,
    );
  }

  // --- Idempotent producers ----------------------------------------------------------------------

  /**
   * A new producer id (unique for the life of the data directory, producer-ids.ts) with epoch 0:
   * what InitProducerId answers a producer that is not transactional. Its batches are then checked
   * for duplicates and gaps per partition (producer-state.ts).
   */
  async initProducerId(): Promise<{ producerId: number; producerEpoch: number }> {
    this.checkOpen();
    const allocator = this.producerIds;
    if (allocator === undefined)
      throw new ClosedError("the producer id allocator (the broker is still opening)");
    return { producerId: await allocator.allocate(), producerEpoch: 0 };
  }

  /** The ACLs and whether they are enforced (acl-store.ts), shared by both listeners. */
  get acls(): AclStore {
    const store = this.aclStore;
    if (store === undefined) throw new ClosedError("the ACLs (the broker is still opening)");
    return store;
  }

  // --- Committed offsets -------------------------------------------------------------------------

  /** Committed offsets of consumer groups (replayed from `__consumer_offsets` at open). */
  get offsets(): OffsetsStore {
    this.checkOpen();
    const store = this.offsetsStore;
    if (store === undefined) throw new ClosedError("the offsets store (the broker is still opening)");
    return store;
  }

  /**
   * Creates the offsets topic unless it exists, as Kafka creates `__consumer_offsets` when a group
   * coordinator is first looked up (the Kafka FindCoordinator handler calls this), so that a client
   * that asks for it then sees it in Metadata (franz-go's TestConsumeRegex waits for that).
   */
  ensureOffsetsTopic(): void {
    this.offsetsPartition();
  }

  /**
   * Partition 0 of the offsets topic, created on first use: one partition, `force` (a commit is
   * acknowledged after the fdatasync covering it), no retention (a commit must outlive its records).
   */
  private offsetsPartition(): Partition {
    this.checkOpen();
    const existing = this.topics.get(OFFSETS_TOPIC_NAME);
    if (existing !== undefined) return existing.partitions[0]!;
    this.createTopicNamed(OFFSETS_TOPIC_NAME, {
      partitions: 1,
      durability: "force",
      retentionMs: null,
      retentionBytes: null,
      timestampType: "CreateTime",
      writeMode: "file",
      segmentBytes: this.offsetsSegmentBytes,
      maxRecordBytes: Math.min(
        RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
        this.offsetsSegmentBytes - SEGMENT_HEADER_BYTES - ENTRY_HEADER_BYTES,
      ),
    });
    return this.topics.get(OFFSETS_TOPIC_NAME)!.partitions[0]!;
  }

  // --- Topics ------------------------------------------------------------------------------------

  /**
   * Creates a topic; settings not given come from the broker's topic defaults.
   *
   * While a delete of the same name is still running, the name is taken: this refuses with a
   * retriable TOPIC_EXISTS (Kafka answers a create of a topic marked for deletion the same way,
   * without the retriable hint) rather than waiting, because creating is synchronous here and the
   * caller who did not await the delete can await it (`deletion(name)`) and try again. The server
   * does exactly that, so that requests on one connection apply in the order they were sent.
   *
   * `ceiling` bounds maxRecordBytes from outside (the server's maximum request frame): an explicit
   * larger value is refused, a default one shrinks to it.
   */
  createTopic(
    name: string,
    settings: Partial<TopicConfig> = {},
    ceiling?: RecordBytesCeiling,
  ): TopicDescription {
    this.checkOpen();
    if (name === OFFSETS_TOPIC_NAME && !this.topics.has(name))
      throw new InternalTopicError(name, "created by clients (the broker creates it on the first commit)");
    return this.createTopicNamed(name, settings, ceiling);
  }

  private createTopicNamed(
    name: string,
    settings: Partial<TopicConfig>,
    ceiling?: RecordBytesCeiling,
  ): TopicDescription {
    const topicName = toTopicName(name);
    if (this.topics.has(topicName)) throw new TopicExistsError(topicName);
    if (this.deletions.has(topicName)) {
      throw new BooblikError(
        "TOPIC_EXISTS",
        `topic ${JSON.stringify(topicName)} is still being deleted; create it again once the delete finished`,
        { retriable: true },
      );
    }
    const unforgotten = this.unforgottenTopics.get(topicName);
    if (unforgotten !== undefined) {
      throw new BooblikError(
        "STORAGE_ERROR",
        `topic ${JSON.stringify(topicName)} was deleted, but its groups' committed offsets could not be removed from the log yet (${unforgotten}); it cannot be created again before they are, or a restart would start its groups at the old topic's offsets. Each create of the name tries again, and so does the next start`,
        { retriable: true },
      );
    }
    const config = validateTopicConfig(settings, this.topicDefaults, ceiling);
    // The offsets topic is the broker's own: it takes nothing from the limits clients are held to.
    if (topicName !== OFFSETS_TOPIC_NAME) this.checkLimits(topicName, config);
    const partitions: Partition[] = [];
    const incarnation = nextTopicIncarnation++;
    let unsynced: UnsyncedReplaceError | undefined;
    try {
      for (let id = 0; id < config.partitions; id++) {
        const directory = partitionDirectory(this.dataDir, topicName, id);
        // A leftover directory of the same name (an interrupted delete) must not leak old records.
        if (pathExists(directory)) removeDirectoryTree(directory);
        partitions.push(this.openPartition(topicName, id, config, incarnation));
      }
      fsyncDirectory(this.dataDir);
      // The commit point: the topic exists once this file does (also when only its directory's
      // sync failed: then it exists, and the caller hears why; errors.ts).
      unsynced = this.writeTopicFile(topicName, config);
    } catch (error) {
      for (const partition of partitions) partition.log.destroy();
      throw error;
    }
    this.topics.set(topicName, { name: topicName, config, partitions, incarnation });
    if (unsynced !== undefined) throw unsynced;
    return this.describeTopic(topicName);
  }

  /**
   * Deletes a topic and all its records. Waiting readers end; appends in flight fail. The name is
   * unknown to every other call from the start, and cannot be created again until this resolved.
   */
  async deleteTopic(name: string): Promise<void> {
    this.checkOpen();
    const topic = this.topicNamed(name);
    if (topic.name === OFFSETS_TOPIC_NAME) throw new InternalTopicError(topic.name, "deleted");
    // The commit point, before anything changes in memory: a failed unlink (EIO, EPERM, a read-only
    // file system) leaves the topic as it was, served, and the error goes to the caller. Before
    // 2026-12-03 the topic left the registry first: it was gone until the next start brought it
    // back (test/broker/delete-topic-unlink-fails.test.ts).
    unlinkFile(topicFilePath(this.dataDir, topic.name));
    this.topics.delete(topic.name);
    // Settles (and frees the name) only after the last directory was removed; `finally` runs even
    // when the removal failed, and a later create removes leftover directories of the name anyway.
    const deletion = this.removeTopic(topic).finally(() => this.deletions.delete(topic.name));
    this.deletions.set(topic.name, deletion);
    return deletion;
  }

  /**
   * The delete of `name` still running, if any: resolves (never rejects) once it ended. For a
   * deleted topic whose groups' committed offsets could not be removed yet (`unforgottenTopics`),
   * starts another try and returns it; the create that follows fails if that try did too.
   */
  deletion(name: string): Promise<void> | undefined {
    if (!this.deletions.has(name) && this.unforgottenTopics.has(name) && !this.closed) {
      const retry = this.finishDelete(name, "again").finally(() => this.deletions.delete(name));
      this.deletions.set(name, retry);
    }
    return this.deletions.get(name)?.catch(() => undefined);
  }

  private async removeTopic(topic: Topic): Promise<void> {
    // The unlink (deleteTopic) made durable: after this, a restart will not bring the topic back. If
    // it fails, a crash may: the directories stay (with the records the topic would come back
    // with), the partitions close, and the caller gets the error.
    let unsynced: unknown;
    try {
      fsyncDirectory(path.join(this.dataDir, TOPICS_DIRECTORY));
    } catch (error) {
      unsynced = error;
    }
    // Then its groups' committed offsets, before the partition directories go: a topic created
    // again under the name starts with none. Until the tombstones are forced, the directories are
    // what tells the next start (after a crash) to forget them (finishOpen). Only once the delete
    // is durable: while a crash may still bring the topic back, its groups keep their commits (it
    // comes back with its records, and with offsets tombstoned its consumers would start over by
    // their reset rule; before 2026-12-03 they did, test/server/dir-fsync-failure.test.ts).
    const forgotten =
      unsynced === undefined
        ? await this.forgetCommitsOf(topic.name, "")
        : this.keepCommitsOf(topic.name, `the topics directory could not be synced: ${messageOf(unsynced)}`);
    // Every partition, whatever one of them does: the delete is done (its commit point passed), and
    // what is left is removed by the next start, as after a crash here; answering an error would
    // tell the caller it failed.
    for (const partition of topic.partitions) {
      const directory = partition.log.directory;
      try {
        await partition.close(false);
      } catch (error) {
        console.error(
          `booblik: topic ${topic.name} deleted, but closing ${directory} failed: ${messageOf(error)}`,
        );
      }
      if (unsynced !== undefined) continue; // a crash may bring the topic back: its records stay
      try {
        if (forgotten) partition.log.destroy();
        // The tombstones failed (a full disk, most likely, and deleting a topic is how one frees
        // space): the records go, and the empty directory stays, the mark that makes the next start
        // forget the commits. Before 2026-12-03 the whole directory stayed: nothing was freed.
        else emptyDirectory(directory);
      } catch (error) {
        console.error(
          `booblik: topic ${topic.name} deleted, but its directory ${directory} could not be removed (the next start removes it): ${messageOf(error)}`,
        );
      }
    }
    if (unsynced !== undefined) throw unsynced;
  }

  /**
   * Tombstones the committed offsets of the deleted topic `name` (forced); true when that is done,
   * false when it failed: then the name is in `unforgottenTopics` with why, and logged.
   */
  private async forgetCommitsOf(name: string, when: string): Promise<boolean> {
    try {
      const count = (await this.offsetsStore?.forgetTopic(name)) ?? 0;
      this.unforgottenTopics.delete(name);
      if (count > 0 && when !== "")
        console.error(`booblik: forgot ${count} committed offset(s) of the deleted topic ${name} (${when})`);
      return true;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.unforgottenTopics.set(name, reason);
      console.error(
        `booblik: topic ${name} deleted, but its groups' committed offsets could not be removed from the log (${reason}); its partition directories stay until they are, so that a restart still forgets them, and the name cannot be created again before. Each create of the name tries again, and so does the next start`,
      );
      return false;
    }
  }

  /**
   * Leaves the committed offsets of the deleted topic `name` in place for now (`reason`: why the
   * delete is not yet known durable), as `forgetCommitsOf` leaves them when it fails: the name goes
   * into `unforgottenTopics`, and the next create of it or the next start finishes the delete.
   * Returns false (not forgotten).
   */
  private keepCommitsOf(name: string, reason: string): false {
    this.unforgottenTopics.set(name, reason);
    console.error(
      `booblik: topic ${name} deleted, but ${reason}; a crash may bring the topic back, so its records and its groups' committed offsets stay until the delete is durable. Each create of the name tries again, and so does the next start`,
    );
    return false;
  }

  /**
   * Finishes a delete past its commit point whose partitions are closed (found at open, or whose
   * tombstones or topics directory sync failed): the topics directory synced (the unlink durable),
   * then the tombstones, then every directory of the name.
   */
  private async finishDelete(name: string, when: string): Promise<void> {
    if (this.topicsDirectorySynced(name) && (await this.forgetCommitsOf(name, when)))
      this.removeDirectoriesOf(name);
  }

  /**
   * Syncs the topics directory, making the unlink of the deleted topic `name`'s file durable; on
   * failure false, with `name` kept for another try (`keepCommitsOf`).
   */
  private topicsDirectorySynced(name: string): boolean {
    try {
      fsyncDirectory(path.join(this.dataDir, TOPICS_DIRECTORY));
      return true;
    } catch (error) {
      return this.keepCommitsOf(name, `the topics directory could not be synced: ${messageOf(error)}`);
    }
  }

  /**
   * Removes every partition directory of the deleted topic `name` (`<name>-<n>`). A failure is
   * logged, not thrown: the delete is done, and the next start tries again (a directory that cannot
   * be removed must not stop a start).
   */
  private removeDirectoriesOf(name: string): void {
    for (const entry of listDirectory(this.dataDir)) {
      const match = /^(.+)-(\d+)$/.exec(entry);
      if (match?.[1] !== name) continue;
      try {
        removeDirectoryTree(path.join(this.dataDir, entry));
      } catch (error) {
        console.error(
          `booblik: the directory ${entry} of the deleted topic ${name} could not be removed (the next start tries again): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }

  /**
   * Changes settings of a live topic; returns the new description. Can change (applied to every
   * partition at once, no restart): `retentionMs`, `retentionBytes` (next retention run),
   * `durability` and `flushIntervalMs` (next append; becoming `force` resolves once a force covered
   * the log end), `maxRecordBytes` upwards only, within what fits a segment and `ceiling`
   * (next append), and `timestampType` (batches appended from now on; stored batches keep theirs).
   * Cannot change (InvalidArgumentError naming why): `partitions` (addPartitions), `writeMode`,
   * `segmentBytes`, `indexIntervalBytes` (the segments and indexes on disk are laid out by them),
   * and a smaller `maxRecordBytes` (batches up to the old bound are stored and must stay readable).
   * A key set to its current value is accepted. The topic file is replaced atomically before
   * anything changes in memory: after a crash the topic has either the old or the new settings.
   */
  async alterTopic(
    name: string,
    changes: Partial<TopicConfig>,
    ceiling?: RecordBytesCeiling,
  ): Promise<TopicDescription> {
    this.checkOpen();
    const topic = this.topicNamed(name);
    if (topic.name === OFFSETS_TOPIC_NAME) throw new InternalTopicError(topic.name, "altered");
    const current = topic.config;
    // A key given as undefined is a key not given (an options object built from optional flags).
    changes = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    const fixed: Record<string, string> = {
      partitions: "add partitions with addPartitions (they can only increase)",
      writeMode: "the segments on disk are written in it",
      segmentBytes: "the segments on disk are laid out by it",
      indexIntervalBytes: "the indexes on disk are built by it",
    };
    for (const [key, value] of Object.entries(changes)) {
      const why = fixed[key];
      if (why !== undefined && value !== current[key as keyof TopicConfig]) {
        throw new InvalidArgumentError(
          `${key} cannot change on an existing topic (${why}); it is ${JSON.stringify(current[key as keyof TopicConfig])}`,
        );
      }
    }
    if (typeof changes.maxRecordBytes === "number" && changes.maxRecordBytes < current.maxRecordBytes) {
      throw new InvalidArgumentError(
        `maxRecordBytes can only increase on an existing topic (batches up to ${current.maxRecordBytes} bytes are stored and must stay readable), got ${changes.maxRecordBytes}`,
      );
    }
    const config = validateTopicConfig(
      { ...current, ...changes } as Record<string, unknown>,
      this.topicDefaults,
      // An unchanged record limit is not held to a frame limit it predates.
      changes.maxRecordBytes !== undefined && changes.maxRecordBytes !== current.maxRecordBytes
        ? ceiling
        : undefined,
    );
    // Written in place also when only the directory's sync failed: then the settings hold, and
    // the caller hears why (errors.ts).
    const unsynced = this.writeTopicFile(topic.name, config);
    topic.config = config;
    // Every partition takes the settings; one whose force under them fails (becoming `force`: an
    // fdatasync error stops the partition) is named in an error that says the settings hold, so a
    // caller does not retry or undo a change that is in force, here and after a restart (before
    // 2026-12-03 the bare fdatasync error suggested nothing had changed).
    const settled = await Promise.allSettled(
      topic.partitions.map((partition) => partition.reconfigure(config)),
    );
    const failed = settled.findIndex((outcome) => outcome.status === "rejected");
    if (failed >= 0) {
      const reason = (settled[failed] as PromiseRejectedResult).reason;
      throw new BooblikError(
        reason instanceof BooblikError ? reason.code : "STORAGE_ERROR",
        `topic ${JSON.stringify(topic.name)}'s new settings are in force (and after a restart), but partition ${failed} failed under them: ${messageOf(reason)}`,
        { cause: reason },
      );
    }
    if (unsynced !== undefined) throw unsynced;
    return this.describeTopic(topic.name);
  }

  /**
   * Raises a topic's partition count to `partitions`; the new partitions start empty. Records with
   * a key go to `partitionForKey(key, count)`, so the partition of a key changes for every producer
   * that learns the new count (as in Kafka). Refused: fewer or as many partitions as now
   * (InvalidArgumentError), more than a topic may have, or beyond the broker's limits
   * (LIMIT_EXCEEDED). The new directories are made first and the topic file written last (the
   * commit point): a crash in between leaves directories that the next open removes.
   */
  addPartitions(name: string, partitions: number): TopicDescription {
    this.checkOpen();
    const topic = this.topicNamed(name);
    if (topic.name === OFFSETS_TOPIC_NAME) throw new InternalTopicError(topic.name, "given partitions");
    const current = topic.config.partitions;
    if (!Number.isSafeInteger(partitions) || partitions <= current) {
      throw new InvalidArgumentError(
        `partitions can only increase: topic ${JSON.stringify(topic.name)} has ${current}, got ${JSON.stringify(partitions)}`,
      );
    }
    const config = validateTopicConfig({ ...topic.config, partitions }, this.topicDefaults);
    this.checkGrowth(topic.name, config, partitions - current);
    const added: Partition[] = [];
    let unsynced: UnsyncedReplaceError | undefined;
    try {
      for (let id = current; id < partitions; id++) {
        const directory = partitionDirectory(this.dataDir, topic.name, id);
        if (pathExists(directory)) removeDirectoryTree(directory);
        added.push(this.openPartition(topic.name, id, config, topic.incarnation));
      }
      fsyncDirectory(this.dataDir);
      // In place also when only the directory's sync failed: then the partitions exist (errors.ts).
      unsynced = this.writeTopicFile(topic.name, config);
    } catch (error) {
      for (const partition of added) partition.log.destroy();
      throw error;
    }
    topic.config = config;
    topic.partitions.push(...added);
    if (unsynced !== undefined) throw unsynced;
    return this.describeTopic(topic.name);
  }

  /**
   * Replaces the topic's file; the UnsyncedReplaceError when it is in place but its directory's
   * sync failed (`replacedUnsynced`), any other failure thrown (nothing changed).
   * Not the default `<topic>.json.tmp`: 249 + 9 bytes is beyond NAME_MAX. `<topic>.tmp` cannot
   * collide with another topic's file (those end in .json) and open removes it like any `.tmp`.
   */
  private writeTopicFile(name: TopicName, config: TopicConfig): UnsyncedReplaceError | undefined {
    return replacedUnsynced(() =>
      writeFileAtomicallyNow(
        topicFilePath(this.dataDir, name),
        encodeTopicFile(name, config),
        path.join(this.dataDir, TOPICS_DIRECTORY, `${name}${TOPIC_TEMPORARY_FILE_SUFFIX}`),
      ),
    );
  }

  /**
   * Every topic, sorted by name; the internal offsets topic only with `includeInternal` (it can
   * always be described by name).
   */
  listTopics(options: { includeInternal?: boolean } = {}): TopicDescription[] {
    this.checkOpen();
    return [...this.topics.keys()]
      .filter((name) => options.includeInternal === true || name !== OFFSETS_TOPIC_NAME)
      .sort()
      .map((name) => this.describeTopic(name));
  }

  /**
   * Quarantine files on disk now, over every partition (the offsets topic's too): they go with their
   * segments (PartitionLog), so this falls when retention or a purge deletes those.
   */
  quarantineTotals(): { files: number; bytes: number } {
    const totals = { files: 0, bytes: 0 };
    if (this.closed) return totals;
    for (const topic of this.topics.values()) {
      for (const partition of topic.partitions) {
        const files = partition.log.quarantineFiles;
        if (files.length === 0) continue;
        totals.files += files.length;
        totals.bytes += partition.log.quarantineBytes;
      }
    }
    return totals;
  }

  /** Whether `name` is a topic only the broker writes (the offsets topic). */
  static isInternalTopic(name: string): boolean {
    return name === OFFSETS_TOPIC_NAME;
  }

  describeTopic(name: string): TopicDescription {
    this.checkOpen();
    const topic = this.topicNamed(name);
    return {
      name: topic.name,
      config: { ...topic.config },
      partitions: topic.partitions.map((partition) => ({
        partition: partition.id,
        logStartOffset: partition.log.logStartOffset,
        nextOffset: partition.visibleNextOffset,
        logEndOffset: partition.log.nextOffset,
        sizeBytes: partition.log.sizeBytes,
        segments: partition.log.segmentCount,
      })),
    };
  }

  private topicNamed(name: string): Topic {
    const topic = this.topics.get(name);
    if (topic === undefined) throw new UnknownTopicOrPartitionError(name);
    return topic;
  }

  /** The partition, or UnknownTopicOrPartitionError. */
  partition(topic: string, partition: number): Partition {
    this.checkOpen();
    const found = this.topicNamed(topic).partitions[partition];
    if (found === undefined || !Number.isInteger(partition))
      throw new UnknownTopicOrPartitionError(topic, partition);
    return found;
  }

  // --- Records -----------------------------------------------------------------------------------

  /**
   * Appends one or more bare RecordBatch v2, back to back, as a producer sends them (BaseOffset 0).
   * Every batch is validated first, whole request or nothing (Partition.append). Resolves when the
   * topic's durability policy is satisfied; the acknowledgement says which. An array of values
   * (strings are UTF-8) is appended as one batch of records with null keys and the current time.
   */
  append(
    topic: string,
    partition: number,
    batches: Uint8Array | readonly (Uint8Array | string | null)[],
  ): Promise<AppendAck> {
    const target = this.partition(topic, partition);
    return target.append(batches instanceof Uint8Array ? batches : batchOfValues(batches));
  }

  /**
   * Appends `records` (keys, values, headers, timestamps; `options.codec` compresses with gzip or
   * zstd) as one batch, or, when they do not fit the topic's `maxRecordBytes` together, as several
   * batches of at most that size in one append (`encodeBatches`): consecutive offsets, whole
   * request or nothing, one acknowledgement. A single record too large for a batch of its own is
   * RecordTooLargeError, and so is a set larger than an empty segment holds (one append lands in one
   * segment): split such sets into several calls. Resolves like `append`; every refusal, also of
   * a record that cannot be encoded (a timestamp that is not an integer), is a rejection.
   */
  produce(
    topic: string,
    partition: number,
    records: readonly RecordInput[],
    options: Pick<BatchOptions, "codec"> = {},
  ): Promise<AppendAck> {
    const target = this.partition(topic, partition);
    const { maxRecordBytes } = this.topicNamed(topic).config;
    let batches: Uint8Array;
    try {
      batches = encodeBatches(
        records,
        maxRecordBytes,
        options.codec === undefined ? {} : { codec: options.codec },
      );
    } catch (error) {
      return Promise.reject(error); // refused like an invalid append: by the promise
    }
    return target.append(batches);
  }

  /**
   * Copying read of CRC-checked, visible entries (framed batches) from the one containing `offset`,
   * at most `maxBytes` (but always one entry). Under the `force` policy records become visible once
   * forced (see Partition).
   */
  read(topic: string, partition: number, offset: number, maxBytes = FETCH_BYTES_DEFAULT): RecordsRead {
    return this.partition(topic, partition).read(offset, maxBytes);
  }

  /** The first visible offset whose record timestamp is ≥ `timestampMs`, or undefined. */
  offsetForTimestamp(topic: string, partition: number, timestampMs: number): TimestampLookup | undefined {
    return this.partition(topic, partition).offsetForTimestamp(timestampMs);
  }

  /** Records from `offset` on, waiting at the end for new ones; ends when the topic or broker closes. */
  tail(topic: string, partition: number, offset: number): AsyncGenerator<DecodedRecord> {
    return this.partition(topic, partition).tail(offset);
  }

  /**
   * Purges a partition (Kafka's DeleteRecords): records below `beforeOffset` (−1: the visible end)
   * stop being readable; the log start moves there durably (a crash never moves it back) and whole
   * segments below it are deleted. See Partition.purge for what is refused.
   */
  async purge(topic: string, partition: number, beforeOffset: number): Promise<PurgeResult> {
    return await this.partition(topic, partition).purge(beforeOffset);
  }

  /** Runs retention on every partition now (it also runs on a timer). */
  applyRetention(nowMs = Date.now()): { segmentsDeleted: number; bytesDeleted: number } {
    const total = { segmentsDeleted: 0, bytesDeleted: 0 };
    if (this.closed) return total;
    for (const topic of this.topics.values()) {
      for (const partition of topic.partitions) {
        const result = partition.applyRetention(nowMs);
        total.segmentsDeleted += result.segmentsDeleted;
        total.bytesDeleted += result.bytesDeleted;
      }
    }
    return total;
  }

  // --- Lifetime ----------------------------------------------------------------------------------

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Clean shutdown: waits for forces in flight, forces everything, writes every partition's recovery
   * point with the clean-shutdown mark, releases the lock. The next open scans no sealed segment.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retentionTimer !== undefined) clearInterval(this.retentionTimer);
    if (this.readOnlyTimer !== undefined) clearInterval(this.readOnlyTimer);
    let firstError: unknown;
    // A delete still removing directories must finish before the lock is released: another broker
    // could otherwise open the directory while this one still deletes in it. Its error belongs to
    // its caller (who awaits deleteTopic), not to close.
    await Promise.allSettled(this.deletions.values());
    // Every partition's clean checkpoint and producer snapshot are staged into one batch and made
    // durable together (two syncfs instead of four fsyncs per partition: ffi/file.ts AtomicWriteBatch).
    const batch = new AtomicWriteBatch(this.dataDir);
    for (const topic of this.topics.values()) {
      for (const partition of topic.partitions) {
        try {
          await partition.close(true, batch);
          if (partition.log.cleanMarkSkipped !== undefined) this.cleanMarksSkipped++;
        } catch (error) {
          firstError ??= error;
        }
      }
    }
    try {
      batch.commit();
    } catch (error) {
      // The targets keep their old content: the next open scans what it must; nothing is lost.
      firstError ??= error;
    }
    this.lock.release();
    if (firstError !== undefined) throw firstError;
  }

  /**
   * Refuses a create that would pass a broker-wide limit. Existing data directories open whatever
   * they hold: the limits guard growth, not what is already there.
   */
  private checkLimits(name: string, config: TopicConfig): void {
    let topics = 0;
    let partitions = 0;
    let mappedBytes = 0;
    for (const topic of this.topics.values()) {
      if (topic.name === OFFSETS_TOPIC_NAME) continue;
      topics++;
      partitions += topic.config.partitions;
      if (topic.config.writeMode === "mapped")
        mappedBytes += topic.config.partitions * topic.config.segmentBytes;
    }
    const limits = this.limits;
    const refuse = (what: string): never => {
      throw new BooblikError("LIMIT_EXCEEDED", `cannot create topic ${JSON.stringify(name)}: ${what}`);
    };
    if (topics + 1 > limits.maxTopics) refuse(`the broker holds ${topics} topics, the limit (--max-topics)`);
    if (partitions + config.partitions > limits.maxPartitions) {
      refuse(
        `${config.partitions} more partitions would make ${partitions + config.partitions}, above the limit of ${limits.maxPartitions} (--max-partitions)`,
      );
    }
    if (config.writeMode === "mapped") {
      const more = config.partitions * config.segmentBytes;
      if (mappedBytes + more > limits.maxMappedBytes) {
        refuse(
          `${config.partitions} mapped partitions of ${config.segmentBytes} bytes would map ${mappedBytes + more} bytes of address space in all, above the limit of ${limits.maxMappedBytes} (--max-mapped-memory)`,
        );
      }
    }
  }

  /** Refuses `more` partitions for an existing topic beyond the broker's partition or mapped-memory limit. */
  private checkGrowth(name: string, config: TopicConfig, more: number): void {
    let partitions = 0;
    let mappedBytes = 0;
    for (const topic of this.topics.values()) {
      if (topic.name === OFFSETS_TOPIC_NAME) continue;
      partitions += topic.config.partitions;
      if (topic.config.writeMode === "mapped")
        mappedBytes += topic.config.partitions * topic.config.segmentBytes;
    }
    const limits = this.limits;
    const refuse = (what: string): never => {
      throw new BooblikError(
        "LIMIT_EXCEEDED",
        `cannot add partitions to topic ${JSON.stringify(name)}: ${what}`,
      );
    };
    if (partitions + more > limits.maxPartitions) {
      refuse(
        `${more} more partitions would make ${partitions + more}, above the limit of ${limits.maxPartitions} (--max-partitions)`,
      );
    }
    if (config.writeMode === "mapped" && mappedBytes + more * config.segmentBytes > limits.maxMappedBytes) {
      refuse(
        `${more} mapped partitions of ${config.segmentBytes} bytes would map ${mappedBytes + more * config.segmentBytes} bytes of address space in all, above the limit of ${limits.maxMappedBytes} (--max-mapped-memory)`,
      );
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError("broker");
  }
}
