/**
 * Start-up and shutdown at the default partition limit (--max-partitions, 4,096): four topics of
 * 1,024 partitions with `--records` records of 100 bytes in each (one batch per partition), then a
 * clean stop (SIGTERM), a start after it, a crash (SIGKILL) and a start after that. Measured: time
 * from the signal to the exit, and from spawn to `/ready` answering 200 (polled every 50 ms on the
 * metrics listener, which answers 503 "opening partitions: N of M" before; the broker prints its
 * start line right after /ready turns 200). Also whether /ready reported that progress while the
 * start took more than a second. Each round runs every write path of `--write-modes` in turn
 * (interleaved), each on a fresh data directory. `--compare=<another checkout>/src/main.ts` runs that
 * broker as well, interleaved with this one (before/after figures of a change in one run).
 *
 *   bun bench/partitions.bench.ts [--rounds=3] [--write-modes=file,mapped] [--durability=force] [--records=100]
 *                                 [--compare=<path of another src/main.ts>]
 *
 * Data goes to BOOBLIK_BENCH_DIR (never tmpfs). The broker is a child process.
 */
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { BROKER_PARTITIONS_DEFAULT_MAX, PARTITIONS_MAX } from "../src/domain/limits.ts";
import { batchOfValues } from "../src/record/entries.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverages, measurementDirectory } from "./lib/environment.ts";
import { freePort } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/partitions.bench.ts [--rounds=3] [--write-modes=file,mapped] [--durability=force] [--records=100] [--compare=<main.ts>]",
  options: { rounds: "3", "write-modes": "file,mapped", durability: "force", records: "100", compare: "" },
});
const rounds = args.number("rounds");
const writeModes = args.text("write-modes").split(",");
const durability = args.text("durability");
const recordsPerPartition = args.number("records");
const RECORD_BYTES = 100;
const READY_POLL_MS = 50;
const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const compare = args.text("compare");
/** The brokers measured, by label: this checkout's, and the one to compare with. */
const BROKERS: [string, string][] = [
  ["this", MAIN],
  ...(compare === "" ? [] : [["compared", path.resolve(compare)] as [string, string]]),
];
const TOPICS = BROKER_PARTITIONS_DEFAULT_MAX / PARTITIONS_MAX;

interface Started {
  child: ReturnType<typeof Bun.spawn>;
  port: number;
  readyMs: number;
  /** /ready answered 503 naming the partitions opened so far at least once. */
  sawProgress: boolean;
}

async function start(main: string, dataDir: string): Promise<Started> {
  // A number, not 0: /ready is polled before the start line names the port.
  const metricsPort = freePort();
  const began = performance.now();
  const child = Bun.spawn(
    [
      process.execPath,
      main,
      "--data-dir",
      dataDir,
      "--port",
      "0",
      "--kafka-port",
      "off",
      "--metrics-port",
      String(metricsPort),
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  let sawProgress = false;
  let readyMs: number | undefined;
  while (readyMs === undefined) {
    if (child.exitCode !== null) throw new Error(`broker exited with ${child.exitCode} before /ready`);
    try {
      const answer = await fetch(`http://127.0.0.1:${metricsPort}/ready`);
      const text = await answer.text();
      if (answer.status === 200) readyMs = performance.now() - began;
      else if (text.includes("opening partitions:")) sawProgress = true;
    } catch {
      // Not listening yet.
    }
    if (readyMs === undefined) await Bun.sleep(READY_POLL_MS);
  }
  const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes(" listening on ")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`broker exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  return { child, port: Number(/listening on [^:]+:(\d+)/.exec(text)?.[1]), readyMs, sawProgress };
}

async function stop(broker: Started, signal: "SIGTERM" | "SIGKILL"): Promise<number> {
  const began = performance.now();
  broker.child.kill(signal);
  const code = await broker.child.exited;
  if (signal === "SIGTERM" && code !== 0) throw new Error(`SIGTERM: the broker exited with ${code}`);
  return performance.now() - began;
}

const directory = measurementDirectory("partitions");
console.log(describeMachine(directory.fileSystem));
console.log(
  `\n${TOPICS} topics × ${PARTITIONS_MAX} partitions = ${BROKER_PARTITIONS_DEFAULT_MAX} partitions, durability ${durability}, ` +
    `${recordsPerPartition} records of ${RECORD_BYTES} bytes per partition in one batch; write paths ${writeModes.join(", ")} interleaved; ` +
    `${rounds} rounds, median (range) in ms; load average at start ${loadAverages()}\n`,
);
const STEPS = [
  "clean stop (SIGTERM → exit)",
  "start after a clean stop (spawn → /ready 200)",
  "start after SIGKILL (spawn → /ready 200)",
] as const;
const results = new Map<string, number[]>();
const progressSeen = new Map<string, boolean[]>();
const record = (mode: string, step: string, ms: number) => {
  const key = `${mode}\t${step}`;
  results.set(key, [...(results.get(key) ?? []), ms]);
};
const batch = batchOfValues(Array.from({ length: recordsPerPartition }, () => new Uint8Array(RECORD_BYTES)));
try {
  for (let round = 0; round < rounds; round++) {
    for (const [label, main] of BROKERS)
      for (const writeMode of writeModes) {
        const variant = BROKERS.length === 1 ? writeMode : `${writeMode}, ${label}`;
        const dataDir = path.join(directory.path, `round-${round}-${writeMode}-${label}`);
        let broker = await start(main, dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
        for (let t = 0; t < TOPICS; t++) {
          await client.createTopic(`t${t}`, {
            partitions: PARTITIONS_MAX,
            writeMode: writeMode as "file" | "mapped",
            durability: durability as "force",
          });
          await Promise.all(
            Array.from({ length: PARTITIONS_MAX }, (_, p) => client.produce(`t${t}`, p, batch)),
          );
        }
        client.close();
        record(variant, STEPS[0], await stop(broker, "SIGTERM"));
        broker = await start(main, dataDir);
        record(variant, STEPS[1], broker.readyMs);
        if (broker.readyMs > 1000)
          progressSeen.set(variant, [...(progressSeen.get(variant) ?? []), broker.sawProgress]);
        await stop(broker, "SIGKILL");
        broker = await start(main, dataDir);
        record(variant, STEPS[2], broker.readyMs);
        if (broker.readyMs > 1000)
          progressSeen.set(variant, [...(progressSeen.get(variant) ?? []), broker.sawProgress]);
        await stop(broker, "SIGTERM");
        fs.rmSync(dataDir, { recursive: true, force: true });
        console.log(`round ${round + 1}, ${variant}: done (load average ${loadAverages()})`);
      }
  }
  console.log(`\n| write path${BROKERS.length === 1 ? "" : ", broker"} | step | ms, median (range) |`);
  console.log("|---|---|---|");
  for (const variant of new Set([...results.keys()].map((key) => key.split("\t")[0]!))) {
    for (const step of STEPS) {
      const values = results.get(`${variant}\t${step}`) ?? [];
      console.log(`| ${variant} | ${step} | ${medianRange(values, 0, "–")} |`);
    }
  }
  for (const [variant, seen] of progressSeen) {
    console.log(
      `${variant}: starts over 1 s that showed "opening partitions: N of M" on /ready: ${seen.filter(Boolean).length} of ${seen.length}`,
    );
  }
  console.log(`load average at the end ${loadAverages()}`);
} finally {
  directory.remove();
}
