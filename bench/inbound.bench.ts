/**
 * Memory held by requests still arriving: N connections each send all but the last byte of a
 * 16 MiB PRODUCE frame (bench/load/stalled.ts, a separate process) and stop. Broker RSS and anonymous
 * RSS before and after, with the inbound budget at its default and, for comparison, so large that it
 * never binds (what the broker did before it had one: every unfinished frame held its full size).
 *
 *   bun bench/inbound.bench.ts [--rounds=3]
 *
 * The broker runs with its default limits otherwise (max frame 16 MiB, 1,024 connections), except
 * the per-address limit, lifted because every connection comes from 127.0.0.1. Data goes to
 * BOOBLIK_BENCH_DIR (never tmpfs; the broker only needs it to start).
 */
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { brokerMemory, startBrokerProcess } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({ usage: "bun bench/inbound.bench.ts [--rounds=3]", options: { rounds: "3" } });
const rounds = args.number("rounds");
const LOAD = path.join(import.meta.dir, "load", "stalled.ts");
const FRAME_BYTES = 16 * 1024 * 1024;
const MiB = 2 ** 20;

async function stats(port: number): Promise<Record<string, number>> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0 });
  try {
    return (await client.stats()) as unknown as Record<string, number>;
  } finally {
    client.close();
  }
}

const directory = measurementDirectory("inbound");
console.log(describeMachine(directory.fileSystem));
console.log(
  `\nEach connection sends ${FRAME_BYTES / MiB} MiB − 1 byte of a ${FRAME_BYTES / MiB} MiB PRODUCE frame and stalls; ${rounds} rounds, median (range).\n`,
);
console.log(
  "| inbound budget | connections | MiB sent by the generator | budget used MiB | connections waiting | broker RSS growth MiB | anon RSS growth MiB |",
);
console.log("|---|---|---|---|---|---|---|");
let run = 0;
try {
  for (const connections of [16, 64, 256]) {
    for (const budget of ["256MiB (default)", "64GiB (never binds)"]) {
      if (connections === 256 && budget.startsWith("64GiB")) continue; // 4 GiB of RSS proves nothing more
      const rows: { sent: number; used: number; waiting: number; rss: number; anon: number }[] = [];
      for (let round = 0; round < rounds; round++) {
        // Every connection comes from 127.0.0.1: lift the per-address limit (256) for this run.
        const broker = await startBrokerProcess(path.join(directory.path, `run-${run++}`), [
          "--max-connections-per-address",
          "1024",
          "--max-inbound-memory",
          budget.split(" ")[0]!,
        ]);
        try {
          await stats(broker.port); // a first round trip, so the baseline includes a warmed-up broker
          const before = await brokerMemory(broker.pid);
          const load = Bun.spawn(
            [process.execPath, LOAD, String(broker.port), String(connections), String(FRAME_BYTES)],
            {
              stdout: "pipe",
              stderr: "inherit",
            },
          );
          const reader = load.stdout.getReader();
          let line = "";
          while (!line.includes("\n")) {
            const { value, done } = await reader.read();
            if (done) throw new Error(`stalled.ts exited early: ${line}`);
            line += new TextDecoder().decode(value);
          }
          const result = JSON.parse(line) as { sentBytes: number };
          const figures = await stats(broker.port);
          const after = await brokerMemory(broker.pid);
          rows.push({
            sent: result.sentBytes / MiB,
            used: figures.inboundBudgetUsedBytes! / MiB,
            waiting: figures.inboundBudgetWaiting!,
            rss: (after.rssBytes - before.rssBytes) / MiB,
            anon: (after.anonymousBytes - before.anonymousBytes) / MiB,
          });
          load.kill("SIGKILL");
          await load.exited;
        } finally {
          await broker.stop();
        }
      }
      const cell = (pick: (r: (typeof rows)[number]) => number, digits = 0) => {
        return medianRange(rows.map(pick), digits, "–");
      };
      console.log(
        `| ${budget} | ${connections} | ${cell((r) => r.sent)} | ${cell((r) => r.used)} | ${cell((r) => r.waiting)} | ${cell((r) => r.rss)} | ${cell((r) => r.anon)} |`,
      );
    }
  }
} finally {
  directory.remove();
}
