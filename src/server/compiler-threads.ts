/**
 * Keeps JavaScriptCore's compiler threads off the CPU the event loop is waiting for: every thread
 * of this process named `JITWorker` is put in SCHED_IDLE, so that a request's wake-up preempts a
 * compilation instead of queueing behind it (`--compiler-priority idle`, the broker's default).
 *
 * Why (docs/benchmarks.md, "The latency tail was the broker's own compiler", 2026-12-03): at 50 K
 * records/s of 100 B (1,000 requests/s) the broker's hot functions reach JavaScriptCore's top tier
 * slowly, so its compiler threads keep compiling 10-50 ms of CPU per second for the first minute,
 * in pieces of up to 29 ms (`answerFetch`, `dispatch`, `encodeProduceResponse` at 6-14 s into a run,
 * BUN_JSC_reportFTLCompileTimes). `perf sched timehist` showed the event loops of the broker and its
 * clients waiting 0.5-3.7 ms behind a compiler thread on their CPU while the thread ran; nice 19 did
 * not change the latency tail (the kernel lets a running task finish its slice), SCHED_IDLE halved
 * it (p99 from due 0.47-0.75 ms against 0.93-1.47 ms at 50 K records/s, `append`, two cores).
 *
 * The cost: a SCHED_IDLE thread gets a CPU only when no normal thread wants it (or a weight of 3
 * against 1,024 when every CPU is busy), so on a machine whose every core is saturated, compilation
 * waits and the broker runs in a lower tier for longer; `--compiler-priority normal` leaves the
 * threads as they are.
 *
 * Owns: one repeating timer and the set of thread ids already looked at.
 * Invariants:
 * - Only threads of this process are changed, and only those JavaScriptCore names `JITWorker`; the
 *   main thread never is (it would run only when the machine is otherwise idle).
 * - A thread is looked at once: the kernel keeps a thread's policy for its life. A thread still
 *   carrying the process's own name (not yet named by the code it runs) is looked at again on the
 *   next sweep. Ids of ended threads are forgotten, so a reused id is looked at again.
 * - JavaScriptCore starts compiler threads on demand and ends idle ones, so new ones are found by a
 *   sweep every COMPILER_THREADS_SWEEP_MS: a new thread runs at normal priority until then.
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

export class CompilerThreadPriority {
  /** Thread id → whether it was put in SCHED_IDLE (false: another named thread, left alone). */
  private seen = new Map<string, boolean>();
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

  /** Compiler threads put in SCHED_IDLE and still running. */
  get idleThreads(): number {
    let count = 0;
    for (const idle of this.seen.values()) if (idle) count++;
    return count;
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
    const seen = new Map<string, boolean>();
    for (const threadId of threadIds) {
      if (threadId === this.mainThreadId) continue;
      const known = this.seen.get(threadId);
      if (known !== undefined) {
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
        seen.set(threadId, false);
        continue;
      }
      try {
        if (setIdleScheduling(Number(threadId))) seen.set(threadId, true);
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
