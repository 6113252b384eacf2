/**
 * CRC32C implementations side by side, and what each costs the JavaScript that runs after it.
 *
 *   bun bench/crc.bench.ts [--rounds=5] [--seconds=0.3]
 *
 * Why child processes: ISA-L's dispatcher (`isa-l-dispatcher`, AVX-512 on this machine) leaves the
 * upper vector state dirty, and that state is per thread and lasts until something clears it: one
 * call slows everything that follows in the process. So every (implementation, round) runs in a fresh
 * `bun` process with BOOBLIK_CRC32C set to it (which also exercises the switch), implementations
 * interleaved round by round (01, 00, dispatcher, dispatcher + VZEROUPPER, portable, 01, …), and the
 * table prints the median and range over rounds. "dispatcher + VZEROUPPER" runs the dispatcher and
 * then bench/lib/vzeroupper.c (TinyCC) after each CRC: what the removed opt-in wrapper did.
 *
 * Per child, in this order (each for `--seconds` after a warm-up of a quarter of that):
 *   (a) ns per CRC of 100 B, 11,033 B (a v2 batch of 100 records of 100 B) and 1 MiB;
 *   (b) ns per `Uint8Array.set` of 11,033 B after one CRC of 11,033 B (the dirty-state effect), and
 *       the same with a CRC before every copy (the framing pattern: CRC, then copy);
 *   (c) µs per batch of the format-2 append pipeline without disk: `RecordBatchWriter` encodes 100
 *       records of 100 B (random values, no key, no headers; its batch CRC included) and
 *       `writeFramedEntry` frames it (frame CRC + copy).
 * No disk is touched, so the tmpfs refusal of the other benchmarks does not apply.
 */

import { cc } from "bun:ffi";
import path from "node:path";
import { type Crc32cImplementation, crc32c, crc32cAvailable, crc32cImplementation } from "../ffi/crc32c.ts";
import { RecordBatchWriter } from "../src/record/batch.ts";
import { writeFramedEntry } from "../src/record/entries.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage: "bun bench/crc.bench.ts [--rounds=5] [--seconds=0.3]",
  options: { rounds: "5", seconds: "0.3", child: "", vzeroupper: "" },
});
const SECONDS = args.number("seconds");
const BATCH_RECORDS = 100;
const RECORD_BYTES = 100;
const BATCH_BYTES = 11_033; // a v2 batch of 100 value-only records of 100 B (docs/benchmarks.md)

interface ChildResult {
  crcNs: Record<string, number>;
  copyAfterOneCrcNs: number;
  crcThenCopyNs: number;
  encodeFrameUs: number;
}

let sink = 0;

/** Runs `body` (which does `unit` units of work per call) for SECONDS; returns ns per unit. */
function timeNs(body: () => void, unit = 1): number {
  const warmUntil = Bun.nanoseconds() + SECONDS * 0.25e9;
  while (Bun.nanoseconds() < warmUntil) body();
  let calls = 0;
  const start = Bun.nanoseconds();
  const until = start + SECONDS * 1e9;
  let now = start;
  while (now < until) {
    for (let i = 0; i < 16; i++) body();
    calls += 16;
    now = Bun.nanoseconds();
  }
  return (now - start) / calls / unit;
}

function child(withVzeroupper: boolean): ChildResult {
  const clear = withVzeroupper
    ? cc({
        source: path.join(import.meta.dir, "lib", "vzeroupper.c"),
        symbols: { booblik_vzeroupper: { args: [], returns: "int" } },
      }).symbols.booblik_vzeroupper
    : undefined;
  const crc = (bytes: Uint8Array): number => {
    const value = crc32c(bytes, 0, bytes.length);
    if (clear !== undefined) clear();
    return value;
  };
  const small = crypto.getRandomValues(new Uint8Array(100));
  const batchSized = crypto.getRandomValues(new Uint8Array(BATCH_BYTES));
  const large = new Uint8Array(1 << 20);
  for (let at = 0; at < large.length; at += 65536) crypto.getRandomValues(large.subarray(at, at + 65536));
  const target = new Uint8Array(BATCH_BYTES + 64);

  // (b) first, so that nothing but this one CRC has run a large ISA-L call in the process before it.
  sink ^= crc(batchSized);
  const copyAfterOneCrcNs = timeNs(() => target.set(batchSized, 8));
  const crcThenCopyNs = timeNs(() => {
    sink ^= crc(batchSized);
    target.set(batchSized, 8);
  });

  // (c)
  const values = Array.from({ length: BATCH_RECORDS }, () =>
    crypto.getRandomValues(new Uint8Array(RECORD_BYTES)),
  );
  const writer = new RecordBatchWriter();
  const frameTarget = new Uint8Array(64 * 1024);
  const encodeFrameUs =
    timeNs(() => {
      writer.begin();
      const timestamp = Date.now();
      for (let r = 0; r < BATCH_RECORDS; r++) writer.add({ key: null, value: values[r]!, timestamp });
      const batch = writer.finish();
      if (clear !== undefined) clear(); // the batch CRC inside finish() ran the raw implementation
      sink ^= writeFramedEntry(frameTarget, 0, batch);
      if (clear !== undefined) clear();
    }) / 1000;

  // (a)
  const crcNs: Record<string, number> = {};
  for (const [name, bytes] of [
    ["100 B", small],
    ["11,033 B", batchSized],
    ["1 MiB", large],
  ] as const) {
    crcNs[name] = timeNs(() => {
      sink ^= crc(bytes);
    });
  }
  return { crcNs, copyAfterOneCrcNs, crcThenCopyNs, encodeFrameUs };
}

if (args.text("child") !== "") {
  const result = child(args.text("vzeroupper") === "on");
  if (crc32cImplementation !== args.text("child")) throw new Error("BOOBLIK_CRC32C was not applied");
  console.log(JSON.stringify({ ...result, sink }));
  process.exit(0);
}

interface Variant {
  label: string;
  implementation: Crc32cImplementation;
  vzeroupper: boolean;
}
const variants: Variant[] = [];
for (const implementation of crc32cAvailable.keys()) {
  variants.push({ label: implementation, implementation, vzeroupper: false });
  if (implementation === "isa-l-dispatcher") {
    variants.push({ label: "isa-l-dispatcher + VZEROUPPER", implementation, vzeroupper: true });
  }
}

const rounds = args.number("rounds");
console.log(`${describeMachine("none (CPU only)")}`);
console.log(
  `\`bun bench/crc.bench.ts --rounds=${rounds} --seconds=${SECONDS}\`: ${rounds} rounds, implementations interleaved, ` +
    `each (implementation, round) in a fresh process; median (min-max) over rounds. ` +
    `Batch = ${BATCH_RECORDS} records of ${RECORD_BYTES} B random values, no key, no headers (${BATCH_BYTES} B).\n`,
);

const results = new Map<string, ChildResult[]>(variants.map((v) => [v.label, []]));
for (let round = 0; round < rounds; round++) {
  for (const variant of variants) {
    const run = Bun.spawnSync(
      [
        process.execPath,
        import.meta.path,
        `--child=${variant.implementation}`,
        `--vzeroupper=${variant.vzeroupper ? "on" : "off"}`,
        `--seconds=${SECONDS}`,
      ],
      { env: { ...process.env, BOOBLIK_CRC32C: variant.implementation }, stdout: "pipe", stderr: "pipe" },
    );
    if (run.exitCode !== 0) {
      throw new Error(`${variant.label} failed: ${run.stderr.toString()}`);
    }
    results.get(variant.label)!.push(JSON.parse(run.stdout.toString()) as ChildResult);
  }
}

console.log(
  "| implementation | CRC 100 B, ns | CRC 11,033 B, ns | CRC 1 MiB, µs | copy 11,033 B after one CRC, ns | CRC + copy 11,033 B, ns | encode + frame a batch, µs |",
);
console.log("|---|---|---|---|---|---|---|");
for (const variant of variants) {
  const rows = results.get(variant.label)!;
  console.log(
    `| ${variant.label} | ${medianRange(
      rows.map((r) => r.crcNs["100 B"]!),
      0,
    )} | ${medianRange(
      rows.map((r) => r.crcNs["11,033 B"]!),
      0,
    )} | ${medianRange(
      rows.map((r) => r.crcNs["1 MiB"]! / 1000),
      1,
    )} | ${medianRange(
      rows.map((r) => r.copyAfterOneCrcNs),
      0,
    )} | ${medianRange(
      rows.map((r) => r.crcThenCopyNs),
      0,
    )} | ${medianRange(
      rows.map((r) => r.encodeFrameUs),
      1,
    )} |`,
  );
}
const oneMiB = (ns: number) => ((1 << 20) / ns).toFixed(1);
console.log("\nThroughput on 1 MiB (median), GB/s:");
for (const variant of variants) {
  const values = results
    .get(variant.label)!
    .map((r) => r.crcNs["1 MiB"]!)
    .sort((a, b) => a - b);
  console.log(`- ${variant.label}: ${oneMiB(values[values.length >> 1]!)}`);
}
