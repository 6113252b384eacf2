/**
 * CRC32C for every batch and frame: Intel ISA-L's hardware CRC when `libisal.so.2` loads, the portable
 * slicing-by-16 TypeScript otherwise. The active implementation is `crc32cImplementation`, printed by
 * the broker at start-up and sent in METADATA.
 *
 * Which ISA-L function, and why not its dispatcher: `crc32_iscsi` (ISA-L's multibinary entry) picks
 * `crc32_iscsi_by16_10` on CPUs with AVX-512, and that returns without VZEROUPPER. The dirty upper
 * vector state it leaves makes the JavaScriptCore JIT code that follows run several times slower
 * until something clears it (one 11 KB memmove was not measurably slower): encoding a batch of 100
 * records of 100 B took 22-44 µs with the dispatcher, 6.7-9.0 µs with crc32_iscsi_01 (`bun
 * bench/storage.bench.ts stages`, docs/benchmarks.md "CRC32C and the vector state";
 * bench/crc.bench.ts).
 * libisal2 also exports the two pre-AVX variants with the same signature, `uint32_t f(unsigned char
 * *buffer, int len, unsigned int init)` (ISA-L's crc/crc32_iscsi_00.asm and _01.asm; Ceph links _00
 * the same way):
 *   - `crc32_iscsi_01`: SSE4.2 `crc32` on three interleaved streams, merged with PCLMULQDQ (legacy
 *     SSE encoding, xmm registers only: it never dirties the upper state);
 *   - `crc32_iscsi_00`: the SSE4.2 `crc32` instruction alone, no vector register at all.
 * (objdump of Debian's libisal.so.2 2.30: no VEX or EVEX instruction in either; test/ffi/crc32c.test.ts
 * checks the CPU's XINUSE bits after each.)
 * The dispatcher itself tests the same CPUID bits (SSE4.2, then PCLMULQDQ) before choosing these two,
 * so binding them directly is what ISA-L would run on a CPU without AVX-512. Chosen in this order,
 * each only when /proc/cpuinfo lists its instructions (calling one the CPU lacks would be SIGILL):
 * `isa-l-01` (sse4_2 and pclmulqdq), `isa-l-00` (sse4_2), then `isa-l-dispatcher` where the flags
 * cannot be read (ISA-L checks CPUID itself; other architectures, no /proc), then `portable`.
 *
 * ISA-L's functions work on the raw CRC register: they neither invert the initial value nor the
 * result. The standard CRC32C is `~f(buffer, length, 0xFFFFFFFF) >>> 0` (init 0 would give
 * 0x58E3FA20 for "123456789" instead of 0xE3069283). An empty range is answered here (CRC 0) without
 * a call; a range outside the view throws a RangeError instead of reading other memory.
 *
 * `BOOBLIK_CRC32C` forces one implementation: `isa-l-01`, `isa-l-00`, `isa-l-dispatcher` (the
 * AVX-512 path with its dirty state, for comparisons) or `portable`; unset or `auto` chooses as
 * above. A forced implementation this machine cannot run, an unknown or an empty value fails at load
 * with the reason (a silent fallback would print a name that is not what runs).
 *
 * Outside Bun (the client library on Node.js, docs/client.md "Node.js") there is no `bun:ffi`: only
 * `portable` is available, chosen at load time; `bun:ffi` is loaded through `import.meta.require`
 * only when `process.versions.bun` is set, so Node never resolves it. Both give the same CRCs
 * (test/node/node-client.test.ts compares them on the same bytes).
 */

import { readFileSync } from "node:fs";
import { BooblikError } from "../src/domain/errors.ts";
import { crc32cPortable } from "./crc32c-portable.ts";

export type Crc32cFunction = (bytes: Uint8Array, start: number, end: number) => number;
export type Crc32cImplementation = "isa-l-01" | "isa-l-00" | "isa-l-dispatcher" | "portable";

/** Preference order of `auto`. */
export const CRC32C_IMPLEMENTATIONS: readonly Crc32cImplementation[] = [
  "isa-l-01",
  "isa-l-00",
  "isa-l-dispatcher",
  "portable",
];

const ISAL_SYMBOLS: Record<Exclude<Crc32cImplementation, "portable">, string> = {
  "isa-l-01": "crc32_iscsi_01",
  "isa-l-00": "crc32_iscsi_00",
  "isa-l-dispatcher": "crc32_iscsi",
};

/** The CPU instructions (as /proc/cpuinfo names them) each direct variant executes. */
const REQUIRED_CPU_FLAGS: Record<"isa-l-01" | "isa-l-00", readonly string[]> = {
  "isa-l-01": ["sse4_2", "pclmulqdq"],
  "isa-l-00": ["sse4_2"],
};

/** The first CPU's flags from /proc/cpuinfo, or undefined where it cannot be read (not Linux). */
function cpuFlags(): Set<string> | undefined {
  try {
    const match = /^flags\s*:(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    return match === null ? undefined : new Set(match[1]!.trim().split(/\s+/));
  } catch {
    return undefined;
  }
}

type RawIsalCrc = (buffer: number | Uint8Array, length: number, init: number) => number;

/** ISA-L's `int len`. */
const ISAL_MAX_BYTES = 0x7fffffff;

/**
 * The bound libraries, held for the process's life: the functions below must never outlive their
 * FFI library object (Bun 1.4.4 keeps the compiled trampolines of a collected one, measured; a later
 * Bun need not).
 */
const heldLibraries: unknown[] = [];

type BunFfi = typeof import("bun:ffi");

/** `bun:ffi` under Bun; undefined elsewhere (Node.js), where only the portable implementation runs. */
const bunFfi: BunFfi | undefined =
  process.versions.bun === undefined ? undefined : (import.meta.require("bun:ffi") as BunFfi);

function bindIsal(symbol: string): Crc32cFunction | undefined {
  if (bunFfi === undefined) return undefined;
  const { dlopen, ptr } = bunFfi;
  let raw: RawIsalCrc;
  try {
    const library = dlopen("libisal.so.2", {
      [symbol]: { args: ["ptr", "i32", "u32"], returns: "u32" },
    });
    heldLibraries.push(library);
    raw = library.symbols[symbol] as unknown as RawIsalCrc;
  } catch {
    return undefined; // no libisal2, or a build without this symbol (e.g. not x86-64)
  }
  // Passing the typed array itself costs ~17-21 ns a call against ~31-35 ns through ptr() (measured
  // in one loop): used whenever the range starts at the view's start (every whole batch).
  return (bytes, start, end) => {
    const length = end - start;
    if (length <= 0) return 0;
    // Native code reads what it is told to: a range outside the view would read other memory (and a
    // NaN bound would reach ISA-L as length 0, i.e. a silent CRC of 0).
    if (!(start >= 0 && end <= bytes.length && length <= ISAL_MAX_BYTES)) {
      throw new RangeError(`CRC32C of bytes [${start}, ${end}) of a view of ${bytes.length} B`);
    }
    return ~raw(start === 0 ? bytes : ptr(bytes, start), length, 0xffffffff) >>> 0;
  };
}

/** Every implementation that can run here, keyed by name (always at least `portable`). */
function availableImplementations(): Map<Crc32cImplementation, Crc32cFunction> {
  const available = new Map<Crc32cImplementation, Crc32cFunction>();
  const flags = cpuFlags();
  for (const name of CRC32C_IMPLEMENTATIONS) {
    if (name === "portable") {
      available.set(name, crc32cPortable);
      continue;
    }
    if (name !== "isa-l-dispatcher" && !REQUIRED_CPU_FLAGS[name].every((flag) => flags?.has(flag))) continue;
    const bound = bindIsal(ISAL_SYMBOLS[name]);
    if (bound !== undefined) available.set(name, bound);
  }
  return available;
}

/** Every implementation this machine can run (for the cross-check test and the benchmark). */
export const crc32cAvailable: ReadonlyMap<Crc32cImplementation, Crc32cFunction> = availableImplementations();

function choose(): Crc32cImplementation {
  // Unset means auto; an empty value is refused like every other empty setting (operations.md).
  const wanted = process.env.BOOBLIK_CRC32C ?? "auto";
  if (wanted === "auto") {
    // The dispatcher only where the direct variants cannot be checked: it is what leaves the dirty state.
    return CRC32C_IMPLEMENTATIONS.find((name) => crc32cAvailable.has(name))!;
  }
  if (!(CRC32C_IMPLEMENTATIONS as readonly string[]).includes(wanted)) {
    throw new BooblikError(
      "INVALID_ARGUMENT",
      `BOOBLIK_CRC32C=${wanted}: expected auto, ${CRC32C_IMPLEMENTATIONS.join(", ")}`,
    );
  }
  const name = wanted as Crc32cImplementation;
  if (!crc32cAvailable.has(name)) {
    const needs =
      name === "isa-l-01" || name === "isa-l-00"
        ? `libisal.so.2 exporting ${ISAL_SYMBOLS[name]} and a CPU with ${REQUIRED_CPU_FLAGS[name].join(" and ")}`
        : "libisal.so.2 (apt-get install libisal2)";
    const where =
      bunFfi === undefined
        ? `; ISA-L needs Bun's bun:ffi, absent in this runtime (node ${process.versions.node})`
        : "";
    throw new BooblikError(
      "INVALID_ARGUMENT",
      `BOOBLIK_CRC32C=${name} cannot run here: it needs ${needs}${where}; available: ${[...crc32cAvailable.keys()].join(", ")}`,
    );
  }
  return name;
}

export const crc32cImplementation: Crc32cImplementation = choose();

/** Standard CRC32C of `bytes[start, end)`, unsigned 32-bit. */
export const crc32c: Crc32cFunction = crc32cAvailable.get(crc32cImplementation)!;

/**
 * The ISA-L implementation `auto` would pick (not the dispatcher unless nothing else binds), or
 * undefined without libisal2: for benchmarks that compare hardware against portable.
 */
export const crc32cIsal: Crc32cFunction | undefined =
  crc32cAvailable.get("isa-l-01") ??
  crc32cAvailable.get("isa-l-00") ??
  crc32cAvailable.get("isa-l-dispatcher");

export { crc32cPortable };

/**
 * Always false since the TinyCC VZEROUPPER wrapper was removed (no implementation clears the vector
 * state; the chosen ones never dirty it). Kept because bench/storage.bench.ts on branch fmt2-store
 * prints it in its headers; remove once that branch no longer reads it.
 */
export const crc32cClearsVectorState = false;
