/** Imported first by src/cli/main.ts, so that it is evaluated before any module that reads a setting (src/start-guard.ts). */
import { guardStart } from "../start-guard.ts";

/** A wrong setting is the caller's mistake: the CLI's usage exit code. */
export const startGuard = guardStart("booblik-cli", 2);
