/**
 * The password checks that derive keys from a password sent in full (SASL PLAIN on the Kafka
 * listener, the web console's login): PBKDF2 with the credential's iterations, once per stored
 * mechanism, milliseconds of CPU each, on the runtime's thread pool.
 *
 * Why a gate: that pool also runs the broker's pooled `fdatasync` (ffi/file.ts, under `force` when
 * a turn forces several partitions, and while forces back off from the event loop). A reviewer
 * measured one fdatasync taking 0.18 ms alone and 568 ms queued behind six derivations of 300,000
 * rounds (2026-12-03, two cores); at the default 4,096 rounds a check takes 3.1 ms (both
 * mechanisms), so a flood of a hundred addresses' logins queues about 0.3 s of them. Logins of
 * different addresses were not limited (one check per address at a time,
 * LoginDelays), and an unknown user costs the same derivations, so anyone who can connect could
 * delay acknowledgements under `force`.
 *
 * Owns: the count of checks running and the queue of those waiting for one to end.
 * Invariants:
 * - At most PASSWORD_CHECKS_RUNNING_MAX checks run at once in this process, whatever the listener;
 *   a check that ends hands its place to the oldest waiting one (no other check can take it
 *   in between).
 * - At most PASSWORD_CHECKS_WAITING_MAX wait; one more is refused (`check` returns undefined) and
 *   the caller answers it as not checked, retriably.
 * One instance per process (`passwordChecks`): the pool it protects is the process's.
 */
import { PASSWORD_CHECKS_RUNNING_MAX, PASSWORD_CHECKS_WAITING_MAX } from "../domain/limits.ts";
import { type ScramCredential, type ScramMechanism, verifyPassword } from "./scram.ts";

export class PasswordChecks {
  private runningCount = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly runningMax = PASSWORD_CHECKS_RUNNING_MAX,
    private readonly waitingMax = PASSWORD_CHECKS_WAITING_MAX,
  ) {}

  /** Checks running now. */
  get running(): number {
    return this.runningCount;
  }

  /** Checks waiting for one to end. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * verifyPassword when a place is free: its answer, or undefined at once when
   * PASSWORD_CHECKS_WAITING_MAX checks already wait.
   */
  check(
    credentials: ReadonlyMap<ScramMechanism, ScramCredential> | undefined,
    password: string,
  ): Promise<boolean> | undefined {
    if (this.runningCount < this.runningMax) {
      this.runningCount++;
      return this.run(credentials, password);
    }
    if (this.waiting.length >= this.waitingMax) return undefined;
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() =>
      this.run(credentials, password),
    );
  }

  private async run(
    credentials: ReadonlyMap<ScramMechanism, ScramCredential> | undefined,
    password: string,
  ): Promise<boolean> {
    try {
      return await verifyPassword(credentials, password);
    } finally {
      const next = this.waiting.shift();
      if (next === undefined) this.runningCount--;
      else next(); // its place passes on
    }
  }
}

/** The process's checks: every listener asks here. */
export const passwordChecks = new PasswordChecks();
