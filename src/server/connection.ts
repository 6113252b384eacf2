/**
 * One client connection: framing of its requests, ordering of its responses, and the output pump
 * that mixes buffered writes with zero-copy sendfile ranges.
 *
 * Owns: the inbound buffer, the queue of response slots (one per request, answered in request
 * order), the outbound queue, read pausing (backpressure), half-close handling, and the references
 * (file leases, waiting fetches) its requests hold.
 *
 * Invariants:
 * - A frame's size is checked against the maximum before any of its payload is buffered; an
 *   impossible size ends the connection (the stream can no longer be trusted to be in sync), but
 *   only after every request read before it was answered: those requests were executed, and a
 *   client that never heard of them would resend them. The error frame (correlation id 0) follows
 *   the last answer, then a half-close (FIN); input is read and discarded until the client closes
 *   or CLOSE_LINGER_MS pass, because closing with unread input makes the kernel send RST.
 * - Requests apply in arrival order (docs/protocol.md, "Order of application"): a request is
 *   dispatched only once every earlier request of the connection has settled (its effect is visible),
 *   except that a PRODUCE waits only for earlier non-PRODUCE requests. Consecutive PRODUCEs are
 *   appended at once, in order, and share group commits; a LIST_OFFSETS, FETCH or METADATA behind
 *   them waits until they are acknowledged. A long-poll FETCH settles when it starts waiting.
 *   Frames that may not apply yet stay in the inbound buffer (reading pauses once it holds more than
 *   INBOUND_FREE_BYTES).
 * - A request must arrive whole within the request timeout plus its size at
 *   REQUEST_MIN_BYTES_PER_SECOND of time charged to the client: not while the broker holds it back
 *   (ordering, the budget, a sweep that ran late because the broker stalled), but while congestion
 *   pauses reading and none of the queued output leaves (the client stopped reading).
 * - Inbound buffer capacity beyond INBOUND_FREE_BYTES is reserved from the broker-wide
 *   InboundBudget before the buffer grows for a frame; a connection whose frame does not fit stops
 *   reading until it does, and gives everything back when the frame was consumed or it closed. A
 *   connection waiting for it is not idle; the sweep polls it for the client's FIN or reset
 *   (checkPeerWhileWaiting), after which what the client sent is read without the budget.
 * - Responses leave in the order their requests arrived; a slow request (a produce waiting for a
 *   force, a long-poll fetch) holds back the responses behind it, never reorders them. A long-poll
 *   FETCH at the head whose held-back followers alone congest the connection is answered at once
 *   (relieveParkedHead), so it cannot stall reading for its whole wait.
 * - Bytes leave in queue order. Bun's `socket.write` does not buffer (a partial count means "the rest
 *   is yours"), so the remainder stays at the head of our queue; sendfile never starts while a
 *   buffer remainder is pending, and a buffer never overtakes a file range.
 * - `socket.fd` is read at every sendfile call (the number is reused after close).
 * - While more than OUTBOUND_HIGH_BYTES are queued or INFLIGHT_MAX requests are pending, the
 *   connection stops reading: a client that sends and never reads cannot grow broker memory.
 *   Reading is paused for exactly three reasons (congestion, waiting for budget, requests held back
 *   by ordering beyond the free allowance; none while closing, only congestion while draining),
 *   `updateReading` alone decides and records the reason, and only congestion has hysteresis.
 * - Shutdown (finishAndClose): nothing read is dropped. Requests applying complete; every other
 *   complete request is answered BROKER_SHUTTING_DOWN by the host, in order; a partial one ends the
 *   connection with the correlation-id-0 frame. A close after our FIN is socket.end() (no RST when
 *   nothing is unread); only a connection with output still queued at the deadline is reset.
 * - Every file lease is released exactly once: when its range was sent, or when the connection
 *   closes.
 * - A connection whose queued output made no progress for the idle timeout is closed by the sweep
 *   (outputStalledMs): a client that stops reading must not hold its segments and buffers forever.
 */
import type { Socket } from "bun";
import { FILE_SEND_FAILED, type FileSendCounters, sendFileStep, socketFd } from "../../ffi/file-send.ts";
import { peerHungUp } from "../../ffi/socket.ts";
import { clientHost } from "../auth/acl.ts";
import type { AppendSender, FileLease, Partition } from "../broker/partition.ts";
import {
  CLOSE_LINGER_MS,
  INBOUND_FREE_BYTES,
  INBOUND_INITIAL_BYTES,
  INFLIGHT_MAX,
  LINGER_QUIET_MS,
  OUTBOUND_HIGH_BYTES,
  OUTBOUND_LOW_BYTES,
  REQUEST_MIN_BYTES_PER_SECOND,
} from "../domain/limits.ts";
import { ByteWriter } from "../protocol/buffer.ts";
import {
  API,
  peekFrameSize,
  REQUEST_API_KEY_OFFSET,
  REQUEST_SIZE_MIN,
  SIZE_BYTES,
} from "../protocol/frame.ts";
import { InboundBuffer } from "../protocol/inbound-buffer.ts";
import type { BudgetWaiter, InboundBudget } from "./inbound-budget.ts";

interface BufferItem {
  kind: "buffer";
  bytes: Uint8Array;
}

interface FileItem {
  kind: "file";
  fd: number;
  position: number;
  end: number;
  lease: FileLease;
}

type OutItem = BufferItem | FileItem;

/**
 * Why reading is paused. Only "congestion" is the client's doing (it does not read its responses
 * fast enough) and only it has hysteresis; "budget" and "ordering" are the broker's.
 */
type PauseReason = "congestion" | "budget" | "ordering";

/** A response slot: filled when its request completes, sent when every earlier one was sent. */
export interface ResponseSlot {
  /** The request's API, and when it arrived: for the latency histograms (-1: the closing error frame). */
  apiKey: number;
  startMs: number;
  done: boolean;
  /** Its effect is visible to later requests (see "Requests apply in arrival order"). */
  settled: boolean;
  bytes: Uint8Array | undefined;
  file: FileLease | undefined;
  /**
   * A request waiting in its slot (a long-poll FETCH): cancelled if the connection closes before
   * the slot was sent (it releases its waiters and references), and, while `expeditable`, answered
   * early by `relieveParkedHead`. An object, not two closures: one per waiting FETCH (issue 13).
   */
  parked: ParkedRequest | undefined;
  expeditable: boolean;
}

/** See `ResponseSlot.parked`. */
export interface ParkedRequest {
  /** The connection closed before the slot was sent: release waiters and references. */
  cancel(): void;
  /**
   * For a request that waits with no effect to wait for: answers it now with what it would get at
   * the end of its wait. See `relieveParkedHead`.
   */
  expedite(): void;
}

export type ConnectionCounters = FileSendCounters;

export interface ConnectionHost {
  readonly maxFrameBytes: number;
  /**
   * The largest frame of a connection that has not logged in: PRE_LOGIN_FRAME_BYTES_MAX when the
   * broker has users, else `maxFrameBytes` (then everyone is anonymous and may send any request).
   */
  readonly preLoginFrameBytesMax: number;
  readonly counters: ConnectionCounters;
  readonly inboundBudget: InboundBudget;
  /**
   * Handles one complete request frame, `bytes[start, end)`; the bytes are valid only during the
   * call. Offsets, not a view: a `subarray` per request was 4-7 % of the broker's samples at one
   * 100 B record per request (`bun --cpu-prof`, docs/benchmarks.md, issue 13).
   */
  dispatch(connection: Connection, bytes: Uint8Array, start: number, end: number): void;
  /**
   * The connection's peer broke the protocol in a way that desynchronises the stream: the host
   * counts it and calls `closeAfterAnswers` with the error frame to send last.
   */
  protocolViolation(connection: Connection, reason: string): void;
  closed(connection: Connection): void;
  /** The error frame (correlation id 0, BROKER_SHUTTING_DOWN) that ends a connection at shutdown. */
  shuttingDownFrame(): Uint8Array;
  /** A response was handed to the socket, `elapsedMs` after its request arrived. */
  responded(apiKey: number, elapsedMs: number): void;
}

export class Connection implements BudgetWaiter, AppendSender {
  readonly socket: Socket<Connection>;
  /** Written by partitions only (Partition's gather before a force on the loop). */
  answeredBy: Partition | undefined = undefined;
  answeredByForce = 0;
  readonly host: ConnectionHost;
  /** The client's address, for the per-address connection limit. */
  readonly remoteAddress: string;
  /**
   * Who this connection is: the user it logged in as (AUTHENTICATE), or, on a TLS listener with
   * client certificates and no users, the certificate's subject (auth/tls.ts clientPrincipal);
   * undefined: anonymous.
   */
  principal: string | undefined = undefined;
  /** It arrived on a TLS listener: a sendfile range would bypass the encryption (auth/tls.ts). */
  readonly tls: boolean;
  /** When the last request bytes arrived (or reading resumed after waiting for the budget). */
  lastActivityMs = performance.now();
  /**
   * The incarnation (Partition.topicIncarnation) of each topic this connection fetched from: a FETCH
   * of a topic deleted and created again since is refused once (server.ts `fetch`). At most one
   * entry per topic of the broker.
   */
  readonly fetchedTopics = new Map<string, number>();
  /**
   * When the chunk being framed arrived: the start of each request's latency. One clock read per
   * chunk (onData), not one per request: at 8 requests per chunk a `performance.now()` per request
   * was a visible share of `openSlot` in the CPU profile (issue 13).
   */
  private chunkArrivedMs = this.lastActivityMs;
  /**
   * Allocated on first use (a refused connection, and one whose requests always arrive whole in one
   * chunk, never needs it): lingering connections must not cost 80 KiB each.
   */
  private readonly inbound = new InboundBuffer(0);
  /** Bytes of `inbound.capacity` beyond INBOUND_FREE_BYTES, reserved from the host's budget. */
  private reservedBytes = 0;
  /** Reading stopped until the budget has room for the frame being received. */
  private waitingForBudget = false;
  /**
   * The client sent its FIN (or reset) while we waited for the budget: it can send nothing more, so
   * what it sent (in the kernel's receive buffer already) is read without waiting.
   */
  private peerFinished = false;
  /** Requests dispatched whose effect is not yet visible, PRODUCEs and the rest. */
  private unsettledProduces = 0;
  private unsettledOthers = 0;
  /** The frame loop stopped at a request that may not apply yet (ordering). */
  private blocked = false;
  private inFrameLoop = false;
  /** Request bytes consumed since the connection opened: names the frame being received. */
  private consumedBytes = 0;
  /** Where (in consumedBytes) and since when the frame at the head of the buffer has been arriving. */
  private partialFrameAt = -1;
  private partialFrameSinceMs = 0;
  /** Set once the connection ends after its answers (protocol violation, request timeout). */
  private closingReason: string | undefined;
  /** The write side was shut down after the last byte; input is discarded until this deadline. */
  private lingerUntilMs = 0;
  /** When our FIN was sent (socket.end or shutdown), or 0: input after it is discarded. */
  private finSentMs = 0;
  private readonly slots: ResponseSlot[] = [];
  /** Slots answered straight into staging since the last flush, for the latency histograms. */
  private readonly stagedSlots: ResponseSlot[] = [];
  private readonly outbound: OutItem[] = [];
  private readonly staging = new ByteWriter(256); // grows with the responses; see `inbound`
  private outboundBytes = 0;
  private paused = false;
  private pauseReason: PauseReason | undefined = undefined;
  /** For the request clock: when requestOverdue last ran, and the output count it saw then. */
  private overdueCheckMs = performance.now();
  private overdueSentBytes = 0;
  private readClosed = false;
  private isClosed = false;
  /** No more requests are read (shutdown); pending ones still get their responses. */
  private draining = false;
  private flushScheduled = false;
  /** A response went straight into staging since the last flush (completeCopy): pump it. */
  private stagedSinceFlush = false;
  /** Bytes of responses completed but still waiting for an earlier slot or the scheduled flush. */
  private completedBytes = 0;
  /**
   * Response bytes handed to the socket so far. The pump only counts (no clock on the hot path); the
   * idle sweep compares it with what it saw last time to tell a slow reader from one that stopped.
   */
  private sentBytes = 0;
  private sentBytesSeen = 0;
  /** When the sweep last saw output move (or nothing queued). */
  private outputProgressMs = performance.now();

  constructor(socket: Socket<Connection>, host: ConnectionHost, tls = false) {
    this.socket = socket;
    this.host = host;
    this.tls = tls;
    this.remoteAddress = clientHost(socket.remoteAddress);
  }

  /** Response bytes held for this connection: completed but not yet queued, queued, and staged. */
  get queuedBytes(): number {
    return this.completedBytes + this.outboundBytes + this.staging.position;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Reading is paused because this connection's responses piled up. */
  get readPaused(): boolean {
    return this.paused;
  }

  /** True when nothing is pending and nothing waits to be sent. */
  get idle(): boolean {
    // Requests held back by ordering are pending too: a client that half-closed after sending them
    // must get their answers before our FIN (they used to be dropped: the flush that answered the
    // request they waited for found no slot left and ended the connection).
    // A connection waiting for the budget waits on the broker, not the client: not idle either.
    return (
      this.slots.length === 0 &&
      this.outbound.length === 0 &&
      this.staging.position === 0 &&
      !this.blocked &&
      !this.waitingForBudget
    );
  }

  /** Response bytes sit in the outbound queue or staging: possibly a response half written. */
  get hasQueuedOutput(): boolean {
    return this.outbound.length > 0 || this.staging.position > 0;
  }

  /**
   * For the idle sweep (called periodically): how long queued output has waited without a byte
   * leaving and without a request arriving, or 0 when nothing is queued or something moved since the
   * last call. Resolution is the sweep period, measured from the last call that saw progress.
   */
  outputStalledMs(nowMs: number): number {
    if (!this.hasQueuedOutput || this.sentBytes !== this.sentBytesSeen) {
      this.sentBytesSeen = this.sentBytes;
      this.outputProgressMs = nowMs;
      return 0;
    }
    return nowMs - Math.max(this.outputProgressMs, this.lastActivityMs);
  }

  // --- Inbound -----------------------------------------------------------------------------------

  onData(chunk: Uint8Array): void {
    if (this.isClosed) return;
    const nowMs = performance.now();
    this.lastActivityMs = nowMs;
    this.chunkArrivedMs = nowMs;
    // Discarded: the stream is over (see the header), or our FIN was sent at shutdown.
    if (this.closingReason !== undefined || this.finSentMs !== 0) return;
    const inbound = this.inbound;
    if (inbound.length === 0 && !this.blocked) {
      // Nothing buffered: frame straight out of the chunk (Bun hands us a fresh buffer each time) and
      // keep only its incomplete tail.
      const consumed = this.frameLoop(chunk, 0, chunk.length);
      if (this.closingReason === undefined && consumed < chunk.length) {
        if (inbound.capacity === 0) inbound.ensureCapacity(INBOUND_INITIAL_BYTES);
        inbound.append(chunk.subarray(consumed));
      }
    } else {
      if (inbound.capacity === 0) inbound.ensureCapacity(INBOUND_INITIAL_BYTES);
      inbound.append(chunk);
      this.consumeInbound();
    }
    this.afterFraming();
  }

  /**
   * Dispatches every complete frame in bytes[start, end) that may apply now; returns where the first
   * one not dispatched starts (or `end` when the stream ended in a protocol violation).
   */
  private frameLoop(bytes: Uint8Array, start: number, end: number): number {
    let at = start;
    this.inFrameLoop = true;
    this.blocked = false;
    // Stop dispatching (the rest stays buffered, and reading pauses) as soon as this connection's
    // responses pile up: a burst of 4,000 fetches in one chunk once queued 3.4 GB before this check.
    // While draining (shutdown) frames are still read: the host answers each BROKER_SHUTTING_DOWN
    // without applying it, so no request the client sent goes unanswered.
    while (!this.isClosed && this.closingReason === undefined && !this.congested) {
      const size = peekFrameSize(bytes, at, end);
      if (size < 0) break;
      // Check the size before waiting for (or buffering) the payload: a garbage length must not make
      // us hold gigabytes, and a short one cannot even carry a header.
      const max = this.principal === undefined ? this.host.preLoginFrameBytesMax : this.host.maxFrameBytes;
      if (size < REQUEST_SIZE_MIN || size > max) {
        this.inFrameLoop = false;
        this.host.protocolViolation(
          this,
          size < REQUEST_SIZE_MIN
            ? `frame size ${size} is smaller than a request header (${REQUEST_SIZE_MIN})`
            : max < this.host.maxFrameBytes
              ? `frame size ${size} exceeds the ${max} bytes allowed before a login`
              : `frame size ${size} exceeds the maximum of ${max} bytes`,
        );
        return end;
      }
      const frameEnd = at + SIZE_BYTES + size;
      if (frameEnd > end) break;
      // size >= REQUEST_SIZE_MIN, so the header is complete.
      const apiKey = (bytes[at + REQUEST_API_KEY_OFFSET]! << 8) | bytes[at + REQUEST_API_KEY_OFFSET + 1]!;
      if (
        !this.draining &&
        (apiKey === API.PRODUCE
          ? this.unsettledOthers > 0
          : this.unsettledOthers + this.unsettledProduces > 0)
      ) {
        this.blocked = true;
        break;
      }
      this.host.dispatch(this, bytes, at, frameEnd);
      at = frameEnd;
    }
    this.inFrameLoop = false;
    this.consumedBytes += at - start;
    return at;
  }

  /**
   * Frames what the inbound buffer holds. A protocol violation inside the loop clears the buffer
   * (closeAfterAnswers), so the position the loop returns no longer belongs to it: leave it alone.
   */
  private consumeInbound(): void {
    const inbound = this.inbound;
    const at = this.frameLoop(inbound.bytes, inbound.start, inbound.end);
    if (this.closingReason === undefined) inbound.consumeTo(at);
  }

  /**
   * After framing: note when the frame at the head started arriving, reserve budget for it (or wait
   * for it), give back what a consumed large frame held, and decide whether to keep reading.
   */
  private afterFraming(): void {
    if (this.isClosed || this.closingReason !== undefined) return;
    const inbound = this.inbound;
    if (inbound.length === 0) {
      this.partialFrameAt = -1;
      // The common case (every request of the chunk dispatched): nothing held, nothing to decide.
      if (this.reservedBytes === 0 && !this.paused && !this.waitingForBudget && !this.congested) return;
    } else if (this.partialFrameAt !== this.consumedBytes) {
      this.partialFrameAt = this.consumedBytes;
      this.partialFrameSinceMs = performance.now();
    }
    this.admitInbound();
    this.updateReading();
    if (this.draining) this.closeIfFinished();
  }

  /** Sizes the inbound buffer for the frame at its head, within the budget. */
  private admitInbound(): void {
    const inbound = this.inbound;
    let neededBytes = inbound.length;
    if (!this.blocked && !this.congested) {
      // Everything before the head was dispatched: the head is the frame being received.
      const size = peekFrameSize(inbound.bytes, inbound.start, inbound.end);
      if (size >= 0) neededBytes = SIZE_BYTES + size;
    }
    if (this.draining && neededBytes > INBOUND_FREE_BYTES) {
      // A large request still arriving at shutdown would never be applied: end the connection now
      // (after the answers) rather than buffer it.
      this.closeAfterAnswers("the broker is shutting down", this.host.shuttingDownFrame());
      return;
    }
    if (neededBytes <= INBOUND_FREE_BYTES) {
      if (inbound.capacity > INBOUND_FREE_BYTES)
        inbound.shrinkTo(
          inbound.length <= INBOUND_INITIAL_BYTES ? INBOUND_INITIAL_BYTES : INBOUND_FREE_BYTES,
        );
      this.forgetBudgetWait();
    } else if (neededBytes > inbound.capacity) {
      const wantedBytes = neededBytes - INBOUND_FREE_BYTES;
      if (this.peerFinished) {
        // Counted by syncReservation below, whether it fits or not (see peerFinished).
        inbound.ensureCapacity(neededBytes);
        this.forgetBudgetWait();
      } else if (this.host.inboundBudget.tryReserve(this, wantedBytes - this.reservedBytes)) {
        this.reservedBytes = wantedBytes;
        inbound.ensureCapacity(neededBytes);
        this.waitingForBudget = false;
      } else {
        this.waitingForBudget = true;
      }
    }
    this.syncReservation();
  }

  /** Makes the reservation match the buffer's real capacity (shrinks, chunks that arrived anyway). */
  private syncReservation(): void {
    const budget = this.host.inboundBudget;
    const heldBytes = Math.max(0, this.inbound.capacity - INBOUND_FREE_BYTES);
    if (heldBytes > this.reservedBytes) budget.force(heldBytes - this.reservedBytes);
    else if (heldBytes < this.reservedBytes) {
      const released = this.reservedBytes - heldBytes;
      this.reservedBytes = heldBytes;
      budget.release(released);
      return;
    }
    this.reservedBytes = heldBytes;
  }

  private forgetBudgetWait(): void {
    if (!this.waitingForBudget) return;
    this.waitingForBudget = false;
    this.host.inboundBudget.forget(this);
  }

  /** The budget has room again: try once more, and resume reading on a later tick if it fits. */
  retryBudget(): boolean {
    if (this.isClosed || !this.waitingForBudget) {
      this.host.inboundBudget.forget(this);
      return true;
    }
    const inbound = this.inbound;
    const size = peekFrameSize(inbound.bytes, inbound.start, inbound.end);
    const neededBytes = size < 0 ? inbound.length : SIZE_BYTES + size;
    const wantedBytes = neededBytes - INBOUND_FREE_BYTES;
    if (!this.host.inboundBudget.tryReserve(this, Math.max(0, wantedBytes - this.reservedBytes)))
      return false;
    this.reservedBytes = Math.max(this.reservedBytes, wantedBytes);
    inbound.ensureCapacity(neededBytes);
    this.waitingForBudget = false;
    // The wait was the broker's, not the client's: its idle clock starts again now. Otherwise a
    // sweep between this and the first bytes read after resuming saw a connection "idle" since
    // before the wait and closed it: always when the sweep itself freed the budget (closing an
    // overdue holder), by chance under load otherwise (test/server/connection-review.test.ts,
    // "waiting for the inbound budget").
    this.lastActivityMs = performance.now();
    // Not from inside the budget's release loop: resume on the next microtask.
    queueMicrotask(() => this.updateReading());
    return true;
  }

  /** Dispatches buffered frames that may apply now (an earlier request settled, or reading resumed). */
  private processInbound(): void {
    if (this.inFrameLoop || this.isClosed || this.closingReason !== undefined || this.finSentMs !== 0) return;
    if (this.inbound.length > 0) this.consumeInbound();
    else this.blocked = false;
    this.afterFraming();
  }

  /**
   * For the sweep: the reason to end the connection when the frame being received is overdue
   * (it has taken longer than `requestTimeoutMs` plus its size at REQUEST_MIN_BYTES_PER_SECOND of
   * time charged to the client), or undefined. Not charged: time the broker held the frame back
   * (ordering, the budget), time congestion paused reading while the client was reading its
   * responses (or they were not yet queued for it), and a round in which the broker itself stalled
   * (`brokerStalled`: the sweep ran late, so the client's bytes may sit unread in the kernel).
   * Charged: congestion while the queued output did not move, a client that stopped reading; it
   * would otherwise keep its budget reservation until the idle timeout.
   */
  requestOverdue(nowMs: number, requestTimeoutMs: number, brokerStalled = false): string | undefined {
    const sinceCheckMs = nowMs - this.overdueCheckMs;
    this.overdueCheckMs = nowMs;
    const outputMoved = this.sentBytes !== this.overdueSentBytes;
    this.overdueSentBytes = this.sentBytes;
    if (this.partialFrameAt < 0 || this.closingReason !== undefined) return;
    const clientsDoing =
      !this.blocked &&
      (this.pauseReason === undefined ||
        (this.pauseReason === "congestion" && !outputMoved && this.hasQueuedOutput));
    if (brokerStalled || !clientsDoing) {
      this.partialFrameSinceMs = Math.min(nowMs, this.partialFrameSinceMs + sinceCheckMs);
      return;
    }
    const inbound = this.inbound;
    const size = peekFrameSize(inbound.bytes, inbound.start, inbound.end);
    const allowedMs = requestTimeoutMs + (size > 0 ? (size / REQUEST_MIN_BYTES_PER_SECOND) * 1000 : 0);
    const elapsedMs = nowMs - this.partialFrameSinceMs;
    if (elapsedMs <= allowedMs) return;
    return `the request was not received whole within ${Math.round(allowedMs)} ms (${inbound.length} of ${
      size < 0 ? "?" : SIZE_BYTES + size
    } bytes arrived)`;
  }

  /**
   * For the sweep, on a connection waiting for the budget (its reading is paused, so Bun would not
   * see the client leave): once the client sent its FIN or reset, stop waiting and read what it
   * sent. Nothing more can come, and the bytes are in the kernel already; a reset ends the
   * connection through Bun's error or close event, which gives back its slot and its place in line.
   * Limit: a FIN travels behind the client's data, so one whose data did not fit our receive
   * window (about 64 KiB beyond what we read) only arrives once the budget lets us read; a reset
   * (a client process that exits or closes with unread input) is seen at once.
   */
  checkPeerWhileWaiting(): void {
    if (!this.waitingForBudget || this.isClosed) return;
    if (!peerHungUp(socketFd(this.socket))) return;
    this.peerFinished = true;
    this.forgetBudgetWait();
    this.admitInbound();
    this.updateReading();
  }

  /**
   * The client sent its FIN: it sends nothing more (it may still read its answers: a half-close,
   * or it closed altogether; the broker cannot tell which).
   */
  get clientFinished(): boolean {
    return this.readClosed;
  }

  /** The client half-closed its side: answer what it asked, then close ours. */
  onEnd(): void {
    this.readClosed = true;
    this.closeIfFinished();
  }

  // --- Responses ---------------------------------------------------------------------------------

  /** Reserves the next response position; the request's handler fills it now or later. */
  openSlot(apiKey: number): ResponseSlot {
    const slot: ResponseSlot = {
      apiKey,
      // A request dispatched later (held back behind an earlier one) gets the last chunk's arrival,
      // which is still no later than its dispatch.
      startMs: this.chunkArrivedMs,
      done: false,
      settled: false,
      bytes: undefined,
      file: undefined,
      parked: undefined,
      expeditable: false,
    };
    if (apiKey === API.PRODUCE) this.unsettledProduces++;
    else this.unsettledOthers++;
    this.slots.push(slot);
    return slot;
  }

  /**
   * The request's effect is visible to later requests of this connection; requests held back for it
   * may now be dispatched. Completing a slot settles it; a long-poll FETCH settles when it starts
   * waiting (it has no effect, and what it waits for may come from a later request).
   */
  settle(slot: ResponseSlot): void {
    if (slot.settled) return;
    slot.settled = true;
    if (slot.apiKey === API.PRODUCE) this.unsettledProduces--;
    else this.unsettledOthers--;
    if (this.blocked) this.scheduleFlush();
  }

  /** Completes a slot with a buffered response. */
  complete(slot: ResponseSlot, bytes: Uint8Array): void {
    if (this.isClosed || slot.done) return;
    slot.bytes = bytes;
    slot.done = true;
    slot.parked = undefined;
    slot.expeditable = false;
    this.completedBytes += bytes.length;
    this.settle(slot);
    this.scheduleFlush();
  }

  /**
   * Completes a slot with the first `lengthBytes` of `bytes`, which are valid only during the call
   * (the server's shared encoder). A slot at the head of the queue goes straight into staging, behind every response
   * already staged, so the common PRODUCE answer costs no array of its own; any other is copied and
   * waits for the slots before it. Either way it leaves in request order with the next flush.
   */
  completeCopy(slot: ResponseSlot, bytes: Uint8Array, lengthBytes: number): void {
    if (this.isClosed || slot.done) return;
    if (this.slots[0] !== slot) {
      this.complete(slot, bytes.slice(0, lengthBytes));
      return;
    }
    const at = this.beginStagedAnswer(slot, lengthBytes);
    const target = this.staging.bytes;
    // A byte loop: an answer is a few dozen bytes, less than what a view for `set` costs.
    for (let i = 0; i < lengthBytes; i++) target[at + i] = bytes[i]!;
    this.endStagedAnswer(slot, at + lengthBytes);
  }

  /**
   * Completes a slot with `header` followed by `body`, both valid only during the call (the
   * server's shared encoder and its copying FETCH's read buffer). At the head of the queue both go
   * straight into staging; otherwise they are copied into one response that waits for the slots
   * before it. Either way no view of them is kept.
   */
  completeParts(slot: ResponseSlot, header: Uint8Array, body: Uint8Array): void {
    if (this.isClosed || slot.done) return;
    if (this.slots[0] !== slot) {
      const response = new Uint8Array(header.length + body.length);
      response.set(header);
      response.set(body, header.length);
      this.complete(slot, response);
      return;
    }
    const at = this.beginStagedAnswer(slot, header.length + body.length);
    this.staging.bytes.set(header, at);
    this.staging.bytes.set(body, at + header.length);
    this.endStagedAnswer(slot, at + header.length + body.length);
  }

  /**
   * The head slot is answered straight into staging (completeCopy, completeParts): marks it done
   * and makes room for `lengthBytes` there; returns the position they go to.
   */
  private beginStagedAnswer(slot: ResponseSlot, lengthBytes: number): number {
    this.slots.shift();
    slot.done = true;
    slot.parked = undefined;
    slot.expeditable = false;
    // Its latency is taken when the flush hands it to the socket, with one clock read for all.
    if (slot.apiKey >= 0) this.stagedSlots.push(slot);
    this.staging.ensure(lengthBytes);
    return this.staging.position;
  }

  /** The staged answer of `slot` ends at `endPosition`; it leaves with the next flush. */
  private endStagedAnswer(slot: ResponseSlot, endPosition: number): void {
    this.staging.position = endPosition;
    this.stagedSinceFlush = true;
    this.settle(slot);
    this.scheduleFlush();
  }

  /**
   * Ends the connection after every request already read was answered: `lastFrame` (an error frame
   * with correlation id 0) follows the last answer, then the write side is shut down. Input from
   * now on is discarded; the buffer and the budget it held are given back at once.
   */
  closeAfterAnswers(reason: string, lastFrame: Uint8Array = new Uint8Array(0)): void {
    if (this.isClosed || this.closingReason !== undefined) return;
    this.closingReason = reason;
    this.inbound.clear(0);
    this.forgetBudgetWait();
    this.syncReservation();
    this.blocked = false;
    const slot = this.openSlot(-1);
    this.complete(slot, lastFrame);
    // Keep reading (and discarding) so the close is a FIN, not a reset; see the header.
    this.updateReading();
  }

  /** The connection is ending after its answers (a protocol violation or an overdue request). */
  get closing(): boolean {
    return this.closingReason !== undefined;
  }

  /**
   * Flushes completed slots once the current batch of microtasks ran, so that every response
   * completed in one turn (all the acknowledgements one force answers, all the requests of one
   * chunk) leaves in one socket write instead of one write syscall each.
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(this.runScheduledFlush);
  }

  private readonly runScheduledFlush = (): void => {
    this.flushScheduled = false;
    // Held-back requests first: once dispatched they hold slots, so the flush cannot end the
    // connection of a half-closed client before they are answered.
    if (this.blocked) this.processInbound();
    this.flushSlots();
  };

  /** Completes a slot with a header followed by a leased file range (released once sent). */
  completeWithFile(slot: ResponseSlot, header: Uint8Array, lease: FileLease): void {
    if (this.tls) {
      // A programming error, never a client's: the host copies records to TLS connections.
      lease.release();
      throw new Error(
        "a sendfile range on a TLS connection would send clear text: FETCH must copy under TLS",
      );
    }
    if (this.isClosed || slot.done) {
      lease.release();
      return;
    }
    slot.bytes = header;
    slot.file = lease;
    slot.done = true;
    slot.parked = undefined;
    slot.expeditable = false;
    this.completedBytes += header.length + lease.lengthBytes;
    this.settle(slot);
    this.scheduleFlush();
  }

  private flushSlots(): void {
    const slots = this.slots;
    // Responses staged directly (completeCopy) are sent by this flush too.
    let moved = this.stagedSinceFlush;
    this.stagedSinceFlush = false;
    if (!moved && (slots.length === 0 || !slots[0]!.done)) return;
    const nowMs = performance.now();
    const staged = this.stagedSlots;
    for (let i = 0; i < staged.length; i++)
      this.host.responded(staged[i]!.apiKey, nowMs - staged[i]!.startMs);
    staged.length = 0;
    while (slots.length > 0 && slots[0]!.done) {
      const slot = slots.shift()!;
      moved = true;
      if (slot.apiKey >= 0) this.host.responded(slot.apiKey, nowMs - slot.startMs);
      this.completedBytes -= (slot.bytes?.length ?? 0) + (slot.file?.lengthBytes ?? 0);
      if (slot.bytes !== undefined) this.enqueueBytes(slot.bytes);
      const lease = slot.file;
      if (lease !== undefined) {
        if (lease.lengthBytes > 0) this.enqueueFile(lease);
        else lease.release();
      }
    }
    if (moved) {
      this.pump();
      this.updateReading();
    }
  }

  private enqueueBytes(bytes: Uint8Array): void {
    this.staging.ensure(bytes.length);
    this.staging.bytes.set(bytes, this.staging.position);
    this.staging.position += bytes.length;
  }

  private enqueueFile(lease: FileLease): void {
    this.moveStagingToQueue();
    const end = lease.position + lease.lengthBytes;
    this.outbound.push({ kind: "file", fd: lease.fd, position: lease.position, end, lease });
    this.outboundBytes += lease.lengthBytes;
  }

  /** Staged bytes become a queue item (copied), so they keep their place before what follows. */
  private moveStagingToQueue(): void {
    if (this.staging.position === 0) return;
    const bytes = this.staging.written().slice();
    this.outbound.push({ kind: "buffer", bytes });
    this.outboundBytes += bytes.length;
    this.staging.reset();
  }

  // --- Output pump -------------------------------------------------------------------------------

  /** Writes as much as the socket takes, in order. Called after enqueueing and on `drain`. */
  pump(): void {
    if (this.isClosed) return;
    const socket = this.socket;
    const outbound = this.outbound;
    while (outbound.length > 0) {
      const item = outbound[0]!;
      if (item.kind === "buffer") {
        const written = socket.write(item.bytes);
        if (written < 0) {
          this.abort();
          return;
        }
        this.outboundBytes -= written;
        this.sentBytes += written;
        this.host.counters.writtenBytes += written;
        if (written < item.bytes.length) {
          item.bytes = item.bytes.subarray(written);
          return; // `drain` calls pump again
        }
        outbound.shift();
        continue;
      }
      // sendfile (ffi/file-send.ts reads the socket's descriptor at every step, and arms `drain`).
      const advanced = sendFileStep(socket, item.fd, item.position, item.end, this.host.counters);
      if (advanced === FILE_SEND_FAILED) {
        this.abort();
        return;
      }
      if (advanced === 0) return; // `drain` calls pump again
      item.position += advanced;
      this.outboundBytes -= advanced;
      this.sentBytes += advanced;
      if (item.position >= item.end) {
        outbound.shift();
        item.lease.release();
      }
    }
    // The queue is empty: write the staged bytes straight from the staging buffer.
    const stagedBytes = this.staging.position;
    if (stagedBytes > 0) {
      // A range of the staging buffer, not a view of it: no object per flush (issue 13).
      const written = socket.write(this.staging.bytes, 0, stagedBytes);
      if (written < 0) {
        this.abort();
        return;
      }
      this.sentBytes += written;
      this.host.counters.writtenBytes += written;
      if (written < stagedBytes) {
        const rest = this.staging.bytes.slice(written, stagedBytes);
        this.outbound.push({ kind: "buffer", bytes: rest });
        this.outboundBytes += rest.length;
      }
      this.staging.reset();
    }
    this.updateReading();
    this.closeIfFinished();
  }

  // --- Flow control and lifetime -------------------------------------------------------------------

  private get congested(): boolean {
    return this.queuedBytes > OUTBOUND_HIGH_BYTES || this.slots.length >= INFLIGHT_MAX;
  }

  /**
   * A long-poll FETCH at the head of the slots holds back every response behind it (they leave in
   * order). When those held responses alone make the connection congested (1,024 requests, or 8 MiB
   * completed), the poll is answered now with what the log holds: otherwise reading would stop and
   * a PRODUCE behind it (perhaps the one that would end the wait) would wait the poll's whole
   * maxWaitMs. docs/protocol.md, "Order of application", states the rule.
   */
  private relieveParkedHead(): void {
    let relieved = false;
    while (this.congested && this.outboundBytes + this.staging.position <= OUTBOUND_HIGH_BYTES) {
      const head = this.slots[0];
      if (head === undefined || head.done || !head.expeditable || head.parked === undefined) break;
      head.expeditable = false;
      head.parked.expedite();
      if (!head.done) break; // it could not answer (the connection closed): nothing more to do
      this.flushSlots();
      relieved = true;
    }
    // The frame loop stopped at the congestion, maybe without reading ever pausing: go on.
    if (relieved) this.processInbound();
  }

  /** The one place that pauses and resumes reading (the reasons are listed in the header). */
  private updateReading(): void {
    if (this.isClosed) return;
    this.relieveParkedHead();
    let reason: PauseReason | undefined;
    if (this.closingReason !== undefined) reason = undefined;
    else if (this.congested) reason = "congestion";
    else if (this.draining)
      reason = undefined; // no budget wait, no ordering hold: see finishAndClose
    else if (this.waitingForBudget) reason = "budget";
    else if (this.blocked && this.inbound.length >= INBOUND_FREE_BYTES) reason = "ordering";
    else if (
      this.pauseReason === "congestion" &&
      (this.queuedBytes >= OUTBOUND_LOW_BYTES || this.slots.length >= INFLIGHT_MAX / 2)
    )
      reason = "congestion"; // hysteresis: resume only once the output drained well below the high mark
    const wasReason = this.pauseReason;
    this.pauseReason = reason;
    const pause = reason !== undefined;
    if (pause === this.paused) return;
    this.paused = pause;
    if (pause) {
      this.socket.pause();
      return;
    }
    this.socket.resume();
    // The broker, not the client, held the frame back: its clock restarts. After congestion the
    // clock runs on (requestOverdue charged only the time the client did not read).
    if (wasReason !== "congestion") this.partialFrameAt = -1;
    // Frames that arrived before the pause may still sit in the buffer.
    this.processInbound();
  }

  /**
   * Shutdown: apply no further request. Requests already applying complete as usual; every request
   * read but not applied (held back by ordering or backpressure) and every one still arriving whole
   * is answered BROKER_SHUTTING_DOWN by the host, in order. A request left incomplete, or one larger
   * than the free allowance, gets the correlation-id-0 BROKER_SHUTTING_DOWN frame after the answers.
   * Reading resumes (a connection waiting for the budget no longer waits) so that the close is a FIN
   * with nothing unread, not a reset.
   */
  finishAndClose(): void {
    if (this.isClosed || this.draining) return;
    this.draining = true;
    this.forgetBudgetWait();
    this.processInbound();
    this.updateReading();
    this.closeIfFinished();
  }

  private closeIfFinished(): void {
    if (this.isClosed || !this.idle) return;
    if (this.closingReason !== undefined) {
      if (this.readClosed) {
        this.finSentMs ||= performance.now();
        this.socket.end();
      } else if (this.lingerUntilMs === 0) {
        // Half-close: the client reads the error frame and then our FIN; we keep discarding its input.
        this.finSentMs = performance.now();
        this.lingerUntilMs = this.finSentMs + CLOSE_LINGER_MS;
        this.socket.shutdown();
      }
      return;
    }
    if (this.draining && this.inbound.length > 0 && !this.readClosed) {
      // Part of a request arrived: tell the client why it will get no answer to it.
      this.closeAfterAnswers("the broker is shutting down", this.host.shuttingDownFrame());
      return;
    }
    if (this.readClosed || this.draining) {
      this.finSentMs ||= performance.now();
      this.socket.end();
    }
  }

  /** For the sweep: the write side was shut down and the client has not closed within the linger time. */
  lingerExpired(nowMs: number): boolean {
    return this.lingerUntilMs !== 0 && nowMs > this.lingerUntilMs;
  }

  /**
   * For stop(), every few milliseconds: closes a connection whose answers all left. A plain one
   * gets its FIN (socket.end), and is closed on the next call; a lingering one (its last frame was
   * an error) once no input arrived for LINGER_QUIET_MS after its FIN, so that nothing is unread.
   */
  closeWhenDrained(nowMs: number): void {
    if (this.isClosed || !this.idle) return;
    if (this.lingerUntilMs !== 0) {
      if (nowMs - Math.max(this.finSentMs, this.lastActivityMs) >= LINGER_QUIET_MS) this.closeGracefully();
      return;
    }
    if (this.finSentMs !== 0) this.closeGracefully();
    else this.closeIfFinished();
  }

  /**
   * Closes for good. After our FIN, with reading on (so no input is left unread), close(2) sends
   * nothing more: the client reads every byte and end-of-stream. Otherwise closing would reset the
   * connection anyway: abort.
   */
  closeGracefully(): void {
    if (this.isClosed) return;
    if (this.finSentMs === 0 || this.paused) {
      this.abort();
      return;
    }
    // Bun closes a socket whose write side is already shut down on end() (measured on Bun 1.4.4:
    // readyState -1 at once, no RST when nothing was unread).
    this.socket.end();
    this.onClose();
  }

  /** Closes at once (protocol violation, dead peer, idle timeout). */
  abort(): void {
    if (this.isClosed) return;
    this.socket.terminate();
    this.onClose();
  }

  /** Releases everything the connection holds. Called from Bun's close handler, or by abort(). */
  onClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const slot of this.slots) {
      if (slot.parked !== undefined) slot.parked.cancel();
      if (slot.file !== undefined) slot.file.release();
    }
    this.slots.length = 0;
    // Their answers were staged but never handed to the socket: no latency to record.
    this.stagedSlots.length = 0;
    for (const item of this.outbound) if (item.kind === "file") item.lease.release();
    this.outbound.length = 0;
    this.outboundBytes = 0;
    this.completedBytes = 0;
    this.staging.reset();
    this.inbound.clear(0);
    this.forgetBudgetWait();
    this.syncReservation();
    this.host.closed(this);
  }
}
