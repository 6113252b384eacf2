/**
 * The low-level client: one API call per broker request (admin, produce of record batches, fetch),
 * over a connection that is re-established with backoff when it breaks.
 *
 * Retries: a request that failed because the connection failed (refused, reset, timed out) is sent
 * again on a new connection, up to `retries` times with exponential backoff, only when it is safe to
 * repeat: reads and admin reads always; PRODUCE only when the caller allows it (a produce whose
 * answer was lost may have been appended, so a retry can duplicate records). Errors the broker
 * answered with are never retried here; their `retriable` flag tells the caller whether to.
 */

import { BooblikError } from "../domain/errors.ts";
import {
  decodeAclsResponse,
  decodeDeleteAclsResponse,
  encodeCreateAclsRequest,
  encodeDeleteAclsRequest,
  encodeDescribeAclsRequest,
  type WireAcl,
  type WireAclFilter,
} from "../protocol/acl-messages.ts";
import type { ByteReader, ByteWriter } from "../protocol/buffer.ts";
import {
  decodeListGroupsResponse,
  decodeOffsetFetchResponse,
  encodeDeleteGroupRequest,
  encodeListGroupsRequest,
  encodeOffsetCommitRequest,
  encodeOffsetFetchRequest,
  type FetchedOffset,
  type ListedGroup,
} from "../protocol/group-messages.ts";
import {
  decodeFetchResponse,
  decodeListOffsetsResponse,
  decodeMetadataResponse,
  decodeProduceResponse,
  decodeStatsResponse,
  encodeCreateTopicRequest,
  encodeDeleteTopicRequest,
  encodeFetchRequest,
  encodeListOffsetsRequest,
  encodeMetadataRequest,
  encodeProduceRequestHeader,
  encodeStatsRequest,
  type ProduceResponse,
  type TimestampType,
} from "../protocol/messages.ts";
import {
  decodeInitProducerIdResponse,
  encodeInitProducerIdRequest,
  type InitProducerIdResponse,
} from "../protocol/producer-messages.ts";
import {
  decodeAlterTopicResponse,
  decodePurgeResponse,
  encodeAddPartitionsRequest,
  encodeAlterTopicRequest,
  encodePurgeRequest,
  type PurgedPartition,
  type PurgePartition,
} from "../protocol/topic-admin.ts";
import { BrokerConnection, BrokerError, type ConnectionOptions } from "./connection.ts";
import { checkFetchedEntries } from "./fetched.ts";

export interface ClientOptions extends ConnectionOptions {
  /** Attempts after the first for requests that are safe to repeat. */
  retries?: number;
  /** First backoff; doubles per attempt up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export interface TopicInfo {
  name: string;
  config: Record<string, unknown>;
  timestampType: TimestampType;
  partitions: { partition: number; logStartOffset: number; nextOffset: number }[];
}

export interface MetadataInfo {
  brokerVersion: string;
  crc32cImplementation: string;
  topics: TopicInfo[];
}

export interface FetchResult {
  logStartOffset: number;
  /** The partition's next offset when the broker answered (how far a consumer could read). */
  nextOffset: number;
  /**
   * Whole framed entries as they are stored (docs/format.md), both CRCs of each checked by this
   * client; a copy the caller may keep. The first entry contains the requested offset and may start
   * before it: read them with `forEachFetchedRecord`/the Consumer, which drop the records below it.
   */
  records: Uint8Array;
  /** BaseOffset of the first entry (≤ the requested offset). */
  firstOffset: number;
  /** Records from the requested offset to the end of the whole entries: ask next from offset + this. */
  recordCount: number;
  /** [batchStart, batchEnd) of each entry's RecordBatch inside `records`, flattened. */
  batchBounds: number[];
}

export interface OffsetsInfo {
  logStartOffset: number;
  nextOffset: number;
}

export interface OffsetForTime {
  /** The first offset whose record timestamp is ≥ the time asked for; −1 when there is none. */
  offset: number;
  /** That record's timestamp; −1 when there is none. */
  timestampMs: number;
}

export interface FetchOptions {
  maxBytes?: number;
  /** Long poll: wait up to this long for a record at `offset` when there is none yet. */
  maxWaitMs?: number;
}

/** A request waiting for a reconnection round (BooblikClient.withRetries). */
interface RetryWaiter {
  /** Order in which requests were first made. */
  ticket: number;
  retries: number;
  failures: number;
  /** When its own backoff allows its next attempt (performance.now() ms); set as it joins a round. */
  dueAtMs: number;
  /**
   * Resumed by a round that came before `dueAtMs` (for another waiter): a connection failure of
   * that attempt does not count against it, and its due time stays.
   */
  early: boolean;
  resume: (connection: BrokerConnection) => void;
  fail: (error: unknown) => void;
}

/** What `resume` and `fail` are until the waiter joins a round. */
const notWaiting = () => {};

/**
 * Failures a request is retried after, on a new connection: the connection's own, and the broker's
 * BROKER_SHUTTING_DOWN answer to a request it read while draining for a stop ("this request was
 * not applied"; the connection closes behind it). Taken for final, that answer failed a producer's
 * batches at every graceful broker restart, and the batches behind them as sequence gaps (a
 * helper's stress run, 2026-12-02). `close()` of this client throws a plain BooblikError: never
 * retried.
 */
function isConnectionFailure(error: unknown): boolean {
  return (
    error instanceof BooblikError &&
    (error.code === "CONNECTION_ERROR" ||
      error.code === "TIMEOUT" ||
      error.code === "TOO_MANY_CONNECTIONS" ||
      (error instanceof BrokerError && error.code === "CLOSED"))
  );
}

export class BooblikClient {
  readonly options: ClientOptions;
  private connection: BrokerConnection | undefined;
  private connecting: Promise<BrokerConnection> | undefined;
  private closed = false;
  /** Connections opened so far (1 + reconnects). */
  connectionsOpened = 0;
  private nextTicket = 0;
  /** Requests waiting for the next reconnection round, by ticket (withRetries). */
  private retryQueue: RetryWaiter[] = [];
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** When `retryTimer` fires (performance.now() ms). */
  private retryTimerAtMs = 0;
  private roundRunning = false;

  private constructor(options: ClientOptions) {
    this.options = options;
  }

  /** Connects (with the same retries as requests) and returns the client. */
  static async connect(options: ClientOptions): Promise<BooblikClient> {
    const client = new BooblikClient(options);
    await client.withRetries(true, (connection) => Promise.resolve(connection));
    return client;
  }

  private async current(): Promise<BrokerConnection> {
    if (this.closed) throw new BooblikError("CLOSED", "client is closed");
    if (this.connection !== undefined && !this.connection.closed) return this.connection;
    this.connecting ??= BrokerConnection.connect(this.options).then(
      (connection) => {
        this.connecting = undefined;
        this.connectionsOpened++;
        if (this.closed) {
          // close() ran while this connection was being opened: it found nothing to close, and
          // nobody else will, so the socket would stay open (and the process alive).
          connection.close();
          throw new BooblikError("CLOSED", "client is closed");
        }
        this.connection = connection;
        return connection;
      },
      (error) => {
        this.connecting = undefined;
        throw error;
      },
    );
    return this.connecting;
  }

  /**
   * Runs `call` on a live connection; on a retriable connection failure reconnects and tries again.
   *
   * Order: a request that failed with its connection waits in `retryQueue`, in the order requests
   * were first made, for the next reconnection round, and so does every request made while any is
   * waiting. A round, one backoff after the last, connects once and hands the connection to all
   * of them in that order, so they are written in the order they were made. Each request used to
   * retry on its own backoff: a batch made during an outage (short backoff) then reached the broker
   * before an earlier batch of the same partition that had failed more often (long backoff) — a
   * sequence gap the broker refuses for good (idempotence.test.ts, "resume in the order they were
   * made"), or, for plain batches, records stored out of order.
   */
  private async withRetries<T>(
    repeatable: boolean,
    call: (connection: BrokerConnection) => Promise<T>,
  ): Promise<T> {
    const waiter: RetryWaiter = {
      ticket: this.nextTicket++,
      retries: repeatable ? (this.options.retries ?? 5) : 0,
      failures: 0,
      dueAtMs: 0,
      early: false,
      resume: notWaiting,
      fail: notWaiting,
    };
    let first = true;
    for (;;) {
      let connection: BrokerConnection | undefined;
      if (first && this.retryQueue.length === 0 && !this.roundRunning) {
        try {
          connection = await this.current();
        } catch (error) {
          this.countFailure(waiter, error);
        }
      }
      first = false;
      // Checked again after the connect: requests that failed meanwhile go first.
      if (connection === undefined || this.retryQueue.length > 0) {
        connection = await this.joinRound(waiter);
      }
      try {
        return await call(connection);
      } catch (error) {
        this.countFailure(waiter, error);
      }
    }
  }

  /** Rethrows what is not a retriable connection failure, or the failure past the last retry. */
  private countFailure(waiter: RetryWaiter, error: unknown): void {
    if (!isConnectionFailure(error) || this.closed) throw error;
    if (waiter.early) return;
    waiter.failures++;
    if (waiter.failures > waiter.retries) throw error;
  }

  private joinRound(waiter: RetryWaiter): Promise<BrokerConnection> {
    const queue = this.retryQueue;
    let at = queue.length;
    while (at > 0 && queue[at - 1]!.ticket > waiter.ticket) at--;
    queue.splice(at, 0, waiter);
    if (!waiter.early) waiter.dueAtMs = performance.now() + this.backoffMs(waiter.failures);
    waiter.early = false;
    const connection = new Promise<BrokerConnection>((resolve, reject) => {
      waiter.resume = resolve;
      waiter.fail = reject;
    });
    this.scheduleRound();
    return connection;
  }

  /** `backoffMs` doubled per failure after the first, up to `maxBackoffMs`. */
  private backoffMs(failures: number): number {
    return Math.min(
      (this.options.backoffMs ?? 100) * 2 ** Math.min(Math.max(failures - 1, 0), 30),
      this.options.maxBackoffMs ?? 5000,
    );
  }

  /**
   * The next round comes when the earliest waiter's own backoff ends (`dueAtMs`), and a failed round
   * counts only against the waiters that were due: each request fails after its own `retries`
   * attempts on its own schedule, about `backoffMs` × (2^`retries` − 1), whatever else waits.
   * - One backoff of the client's, doubled per round and reset only by a success, made every
   *   request during an outage wait eight times longer than the one before it (client.test.ts,
   *   "while the broker stays down").
   * - Rounds timed by the least-failed waiter but counted against every waiter let a steady flow
   *   of new requests use up an old one's retries at the first backoff: a 1.5 s outage failed a
   *   request that survived it alone (a reviewer's run; idempotence.test.ts).
   */
  private scheduleRound(): void {
    if (this.roundRunning || this.retryQueue.length === 0) return;
    let dueAtMs = Number.POSITIVE_INFINITY;
    for (const waiter of this.retryQueue) dueAtMs = Math.min(dueAtMs, waiter.dueAtMs);
    // A waiter that joins with an earlier due time than the timer's brings the round forward.
    if (this.retryTimer !== undefined) {
      if (this.retryTimerAtMs <= dueAtMs) return;
      clearTimeout(this.retryTimer);
    }
    this.retryTimerAtMs = dueAtMs;
    this.retryTimer = setTimeout(() => void this.runRound(), Math.max(0, dueAtMs - performance.now()));
  }

  private async runRound(): Promise<void> {
    this.retryTimer = undefined;
    this.roundRunning = true;
    // A timer may fire a little before its time by performance.now(): 1 ms of slack.
    const startedAtMs = performance.now() + 1;
    // A request that joins during the connect may have failed on this very connect already (its
    // own first attempt shared it): only the waiters the round started with count its failure.
    const attempting = new Set(this.retryQueue);
    let connection: BrokerConnection | undefined;
    let failure: unknown;
    try {
      connection = await this.current();
    } catch (error) {
      failure = error;
    }
    this.roundRunning = false;
    if (connection !== undefined) {
      // Resolved in ticket order: each continuation writes its request before the next one runs.
      for (const waiter of this.retryQueue.splice(0)) {
        waiter.early = waiter.dueAtMs > startedAtMs;
        waiter.resume(connection);
      }
      return;
    }
    const final = !isConnectionFailure(failure) || this.closed;
    const nowMs = performance.now();
    this.retryQueue = this.retryQueue.filter((waiter) => {
      if (attempting.has(waiter) && waiter.dueAtMs <= startedAtMs) {
        waiter.failures++;
        waiter.dueAtMs = nowMs + this.backoffMs(waiter.failures);
      }
      if (!final && waiter.failures <= waiter.retries) return true;
      waiter.fail(failure);
      return false;
    });
    this.scheduleRound();
  }

  private request<T>(
    repeatable: boolean,
    encode: (writer: ByteWriter, correlationId: number) => void,
    decode: (reader: ByteReader) => T,
    timeoutMs?: number,
    offset?: number,
    keepsFrame = false,
  ): Promise<T> {
    return this.withRetries(repeatable, (connection) =>
      connection.send(encode, decode, timeoutMs, undefined, offset, keepsFrame),
    );
  }

  // --- Admin -------------------------------------------------------------------------------------

  async metadata(topics: string[] = []): Promise<MetadataInfo> {
    const response = await this.request(
      true,
      (writer, id) => encodeMetadataRequest(writer, id, { topics }),
      decodeMetadataResponse,
    );
    return {
      brokerVersion: response.brokerVersion,
      crc32cImplementation: response.crc32cImplementation,
      topics: response.topics.map((topic) => ({
        name: topic.name,
        config: JSON.parse(topic.configJson) as Record<string, unknown>,
        timestampType: topic.timestampType,
        partitions: topic.partitions,
      })),
    };
  }

  async createTopic(name: string, config: Record<string, unknown> = {}): Promise<void> {
    await this.request(
      false,
      (writer, id) => encodeCreateTopicRequest(writer, id, { name, configJson: JSON.stringify(config) }),
      () => undefined,
    );
  }

  async deleteTopic(name: string): Promise<void> {
    await this.request(
      false,
      (writer, id) => encodeDeleteTopicRequest(writer, id, { name }),
      () => undefined,
    );
  }

  /**
   * Changes settings of an existing topic (docs/operations.md says which can change); resolves to
   * every setting of the topic after the change.
   */
  async alterTopic(name: string, changes: Record<string, unknown>): Promise<Record<string, unknown>> {
    const configJson = await this.request(
      false,
      (writer, id) => encodeAlterTopicRequest(writer, id, { name, changesJson: JSON.stringify(changes) }),
      decodeAlterTopicResponse,
    );
    return JSON.parse(configJson) as Record<string, unknown>;
  }

  /**
   * Raises the topic's partition count to `partitions` (never lowers it). Keyed records of producers
   * that learn the new count can go to other partitions than before.
   */
  async addPartitions(name: string, partitions: number): Promise<void> {
    await this.request(
      false,
      (writer, id) => encodeAddPartitionsRequest(writer, id, { name, partitions }),
      () => undefined,
    );
  }

  /**
   * Purges partitions of `name` (PURGE; Kafka's DeleteRecords): in each, records below
   * `beforeOffset` (−1: the partition's visible end) stop being readable, durably. Every partition
   * is checked before any moves; resolves with each partition's first readable offset after it.
   */
  async purge(name: string, partitions: readonly PurgePartition[]): Promise<PurgedPartition[]> {
    return await this.request(
      false,
      (writer, id) => encodePurgeRequest(writer, id, { name, partitions: [...partitions] }),
      decodePurgeResponse,
    );
  }

  /**
   * A new producer id and epoch (INIT_PRODUCER_ID): a Producer stamps its batches with them so that
   * a batch it sends again after a lost answer is not appended twice.
   */
  initProducerId(): Promise<InitProducerIdResponse> {
    return this.request(true, encodeInitProducerIdRequest, decodeInitProducerIdResponse);
  }

  async listOffsets(topic: string, partition: number): Promise<OffsetsInfo> {
    const response = await this.request(
      true,
      (writer, id) => encodeListOffsetsRequest(writer, id, { topic, partition, timestampMs: -1 }),
      decodeListOffsetsResponse,
    );
    return { logStartOffset: response.logStartOffset, nextOffset: response.nextOffset };
  }

  /**
   * The first offset whose record timestamp is ≥ `timestampMs` (ms since the epoch), Kafka's
   * ListOffsets by time; `offset` −1 when no visible record is that recent.
   */
  async offsetForTime(
    topic: string,
    partition: number,
    timestampMs: number,
  ): Promise<OffsetForTime & OffsetsInfo> {
    const response = await this.request(
      true,
      (writer, id) => encodeListOffsetsRequest(writer, id, { topic, partition, timestampMs }),
      decodeListOffsetsResponse,
    );
    return {
      logStartOffset: response.logStartOffset,
      nextOffset: response.nextOffset,
      offset: response.timestampOffset,
      timestampMs: response.offsetTimestampMs,
    };
  }

  async stats(): Promise<Record<string, number | string>> {
    const json = await this.request(true, encodeStatsRequest, decodeStatsResponse);
    return JSON.parse(json) as Record<string, number | string>;
  }

  // --- Records -----------------------------------------------------------------------------------

  /**
   * Appends one or more bare RecordBatch v2 (BaseOffset 0, back to back; see RecordBatchWriter in
   * src/record/batch.ts) to a partition. Not retried on a connection failure unless
   * `retryOnConnectionFailure` (a lost answer may hide an append that happened).
   */
  produce(
    topic: string,
    partition: number,
    records: Uint8Array,
    retryOnConnectionFailure = false,
  ): Promise<ProduceResponse> {
    // The records go out as they are, after a header that counts them: no copy into the frame.
    return this.withRetries(retryOnConnectionFailure, (connection) =>
      connection.send(
        (writer, id) =>
          encodeProduceRequestHeader(writer, id, { topic, partition, recordsBytes: records.length }),
        decodeProduceResponse,
        undefined,
        records,
      ),
    );
  }

  /**
   * Fetches entries from the one containing `offset`. Every entry's CRCs are checked here
   * (fetched.ts): the broker sends file bytes untouched (zero copy), so the client is the only
   * place that can. A mismatch throws CorruptRecordError naming the offset.
   *
   * The check runs once the response arrived, not inside its decoder: damaged records are this
   * fetch's error, not a broken connection (which would fail every request pipelined behind it).
   */
  async fetch(
    topic: string,
    partition: number,
    offset: number,
    options: FetchOptions = {},
  ): Promise<FetchResult> {
    const maxBytes = options.maxBytes ?? 1024 * 1024;
    const maxWaitMs = options.maxWaitMs ?? 0;
    const response = await this.request(
      true,
      (writer, id) => encodeFetchRequest(writer, id, { topic, partition, offset, maxBytes, maxWaitMs }),
      // The records stay a view into the answer's receive buffer, which the connection hands over
      // (keepsFrame) and never reuses: copying them out of a reused buffer instead cost 1 MiB of
      // memcpy into fresh memory per fetch (`slice` was 16-23 % of a consumer's CPU profile,
      // bench/load/client-consume.ts, 100 B records; docs/benchmarks.md, issue 13).
      decodeFetchResponse,
      (this.options.requestTimeoutMs ?? 30_000) + maxWaitMs,
      offset,
      true,
    );
    const checked = checkFetchedEntries(response.records, offset);
    return {
      logStartOffset: response.logStartOffset,
      nextOffset: response.nextOffset,
      records: response.records.subarray(0, checked.completeBytes),
      firstOffset: checked.firstOffset,
      recordCount: checked.nextFetchOffset - offset,
      batchBounds: checked.batchBounds,
    };
  }

  // --- Groups and committed offsets (docs/protocol.md, "Groups and committed offsets") -----------

  /**
   * Stores committed offsets of `group` (at most 256 partitions per call); resolves after the
   * broker forced them. Whole call or nothing. Retried on a connection failure: storing the same
   * offsets twice is harmless (a caller with several commits in flight at once should not rely on
   * retries, a repeated older commit could land after a newer one).
   */
  async commitOffsets(group: string, offsets: readonly CommitOffset[]): Promise<void> {
    await this.request(
      true,
      (writer, id) =>
        encodeOffsetCommitRequest(writer, id, {
          group,
          offsets: offsets.map((o) => ({
            topic: o.topic,
            partition: o.partition,
            offset: o.offset,
            metadata: o.metadata ?? "",
          })),
        }),
      () => undefined,
    );
  }

  /**
   * The committed offsets of `group`: of the partitions asked for (offset −1 where it committed
   * none; no `partitions` means every partition of the topic), or with no topics every offset the
   * group committed.
   */
  fetchOffsets(
    group: string,
    topics: readonly { topic: string; partitions?: readonly number[] }[] = [],
  ): Promise<FetchedOffset[]> {
    return this.request(
      true,
      (writer, id) =>
        encodeOffsetFetchRequest(writer, id, {
          group,
          topics: topics.map((t) => ({ topic: t.topic, partitions: [...(t.partitions ?? [])] })),
        }),
      decodeOffsetFetchResponse,
    );
  }

  /** Every group with committed offsets or members on the broker's Kafka listener, by name. */
  listGroups(): Promise<ListedGroup[]> {
    return this.request(true, encodeListGroupsRequest, decodeListGroupsResponse);
  }

  /**
   * Adds ACLs (docs/security.md "ACLs"; fields in Kafka's codes, `ACL_OPERATION` and friends from
   * this module): all or none, durable before the answer. Needs ALTER on the cluster; a broker
   * without `--authorizer acl` answers SECURITY_DISABLED. Not retried: a lost answer may have
   * added them, and adding an ACL already there changes nothing, so repeating is harmless.
   */
  async createAcls(acls: readonly WireAcl[]): Promise<void> {
    await this.request(
      false,
      (writer, id) => encodeCreateAclsRequest(writer, id, [...acls]),
      () => undefined,
    );
  }

  /** The ACLs matching `filter` (null names and ANY codes match everything). Needs DESCRIBE on the cluster. */
  describeAcls(filter: WireAclFilter): Promise<WireAcl[]> {
    return this.request(
      true,
      (writer, id) => encodeDescribeAclsRequest(writer, id, filter),
      decodeAclsResponse,
    );
  }

  /** Removes every ACL matching any filter; resolves with what each filter removed. Needs ALTER on the cluster. */
  deleteAcls(filters: readonly WireAclFilter[]): Promise<WireAcl[][]> {
    return this.request(
      false,
      (writer, id) => encodeDeleteAclsRequest(writer, id, [...filters]),
      decodeDeleteAclsResponse,
    );
  }

  /** Deletes every committed offset of `group` (refused while it has live Kafka members). */
  async deleteGroup(group: string): Promise<void> {
    await this.request(
      false,
      (writer, id) => encodeDeleteGroupRequest(writer, id, { group }),
      () => undefined,
    );
  }

  close(): void {
    this.closed = true;
    this.connection?.close();
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const closed = new BooblikError("CLOSED", "client is closed");
    for (const waiter of this.retryQueue.splice(0)) waiter.fail(closed);
  }
}

/** One partition's offset to commit (commitOffsets). */
export interface CommitOffset {
  topic: string;
  partition: number;
  /** The next offset the group is to read: the last record processed, plus one. */
  offset: number;
  /** Free text stored with it (at most 4,096 bytes); none by default. */
  metadata?: string;
}

export type { FetchedOffset, ListedGroup } from "../protocol/group-messages.ts";
