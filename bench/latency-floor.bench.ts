/**
 * What this machine charges the produce → fetch latency chain without any broker work, next to
 * booblik doing the same (issue 13's latency target: p99 < 1 ms at 50 K records/s under `append`).
 * The shape of `bun bench/network.bench.ts latency`, with booblik replaced by a relay that does
 * nothing:
 *
 *   producer process ──TCP──▶ relay process ──TCP──▶ consumer process
 *
 * The producer sends one message due every millisecond, of the bytes one batch of `--rate`/1000
 * records of 100 B takes as stored (5,519 B at 50 K records/s; bench/lib/latency-shape.ts), paced
 * as bench/load/latency.ts paces its batches (`setTimeout`, then `Atomics.wait` for the last
 * 1.5 ms), each stamped with its due time; the relay writes each chunk it reads to the consumer's
 * connection at once and, in the `pwrite` variant, first writes it at the end of a file (as an
 * `append` broker does); the consumer records arrival − due per message. The third variant is
 * booblik itself: this checkout's broker, a topic under `append`, and bench/load/latency.ts at
 * `--rate` (its figures are also from due). Every process is its own `bun`; the three variants take
 * turns, the order rotating each round, each run on fresh processes (and a fresh data directory);
 * median (range) over the rounds, the first `--warmup-ms` of each run left out. Files go to
 * BOOBLIK_BENCH_DIR (never tmpfs).
 *
 *   bun bench/latency-floor.bench.ts [--seconds=5] [--rounds=3] [--rate=50000] [--warmup-ms=1000]
 */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { BooblikClient } from "../src/client/client.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, loadAverage, measurementDirectory } from "./lib/environment.ts";
import { storedBatchBytes } from "./lib/latency-shape.ts";
import { runLoad, startBrokerProcess } from "./lib/processes.ts";
import { medianRange } from "./lib/stats.ts";

interface Percentiles {
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

const role = process.argv[2];
/** Microseconds on a clock the processes share (bench/load/latency.ts `nowUs`). */
const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;

if (role === "--relay") await relay(process.argv[3]!);
else if (role === "--consume")
  await consume(
    Number(process.argv[3]),
    Number(process.argv[4]),
    Number(process.argv[5]),
    Number(process.argv[6]),
  );
else if (role === "--produce") produce(Number(process.argv[3]), Number(process.argv[4]));
else await main();

/** Forwards every chunk of the producer's connection to the consumer's; with a file, writes it there first. */
async function relay(file: string): Promise<void> {
  const fd = file === "-" ? -1 : fs.openSync(file, "w");
  let position = 0;
  let consumer: net.Socket | undefined;
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.once("data", (first: Buffer) => {
      // The consumer introduces itself with one byte "C"; the producer's first chunk is data.
      if (first.length === 1 && first[0] === 67) {
        consumer = socket;
        console.log("consumer");
        return;
      }
      const forward = (chunk: Buffer): void => {
        if (fd >= 0) {
          fs.writeSync(fd, chunk, 0, chunk.length, position);
          position += chunk.length;
        }
        consumer?.write(chunk);
      };
      forward(first);
      socket.on("data", forward);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  console.log((server.address() as net.AddressInfo).port);
}

/** Prints one JSON line of percentiles (ms) once `count` messages after the first `skip` arrived. */
async function consume(port: number, bytes: number, skip: number, count: number): Promise<void> {
  const latenciesUs: number[] = [];
  let skipped = 0;
  let pending: Buffer = Buffer.alloc(0);
  const socket = net.connect(port, "127.0.0.1", () => socket.write("C"));
  socket.setNoDelay(true);
  socket.on("data", (chunk: Buffer) => {
    const arrivedUs = nowUs();
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= bytes) {
      if (skipped < skip) skipped++;
      else latenciesUs.push(arrivedUs - pending.readDoubleLE(0));
      pending = pending.subarray(bytes);
    }
    if (latenciesUs.length >= count) {
      const sorted = latenciesUs.slice(0, count).sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! / 1000;
      console.log(
        JSON.stringify({ p50Ms: at(0.5), p99Ms: at(0.99), p999Ms: at(0.999), maxMs: sorted.at(-1)! / 1000 }),
      );
      process.exit(0);
    }
  });
}

/** One message of `bytes` due every millisecond, stamped with its due time (µs, shared clock). */
function produce(port: number, bytes: number): void {
  const wait = new Int32Array(new SharedArrayBuffer(4));
  const socket = net.connect(port, "127.0.0.1", () => {
    const startMs = performance.now() + 20;
    let sent = 0;
    const next = () => {
      const dueMs = startMs + sent;
      const aheadMs = dueMs - performance.now();
      if (aheadMs > 1.5) {
        setTimeout(next, aheadMs - 1.5);
        return;
      }
      if (aheadMs > 0) Atomics.wait(wait, 0, 0, aheadMs);
      const message = Buffer.alloc(bytes);
      message.writeDoubleLE((performance.timeOrigin + dueMs) * 1000, 0);
      socket.write(message);
      sent++;
      setImmediate(next);
    };
    next();
  });
  socket.setNoDelay(true);
}

async function runOnce(file: string, bytes: number, seconds: number, warmupMs: number) {
  const self = import.meta.path;
  const relayProcess = Bun.spawn([process.execPath, self, "--relay", file], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = relayProcess.stdout.getReader();
  let text = "";
  /** The relay's next line of output (its port, then "consumer" once the consumer is attached). */
  const line = async (): Promise<string> => {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the relay exited");
      text += new TextDecoder().decode(value);
    }
    const end = text.indexOf("\n");
    const first = text.slice(0, end);
    text = text.slice(end + 1);
    return first;
  };
  const port = Number(await line());
  // The consumer leaves the warm-up's messages out (one is due per millisecond).
  const consumer = Bun.spawn(
    [
      process.execPath,
      self,
      "--consume",
      String(port),
      String(bytes),
      String(warmupMs),
      String(seconds * 1000),
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  // Data flows only once the relay has the consumer's connection.
  if ((await line()) !== "consumer") throw new Error("the relay did not report the consumer");
  const producer = Bun.spawn([process.execPath, self, "--produce", String(port), String(bytes)], {
    stdout: "inherit",
    stderr: "inherit",
  });
  const output = await new Response(consumer.stdout).text();
  producer.kill();
  relayProcess.kill();
  await Promise.all([producer.exited, relayProcess.exited]);
  return JSON.parse(output.trim()) as Percentiles;
}

/** booblik in the same shape: a fresh broker, a topic under `append`, bench/load/latency.ts. */
async function runBooblik(
  dataDir: string,
  rate: number,
  seconds: number,
  warmupMs: number,
): Promise<Percentiles> {
  Bun.spawnSync(["sync"]);
  const broker = await startBrokerProcess(dataDir, []);
  try {
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await admin.createTopic("latency", { durability: "append" });
    admin.close();
    return (await runLoad(path.join(import.meta.dir, "load", "latency.ts"), [
      String(broker.port),
      "latency",
      String(rate),
      String(seconds),
      "100",
      String(warmupMs / 1000),
    ])) as Percentiles;
  } finally {
    await broker.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = parseBenchArgs({
    usage: "bun bench/latency-floor.bench.ts [--seconds=5] [--rounds=3] [--rate=50000] [--warmup-ms=1000]",
    options: { seconds: "5", rounds: "3", rate: "50000", "warmup-ms": "1000" },
  });
  const seconds = args.number("seconds");
  const rounds = args.number("rounds");
  const rate = args.number("rate");
  const warmupMs = args.number("warmup-ms");
  const bytes = storedBatchBytes(rate);
  const directory = measurementDirectory("latency-floor");
  console.log("# latency of the produce → fetch chain with no broker, and with booblik\n");
  console.log(describeMachine(directory.fileSystem));
  console.log(
    `${formatRate(rate)} records/s of 100 B: one batch (${bytes} B as stored) due every 1 ms, ${seconds} s measured after ${warmupMs} ms, ${rounds} rounds, the variants' order rotating, each run on fresh processes; latency from each batch's due time\n`,
  );
  const relayFile = path.join(directory.path, "relay.log");
  const variants: [string, () => Promise<Percentiles>][] = [
    ["relay only", () => runOnce("-", bytes, seconds, warmupMs)],
    [
      "relay + pwrite",
      () => {
        fs.rmSync(relayFile, { force: true });
        return runOnce(relayFile, bytes, seconds, warmupMs);
      },
    ],
    ["booblik append", () => runBooblik(path.join(directory.path, "broker"), rate, seconds, warmupMs)],
  ];
  const results = new Map<string, Percentiles[]>();
  const loads: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const [name, run] = variants[(round + i) % variants.length]!;
      loads.push(loadAverage());
      results.set(name, [...(results.get(name) ?? []), await run()]);
    }
  }
  directory.remove();
  console.log("| variant | p50 ms | p99 ms | p99.9 ms | max ms |");
  console.log("|---|---|---|---|---|");
  for (const [name] of variants) {
    const list = results.get(name)!;
    const column = (key: keyof Percentiles) =>
      medianRange(
        list.map((r) => r[key]),
        2,
      );
    console.log(
      `| ${name} | ${column("p50Ms")} | ${column("p99Ms")} | ${column("p999Ms")} | ${column("maxMs")} |`,
    );
  }
  console.log(`\nload average (1 min) at each run's start: ${loads.map((l) => l.toFixed(1)).join(", ")}`);
}
