/**
 * Keeps JavaScriptCore's compiler threads off the CPU the event loop is waiting for, when asked
 * (`--compiler-priority idle`; the default, `normal`, leaves them alone): every thread of this
 * process named `JITWorker` is put in SCHED_IDLE, so that a request's wake-up preempts a
 * compilation instead of queueing behind it.
 *
 * Why (docs/benchmarks.md, "The latency tail was the broker's own compiler", 2026-12-03): at 50 K
 * records/s of 100 B (1,000 requests/s) the broker's hot functions reach JavaScriptCore's top tier
 * slowly, so its compiler threads kept compiling 0-59 ms of CPU per second through a 15 s run, in
 * pieces of up to 29 ms (`answerFetch`, `dispatch`, `encodeProduceResponse` at 7-14 s into it,
 * BUN_JSC_reportFTLCompileTimes). `perf sched timehist` showed the event loops of the broker and
 * its clients waiting 0.4-3.7 ms behind a compiler thread on their CPU while it ran; nice 19 did not
 * change the latency tail (a running task keeps its slice), SCHED_IDLE halved it under `append`
 * (p99 from due 0.78 against 1.65 ms at 50 K records/s, two cores, bench/network.bench.ts latency).
 *
 * Why it is not the default: when every core is busy (two busy loops beside the same run), a
 * SCHED_IDLE thread gets almost no CPU, and JavaScriptCore's collector stops the compiler threads
 * before it collects (Heap::stopThePeriphery waits for each to reach a safepoint, a reviewer's
 * reading of JSC's source): the event loop then waited for a compiler thread that could not run,
 * and records took 0.9-1.9 s at p99 against 3.5-5.9 ms with `normal` (2026-12-03 19:35 UTC). So
 * `idle` is for a machine whose cores are never all busy, and it is measured, not assumed, there.
 *
 * Owns: one repeating timer and what it knows of each thread id.
 * Invariants:
 * - Only threads of this process are changed, and only those JavaScriptCore names `JITWorker`; the
 *   main thread never is (it would run only when the machine is otherwise idle).
 * - A thread is changed once it carried the compiler's name on two sweeps in a row: a thread that
 *   a compiler thread starts carries its creator's name until it names itself (a reviewer saw one
 *   of mimalloc's, 2026-12-03), and a thread put in SCHED_IDLE by mistake could not be put back
 *   (that needs RLIMIT_NICE or CAP_SYS_NICE). A compiler thread therefore runs at normal priority
 *   for up to two sweep intervals after it starts. Threads a changed thread creates start in
 *   SCHED_OTHER (SCHED_RESET_ON_FORK, ffi/threads.ts).
 * - A thread is changed at most once: the kernel keeps a thread's policy for its life. A thread
 *   still carrying the process's own name (not yet named by the code it runs) is looked at again on
 *   the next sweep. Ids of ended threads are forgotten, so a reused id is looked at again.
 * - JavaScriptCore starts compiler threads on demand and ends those idle for about 10 s, so new
 *   ones are found by a sweep every COMPILER_THREADS_SWEEP_MS.
 * - A failure of the system call other than "no such thread" stops the sweeps and is reported once
 *   (the broker runs on, as with `normal`).
 */
import fs from "node:fs";
import { setIdleScheduling } from "../../ffi/threads.ts";
import { COMPILER_THREADS_SWEEP_MS } from "../domain/limits.ts";

export const COMPILER_PRIORITIES = ["idle", "normal"] as const;
export type CompilerPriority = (typeof COMPILER_PRIORITIES)[number];

/** JavaScriptCore's name for its JIT worklist threads (Bun 1.4.4: /proc/<pid>/task/<tid>/comm). */
const COMPILER_THREAD_NAME = "JITWorker";
const TASK_DIRECTORY = "/proc/self/task";

type ThreadState = "idle" | "candidate" | "other";

export class CompilerThreadPriority {
  /**
   * Thread id → what it is: put in SCHED_IDLE, named as a compiler thread on one sweep so far
   * (changed if it still is on the next), or another named thread, left alone.
   */
  private seen = new Map<string, ThreadState>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly mainThreadId = String(process.pid);
  private readonly unnamed: string;

  /**
   * Starts the sweeps, the first one now. `onFailure` hears the one failure that stops them.
   * Returns undefined where there is no /proc/self/task (not Linux).
   */
  static start(onFailure: (message: string) => void): CompilerThreadPriority | undefined {
    let unnamed: string;
    try {
      unnamed = fs.readFileSync("/proc/self/comm", "utf8");
    } catch {
      return undefined;
    }
    const priority = new CompilerThreadPriority(unnamed, onFailure);
    priority.sweep();
    return priority;
  }

  private constructor(
    unnamed: string,
    private readonly onFailure: (message: string) => void,
  ) {
    this.unnamed = unnamed;
    this.timer = setInterval(() => this.sweep(), COMPILER_THREADS_SWEEP_MS);
    // A sweep never keeps the process alive.
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    if (this.timer === undefined) return;
    let threadIds: string[];
    try {
      threadIds = fs.readdirSync(TASK_DIRECTORY);
    } catch (error) {
      this.fail(`cannot list ${TASK_DIRECTORY}: ${(error as Error).message}`);
      return;
    }
    const seen = new Map<string, ThreadState>();
    for (const threadId of threadIds) {
      if (threadId === this.mainThreadId) continue;
      const known = this.seen.get(threadId);
      if (known === "idle" || known === "other") {
        seen.set(threadId, known);
        continue;
      }
      let name: string;
      try {
        name = fs.readFileSync(`${TASK_DIRECTORY}/${threadId}/comm`, "utf8");
      } catch {
        continue; // the thread ended since the listing
      }
      if (name === this.unnamed) continue; // not named yet: look again next time
      if (!name.startsWith(COMPILER_THREAD_NAME)) {
        seen.set(threadId, "other");
        continue;
      }
      if (known === undefined) {
        seen.set(threadId, "candidate");
        continue;
      }
      try {
        if (setIdleScheduling(Number(threadId))) seen.set(threadId, "idle");
      } catch (error) {
        this.fail((error as Error).message);
        return;
      }
    }
    this.seen = seen;
  }

  private fail(message: string): void {
    this.stop();
    this.onFailure(message);
  }
}
