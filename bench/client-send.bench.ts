/**
 * A/B of two client checkouts against one broker: what a PRODUCE request costs the client process
 * and the broker, on one connection. The broker is this checkout's, one process for the whole run;
 * each load generator run is `bench/load/produce.ts` of checkout A (`--baseline`) or B (this one),
 * alternating A, B, B, A, …, a fresh topic per run. Pre-encoded batches of `--batches` records of
 * 100 B, 8 requests in flight, durability `append`.
 *
 *   bun bench/client-send.bench.ts --baseline=<checkout> [--seconds=4] [--rounds=5] [--batches=100,1000,2300]
 *
 * Figures per batch size and checkout: records/s, the load generator's CPU time (user + system) per
 * request, and the broker's (from /proc/<pid>/stat) per request; median (range) over the rounds.
 * CPU per request is the figure to compare on a shared machine; records/s swings with the load.
 */
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import type { ThroughputResult } from "./lib/load-result.ts";
import { brokerCpuSeconds, startBrokerProcess } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/client-send.bench.ts --baseline=<checkout> [--seconds=4] [--rounds=5] [--batches=100,1000,2300]",
  options: { baseline: "", seconds: "4", rounds: "5", batches: "100,1000,2300" },
});
const baseline = args.text("baseline");
if (baseline === "") {
  console.error("--baseline=<checkout of the earlier commit> is required");
  process.exit(2);
}
const seconds = args.number("seconds");
const rounds = args.number("rounds");
const batchSizes = args
  .text("batches")
  .split(",")
  .map((text) => Number(text));
const RECORD_BYTES = 100;
const IN_FLIGHT = 8;
const HERE = path.resolve(import.meta.dir, "..");
const generators = {
  A: path.resolve(baseline, "bench/load/produce.ts"),
  B: path.join(HERE, "bench/load/produce.ts"),
};

interface Run {
  recordsPerSecond: number;
  clientCpuMicrosPerRequest: number;
  brokerCpuMicrosPerRequest: number;
}

const directory = measurementDirectory("client-send");
const broker = await startBrokerProcess(path.join(directory.path, "broker"), []);
const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
try {
  console.log(`# booblik client send A/B\n\n${describeMachine(directory.fileSystem)}`);
  console.log(
    `broker: this checkout; A = ${baseline}, B = this checkout (bench/load/produce.ts of each); ${RECORD_BYTES} B records, ` +
      `1 connection, ${IN_FLIGHT} requests in flight, durability append, ${seconds} s per run, ${rounds} rounds; median (range)\n`,
  );
  console.log(
    "| batch (records) | batch bytes | A M records/s | B M records/s | A client CPU µs/request | B client CPU µs/request | A broker CPU µs/request | B broker CPU µs/request |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  let topicNumber = 0;
  for (const batch of batchSizes) {
    const runs: Record<"A" | "B", Run[]> = { A: [], B: [] };
    let batchBytes = 0;
    for (let round = 0; round < rounds; round++) {
      for (const which of round % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const)) {
        const topic = `send-${topicNumber++}`;
        await admin.createTopic(topic, { durability: "append", retentionBytes: 2 * 2 ** 30 });
        const brokerBefore = brokerCpuSeconds(broker.pid);
        const child = Bun.spawn(
          [
            process.execPath,
            generators[which],
            String(broker.port),
            topic,
            String(RECORD_BYTES),
            String(batch),
            "1",
            String(seconds),
            String(IN_FLIGHT),
          ],
          { stdout: "pipe", stderr: "inherit" },
        );
        const output = await new Response(child.stdout).text();
        if ((await child.exited) !== 0) throw new Error(`load generator ${which} failed`);
        const result = JSON.parse(output.trim().split("\n").at(-1)!) as ThroughputResult & { bytes: number };
        const usage = child.resourceUsage()!;
        const requests = result.records / batch;
        batchBytes = result.bytes / requests;
        runs[which].push({
          recordsPerSecond: result.recordsPerSecond,
          clientCpuMicrosPerRequest: Number(usage.cpuTime.user + usage.cpuTime.system) / requests,
          brokerCpuMicrosPerRequest: ((brokerCpuSeconds(broker.pid) - brokerBefore) * 1e6) / requests,
        });
        await admin.deleteTopic(topic);
      }
    }
    const cell = (which: "A" | "B", field: keyof Run, digits: number, scale = 1) =>
      medianRange(
        runs[which].map((run) => run[field] * scale),
        digits,
      );
    console.log(
      `| ${batch} | ${Math.round(batchBytes)} | ${cell("A", "recordsPerSecond", 2, 1e-6)} | ${cell("B", "recordsPerSecond", 2, 1e-6)} | ` +
        `${cell("A", "clientCpuMicrosPerRequest", 1)} | ${cell("B", "clientCpuMicrosPerRequest", 1)} | ` +
        `${cell("A", "brokerCpuMicrosPerRequest", 1)} | ${cell("B", "brokerCpuMicrosPerRequest", 1)} |`,
    );
  }
} finally {
  admin.close();
  await broker.stop();
  directory.remove();
}
