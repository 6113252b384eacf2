/**
 * The delay before a failed login is answered, per client address: AUTHENTICATION_FAILED_DELAY_MIN_MS
 * for the first failure, doubling per further failure within AUTHENTICATION_FAILURE_MEMORY_MS, at
 * most AUTHENTICATION_FAILED_DELAY_MAX_MS. One instance serves both listeners (main.ts), so
 * guessing through the Kafka port is as slow as through the native one.
 *
 * Checks of one address's logins are one at a time while it is held (`holdMs`): every listener
 * asks before it checks credentials, and waits out the hold in its StoppableSleeps (ended at once
 * when that listener stops).
 *
 * Invariant: the table holds at most LOGIN_FAILURE_ADDRESSES_MAX addresses, whatever addresses an
 * attacker brings (the oldest are forgotten first).
 */
import {
  AUTHENTICATION_FAILED_DELAY_MAX_MS,
  AUTHENTICATION_FAILED_DELAY_MIN_MS,
  AUTHENTICATION_FAILURE_MEMORY_MS,
  LOGIN_CHECK_POLL_MS,
  LOGIN_FAILURE_ADDRESSES_MAX,
  LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX,
} from "../domain/limits.ts";

export class LoginDelays {
  private readonly failures = new Map<string, { count: number; atMs: number; heldUntilMs: number }>();

  /** Logins waiting for their address's hold, per address (enterHold/leaveHold). */
  private readonly waiting = new Map<string, number>();
  /** Addresses whose password check runs off the event loop now (beginCheck/endCheck). */
  private readonly checking = new Set<string>();

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  /**
   * Takes a place among the logins of `address` that wait for its hold; false when
   * LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX already do (the caller refuses this one at once). A caller
   * that got true calls `leaveHold` exactly once: when it checks, or gives up because its
   * connection closed or its listener stopped (a waiter nobody waits for must not run a check:
   * that would hold the address again, for nobody).
   */
  enterHold(address: string): boolean {
    const count = this.waiting.get(address) ?? 0;
    if (count >= LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX) return false;
    this.waiting.set(address, count + 1);
    return true;
  }

  /**
   * Waits until `address` is no longer held, for a login that is about to be checked: "go" (check
   * it now, synchronously), "busy" (a failure holds the address and all its places are taken:
   * refuse it at once, retriably) or "gone" (`gone()` turned true: its client left or its listener
   * stops; check nothing). A login takes a place (`enterHold`) on any wait while a failure holds
   * the address, also one that came while only a check was in progress, and gives it back before
   * it returns. `sleep` is the listener's (so that its stop can end the wait). The one loop every
   * listener uses (server.ts, kafka/listener.ts, console-auth.ts).
   */
  async waitTurn(
    address: string,
    gone: () => boolean,
    sleep: (ms: number) => Promise<void>,
  ): Promise<"go" | "busy" | "gone"> {
    let counted = false;
    try {
      for (let holdMs = this.holdMs(address); holdMs > 0; holdMs = this.holdMs(address)) {
        if (gone()) return "gone";
        if (!counted && this.heldByFailure(address)) {
          if (!this.enterHold(address)) return "busy";
          counted = true;
        }
        await sleep(holdMs);
      }
      return gone() ? "gone" : "go";
    } finally {
      if (counted) this.leaveHold(address);
    }
  }

  /** How many logins of `address` wait for its hold now. */
  waiters(address: string): number {
    return this.waiting.get(address) ?? 0;
  }

  leaveHold(address: string): void {
    const count = (this.waiting.get(address) ?? 1) - 1;
    if (count <= 0) this.waiting.delete(address);
    else this.waiting.set(address, count);
  }

  /**
   * How long a login of `address` must wait before its credentials are checked: until the delay of
   * the address's last failure ran out. A caller waits that long and asks again (another check may
   * have failed meanwhile), and starts its check only at 0, in the same turn (a check that runs off
   * the event loop marks the address with `beginCheck` first), so an address gets one check per
   * delay however many connections it opens. Without it the delay slowed only each connection's own
   * answer: an address guessed on up to CONNECTIONS_PER_ADDRESS_DEFAULT (256) connections at once,
   * and a right guess was answered at once (test/server/authentication.test.ts).
   */
  holdMs(address: string): number {
    const held = this.failureHoldMs(address);
    return this.checking.has(address) ? Math.max(held, LOGIN_CHECK_POLL_MS) : held;
  }

  /**
   * Whether `address` is held by a failure (not only by a check in progress): the logins that wait
   * then take a place (`enterHold`); those that wait only for a check in progress (a few ms) do
   * not, so a burst of right logins from one address (a dashboard's parallel HTTP Basic requests,
   * a service starting many clients) is never refused for it (a reviewer's run, 2026-12-03).
   */
  heldByFailure(address: string): boolean {
    return this.failureHoldMs(address) > 0;
  }

  private failureHoldMs(address: string): number {
    const last = this.failures.get(address);
    return last === undefined ? 0 : Math.max(0, last.heldUntilMs - this.nowMs());
  }

  /**
   * A check of `address` that runs off the event loop (the console's, and the Kafka listener's SASL
   * PLAIN): until `endCheck`, the address's other logins wait (`holdMs` is at least
   * LOGIN_CHECK_POLL_MS). The native and Kafka SCRAM checks are synchronous and need none; without
   * it a check in flight let another one run beside it, two checks per delay (a reviewer's reading,
   * 2026-12-03).
   */
  beginCheck(address: string): void {
    this.checking.add(address);
  }

  endCheck(address: string): void {
    this.checking.delete(address);
  }

  /** Remembers a failure of `address`; returns how long to wait before answering it. */
  failed(address: string): number {
    const now = this.nowMs();
    const last = this.failures.get(address);
    const count =
      last !== undefined && now - last.atMs < AUTHENTICATION_FAILURE_MEMORY_MS ? last.count + 1 : 1;
    const delayMs = Math.min(
      AUTHENTICATION_FAILED_DELAY_MIN_MS * 2 ** (count - 1),
      AUTHENTICATION_FAILED_DELAY_MAX_MS,
    );
    // Checks that did not wait (two in one turn) queue their delays one after the other.
    const heldUntilMs = Math.max(now, last?.heldUntilMs ?? 0) + delayMs;
    // Delete first so that Map order stays the order of the latest failure (oldest first).
    this.failures.delete(address);
    this.failures.set(address, { count, atMs: now, heldUntilMs });
    if (this.failures.size > LOGIN_FAILURE_ADDRESSES_MAX) {
      for (const key of this.failures.keys()) {
        this.failures.delete(key);
        if (this.failures.size <= LOGIN_FAILURE_ADDRESSES_MAX / 2) break;
      }
    }
    return heldUntilMs - now;
  }
}

/**
 * The sleeps of one listener's held logins (LoginDelays.waitTurn's `sleep`): each resolves after its
 * time, or at once when the listener stops (`wakeAll`), and leaves nothing behind when it ends (a race
 * against a promise that settles only at stop kept one reaction per wait until then: a reviewer
 * measured the heap growing under a flood of held logins). The timers do not keep the process alive.
 * One for the native server and one for the Kafka listener (they were two copies).
 */
export class StoppableSleeps {
  private readonly wakes = new Set<() => void>();
  private stopped = false;

  sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakes.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.wakes.add(wake);
    });
  }

  /** Ends every sleep now, and every later one at once. */
  wakeAll(): void {
    this.stopped = true;
    for (const wake of [...this.wakes]) wake();
  }
}
