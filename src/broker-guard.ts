/** Imported first by src/main.ts, so that it is evaluated before any module that reads a setting (src/start-guard.ts). */
import { guardStart } from "./start-guard.ts";

export const startGuard = guardStart("booblik", 1);
