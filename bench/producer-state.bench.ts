/**
 * What the idempotent-producer check (src/broker/producer-state.ts) costs a PRODUCE on the CPU
 * alone: no disk, no socket. Per request of one batch, in ns:
 *   - plain: a batch without a producer id (what `Partition.append` now does for every such batch);
 *   - idempotent: a batch of a known producer, checked and recorded (the next sequence each time);
 *   - duplicate: a resend of one of its last 5 batches, found and answered.
 * The three rows are interleaved round by round (`--rounds`), each for `--seconds`; median and range
 * printed. The batch size does not matter to the check (it reads the header only); it is printed.
 *
 *   bun bench/producer-state.bench.ts [--seconds=0.5] [--rounds=5] [--producers=1000]
 */
import { ProducerStateTable } from "../src/broker/producer-state.ts";
import { encodeBatch } from "../src/record/batch.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, nowMs } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage: "bun bench/producer-state.bench.ts [--seconds=0.5] [--rounds=5] [--producers=1000]",
  options: { seconds: "0.5", rounds: "5", producers: "1000" },
});
const SECONDS = args.number("seconds");
const ROUNDS = args.number("rounds");
const PRODUCERS = args.number("producers");
const RECORDS = 100;
const VALUE_BYTES = 100;

const records = Array.from({ length: RECORDS }, () => ({
  key: null,
  value: new Uint8Array(VALUE_BYTES),
  timestamp: 1_700_000_000_000,
}));
const plain = encodeBatch(records);
/** One batch per producer id, rewritten in place with the next sequence (the CRC is not checked here). */
const idempotent = encodeBatch(records, { producerId: 0, producerEpoch: 0, baseSequence: 0 });
const view = new DataView(idempotent.buffer, idempotent.byteOffset, idempotent.byteLength);

function run(row: "plain" | "idempotent" | "duplicate"): number {
  const table = new ProducerStateTable();
  // Every producer known, with 5 batches remembered.
  const sequences = new Array<number>(PRODUCERS).fill(0);
  let offset = 0;
  for (let round = 0; round < 5; round++) {
    for (let producer = 0; producer < PRODUCERS; producer++) {
      view.setUint32(47, producer);
      view.setInt32(53, sequences[producer]!);
      const check = table.check(idempotent);
      if (check.kind === "append") table.record(check.pending, offset, 0);
      offset += RECORDS;
      sequences[producer]! += RECORDS;
    }
  }
  let calls = 0;
  const start = nowMs();
  const endMs = start + SECONDS * 1000;
  let producer = 0;
  while (nowMs() < endMs) {
    for (let i = 0; i < 1000; i++) {
      if (row === "plain") {
        table.check(plain);
      } else {
        view.setUint32(47, producer);
        if (row === "idempotent") {
          view.setInt32(53, sequences[producer]!);
          const check = table.check(idempotent);
          if (check.kind !== "append") throw new Error(`expected an append, got ${check.kind}`);
          table.record(check.pending, offset, 0);
          offset += RECORDS;
          sequences[producer]! += RECORDS;
        } else {
          view.setInt32(53, sequences[producer]! - RECORDS * 3);
          if (table.check(idempotent).kind !== "duplicate") throw new Error("expected a duplicate");
        }
        producer = producer + 1 === PRODUCERS ? 0 : producer + 1;
      }
    }
    calls += 1000;
  }
  return ((nowMs() - start) * 1e6) / calls;
}

console.log(describeMachine("none (CPU only)"));
console.log(
  `one batch of ${RECORDS} records of ${VALUE_BYTES} B per request, ${PRODUCERS} known producers, ${ROUNDS} rounds of ${SECONDS} s, rows interleaved\n`,
);
const results: Record<string, number[]> = { plain: [], idempotent: [], duplicate: [] };
for (let round = 0; round < ROUNDS; round++)
  for (const row of ["plain", "idempotent", "duplicate"] as const) results[row]!.push(run(row));
console.log("| request | ns per request, median (range) |\n|---|---|");
for (const [row, values] of Object.entries(results)) {
  console.log(`| ${row} | ${medianRange(values, 0)} |`);
}
