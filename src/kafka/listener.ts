/**
 * The Kafka listener: `Bun.listen`, one KafkaConnection per client, connection limits, the idle and
 * request-timeout sweep, and a graceful stop. Requests are answered by KafkaHandler (handler.ts).
 *
 * Owns: the sockets of Kafka clients, their inbound buffers, and the order of their answers.
 *
 * Invariants:
 * - One request at a time per connection, answered in arrival order: a connection starts the next
 *   request only after the previous response was handed to the socket whole (Kafka mutes a
 *   connection the same way, SocketServer.scala `selector.mute`). Later requests wait as bytes in the
 *   inbound buffer; beyond KAFKA_PIPELINED_BYTES_MAX of them, reading pauses.
 * - A frame's size is checked as soon as its 4 size bytes arrive, before any of it is buffered: a
 *   size above the maximum frame or below the 8-byte header closes the connection. The buffer grows
 *   only with bytes that arrived, and growth beyond INBOUND_FREE_BYTES reserves from the broker-wide
 *   inbound budget first (shared with the native listener), pausing the socket while it does not fit.
 * - Byte views handed to the handler stay valid until it answered: the buffer holding the request
 *   being answered is neither compacted nor reused until then. Bytes that arrive meanwhile and do
 *   not fit behind the end move to a second buffer (the spare, kept from the previous time, or a
 *   fresh one), and the first becomes the spare once answered: at most two buffers per connection,
 *   and a client that keeps requests in flight allocates nothing per request (a fresh buffer per
 *   move allocated 63 MiB per 32 MiB of Java-producer records and was most of the peak RSS:
 *   docs/benchmarks.md "Peak memory of the Kafka listener"). A spare above
 *   KAFKA_SPARE_BUFFER_BYTES_MAX is not kept, and a connection idle for KAFKA_BUFFER_TRIM_IDLE_MS
 *   goes back to one buffer of INBOUND_INITIAL_BYTES.
 * - Every close but an ordinary one (shutdown, the client hanging up) says why in the log: Kafka has
 *   no error frame for a dropped connection.
 * - A response's pooled buffer and the leases of its segment-file ranges (`--kafka-fetch-path
 *   sendfile`) are given back exactly once: when its last byte was sent, or when the connection
 *   closes first (an answer that arrives after the close included). A held lease keeps a purged or
 *   retained segment's descriptor open. File ranges never go to a TLS connection.
 */
import type { Socket } from "bun";
import { FILE_SEND_FAILED, type FileSendCounters, sendFileStep } from "../../ffi/file-send.ts";
import { clientHost } from "../auth/acl.ts";
import { StoppableSleeps } from "../auth/login-delays.ts";
import type { ClientPrincipalRule, TlsFiles } from "../auth/tls.ts";
import { type CertificateLoginTarget, ListeningPorts } from "../auth/tls-ports.ts";
import type { Broker } from "../broker/broker.ts";
import type { CoordinatorOptions } from "../broker/groups.ts";
import { Histogram } from "../broker/metrics.ts";
import type { AppendSender, Partition } from "../broker/partition.ts";
import {
  INBOUND_FREE_BYTES,
  INBOUND_INITIAL_BYTES,
  KAFKA_BUFFER_TRIM_IDLE_MS,
  KAFKA_PIPELINED_BYTES_MAX,
  KAFKA_SHUTDOWN_DRAIN_MS,
  KAFKA_SPARE_BUFFER_BYTES_MAX,
  PRE_LOGIN_FRAME_BYTES_MAX,
  REQUEST_MIN_BYTES_PER_SECOND,
} from "../domain/limits.ts";
import { KAFKA_API, KAFKA_API_NAMES, KAFKA_ERROR_NAMES, REQUEST_HEADER_FIXED_BYTES } from "./apis.ts";
import { releaseChunk } from "./buffers.ts";
import { FetchBufferPool } from "./fetch-buffers.ts";
import { KafkaHandler, type KafkaOutcome } from "./handler.ts";
import type { FileCut } from "./messages.ts";
import type { KafkaTraffic } from "./records.ts";
import { type KafkaSasl, SaslSession } from "./sasl.ts";

/** The broker-wide budget for inbound bytes (server/inbound-budget.ts has the implementation). */
export interface InboundBudgetLike {
  /** `--max-inbound-memory`; also the limit of Fetch answers held for slow readers (fetch-buffers.ts). */
  readonly limitBytes: number;
  tryReserve(waiter: { retryBudget(): boolean }, bytes: number): boolean;
  force(bytes: number): void;
  release(bytes: number): void;
  forget(waiter: { retryBudget(): boolean }): void;
}

export interface KafkaListenerOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  /** What Metadata tells clients to connect to; default: the bound address and port. */
  advertisedHost?: string;
  advertisedPort?: number;
  maxFrameBytes: number;
  maxConnections: number;
  maxConnectionsPerAddress: number;
  idleTimeoutMs: number;
  requestTimeoutMs: number;
  inboundBudget: InboundBudgetLike;
  /** Topic creates and deletes per client address (`--max-admin-requests-per-second`). */
  adminRate?: { take(clientAddress: string): void };
  /** One line per closed connection and per refused one. */
  log?: (line: string) => void;
  /** Serve TLS only (auth/tls.ts): Kafka's SSL and SASL_SSL security protocols. */
  tls?: TlsFiles;
  /**
   * A second port that speaks TLS beside the plain one (`--kafka-tls-port`): its Metadata,
   * FindCoordinator and DescribeCluster advertise this port (default: its bound address), so a
   * client that bootstrapped over TLS stays on TLS. Both ports share one group coordinator.
   */
  tlsListener?: {
    hostname: string;
    port: number;
    tls: TlsFiles;
    advertisedHost?: string;
    advertisedPort?: number;
  };
  /**
   * How the certificate of a client on a TLS port with a CA becomes its principal when the broker
   * has no users (with users, SASL_SSL: the SASL login decides). Default dn.
   */
  clientPrincipal?: ClientPrincipalRule;
  /** Require a SASL login before anything but ApiVersions (sasl.ts): the broker has users. */
  sasl?: KafkaSasl;
  /** `--kafka-auto-create-topics on`: Metadata creates unknown topics (KafkaHandlerOptions). */
  autoCreateTopics?: { partitions: number };
  /** The group coordinator's settings (one coordinator per listener, shared with its TLS port). */
  groups?: CoordinatorOptions;
  /** Audit lines (ACL denials and changes; KafkaHandlerOptions.audit). */
  audit?: (line: string) => void;
  /**
   * `--kafka-fetch-path`: `sendfile` sends large stored batches from their files on the plain port
   * (KafkaHandlerOptions.fetchSendfile); TLS ports always copy. Default `copy`.
   */
  fetchPath?: "copy" | "sendfile";
}

const NO_FILES: readonly FileCut[] = [];

export interface KafkaListenerCounters extends FileSendCounters {
  connectionsAccepted: number;
  connectionsRefused: number;
  requests: number;
  /** Connections closed for a request booblik cannot answer (unknown API, malformed frame…). */
  closedForRequest: number;
}

function answerOf(
  connection: KafkaConnection,
  listener: KafkaListener,
  frame: Uint8Array,
): Promise<KafkaOutcome | { kind: "fail"; bytes: Uint8Array; reason: string; delayMs: number }> {
  const sasl = listener.options.sasl;
  // The principal the ACLs see (src/auth/acl.ts): the SASL user, none before (or without) a login.
  if (sasl === undefined || connection.sasl.principal !== undefined) {
    return connection.handler.handle(frame, connection.remoteAddress, connection.sasl.principal, connection);
  }
  // While the address is held after a failed login, a SaslAuthenticate waits, then asks again
  // (LoginDelays.holdMs). The frame stays valid: its buffer is kept while it is being answered.
  if (sasl.holdMs(frame, connection.remoteAddress) > 0)
    return heldAnswerOf(connection, listener, frame, sasl);
  const outcome = sasl.handle(frame, connection.sasl, connection.remoteAddress);
  if (outcome instanceof Promise) return outcome; // a PLAIN check, off the event loop
  if (outcome.kind === "pass")
    return connection.handler.handle(frame, connection.remoteAddress, connection.sasl.principal, connection);
  return Promise.resolve(outcome);
}

/**
 * A SaslAuthenticate of an address that is held: it waits (among at most
 * LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX of the address, else the connection is closed at once) until
 * the hold ends, and is then taken; a connection that closed, or a listener that stops, meanwhile
 * checks nothing.
 */
async function heldAnswerOf(
  connection: KafkaConnection,
  listener: KafkaListener,
  frame: Uint8Array,
  sasl: KafkaSasl,
): Promise<KafkaOutcome | { kind: "fail"; bytes: Uint8Array; reason: string; delayMs: number }> {
  const address = connection.remoteAddress;
  const turn = await sasl.options.loginDelays.waitTurn(
    address,
    () => connection.isClosed || listener.stopping,
    (ms) => listener.sleepUnlessStopped(ms),
  );
  if (turn === "busy")
    return {
      kind: "close",
      reason: `too many logins from ${address} are waiting for the delay after its failed ones`,
    };
  if (turn === "gone") return { kind: "close", reason: "closed while its login waited" };
  const outcome = sasl.handle(frame, connection.sasl, address);
  if (outcome instanceof Promise) return outcome;
  if (outcome.kind === "pass")
    return connection.handler.handle(frame, address, connection.sasl.principal, connection);
  return outcome;
}

class KafkaConnection implements AppendSender {
  readonly socket: Socket<KafkaConnection>;
  /** Written by partitions only (Partition's gather before a force on the loop). */
  answeredBy: Partition | undefined = undefined;
  answeredByForce = 0;
  /** Login progress (only used when the listener requires SASL). */
  readonly sasl = new SaslSession();
  readonly remoteAddress: string;
  /** The handler of the port it arrived on (what Metadata advertises differs per port). */
  readonly handler: KafkaHandler;
  private readonly listener: KafkaListener;
  /** Inbound bytes live in [start, end) of `buffer`. */
  private buffer = new Uint8Array(INBOUND_INITIAL_BYTES);
  /**
   * The buffer the request being answered is a view of; undefined exactly while no request is being
   * answered (its response not yet handed to the socket whole), so it is also the "busy" flag.
   */
  private answeredBuffer: Uint8Array<ArrayBuffer> | undefined;
  /** A buffer no view refers to, kept for the next move (see the header). */
  private spare: Uint8Array<ArrayBuffer> | undefined;
  private start = 0;
  private end = 0;
  /** Bytes reserved in the inbound budget (beyond INBOUND_FREE_BYTES). */
  private reservedBytes = 0;
  private waitingForBudget = false;
  /**
   * The response being written (undefined: none): its bytes, the segment-file ranges sent with
   * sendfile between them (`files`, each before the byte at its `at`), and how far it got.
   */
  private output: Uint8Array | undefined;
  private outputAt = 0;
  private outputFiles: readonly FileCut[] = NO_FILES;
  private fileIndex = 0;
  private filePosition = 0;
  /** Gives the output's pooled buffer and file leases back once it was sent whole or the connection closed. */
  private outputRelease: (() => void) | undefined;
  private readonly tls: boolean;
  private paused = false;
  closingReason: string | undefined;
  /** The client closed with requests still buffered: its Produce requests are being applied. */
  private draining = false;
  lastActivityMs = performance.now();
  /** When the first byte of the incomplete frame at the head arrived (undefined: none). */
  private partialSinceMs: number | undefined;
  private outputSinceMs = 0;

  constructor(socket: Socket<KafkaConnection>, listener: KafkaListener, handler: KafkaHandler, tls: boolean) {
    this.socket = socket;
    this.remoteAddress = clientHost(socket.remoteAddress);
    this.listener = listener;
    this.handler = handler;
    this.tls = tls;
    this.sasl.overTls = tls;
  }

  get isClosed(): boolean {
    return this.closingReason !== undefined;
  }

  /** Nothing is being answered, sent or received. */
  get idle(): boolean {
    return this.answeredBuffer === undefined && this.output === undefined && this.end === this.start;
  }

  get answering(): boolean {
    return this.answeredBuffer !== undefined || this.output !== undefined;
  }

  onData(chunk: Uint8Array): void {
    if (this.closingReason !== undefined) return;
    this.lastActivityMs = performance.now();
    this.append(chunk);
    // Copied whole into `buffer`; nothing keeps a view of the chunk.
    releaseChunk(chunk);
    if (!this.checkHead()) return;
    this.updateBudget();
    this.next();
  }

  private append(chunk: Uint8Array): void {
    if (this.buffer.length - this.end < chunk.length) {
      const held = this.end - this.start;
      const neededBytes = held + chunk.length;
      if (this.buffer !== this.answeredBuffer && this.buffer.length >= neededBytes) {
        // Compaction moves bytes: only where no handler holds views into them.
        this.buffer.copyWithin(0, this.start, this.end);
      } else {
        let moved = this.spare;
        if (moved !== undefined && moved.length >= neededBytes) {
          this.spare = undefined;
        } else {
          let capacity = this.buffer.length;
          while (capacity < neededBytes) capacity *= 2;
          moved = new Uint8Array(capacity);
        }
        moved.set(this.buffer.subarray(this.start, this.end));
        // The buffer left behind becomes the spare once its request is answered (answered()); one
        // that was merely too small is dropped.
        this.buffer = moved;
      }
      this.start = 0;
      this.end = held;
    }
    this.buffer.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** The size of the frame at the head, or −1 while fewer than 4 bytes are there. */
  private headSize(): number {
    if (this.end - this.start < 4) return -1;
    const b = this.buffer;
    const s = this.start;
    return ((b[s]! << 24) | (b[s + 1]! << 16) | (b[s + 2]! << 8) | b[s + 3]!) >>> 0;
  }

  /** Checks the head frame's size before its body is buffered; false when the connection closed. */
  private checkHead(): boolean {
    const size = this.headSize();
    if (size < 0) {
      this.partialSinceMs = this.end > this.start ? (this.partialSinceMs ?? performance.now()) : undefined;
      return true;
    }
    const beforeLogin = this.listener.options.sasl !== undefined && this.sasl.principal === undefined;
    const max = beforeLogin
      ? Math.min(PRE_LOGIN_FRAME_BYTES_MAX, this.listener.options.maxFrameBytes)
      : this.listener.options.maxFrameBytes;
    if (size > max || size < REQUEST_HEADER_FIXED_BYTES) {
      this.close(
        size < REQUEST_HEADER_FIXED_BYTES
          ? `request frame of ${size} bytes cannot hold the ${REQUEST_HEADER_FIXED_BYTES}-byte request header`
          : beforeLogin
            ? `request frame of ${size} bytes is larger than the ${max} bytes allowed before a SASL login`
            : `request frame of ${size} bytes is larger than the maximum frame of ${max} bytes (--max-frame-size)`,
      );
      return false;
    }
    this.partialSinceMs =
      this.end - this.start >= size + 4 ? undefined : (this.partialSinceMs ?? performance.now());
    return true;
  }

  /** Bytes the inbound buffer must be allowed to hold now: what is there, or the whole head frame. */
  private neededBytes(): number {
    const held = this.end - this.start;
    const size = this.headSize();
    return size < 0 ? held : Math.max(held, size + 4);
  }

  /**
   * Keeps the budget reservation equal to what the buffer holds or needs beyond the free allowance;
   * pauses reading when the budget cannot cover the head frame yet.
   */
  private updateBudget(): void {
    const budget = this.listener.options.inboundBudget;
    const held = this.end - this.start;
    const arrivedBeyond = Math.max(0, held - INBOUND_FREE_BYTES);
    // Bytes the kernel already delivered are counted as they are.
    if (arrivedBeyond > this.reservedBytes) {
      budget.force(arrivedBeyond - this.reservedBytes);
      this.reservedBytes = arrivedBeyond;
    }
    const need = Math.max(0, this.neededBytes() - INBOUND_FREE_BYTES);
    if (need < this.reservedBytes) {
      const excess = this.reservedBytes - need;
      this.reservedBytes = need;
      budget.release(excess);
    } else if (need > this.reservedBytes) {
      if (budget.tryReserve(this, need - this.reservedBytes)) {
        this.reservedBytes = need;
        this.waitingForBudget = false;
      } else {
        this.waitingForBudget = true;
      }
    } else {
      this.waitingForBudget = false;
    }
    this.updateReading();
  }

  retryBudget(): boolean {
    if (this.closingReason !== undefined) return true;
    const need = Math.max(0, this.neededBytes() - INBOUND_FREE_BYTES);
    if (need > this.reservedBytes) {
      if (!this.listener.options.inboundBudget.tryReserve(this, need - this.reservedBytes)) return false;
      this.reservedBytes = need;
    }
    this.waitingForBudget = false;
    // The wait was the broker's: the incomplete request's clock starts again, or a wait longer
    // than the request timeout would make it overdue before its next byte could be read.
    if (this.partialSinceMs !== undefined) this.partialSinceMs = performance.now();
    this.updateReading();
    return true;
  }

  private updateReading(): void {
    const held = this.end - this.start;
    const pause = this.waitingForBudget || (this.answering && held >= KAFKA_PIPELINED_BYTES_MAX);
    if (pause && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!pause && this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Starts the next whole request unless one is being answered. */
  private next(): void {
    if (this.answering || this.closingReason !== undefined) return;
    const size = this.headSize();
    if (size < 0 || this.end - this.start < size + 4) {
      if (this.end === this.start) {
        this.start = 0;
        this.end = 0;
      }
      this.updateReading();
      return;
    }
    const frame = this.buffer.subarray(this.start + 4, this.start + 4 + size);
    this.start += size + 4;
    this.answeredBuffer = this.buffer;
    this.listener.counters.requests++;
    // checkHead made sure the frame holds the fixed header: the API key is its first two bytes.
    const apiKey = (frame[0]! << 8) | frame[1]!;
    const latency = this.listener.latencyOf(apiKey);
    const startedMs = performance.now();
    answerOf(this, this.listener, frame).then(
      (outcome) => {
        latency.observe((performance.now() - startedMs) / 1000);
        if (outcome.kind === "fail") {
          // A failed login: answered after the address's delay, then the connection ends.
          setTimeout(() => {
            this.answered();
            if (this.closingReason !== undefined) return;
            this.send(outcome.bytes, undefined, NO_FILES);
            this.close(outcome.reason);
          }, outcome.delayMs);
          return;
        }
        this.answered();
        if (this.closingReason !== undefined) {
          if (outcome.kind === "respond") outcome.release?.();
          if (this.draining) this.drainClosed();
          return;
        }
        if (outcome.kind === "close") {
          this.listener.counters.closedForRequest++;
          this.close(outcome.reason);
          return;
        }
        if (outcome.kind === "respond") {
          if (outcome.errorCodes !== undefined) this.listener.countErrors(apiKey, outcome.errorCodes);
          this.send(outcome.bytes, outcome.release, outcome.files ?? NO_FILES);
        }
        this.afterAnswer();
      },
      (error: unknown) => {
        latency.observe((performance.now() - startedMs) / 1000);
        this.answered();
        if (this.draining) {
          this.drainClosed();
          return;
        }
        this.close(
          `internal error answering a request: ${error instanceof Error ? error.message : String(error)}`,
        );
      },
    );
  }

  /** The request being answered was answered: its buffer holds no view any more. */
  private answered(): void {
    const released = this.answeredBuffer;
    this.answeredBuffer = undefined;
    if (
      released !== undefined &&
      released !== this.buffer &&
      released.length <= KAFKA_SPARE_BUFFER_BYTES_MAX
    ) {
      if (this.spare === undefined || released.length > this.spare.length) this.spare = released;
    }
  }

  /** Gives back the buffers beyond INBOUND_INITIAL_BYTES once idle long enough (the sweep calls it). */
  trimBuffers(nowMs: number): void {
    if (!this.idle || nowMs - this.lastActivityMs < KAFKA_BUFFER_TRIM_IDLE_MS) return;
    this.spare = undefined;
    if (this.buffer.length > INBOUND_INITIAL_BYTES) {
      this.buffer = new Uint8Array(INBOUND_INITIAL_BYTES);
      this.start = 0;
      this.end = 0;
    }
  }

  private afterAnswer(): void {
    if (this.closingReason !== undefined) return;
    if (!this.checkHead()) return;
    this.updateBudget();
    if (this.listener.stopping && this.idle) {
      this.close(undefined);
      return;
    }
    this.next();
  }

  /**
   * Starts writing a response: what the socket takes now, the rest on `drain`. `release` (a pooled
   * Fetch buffer's return, its file leases) runs once the last byte was taken, or when the
   * connection closes first: the socket's write does not keep the bytes (bun-platform.md:
   * unbuffered), so after either nothing reads the buffer or the files.
   */
  private send(bytes: Uint8Array, release: (() => void) | undefined, files: readonly FileCut[]): void {
    this.output = bytes;
    this.outputAt = 0;
    this.outputFiles = files;
    this.fileIndex = 0;
    this.filePosition = 0;
    this.outputRelease = release;
    if (files.length > 0 && this.tls) {
      // A programming error, never a client's: the TLS port's handler copies.
      this.close("internal error: a sendfile range on a TLS connection would send clear text");
      return;
    }
    this.pumpOutput();
  }

  /** Writes what the socket takes of the output; true once it was all sent (and released). */
  private pumpOutput(): boolean {
    const bytes = this.output;
    if (bytes === undefined) return true;
    const counters = this.listener.counters;
    for (;;) {
      const cut = this.fileIndex < this.outputFiles.length ? this.outputFiles[this.fileIndex] : undefined;
      const bytesEnd = cut === undefined ? bytes.length : cut.at;
      if (this.outputAt < bytesEnd) {
        const written = this.socket.write(bytes, this.outputAt, bytesEnd - this.outputAt);
        if (written < 0) {
          this.close("the client closed the connection before its answer was sent");
          return false;
        }
        counters.writtenBytes += written;
        this.outputAt += written;
        if (this.outputAt < bytesEnd) {
          this.outputSinceMs = performance.now();
          return false;
        }
        continue;
      }
      if (cut === undefined) break;
      const batch = cut.batch;
      const advanced = sendFileStep(
        this.socket,
        batch.fd,
        batch.position + this.filePosition,
        batch.position + batch.lengthBytes,
        counters,
      );
      if (advanced === FILE_SEND_FAILED) {
        this.close(
          "the client closed the connection before its answer was sent, or a segment file ended early",
        );
        return false;
      }
      if (advanced === 0) {
        this.outputSinceMs = performance.now();
        return false;
      }
      this.filePosition += advanced;
      if (this.filePosition >= batch.lengthBytes) {
        this.fileIndex++;
        this.filePosition = 0;
      }
    }
    this.releaseOutput();
    return true;
  }

  /** Ends the output (sent, or the connection closing) and gives back what it held. */
  private releaseOutput(): void {
    const release = this.outputRelease;
    this.output = undefined;
    this.outputFiles = NO_FILES;
    this.outputRelease = undefined;
    release?.();
  }

  onDrain(): void {
    if (this.output === undefined || this.closingReason !== undefined) return;
    if (this.pumpOutput()) this.afterAnswer();
  }

  /** Milliseconds the pending output made no progress (0 when none is pending). */
  outputStalledMs(nowMs: number): number {
    return this.output === undefined ? 0 : nowMs - this.outputSinceMs;
  }

  /** Why the incomplete request at the head is overdue, if it is. */
  requestOverdue(nowMs: number, timeoutMs: number): string | undefined {
    if (this.partialSinceMs === undefined || this.waitingForBudget) return undefined;
    const size = this.headSize();
    const allowedMs = timeoutMs + (Math.max(size, 0) / REQUEST_MIN_BYTES_PER_SECOND) * 1000;
    const elapsedMs = nowMs - this.partialSinceMs;
    if (elapsedMs <= allowedMs) return undefined;
    return `a request did not arrive whole within ${Math.round(allowedMs)} ms (${this.end - this.start} of ${size < 0 ? "?" : size + 4} bytes)`;
  }

  /** Closes the connection; `reason` undefined for an ordinary close (shutdown, idle). */
  close(reason: string | undefined): void {
    if (this.closingReason !== undefined) return;
    this.closingReason = reason ?? "closed";
    if (reason !== undefined)
      this.listener.log(`kafka: closing the connection from ${this.remoteAddress}: ${reason}`);
    this.releaseBudget();
    this.releaseOutput();
    this.socket.end();
  }

  onClose(): void {
    if (this.closingReason === undefined) {
      this.closingReason = "closed by the client";
      // What the client sent before its close is still applied where it matters: see drainClosed.
      this.draining =
        !this.listener.stopping &&
        (this.listener.options.sasl === undefined || this.sasl.principal !== undefined);
    }
    this.releaseBudget();
    this.releaseOutput();
    this.listener.closed(this);
    if (this.draining) this.drainClosed();
  }

  /**
   * After the client closed: the Produce requests it sent before its close are still applied, in
   * order, their answers dropped; other requests are not (a Fetch would long-poll for nobody). A
   * producer with acks=0 writes its requests and may close at once (Sarama's Close after
   * SendMessages): before 2026-12-03 every request not yet started when the close arrived was lost,
   * where Kafka stores them (its Selector keeps closing channels for this case;
   * test/kafka/listener.test.ts, "a client that closes right after its requests").
   */
  private drainClosed(): void {
    if (this.answeredBuffer !== undefined) return; // continues once that answer settled
    for (;;) {
      const size = this.headSize();
      if (
        size < REQUEST_HEADER_FIXED_BYTES ||
        size > this.listener.options.maxFrameBytes ||
        this.end - this.start < size + 4
      ) {
        this.draining = false;
        return;
      }
      const frame = this.buffer.subarray(this.start + 4, this.start + 4 + size);
      this.start += size + 4;
      if (((frame[0]! << 8) | frame[1]!) !== KAFKA_API.PRODUCE) continue;
      this.answeredBuffer = this.buffer;
      answerOf(this, this.listener, frame).then(
        (outcome) => {
          this.answered();
          if (outcome.kind === "respond") outcome.release?.();
          this.drainClosed();
        },
        () => {
          this.answered();
          this.drainClosed();
        },
      );
      return;
    }
  }

  private releaseBudget(): void {
    const budget = this.listener.options.inboundBudget;
    budget.forget(this);
    if (this.reservedBytes > 0) budget.release(this.reservedBytes);
    this.reservedBytes = 0;
    this.waitingForBudget = false;
  }
}

export class KafkaListener {
  readonly options: KafkaListenerOptions;
  private readonly broker: Broker;
  handler!: KafkaHandler;
  readonly counters: KafkaListenerCounters = {
    connectionsAccepted: 0,
    connectionsRefused: 0,
    requests: 0,
    closedForRequest: 0,
    sendfileBytes: 0,
    sendfileCalls: 0,
    writtenBytes: 0,
  };
  /**
   * Time from the start of a request's answer to the answer being ready for the socket, by API name
   * (`booblik_kafka_request_duration_seconds`). A connection answers one request at a time, so a
   * pipelined request's wait behind the one before it is not counted. Created at an API's first
   * request; keys this build does not know share "UNKNOWN".
   */
  readonly requestLatency = new Map<string, Histogram>();
  private readonly latencyByApiKey: Histogram[] = [];
  /**
   * Error codes in the answers sent, by API name and Kafka's error name
   * (`booblik_kafka_response_errors_total`): one per partition, member, topic… that carries one, as
   * Kafka's own `ErrorsPerSec` counts them (AbstractResponse.errorCounts), NONE left out.
   */
  readonly responseErrors = new Map<string, Map<string, number>>();

  /** Records and bytes produced and fetched through both ports. */
  get traffic(): KafkaTraffic {
    const ports = [this.handler, this.tlsHandler].filter((handler) => handler !== undefined);
    const sum = (read: (traffic: KafkaTraffic) => number) =>
      ports.reduce((total, handler) => total + read(handler.traffic), 0);
    return {
      produceRecords: sum((t) => t.produceRecords),
      produceBytes: sum((t) => t.produceBytes),
      fetchBytes: sum((t) => t.fetchBytes),
    };
  }

  countErrors(apiKey: number, codes: readonly number[]): void {
    const api = KAFKA_API_NAMES[apiKey] ?? "UNKNOWN";
    let byError = this.responseErrors.get(api);
    if (byError === undefined) {
      byError = new Map();
      this.responseErrors.set(api, byError);
    }
    for (const code of codes) {
      const error = KAFKA_ERROR_NAMES[code] ?? `ERROR_${code}`;
      byError.set(error, (byError.get(error) ?? 0) + 1);
    }
  }

  latencyOf(apiKey: number): Histogram {
    const known = this.latencyByApiKey[apiKey];
    if (known !== undefined) return known;
    const name = KAFKA_API_NAMES[apiKey] ?? "UNKNOWN";
    let histogram = this.requestLatency.get(name);
    if (histogram === undefined) {
      histogram = new Histogram();
      this.requestLatency.set(name, histogram);
    }
    if (KAFKA_API_NAMES[apiKey] !== undefined) this.latencyByApiKey[apiKey] = histogram;
    return histogram;
  }
  /** The handler of the TLS port beside the plain one (listenTls), sharing `handler`'s groups. */
  tlsHandler: KafkaHandler | undefined;
  /** The bound ports: the plain or TLS-only one (listen), then the TLS one beside it (listenTls). */
  private readonly ports: ListeningPorts<KafkaConnection, { handler: KafkaHandler }>;
  private readonly connections = new Set<KafkaConnection>();
  private readonly byAddress = new Map<string, number>();
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  stopping = false;
  /** The held logins' waits (sleepUnlessStopped), all ended by `stop`. */
  private readonly heldSleeps = new StoppableSleeps();

  constructor(broker: Broker, options: KafkaListenerOptions) {
    this.broker = broker;
    this.options = options;
    this.fetchBuffers = new FetchBufferPool(options.inboundBudget.limitBytes);
    const listener = this;
    this.ports = new ListeningPorts<KafkaConnection, { handler: KafkaHandler }>({
      clientPrincipal: options.clientPrincipal ?? "dn",
      handlers: (port) => ({
        open(socket) {
          listener.onOpen(socket, port.handler, port.tls !== undefined);
        },
        data(socket, chunk) {
          socket.data?.onData(chunk);
        },
        drain(socket) {
          socket.data?.onDrain();
        },
        close(socket) {
          socket.data?.onClose();
        },
        error(socket) {
          socket.data?.onClose();
        },
      }),
      certificateTarget: (socket) => listener.certificateTarget(socket),
    });
  }

  log(line: string): void {
    this.options.log?.(line);
  }

  /** Resolves after `ms`, or at once when `stop` begins (held logins; StoppableSleeps). */
  sleepUnlessStopped(ms: number): Promise<void> {
    return this.heldSleeps.sleep(ms);
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Starts listening; throws (EADDRINUSE…) instead of half-starting. Returns the bound address. */
  listen(): { hostname: string; port: number; advertisedHost: string; advertisedPort: number } {
    const handler = (
      advertisedHost: string,
      advertisedPort: number,
      fetchSendfile: boolean,
      sharedGroups?: KafkaHandler["groups"],
    ) =>
      new KafkaHandler(this.broker, {
        advertisedHost,
        advertisedPort,
        ...(sharedGroups === undefined ? {} : { sharedGroups }),
        ...(this.options.groups === undefined ? {} : { groups: this.options.groups }),
        fetchBuffers: this.fetchBuffers,
        fetchSendfile,
        ...(this.options.adminRate === undefined ? {} : { adminRate: this.options.adminRate }),
        ...(this.options.autoCreateTopics === undefined
          ? {}
          : { autoCreateTopics: this.options.autoCreateTopics }),
        ...(this.options.audit === undefined ? {} : { audit: this.options.audit }),
      });
    this.makeHandler = handler;
    // The handler advertises the bound port, known only once bound: it is set before any
    // connection can arrive (open runs on a later turn of the event loop).
    const bound = this.bind(this.options.hostname, this.options.port, this.options.tls);
    const advertisedHost = this.options.advertisedHost ?? bound.hostname;
    const advertisedPort = this.options.advertisedPort ?? bound.port;
    // sendfile would bypass a TLS-only port's encryption: it copies whatever fetchPath says.
    const sendfile = this.options.tls === undefined && this.options.fetchPath === "sendfile";
    this.handler = handler(advertisedHost, advertisedPort, sendfile);
    bound.handler = this.handler;
    const shortestMs = Math.min(this.options.idleTimeoutMs, this.options.requestTimeoutMs);
    this.sweepTimer = setInterval(
      () => this.sweep(),
      Math.max(50, Math.min(1000, Math.floor(shortestMs / 4))),
    );
    this.sweepTimer.unref();
    return { hostname: bound.hostname, port: bound.port, advertisedHost, advertisedPort };
  }

  /** The Fetch buffers of both ports (plain and TLS): one pool per listener. */
  private readonly fetchBuffers: FetchBufferPool;

  /** The Fetch answers held for readers (/metrics). */
  get fetchHeld(): Pick<FetchBufferPool, "heldBytes" | "heldPeakBytes" | "roundsWithoutRoom"> {
    return this.fetchBuffers;
  }

  /** Creates a handler for one port (set by listen). */
  private makeHandler:
    | ((
        advertisedHost: string,
        advertisedPort: number,
        fetchSendfile: boolean,
        sharedGroups?: KafkaHandler["groups"],
      ) => KafkaHandler)
    | undefined;

  /** Starts the TLS port beside the plain one (options.tlsListener); after listen(). Throws like listen. */
  listenTls(): { hostname: string; port: number; advertisedHost: string; advertisedPort: number } {
    const secure = this.options.tlsListener;
    if (secure === undefined || this.makeHandler === undefined)
      throw new Error("listenTls needs tlsListener and listen() first");
    const bound = this.bind(secure.hostname, secure.port, secure.tls);
    const advertisedHost = secure.advertisedHost ?? bound.hostname;
    const advertisedPort = secure.advertisedPort ?? bound.port;
    this.tlsHandler = this.makeHandler(advertisedHost, advertisedPort, false, this.handler.groups);
    bound.handler = this.tlsHandler;
    return { hostname: bound.hostname, port: bound.port, advertisedHost, advertisedPort };
  }

  /**
   * New TLS files (SIGHUP) for every TLS port: each is bound again with them (auth/tls-ports.ts
   * says how, and what a client may see); open connections continue. Returns how many were rebound.
   */
  reloadTls(files: TlsFiles): number {
    // Stopped listeners stay stopped (a SIGHUP during shutdown).
    if (this.stopping) return 0;
    return this.ports.reloadTls(files);
  }

  /** Binds one port; `handler` is set by the caller before the first connection can open. */
  private bind(hostname: string, port: number, tls: TlsFiles | undefined) {
    return this.ports.bind(hostname, port, tls, { handler: undefined as unknown as KafkaHandler });
  }

  /**
   * The connection's side of a client-certificate login (auth/tls-ports.ts): without users
   * (Kafka's SSL, not SASL_SSL) the certificate is the principal; with users the SASL login decides.
   */
  private certificateTarget(socket: Socket<KafkaConnection>): CertificateLoginTarget | undefined {
    const connection = socket.data;
    if (connection === undefined) return undefined;
    return {
      loginRequired: this.options.sasl !== undefined,
      principal: connection.sasl.principal,
      setPrincipal: (principal) => {
        connection.sasl.principal = principal;
      },
      audit: (what) => this.audit(connection, what),
      refuse: (reason) => connection.close(reason),
    };
  }

  /** One audit line, in the form of the Kafka handler's and SASL's (`(kafka)` after the address). */
  private audit(connection: KafkaConnection, what: string): void {
    const principal = connection.sasl.principal;
    const who = principal === undefined ? "anonymous" : `user ${JSON.stringify(principal)}`;
    this.options.audit?.(`booblik: audit: ${who} from ${connection.remoteAddress} (kafka): ${what}`);
  }

  private onOpen(socket: Socket<KafkaConnection>, handler: KafkaHandler, tls: boolean): void {
    const connection = new KafkaConnection(socket, this, handler, tls);
    socket.data = connection;
    const address = connection.remoteAddress;
    const fromAddress = this.byAddress.get(address) ?? 0;
    const refusal = this.stopping
      ? "the broker is shutting down"
      : this.connections.size >= this.options.maxConnections
        ? `too many Kafka connections (the limit is ${this.options.maxConnections}, --max-connections)`
        : fromAddress >= this.options.maxConnectionsPerAddress
          ? `too many connections from ${address} (the limit is ${this.options.maxConnectionsPerAddress} per address)`
          : undefined;
    if (refusal !== undefined) {
      this.counters.connectionsRefused++;
      connection.close(`refused: ${refusal}`);
      return;
    }
    this.connections.add(connection);
    this.byAddress.set(address, fromAddress + 1);
    this.counters.connectionsAccepted++;
  }

  closed(connection: KafkaConnection): void {
    if (!this.connections.delete(connection)) return;
    const address = connection.remoteAddress;
    const remaining = (this.byAddress.get(address) ?? 1) - 1;
    if (remaining > 0) this.byAddress.set(address, remaining);
    else this.byAddress.delete(address);
  }

  private sweep(): void {
    const now = performance.now();
    for (const connection of this.connections) {
      if (connection.idle && now - connection.lastActivityMs > this.options.idleTimeoutMs) {
        connection.close(`idle for ${this.options.idleTimeoutMs} ms (--idle-timeout)`);
        continue;
      }
      if (connection.outputStalledMs(now) > this.options.idleTimeoutMs) {
        connection.close(`the client read nothing of its answer for ${this.options.idleTimeoutMs} ms`);
        continue;
      }
      const overdue = connection.requestOverdue(now, this.options.requestTimeoutMs);
      if (overdue !== undefined) connection.close(overdue);
      else connection.trimBuffers(now);
    }
  }

  /**
   * Stops accepting, lets every request being answered finish (at most KAFKA_SHUTDOWN_DRAIN_MS),
   * closes the connections. Call before the broker closes.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.heldSleeps.wakeAll();
    this.ports.stop(false);
    this.handler?.stop();
    this.tlsHandler?.stop();
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    for (const connection of this.connections) if (!connection.answering) connection.close(undefined);
    const deadline = performance.now() + KAFKA_SHUTDOWN_DRAIN_MS;
    while ([...this.connections].some((c) => c.answering && !c.isClosed) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const connection of this.connections) connection.close(undefined);
    this.ports.stop(true);
  }
}
