/**
 * Whether the reader of a pipe we write to has gone (`booblik-cli consume --follow | head -1` after
 * `head` exited). A write would say so with EPIPE, but a follower waiting for new records writes
 * nothing and would run forever. poll(2) reports POLLERR on the write end of a pipe whose read end is
 * closed (Linux fs/pipe.c, pipe_poll), without writing anything. For a terminal or a regular file it
 * never does, so this is safe to ask about any descriptor.
 */
import { EINTR } from "./errno.ts";
import { lastErrno, libc } from "./libc.ts";

const POLLERR = 0x008;
/** struct pollfd { int fd; short events; short revents; }: 8 bytes. */
const pollCell = new Int32Array(2);
const pollEvents = new Int16Array(pollCell.buffer);

export function readerGone(fd: number): boolean {
  for (;;) {
    pollCell[0] = fd;
    pollEvents[2] = 0; // events: none asked; POLLERR and POLLHUP are always reported
    pollEvents[3] = 0;
    const ready = libc.poll(pollCell, 1, 0);
    if (ready >= 0) return ready > 0 && (pollEvents[3]! & POLLERR) !== 0;
    if (lastErrno() !== EINTR) return false;
  }
}
