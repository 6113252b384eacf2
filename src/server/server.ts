/**
 * The broker's TCP server: Bun.listen, the connection registry and limits, request dispatch to the
 * Broker, long-poll fetches, zero-copy or copying fetch, stats, idle sweeping, graceful shutdown.
 *
 * Owns: the listener, every Connection, waiting fetches, counters. Does not own the Broker (the
 * caller opens and closes it) nor the wire format (src/protocol).
 *
 * Invariants:
 * - A request that cannot be decoded gets an error response and the connection stays usable (its
 *   frame boundary is known); a frame whose size is impossible, or a request not received whole
 *   within the request timeout, ends the connection after the answers to every earlier request.
 * - A refused connection (the limit, the per-address limit, shutdown) gets one error frame with
 *   correlation id 0 and a half-close, from accept until the process exits.
 * - No handler throws into Bun: every failure becomes an error response.
 * - A waiting fetch is answered exactly once: by an append, by its timer, or by shutdown; its
 *   append listener and timer are removed when it is answered or its connection closes.
 */

import type { Socket } from "bun";
import { crc32cImplementation } from "../../ffi/crc32c.ts";
import {
  ACL_OPERATION,
  type Acl,
  type AclResourceType,
  ANONYMOUS_PRINCIPAL,
  CLUSTER_RESOURCE_NAME,
  describeAcl,
  RESOURCE_TYPE,
} from "../auth/acl.ts";
import { LoginDelays, StoppableSleeps } from "../auth/login-delays.ts";
import { AuthenticationError, SCRAM_MECHANISMS, type ScramMechanism, ScramServer } from "../auth/scram.ts";
import type { ClientPrincipalRule, TlsFiles } from "../auth/tls.ts";
import { type CertificateLoginTarget, type ListeningPort, ListeningPorts } from "../auth/tls-ports.ts";
import type { Broker } from "../broker/broker.ts";
import { Histogram } from "../broker/metrics.ts";
import type {
  AppendSender,
  AppendWaiter,
  CopyBelow,
  Partition,
  ReadArena,
  VisibleWaiter,
} from "../broker/partition.ts";
import type { Users } from "../broker/users-file.ts";
import { BooblikError, OffsetOutOfRangeError } from "../domain/errors.ts";
import {
  ADMIN_REQUESTS_PER_SECOND_DEFAULT,
  COPY_FETCH_ARENA_BYTES_MAX,
  FETCH_ANSWER_FREE_BYTES,
  FETCH_SENDFILE_ANSWER_BYTES_MIN,
  PRE_LOGIN_FRAME_BYTES_MAX,
  PRODUCE_WAITERS_KEPT,
  REFUSED_LINGERING_MAX,
  SCRAM_MESSAGE_BYTES_MAX,
  SHUTDOWN_DRAIN_MS,
} from "../domain/limits.ts";
import { BOOBLIK_VERSION } from "../domain/version.ts";
import {
  decodeCreateAclsRequest,
  decodeDeleteAclsRequest,
  decodeDescribeAclsRequest,
  encodeAclsResponse,
  encodeDeleteAclsResponse,
} from "../protocol/acl-messages.ts";
import { ByteReader, ByteWriter, ProtocolError } from "../protocol/buffer.ts";
import { WIRE_ERROR_CODES, wireCodeOf } from "../protocol/error-codes.ts";
import {
  API,
  API_NAMES,
  API_VERSION_MAX,
  API_VERSION_MIN,
  REQUEST_HEADER_BYTES,
  type RequestHeader,
  readRequestHeader,
} from "../protocol/frame.ts";
import {
  decodeDeleteGroupRequest,
  decodeOffsetCommitRequest,
  decodeOffsetFetchRequest,
  encodeListGroupsResponse,
  encodeOffsetFetchResponse,
} from "../protocol/group-messages.ts";
import {
  type AuthenticateRequest,
  decodeAuthenticateRequest,
  decodeCreateTopicRequest,
  decodeDeleteTopicRequest,
  decodeFetchRequest,
  decodeListOffsetsRequest,
  decodeMetadataRequest,
  decodeProduceRequestRange,
  encodeAuthenticateResponse,
  encodeEmptyResponse,
  encodeErrorResponse,
  encodeFetchResponseHeader,
  encodeListOffsetsResponse,
  encodeMetadataResponse,
  encodeProduceResponse,
  encodeStatsResponse,
  type FetchRequest,
  largestProducibleBatchBytes,
  type ProduceRequestRange,
  type ProduceResponse,
  type TopicMetadata,
} from "../protocol/messages.ts";
import { decodeInitProducerIdRequest, encodeInitProducerIdResponse } from "../protocol/producer-messages.ts";
import {
  decodeAddPartitionsRequest,
  decodeAlterTopicRequest,
  decodePurgeRequest,
  encodeAlterTopicResponse,
  encodePurgeResponse,
  type PurgedPartition,
} from "../protocol/topic-admin.ts";
import { AdminRateLimiter } from "./admin-rate.ts";
import {
  Connection,
  type ConnectionCounters,
  type ConnectionHost,
  type ParkedRequest,
  type ResponseSlot,
} from "./connection.ts";
import { commitOffsets, deleteGroup, fetchOffsets, type KafkaGroups, listGroups } from "./group-requests.ts";
import { InboundBudget } from "./inbound-budget.ts";

/** The version METADATA reports (src/domain/version.ts). */
export const BROKER_VERSION = BOOBLIK_VERSION;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();
/** The records of a copying FETCH answered with none (its connection holds unread answers). */
const NO_RECORDS = new Uint8Array(0);

/** Where the process's memory is: the JS heap, buffers outside it, and the whole resident set. */
function memoryStats(): Record<string, number> {
  const usage = process.memoryUsage();
  return {
    memoryRssBytes: usage.rss,
    memoryHeapUsedBytes: usage.heapUsed,
    memoryHeapTotalBytes: usage.heapTotal,
    memoryExternalBytes: usage.external,
    memoryArrayBuffersBytes: usage.arrayBuffers,
  };
}

export type FetchPath = "sendfile" | "copy";

export interface ServerOptions {
  hostname: string;
  port: number;
  maxFrameBytes: number;
  maxConnections: number;
  /** Connection slots one client address may hold. */
  maxConnectionsPerAddress: number;
  /** CREATE_TOPIC, DELETE_TOPIC, ALTER_TOPIC, ADD_PARTITIONS and PURGE requests one client address may make per second (admin-rate.ts). */
  maxAdminRequestsPerSecond?: number;
  idleTimeoutMs: number;
  /** A request must arrive whole within this (plus its size at REQUEST_MIN_BYTES_PER_SECOND). */
  requestTimeoutMs: number;
  /** Broker-wide bytes of unfinished requests beyond each connection's free allowance. */
  maxInboundBytes: number;
  fetchPath: FetchPath;
  /** Upper bound on one FETCH response's records, whatever the client asks for. */
  maxFetchBytes: number;
  /** Users who may log in (SCRAM); undefined: no authentication (loopback, or --allow-anonymous). */
  users?: Users;
  /**
   * Where admin actions (topic create and delete, done or refused) are reported, one line each
   * naming who asked and from where; the caller decides where lines go (the broker prints them).
   */
  auditLog?: (line: string) => void;
  /** Failed-login delays per address; shared with the Kafka listener when given. */
  loginDelays?: LoginDelays;
  /**
   * The listener on `hostname:port` speaks TLS only (auth/tls.ts); FETCH then always copies,
   * whatever `fetchPath` says.
   */
  tls?: TlsFiles;
  /**
   * A second listener that speaks TLS beside the plain one (`--tls-port`, `--tls-host`): FETCH
   * copies on its connections and keeps `fetchPath` on the plain ones (listenTls).
   */
  tlsListener?: { hostname: string; port: number; tls: TlsFiles };
  /**
   * How the certificate of a client on a TLS listener with a CA becomes its principal when the
   * broker has no users (with users the SCRAM login decides, as Kafka's SASL_SSL does). Default dn.
   */
  clientPrincipal?: ClientPrincipalRule;
}

export interface ServerCounters extends ConnectionCounters {
  connectionsAccepted: number;
  connectionsRefused: number;
  protocolViolations: number;
  requestTimeouts: number;
  authenticationFailures: number;
  requests: number;
  errors: number;
  produceRequests: number;
  produceRecords: number;
  produceBytes: number;
  fetchRequests: number;
  fetchRecords: number;
  fetchBytes: number;
  copiedFetchBytes: number;
  /** Copying FETCHes held to FETCH_ANSWER_FREE_BYTES: the connections' held answers had reached --max-inbound-memory. */
  copiedFetchesHeldToFreeBytes: number;
  fetchWaits: number;
}

interface Waiter {
  /** Answers now with whatever the log holds (shutdown). */
  answer(): void;
}

/**
 * A long-poll FETCH waiting for a record at its offset to become visible, or for its wait to end:
 * one object per waiting FETCH, in place of the closures, listener and subscriptions it used to
 * allocate (issue 13). Answered at most once; every way out stops the timer and the subscription.
 */
class FetchWait implements Waiter, VisibleWaiter, ParkedRequest {
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  private ended = false;

  constructor(
    private readonly server: BrokerServer,
    readonly connection: Connection,
    readonly slot: ResponseSlot,
    readonly correlationId: number,
    readonly request: FetchRequest,
    readonly partition: Partition,
  ) {}

  visibleMoved(): void {
    if (this.partition.visibleNextOffset > this.request.offset || this.partition.isClosed) this.answer();
  }

  /** Answers now with what the log holds (data arrived, the wait ended, shutdown, expedite). */
  answer(): void {
    if (this.ended) return;
    this.cancel();
    this.server.answerWaitingFetch(this);
  }

  expedite(): void {
    this.answer();
  }

  /** Stops waiting without answering (the connection closed). */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.partition.removeVisibleWaiter(this);
    this.server.fetchWaitEnded(this);
  }
}

/** The timer callback of every waiting FETCH (the waiter is its argument). */
function answerFetchWait(wait: FetchWait): void {
  wait.answer();
}

/**
 * One PRODUCE waiting for its append (Partition.appendQueued): hands the outcome to the server.
 * Reused through the server's free list.
 */
class ProduceWaiter implements AppendWaiter {
  private readonly server: BrokerServer;
  connection: Connection | undefined = undefined;
  /** The connection, as the partition's gather sees it (Partition's AppendSender). */
  get sender(): AppendSender | undefined {
    return this.connection;
  }
  slot: ResponseSlot | undefined = undefined;
  correlationId = 0;
  recordsBytes = 0;

  constructor(server: BrokerServer) {
    this.server = server;
  }

  appended(
    firstOffset: number,
    recordCount: number,
    durability: "appended" | "forced",
    logAppendTimeMs: number,
  ): void {
    this.server.produced(this, firstOffset, recordCount, durability, logAppendTimeMs);
  }

  appendFailed(error: unknown): void {
    this.server.produceFailed(this, error);
  }
}

export class BrokerServer implements ConnectionHost {
  readonly broker: Broker;
  readonly options: ServerOptions;
  readonly counters: ServerCounters = {
    sendfileBytes: 0,
    sendfileCalls: 0,
    writtenBytes: 0,
    connectionsAccepted: 0,
    connectionsRefused: 0,
    protocolViolations: 0,
    requestTimeouts: 0,
    authenticationFailures: 0,
    requests: 0,
    errors: 0,
    produceRequests: 0,
    produceRecords: 0,
    produceBytes: 0,
    fetchRequests: 0,
    fetchRecords: 0,
    fetchBytes: 0,
    copiedFetchBytes: 0,
    copiedFetchesHeldToFreeBytes: 0,
    fetchWaits: 0,
  };
  readonly inboundBudget: InboundBudget;
  /**
   * The Kafka listener's groups, when one runs (main.ts sets it once the listener listens):
   * LIST_GROUPS counts their members, DELETE_GROUP refuses a group that has any.
   */
  kafkaGroups: KafkaGroups | undefined = undefined;
  private users: Users | undefined;
  /** SCRAM exchanges between their two steps, by connection. */
  private readonly exchanges = new WeakMap<Connection, ScramServer>();
  /** Salts the fake answers to unknown users; new at every start. */
  private readonly decoySecret = crypto.getRandomValues(new Uint8Array(32));
  /** Recent failed logins per client address (shared with the Kafka listener's SASL). */
  readonly loginDelays: LoginDelays;
  /** The plain or TLS-only listener (listen), then the TLS one beside it (listenTls). */
  private readonly listeners: ListeningPorts<Connection>;
  private readonly connections = new Set<Connection>();
  /** Refused connections lingering after their error frame (see Connection.closeAfterAnswers). */
  private readonly refused = new Set<Connection>();
  private readonly connectionsByAddress = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  private sweepEveryMs = 1000;
  private lastSweepMs = 0;
  private stopping = false;
  /** The waits of logins held for their address (StoppableSleeps), all ended by `stop`. */
  private readonly heldSleeps = new StoppableSleeps();
  private readonly writer = new ByteWriter(64 * 1024);
  /**
   * Where a copying FETCH reads its records (TLS connections, `--fetch-path copy`): reused, because
   * the records are copied into the connection's staging buffer (or a response of their own) before
   * answerFetch returns. A fresh buffer per FETCH is zero-filled, page-faulted in and unmapped
   * again: about 40 % of the broker's CPU on the Kafka listener's copy path (fetch-buffers.ts).
   */
  private readonly copyArena: ReadArena = { bytes: new Uint8Array(0), used: 0 };
  /** The sendfile path's small answers (answerFetch), read into a buffer of their bound. */
  private readonly smallAnswerCopy: CopyBelow = {
    bytes: FETCH_SENDFILE_ANSWER_BYTES_MIN,
    arena: { bytes: new Uint8Array(FETCH_SENDFILE_ANSWER_BYTES_MIN), used: 0 },
  };
  private readonly header: RequestHeader = { apiKey: 0, apiVersion: 0, correlationId: 0 };
  /** PRODUCE waiters not in use, and the acknowledgement filled for each response (no object per request). */
  private readonly freeProduceWaiters: ProduceWaiter[] = [];
  private readonly produceAck: ProduceResponse = {
    firstOffset: 0,
    recordCount: 0,
    durability: "appended",
    logAppendTimeMs: -1,
  };
  /** Each PRODUCE request decoded into this (no object per request; read before the next one). */
  private readonly produceRequest: ProduceRequestRange = {
    topic: "",
    partition: 0,
    recordsStart: 0,
    recordsEnd: 0,
  };
  private readonly adminRate: AdminRateLimiter;

  constructor(broker: Broker, options: ServerOptions) {
    this.broker = broker;
    this.options = options;
    this.adminRate = new AdminRateLimiter(
      options.maxAdminRequestsPerSecond ?? ADMIN_REQUESTS_PER_SECOND_DEFAULT,
      undefined,
      (address, message) =>
        options.auditLog?.(`booblik: audit: from ${address}: admin request refused: ${message}`),
    );
    this.inboundBudget = new InboundBudget(options.maxInboundBytes);
    this.users = options.users;
    this.preLoginFrameBytesMax = this.preLoginFrameBytesMaxOf(options.users);
    this.loginDelays = options.loginDelays ?? new LoginDelays();
    // sendfile would put clear text into the TLS stream (tls.ts): copy instead. Beside a plain
    // listener, the choice is made per connection (fetch).
    this.fetchPath = options.tls !== undefined ? "copy" : options.fetchPath;
    const server = this;
    this.listeners = new ListeningPorts<Connection>({
      allowHalfOpen: true,
      clientPrincipal: options.clientPrincipal ?? "dn",
      handlers: (port) => ({
        open(socket) {
          server.onOpen(socket, port.tls !== undefined);
        },
        data(socket, chunk) {
          socket.data?.onData(chunk);
        },
        drain(socket) {
          socket.data?.pump();
        },
        end(socket) {
          socket.data?.onEnd();
        },
        close(socket) {
          socket.data?.onClose();
        },
        error(socket) {
          socket.data?.onClose();
        },
      }),
      certificateTarget: (socket) => server.certificateTarget(socket),
    });
  }

  /** How FETCH sends records on plain connections: the option, except always "copy" in TLS-only mode. */
  readonly fetchPath: FetchPath;

  get maxFrameBytes(): number {
    return this.options.maxFrameBytes;
  }

  /** See ConnectionHost; a field, not a getter: every frame reads it (set with the users). */
  preLoginFrameBytesMax: number;

  private preLoginFrameBytesMaxOf(users: Users | undefined): number {
    return users === undefined
      ? this.options.maxFrameBytes
      : Math.min(PRE_LOGIN_FRAME_BYTES_MAX, this.options.maxFrameBytes);
  }

  /**
   * Starts listening. Throws (EADDRINUSE, EADDRNOTAVAIL, EACCES…) instead of half-starting: the
   * caller reports it and exits. `reusePort` stays off: with it a second broker would silently share
   * the port (bun-platform §2, trap 10).
   */
  listen(): { hostname: string; port: number } {
    const bound = this.bind(this.options.hostname, this.options.port, this.options.tls);
    const shortestMs = Math.min(this.options.idleTimeoutMs, this.options.requestTimeoutMs);
    const sweepEveryMs = Math.max(50, Math.min(1000, Math.floor(shortestMs / 4)));
    this.sweepEveryMs = sweepEveryMs;
    this.lastSweepMs = performance.now();
    this.sweepTimer = setInterval(() => this.sweepIdle(), sweepEveryMs);
    this.sweepTimer.unref();
    return { hostname: bound.hostname, port: bound.port };
  }

  /** Starts the TLS listener beside the plain one (options.tlsListener); after listen(). Throws like listen. */
  listenTls(): { hostname: string; port: number } {
    const secure = this.options.tlsListener;
    if (secure === undefined) throw new Error("listenTls without options.tlsListener");
    const bound = this.bind(secure.hostname, secure.port, secure.tls);
    return { hostname: bound.hostname, port: bound.port };
  }

  /**
   * New TLS files (SIGHUP) for every TLS listener: each is bound again at its address with them
   * (auth/tls-ports.ts says how, and what a client may see); open connections continue. The caller
   * checks the files (auth/tls.ts checkTlsContext) first. Returns how many listeners were rebound.
   */
  reloadTls(files: TlsFiles): number {
    // Stopped listeners stay stopped (a SIGHUP during shutdown).
    if (this.stopping) return 0;
    return this.listeners.reloadTls(files);
  }

  /** Binds one listener; TLS when `tls` is given. */
  private bind(hostname: string, port: number, tls: TlsFiles | undefined): ListeningPort<Connection> {
    return this.listeners.bind(hostname, port, tls, {});
  }

  /**
   * The connection's side of a client-certificate login (auth/tls-ports.ts): without users the
   * certificate is the principal; with users the SCRAM login decides. A refusal aborts it.
   */
  private certificateTarget(socket: Socket<Connection>): CertificateLoginTarget | undefined {
    const connection = socket.data;
    if (connection === undefined) return undefined;
    return {
      loginRequired: this.users !== undefined,
      principal: connection.principal,
      setPrincipal: (principal) => {
        connection.principal = principal;
      },
      audit: (what) => this.audit(connection, what),
      refuse: () => connection.abort(),
    };
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Admin requests refused by the rate limit (/metrics). */
  get adminRefusals(): number {
    return this.adminRate.refusals;
  }

  /** Open connections per client address, read-only (the web console lists them). */
  get connectionsPerAddress(): ReadonlyMap<string, number> {
    return this.connectionsByAddress;
  }

  private onOpen(socket: Socket<Connection>, tls: boolean): void {
    const connection = new Connection(socket, this, tls);
    socket.data = connection;
    const address = connection.remoteAddress;
    const fromAddress = this.connectionsByAddress.get(address) ?? 0;
    const refusal = this.stopping
      ? { code: WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN, message: "the broker is shutting down" }
      : this.connections.size >= this.options.maxConnections
        ? {
            code: WIRE_ERROR_CODES.TOO_MANY_CONNECTIONS,
            message: `too many connections (the limit is ${this.options.maxConnections})`,
          }
        : fromAddress >= this.options.maxConnectionsPerAddress
          ? {
              code: WIRE_ERROR_CODES.TOO_MANY_CONNECTIONS,
              message: `too many connections from ${address} (the limit is ${this.options.maxConnectionsPerAddress} per address)`,
            }
          : undefined;
    if (refusal !== undefined) {
      this.counters.connectionsRefused++;
      if (this.refused.size >= REFUSED_LINGERING_MAX) {
        // The oldest has had the longest to read its frame; Set order is arrival order.
        const oldest = this.refused.values().next().value;
        oldest?.closeGracefully();
        if (oldest !== undefined) this.refused.delete(oldest);
      }
      this.refused.add(connection);
      this.writer.reset();
      encodeErrorResponse(this.writer, 0, refusal.code, { retriable: true, message: refusal.message });
      connection.closeAfterAnswers(refusal.message, this.writer.written().slice());
      return;
    }
    this.connections.add(connection);
    this.connectionsByAddress.set(address, fromAddress + 1);
    this.counters.connectionsAccepted++;
  }

  /** Request latency by API name, from arrival to the response being handed to the socket. */
  readonly requestLatency = new Map<string, Histogram>(
    [...Object.values(API).map((key) => API_NAMES[key]!), "UNKNOWN"].map((name) => [name, new Histogram()]),
  );

  /** The same histograms by API key (an array index, not a name's map lookup, per response). */
  private readonly latencyByApiKey: Histogram[] = Object.values(API).reduce<Histogram[]>((byKey, key) => {
    byKey[key] = this.requestLatency.get(API_NAMES[key]!)!;
    return byKey;
  }, []);
  private readonly unknownApiLatency = this.requestLatency.get("UNKNOWN")!;

  responded(apiKey: number, elapsedMs: number): void {
    (this.latencyByApiKey[apiKey] ?? this.unknownApiLatency).observe(elapsedMs / 1000);
  }

  closed(connection: Connection): void {
    this.refused.delete(connection);
    if (!this.connections.delete(connection)) return;
    const address = connection.remoteAddress;
    const remaining = (this.connectionsByAddress.get(address) ?? 1) - 1;
    if (remaining > 0) this.connectionsByAddress.set(address, remaining);
    else this.connectionsByAddress.delete(address);
  }

  shuttingDownFrame(): Uint8Array {
    this.writer.reset();
    encodeErrorResponse(this.writer, 0, WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN, {
      retriable: true,
      message: "the broker is shutting down",
    });
    return this.writer.written().slice();
  }

  protocolViolation(connection: Connection, reason: string): void {
    this.counters.protocolViolations++;
    // The stream is out of sync: no later byte can be matched to a request. Every request read
    // before this point is answered first (they were executed); then this frame, then a close.
    this.writer.reset();
    encodeErrorResponse(this.writer, 0, WIRE_ERROR_CODES.INVALID_REQUEST, {
      retriable: false,
      message: reason,
    });
    connection.closeAfterAnswers(reason, this.writer.written().slice());
  }

  /**
   * Closes connections quiet for the idle timeout: nothing pending and no request arriving, or
   * responses queued of which no byte left (the client stopped reading; it would otherwise hold its
   * acquired segments and queued buffers forever). A pending request with nothing queued (a long
   * poll, a produce waiting for its force) waits on the broker, not the client, and is not swept.
   */
  private sweepIdle(): void {
    const now = performance.now();
    const timeoutMs = this.options.idleTimeoutMs;
    // A sweep this late means the event loop was blocked (a long synchronous task, the process
    // stopped): the clients' bytes may sit unread in the kernel, so this round decides no timeout,
    // and the request clocks do not count the stall.
    const brokerStalled = now - this.lastSweepMs > 2 * this.sweepEveryMs;
    this.lastSweepMs = now;
    for (const connection of [...this.connections]) {
      if (connection.lingerExpired(now)) {
        connection.closeGracefully();
        continue;
      }
      connection.checkPeerWhileWaiting();
      if (connection.closed) continue;
      // Called for every connection, idle or not, so that its progress clock stays current.
      const stalledMs = connection.outputStalledMs(now);
      if (!brokerStalled && connection.idle && now - connection.lastActivityMs > timeoutMs) {
        // Nothing owed either way: a FIN, so the client reads end-of-stream; it was a reset (a
        // doc-only client's finding, 2026-12-03), which clients log as ECONNRESET.
        connection.closeAfterAnswers(`idle for ${timeoutMs} ms (--idle-timeout)`);
        continue;
      }
      if (!brokerStalled && !connection.idle && stalledMs > timeoutMs) {
        // A client that reads nothing of its answers: what is queued cannot leave, so a reset.
        connection.abort();
        continue;
      }
      const overdue = connection.requestOverdue(now, this.options.requestTimeoutMs, brokerStalled);
      if (overdue !== undefined) {
        this.counters.requestTimeouts++;
        this.protocolViolation(connection, overdue);
      }
    }
    for (const connection of this.refused) if (connection.lingerExpired(now)) connection.closeGracefully();
  }

  // --- Dispatch ----------------------------------------------------------------------------------

  dispatch(connection: Connection, bytes: Uint8Array, start: number, end: number): void {
    this.counters.requests++;
    const header = readRequestHeader(bytes, start, this.header);
    const correlationId = header.correlationId;
    const slot = connection.openSlot(header.apiKey);
    const reader = new ByteReader(bytes, start + REQUEST_HEADER_BYTES, end, start);
    try {
      if (this.stopping) {
        // Read but not applied (held back behind earlier requests, or arriving while the broker
        // drains): answered, so the client knows to send it again elsewhere or later.
        throw new BooblikError("CLOSED", "the broker is shutting down: this request was not applied", {
          retriable: true,
        });
      }
      const maxVersion = API_VERSION_MAX[header.apiKey];
      const minVersion = API_VERSION_MIN[header.apiKey];
      if (maxVersion === undefined || minVersion === undefined) {
        throw new ProtocolError(`unknown request type ${header.apiKey}`);
      }
      if (header.apiVersion > maxVersion || header.apiVersion < minVersion) {
        const speaks =
          minVersion === maxVersion ? `version ${maxVersion}` : `versions ${minVersion} to ${maxVersion}`;
        throw new BooblikError(
          "UNSUPPORTED_VERSION",
          `${API_NAMES[header.apiKey]} version ${header.apiVersion} is not supported (this broker speaks ${speaks})`,
        );
      }
      if (
        this.users !== undefined &&
        connection.principal === undefined &&
        header.apiKey !== API.AUTHENTICATE
      ) {
        // Nothing but AUTHENTICATE before a login; the connection then ends (after this answer).
        this.fail(
          connection,
          slot,
          correlationId,
          new AuthenticationError(
            `${API_NAMES[header.apiKey]} before AUTHENTICATE: this broker requires a SCRAM login (${SCRAM_MECHANISMS.join(" or ")}) first`,
          ),
        );
        connection.closeAfterAnswers("a request before AUTHENTICATE");
        return;
      }
      if (
        header.apiKey === API.CREATE_TOPIC ||
        header.apiKey === API.DELETE_TOPIC ||
        header.apiKey === API.ALTER_TOPIC ||
        header.apiKey === API.ADD_PARTITIONS ||
        header.apiKey === API.PURGE ||
        header.apiKey === API.CREATE_ACLS ||
        header.apiKey === API.DELETE_ACLS
      ) {
        this.adminRate.take(connection.remoteAddress);
      }
      switch (header.apiKey) {
        case API.AUTHENTICATE:
          this.authenticate(connection, slot, correlationId, reader);
          return;
        case API.METADATA:
          this.metadata(connection, slot, correlationId, reader);
          return;
        case API.CREATE_TOPIC:
          this.createTopic(connection, slot, correlationId, reader);
          return;
        case API.DELETE_TOPIC:
          this.deleteTopic(connection, slot, correlationId, reader);
          return;
        case API.ALTER_TOPIC:
          this.alterTopic(connection, slot, correlationId, reader);
          return;
        case API.ADD_PARTITIONS:
          this.addPartitions(connection, slot, correlationId, reader);
          return;
        case API.PURGE:
          this.purge(connection, slot, correlationId, reader);
          return;
        case API.LIST_OFFSETS:
          this.listOffsets(connection, slot, correlationId, reader);
          return;
        case API.PRODUCE:
          this.produce(connection, slot, correlationId, reader);
          return;
        case API.FETCH: {
          const request = decodeFetchRequest(reader);
          this.authorize(connection, ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, request.topic);
          this.fetch(connection, slot, correlationId, request);
          return;
        }
        case API.STATS:
          reader.expectEnd("STATS request");
          this.authorize(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
          this.writer.reset();
          encodeStatsResponse(this.writer, correlationId, JSON.stringify(this.stats()));
          connection.complete(slot, this.writer.written().slice());
          return;
        // --- Groups and committed offsets (group-requests.ts) ---
        case API.LIST_GROUPS:
        case API.OFFSET_COMMIT:
        case API.OFFSET_FETCH:
        case API.INIT_PRODUCER_ID:
        case API.DELETE_GROUP:
          this.dispatchGroupRequest(header.apiKey, connection, slot, correlationId, reader);
          return;
        // --- ACLs (acl-messages.ts; the decision is src/auth/acl.ts) ---
        case API.CREATE_ACLS:
          this.createAcls(connection, slot, correlationId, reader);
          return;
        case API.DESCRIBE_ACLS: {
          const filter = decodeDescribeAclsRequest(reader);
          const acls = this.broker.acls;
          acls.checkEnabled();
          this.authorize(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
          const found = acls.list(filter);
          this.writer.reset();
          encodeAclsResponse(this.writer, correlationId, found);
          connection.complete(slot, this.writer.written().slice());
          return;
        }
        case API.DELETE_ACLS:
          this.deleteAcls(connection, slot, correlationId, reader);
          return;
      }
    } catch (error) {
      this.fail(connection, slot, correlationId, error);
    }
  }

  /**
   * The group and producer-id requests: their handlers make closures, kept out of `dispatch` so
   * that a PRODUCE or FETCH does not pay for them (JSC gives a function whose locals a closure
   * captures a scope object on every call, closure made or not; issue 13).
   */
  private dispatchGroupRequest(
    apiKey: number,
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    switch (apiKey) {
      case API.LIST_GROUPS:
        reader.expectEnd("LIST_GROUPS request");
        this.writer.reset();
        encodeListGroupsResponse(
          this.writer,
          correlationId,
          // Kafka's ListGroups: the groups the principal may describe (all of them with DESCRIBE
          // on the cluster).
          listGroups(this.broker, this.kafkaGroups).filter(
            (listed) =>
              this.allowed(
                connection,
                ACL_OPERATION.DESCRIBE,
                RESOURCE_TYPE.CLUSTER,
                CLUSTER_RESOURCE_NAME,
              ) || this.allowed(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, listed.group),
          ),
        );
        connection.complete(slot, this.writer.written().slice());
        return;
      case API.OFFSET_COMMIT: {
        const request = decodeOffsetCommitRequest(reader);
        this.authorize(connection, ACL_OPERATION.READ, RESOURCE_TYPE.GROUP, request.group);
        for (const item of request.offsets)
          this.authorize(connection, ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, item.topic);
        this.answerEmptyWhenDone(connection, slot, correlationId, () =>
          commitOffsets(this.broker, request, (topic, where) =>
            this.checkNotReplaced(connection, where, topic),
          ),
        );
        return;
      }
      case API.OFFSET_FETCH: {
        const request = decodeOffsetFetchRequest(reader);
        this.authorize(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, request.group);
        for (const asked of request.topics)
          this.authorize(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, asked.topic);
        // Every committed offset (no topics named): those of topics the principal may describe.
        const offsets = fetchOffsets(this.broker, request).filter((fetched) =>
          this.allowed(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, fetched.topic),
        );
        this.writer.reset();
        encodeOffsetFetchResponse(this.writer, correlationId, offsets);
        connection.complete(slot, this.writer.written().slice());
        return;
      }
      case API.INIT_PRODUCER_ID:
        decodeInitProducerIdRequest(reader);
        this.authorizeIdempotentWrite(connection);
        this.broker.initProducerId().then(
          (response) => {
            this.writer.reset();
            encodeInitProducerIdResponse(this.writer, correlationId, response);
            connection.complete(slot, this.writer.written().slice());
          },
          (error) => this.fail(connection, slot, correlationId, error),
        );
        return;
      case API.DELETE_GROUP: {
        const { group } = decodeDeleteGroupRequest(reader);
        this.authorize(connection, ACL_OPERATION.DELETE, RESOURCE_TYPE.GROUP, group);
        // Audited done or refused (issue 14: admin actions, with who and from where).
        this.answerEmptyWhenDone(connection, slot, correlationId, async () => {
          try {
            await deleteGroup(this.broker, group, this.kafkaGroups);
          } catch (error) {
            this.audit(
              connection,
              `delete group ${JSON.stringify(group)} refused: ${(error as Error).message}`,
            );
            throw error;
          }
          this.audit(connection, `deleted group ${JSON.stringify(group)}`);
        });
        return;
      }
    }
  }

  /**
   * Starts `work` (whose synchronous checks throw into dispatch's catch) and answers an empty
   * payload when it resolves, or the error it rejects with.
   */
  private answerEmptyWhenDone(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    work: () => Promise<void>,
  ): void {
    work().then(
      () => {
        this.writer.reset();
        encodeEmptyResponse(this.writer, correlationId);
        connection.complete(slot, this.writer.written().slice());
      },
      (error) => this.fail(connection, slot, correlationId, error),
    );
  }

  /** Completes `slot` with the error response for `error`. */
  private fail(connection: Connection, slot: ResponseSlot, correlationId: number, error: unknown): void {
    this.counters.errors++;
    this.writer.reset();
    if (error instanceof BooblikError) {
      const outOfRange = error instanceof OffsetOutOfRangeError ? error : undefined;
      const code = wireCodeOf(error.code);
      const message = this.clientMessage(error.message);
      if (message !== error.message) this.logForOperator(error.message);
      encodeErrorResponse(this.writer, correlationId, code, {
        // docs/protocol.md's table: BROKER_SHUTTING_DOWN is retriable (another broker, or this one
        // restarted, can answer), whichever closed object raised it (broker.checkOpen's ClosedError).
        retriable: error.retriable || code === WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN,
        message,
        ...(outOfRange === undefined
          ? {}
          : { logStartOffset: outOfRange.logStartOffset, nextOffset: outOfRange.nextOffset }),
      });
    } else {
      // A bug, not an operating condition: answer, and leave a trace for the operator.
      console.error("booblik: internal error while handling a request:", error);
      encodeErrorResponse(this.writer, correlationId, WIRE_ERROR_CODES.STORAGE_ERROR, {
        retriable: false,
        message: this.clientMessage(
          `internal error: ${error instanceof Error ? error.message : String(error)}`,
        ),
      });
    }
    connection.complete(slot, this.writer.written().slice());
  }

  /**
   * `message` with the data directory's absolute path replaced by `<data-dir>`: storage errors name
   * their file by full path (IoError, CorruptRecordError), which is for the operator's log, not for
   * every client (a CREATE_TOPIC once answered `ENAMETOOLONG on /srv/…/topics/….json.tmp`).
   */
  private clientMessage(message: string): string {
    const dataDir = this.broker.dataDir;
    // A data directory of "/" would turn every slash into <data-dir>; its files are then `/<name>`.
    if (dataDir === "/") return message;
    return message.split(dataDir).join("<data-dir>");
  }

  private lastOperatorLogMs = Number.NEGATIVE_INFINITY;

  /**
   * The full message of an error that named a file, on stderr: at most one line a second, because a
   * full disk fails every PRODUCE with the same message.
   */
  private logForOperator(message: string): void {
    const nowMs = performance.now();
    if (nowMs - this.lastOperatorLogMs < 1000) return;
    this.lastOperatorLogMs = nowMs;
    console.error(`booblik: request failed: ${message}`);
  }

  private metadata(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeMetadataRequest(reader);
    // Named topics: each needs DESCRIBE (checked before existence, so a refusal says nothing of
    // whether it exists); all topics: only those the principal may describe (Kafka's Metadata).
    for (const name of request.topics)
      this.authorize(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, name);
    const descriptions =
      request.topics.length === 0
        ? this.broker
            .listTopics()
            .filter((topic) =>
              this.allowed(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic.name),
            )
        : request.topics.map((name) => this.broker.describeTopic(name));
    const topics: TopicMetadata[] = descriptions.map((topic) => ({
      name: topic.name,
      configJson: JSON.stringify(topic.config),
      timestampType: topic.config.timestampType,
      partitions: topic.partitions.map((partition) => ({
        partition: partition.partition,
        logStartOffset: partition.logStartOffset,
        nextOffset: partition.nextOffset,
      })),
    }));
    this.writer.reset();
    encodeMetadataResponse(this.writer, correlationId, {
      brokerVersion: BROKER_VERSION,
      crc32cImplementation,
      topics,
    });
    connection.complete(slot, this.writer.written().slice());
  }

  private createTopic(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeCreateTopicRequest(reader);
    // Kafka's CreateTopics: CREATE on the cluster, or on the topic (a literal or prefixed ACL).
    if (!this.allowed(connection, ACL_OPERATION.CREATE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME))
      this.authorize(connection, ACL_OPERATION.CREATE, RESOURCE_TYPE.TOPIC, request.name);
    let settings: unknown;
    try {
      settings = JSON.parse(request.configJson === "" ? "{}" : request.configJson);
    } catch (error) {
      throw new BooblikError("INVALID_ARGUMENT", `topic config is not JSON: ${(error as Error).message}`);
    }
    if (settings === null || typeof settings !== "object" || Array.isArray(settings)) {
      throw new BooblikError("INVALID_ARGUMENT", "topic config must be a JSON object");
    }
    // A batch limit no PRODUCE could reach is refused (explicit) or lowered (a default).
    const maxFrameBytes = this.options.maxFrameBytes;
    const ceiling = {
      bytes: largestProducibleBatchBytes(maxFrameBytes, request.name),
      why: `the largest record batch a PRODUCE to this topic can carry in the broker's maximum frame of ${maxFrameBytes} bytes`,
    };
    const create = () => {
      let created: ReturnType<Broker["createTopic"]>;
      try {
        created = this.broker.createTopic(request.name, settings as Record<string, never>, ceiling);
      } catch (error) {
        this.audit(
          connection,
          `create topic ${JSON.stringify(request.name)} refused: ${(error as Error).message}`,
        );
        throw error;
      }
      const { partitions, durability, writeMode, segmentBytes } = created.config;
      this.audit(
        connection,
        `created topic ${JSON.stringify(request.name)} (${partitions} partitions, ${durability}, ${writeMode}, segments of ${segmentBytes} bytes)`,
      );
      this.writer.reset();
      encodeEmptyResponse(this.writer, correlationId);
      connection.complete(slot, this.writer.written().slice());
    };
    // A delete of this name still removing its directories (a DELETE_TOPIC sent just before, maybe on
    // this very connection): requests apply in the order they arrived, so wait for it, then create.
    const deletion = this.broker.deletion(request.name);
    if (deletion === undefined) {
      create();
      return;
    }
    deletion.then(() => {
      try {
        create();
      } catch (error) {
        this.fail(connection, slot, correlationId, error);
      }
    });
  }

  private deleteTopic(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeDeleteTopicRequest(reader);
    this.authorize(connection, ACL_OPERATION.DELETE, RESOURCE_TYPE.TOPIC, request.name);
    const name = JSON.stringify(request.name);
    this.broker.deleteTopic(request.name).then(
      () => {
        this.audit(connection, `deleted topic ${name}`);
        this.writer.reset();
        encodeEmptyResponse(this.writer, correlationId);
        connection.complete(slot, this.writer.written().slice());
      },
      (error) => {
        this.audit(connection, `delete topic ${name} refused: ${(error as Error).message}`);
        this.fail(connection, slot, correlationId, error);
      },
    );
  }

  // --- Changing existing topics (ALTER_TOPIC, ADD_PARTITIONS, PURGE) ---------------------------------

  private alterTopic(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeAlterTopicRequest(reader);
    this.authorize(connection, ACL_OPERATION.ALTER_CONFIGS, RESOURCE_TYPE.TOPIC, request.name);
    const name = JSON.stringify(request.name);
    let changes: unknown;
    try {
      changes = JSON.parse(request.changesJson === "" ? "{}" : request.changesJson);
    } catch (error) {
      throw new BooblikError("INVALID_ARGUMENT", `topic changes are not JSON: ${(error as Error).message}`);
    }
    if (changes === null || typeof changes !== "object" || Array.isArray(changes)) {
      throw new BooblikError("INVALID_ARGUMENT", "topic changes must be a JSON object");
    }
    const maxFrameBytes = this.options.maxFrameBytes;
    const ceiling = {
      bytes: largestProducibleBatchBytes(maxFrameBytes, request.name),
      why: `the largest record batch a PRODUCE to this topic can carry in the broker's maximum frame of ${maxFrameBytes} bytes`,
    };
    const what = JSON.stringify(changes);
    this.broker.alterTopic(request.name, changes as Record<string, never>, ceiling).then(
      (altered) => {
        this.audit(connection, `altered topic ${name}: ${what}`);
        this.writer.reset();
        encodeAlterTopicResponse(this.writer, correlationId, JSON.stringify(altered.config));
        connection.complete(slot, this.writer.written().slice());
      },
      (error) => {
        this.audit(connection, `alter topic ${name} refused: ${(error as Error).message}`);
        this.fail(connection, slot, correlationId, error);
      },
    );
  }

  private addPartitions(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeAddPartitionsRequest(reader);
    this.authorize(connection, ACL_OPERATION.ALTER, RESOURCE_TYPE.TOPIC, request.name);
    const name = JSON.stringify(request.name);
    try {
      const before = this.broker.describeTopic(request.name).config.partitions;
      this.broker.addPartitions(request.name, request.partitions);
      this.audit(connection, `added partitions to topic ${name}: ${before} → ${request.partitions}`);
    } catch (error) {
      this.audit(connection, `add partitions to topic ${name} refused: ${(error as Error).message}`);
      throw error;
    }
    this.writer.reset();
    encodeEmptyResponse(this.writer, correlationId);
    connection.complete(slot, this.writer.written().slice());
  }

  /**
   * PURGE: every named partition is checked first (exists, not internal, the point within the
   * visible end), so a refusal moves nothing; then each is purged in order (Broker.purge: durable
   * before the answer). A storage failure midway leaves the partitions before it purged.
   */
  private purge(connection: Connection, slot: ResponseSlot, correlationId: number, reader: ByteReader): void {
    const request = decodePurgeRequest(reader);
    this.authorize(connection, ACL_OPERATION.DELETE, RESOURCE_TYPE.TOPIC, request.name);
    const name = JSON.stringify(request.name);
    const what = request.partitions
      .map((entry) => `${entry.partition} before ${entry.beforeOffset}`)
      .join(", ");
    try {
      for (const entry of request.partitions)
        this.broker.partition(request.name, entry.partition).checkPurgeable(entry.beforeOffset);
    } catch (error) {
      this.audit(connection, `purge topic ${name} partitions ${what} refused: ${(error as Error).message}`);
      throw error;
    }
    const purgeAll = async (): Promise<PurgedPartition[]> => {
      const purged: PurgedPartition[] = [];
      for (const entry of request.partitions) {
        const result = await this.broker.purge(request.name, entry.partition, entry.beforeOffset);
        purged.push({ partition: entry.partition, logStartOffset: result.logStartOffset });
      }
      return purged;
    };
    purgeAll().then(
      (purged) => {
        const starts = purged.map((entry) => `${entry.partition} from ${entry.logStartOffset}`).join(", ");
        this.audit(connection, `purged topic ${name}: partitions ${what}; they now start: ${starts}`);
        this.writer.reset();
        encodePurgeResponse(this.writer, correlationId, purged);
        connection.complete(slot, this.writer.written().slice());
      },
      (error) => {
        this.audit(connection, `purge topic ${name} partitions ${what} refused: ${(error as Error).message}`);
        this.fail(connection, slot, correlationId, error);
      },
    );
  }

  // --- Authorization (src/auth/acl.ts, src/broker/acl-store.ts) -------------------------------------

  /** The connection's principal: `User:<name>` after a login, `User:ANONYMOUS` without one. */
  private principalOf(connection: Connection): string {
    return connection.principal === undefined ? ANONYMOUS_PRINCIPAL : `User:${connection.principal}`;
  }

  private allowed(connection: Connection, operation: number, type: AclResourceType, name: string): boolean {
    const acls = this.broker.acls;
    return (
      !acls.enforcing ||
      acls.allowed(this.principalOf(connection), connection.remoteAddress, operation, { type, name })
    );
  }

  /** Throws TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED unless allowed; audits and counts it. */
  private authorize(connection: Connection, operation: number, type: AclResourceType, name: string): void {
    if (this.allowed(connection, operation, type, name)) return;
    const error = this.broker.acls.denied(
      "native",
      this.principalOf(connection),
      connection.remoteAddress,
      operation,
      { type, name },
    );
    this.audit(connection, `denied: ${error.message}`);
    throw error;
  }

  /** INIT_PRODUCER_ID: IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka ≥ 2.8). */
  private authorizeIdempotentWrite(connection: Connection): void {
    const acls = this.broker.acls;
    if (
      !acls.enforcing ||
      acls.allowedIdempotentWrite(this.principalOf(connection), connection.remoteAddress)
    )
      return;
    this.authorize(connection, ACL_OPERATION.IDEMPOTENT_WRITE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
  }

  private createAcls(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const requested: Acl[] = decodeCreateAclsRequest(reader);
    const acls = this.broker.acls;
    acls.checkEnabled();
    this.authorize(connection, ACL_OPERATION.ALTER, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    const what = requested.map(describeAcl).join("; ");
    acls.add(requested).then(
      () => {
        this.audit(connection, `created ACLs: ${what}`);
        this.writer.reset();
        encodeEmptyResponse(this.writer, correlationId);
        connection.complete(slot, this.writer.written().slice());
      },
      (error) => {
        this.audit(connection, `create ACLs refused: ${(error as Error).message}`);
        this.fail(connection, slot, correlationId, error);
      },
    );
  }

  private deleteAcls(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const filters = decodeDeleteAclsRequest(reader);
    const acls = this.broker.acls;
    acls.checkEnabled();
    this.authorize(connection, ACL_OPERATION.ALTER, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    acls.remove(filters).then(
      (removed) => {
        const gone = removed.flat();
        this.audit(
          connection,
          `deleted ${gone.length} ACL${gone.length === 1 ? "" : "s"}${gone.length === 0 ? "" : `: ${gone.map(describeAcl).join("; ")}`}`,
        );
        this.writer.reset();
        encodeDeleteAclsResponse(this.writer, correlationId, removed);
        connection.complete(slot, this.writer.written().slice());
      },
      (error) => {
        this.audit(connection, `delete ACLs refused: ${(error as Error).message}`);
        this.fail(connection, slot, correlationId, error);
      },
    );
  }

  /** One audit line: who (the logged-in user, or anonymous) from which address did what. */
  private audit(connection: Connection, what: string): void {
    const who =
      connection.principal === undefined ? "anonymous" : `user ${JSON.stringify(connection.principal)}`;
    this.options.auditLog?.(`booblik: audit: ${who} from ${connection.remoteAddress}: ${what}`);
  }

  /** Replaces the users (SIGHUP): new logins use them; connections logged in stay as they are. */
  setUsers(users: Users | undefined): void {
    this.users = users;
    this.preLoginFrameBytesMax = this.preLoginFrameBytesMaxOf(users);
  }

  /**
   * One step of a SCRAM exchange (docs/protocol.md, AUTHENTICATE). A failure is answered after a
   * delay that doubles per failure of the client's address (AUTHENTICATION_FAILED_DELAY_*), and
   * ends the connection.
   */
  private authenticate(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeAuthenticateRequest(reader);
    // While the address is held after a failure, the step waits (loginDelays.holdMs): a copy, since
    // the frame's buffer is reused once this returns.
    if (this.loginDelays.holdMs(connection.remoteAddress) > 0) {
      const held: AuthenticateRequest = {
        mechanism: request.mechanism,
        authBytes: request.authBytes.slice(),
      };
      void this.loginDelays
        .waitTurn(
          connection.remoteAddress,
          // A client that sent its FIN counts as gone too: that is how clients close (Node's
          // destroy, Java's and Go's close), and one that only half-closed can send nothing after
          // the login, so checking it would serve nobody. Checked anyway, its failure held the
          // address again for nobody: a right login waited behind up to 16 of them (the login
          // fuzzer, test/auth/fuzz-login.ts; test/auth/login-hold.test.ts).
          () => connection.closed || connection.clientFinished || this.stopping,
          (ms) => this.heldSleeps.sleep(ms),
        )
        .then((turn) => this.takeHeldTurn(connection, slot, correlationId, held, turn));
      return;
    }
    this.authenticateStep(connection, slot, correlationId, request);
  }

  /**
   * The step of a login that waited for its address's hold (LoginDelays.waitTurn): taken now, or
   * refused retriably when all the address's places were taken, or, when it is gone, nothing
   * checked (an open connection of a stopping server hears the shutdown).
   */
  private takeHeldTurn(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    request: AuthenticateRequest,
    turn: "go" | "busy" | "gone",
  ): void {
    if (turn === "go") {
      try {
        this.authenticateStep(connection, slot, correlationId, request);
      } catch (error) {
        this.fail(connection, slot, correlationId, error);
      }
      return;
    }
    if (connection.closed) return;
    if (turn === "gone" && !this.stopping) {
      // Its client sent its FIN while it waited (see authenticate): answered, as a half-closed
      // connection's requests are, but not checked, not counted as a failure, not delayed.
      this.fail(
        connection,
        slot,
        correlationId,
        new AuthenticationError(
          "the client closed its side of the connection while this login waited: not checked",
        ),
      );
      connection.closeAfterAnswers("closed while its login waited");
      return;
    }
    if (turn === "busy") {
      this.fail(
        connection,
        slot,
        correlationId,
        new BooblikError(
          "LIMIT_EXCEEDED",
          `too many logins from ${connection.remoteAddress} are waiting for the delay after its failed ones; try again later`,
          { retriable: true },
        ),
      );
      connection.closeAfterAnswers("too many logins waiting");
      return;
    }
    this.fail(
      connection,
      slot,
      correlationId,
      new BooblikError("CLOSED", "the broker is shutting down: this login was not checked", {
        retriable: true,
      }),
    );
  }

  private authenticateStep(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    request: AuthenticateRequest,
  ): void {
    let reply: string;
    try {
      const users = this.users;
      if (users === undefined) {
        throw new AuthenticationError("this broker has no users (no --users-file): connect without a user");
      }
      if (connection.principal !== undefined)
        throw new AuthenticationError("this connection is logged in already");
      const mechanism = request.mechanism as ScramMechanism;
      if (!(SCRAM_MECHANISMS as readonly string[]).includes(mechanism)) {
        throw new AuthenticationError(
          `unknown mechanism ${JSON.stringify(request.mechanism)}: this broker speaks ${SCRAM_MECHANISMS.join(", ")}`,
        );
      }
      if (request.authBytes.length > SCRAM_MESSAGE_BYTES_MAX) {
        throw new AuthenticationError(`a SCRAM message of ${request.authBytes.length} bytes is too long`);
      }
      let message: string;
      try {
        message = utf8.decode(request.authBytes);
      } catch {
        throw new AuthenticationError("a SCRAM message must be UTF-8");
      }
      let exchange = this.exchanges.get(connection);
      if (exchange === undefined) {
        exchange = new ScramServer(mechanism, (user) => users.get(user)?.get(mechanism), this.decoySecret);
        this.exchanges.set(connection, exchange);
        reply = exchange.first(message);
      } else {
        if (exchange.mechanism !== mechanism)
          throw new AuthenticationError("the mechanism changed within one exchange");
        this.exchanges.delete(connection);
        const { serverFinal, user } = exchange.final(message);
        connection.principal = user;
        this.audit(connection, `logged in (${mechanism})`);
        reply = serverFinal;
      }
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      this.exchanges.delete(connection);
      this.counters.authenticationFailures++;
      this.audit(connection, `authentication failed: ${error.message}`);
      const delayMs = this.failureDelayMs(connection.remoteAddress);
      setTimeout(() => {
        this.fail(connection, slot, correlationId, error);
        connection.closeAfterAnswers("authentication failed");
      }, delayMs);
      return;
    }
    this.writer.reset();
    encodeAuthenticateResponse(this.writer, correlationId, utf8Encoder.encode(reply));
    connection.complete(slot, this.writer.written().slice());
  }

  /** How long to wait before answering a failed login from `address`; remembers the failure. */
  private failureDelayMs(address: string): number {
    return this.loginDelays.failed(address);
  }

  private listOffsets(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeListOffsetsRequest(reader);
    this.authorize(connection, ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, request.topic);
    const partition = this.broker.partition(request.topic, request.partition);
    const timestampMs = request.timestampMs ?? -1;
    // Looked up among visible records only: a consumer must not be sent to an offset it cannot read.
    const found = timestampMs < 0 ? undefined : partition.offsetForTimestamp(timestampMs);
    this.writer.reset();
    encodeListOffsetsResponse(this.writer, correlationId, {
      logStartOffset: partition.logStartOffset,
      nextOffset: partition.visibleNextOffset,
      timestampOffset: found?.offset ?? -1,
      offsetTimestampMs: found?.timestampMs ?? -1,
    });
    connection.complete(slot, this.writer.written().slice());
  }

  private produce(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    reader: ByteReader,
  ): void {
    const request = decodeProduceRequestRange(reader, this.produceRequest);
    if (this.broker.acls.enforcing)
      this.authorize(connection, ACL_OPERATION.WRITE, RESOURCE_TYPE.TOPIC, request.topic);
    const partition = this.broker.partition(request.topic, request.partition);
    this.counters.produceRequests++;
    // The batches go to the partition as a range of the frame (no view; it makes one only for the
    // idempotent, corrected or large paths): it validates them and copies them (into its pending
    // group, or the segment writer into the segment) before this call returns, so the frame may be
    // reused afterwards; only the acknowledgement waits. The waiter comes from a free list: no
    // promise, closure or object per request (issue 13).
    const waiter = this.freeProduceWaiters.pop() ?? new ProduceWaiter(this);
    waiter.connection = connection;
    waiter.slot = slot;
    waiter.correlationId = correlationId;
    waiter.recordsBytes = request.recordsEnd - request.recordsStart;
    try {
      partition.appendQueued(reader.source, waiter, request.recordsStart, request.recordsEnd);
    } catch (error) {
      this.releaseProduceWaiter(waiter);
      throw error;
    }
  }

  /** A PRODUCE was appended under its topic's policy (ProduceWaiter, from Partition.appendQueued). */
  produced(
    waiter: ProduceWaiter,
    firstOffset: number,
    recordCount: number,
    durability: "appended" | "forced",
    logAppendTimeMs: number,
  ): void {
    const connection = waiter.connection!;
    const slot = waiter.slot!;
    const correlationId = waiter.correlationId;
    this.counters.produceRecords += recordCount;
    this.counters.produceBytes += waiter.recordsBytes;
    this.releaseProduceWaiter(waiter);
    const ack = this.produceAck;
    ack.firstOffset = firstOffset;
    ack.recordCount = recordCount;
    ack.durability = durability;
    ack.logAppendTimeMs = logAppendTimeMs;
    this.writer.reset();
    encodeProduceResponse(this.writer, correlationId, ack);
    connection.completeCopy(slot, this.writer.bytes, this.writer.position);
  }

  /** A PRODUCE was refused after validation (its group could not be written, or its force failed). */
  produceFailed(waiter: ProduceWaiter, error: unknown): void {
    const connection = waiter.connection!;
    const slot = waiter.slot!;
    const correlationId = waiter.correlationId;
    this.releaseProduceWaiter(waiter);
    this.fail(connection, slot, correlationId, error);
  }

  private releaseProduceWaiter(waiter: ProduceWaiter): void {
    waiter.connection = undefined;
    waiter.slot = undefined;
    if (this.freeProduceWaiters.length < PRODUCE_WAITERS_KEPT) this.freeProduceWaiters.push(waiter);
  }

  // --- Fetch -------------------------------------------------------------------------------------

  private fetch(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    request: FetchRequest,
  ): void {
    this.counters.fetchRequests++;
    const partition = this.broker.partition(request.topic, request.partition);
    // A consumer that fetched from a topic deleted and created again since would go on at its old
    // position in the new log and skip the new records below it silently, Kafka's clients before
    // topic ids alike (a helper's run, 2026-12-03: a group consumer read new-2000 on, never new-0 to
    // new-1999, and committed past them). Told once on this connection; the next FETCH reads the
    // new topic. A client that reconnected in between is not told: docs/protocol.md FETCH.
    const incarnation = partition.topicIncarnation;
    const fetchedBefore = connection.fetchedTopics.get(request.topic);
    if (fetchedBefore !== incarnation) {
      connection.fetchedTopics.set(request.topic, incarnation);
      if (fetchedBefore !== undefined) throw replacedTopicError("FETCH", request.topic);
    }
    const { offset } = request;
    const visible = partition.checkFetchable(offset);
    if (offset < visible || request.maxWaitMs === 0 || this.stopping) {
      this.answerFetch(connection, slot, correlationId, request, partition);
      return;
    }
    // Long poll: answer once a record at `offset` is visible, or when the wait ends, whichever is first.
    this.counters.fetchWaits++;
    const wait = new FetchWait(this, connection, slot, correlationId, request, partition);
    partition.addVisibleWaiter(wait);
    // maxWaitMs is a u32; setTimeout runs a delay above 2^31 - 1 after 1 ms, so clamp (~24.8 days).
    // The waiter rides as the timer's argument: no closure per FETCH.
    wait.timer = setTimeout(answerFetchWait, Math.min(request.maxWaitMs, 0x7fffffff), wait);
    this.waiters.add(wait);
    slot.parked = wait;
    slot.expeditable = true;
    // A waiting fetch has no effect to wait for: later requests of this connection (a PRODUCE that
    // brings what it waits for, say) apply now.
    connection.settle(slot);
  }

  /**
   * An OFFSET_COMMIT of a topic this connection fetched from before it was deleted and created
   * again is refused (the FETCH tells first): a group consumer's position in the old topic,
   * committed into the new one, would start the group past the new topic's first records. The
   * connection's record is left for its next FETCH to update.
   */
  private checkNotReplaced(connection: Connection, what: string, topic: string): void {
    const fetchedBefore = connection.fetchedTopics.get(topic);
    if (fetchedBefore === undefined) return;
    let incarnation: number;
    try {
      incarnation = this.broker.partition(topic, 0).topicIncarnation;
    } catch {
      return; // an unknown topic: commitOffsets says so
    }
    if (fetchedBefore !== incarnation) throw replacedTopicError(what, topic);
  }

  /** A waiting FETCH is answered (data, the end of its wait, shutdown) or its connection closed. */
  fetchWaitEnded(wait: FetchWait): void {
    this.waiters.delete(wait);
  }

  /** Answers a waiting FETCH now; a failure becomes its error response. */
  answerWaitingFetch(wait: FetchWait): void {
    const { connection, slot, correlationId } = wait;
    if (connection.closed) return;
    try {
      this.answerFetch(connection, slot, correlationId, wait.request, wait.partition);
    } catch (error) {
      this.fail(connection, slot, correlationId, error);
    }
  }

  private answerFetch(
    connection: Connection,
    slot: ResponseSlot,
    correlationId: number,
    request: FetchRequest,
    partition: Partition,
  ): void {
    const maxBytes = Math.max(1, Math.min(request.maxBytes, this.options.maxFetchBytes));
    const { offset } = request;
    if (partition.isClosed) throw this.closedLogError(partition);
    const visible = partition.checkFetchable(offset);
    const logStartOffset = partition.logStartOffset;
    this.writer.reset();
    if (offset === visible) {
      encodeFetchResponseHeader(this.writer, correlationId, {
        logStartOffset,
        nextOffset: visible,
        recordsBytes: 0,
      });
      connection.complete(slot, this.writer.written().slice());
      return;
    }
    // Per connection: sendfile would bypass a TLS connection's encryption (auth/tls.ts).
    if (this.fetchPath === "copy" || connection.tls) {
      // A copied answer is held until its connection takes it. All connections' held answers stay
      // within --max-inbound-memory: this one reads at most the room left. Beyond it, a connection
      // that holds no unread answer still gets FETCH_ANSWER_FREE_BYTES (a consumer that reads is
      // never starved by others that do not), and one that does gets no entry, not even its first:
      // the allowance per pipelined FETCH let 200 connections hold 4 GiB (a helper's run,
      // 2026-12-03), and 30 connections held 2.2 GiB before any bound.
      const roomBytes = this.inboundBudget.limitBytes - this.heldResponseBytes();
      const allowedBytes =
        roomBytes >= FETCH_ANSWER_FREE_BYTES
          ? roomBytes
          : connection.queuedBytes === 0
            ? FETCH_ANSWER_FREE_BYTES
            : 0;
      if (roomBytes < FETCH_ANSWER_FREE_BYTES) this.counters.copiedFetchesHeldToFreeBytes++;
      const copyBytes = Math.min(maxBytes, allowedBytes);
      const arena = this.copyArena;
      if (arena.bytes.length < copyBytes && copyBytes <= COPY_FETCH_ARENA_BYTES_MAX)
        arena.bytes = new Uint8Array(copyBytes);
      arena.used = 0;
      // In the arena when it fits (a first entry above copyBytes, or above the arena's bound, gets
      // a buffer of its own); either way a view valid until the next copying FETCH. A first entry
      // larger than the allowance is not sent either (the reader's next FETCH, once it has read,
      // gets it).
      const read = copyBytes === 0 ? undefined : partition.read(offset, copyBytes, true, arena);
      const records = read === undefined || read.records.length > allowedBytes ? NO_RECORDS : read.records;
      encodeFetchResponseHeader(this.writer, correlationId, {
        logStartOffset,
        nextOffset: visible,
        recordsBytes: records.length,
      });
      const recordCount = records === NO_RECORDS ? 0 : read!.recordCount;
      this.counters.fetchRecords += recordCount;
      this.counters.fetchBytes += records.length;
      this.counters.copiedFetchBytes += records.length;
      connection.completeParts(slot, this.writer.written(), records);
      return;
    }
    // An answer below FETCH_SENDFILE_ANSWER_BYTES_MIN comes back read and checked: one write with
    // its header, instead of a header write and a sendfile.
    const copyBelow = this.smallAnswerCopy;
    copyBelow.arena.used = 0;
    const lease = partition.fetchLease(offset, maxBytes, copyBelow);
    if (lease === undefined) throw new OffsetOutOfRangeError(offset, logStartOffset, visible);
    encodeFetchResponseHeader(this.writer, correlationId, {
      logStartOffset,
      nextOffset: visible,
      recordsBytes: lease.lengthBytes,
    });
    this.counters.fetchRecords += lease.recordCount;
    this.counters.fetchBytes += lease.lengthBytes;
    if (lease.copied !== undefined) {
      this.counters.copiedFetchBytes += lease.lengthBytes;
      connection.completeParts(slot, this.writer.written(), lease.copied);
      return;
    }
    connection.completeWithFile(slot, this.writer.written().slice(), lease);
  }

  /**
   * Response bytes every connection holds (completed, queued or staged, not yet taken by its
   * socket). Walks the connections (at most --max-connections): only the copying FETCH asks.
   */
  private heldResponseBytes(): number {
    let bytes = 0;
    for (const connection of this.connections) bytes += connection.queuedBytes;
    return bytes;
  }

  /**
   * Why a partition's log closed under a waiting FETCH. With the broker open it was a DELETE_TOPIC:
   * the partition is gone for good, like any unknown one. Otherwise the broker is closing its
   * storage: BROKER_SHUTTING_DOWN, retriable as the error table says (this used to be one
   * non-retriable CLOSED for both).
   */
  private closedLogError(partition: Partition): BooblikError {
    if (this.stopping || this.broker.isClosed)
      return new BooblikError("CLOSED", "the broker is shutting down", { retriable: true });
    return new BooblikError(
      "UNKNOWN_TOPIC_OR_PARTITION",
      `topic ${JSON.stringify(partition.topic)} was deleted while the FETCH waited`,
    );
  }

  // --- Stats and shutdown ------------------------------------------------------------------------

  stats(): Record<string, number | string> {
    return {
      brokerVersion: BROKER_VERSION,
      fetchPath: this.fetchPath,
      ...this.counters,
      connectionsActive: this.connections.size,
      connectionsPaused: [...this.connections].filter((connection) => connection.readPaused).length,
      waitingFetches: this.waiters.size,
      inboundBudgetLimitBytes: this.inboundBudget.limitBytes,
      inboundBudgetUsedBytes: this.inboundBudget.usedBytes,
      heldResponseBytes: this.heldResponseBytes(),
      inboundBudgetPeakBytes: this.inboundBudget.peakBytes,
      inboundBudgetWaiting: this.inboundBudget.waitingCount,
      inboundBudgetWaits: this.inboundBudget.waits,
      ...memoryStats(),
    };
  }

  /**
   * Graceful stop: stop reading new requests, answer waiting fetches now, wait (at most `timeoutMs`)
   * until every pending response was sent, then close the sockets. Until then the listener stays
   * open and answers every new connection with BROKER_SHUTTING_DOWN (correlation id 0), as
   * docs/protocol.md promises; once the process exits, connections are refused by TCP.
   */
  async stop(timeoutMs = SHUTDOWN_DRAIN_MS): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    // Logins waiting for their address's hold check nothing any more; they hear the shutdown at
    // once, so their connections drain (a held one kept stop waiting for its whole deadline).
    this.heldSleeps.wakeAll();
    for (const connection of this.connections) connection.finishAndClose();
    // Long polls end now, with whatever the log holds.
    for (const waiter of [...this.waiters]) waiter.answer();
    const deadline = performance.now() + timeoutMs;
    while (this.connections.size > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const now = performance.now();
      for (const connection of [...this.connections]) connection.closeWhenDrained(now);
    }
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    this.listeners.stop(false);
    // A FIN already sent with nothing unread closes quietly; anything else (answers still queued) resets.
    for (const connection of [...this.connections, ...this.refused]) connection.closeGracefully();
    this.listeners.stop(true);
  }
}

/** The error of a FETCH or OFFSET_COMMIT of a topic replaced since the connection fetched from it. */
function replacedTopicError(what: string, topic: string): BooblikError {
  return new BooblikError(
    "UNKNOWN_TOPIC_OR_PARTITION",
    `${what}: topic ${JSON.stringify(topic)} was deleted and created again since this connection last fetched from it; positions in the old topic do not apply to the new one (fetch again to read the new topic)`,
  );
}
