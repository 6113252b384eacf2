/**
 * The client library's own cost: records/s one Producer and one Consumer sustain against the broker,
 * next to the raw load generators of bench/network.bench.ts (pre-encoded batches of 1000, 8 requests
 * in flight; a raw FETCH loop checking both CRCs of every entry without decoding records), in the
 * same run against the same broker process. Every client consume mode decodes every record.
 *
 *   bun bench/client.bench.ts [--seconds=4] [--rounds=3] [--record-bytes=100,1024] [--baseline=<checkout>]
 *
 * With `--baseline` (a checkout of an earlier commit whose bench/load/client-*.ts are this
 * checkout's, copied there so that they import that checkout's client) the per-record modes also
 * run that checkout's client, marked "(baseline)", in the same rotation (every consume mode; the
 * produce modes write() and accept()).
 * Each round runs the raw generator and every client mode once, in an order that rotates from round
 * to round, so that each client run has a raw run next to it on the same machine; the ratio is taken
 * per round (client / that round's raw) and printed as median (range) over the rounds, with the
 * records/s and the load process's CPU time per record (user + system over the measured span: the
 * figure that a shared machine disturbs least). The load average is printed with every row.
 *
 * Policy: acknowledge after append (the client's cost shows best where the broker is fastest).
 * Target: the client reaches ≥ 70 % of the raw generator's throughput.
 */
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import {
  describeMachine,
  formatRate,
  loadAverage,
  loadAverages,
  measurementDirectory,
} from "./lib/environment.ts";
import type { ThroughputResult } from "./lib/load-result.ts";
import { runLoad, startBrokerProcess } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/client.bench.ts [--seconds=4] [--rounds=3] [--record-bytes=100,1024] [--baseline=<checkout>]",
  options: { seconds: "4", rounds: "3", "record-bytes": "100,1024", baseline: "" },
});
const seconds = args.number("seconds");
const rounds = args.number("rounds");
const recordSizes = args
  .text("record-bytes")
  .split(",")
  .map((text) => Number(text));
const LOAD = path.join(import.meta.dir, "load");
const baseline = args.text("baseline");
const BASELINE_LOAD = baseline === "" ? "" : path.resolve(baseline, "bench/load");
/** A mode's load script: this checkout's, or the baseline's for a mode ending in "-baseline". */
function clientScript(mode: string, name: string): [string, string] {
  return mode.endsWith("-baseline")
    ? [path.join(BASELINE_LOAD, name), mode.slice(0, -"-baseline".length)]
    : [path.join(LOAD, name), mode];
}
// The Producer's defaults, passed explicitly so that the printed figures name what was measured.
const PRODUCER_BATCH_BYTES = 256 * 1024;
const PRODUCER_IN_FLIGHT = 4;
const RAW_BATCH_RECORDS = 1000;

const PRODUCE_MODES: Record<string, string> = {
  write: "produce, Producer.write() per record",
  accept: "produce, await Producer.accept() per record",
  ...(baseline === ""
    ? {}
    : {
        "write-baseline": "produce, Producer.write() per record (baseline)",
        "accept-baseline": "produce, await Producer.accept() per record (baseline)",
      }),
};
const CONSUME_MODES: Record<string, string> = {
  records: "consume, for await (record of consumer)",
  iterate: "consume, for await (batch of batches()) + for (record of batch)",
  objects: "consume, batches() + forEachConsumedRecord",
  batches: "consume, batches() + forEachFetchedRecord (views)",
};
// Every consume mode runs the baseline's client too (the decode and the fetch path changed in
// issue 13, not only the per-record iterator).
for (const [mode, side] of Object.entries(CONSUME_MODES))
  if (baseline !== "") CONSUME_MODES[`${mode}-baseline`] = `${side} (baseline)`;

interface Runs {
  rates: number[];
  ratios: number[];
  cpuNsPerRecord: number[];
  loads: string[];
}

function newRuns(): Runs {
  return { rates: [], ratios: [], cpuNsPerRecord: [], loads: [] };
}

function record(runs: Runs, result: ThroughputResult, raw: ThroughputResult): void {
  runs.rates.push(result.recordsPerSecond);
  runs.ratios.push(result.recordsPerSecond / raw.recordsPerSecond);
  runs.cpuNsPerRecord.push(((result.cpuSeconds ?? Number.NaN) * 1e9) / result.records);
  runs.loads.push(loadAverage().toFixed(1));
}

/** The order of `modes` for a round: rotated by the round, so that no mode always runs first. */
function rotated<T>(modes: readonly T[], round: number): T[] {
  const shift = round % modes.length;
  return [...modes.slice(shift), ...modes.slice(0, shift)];
}

const directory = measurementDirectory("client");
console.log(
  `# booblik client benchmark\n\n${describeMachine(directory.fileSystem)}\nload average at start: ${loadAverages()}`,
);
const broker = await startBrokerProcess(path.join(directory.path, "broker"), []);
const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
try {
  console.log(
    `\n## one producer and one consumer, ${seconds} s produce runs, ${rounds} rounds, durability append, file write path; ` +
      `raw: batches of ${RAW_BATCH_RECORDS} records, 8 requests in flight, one connection; client: Producer batchBytes ` +
      `${PRODUCER_BATCH_BYTES / 1024} KiB (the default), ${PRODUCER_IN_FLIGHT} batches in flight (the default); ` +
      "consumers: fetches of 1 MiB (the default); median (range) over the rounds\n",
  );
  console.log(
    "| record B | side | raw rec/s | client rec/s | client / raw (per round) | raw CPU ns/record | client CPU ns/record | load average (1 min) per round |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  const port = String(broker.port);
  let topicNumber = 0;
  for (const recordBytes of recordSizes) {
    const rawProduce = newRuns();
    const clientProduce: Record<string, Runs> = Object.fromEntries(
      Object.keys(PRODUCE_MODES).map((mode) => [mode, newRuns()]),
    );
    for (let round = 0; round < rounds; round++) {
      let raw: ThroughputResult | undefined;
      const results: Record<string, ThroughputResult> = {};
      for (const mode of rotated(["raw", ...Object.keys(PRODUCE_MODES)], round)) {
        const topic = `produce-${recordBytes}-${topicNumber++}`;
        await admin.createTopic(topic, { durability: "append" });
        if (mode === "raw") {
          raw = (await runLoad(path.join(LOAD, "produce.ts"), [
            port,
            topic,
            String(recordBytes),
            String(RAW_BATCH_RECORDS),
            "1",
            String(seconds),
          ])) as ThroughputResult;
        } else {
          const [script, scriptMode] = clientScript(mode, "client-produce.ts");
          results[mode] = (await runLoad(script, [
            port,
            topic,
            String(recordBytes),
            String(seconds),
            scriptMode,
            String(PRODUCER_BATCH_BYTES),
            String(PRODUCER_IN_FLIGHT),
          ])) as ThroughputResult;
        }
        await admin.deleteTopic(topic);
      }
      record(rawProduce, raw!, raw!);
      for (const mode of Object.keys(results)) record(clientProduce[mode]!, results[mode]!, raw!);
    }
    const row = (side: string, raw: Runs, client: Runs) =>
      console.log(
        `| ${recordBytes} | ${side} | ${medianRange(raw.rates, formatRate)} | ${medianRange(client.rates, formatRate)} | ` +
          `${medianRange(client.ratios, (value) => value.toFixed(2))} | ${medianRange(raw.cpuNsPerRecord, (value) => value.toFixed(0))} | ` +
          `${medianRange(client.cpuNsPerRecord, (value) => value.toFixed(0))} | ${client.loads.join(", ")} |`,
      );
    for (const [mode, side] of Object.entries(PRODUCE_MODES)) row(side, rawProduce, clientProduce[mode]!);

    // The consumers read a topic written once by the raw generator.
    const topic = `consume-${recordBytes}`;
    await admin.createTopic(topic, { durability: "append" });
    await runLoad(path.join(LOAD, "produce.ts"), [
      port,
      topic,
      String(recordBytes),
      String(RAW_BATCH_RECORDS),
      "1",
      String(seconds),
    ]);
    // Every consumer reads the same records: what the raw producer wrote.
    const until = String((await admin.listOffsets(topic, 0)).nextOffset);
    await runLoad(path.join(LOAD, "consume.ts"), [port, topic, until]); // warm the page cache
    const rawConsume = newRuns();
    const clientConsume: Record<string, Runs> = Object.fromEntries(
      Object.keys(CONSUME_MODES).map((mode) => [mode, newRuns()]),
    );
    for (let round = 0; round < rounds; round++) {
      let raw: ThroughputResult | undefined;
      const results: Record<string, ThroughputResult> = {};
      for (const mode of rotated(["raw", ...Object.keys(CONSUME_MODES)], round)) {
        if (mode === "raw")
          raw = (await runLoad(path.join(LOAD, "consume.ts"), [port, topic, until])) as ThroughputResult;
        else {
          const [script, scriptMode] = clientScript(mode, "client-consume.ts");
          results[mode] = (await runLoad(script, [port, topic, until, scriptMode])) as ThroughputResult;
        }
      }
      record(rawConsume, raw!, raw!);
      for (const mode of Object.keys(results)) record(clientConsume[mode]!, results[mode]!, raw!);
    }
    for (const [mode, side] of Object.entries(CONSUME_MODES)) row(side, rawConsume, clientConsume[mode]!);
    await admin.deleteTopic(topic);
  }
  console.log(`\nload average at the end: ${loadAverages()}`);
} finally {
  admin.close();
  await broker.stop();
  directory.remove();
}
