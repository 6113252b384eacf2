/**
 * A/B of two broker checkouts on the same machine, in one run: did a change make the broker slower?
 *
 *   bun bench/ab.bench.ts --baseline=<another checkout> [--seconds=4] [--rounds=3]
 *
 * The baseline is a checkout of an earlier commit (`git worktree add /tmp/base <commit>`, then
 * `bun install` there). Both brokers speak the same protocol; the load generator is this checkout's
 * bench/load/produce.ts, a separate process. Rows: policy × record size × batch size × connections ×
 * requests in flight, each measured on both brokers alternately (A, B, A, B, …) with a fresh data
 * directory per run, `--rounds` times; median and range printed per broker, and B/A of the medians.
 * Data goes to BOOBLIK_BENCH_DIR (never tmpfs).
 */
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, measurementDirectory } from "./lib/environment.ts";
import type { ThroughputResult } from "./lib/load-result.ts";
import { runLoad, startBrokerProcess } from "./lib/processes.ts";

const args = parseBenchArgs({
  usage: "bun bench/ab.bench.ts --baseline=<checkout> [--seconds=4] [--rounds=3]",
  options: { baseline: "", seconds: "4", rounds: "3" },
});
const baseline = args.text("baseline");
if (baseline === "") {
  console.error("--baseline=<checkout of the earlier commit> is required");
  process.exit(2);
}
const seconds = args.number("seconds");
const rounds = args.number("rounds");
const LOAD = path.join(import.meta.dir, "load", "produce.ts");
const brokers = {
  A: { label: `baseline ${baseline}`, main: path.resolve(baseline, "src/main.ts") },
  B: { label: "this checkout", main: path.resolve(import.meta.dir, "../src/main.ts") },
};

interface Row {
  policy: "append" | "force";
  recordBytes: number;
  batch: number;
  connections: number;
  inflight: number;
}
const ROWS: Row[] = [
  { policy: "force", recordBytes: 100, batch: 1, connections: 1, inflight: 8 },
  { policy: "force", recordBytes: 100, batch: 100, connections: 1, inflight: 8 },
  { policy: "append", recordBytes: 100, batch: 1, connections: 1, inflight: 8 },
  { policy: "append", recordBytes: 100, batch: 100, connections: 16, inflight: 8 },
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const directory = measurementDirectory("ab");
console.log(describeMachine(directory.fileSystem));
console.log(`A = ${brokers.A.label}; B = ${brokers.B.label}`);
console.log(
  `file write path (the default); ${seconds} s per run; ${rounds} rounds, A and B alternating; load: bench/load/produce.ts\n`,
);
console.log(
  "| policy | record B | batch | connections | in flight | A records/s median (range) | B records/s median (range) | B/A |",
);
console.log("|---|---|---|---|---|---|---|---|");
let run = 0;
try {
  for (const row of ROWS) {
    const results: Record<"A" | "B", number[]> = { A: [], B: [] };
    for (let round = 0; round < rounds; round++) {
      for (const which of round % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const)) {
        const broker = await startBrokerProcess(
          path.join(directory.path, `run-${run++}`),
          [],
          brokers[which].main,
        );
        try {
          const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
          await admin.createTopic("ab", { durability: row.policy });
          admin.close();
          const result = (await runLoad(LOAD, [
            String(broker.port),
            "ab",
            String(row.recordBytes),
            String(row.batch),
            String(row.connections),
            String(seconds),
            String(row.inflight),
          ])) as ThroughputResult;
          results[which].push(result.recordsPerSecond);
        } finally {
          await broker.stop();
        }
      }
    }
    const cell = (values: number[]) =>
      `${formatRate(median(values))} (${formatRate(Math.min(...values))}–${formatRate(Math.max(...values))})`;
    console.log(
      `| ${row.policy} | ${row.recordBytes} | ${row.batch} | ${row.connections} | ${row.inflight} | ${cell(results.A)} | ${cell(results.B)} | ${(median(results.B) / median(results.A)).toFixed(2)} |`,
    );
  }
} finally {
  directory.remove();
}
