/**
 * How a caller that mirrors a file in memory sorts the outcome of replacing it atomically: durable,
 * in place but not durable (UnsyncedReplaceError: apply the change in memory, then throw it), or
 * not done (any other error, thrown). Not part of the client library's exports (domain/errors.ts
 * is); used by broker.ts, acl-store.ts and partition-log.ts.
 */
import { UnsyncedReplaceError } from "./errors.ts";

/**
 * Runs `replace` (an atomic replacement of a file the caller mirrors in memory) and sorts its
 * outcome: undefined when it is durable, the UnsyncedReplaceError when the new file is in place but
 * not durable (the caller applies its change in memory, then throws it); any other error is thrown
 * (nothing changed). The one pattern every such caller follows (broker.ts, acl-store.ts,
 * partition-log.ts).
 */
export function replacedUnsynced(replace: () => void): UnsyncedReplaceError | undefined {
  try {
    replace();
    return undefined;
  } catch (error) {
    if (error instanceof UnsyncedReplaceError) return error;
    throw error;
  }
}

/** The same for an asynchronous replacement (writeFileAtomically). */
export async function replacedUnsyncedAsync(
  replace: () => Promise<unknown>,
): Promise<UnsyncedReplaceError | undefined> {
  try {
    await replace();
    return undefined;
  } catch (error) {
    if (error instanceof UnsyncedReplaceError) return error;
    throw error;
  }
}
