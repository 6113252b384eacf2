/**
 * CRC32C: both implementations pass the standard check value and the RFC 3720 (iSCSI) vectors, and
 * agree with each other on thousands of random buffers of random lengths and alignments. The active
 * implementation is observable and follows BOOBLIK_CRC32C.
 */

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import {
  type Crc32cFunction,
  crc32c,
  crc32cClearsVectorState,
  crc32cImplementation,
  crc32cIsal,
  crc32cPortable,
} from "../../ffi/crc32c.ts";
import { Random, testSeed } from "../helpers/random.ts";

const SEED = testSeed();

// RFC 3720 appendix B.4 test vectors, plus the usual "123456789" check value.
const ISCSI_READ_PDU = [
  0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];
const VECTORS: [string, Uint8Array, number][] = [
  ["123456789", new TextEncoder().encode("123456789"), 0xe3069283],
  ["32 bytes of zeros", new Uint8Array(32), 0x8a9136aa],
  ["32 bytes of 0xff", new Uint8Array(32).fill(0xff), 0x62a8ab43],
  ["32 incrementing bytes", Uint8Array.from({ length: 32 }, (_, i) => i), 0x46dd794e],
  ["32 decrementing bytes", Uint8Array.from({ length: 32 }, (_, i) => 31 - i), 0x113fdb5c],
  ["an iSCSI read command PDU", Uint8Array.from(ISCSI_READ_PDU), 0xd9963a56],
  ["empty", new Uint8Array(0), 0],
];

const implementations: [string, Crc32cFunction | undefined][] = [
  ["portable", crc32cPortable],
  ["isa-l", crc32cIsal],
];

describe.each(implementations)("crc32c, %s", (name, implementation) => {
  test.skipIf(implementation === undefined)("standard and RFC 3720 vectors", () => {
    for (const [what, bytes, expected] of VECTORS) {
      expect(implementation!(bytes, 0, bytes.length), `${name}: ${what}`).toBe(expected);
    }
  });

  test.skipIf(implementation === undefined)(
    "a sub-range of a larger buffer is checksummed on its own",
    () => {
      const inner = new TextEncoder().encode("123456789");
      const outer = new Uint8Array(100).fill(0xaa);
      outer.set(inner, 37);
      expect(implementation!(outer, 37, 46)).toBe(0xe3069283);
      expect(implementation!(outer.subarray(30), 7, 16)).toBe(0xe3069283);
    },
  );
});

// Only one implementation without libisal2: the cross-check is reported skipped there, and runs
// wherever libisal2 is installed (CI installs it).
test.skipIf(crc32cIsal === undefined)(`isa-l and portable agree on random buffers (seed ${SEED})`, () => {
  const random = new Random(SEED);
  for (let i = 0; i < 5000; i++) {
    const length = random.next() < 0.9 ? random.int(0, 300) : random.int(301, 70_000);
    const start = random.int(0, 15);
    const bytes = random.bytes(start + length + random.int(0, 15));
    expect(crc32cIsal!(bytes, start, start + length)).toBe(crc32cPortable(bytes, start, start + length));
  }
});

test("the active implementation is observable and is ISA-L when it loads", () => {
  expect(["isa-l", "portable"]).toContain(crc32cImplementation);
  if (process.env.BOOBLIK_CRC32C !== "portable") {
    expect(crc32cImplementation).toBe(crc32cIsal === undefined ? "portable" : "isa-l");
  }
  expect(crc32c(VECTORS[0]![1], 0, 9)).toBe(0xe3069283);
});

test("BOOBLIK_CRC32C=portable selects the portable implementation", async () => {
  const script = `import { crc32cImplementation } from ${JSON.stringify(path.resolve(import.meta.dir, "../../ffi/crc32c.ts"))}; console.log(crc32cImplementation);`;
  const child = Bun.spawn([process.execPath, "-e", script], {
    env: { ...process.env, BOOBLIK_CRC32C: "portable" },
    stdout: "pipe",
  });
  expect((await new Response(child.stdout).text()).trim()).toBe("portable");
  expect(await child.exited).toBe(0);
});

test("with BOOBLIK_CRC32C_VZEROUPPER=on on an AVX machine with ISA-L, the CRC clears the vector state", () => {
  const avx = /^flags\s*:.*\bavx\b/m.test(fs.readFileSync("/proc/cpuinfo", "utf8"));
  // Where either is missing the plain path is right (no AVX: VZEROUPPER would be SIGILL).
  expect(crc32cClearsVectorState).toBe(
    process.env.BOOBLIK_CRC32C_VZEROUPPER === "on" && avx && crc32cIsal !== undefined,
  );
});
