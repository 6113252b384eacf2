/**
 * Group commit: many writers ask for durability, one force answers all of them.
 *
 * Owns: the queue of waiters and the rule that at most one force runs at a time. Not the decision
 * whether to force at all (that is the durability policy, in src/broker), nor whether a force may
 * block the event loop (the `OnLoop` the owner passes in).
 *
 * Invariants:
 * - At most one force is in flight, on the thread pool or on the calling thread.
 * - A request is answered by a force that *started after the request was made*, so the force covers
 *   every byte appended before the request (appends are synchronous, so "before the request" means
 *   "before the caller awaited"). A waiter is told only after its fdatasync returned.
 * - Requests that arrive while a force runs wait for the next one, which starts as soon as the
 *   running one ends and covers all of them. No waiting window: holding a group open to collect more
 *   writers lost 1.6-2.6x in the predecessor's measurement, because everyone who could join is
 *   already waiting on the force in flight.
 * - A failed force rejects every request it would have answered; the log it forced has marked itself
 *   failed, so later requests fail too (a retried fsync proves nothing about earlier data).
 *
 * Forcing on the event loop (issue 13). The broker's PRODUCE path gathers the requests of an
 * event-loop turn into one group per partition (src/broker/partition.ts); when a turn has one
 * partition to force, it forces that group right there (`forceNowOrEnqueue`) and answers, as Redis
 * does under `appendfsync always`: whatever arrives during the fdatasync is read in the next turn and
 * rides the next force (the partition may first wait a few turns for the connections that force
 * answered: its "gather", src/broker/partition.ts). Likewise, when a force on the thread pool completes and waiters queued behind
 * it while no other group commit has a force on the pool, the next force runs at once on the loop
 * instead of going back to the pool: without that, a busy partition whose force once went to the pool
 * (several partitions in one turn, a slow force) would never leave it, since every later group
 * arrives while the previous force runs. Measured with 16 connections sending one record per request
 * (perf stat on the broker's syscalls; figures in docs/benchmarks.md, issue 13): through the pool
 * each force cost a hand-off and a wake-up (4.1 futex calls and 2.3 epoll waits per force, against
 * 0.15 and 1.0 on the loop), the requests read while it ran were written in 1.7 pwrites per force,
 * and a force carried 7.3 requests against 10.9 on the loop. The loop stops for the fdatasync:
 * 0.08 ms at the median, 0.16 ms at p99 for an appended 100 B on that machine
 * (bench/load/fdatasync.ts); the owner's `allowed()` turns this off after a slow force.
 */

/** Told the outcome of the force that answers it (an object, so a caller needs no promise). */
export interface ForceWaiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** How to force on the calling thread, and whether that is allowed now. */
export interface OnLoop {
  forceNow(): void;
  allowed(): boolean;
}

/** Forces on the thread pool now, across every group commit of the process. */
let poolForcesInFlight = 0;

export class GroupCommit {
  private readonly forceAll: () => Promise<void>;
  private readonly onLoop: OnLoop | undefined;
  private waiting: ForceWaiter[] = [];
  private running = false;
  /** The current (or last) run of drain; it never rejects (each group's failure goes to its waiters). */
  private drained: Promise<void> = Promise.resolve();
  /** Forces completed (successfully or not): lets tests count forces against requests. */
  forceCount = 0;
  requestCount = 0;
  /** Of `forceCount`, those run on the calling thread. */
  loopForceCount = 0;
  private loopFailure: unknown;

  constructor(forceAll: () => Promise<void>, onLoop?: OnLoop) {
    this.forceAll = forceAll;
    this.onLoop = onLoop;
  }

  /** Resolves once a force that started after this call completed. */
  request(): Promise<void> {
    return new Promise<void>((resolve, reject) => this.enqueue({ resolve, reject }));
  }

  /**
   * Like `request`, for a caller that answers many appends at once (a coalesced group,
   * src/broker/partition.ts): `waiter` is told once a force that started after this call completed.
   */
  enqueue(waiter: ForceWaiter): void {
    this.requestCount++;
    this.waiting.push(waiter);
    if (!this.running) this.drained = this.drain();
  }

  /**
   * Forces at once on the calling thread and tells `waiter` the outcome, when no force is in flight
   * and the owner allows it; otherwise queues `waiter` as `enqueue` does (a force in flight may have
   * started before the caller's appends, so it cannot answer them).
   */
  forceNowOrEnqueue(waiter: ForceWaiter): void {
    if (this.running || this.onLoop === undefined || !this.onLoop.allowed()) {
      this.enqueue(waiter);
      return;
    }
    this.requestCount++;
    if (this.forcedOnLoop()) waiter.resolve();
    else waiter.reject(this.loopFailure);
  }

  get inFlight(): boolean {
    return this.running;
  }

  /**
   * Resolves once no force runs: the one in flight and every group queued behind it finished. Asks
   * for no force itself (unlike `request`), so a closing log waits without paying one more fdatasync.
   */
  idle(): Promise<void> {
    return this.drained;
  }

  /** Forces on the calling thread; false when it failed, with the cause in `loopFailure`. */
  private forcedOnLoop(): boolean {
    this.forceCount++;
    this.loopForceCount++;
    try {
      this.onLoop!.forceNow();
      return true;
    } catch (error) {
      this.loopFailure = error;
      return false;
    }
  }

  private async drain(): Promise<void> {
    this.running = true;
    let resumed = false;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting;
        this.waiting = [];
        // After a force on the pool (never inside `enqueue`'s own call, so a caller that asked for a
        // force in the background is never blocked by it): see the header.
        if (resumed && poolForcesInFlight === 0 && this.onLoop?.allowed()) {
          if (this.forcedOnLoop()) for (const waiter of group) waiter.resolve();
          else for (const waiter of group) waiter.reject(this.loopFailure);
          continue;
        }
        resumed = true;
        poolForcesInFlight++;
        try {
          await this.forceAll();
          poolForcesInFlight--;
          this.forceCount++;
          for (const waiter of group) waiter.resolve();
        } catch (error) {
          poolForcesInFlight--;
          this.forceCount++;
          for (const waiter of group) waiter.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
