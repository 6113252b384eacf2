/**
 * The broker-wide budget for bytes of requests not yet received whole.
 *
 * Owns: how many inbound-buffer bytes beyond their free allowance (INBOUND_FREE_BYTES) all
 * connections hold together, and the queue of connections waiting to grow their buffer.
 *
 * Why: every unfinished frame used to hold its full size from its first bytes on. Sixteen
 * connections that each sent 16 MiB − 1 bytes of a frame raised the broker's RSS from 69 MB to
 * 390 MB, and the default limits allowed 1,024 × 16 MiB.
 *
 * Invariants:
 * - A connection reserves before its buffer grows past the free allowance for a frame whose size it
 *   knows; when the reservation does not fit, it stops reading and waits here, holding nothing more.
 *   So `usedBytes` stays at most `limitBytes`, except for chunks the kernel had already delivered
 *   (one read, at most about 128 KiB per connection), which are counted as they are (`force`).
 * - Waiters are served first come, first served: a large frame is not starved by a stream of small
 *   growths, and a waiter is woken only when its whole need fits.
 * - Every reserved byte is released exactly once: when the buffer shrinks or its connection closes.
 */
export interface BudgetWaiter {
  /** Asks again for what it needs; returns false when it still does not fit (it stays queued). */
  retryBudget(): boolean;
}

export class InboundBudget {
  readonly limitBytes: number;
  usedBytes = 0;
  /** Highest `usedBytes` seen, and how often a connection had to wait: for STATS and /metrics. */
  peakBytes = 0;
  waits = 0;
  /** Insertion order is arrival order. */
  private readonly waiting = new Set<BudgetWaiter>();

  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  get waitingCount(): number {
    return this.waiting.size;
  }

  /**
   * Reserves `bytes` for `waiter` if they fit and nobody queued earlier is waiting; otherwise queues
   * it (once) and returns false. A queued waiter is asked again by `release`.
   */
  tryReserve(waiter: BudgetWaiter, bytes: number): boolean {
    const first = this.waiting.values().next();
    const ahead = !first.done && first.value !== waiter;
    if (!ahead && this.usedBytes + bytes <= this.limitBytes) {
      this.waiting.delete(waiter);
      this.add(bytes);
      return true;
    }
    if (!this.waiting.has(waiter)) {
      this.waiting.add(waiter);
      this.waits++;
    }
    return false;
  }

  /** Counts bytes already held (a chunk the kernel delivered), whether or not they fit. */
  force(bytes: number): void {
    this.add(bytes);
  }

  release(bytes: number): void {
    this.usedBytes -= bytes;
    this.wake();
  }

  /**
   * A waiter that no longer needs anything (its connection closed or its need vanished). When it
   * was first in line, the ones behind it may fit now: waking them cannot wait for the next release
   * (which may be a request timeout away).
   */
  forget(waiter: BudgetWaiter): void {
    const first = this.waiting.values().next();
    if (!this.waiting.delete(waiter)) return;
    if (!first.done && first.value === waiter) this.wake();
  }

  /** Wakes waiters in order while they fit. A waiter that succeeds removes itself in tryReserve. */
  private wake(): void {
    if (this.waiting.size === 0) return;
    for (const waiter of [...this.waiting]) {
      if (!this.waiting.has(waiter)) continue;
      if (!waiter.retryBudget()) break;
    }
  }

  private add(bytes: number): void {
    this.usedBytes += bytes;
    if (this.usedBytes > this.peakBytes) this.peakBytes = this.usedBytes;
  }
}
