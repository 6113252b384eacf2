/**
 * A process-wide bound on the read descriptors that sealed segments keep open.
 *
 * Owns: the set of sealed segments holding a read descriptor, a use counter for recency, and the
 * limit. Segments register when they take a descriptor while sealed (or when they are sealed with
 * one) and leave when they close it.
 *
 * Why: a sealed segment opens its descriptor on the first read and would keep it until retention
 * deletes the file. A consumer that reads a long history from the start (or several consumers
 * spread over it) would then hold one descriptor per segment it ever touched, and at the process's
 * open-files limit the broker could no longer accept connections or roll a segment (EMFILE). Kafka
 * has the same property and asks operators for huge limits; here the idle descriptors of the least
 * recently read segments are closed instead, and reopened (one `open`, no header check) on the
 * next read.
 *
 * Invariants:
 * - Only a descriptor that nothing can be using is closed: the segment is sealed (no writer), has no
 *   reader (an in-flight sendfile or force holds `acquire()`), is not deleted, and has no unforced
 *   bytes (a pending force reaches the file through this descriptor).
 * - The segment that is registering is never the one closed: its caller is about to use the
 *   descriptor it just opened.
 * - Bounded from above only by what cannot be closed: segments being read or forced right now.
 *   The limit is a target, not a hard cap, so a read never fails because of it.
 */
import { readFileSync } from "node:fs";
import { assert } from "../domain/assert.ts";
import { InvalidArgumentError } from "../domain/errors.ts";
import {
  SEALED_READ_DESCRIPTORS_AUTO_MAX,
  SEALED_READ_DESCRIPTORS_FALLBACK,
  SEALED_READ_DESCRIPTORS_MIN,
} from "../domain/limits.ts";

/** A segment as the budget sees it. */
export interface ReadDescriptorHolder {
  /** The budget's use counter at this holder's last read. */
  readonly lastReadTick: number;
  /** Closes the read descriptor if nothing can be using it; true when it did. */
  closeIdleReadDescriptor(): boolean;
}

/**
 * The default bound: a quarter of the process's soft open-files limit (connections, active
 * segments, checkpoints and the metrics listener need the rest), at most 4096 and at least the
 * minimum. Bun raises the soft limit to the hard one at start-up (measured here: 20000/20000).
 */
export function defaultSealedReadDescriptorLimit(): number {
  let openFilesLimit: number | undefined;
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    if (match !== null)
      openFilesLimit = match[1] === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(match[1]);
  } catch {
    // Not Linux, or /proc not mounted: fall back.
  }
  if (openFilesLimit === undefined) return SEALED_READ_DESCRIPTORS_FALLBACK;
  return Math.max(
    SEALED_READ_DESCRIPTORS_MIN,
    Math.min(SEALED_READ_DESCRIPTORS_AUTO_MAX, Math.floor(openFilesLimit / 4)),
  );
}

class ReadDescriptorBudget {
  private limitCount = defaultSealedReadDescriptorLimit();
  private readonly holders = new Set<ReadDescriptorHolder>();
  private tick = 0;
  private closedCount = 0;

  /** The next value of the use counter; a holder stores it on every read. */
  nextTick(): number {
    return ++this.tick;
  }

  get limit(): number {
    return this.limitCount;
  }

  /** Sealed segments holding a read descriptor now. */
  get openCount(): number {
    return this.holders.size;
  }

  /** Descriptors closed because of the bound since the process started. */
  get closedByLimitCount(): number {
    return this.closedCount;
  }

  setLimit(limit: number): void {
    if (!Number.isInteger(limit) || limit < SEALED_READ_DESCRIPTORS_MIN) {
      throw new InvalidArgumentError(
        `the number of open segment files must be an integer ≥ ${SEALED_READ_DESCRIPTORS_MIN}, got ${limit}`,
      );
    }
    this.limitCount = limit;
    this.shrink(undefined);
  }

  /** `holder` holds a descriptor now; may close the idle descriptors of others. */
  opened(holder: ReadDescriptorHolder): void {
    if (this.holders.has(holder)) return;
    this.holders.add(holder);
    if (this.holders.size > this.limitCount) this.shrink(holder);
  }

  /**
   * A holder became closable (its force finished): without this, descriptors kept open only for
   * pending forces (a producer that wrote many segments under `append` before a force) would stay
   * above the bound until the next open.
   */
  becameIdle(): void {
    if (this.holders.size > this.limitCount) this.shrink(undefined);
  }

  /** `holder` closed its descriptor. */
  closed(holder: ReadDescriptorHolder): void {
    this.holders.delete(holder);
  }

  /**
   * Closes the least recently read idle descriptors until the set is a tenth below the limit, so
   * that the sort is paid once per many opens, not on every one (a consumer reading old segments
   * in order opens one per segment).
   */
  private shrink(keep: ReadDescriptorHolder | undefined): void {
    const target = Math.max(SEALED_READ_DESCRIPTORS_MIN, Math.floor(this.limitCount * 0.9));
    if (this.holders.size <= target) return;
    const byAge = [...this.holders].sort((a, b) => a.lastReadTick - b.lastReadTick);
    for (const holder of byAge) {
      if (this.holders.size <= target) break;
      if (holder === keep) continue;
      if (holder.closeIdleReadDescriptor()) {
        assert(!this.holders.has(holder), "a closed read descriptor is still registered");
        this.closedCount++;
      }
    }
  }
}

/** One budget per process: the open-files limit is per process, whichever broker opened a log. */
export const sealedReadDescriptors = new ReadDescriptorBudget();
