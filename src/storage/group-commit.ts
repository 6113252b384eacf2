/**
 * Group commit: many writers ask for durability, one force answers all of them.
 *
 * Owns: the queue of waiters and the rule that at most one force runs at a time. Not the decision
 * whether to force at all (that is the durability policy, in src/broker).
 *
 * Invariants:
 * - At most one force is in flight.
 * - A request is answered by a force that *started after the request was made*, so the force covers
 *   every byte appended before the request (appends are synchronous, so "before the request" means
 *   "before the caller awaited").
 * - Requests that arrive while a force runs wait for the next one, which starts as soon as the
 *   running one ends and covers all of them. No waiting window: holding a group open to collect more
 *   writers lost 1.6-2.6x in the predecessor's measurement, because everyone who could join is
 *   already waiting on the force in flight.
 * - A failed force rejects every request it would have answered; the log it forced has marked itself
 *   failed, so later requests fail too (a retried fsync proves nothing about earlier data).
 */

/** Told the outcome of the force that answers it (an object, so a caller needs no promise). */
export interface ForceWaiter {
  resolve(): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  private readonly forceAll: () => Promise<void>;
  private waiting: ForceWaiter[] = [];
  private running = false;
  /** The current (or last) run of drain; it never rejects (each group's failure goes to its waiters). */
  private drained: Promise<void> = Promise.resolve();
  /** Forces completed (successfully or not): lets tests count forces against requests. */
  forceCount = 0;
  requestCount = 0;

  constructor(forceAll: () => Promise<void>) {
    this.forceAll = forceAll;
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

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting;
        this.waiting = [];
        try {
          await this.forceAll();
          this.forceCount++;
          for (const waiter of group) waiter.resolve();
        } catch (error) {
          this.forceCount++;
          for (const waiter of group) waiter.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
