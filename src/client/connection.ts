/**
 * One client connection to a broker: pipelined requests matched to responses by correlation id, a
 * bounded number in flight, per-request timeouts, and typed errors that say whether a retry can help.
 *
 * Rules:
 * - Responses arrive in request order, so the in-flight requests form a FIFO; a response whose
 *   correlation id is not the head's means the stream is broken: the connection closes and every
 *   waiting request fails with a retriable CONNECTION_ERROR. A response with correlation id 0 is the
 *   broker speaking about the connection itself (too many connections, a protocol violation).
 * - At most `maxInFlight` requests wait for responses; further `send`s wait for a free place rather
 *   than growing memory.
 * - A request that times out fails with a retriable TIMEOUT and closes the connection: a late answer
 *   could otherwise be taken for the next request's. Reconnecting is the caller's choice
 *   (BooblikClient in client.ts reconnects with backoff).
 * - A response that does not decode closes the connection only when it breaks the protocol
 *   (ProtocolError: this client and the broker disagree, so later frames cannot be trusted either).
 *   Any other error a decoder throws is that request's alone; frames are delimited by their size, so
 *   the requests behind it are unaffected (failing them would make a retried PRODUCE append twice).
 * - Bun's `socket.write` does not buffer: the unwritten rest is queued here and written on `drain`
 *   (Node's buffers itself; transport.ts picks the runtime's socket).
 */
import type { ScramMechanism } from "../auth/scram.ts";
import { BooblikError, OffsetOutOfRangeError } from "../domain/errors.ts";
import { BROKER_PORT_DEFAULT, SEND_BODY_COPY_BYTES_MAX } from "../domain/limits.ts";
import { ByteReader, ByteWriter, ProtocolError } from "../protocol/buffer.ts";
import { errorCodeOfWire, WIRE_ERROR_CODES, wireErrorName } from "../protocol/error-codes.ts";
import {
  peekFrameSize,
  RESPONSE_HEADER_BYTES,
  RESPONSE_SIZE_MIN,
  type ResponseHeader,
  readResponseHeader,
  SIZE_BYTES,
} from "../protocol/frame.ts";
import { InboundBuffer } from "../protocol/inbound-buffer.ts";
import { decodeErrorBody } from "../protocol/messages.ts";
import { authenticate } from "./authenticate.ts";
import { type ClientSocket, connectSocket } from "./transport.ts";

export interface ConnectionOptions {
  host: string;
  port: number;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxInFlight?: number;
  /** Largest response frame accepted (a FETCH response carries up to its maxBytes of records). */
  maxResponseBytes?: number;
  /**
   * Log in with SCRAM as this user before anything else (brokers started with --users-file require
   * it). Never put the password in a command line: read it from the environment or a file.
   */
  user?: string;
  password?: string;
  /** Default SCRAM-SHA-256. */
  mechanism?: ScramMechanism;
  /**
   * Speak TLS (a broker started with --tls-cert). The broker's certificate must chain to `ca` (PEM;
   * default: the system's CAs) and name `serverName` (default: `host`); an expired, unknown or
   * mismatched certificate fails the connect with a ConnectionError naming the reason, before any
   * request is sent. `cert` and `key` (PEM) are the client's own, for a broker with --tls-ca.
   */
  tls?: ClientTlsOptions | true;
}

export interface ClientTlsOptions {
  ca?: string;
  serverName?: string;
  cert?: string;
  key?: string;
}

/** An error the broker answered with. `wireCode` is the number on the wire (docs/protocol.md). */
export class BrokerError extends BooblikError {
  readonly wireCode: number;
  constructor(wireCode: number, message: string, retriable: boolean) {
    // A number from a newer broker that this client does not know yet reads as INVALID_REQUEST.
    super(errorCodeOfWire(wireCode) ?? "INVALID_REQUEST", message, { retriable });
    this.wireCode = wireCode;
  }
}

/** The connection failed (refused, reset, closed, broken stream): a retry on a new one can help. */
export class ConnectionError extends BooblikError {
  constructor(message: string, cause?: unknown) {
    super("CONNECTION_ERROR", message, { retriable: true, cause });
  }
}

export class TimeoutError extends BooblikError {
  constructor(message: string) {
    super("TIMEOUT", message, { retriable: true });
  }
}

/**
 * "HTTP" read as a big-endian u32 frame size: what the first 4 bytes of an HTTP server's answer
 * ("HTTP/1.1 400 …") look like to this client. Pointing it at a metrics port gave only "a frame of
 * impossible size 1213486160".
 */
const HTTP_AS_FRAME_SIZE = 0x48545450;

/**
 * Whether a frame size is the first 4 bytes of a TLS record: content type alert (0x15) or handshake
 * (0x16), then protocol version 3.x. A TLS port answers this client's first request, which it
 * cannot parse as a ClientHello, with an alert (seen: 0x15 0x03 0x03 0x00, read as "a frame of
 * impossible size 352518400", pointing booblik-cli without --tls-ca at a broker started with
 * --tls-cert).
 */
function isTlsRecord(size: number): boolean {
  const contentType = size >>> 24;
  return (contentType === 0x15 || contentType === 0x16) && ((size >>> 16) & 0xff) === 0x03;
}

interface InFlight {
  correlationId: number;
  decode: (reader: ByteReader) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /**
   * The offset the request asked for (FETCH), or -1 (then an OFFSET_OUT_OF_RANGE answer keeps the
   * broker's message, which names it).
   */
  offset: number;
  /** `decode` keeps views into its frame: it reads bytes never written again (see send). */
  keepsFrame: boolean;
}

/**
 * Turns an error response into the error to throw. The message is for people (docs/protocol.md):
 * nothing is parsed out of it; the offset comes from the request that was refused.
 */
function errorFromResponse(errorCode: number, reader: ByteReader, requestedOffset: number): BooblikError {
  const body = decodeErrorBody(reader, errorCode);
  if (errorCode === WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE) {
    const error = new OffsetOutOfRangeError(requestedOffset, body.logStartOffset ?? 0, body.nextOffset ?? 0);
    // A request of several offsets (PURGE): only the broker's sentence says which was refused.
    if (requestedOffset === -1 && body.message !== "") error.message = body.message;
    return error;
  }
  const name = wireErrorName(errorCode) ?? `error ${errorCode}`;
  return new BrokerError(errorCode, body.message === "" ? name : body.message, body.retriable);
}

export class BrokerConnection {
  readonly host: string;
  readonly port: number;
  private socket: ClientSocket | undefined;
  private readonly requestTimeoutMs: number;
  private readonly maxInFlight: number;
  private readonly maxResponseBytes: number;
  private readonly inFlight: InFlight[] = [];
  private readonly waitingForRoom: (() => void)[] = [];
  private nextCorrelationId = 1;
  private readonly writer = new ByteWriter(64 * 1024);
  private outQueue: Uint8Array[] = [];
  private readonly inbound = new InboundBuffer();
  private closedWith: BooblikError | undefined;
  private readonly header: ResponseHeader = { correlationId: 0, errorCode: 0 };

  private constructor(options: ConnectionOptions) {
    this.host = options.host;
    this.port = options.port;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.maxInFlight = options.maxInFlight ?? 1024;
    this.maxResponseBytes = options.maxResponseBytes ?? 128 * 1024 * 1024;
  }

  /** Connects, or fails with a retriable ConnectionError (refused, unreachable, timed out). */
  static async connect(options: ConnectionOptions): Promise<BrokerConnection> {
    const connection = new BrokerConnection(options);
    const timeoutMs = options.connectTimeoutMs ?? 5000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ConnectionError(
              `connecting to ${options.host}:${options.port} timed out after ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      );
    });
    // Inside an async function, so that a synchronous throw (a bad address) is a rejection too.
    const tls = options.tls === true ? {} : options.tls;
    // Bun resolves connect() when TCP connects; under TLS nothing may be sent before the handshake
    // verified the broker, so connect waits for `handshake` too.
    let handshaken: (() => void) | undefined;
    let handshakeFailed: ((error: Error) => void) | undefined;
    const handshake =
      tls === undefined
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            handshaken = resolve;
            handshakeFailed = reject;
          });
    handshake.catch(() => undefined);
    const connecting = (async () =>
      connectSocket(
        options.host,
        options.port,
        {
          data: (chunk) => connection.onData(chunk),
          drain: () => connection.flushQueue(),
          handshake: (error) => {
            if (error === undefined) {
              handshaken?.();
              return;
            }
            const code = (error as { code?: string }).code;
            handshakeFailed?.(
              new ConnectionError(
                `TLS with ${options.host}:${options.port} refused: ${error.message}${code === undefined ? "" : ` [${code}]`}`,
                error,
              ),
            );
          },
          close: () =>
            connection.fail(new ConnectionError(`connection to ${options.host}:${options.port} closed`)),
          end: () =>
            connection.fail(
              new ConnectionError(`broker ${options.host}:${options.port} closed the connection`),
            ),
          error: (error) =>
            connection.fail(
              new ConnectionError(
                `connection to ${options.host}:${options.port} failed: ${error.message}`,
                error,
              ),
            ),
        },
        tls === undefined
          ? undefined
          : {
              serverName: tls.serverName ?? options.host,
              ...(tls.ca === undefined ? {} : { ca: tls.ca }),
              ...(tls.cert === undefined ? {} : { cert: tls.cert }),
              ...(tls.key === undefined ? {} : { key: tls.key }),
            },
      ))();
    try {
      const socket = await Promise.race([connecting, timeout]);
      connection.socket = socket;
      await Promise.race([handshake, timeout]);
    } catch (error) {
      // When the timeout won, the attempt still runs: a socket it opens later has no owner, so end it.
      connecting.then(
        (late) => late.end(),
        () => undefined,
      );
      if (error instanceof BooblikError) throw error;
      const code = (error as { code?: string }).code;
      throw new ConnectionError(
        `cannot connect to ${options.host}:${options.port}: ${code === "ECONNREFUSED" ? "connection refused (is the broker running?)" : (error as Error).message}`,
        error,
      );
    } finally {
      clearTimeout(timer);
    }
    if (options.user !== undefined) {
      try {
        await authenticate(connection, options.user, options.password ?? "", options.mechanism);
      } catch (error) {
        connection.close();
        throw error;
      }
    }
    return connection;
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /**
   * Sends one request. `encode` writes the whole request frame with the given correlation id;
   * `decode` reads the success payload (a view into the receive buffer: copy what it keeps).
   * Resolves with the decoded response or rejects with a typed error (BrokerError,
   * OffsetOutOfRangeError, ConnectionError, TimeoutError, or what `decode` threw). `offset` is the
   * offset a FETCH asks for, for its OffsetOutOfRangeError. With `keepsFrame`, `decode` reads bytes
   * that are never written again, so it may keep views into them instead of copying (a FETCH's
   * records): a successful answer that fills at least half of the receive buffer takes the buffer
   * (InboundBuffer.detach), a smaller one gets a copy of its own.
   */
  async send<T>(
    encode: (writer: ByteWriter, correlationId: number) => void,
    decode: (reader: ByteReader) => T,
    timeoutMs?: number,
    body?: Uint8Array,
    offset = -1,
    keepsFrame = false,
  ): Promise<T> {
    while (this.inFlight.length >= this.maxInFlight && this.closedWith === undefined) {
      await new Promise<void>((resolve) => this.waitingForRoom.push(resolve));
    }
    if (this.closedWith !== undefined) throw this.closedWith;
    const correlationId = this.nextCorrelationId;
    this.nextCorrelationId = this.nextCorrelationId >= 0x7fffffff ? 1 : this.nextCorrelationId + 1;
    const writer = this.writer;
    writer.reset();
    encode(writer, correlationId);
    // A body up to SEND_BODY_COPY_BYTES_MAX is copied behind the header and leaves in one write:
    // a second socket write costs more than the copy (one more syscall and, over loopback, one
    // more segment the broker wakes up for; docs/benchmarks.md "One write per request").
    let separateBody = body;
    if (body !== undefined && body.length <= SEND_BODY_COPY_BYTES_MAX) {
      writer.ensure(body.length);
      writer.bytes.set(body, writer.position);
      writer.position += body.length;
      separateBody = undefined;
    }
    const frame = writer.written();
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = {
        correlationId,
        decode,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: undefined,
        offset,
        keepsFrame,
      };
      const limit = timeoutMs ?? this.requestTimeoutMs;
      entry.timer = setTimeout(() => {
        this.fail(new TimeoutError(`no response from ${this.host}:${this.port} within ${limit} ms`));
      }, limit);
      this.inFlight.push(entry);
      this.write(frame);
      // A body the encoder counted in the frame size but did not copy (a large record batch).
      if (separateBody !== undefined && separateBody.length > 0) this.write(separateBody);
    });
  }

  private write(frame: Uint8Array): void {
    const socket = this.socket;
    if (socket === undefined) return;
    if (this.outQueue.length > 0) {
      this.outQueue.push(frame.slice());
      return;
    }
    const written = socket.write(frame);
    if (written < 0) {
      this.fail(new ConnectionError(`connection to ${this.host}:${this.port} is closed`));
      return;
    }
    if (written < frame.length) this.outQueue.push(frame.slice(written));
  }

  private flushQueue(): void {
    const socket = this.socket;
    if (socket === undefined) return;
    while (this.outQueue.length > 0) {
      const head = this.outQueue[0]!;
      const written = socket.write(head);
      if (written < 0) {
        this.fail(new ConnectionError(`connection to ${this.host}:${this.port} is closed`));
        return;
      }
      if (written < head.length) {
        this.outQueue[0] = head.subarray(written);
        return;
      }
      this.outQueue.shift();
    }
  }

  private onData(chunk: Uint8Array): void {
    const inbound = this.inbound;
    inbound.append(chunk);
    let at = inbound.start;
    let end = inbound.end;
    while (this.closedWith === undefined) {
      const size = peekFrameSize(inbound.bytes, at, end);
      if (size < 0) break;
      if (size < RESPONSE_SIZE_MIN || size > this.maxResponseBytes) {
        this.fail(
          new ConnectionError(
            size === HTTP_AS_FRAME_SIZE
              ? `${this.host}:${this.port} is an HTTP server, not a booblik broker (the metrics port speaks HTTP; the broker's port is usually ${BROKER_PORT_DEFAULT})`
              : isTlsRecord(size)
                ? `${this.host}:${this.port} speaks TLS: connect with TLS (booblik-cli --tls-ca <CA file>; the client's \`tls\` option)`
                : `broker sent a frame of impossible size ${size}`,
          ),
        );
        return;
      }
      const frameEnd = at + SIZE_BYTES + size;
      if (frameEnd > end) {
        // Room for the rest now, in one step (the size was checked above), so that the frame is
        // not moved again by every chunk that grows the buffer.
        inbound.reserveFrame(at, SIZE_BYTES + size);
        at = inbound.start;
        break;
      }
      if (this.onFrame(inbound.bytes, at, frameEnd)) {
        // The buffer went to the decoder; what followed the frame is at the start of a new one.
        at = inbound.start;
        end = inbound.end;
        continue;
      }
      at = frameEnd;
    }
    inbound.consumeTo(at);
  }

  /** Settles the request `bytes[start, end)` answers; true when its decoder took the buffer. */
  private onFrame(bytes: Uint8Array, start: number, end: number): boolean {
    const header = readResponseHeader(bytes, start, this.header);
    const reader = new ByteReader(bytes, start + RESPONSE_HEADER_BYTES, end, start);
    if (header.correlationId === 0 && header.errorCode !== 0) {
      // The broker speaks about the connection (too many connections, a protocol violation).
      let error: BooblikError;
      try {
        error = errorFromResponse(header.errorCode, reader, -1);
      } catch {
        error = new ConnectionError(`broker refused the connection (error ${header.errorCode})`);
      }
      // A broker shutting down (a restart, usually) refuses with BROKER_SHUTTING_DOWN: for the
      // caller that is a lost connection like any other, retried with backoff.
      if (error.code === "CLOSED")
        error = new ConnectionError(`broker refused the connection: ${error.message}`);
      this.fail(error);
      return false;
    }
    const entry = this.inFlight[0];
    if (entry === undefined || entry.correlationId !== header.correlationId) {
      this.fail(
        new ConnectionError(
          `response for correlation id ${header.correlationId} does not match the oldest request (${entry?.correlationId ?? "none"})`,
        ),
      );
      return false;
    }
    this.inFlight.shift();
    clearTimeout(entry.timer);
    this.waitingForRoom.shift()?.();
    let detached = false;
    try {
      if (header.errorCode !== 0) entry.reject(errorFromResponse(header.errorCode, reader, entry.offset));
      else if (!entry.keepsFrame) entry.resolve(entry.decode(reader));
      else if ((end - start) * 2 >= this.inbound.capacity) {
        // The frame fills at least half of the buffer: the buffer goes with it, and whoever holds
        // the records holds at most twice their bytes.
        this.inbound.detach(end);
        detached = true;
        entry.resolve(entry.decode(reader));
      } else {
        // A small answer in a larger buffer: a copy of its own, so that records kept from many
        // small fetches do not each hold a 64 KiB (or larger) buffer.
        const own = bytes.slice(start, end);
        entry.resolve(entry.decode(new ByteReader(own, RESPONSE_HEADER_BYTES, own.length)));
      }
    } catch (error) {
      entry.reject(error);
      // A frame that breaks the protocol: the broker and this client disagree, so nothing after it
      // can be trusted. Anything else (bad records, say) belongs to this request only (see header).
      if (error instanceof ProtocolError) {
        this.fail(new ConnectionError(`undecodable response: ${error.message}`, error));
      }
    }
    return detached;
  }

  /** Closes with `error`: every waiting request fails with it. Idempotent. */
  fail(error: BooblikError): void {
    if (this.closedWith !== undefined) return;
    this.closedWith = error;
    for (const entry of this.inFlight) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
    this.inFlight.length = 0;
    for (const wake of this.waitingForRoom) wake();
    this.waitingForRoom.length = 0;
    this.outQueue = [];
    this.socket?.end();
  }

  close(): void {
    this.fail(new ConnectionError("connection closed by the client"));
  }
}
