/**
 * booblik against its peers, measured the same way on the same machine in one run:
 * NATS JetStream (file storage) and Redis Streams (AOF, everysec and always).
 *
 *   bun run bench:peers [--seconds=5] [--consume=1000000] [--latency-seconds=10] [--rates=10000,50000]
 *
 * Each system runs as its own process on loopback (installed from Debian packages when missing);
 * each load generator is another process using that system's own client (bench/peers/load.ts).
 * Durability is matched honestly: booblik `append` against Redis `everysec` and JetStream's default;
 * booblik `force` against Redis `always`. Every table says what each system promises. Data goes to
 * BOOBLIK_BENCH_DIR (never tmpfs). Charts: docs/charts/peers-latency-cdf.svg.
 */
import fs from "node:fs";
import path from "node:path";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, measurementDirectory } from "./lib/environment.ts";
import { brokerCpuSeconds, brokerMemory, runLoad } from "./lib/processes.ts";
import { lineChart, type Series } from "./lib/svg.ts";
import {
  describeLoadSettings,
  ensurePeersInstalled,
  PROMISES,
  type RunningSystem,
  SYSTEMS,
  type SystemName,
  startSystem,
} from "./peers/systems.ts";

const args = parseBenchArgs({
  usage: "bun run bench:peers [--seconds=5] [--consume=1000000] [--latency-seconds=10] [--rates=10000,50000]",
  options: { seconds: "5", consume: "1000000", "latency-seconds": "10", rates: "10000,50000" },
});
const seconds = args.number("seconds");
const consumeCount = args.number("consume");
const latencySeconds = args.number("latency-seconds");
const rates = args.text("rates").split(",").map(Number);
const LOAD = path.join(import.meta.dir, "peers", "load.ts");

const familyOf = (name: SystemName) =>
  name.startsWith("booblik") ? "booblik" : name.startsWith("nats") ? "nats" : "redis";

interface Measured {
  value: number;
  cpuSeconds: number;
  rssMiB: number;
  anonMiB: number;
}

async function measure(
  system: RunningSystem,
  mode: string,
  options: object,
): Promise<{ result: Record<string, unknown>; usage: Measured }> {
  const before = brokerCpuSeconds(system.pid);
  const result = (await runLoad(LOAD, [
    familyOf(system.name),
    mode,
    String(system.port),
    JSON.stringify(options),
  ])) as Record<string, unknown>;
  const memory = await brokerMemory(system.pid);
  return {
    result,
    usage: {
      value: Number(result.recordsPerSecond ?? 0),
      cpuSeconds: brokerCpuSeconds(system.pid) - before,
      rssMiB: memory.rssBytes / 2 ** 20,
      anonMiB: memory.anonymousBytes / 2 ** 20,
    },
  };
}

ensurePeersInstalled();
const directory = measurementDirectory("peers");
console.log(`# booblik against NATS JetStream and Redis Streams\n\n${describeMachine(directory.fileSystem)}`);
const versions: string[] = [];
const produce = new Map<string, Measured>();
const consume = new Map<SystemName, Measured>();
const latency = new Map<
  string,
  {
    records: number;
    expected: number;
    overloaded: boolean;
    p50Ms: number;
    p99Ms: number;
    p999Ms: number;
    maxMs: number;
    cdf: [number, number][];
  }
>();
try {
  for (const name of SYSTEMS) {
    for (const recordBytes of [100, 1024]) {
      for (const producers of [1, 16]) {
        const system = await startSystem(
          name,
          path.join(directory.path, `${name}-${recordBytes}-${producers}`),
        );
        if (versions.every((v) => !v.startsWith(name))) versions.push(`${name}: ${system.version}`);
        try {
          const { usage } = await measure(system, "produce", { recordBytes, producers, seconds });
          produce.set(`${name}/${recordBytes}/${producers}`, usage);
          console.error(`${name} produce ${recordBytes} B × ${producers}: ${formatRate(usage.value)}/s`);
        } finally {
          await system.stop();
        }
      }
    }
    const system = await startSystem(name, path.join(directory.path, `${name}-consume`));
    try {
      await runLoad(LOAD, [
        familyOf(name),
        "fill",
        String(system.port),
        JSON.stringify({ recordBytes: 100, count: consumeCount }),
      ]);
      const { usage } = await measure(system, "consume", { count: consumeCount });
      consume.set(name, usage);
      console.error(`${name} consume: ${formatRate(usage.value)}/s`);
      for (const rate of rates) {
        try {
          const { result } = await measure(system, "latency", {
            rate,
            seconds: latencySeconds,
            recordBytes: 100,
          });
          latency.set(`${name}/${rate}`, result as never);
          console.error(`${name} latency at ${rate}/s: p99 ${(result.p99Ms as number).toFixed(2)} ms`);
        } catch (error) {
          console.error(`${name} latency at ${rate}/s failed: ${(error as Error).message.slice(0, 200)}`);
        }
      }
    } finally {
      await system.stop();
    }
  }
} finally {
  directory.remove();
}

console.log("\nVersions:");
for (const version of versions) console.log(`- ${version}`);
console.log(`\nBatching: ${describeLoadSettings()}.`);
console.log("\nWhat an acknowledgement promises:");
for (const name of SYSTEMS) console.log(`- ${name}: ${PROMISES[name]}`);

const baseline = (name: SystemName): SystemName =>
  name === "redis-always" ? "booblik-force" : "booblik-append";
console.log(
  `\n## produce (${seconds} s per row; the ratio is booblik ÷ system, against booblik under the matching durability)\n`,
);
console.log(
  "| system | record B | producers | records/s | booblik ÷ it | server CPU s | server RSS MiB | anon MiB |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const name of SYSTEMS) {
  for (const recordBytes of [100, 1024]) {
    for (const producers of [1, 16]) {
      const row = produce.get(`${name}/${recordBytes}/${producers}`)!;
      const ours = produce.get(`${baseline(name)}/${recordBytes}/${producers}`)!;
      const ratio = name.startsWith("booblik") ? "-" : `${(ours.value / row.value).toFixed(1)}×`;
      console.log(
        `| ${name} | ${recordBytes} | ${producers} | ${formatRate(row.value)} | ${ratio} | ${row.cpuSeconds.toFixed(1)} | ${row.rssMiB.toFixed(0)} | ${row.anonMiB.toFixed(0)} |`,
      );
    }
  }
}
console.log(`\n## consume ${consumeCount} records of 100 B from the start\n`);
console.log("| system | records/s | booblik ÷ it | server CPU s | server RSS MiB | anon MiB |");
console.log("|---|---|---|---|---|---|");
for (const name of SYSTEMS) {
  const row = consume.get(name)!;
  const ours = consume.get(baseline(name))!;
  const ratio = name.startsWith("booblik") ? "-" : `${(ours.value / row.value).toFixed(1)}×`;
  console.log(
    `| ${name} | ${formatRate(row.value)} | ${ratio} | ${row.cpuSeconds.toFixed(1)} | ${row.rssMiB.toFixed(0)} | ${row.anonMiB.toFixed(0)} |`,
  );
}
console.log(`\n## end-to-end latency, 100 B records at a fixed rate for ${latencySeconds} s\n`);
console.log("| system | rate rec/s | p50 ms | p99 ms | p99.9 ms | max ms |");
console.log("|---|---|---|---|---|---|");
const series: Series[] = [];
for (const name of SYSTEMS) {
  for (const rate of rates) {
    const row = latency.get(`${name}/${rate}`);
    if (row === undefined || row.overloaded) {
      const got = row === undefined ? "the run failed" : `${row.records} of ${row.expected} records arrived`;
      console.log(`| ${name} | ${formatRate(rate)} | cannot sustain this rate (${got}) | | | |`);
      continue;
    }
    console.log(
      `| ${name} | ${formatRate(rate)} | ${row.p50Ms.toFixed(2)} | ${row.p99Ms.toFixed(2)} | ${row.p999Ms.toFixed(2)} | ${row.maxMs.toFixed(2)} |`,
    );
    if (rate === rates[0]) series.push({ name, points: row.cdf.map(([q, ms]) => [ms, q * 100]) });
  }
}
fs.mkdirSync("docs/charts", { recursive: true });
fs.writeFileSync(
  "docs/charts/peers-latency-cdf.svg",
  lineChart({
    title: `Produce → consume latency CDF at ${formatRate(rates[0]!)} records/s (100 B)`,
    xLabel: "latency, ms (log scale)",
    yLabel: "percentile",
    series,
    logX: true,
  }),
);
console.log("\nchart: docs/charts/peers-latency-cdf.svg");
