/**
 * The consumer's per-record work on the CPU alone: what each consume mode of the client library
 * costs per record once a FETCH answer is in memory (no socket, no broker, no disk), next to the
 * check that the raw load generator (bench/load/consume.ts) does on the same bytes. The
 * counterpart of bench/producer-cpu.bench.ts for issue 13's "≥ 70 % of the raw generator".
 *
 *   bun bench/consumer-cpu.bench.ts [--baseline=<checkout>] [--slices=15] [--slice-ms=150] [--record-bytes=100,1024]
 *
 * The answers are built as the broker stores and sends them: framed entries of RecordBatch v2, 1,000
 * records per batch (bench/load/produce.ts's batches: null keys, random values, no headers), 1 MiB
 * of entries per answer (the Consumer's default maxBytes). Each answer is a fresh copy, as each
 * FETCH answer is a fresh buffer. Modes:
 *   check    checkFetchedEntries (both CRCs of every entry; what the raw generator does)
 *   views    check + forEachFetchedRecord (the reader's reused view, no object per record)
 *   objects  check + forEachConsumedRecord (a ConsumedRecord and its value view per record)
 *   iterate  for await (batch of consumer.batches()) + for (record of batch)
 *   records  for await (record of consumer)
 * `iterate` and `records` run a real Consumer over a stub client whose fetch() checks and returns
 * the next answer (as BooblikClient.fetch does, without the socket). Every mode reads every
 * record's value length. CPU time of the process (user + system, GC threads included) per record
 * over each slice. Both checkouts' modules are loaded into this one process and measured in short
 * slices, A (baseline) and B (this checkout) alternating, after a warm-up of each: on this shared
 * machine seven fresh processes of the same code ranged from 116.5 to 222.2 ns per record
 * (bench/producer-cpu.bench.ts, 2026-12-01, load average 3.2), and a first version of this bench
 * that ran each measurement in a fresh process could not separate the two checkouts; slices a
 * fraction of a second apart share the machine's state. Median (range) over the slices.
 */
import path from "node:path";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine } from "./lib/environment.ts";
import { median, medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/consumer-cpu.bench.ts [--baseline=<checkout>] [--slices=15] [--slice-ms=150] [--record-bytes=100,1024]",
  options: { baseline: "", slices: "15", "slice-ms": "150", "record-bytes": "100,1024" },
});
const slices = args.number("slices");
const sliceMs = args.number("slice-ms");
const MODES = ["check", "views", "objects", "iterate", "records"] as const;
type Mode = (typeof MODES)[number];
const ANSWER_BYTES = 1024 * 1024;
const BATCH_RECORDS = 1000;

interface Modules {
  encodeBatch: (records: { key: null; value: Uint8Array; timestamp: number }[]) => Uint8Array;
  stampBatch: (bytes: Uint8Array, start: number, baseOffset: number, leaderEpoch: number) => void;
  writeFramedEntry: (target: Uint8Array, position: number, batch: Uint8Array) => number;
  checkFetchedEntries: (
    bytes: Uint8Array,
    offset: number,
  ) => {
    completeBytes: number;
    firstOffset: number;
    nextFetchOffset: number;
    batchBounds: number[];
  };
  forEachFetchedRecord: (
    bytes: Uint8Array,
    bounds: readonly number[],
    from: number,
    reader: unknown,
    visit: (view: { valueLength: number }) => void,
  ) => number;
  forEachConsumedRecord: (
    topic: string,
    partition: number,
    batch: { fromOffset: number; count: number; records: Uint8Array; batchBounds: number[] },
    visit: (record: { value: Uint8Array | null }) => void,
  ) => number;
  RecordBatchReader: new () => unknown;
  Consumer: new (
    client: unknown,
    options: { topic: string; from: number; stopAtEnd: boolean },
  ) => AsyncIterable<{ value: Uint8Array | null }> & {
    batches(): AsyncIterable<Iterable<{ value: Uint8Array | null }> & { count: number }>;
  };
}

async function load(checkout: string): Promise<Modules> {
  const batch = await import(path.join(checkout, "src/record/batch.ts"));
  const entries = await import(path.join(checkout, "src/record/entries.ts"));
  const fetched = await import(path.join(checkout, "src/client/fetched.ts"));
  const consumer = await import(path.join(checkout, "src/client/consumer.ts"));
  return {
    encodeBatch: batch.encodeBatch,
    stampBatch: batch.stampBatch,
    writeFramedEntry: entries.writeFramedEntry,
    checkFetchedEntries: fetched.checkFetchedEntries,
    forEachFetchedRecord: fetched.forEachFetchedRecord,
    forEachConsumedRecord: consumer.forEachConsumedRecord,
    RecordBatchReader: batch.RecordBatchReader,
    Consumer: consumer.Consumer,
  };
}

/** One answer's framed entries, whole batches up to ANSWER_BYTES, stamped from offset 0; and its record count. */
function buildAnswer(m: Modules, recordBytes: number): { bytes: Uint8Array; records: number } {
  const now = Date.now();
  const batch = m.encodeBatch(
    Array.from({ length: BATCH_RECORDS }, () => ({
      key: null,
      value: crypto.getRandomValues(new Uint8Array(recordBytes)),
      timestamp: now,
    })),
  );
  const entryBytes = 8 + batch.length;
  const batches = Math.max(1, Math.floor(ANSWER_BYTES / entryBytes));
  const bytes = new Uint8Array(batches * entryBytes);
  let position = 0;
  for (let b = 0; b < batches; b++) {
    const copy = batch.slice();
    m.stampBatch(copy, 0, b * BATCH_RECORDS, -1);
    position = m.writeFramedEntry(bytes, position, copy);
  }
  return { bytes, records: batches * BATCH_RECORDS };
}

let valueBytes = 0;

/** A run of `mode` with `m`'s client: CPU ns per record over `milliseconds` of answers. */
function makeRunner(m: Modules, recordBytes: number, mode: Mode): (milliseconds: number) => Promise<number> {
  const answer = buildAnswer(m, recordBytes);
  return async (milliseconds: number): Promise<number> => {
    let records = 0;
    const cpuBefore = process.cpuUsage();
    const end = performance.now() + milliseconds;
    if (mode === "iterate" || mode === "records") {
      // A stub client: each fetch() is the next answer, a fresh copy, checked as BooblikClient.fetch checks it.
      let answers = 0;
      const stub = {
        fetch: async (_topic: string, _partition: number, offset: number) => {
          if (performance.now() >= end)
            return { recordCount: 0, nextOffset: offset, records: new Uint8Array(0), batchBounds: [] };
          answers++;
          const bytes = answer.bytes.slice();
          // Offsets of every answer start at 0: ask for 0, then hand the records out as the next ones.
          const checked = m.checkFetchedEntries(bytes, 0);
          return {
            logStartOffset: 0,
            nextOffset: offset + answer.records,
            records: bytes.subarray(0, checked.completeBytes),
            firstOffset: offset,
            recordCount: answer.records,
            batchBounds: checked.batchBounds,
          };
        },
      };
      // Each answer's records carry offsets from 0, so every consumer starts at 0 and reads one answer.
      for (;;) {
        const consumer = new m.Consumer(stub, { topic: "t", from: 0, stopAtEnd: true });
        let seen = 0;
        if (mode === "records") {
          for await (const record of consumer) {
            valueBytes += record.value?.length ?? 0;
            if (++seen === answer.records) break;
          }
        } else {
          for await (const batch of consumer.batches()) {
            for (const record of batch) valueBytes += record.value?.length ?? 0;
            seen += batch.count;
            break;
          }
        }
        records += seen;
        if (seen === 0 || performance.now() >= end) break;
      }
      if (answers === 0) throw new Error("no answer consumed");
    } else {
      const reader = new m.RecordBatchReader();
      while (performance.now() < end) {
        const bytes = answer.bytes.slice();
        const checked = m.checkFetchedEntries(bytes, 0);
        if (mode === "check") records += checked.nextFetchOffset;
        else if (mode === "views")
          records += m.forEachFetchedRecord(bytes, checked.batchBounds, 0, reader, (view) => {
            if (view.valueLength > 0) valueBytes += view.valueLength;
          });
        else
          records += m.forEachConsumedRecord(
            "t",
            0,
            { fromOffset: 0, count: answer.records, records: bytes, batchBounds: checked.batchBounds },
            (record) => {
              valueBytes += record.value?.length ?? 0;
            },
          );
      }
    }
    const cpu = process.cpuUsage(cpuBefore);
    return ((cpu.user + cpu.system) * 1e3) / records;
  };
}

function summary(values: number[]): string {
  if (values.length === 0) return "—";
  return medianRange(values, 1);
}

const baseline = args.text("baseline");
const here = path.resolve(import.meta.dir, "..");
const modulesB = await load(here);
const modulesA = baseline === "" ? undefined : await load(path.resolve(baseline));
const sizes = args
  .text("record-bytes")
  .split(",")
  .map((text) => Number(text));
console.log(describeMachine("none (CPU only)"));
console.log(
  `Consumer modes against answers in memory: framed entries of ${BATCH_RECORDS}-record batches (null keys, no headers), ` +
    `${ANSWER_BYTES / 1024} KiB per answer, a fresh copy each; CPU time per record, ${slices} slices of ${sliceMs} ms ` +
    "each after a warm-up of 500 ms, in this one process" +
    (baseline === "" ? "" : `; A = ${baseline}, B = this checkout, alternating slice by slice`) +
    "\n",
);
console.log(
  "| record B | mode | A CPU ns/record median (range) | B CPU ns/record median (range) | B/A | B / check |",
);
console.log("|---|---|---|---|---|---|");
for (const recordBytes of sizes) {
  const results = new Map<Mode, { a: number[]; b: number[] }>();
  for (const mode of MODES) {
    const a: number[] = [];
    const b: number[] = [];
    const runA = modulesA === undefined ? undefined : makeRunner(modulesA, recordBytes, mode);
    const runB = makeRunner(modulesB, recordBytes, mode);
    await runA?.(500);
    await runB(500);
    for (let slice = 0; slice < slices; slice++) {
      if (slice % 2 === 0) {
        if (runA !== undefined) a.push(await runA(sliceMs));
        b.push(await runB(sliceMs));
      } else {
        b.push(await runB(sliceMs));
        if (runA !== undefined) a.push(await runA(sliceMs));
      }
    }
    results.set(mode, { a, b });
  }
  const check = median(results.get("check")!.b);
  for (const mode of MODES) {
    const { a, b } = results.get(mode)!;
    const ratio = a.length === 0 ? "—" : (median(b) / median(a)).toFixed(2);
    console.log(
      `| ${recordBytes} | ${mode} | ${summary(a)} | ${summary(b)} | ${ratio} | ${(median(b) / check).toFixed(2)} |`,
    );
  }
}
if (valueBytes === 0) throw new Error("no value read");
