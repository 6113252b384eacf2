/**
 * A/B of two broker checkouts on the same machine, in one run: did a change make the broker slower?
 *
 *   bun bench/ab.bench.ts --baseline=<another checkout> [--seconds=4] [--rounds=3] [--load=raw|client]
 *
 * The baseline is a checkout of an earlier commit (`git worktree add /tmp/base <commit>`, then
 * `bun install` there). Each broker is driven by its own checkout's load generator, a separate
 * process (the protocol changed with the record model of issue 11, so one generator cannot drive
 * both): `--load=raw` (default) runs bench/load/produce.ts (pre-encoded batches); `--load=client`
 * runs bench/load/client-produce.ts in `write` mode (the Producer's synchronous fast path, one
 * record per call, its default batching). Rows: policy × record size × batch size × connections ×
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
import { median, medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage: "bun bench/ab.bench.ts --baseline=<checkout> [--seconds=4] [--rounds=3] [--load=raw|client]",
  options: { baseline: "", seconds: "4", rounds: "3", load: "raw" },
});
const baseline = args.text("baseline");
if (baseline === "") {
  console.error("--baseline=<checkout of the earlier commit> is required");
  process.exit(2);
}
const seconds = args.number("seconds");
const rounds = args.number("rounds");
const load = args.text("load");
if (load !== "raw" && load !== "client") {
  console.error(`--load must be raw or client, got ${JSON.stringify(load)}`);
  process.exit(2);
}
const LOAD_FILE = load === "raw" ? "bench/load/produce.ts" : "bench/load/client-produce.ts";
const HERE = path.resolve(import.meta.dir, "..");
const brokers = {
  A: {
    label: `baseline ${baseline}`,
    main: path.resolve(baseline, "src/main.ts"),
    load: path.resolve(baseline, LOAD_FILE),
  },
  B: { label: "this checkout", main: path.join(HERE, "src/main.ts"), load: path.join(HERE, LOAD_FILE) },
};
/** The Producer's defaults (client load): batches of 256 KiB, 4 in flight. */
const CLIENT_BATCH_BYTES = 256 * 1024;
const CLIENT_IN_FLIGHT = 4;

interface Row {
  policy: "append" | "force";
  recordBytes: number;
  batch: number;
  connections: number;
  inflight: number;
}
const ROWS: Row[] =
  load === "raw"
    ? [
        { policy: "force", recordBytes: 100, batch: 1, connections: 1, inflight: 8 },
        { policy: "force", recordBytes: 100, batch: 100, connections: 1, inflight: 8 },
        { policy: "append", recordBytes: 100, batch: 1, connections: 1, inflight: 8 },
        { policy: "append", recordBytes: 100, batch: 100, connections: 16, inflight: 8 },
        { policy: "append", recordBytes: 100, batch: 1000, connections: 1, inflight: 8 },
      ]
    : // The batch column is the Producer's batchBytes here; one producer, one connection.
      [
        {
          policy: "append",
          recordBytes: 100,
          batch: CLIENT_BATCH_BYTES,
          connections: 1,
          inflight: CLIENT_IN_FLIGHT,
        },
        {
          policy: "append",
          recordBytes: 1024,
          batch: CLIENT_BATCH_BYTES,
          connections: 1,
          inflight: CLIENT_IN_FLIGHT,
        },
      ];

const directory = measurementDirectory("ab");
console.log(describeMachine(directory.fileSystem));
console.log(`A = ${brokers.A.label}; B = ${brokers.B.label}`);
console.log(
  `file write path (the default); ${seconds} s per run; ${rounds} rounds, A and B alternating; load: each checkout's ${LOAD_FILE}` +
    (load === "client"
      ? " in write mode (batch = the Producer's batchBytes, in flight = its maxInFlightBatches)\n"
      : "\n"),
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
          const loadArgs =
            load === "raw"
              ? [row.recordBytes, row.batch, row.connections, seconds, row.inflight]
              : [row.recordBytes, seconds, "write", row.batch, row.inflight];
          const result = (await runLoad(brokers[which].load, [
            String(broker.port),
            "ab",
            ...loadArgs.map(String),
          ])) as ThroughputResult;
          results[which].push(result.recordsPerSecond);
        } finally {
          await broker.stop();
        }
      }
    }
    const cell = (values: number[]) => medianRange(values, formatRate, "–");
    console.log(
      `| ${row.policy} | ${row.recordBytes} | ${row.batch} | ${row.connections} | ${row.inflight} | ${cell(results.A)} | ${cell(results.B)} | ${(median(results.B) / median(results.A)).toFixed(2)} |`,
    );
  }
} finally {
  directory.remove();
}
