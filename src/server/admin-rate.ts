/**
 * The admin request rate: a token bucket per client address for the requests that change topics or
 * ACLs (native: CREATE_TOPIC, DELETE_TOPIC, ALTER_TOPIC, ADD_PARTITIONS, PURGE, CREATE_ACLS,
 * DELETE_ACLS; Kafka: NATIVE_ADMIN_REQUESTS' counterparts, KAFKA_ADMIN_REQUESTS) (docs/protocol.md,
 * LIMIT_EXCEEDED; docs/security.md). Per address rather than per connection,
 * because connections are cheap to open again.
 *
 * Invariants:
 * - An address may make `burst` admin requests at once and `perSecond` a second after that; a
 *   refused request takes nothing from the allowance, so retrying after the time the error names
 *   succeeds.
 * - The table forgets addresses whose allowance has refilled completely once it holds more than
 *   ADMIN_RATE_ADDRESSES_SWEEP of them: its size is bounded by the addresses active within the last
 *   burst period, not by every address ever seen.
 */
import { BooblikError } from "../domain/errors.ts";
import { ADMIN_RATE_ADDRESSES_SWEEP, ADMIN_REQUEST_BURST_SECONDS } from "../domain/limits.ts";

/** What the native listener counts, as its refusal names it. */
export const NATIVE_ADMIN_REQUESTS =
  "CREATE_TOPIC, DELETE_TOPIC, ALTER_TOPIC, ADD_PARTITIONS, PURGE, CREATE_ACLS, DELETE_ACLS";
/** What the Kafka listener counts (src/kafka/handler.ts), under Kafka's names. */
export const KAFKA_ADMIN_REQUESTS =
  "CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs, AlterConfigs, DeleteRecords, CreateAcls, DeleteAcls, Metadata auto-creating a topic";

interface Allowance {
  tokens: number;
  updatedMs: number;
}

export class AdminRateLimiter {
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly allowances = new Map<string, Allowance>();
  /** Requests refused so far (/metrics: booblik_admin_requests_refused_total). */
  refusals = 0;

  constructor(
    perSecond: number,
    private readonly nowMs: () => number = () => performance.now(),
    /** Told of every refusal, with the client address and the message (the broker's audit log). */
    private readonly onRefusal?: (address: string, message: string) => void,
    /** The requests counted, as the refusal names them. */
    private readonly requests: string = NATIVE_ADMIN_REQUESTS,
  ) {
    this.perSecond = perSecond;
    this.burst = perSecond * ADMIN_REQUEST_BURST_SECONDS;
  }

  /** Takes one admin request from `address`'s allowance, or throws a retriable LIMIT_EXCEEDED. */
  take(address: string): void {
    const nowMs = this.nowMs();
    let allowance = this.allowances.get(address);
    if (allowance === undefined) {
      if (this.allowances.size >= ADMIN_RATE_ADDRESSES_SWEEP) this.sweep(nowMs);
      allowance = { tokens: this.burst, updatedMs: nowMs };
      this.allowances.set(address, allowance);
    } else {
      this.refill(allowance, nowMs);
    }
    if (allowance.tokens < 1) {
      const waitMs = Math.ceil(((1 - allowance.tokens) * 1000) / this.perSecond);
      this.refusals++;
      const error = new BooblikError(
        "LIMIT_EXCEEDED",
        `too many admin requests (${this.requests}) from ${address}: the limit is ` +
          `${this.perSecond} a second after a burst of ${this.burst} (--max-admin-requests-per-second); ` +
          `retry in ${waitMs} ms`,
        { retriable: true },
      );
      this.onRefusal?.(address, error.message);
      throw error;
    }
    allowance.tokens -= 1;
  }

  private refill(allowance: Allowance, nowMs: number): void {
    const elapsedMs = Math.max(0, nowMs - allowance.updatedMs);
    allowance.tokens = Math.min(this.burst, allowance.tokens + (elapsedMs * this.perSecond) / 1000);
    allowance.updatedMs = nowMs;
  }

  private sweep(nowMs: number): void {
    for (const [address, allowance] of this.allowances) {
      this.refill(allowance, nowMs);
      if (allowance.tokens >= this.burst) this.allowances.delete(address);
    }
  }

  /** Addresses remembered now (for tests of the bound). */
  get addressCount(): number {
    return this.allowances.size;
  }
}
