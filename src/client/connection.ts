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
 *   could otherwise be taken for the next request's. Reconnecting is the caller's choice (see
 *   ReconnectingConnection in client.ts).
 * - Bun's `socket.write` does not buffer: the unwritten rest is queued here and written on `drain`.
 */
import type { Socket } from "bun";
import { BooblikError, type ErrorCode, OffsetOutOfRangeError } from "../domain/errors.ts";
import { ByteReader, ByteWriter } from "../protocol/buffer.ts";
import { WIRE_ERROR_CODES, wireErrorName } from "../protocol/error-codes.ts";
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

export interface ConnectionOptions {
  host: string;
  port: number;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxInFlight?: number;
  /** Largest response frame accepted (a FETCH response carries up to its maxBytes of records). */
  maxResponseBytes?: number;
}

const WIRE_TO_CODE: Record<number, ErrorCode> = {
  [WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION]: "UNKNOWN_TOPIC_OR_PARTITION",
  [WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE]: "OFFSET_OUT_OF_RANGE",
  [WIRE_ERROR_CODES.CORRUPT_RECORD]: "CORRUPT_RECORD",
  [WIRE_ERROR_CODES.RECORD_TOO_LARGE]: "RECORD_TOO_LARGE",
  [WIRE_ERROR_CODES.INVALID_REQUEST]: "INVALID_REQUEST",
  [WIRE_ERROR_CODES.UNSUPPORTED_VERSION]: "UNSUPPORTED_VERSION",
  [WIRE_ERROR_CODES.TOPIC_EXISTS]: "TOPIC_EXISTS",
  [WIRE_ERROR_CODES.STORAGE_ERROR]: "STORAGE_ERROR",
  [WIRE_ERROR_CODES.TOO_MANY_CONNECTIONS]: "TOO_MANY_CONNECTIONS",
  [WIRE_ERROR_CODES.INVALID_CONFIG]: "INVALID_ARGUMENT",
  [WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN]: "CLOSED",
};

/** An error the broker answered with. `wireCode` is the number on the wire (docs/protocol.md). */
export class BrokerError extends BooblikError {
  readonly wireCode: number;
  constructor(wireCode: number, message: string, retriable: boolean) {
    super(WIRE_TO_CODE[wireCode] ?? "INVALID_REQUEST", message, { retriable });
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

interface InFlight {
  correlationId: number;
  decode: (reader: ByteReader) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Turns an error response into the error to throw. */
function errorFromResponse(errorCode: number, reader: ByteReader): BooblikError {
  const body = decodeErrorBody(reader, errorCode);
  if (errorCode === WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE) {
    const match = /offset (\d+)/.exec(body.message);
    return new OffsetOutOfRangeError(
      match === null ? -1 : Number(match[1]),
      body.logStartOffset ?? 0,
      body.nextOffset ?? 0,
    );
  }
  const name = wireErrorName(errorCode) ?? `error ${errorCode}`;
  return new BrokerError(errorCode, body.message === "" ? name : body.message, body.retriable);
}

export class BrokerConnection {
  readonly host: string;
  readonly port: number;
  private socket: Socket<undefined> | undefined;
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
  private readonly closeListeners: ((error: BooblikError) => void)[] = [];

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
    try {
      const socket = await Promise.race([
        Bun.connect<undefined>({
          hostname: options.host,
          port: options.port,
          socket: {
            binaryType: "uint8array",
            data: (_socket, chunk) => connection.onData(chunk),
            drain: () => connection.flushQueue(),
            close: () =>
              connection.fail(new ConnectionError(`connection to ${options.host}:${options.port} closed`)),
            end: () =>
              connection.fail(
                new ConnectionError(`broker ${options.host}:${options.port} closed the connection`),
              ),
            error: (_socket, error) =>
              connection.fail(
                new ConnectionError(
                  `connection to ${options.host}:${options.port} failed: ${error.message}`,
                  error,
                ),
              ),
          },
        }),
        timeout,
      ]);
      connection.socket = socket;
      return connection;
    } catch (error) {
      if (error instanceof BooblikError) throw error;
      const code = (error as { code?: string }).code;
      throw new ConnectionError(
        `cannot connect to ${options.host}:${options.port}: ${code === "ECONNREFUSED" ? "connection refused (is the broker running?)" : (error as Error).message}`,
        error,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  get inFlightCount(): number {
    return this.inFlight.length;
  }

  /** Called once when the connection closes, with the reason. */
  onClose(listener: (error: BooblikError) => void): void {
    this.closeListeners.push(listener);
  }

  /**
   * Sends one request. `encode` writes the whole request frame with the given correlation id;
   * `decode` reads the success payload. Resolves with the decoded response or rejects with a typed
   * error (BrokerError, OffsetOutOfRangeError, ConnectionError, TimeoutError).
   */
  async send<T>(
    encode: (writer: ByteWriter, correlationId: number) => void,
    decode: (reader: ByteReader) => T,
    timeoutMs?: number,
    body?: Uint8Array,
  ): Promise<T> {
    while (this.inFlight.length >= this.maxInFlight && this.closedWith === undefined) {
      await new Promise<void>((resolve) => this.waitingForRoom.push(resolve));
    }
    if (this.closedWith !== undefined) throw this.closedWith;
    const correlationId = this.nextCorrelationId;
    this.nextCorrelationId = this.nextCorrelationId >= 0x7fffffff ? 1 : this.nextCorrelationId + 1;
    this.writer.reset();
    encode(this.writer, correlationId);
    const frame = this.writer.written();
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = {
        correlationId,
        decode,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: undefined,
      };
      const limit = timeoutMs ?? this.requestTimeoutMs;
      entry.timer = setTimeout(() => {
        this.fail(new TimeoutError(`no response from ${this.host}:${this.port} within ${limit} ms`));
      }, limit);
      this.inFlight.push(entry);
      this.write(frame);
      // A body the encoder counted in the frame size but did not copy (a large record batch).
      if (body !== undefined && body.length > 0) this.write(body);
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
    const end = inbound.end;
    while (this.closedWith === undefined) {
      const size = peekFrameSize(inbound.bytes, at, end);
      if (size < 0) break;
      if (size < RESPONSE_SIZE_MIN || size > this.maxResponseBytes) {
        this.fail(new ConnectionError(`broker sent a frame of impossible size ${size}`));
        return;
      }
      const frameEnd = at + SIZE_BYTES + size;
      if (frameEnd > end) break;
      this.onFrame(inbound.bytes, at, frameEnd);
      at = frameEnd;
    }
    inbound.consumeTo(at);
  }

  private onFrame(bytes: Uint8Array, start: number, end: number): void {
    const header = readResponseHeader(bytes, start, this.header);
    const reader = new ByteReader(bytes, start + RESPONSE_HEADER_BYTES, end);
    if (header.correlationId === 0 && header.errorCode !== 0) {
      // The broker speaks about the connection (too many connections, a protocol violation).
      let error: BooblikError;
      try {
        error = errorFromResponse(header.errorCode, reader);
      } catch {
        error = new ConnectionError(`broker refused the connection (error ${header.errorCode})`);
      }
      this.fail(error);
      return;
    }
    const entry = this.inFlight[0];
    if (entry === undefined || entry.correlationId !== header.correlationId) {
      this.fail(
        new ConnectionError(
          `response for correlation id ${header.correlationId} does not match the oldest request (${entry?.correlationId ?? "none"})`,
        ),
      );
      return;
    }
    this.inFlight.shift();
    clearTimeout(entry.timer);
    this.waitingForRoom.shift()?.();
    try {
      if (header.errorCode !== 0) entry.reject(errorFromResponse(header.errorCode, reader));
      else entry.resolve(entry.decode(reader));
    } catch (error) {
      // The payload did not decode: the broker and this client disagree about the protocol.
      entry.reject(error);
      this.fail(new ConnectionError(`undecodable response: ${(error as Error).message}`, error));
    }
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
    for (const listener of this.closeListeners) listener(error);
  }

  close(): void {
    this.fail(new ConnectionError("connection closed by the client"));
  }
}
