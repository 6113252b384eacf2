/**
 * CRC32C for every record: hardware-accelerated through Intel ISA-L when `libisal.so.2` loads, the
 * portable slicing-by-16 TypeScript otherwise. Which one is active is observable as
 * `crc32cImplementation` and is printed by the broker at start-up.
 *
 * ISA-L's `crc32_iscsi(buf, len, init)` works on the raw CRC register: it neither inverts the initial
 * value nor the result. The standard CRC32C is therefore `~crc32_iscsi(buf, len, 0xFFFFFFFF) >>> 0`
 * (init 0 would give 0x58E3FA20 for "123456789" instead of 0xE3069283). Measured here: 16-24 ns for
 * 100 B and 41-51 GB/s on 1 MiB, against 73-95 ns and ~2 GB/s for the portable code (bun-platform §5).
 *
 * `BOOBLIK_CRC32C=portable` forces the portable implementation (for comparisons and tests).
 */

import { cc, dlopen, ptr } from "bun:ffi";
import { readFileSync } from "node:fs";
import path from "node:path";
import { crc32cPortable } from "./crc32c-portable.ts";

export type Crc32cFunction = (bytes: Uint8Array, start: number, end: number) => number;
export type Crc32cImplementation = "isa-l" | "portable";

type RawCrc = (buffer: number | Uint8Array, length: number) => number;

const compiledLibraries: unknown[] = [];

/** Whether this CPU has AVX (and so VZEROUPPER): /proc/cpuinfo's flags. */
function cpuHasAvx(): boolean {
  try {
    return /^flags\s*:.*\bavx\b/m.test(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    return false;
  }
}

/**
 * ISA-L through the TinyCC wrapper of ffi/crc32c-isal.c, which clears the vector state on return
 * (see that file for the measured why). Undefined where it cannot be had: no AVX, no libisal, or no
 * compiler source at run time (a single executable built with `bun build --compile` does not carry
 * the .c file); the plain dlopen path then serves.
 */
function loadIsalClearingVectorState(): RawCrc | undefined {
  // Opt-in until explained: one full-suite run saw this path return 0 for one random buffer (the
  // cross-check in test/ffi/crc32c.test.ts); holding the compiled library (below) may be the cure,
  // but it was not reproduced, and a wrong CRC must never be the price of speed.
  if (process.env.BOOBLIK_CRC32C_VZEROUPPER !== "on" || !cpuHasAvx()) return undefined;
  try {
    const library = cc({
      source: path.join(import.meta.dir, "crc32c-isal.c"),
      symbols: {
        booblik_crc32c_load: { args: [], returns: "int" },
        booblik_crc32c: { args: ["ptr", "i32"], returns: "u32" },
      },
    });
    if (library.symbols.booblik_crc32c_load() !== 1) return undefined;
    // Held for the process's life: TinyCC's compiled code lives as long as the library object (a
    // collected one freed it, and the CRC then returned 0 — seen once in the random cross-check).
    compiledLibraries.push(library);
    return library.symbols.booblik_crc32c as unknown as RawCrc;
  } catch {
    return undefined;
  }
}

const clearing = loadIsalClearingVectorState();

/** True when the ISA-L path clears the vector state after each call (ffi/crc32c-isal.c). */
export const crc32cClearsVectorState = clearing !== undefined;

/**
 * Below this, ISA-L stays on its small path and leaves the vector state clean (probed one size at a
 * time: 64 B no effect, 256 B and up the 5x slowdown; the gap is covered conservatively), and the
 * plain call is cheaper: the TinyCC wrapper cost about 40 ns more per 100-byte call here.
 */
const CLEARING_MIN_BYTES = 128;

function loadIsal(): Crc32cFunction | undefined {
  let symbols: { crc32_iscsi: (buffer: number | Uint8Array, length: number, init: number) => number };
  try {
    symbols = dlopen("libisal.so.2", {
      crc32_iscsi: { args: ["ptr", "i32", "u32"], returns: "u32" },
    }).symbols;
  } catch {
    return undefined;
  }
  const crc32Iscsi = symbols.crc32_iscsi as unknown as (
    buffer: number | Uint8Array,
    length: number,
    init: number,
  ) => number;
  // Passing the typed array itself costs ~17-21 ns a call against ~31-35 ns through ptr() (measured
  // in one loop): use it whenever the range starts at the view's start (every record a producer frames).
  if (clearing === undefined) {
    return (bytes, start, end) =>
      end <= start ? 0 : ~crc32Iscsi(start === 0 ? bytes : ptr(bytes, start), end - start, 0xffffffff) >>> 0;
  }
  return (bytes, start, end) => {
    const length = end - start;
    if (length <= 0) return 0;
    const at = start === 0 ? bytes : ptr(bytes, start);
    return length < CLEARING_MIN_BYTES
      ? ~crc32Iscsi(at, length, 0xffffffff) >>> 0
      : clearing(at, length) >>> 0;
  };
}

/** ISA-L's CRC32C, or undefined when libisal.so.2 is not installed. */
export const crc32cIsal: Crc32cFunction | undefined = loadIsal();
export { crc32cPortable };

const forcePortable = process.env.BOOBLIK_CRC32C === "portable";

export const crc32cImplementation: Crc32cImplementation =
  crc32cIsal !== undefined && !forcePortable ? "isa-l" : "portable";

/** Standard CRC32C of `bytes[start, end)`, unsigned 32-bit. */
export const crc32c: Crc32cFunction =
  crc32cImplementation === "isa-l" && crc32cIsal !== undefined ? crc32cIsal : crc32cPortable;
