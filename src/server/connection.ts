/**
 * One client connection: framing of its requests, ordering of its responses, and the output pump
 * that mixes buffered writes with zero-copy sendfile ranges.
 *
 * Owns: the inbound buffer, the queue of response slots (one per request, answered in request
 * order), the outbound queue, read pausing (backpressure), half-close handling, and the references
 * (acquired segments, waiting fetches) its requests hold.
 *
 * Invariants:
 * - A frame's size is checked against the maximum before any of its payload is buffered; an
 *   impossible size closes the connection (the stream can no longer be trusted to be in sync).
 * - Responses leave in the order their requests arrived; a slow request (a produce waiting for a
 *   force, a long-poll fetch) holds back the responses behind it, never reorders them.
 * - Bytes leave in queue order. Bun's `socket.write` does not buffer (a partial count means "the rest
 *   is yours"), so the remainder stays at the head of our queue; sendfile never starts while a
 *   buffer remainder is pending, and a buffer never overtakes a file range.
 * - `socket.fd` is read at every sendfile call (the number is reused after close).
 * - While more than OUTBOUND_HIGH_BYTES are queued or INFLIGHT_MAX requests are pending, the
 *   connection stops reading: a client that sends and never reads cannot grow broker memory.
 * - Every acquired segment is released exactly once: when its range was sent, or when the
 *   connection closes.
 * - A connection whose queued output made no progress for the idle timeout is closed by the sweep
 *   (outputStalledMs): a client that stops reading must not hold its segments and buffers forever.
 */
import type { Socket } from "bun";
import { preadFull } from "../../ffi/file.ts";
import { SEND_WOULD_BLOCK, sendFileRange } from "../../ffi/socket.ts";
import { ByteWriter } from "../protocol/buffer.ts";
import { peekFrameSize, REQUEST_SIZE_MIN, SIZE_BYTES } from "../protocol/frame.ts";
import { InboundBuffer } from "../protocol/inbound-buffer.ts";
import type { Segment } from "../storage/segment.ts";

/** Stop reading a connection's requests while this many response bytes wait to be sent. */
export const OUTBOUND_HIGH_BYTES = 8 * 1024 * 1024;
/** Resume reading once the queue drained below this. */
export const OUTBOUND_LOW_BYTES = 2 * 1024 * 1024;
/** Stop reading while this many requests of one connection wait for their responses. */
export const INFLIGHT_MAX = 1024;

interface BufferItem {
  kind: "buffer";
  bytes: Uint8Array;
}

interface FileItem {
  kind: "file";
  fd: number;
  position: number;
  end: number;
  segment: Segment;
}

type OutItem = BufferItem | FileItem;

/** A response slot: filled when its request completes, sent when every earlier one was sent. */
export interface ResponseSlot {
  /** The request's API, and when it arrived: for the latency histograms. */
  apiKey: number;
  startMs: number;
  done: boolean;
  bytes: Uint8Array | undefined;
  file: { fd: number; position: number; lengthBytes: number; segment: Segment } | undefined;
  /** Called if the connection closes before the slot was sent (releases waiters and references). */
  cancel: (() => void) | undefined;
}

export interface ConnectionCounters {
  sendfileBytes: number;
  sendfileCalls: number;
  writtenBytes: number;
}

export interface ConnectionHost {
  readonly maxFrameBytes: number;
  readonly counters: ConnectionCounters;
  /** Handles one complete request frame; `frame` is valid only during the call. */
  dispatch(connection: Connection, frame: Uint8Array): void;
  /** The connection's peer broke the protocol in a way that desynchronises the stream. */
  protocolViolation(connection: Connection, reason: string): void;
  closed(connection: Connection): void;
  /** A response left the queue of completed responses for the socket, `elapsedMs` after its request. */
  responded(apiKey: number, elapsedMs: number): void;
}

const oneByte = new Uint8Array(1);

/**
 * Bun's sockets carry their kernel descriptor as `fd` (-1 once closed); bun-types 1.4.5 does not
 * declare it. Checked at run time: a socket without a numeric fd cannot use the sendfile path.
 */
function socketFd(socket: Socket<Connection>): number {
  const fd = (socket as unknown as { readonly fd?: unknown }).fd;
  return typeof fd === "number" ? fd : -1;
}

export class Connection {
  readonly socket: Socket<Connection>;
  readonly host: ConnectionHost;
  /** When the last request bytes arrived. */
  lastActivityMs = performance.now();
  private readonly inbound = new InboundBuffer();
  private readonly slots: ResponseSlot[] = [];
  private readonly outbound: OutItem[] = [];
  private readonly staging = new ByteWriter(16 * 1024);
  private outboundBytes = 0;
  private paused = false;
  private readClosed = false;
  private isClosed = false;
  /** No more requests are read (shutdown); pending ones still get their responses. */
  private draining = false;
  private flushScheduled = false;
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

  constructor(socket: Socket<Connection>, host: ConnectionHost) {
    this.socket = socket;
    this.host = host;
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
    return this.slots.length === 0 && this.outbound.length === 0 && this.staging.position === 0;
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
    if (this.isClosed || this.draining) return;
    this.lastActivityMs = performance.now();
    const inbound = this.inbound;
    if (inbound.length === 0) {
      // Nothing buffered: frame straight out of the chunk (Bun hands us a fresh buffer each time) and
      // keep only its incomplete tail.
      const consumed = this.frameLoop(chunk, 0, chunk.length);
      if (!this.isClosed && consumed < chunk.length) inbound.append(chunk.subarray(consumed));
    } else {
      inbound.append(chunk);
      inbound.consumeTo(this.frameLoop(inbound.bytes, inbound.start, inbound.end));
    }
    if (!this.isClosed) this.updateReading();
  }

  /** Dispatches every complete frame in bytes[start, end); returns where the first incomplete one starts. */
  private frameLoop(bytes: Uint8Array, start: number, end: number): number {
    let at = start;
    // Stop dispatching (the rest stays buffered, and reading pauses) as soon as this connection's
    // responses pile up: a burst of 4,000 fetches in one chunk once queued 3.4 GB before this check.
    while (!this.isClosed && !this.draining && !this.congested) {
      const size = peekFrameSize(bytes, at, end);
      if (size < 0) break;
      // Check the size before waiting for (or buffering) the payload: a garbage length must not make
      // us hold gigabytes, and a short one cannot even carry a header.
      if (size < REQUEST_SIZE_MIN || size > this.host.maxFrameBytes) {
        this.host.protocolViolation(
          this,
          size < REQUEST_SIZE_MIN
            ? `frame size ${size} is smaller than a request header (${REQUEST_SIZE_MIN})`
            : `frame size ${size} exceeds the maximum of ${this.host.maxFrameBytes} bytes`,
        );
        return at;
      }
      const frameEnd = at + SIZE_BYTES + size;
      if (frameEnd > end) break;
      this.host.dispatch(this, bytes.subarray(at, frameEnd));
      at = frameEnd;
    }
    return at;
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
      startMs: performance.now(),
      done: false,
      bytes: undefined,
      file: undefined,
      cancel: undefined,
    };
    this.slots.push(slot);
    return slot;
  }

  /** Completes a slot with a buffered response. */
  complete(slot: ResponseSlot, bytes: Uint8Array): void {
    if (this.isClosed || slot.done) return;
    slot.bytes = bytes;
    slot.done = true;
    slot.cancel = undefined;
    this.completedBytes += bytes.length;
    this.scheduleFlush();
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
    this.flushSlots();
  };

  /** Completes a slot with a header followed by a file range (the segment is already acquired). */
  completeWithFile(
    slot: ResponseSlot,
    header: Uint8Array,
    fd: number,
    position: number,
    lengthBytes: number,
    segment: Segment,
  ): void {
    if (this.isClosed || slot.done) {
      segment.release();
      return;
    }
    slot.bytes = header;
    slot.file = { fd, position, lengthBytes, segment };
    slot.done = true;
    slot.cancel = undefined;
    this.completedBytes += header.length + lengthBytes;
    this.scheduleFlush();
  }

  private flushSlots(): void {
    const slots = this.slots;
    let moved = false;
    while (slots.length > 0 && slots[0]!.done) {
      const slot = slots.shift()!;
      moved = true;
      this.host.responded(slot.apiKey, performance.now() - slot.startMs);
      this.completedBytes -= (slot.bytes?.length ?? 0) + (slot.file?.lengthBytes ?? 0);
      if (slot.bytes !== undefined) this.enqueueBytes(slot.bytes);
      if (slot.file !== undefined) {
        const { fd, position, lengthBytes, segment } = slot.file;
        if (lengthBytes > 0) this.enqueueFile(fd, position, position + lengthBytes, segment);
        else segment.release();
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

  private enqueueFile(fd: number, position: number, end: number, segment: Segment): void {
    this.moveStagingToQueue();
    this.outbound.push({ kind: "file", fd, position, end, segment });
    this.outboundBytes += end - position;
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
      const fd = socketFd(socket); // never cached: the number is reused after close
      if (fd < 0) {
        this.abort();
        return;
      }
      let sent: number;
      try {
        sent = sendFileRange(fd, item.fd, item.position, item.end - item.position);
      } catch {
        this.abort();
        return;
      }
      if (sent > 0) {
        this.host.counters.sendfileBytes += sent;
        this.host.counters.sendfileCalls++;
        item.position += sent;
        this.outboundBytes -= sent;
        this.sentBytes += sent;
        if (item.position >= item.end) {
          outbound.shift();
          item.segment.release();
        }
        continue;
      }
      if (sent === 0) {
        this.abort();
        return;
      }
      // sent === SEND_WOULD_BLOCK. Bun fires `drain` only after one of *its* writes met backpressure,
      // so send the next real byte through Bun: it either goes out (advance one and try sendfile
      // again) or arms the drain event (bun-platform §2, trap 8).
      if (sent === SEND_WOULD_BLOCK) {
        let got: number;
        try {
          got = preadFull(item.fd, oneByte, 0, 1, item.position);
        } catch {
          got = 0;
        }
        if (got !== 1) {
          this.abort();
          return;
        }
        const written = socket.write(oneByte);
        if (written < 0) {
          this.abort();
          return;
        }
        if (written === 1) {
          item.position++;
          this.outboundBytes--;
          this.sentBytes++;
          this.host.counters.writtenBytes++;
          if (item.position >= item.end) {
            outbound.shift();
            item.segment.release();
          }
          continue;
        }
        return;
      }
    }
    // The queue is empty: write the staged bytes straight from the staging buffer.
    if (this.staging.position > 0) {
      const staged = this.staging.written();
      const written = socket.write(staged);
      if (written < 0) {
        this.abort();
        return;
      }
      this.sentBytes += written;
      this.host.counters.writtenBytes += written;
      if (written < staged.length) {
        const rest = staged.slice(written);
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

  private updateReading(): void {
    if (this.isClosed) return;
    if (this.congested) {
      if (!this.paused) {
        this.paused = true;
        this.socket.pause();
      }
      return;
    }
    if (!this.paused || this.queuedBytes >= OUTBOUND_LOW_BYTES || this.slots.length >= INFLIGHT_MAX / 2)
      return;
    this.paused = false;
    this.socket.resume();
    // Frames that arrived before the pause may still sit in the buffer.
    const inbound = this.inbound;
    if (inbound.length > 0) {
      inbound.consumeTo(this.frameLoop(inbound.bytes, inbound.start, inbound.end));
      if (this.congested) {
        this.paused = true;
        this.socket.pause();
      }
    }
  }

  /** Stop reading requests (shutdown); answer the pending ones, then close. */
  finishAndClose(): void {
    this.draining = true;
    this.closeIfFinished();
  }

  private closeIfFinished(): void {
    if (this.isClosed || !(this.readClosed || this.draining)) return;
    if (this.idle) this.socket.end();
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
      if (slot.cancel !== undefined) slot.cancel();
      if (slot.file !== undefined) slot.file.segment.release();
    }
    this.slots.length = 0;
    for (const item of this.outbound) if (item.kind === "file") item.segment.release();
    this.outbound.length = 0;
    this.outboundBytes = 0;
    this.completedBytes = 0;
    this.staging.reset();
    this.host.closed(this);
  }
}
