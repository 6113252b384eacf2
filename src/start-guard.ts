/**
 * A setting read while the modules load is checked before an entry point's own error handling
 * exists: `BOOBLIK_CRC32C` (ffi/crc32c.ts) chooses the CRC32C implementation when that module is
 * evaluated, and a wrong value throws there. Bun reports a throw during loading as an uncaught
 * exception, with source lines and a stack trace (seen 2026-12-02 with `BOOBLIK_CRC32C=bogus`), where
 * every other start-up refusal is one line and an exit code. So each entry point imports a guard
 * first (src/broker-guard.ts, src/cli/guard.ts); until the entry has started (`done()`), a
 * BooblikError thrown while loading is printed as one line, and anything else in full, and the
 * process exits with the entry's code. After `done()` nothing changes how errors are reported.
 */
import { BooblikError } from "./domain/errors.ts";

export interface StartGuard {
  /** The entry point is running: its own handling takes over. */
  done(): void;
}

export function guardStart(prefix: string, exitCode: number): StartGuard {
  const handler = (error: unknown) => {
    if (error instanceof BooblikError) console.error(`${prefix}: ${error.message}`);
    else console.error(`${prefix}: failed to start:`, error);
    process.exit(exitCode);
  };
  process.on("uncaughtException", handler);
  return { done: () => process.off("uncaughtException", handler) };
}
