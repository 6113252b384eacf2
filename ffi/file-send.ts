/**
 * One step of sending a range of a file to a plain Bun socket with sendfile(2): the zero-copy FETCH
 * of the native listener (src/server/connection.ts) and, with `--kafka-fetch-path sendfile`, of the
 * Kafka listener (src/kafka/listener.ts).
 *
 * Owns nothing: the caller keeps the range, its progress and the file's lease.
 *
 * Invariants:
 * - The socket's descriptor is read at every step, never cached: Bun gives the number to the next
 *   socket right after a close (bun-platform.md, trap 9), and a cached one could send into another
 *   client's connection.
 * - When the kernel's send buffer is full, the next byte goes through Bun's own `write`, which either
 *   sends it or arms `drain`: Bun fires `drain` only after one of its own writes met backpressure,
 *   never after an EAGAIN from our sendfile (trap 8; without this a full buffer stalled the send
 *   for good).
 * - Never on a TLS socket: sendfile would put the file's clear text around the encryption. The
 *   callers copy on TLS connections instead.
 */
import type { Socket } from "bun";
import { preadFull } from "./file.ts";
import { SEND_WOULD_BLOCK, sendFileRange } from "./socket.ts";

/** Where the bytes of a step are counted (the native server's counters; the Kafka listener's). */
export interface FileSendCounters {
  sendfileBytes: number;
  sendfileCalls: number;
  /**
   * Bytes written through Bun's `write`: the caller counts its own writes here, and a step adds the
   * one file byte it sends that way to arm `drain` (so `sendfileBytes` can be short of a range by
   * those bytes).
   */
  writtenBytes: number;
}

/** A step that failed: the peer is gone or the file ended early; the caller ends the connection. */
export const FILE_SEND_FAILED = -1;

const oneByte = new Uint8Array(1);

/**
 * Bun's sockets carry their kernel descriptor as `fd` (-1 once closed); bun-types 1.4.5 does not
 * declare it. Checked at run time: a socket without a numeric fd cannot use the sendfile path.
 */
export function socketFd(socket: Socket<unknown>): number {
  const fd = (socket as unknown as { readonly fd?: unknown }).fd;
  return typeof fd === "number" ? fd : -1;
}

/**
 * Sends what the socket takes of `fileFd[position, end)`. Returns the bytes sent (> 0; the caller
 * advances its position and calls again), 0 when the socket is full (`drain` will fire: call again
 * then), or FILE_SEND_FAILED.
 */
export function sendFileStep<Data>(
  socket: Socket<Data>,
  fileFd: number,
  position: number,
  end: number,
  counters: FileSendCounters,
): number {
  const fd = socketFd(socket as Socket<unknown>);
  if (fd < 0) return FILE_SEND_FAILED;
  let sent: number;
  try {
    sent = sendFileRange(fd, fileFd, position, end - position);
  } catch {
    return FILE_SEND_FAILED;
  }
  if (sent > 0) {
    counters.sendfileBytes += sent;
    counters.sendfileCalls++;
    return sent;
  }
  if (sent !== SEND_WOULD_BLOCK) return FILE_SEND_FAILED; // 0: the file ended before the range did
  let got: number;
  try {
    got = preadFull(fileFd, oneByte, 0, 1, position);
  } catch {
    got = 0;
  }
  if (got !== 1) return FILE_SEND_FAILED;
  const written = socket.write(oneByte);
  if (written < 0) return FILE_SEND_FAILED;
  if (written === 1) counters.writtenBytes++;
  return written;
}
