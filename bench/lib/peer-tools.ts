/**
 * What the benchmarks that compare booblik with a peer share (bench/small-requests.bench.ts and
 * bench/peers.bench.ts): the one 100-byte value every system is sent, a Redis server on the
 * measurement disk, Redis's own `redis-benchmark` running `XADD` (the pipelined client Redis's users
 * measure with. The median, load average and free port they use are bench/lib/stats.ts's,
 * environment.ts's and processes.ts's.
 *
 * Why one fixed printable value: `redis-benchmark` takes the command's arguments from argv, which
 * cannot carry a NUL byte, and `nats bench` sends the bytes of a payload file; booblik's load
 * generators send it as bytes too. With the same 100 ASCII bytes everywhere, every system stores
 * byte-identical records (checked by reading one back), and no client re-encodes a binary value as a
 * longer UTF-8 string, which the peers benchmark's Redis load did before (issue 13).
 */
import fs from "node:fs";
import { freePort } from "./processes.ts";

/** The record value every system is sent: 100 printable ASCII bytes, the same in every run. */
export const PEER_VALUE_TEXT = (() => {
  const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  let text = "booblik-peers-value:";
  for (let i = 0; text.length < 100; i++) text += alphabet[(i * 7) % alphabet.length];
  return text;
})();
export const PEER_VALUE = new TextEncoder().encode(PEER_VALUE_TEXT);

export interface PeerServer {
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** redis-server with `appendonly yes`, no RDB, its data in `dataDir`; resolves once it answers PING. */
export async function startRedisServer(
  dataDir: string,
  appendfsync: "always" | "everysec",
): Promise<PeerServer> {
  fs.mkdirSync(dataDir, { recursive: true });
  const port = freePort();
  const server = Bun.spawn(
    [
      "redis-server",
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "yes",
      "--appendfsync",
      appendfsync,
      "--dir",
      dataDir,
      "--daemonize",
      "no",
    ],
    { stdout: "ignore", stderr: "inherit" },
  );
  for (let i = 0; ; i++) {
    const ping = Bun.spawnSync(["redis-cli", "-p", String(port), "ping"]);
    if (ping.stdout.toString().trim() === "PONG") break;
    if (i > 400) {
      server.kill("SIGKILL");
      throw new Error("redis-server did not answer PING within 10 s");
    }
    await Bun.sleep(25);
  }
  return {
    pid: server.pid,
    port,
    stop: async () => {
      server.kill("SIGTERM");
      await server.exited;
    },
  };
}

/** The last rate seen per shape, to size the next run of a tool that takes a count, not a duration. */
const lastRate = new Map<string, number>();

/**
 * How many operations make a run of about `seconds` for `key`. A tool that takes a count (Redis
 * 7.0's redis-benchmark, `nats bench`) gets a short unmeasured probe first, so that a slow shape
 * (one fsync per round trip: about 1 K/s) does not run for minutes and a fast one not for
 * milliseconds.
 */
export async function countFor(
  key: string,
  seconds: number,
  probe: (count: number) => Promise<number> | number,
  probeCount: number,
): Promise<number> {
  let rate = lastRate.get(key);
  if (rate === undefined) {
    rate = await probe(probeCount);
    lastRate.set(key, rate);
  }
  return Math.max(probeCount, Math.round(rate * seconds));
}

export function rememberRate(key: string, rate: number): void {
  lastRate.set(key, rate);
}

/**
 * `redis-benchmark -c <connections> -P <pipeline> -n <requests> XADD <stream> * v <PEER_VALUE>`:
 * each connection writes `pipeline` XADDs (one record each) in one socket write and waits for all
 * their replies. Returns redis-benchmark's own rate (commands = records per second), the wall
 * time of the run and redis-benchmark's own CPU (user + system, from its rusage).
 */
export function redisBenchmarkXadd(options: {
  port: number;
  connections: number;
  pipeline: number;
  requests: number;
  stream: string;
}): { recordsPerSecond: number; seconds: number; generatorCpuSeconds: number } {
  const started = performance.now();
  const bench = Bun.spawnSync([
    "redis-benchmark",
    "-p",
    String(options.port),
    "-c",
    String(options.connections),
    "-P",
    String(options.pipeline),
    "-n",
    String(options.requests),
    "--csv",
    "XADD",
    options.stream,
    "*",
    "v",
    PEER_VALUE_TEXT,
  ]);
  const seconds = (performance.now() - started) / 1000;
  const lines = bench.stdout.toString().trim().split("\n");
  const rate = Number(lines.at(-1)?.split(",")[1]?.replaceAll('"', ""));
  if (bench.exitCode !== 0 || !Number.isFinite(rate) || rate <= 0)
    throw new Error(
      `cannot read redis-benchmark's rate (exit ${bench.exitCode}): ${lines.at(-1)} ${bench.stderr}`,
    );
  const cpuMicros = bench.resourceUsage?.cpuTime.total;
  return {
    recordsPerSecond: rate,
    seconds,
    generatorCpuSeconds: cpuMicros === undefined ? Number.NaN : Number(cpuMicros) / 1e6,
  };
}

/**
 * Reads the first entry of a Redis stream back through `redis-cli --raw` (bytes, not a client's
 * decoded string) and checks that its value is PEER_VALUE byte for byte. Throws otherwise.
 */
export function verifyRedisRecord(port: number, stream: string): void {
  const read = Bun.spawnSync([
    "redis-cli",
    "-p",
    String(port),
    "--raw",
    "XRANGE",
    stream,
    "-",
    "+",
    "COUNT",
    "1",
  ]);
  // --raw prints the entry id, the field name and the value, one per line.
  const expected = Buffer.concat([Buffer.from("v\n"), Buffer.from(PEER_VALUE), Buffer.from("\n")]);
  const out = Buffer.from(read.stdout);
  const firstLine = out.indexOf(10);
  if (firstLine < 0 || !out.subarray(firstLine + 1).equals(expected))
    throw new Error(
      `Redis stream ${stream}: the first record is not the value sent: ${JSON.stringify(out.toString())}`,
    );
}
