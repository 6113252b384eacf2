/**
 * Start-up and shutdown at the default partition limit (--max-partitions, 4,096): four topics of
 * 1,024 partitions, one record in each, then a clean stop (SIGTERM), a start after it, a crash
 * (SIGKILL) and a start after that. Time from the signal to the exit, and from spawn to the start
 * line (the broker answers from then on).
 *
 *   bun bench/partitions.bench.ts [--rounds=3] [--write-mode=file|mapped] [--durability=force]
 *
 * Data goes to BOOBLIK_BENCH_DIR (never tmpfs). Each round uses a fresh data directory.
 */
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { BROKER_PARTITIONS_DEFAULT_MAX, PARTITIONS_MAX } from "../src/domain/limits.ts";
import { batchOfValues } from "../src/record/entries.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";

const args = parseBenchArgs({
  usage: "bun bench/partitions.bench.ts [--rounds=3] [--write-mode=file|mapped] [--durability=force]",
  options: { rounds: "3", "write-mode": "file", durability: "force" },
});
const rounds = args.number("rounds");
const writeMode = args.text("write-mode");
const durability = args.text("durability");
const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const TOPICS = BROKER_PARTITIONS_DEFAULT_MAX / PARTITIONS_MAX;

interface Started {
  child: ReturnType<typeof Bun.spawn>;
  port: number;
  startMs: number;
}

async function start(dataDir: string): Promise<Started> {
  const began = performance.now();
  const child = Bun.spawn(
    [process.execPath, MAIN, "--data-dir", dataDir, "--port", "0", "--kafka-port", "off"],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes(" listening on ")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`broker exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  const startMs = performance.now() - began;
  void (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  return { child, port: Number(/listening on [^:]+:(\d+)/.exec(text)?.[1]), startMs };
}

async function stop(broker: Started, signal: "SIGTERM" | "SIGKILL"): Promise<number> {
  const began = performance.now();
  broker.child.kill(signal);
  await broker.child.exited;
  return performance.now() - began;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const directory = measurementDirectory("partitions");
console.log(describeMachine(directory.fileSystem));
console.log(
  `\n${TOPICS} topics × ${PARTITIONS_MAX} partitions = ${BROKER_PARTITIONS_DEFAULT_MAX} partitions, write path ${writeMode}, durability ${durability}, one 100-byte record per partition; ${rounds} rounds, median (range) in ms\n`,
);
const results: Record<string, number[]> = {
  "clean stop (SIGTERM → exit)": [],
  "start after a clean stop (spawn → start line)": [],
  "start after SIGKILL (spawn → start line)": [],
};
try {
  for (let round = 0; round < rounds; round++) {
    const dataDir = path.join(directory.path, `round-${round}`);
    let broker = await start(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    const record = batchOfValues([new Uint8Array(100)]);
    for (let t = 0; t < TOPICS; t++) {
      await client.createTopic(`t${t}`, { partitions: PARTITIONS_MAX, writeMode, durability });
      await Promise.all(Array.from({ length: PARTITIONS_MAX }, (_, p) => client.produce(`t${t}`, p, record)));
    }
    client.close();
    results["clean stop (SIGTERM → exit)"]!.push(await stop(broker, "SIGTERM"));
    broker = await start(dataDir);
    results["start after a clean stop (spawn → start line)"]!.push(broker.startMs);
    await stop(broker, "SIGKILL");
    broker = await start(dataDir);
    results["start after SIGKILL (spawn → start line)"]!.push(broker.startMs);
    await stop(broker, "SIGTERM");
  }
  console.log("| step | ms, median (range) |");
  console.log("|---|---|");
  for (const [step, values] of Object.entries(results)) {
    console.log(
      `| ${step} | ${median(values).toFixed(0)} (${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}) |`,
    );
  }
} finally {
  directory.remove();
}
