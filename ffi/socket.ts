/**
 * sendfile from a segment file to a TCP socket, for the zero-copy FETCH path.
 *
 * Facts this relies on (bun-platform §2, measured on Bun 1.4.4):
 * - `socket.fd` is the kernel descriptor and is O_NONBLOCK; after close it becomes -1 and the number
 *   is reused by the next open(), so the caller passes the fd it read from the socket right now.
 * - On a full socket buffer sendfile returns -1/EAGAIN: that means "wait for writability", not "done";
 *   confusing the two busy-loops at 100 % CPU. Bun fires `drain` only after its own write hit
 *   backpressure, so the caller arms it (see src/server/connection.ts).
 * - SIGPIPE is ignored process-wide by Bun, so a dead peer is an EPIPE/ECONNRESET return, not a signal.
 *
 * The `off_t*` argument is an 8-byte cell we own, written as two int32 halves: no BigInt per call.
 */
import { EAGAIN, EINTR } from "./errno.ts";
import { ioError } from "./file.ts";
import { lastErrno, libc } from "./libc.ts";

const offsetCell = new Int32Array(2);

/** sendfile returned EAGAIN: the socket buffer is full. */
export const SEND_WOULD_BLOCK = -1;

/**
 * Sends up to `count` bytes of `fileFd` starting at `position` to `socketFd`. Returns the bytes sent
 * (0 only when the file ended early) or SEND_WOULD_BLOCK; throws IoError for any other failure
 * (EPIPE, ECONNRESET: the peer is gone).
 */
export function sendFileRange(socketFd: number, fileFd: number, position: number, count: number): number {
  for (;;) {
    offsetCell[0] = position >>> 0; // low half first: little-endian off_t
    offsetCell[1] = Math.floor(position / 2 ** 32);
    const sent = libc.sendfile(socketFd, fileFd, offsetCell, count);
    if (sent >= 0) return sent;
    const errno = lastErrno();
    if (errno === EAGAIN) return SEND_WOULD_BLOCK;
    if (errno === EINTR) continue;
    throw ioError("sendfile", errno, undefined, `${count} bytes at ${position} to socket fd ${socketFd}`);
  }
}

/** poll(2) bits (Linux): the peer shut down its writing side; hang-up; error (a reset). */
const POLLRDHUP = 0x2000;
const POLLHUP = 0x010;
const POLLERR = 0x008;
/** struct pollfd { int fd; short events; short revents; }: 8 bytes. */
const pollCell = new Int32Array(2);
const pollEvents = new Int16Array(pollCell.buffer);

/**
 * Whether the peer of a TCP socket sent its FIN or reset the connection, without reading from it:
 * for a connection whose reading is paused (Bun does not poll it, so it would never learn). POLLRDHUP
 * is reported even while unread data precedes the FIN in the receive queue.
 */
export function peerHungUp(socketFd: number): boolean {
  if (socketFd < 0) return true;
  for (;;) {
    pollCell[0] = socketFd;
    pollEvents[2] = POLLRDHUP;
    pollEvents[3] = 0;
    const ready = libc.poll(pollCell, 1, 0);
    if (ready >= 0) return ready > 0 && (pollEvents[3]! & (POLLRDHUP | POLLHUP | POLLERR)) !== 0;
    if (lastErrno() !== EINTR) return false;
  }
}
