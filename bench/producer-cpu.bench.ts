/**
 * The client's fast paths on the CPU alone: `Producer.write()` (and `await accept()`, one row) record by record against a
 * stub client whose METADATA and PRODUCE answer at once (no socket, no broker, no disk), so the
 * figure is what the library itself costs per record: partitioning, batching, record encoding and
 * the batch CRC. bench/ab.bench.ts --load=client measures the same path against a real broker.
 *
 *   bun bench/producer-cpu.bench.ts [--baseline=<checkout>] [--seconds=2] [--rounds=5]
 *
 * With `--baseline` (a checkout of an earlier commit, `git worktree add /tmp/base <commit>` and
 * `bun install` there) the value-only rows run that checkout's Producer too, A and B alternating,
 * each run a fresh process. Rows: record (value) size × shape (value only; a 16-byte key and one
 * 16-byte header, this checkout only: format 1 had neither) with the Producer's defaults (batches
 * of 256 KiB, 4 in flight, one partition given per write). Median and range of ns per record over
 * `--rounds`. No disk is touched.
 */
import path from "node:path";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine } from "./lib/environment.ts";
import { median, medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/producer-cpu.bench.ts [--baseline=<checkout>] [--seconds=2] [--rounds=5] (--child=<checkout>,<recordBytes>,<shape> internal)",
  options: { baseline: "", seconds: "2", rounds: "5", child: "" },
});
const seconds = args.number("seconds");
type Shape = "value" | "keyed";
/**
 * How records go in: `write()`; `await accept()` per record (its fast path when the topic is known);
 * or `write()` with an `await` per record (what a loop of awaited calls costs at the least).
 */
type Call = "write" | "accept" | "write-await";
/** The Producer's defaults, passed explicitly so that the printed figures name what was measured. */
const BATCH_BYTES = 256 * 1024;
const IN_FLIGHT = 4;

/** One run in this process: CPU ns per record of write() for `checkout`'s Producer. */
async function measure(checkout: string, recordBytes: number, shape: Shape, call: Call): Promise<number> {
  const module = (await import(path.join(checkout, "src/client/producer.ts"))) as {
    Producer: new (
      client: unknown,
      options: { batchBytes: number; maxInFlightBatches: number },
    ) => {
      write(topic: string, value: unknown, options?: object): boolean;
      accept(topic: string, value: unknown, options?: object): unknown;
      drained(): Promise<void>;
      flush(): Promise<void>;
    };
  };
  const stub = {
    metadata: async () => ({ topics: [{ partitions: [{}], config: { segmentBytes: 2 ** 30 } }] }),
    produce: async () => ({ firstOffset: 0, durability: "appended", logAppendTimeMs: -1 }),
    // The idempotent producer (the default) asks for a producer id before its first batch.
    initProducerId: async () => ({ producerId: 1, producerEpoch: 0 }),
  };
  const producer = new module.Producer(stub, { batchBytes: BATCH_BYTES, maxInFlightBatches: IN_FLIGHT });
  const values = Array.from({ length: 64 }, () => crypto.getRandomValues(new Uint8Array(recordBytes)));
  const key = crypto.getRandomValues(new Uint8Array(16));
  const headers = [{ key: "trace-id-0123456", value: crypto.getRandomValues(new Uint8Array(16)) }];
  const records = values.map((value) => ({ key, value, headers }));
  const options = { partition: 0 };
  const run = async (milliseconds: number): Promise<number> => {
    let written = 0;
    const cpuBefore = process.cpuUsage();
    const start = performance.now();
    const end = start + milliseconds;
    while (performance.now() < end) {
      if (call === "accept") {
        for (let i = 0; i < 4096; i++)
          await producer.accept("t", shape === "value" ? values[i & 63] : records[i & 63], options);
      } else if (call === "write-await") {
        for (let i = 0; i < 4096; i++) {
          const value = shape === "value" ? values[i & 63] : records[i & 63];
          await (producer.write("t", value, options) ? undefined : producer.drained());
        }
      } else {
        for (let i = 0; i < 4096; i++) {
          const value = shape === "value" ? values[i & 63] : records[i & 63];
          if (!producer.write("t", value, options)) await producer.drained();
        }
      }
      written += 4096;
      // A turn now and then, as an application's loop has: acknowledgements settle, writers return.
      if ((written & 0xffff) === 0) await Promise.resolve();
    }
    await producer.flush();
    // CPU time, not wall time: on a shared machine a run's wall time is mostly its share of the
    // cores, its CPU time what the records cost (GC threads included).
    const cpu = process.cpuUsage(cpuBefore);
    return ((cpu.user + cpu.system) * 1e3) / written;
  };
  await run(seconds * 250); // warm-up: a quarter of the run
  return run(seconds * 1000);
}

const child = args.text("child");
if (child !== "") {
  const [checkout, recordBytes, shape, call] = child.split(",");
  console.log(
    JSON.stringify({
      nsPerRecord: await measure(checkout!, Number(recordBytes), shape as Shape, (call ?? "write") as Call),
    }),
  );
  process.exit(0);
}

function runChild(checkout: string, recordBytes: number, shape: Shape, call: Call): number {
  const result = Bun.spawnSync(
    [
      process.execPath,
      import.meta.path,
      `--child=${checkout},${recordBytes},${shape},${call}`,
      `--seconds=${seconds}`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  if (!result.success) throw new Error(`child run for ${checkout} failed (exit ${result.exitCode})`);
  return (JSON.parse(result.stdout.toString()) as { nsPerRecord: number }).nsPerRecord;
}

function summary(values: number[]): string {
  if (values.length === 0) return "—";
  const rate = (ns: number) => `${(1e3 / ns).toFixed(2)} M/s`;
  return `${medianRange(values, 1)} ns, ${rate(median(values))}`;
}

const rounds = args.number("rounds");
const baseline = args.text("baseline");
const here = path.resolve(import.meta.dir, "..");
console.log(describeMachine("none (CPU only)"));
console.log(
  `Producer.write() and accept() against a stub client, CPU time per record; batches of ${BATCH_BYTES / 1024} KiB, ${IN_FLIGHT} in flight, ` +
    `${seconds} s per run after a warm-up, ${rounds} rounds, each run a fresh process` +
    (baseline === "" ? "" : `; A = ${baseline}, B = this checkout, alternating`) +
    "\n",
);
console.log(
  "| record B | shape, call | A CPU ns/record median (range), records per CPU second | B CPU ns/record median (range), records per CPU second | B/A CPU per record |",
);
console.log("|---|---|---|---|---|");
const rows: { recordBytes: number; shape: Shape; call: Call }[] = [
  { recordBytes: 100, shape: "value", call: "write" },
  { recordBytes: 1024, shape: "value", call: "write" },
  { recordBytes: 100, shape: "keyed", call: "write" },
  { recordBytes: 100, shape: "value", call: "accept" },
  { recordBytes: 100, shape: "value", call: "write-await" },
];
for (const row of rows) {
  const a: number[] = [];
  const b: number[] = [];
  const withBaseline = baseline !== "" && row.shape === "value";
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ["A", "B"] : ["B", "A"];
    for (const which of order) {
      if (which === "A" && withBaseline)
        a.push(runChild(path.resolve(baseline), row.recordBytes, row.shape, row.call));
      if (which === "B") b.push(runChild(here, row.recordBytes, row.shape, row.call));
    }
  }
  const shape =
    (row.shape === "value" ? "value only" : "16 B key + one header (16 B key, 16 B value)") +
    (row.call === "accept"
      ? ", await accept() per record"
      : row.call === "write-await"
        ? ", write() + an await per record"
        : ", write()");
  const ratio = a.length === 0 ? "—" : (median(b) / median(a)).toFixed(2);
  console.log(`| ${row.recordBytes} | ${shape} | ${summary(a)} | ${summary(b)} | ${ratio} |`);
}
