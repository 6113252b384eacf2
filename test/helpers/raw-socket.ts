/**
 * A raw TCP client for hostile-input tests: writes whatever bytes it is given, collects what comes
 * back, and lets a test wait for "n bytes received" or "closed" (conditions, not sleeps).
 */
import type { Socket } from "bun";
import { ByteReader, ByteWriter } from "../../src/protocol/buffer.ts";
import { RESPONSE_HEADER_BYTES, readResponseHeader } from "../../src/protocol/frame.ts";
import { decodeErrorBody } from "../../src/protocol/messages.ts";

/** One request frame, built by an encoder of src/protocol/messages.ts, as bytes of its own. */
export function frame(build: (writer: ByteWriter) => void): Uint8Array {
  const writer = new ByteWriter();
  build(writer);
  return writer.written().slice();
}

/** `count` copies of `bytes` back to back: a pipelined burst of one request. */
export function repeated(bytes: Uint8Array, count: number): Uint8Array {
  const burst = new Uint8Array(bytes.length * count);
  for (let i = 0; i < count; i++) burst.set(bytes, i * bytes.length);
  return burst;
}

export interface ParsedResponse {
  correlationId: number;
  errorCode: number;
  /** The error body's message, for an error response. */
  message: string | undefined;
  /** A reader over the response payload (after the header), for the API's decoder. */
  body: ByteReader;
}

/** Parses the complete response frames in `bytes` (a trailing partial frame is left out). */
export function responses(bytes: Uint8Array): ParsedResponse[] {
  const out: ParsedResponse[] = [];
  let at = 0;
  while (bytes.length - at >= RESPONSE_HEADER_BYTES) {
    const size = new DataView(bytes.buffer, bytes.byteOffset + at).getUint32(0, false);
    const end = at + 4 + size;
    if (end > bytes.length) break;
    const header = readResponseHeader(bytes, at, { correlationId: 0, errorCode: 0 });
    const message =
      header.errorCode === 0
        ? undefined
        : decodeErrorBody(new ByteReader(bytes, at + RESPONSE_HEADER_BYTES, end), header.errorCode).message;
    out.push({
      correlationId: header.correlationId,
      errorCode: header.errorCode,
      message,
      body: new ByteReader(bytes, at + RESPONSE_HEADER_BYTES, end),
    });
    at = end;
  }
  return out;
}

/** Waits until `count` complete responses arrived after byte `fromByte`, and returns them. */
export async function waitForResponses(
  socket: RawSocket,
  count: number,
  fromByte = 0,
): Promise<ParsedResponse[]> {
  for (;;) {
    const parsed = responses(socket.received().subarray(fromByte));
    if (parsed.length >= count) return parsed;
    await socket.waitForBytes(socket.received().length + 1);
  }
}

export interface RawSocket {
  readonly socket: Socket<undefined>;
  write(bytes: Uint8Array): void;
  received(): Uint8Array;
  /** Resolves when at least `bytes` bytes arrived (rejects if the socket closes first). */
  waitForBytes(bytes: number): Promise<Uint8Array>;
  /** Resolves when the broker closed the connection. */
  readonly closed: Promise<void>;
  isClosed(): boolean;
  end(): void;
  close(): void;
}

export async function rawConnect(port: number, options: { readPaused?: boolean } = {}): Promise<RawSocket> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let isClosed = false;
  let wake: (() => void) | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const pending: Uint8Array[] = [];
  const socket = await Bun.connect<undefined>({
    hostname: "127.0.0.1",
    port,
    allowHalfOpen: true,
    socket: {
      binaryType: "uint8array",
      data(_socket, chunk) {
        chunks.push(chunk);
        total += chunk.length;
        wake?.();
      },
      drain(s) {
        while (pending.length > 0) {
          const head = pending[0]!;
          const written = s.write(head);
          if (written < head.length) {
            pending[0] = head.subarray(Math.max(0, written));
            return;
          }
          pending.shift();
        }
      },
      close() {
        isClosed = true;
        resolveClosed();
        wake?.();
      },
      end() {
        isClosed = true;
        resolveClosed();
        wake?.();
      },
      error() {
        isClosed = true;
        resolveClosed();
        wake?.();
      },
    },
  });
  if (options.readPaused) socket.pause();
  const received = () => {
    const out = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  };
  return {
    socket,
    closed,
    write(bytes) {
      if (pending.length > 0) {
        pending.push(bytes.slice());
        return;
      }
      const written = socket.write(bytes);
      if (written >= 0 && written < bytes.length) pending.push(bytes.slice(written));
    },
    received,
    async waitForBytes(bytes) {
      while (total < bytes) {
        if (isClosed) throw new Error(`connection closed after ${total} of ${bytes} bytes`);
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      return received();
    },
    isClosed: () => isClosed,
    end: () => socket.end(),
    close: () => socket.terminate(),
  };
}
