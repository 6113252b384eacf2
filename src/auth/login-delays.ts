/**
 * The delay before a failed login is answered, per client address: AUTHENTICATION_FAILED_DELAY_MIN_MS
 * for the first failure, doubling per further failure within AUTHENTICATION_FAILURE_MEMORY_MS, at
 * most AUTHENTICATION_FAILED_DELAY_MAX_MS. One instance serves both listeners (main.ts), so
 * guessing through the Kafka port is as slow as through the native one.
 *
 * Invariant: the table holds at most LOGIN_FAILURE_ADDRESSES_MAX addresses, whatever addresses an
 * attacker brings (the oldest are forgotten first).
 */
import {
  AUTHENTICATION_FAILED_DELAY_MAX_MS,
  AUTHENTICATION_FAILED_DELAY_MIN_MS,
  AUTHENTICATION_FAILURE_MEMORY_MS,
  LOGIN_FAILURE_ADDRESSES_MAX,
} from "../domain/limits.ts";

export class LoginDelays {
  private readonly failures = new Map<string, { count: number; atMs: number }>();

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  /** Remembers a failure of `address`; returns how long to wait before answering it. */
  failed(address: string): number {
    const now = this.nowMs();
    const last = this.failures.get(address);
    const count =
      last !== undefined && now - last.atMs < AUTHENTICATION_FAILURE_MEMORY_MS ? last.count + 1 : 1;
    // Delete first so that Map order stays the order of the latest failure (oldest first).
    this.failures.delete(address);
    this.failures.set(address, { count, atMs: now });
    if (this.failures.size > LOGIN_FAILURE_ADDRESSES_MAX) {
      for (const key of this.failures.keys()) {
        this.failures.delete(key);
        if (this.failures.size <= LOGIN_FAILURE_ADDRESSES_MAX / 2) break;
      }
    }
    return Math.min(
      AUTHENTICATION_FAILED_DELAY_MIN_MS * 2 ** (count - 1),
      AUTHENTICATION_FAILED_DELAY_MAX_MS,
    );
  }
}
