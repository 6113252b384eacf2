/**
 * The scheduling policy of one thread of this process (Linux `sched_setscheduler` with a thread id).
 *
 * Owns nothing: each call is one system call on a thread id the caller read from /proc/self/task.
 * Invariant: only SCHED_IDLE is ever set, and only on threads of this process (the kernel refuses
 * a thread of another user; a thread of another process of ours is never passed by the caller).
 * An unprivileged thread may always move a thread of its own user to SCHED_IDLE (sched(7), since
 * Linux 2.6.39); moving it back would need RLIMIT_NICE, which booblik never asks for.
 */
import { ESRCH, errnoName } from "./errno.ts";
import { lastErrno, libc } from "./libc.ts";

/** <sched.h>: run only when no other thread of the CPU's normal policies is runnable. */
const SCHED_IDLE = 5;
/**
 * <sched.h>: threads this one creates start in SCHED_OTHER, not in its policy. A compiler thread
 * starts helper threads of the runtime (a reviewer saw one of mimalloc's, 2026-12-03), which must
 * not inherit SCHED_IDLE.
 */
const SCHED_RESET_ON_FORK = 0x40000000;
/** struct sched_param { int sched_priority; }: 0 for every non-real-time policy. */
const schedulingParameters = new Int32Array(1);

/**
 * Puts thread `threadId` of this process in SCHED_IDLE (threads it creates later start in
 * SCHED_OTHER). Returns false when the thread no longer
 * exists (it ended between the listing and the call); throws with the errno's name on any other
 * failure (EPERM under a seccomp filter that forbids the call, for example).
 */
export function setIdleScheduling(threadId: number): boolean {
  if (libc.sched_setscheduler(threadId, SCHED_IDLE | SCHED_RESET_ON_FORK, schedulingParameters) === 0)
    return true;
  const errno = lastErrno();
  if (errno === ESRCH) return false;
  throw new Error(`sched_setscheduler(${threadId}, SCHED_IDLE) failed: ${errnoName(errno)}`);
}
