/**
 * booblik against its peers, NATS JetStream (file storage) and Redis Streams (AOF), on the same
 * machine in one run, each driven the way its own users measure it at its best (issue 13):
 *
 *   bun run bench:peers [--seconds=3] [--rounds=3] [--sections=produce,consume,latency]
 *     [--depths=1,10,100,1000] [--connections=1,16] [--pairings=append,force] [--single=yes|no]
 *     [--consume-depths=1,10,100,1000] [--consume-records=200000] [--latency-seconds=5] [--rates=10000,50000]
 *
 * Produce, one row per shape: `depth` records per round trip on each of `connections` connections,
 * one round trip in flight per connection. booblik: bench/load/produce-pipelined.ts, one PRODUCE of
 * `depth` records per round trip (and with --single=yes also `depth` PRODUCEs of one record each in
 * one socket write); Redis: `redis-benchmark -P depth -c connections XADD peers * v <value>`; NATS:
 * `nats bench js pub async --batch depth --clients connections` (natscli, NATS's own tool; built with
 * `go install` when missing, else the official nats.js client with the same rounds). Every system is
 * sent the same 100 ASCII bytes (bench/lib/peer-tools.ts), as bytes, and one record is read back
 * from each run and compared byte for byte.
 *
 * Consume, one row per `depth` records per round trip: booblik FETCH of one batch of `depth` records
 * (the topic was written in batches of `depth`), Redis `XRANGE … COUNT depth`, JetStream pull
 * `fetch` of `depth` messages; each consumer reads from the start and compares every value.
 *
 * Latency: a fixed rate of 100 B records, produce → consume, each system through its own client.
 *
 * Every run starts its system afresh in a new data directory after a `sync`; systems are
 * interleaved (the order rotates each round); `--rounds` repetitions; median and range are printed,
 * and the 1-minute load average range over the row's runs. Durability pairs: booblik `append` with
 * Redis `everysec` and JetStream (2.9 defaults); booblik `force` with Redis `always` (no forced NATS:
 * nats-server 2.9 has no per-message sync). Data goes to BOOBLIK_BENCH_DIR (never tmpfs).
 * Chart: docs/charts/peers-latency-cdf.svg.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, formatRate, loadAverage, measurementDirectory } from "./lib/environment.ts";
import {
  countFor,
  PEER_VALUE,
  redisBenchmarkXadd,
  rememberRate,
  verifyRedisRecord,
} from "./lib/peer-tools.ts";
import { brokerCpuSeconds, brokerMemory, runLoad } from "./lib/processes.ts";
import { median, medianRange } from "./lib/stats.ts";
import { lineChart, type Series } from "./lib/svg.ts";
import {
  ensurePeersInstalled,
  familyOf,
  NATS_STREAM,
  PAIRINGS,
  type Pairing,
  PROMISES,
  type RunningSystem,
  type SystemName,
  startSystem,
  TOPIC,
  versionOf,
} from "./peers/systems.ts";

const USAGE =
  "bun run bench:peers [--seconds=3] [--rounds=3] [--sections=produce,consume,latency] [--depths=1,10,100,1000] " +
  "[--connections=1,16] [--pairings=append,force] [--single=yes|no] [--consume-depths=1,10,100,1000] " +
  "[--consume-records=200000] [--latency-seconds=5] [--rates=10000,50000]";
const args = parseBenchArgs({
  usage: USAGE,
  options: {
    seconds: "3",
    rounds: "3",
    sections: "produce,consume,latency",
    depths: "1,10,100,1000",
    connections: "1,16",
    pairings: "append,force",
    single: "yes",
    "consume-depths": "1,10,100,1000",
    "consume-records": "200000",
    "latency-seconds": "5",
    rates: "10000,50000",
  },
});
const numbers = (name: "depths" | "connections" | "consume-depths" | "rates") =>
  args
    .text(name)
    .split(",")
    .map((text) => {
      const value = Number(text);
      if (!Number.isInteger(value) || value <= 0) {
        console.error(`--${name}: ${text} is not a positive integer\nusage: ${USAGE}`);
        process.exit(2);
      }
      return value;
    });
const seconds = args.number("seconds");
const rounds = args.number("rounds");
const sections = new Set(args.text("sections").split(","));
const depths = numbers("depths");
const connectionCounts = numbers("connections");
const pairings = args.text("pairings").split(",") as Pairing[];
for (const pairing of pairings)
  if (!(pairing in PAIRINGS)) {
    console.error(`--pairings: unknown ${pairing}\nusage: ${USAGE}`);
    process.exit(2);
  }
const single = args.text("single") === "yes";
const consumeDepths = numbers("consume-depths");
const consumeRecords = args.number("consume-records");
const latencySeconds = args.number("latency-seconds");
const rates = numbers("rates");
const RECORD_BYTES = PEER_VALUE.length;
const LOAD = path.join(import.meta.dir, "peers", "load.ts");
const PIPELINED = path.join(import.meta.dir, "load", "produce-pipelined.ts");

/** A produce variant: a system, and for booblik how a round trip's records are split into requests. */
type Variant = SystemName | "booblik-append-single" | "booblik-force-single";
const systemOf = (variant: Variant): SystemName => variant.replace("-single", "") as SystemName;

interface Sample {
  recordsPerSecond: number;
  cpuMicrosPerRecord: number;
  rssMiB: number;
  anonMiB: number;
  load: number;
}

const benchStarted = performance.now();
const natscli = ensurePeersInstalled();
const directory = measurementDirectory("peers");
let runNumber = 0;
const freshDir = () => path.join(directory.path, `run-${runNumber++}`);

/** A payload file for `nats bench --payload`: PEER_VALUE's bytes. */
const payloadFile = path.join(directory.path, "payload");
fs.writeFileSync(payloadFile, PEER_VALUE);

function natsBench(port: number, depth: number, connections: number, messages: number): number {
  const bench = Bun.spawnSync([
    natscli!,
    "bench",
    "js",
    "pub",
    "async",
    TOPIC,
    "-s",
    `nats://127.0.0.1:${port}`,
    "--batch",
    String(depth),
    "--clients",
    String(connections),
    "--msgs",
    String(messages),
    "--size",
    String(RECORD_BYTES),
    "--payload",
    payloadFile,
    "--create",
    "--storage",
    "file",
    "--stream",
    NATS_STREAM,
    "--no-progress",
  ]);
  const text = bench.stdout.toString();
  const rate = Number(
    /publisher (?:aggregated )?stats: ([\d,]+) msgs\/sec/.exec(text)?.[1]?.replaceAll(",", ""),
  );
  if (bench.exitCode !== 0 || !Number.isFinite(rate) || rate <= 0)
    throw new Error(
      `nats bench failed (exit ${bench.exitCode}): ${text.slice(-400)} ${bench.stderr.toString().slice(-400)}`,
    );
  return rate;
}

async function sample(
  system: RunningSystem,
  run: () => Promise<{ records: number; recordsPerSecond: number }>,
  load: number,
): Promise<Sample> {
  const before = brokerCpuSeconds(system.pid);
  const result = await run();
  const cpu = brokerCpuSeconds(system.pid) - before;
  const memory = await brokerMemory(system.pid);
  return {
    recordsPerSecond: result.recordsPerSecond,
    cpuMicrosPerRecord: (cpu / result.records) * 1e6,
    rssMiB: memory.rssBytes / 2 ** 20,
    anonMiB: memory.anonymousBytes / 2 ** 20,
    load,
  };
}

async function produceOnce(variant: Variant, depth: number, connections: number): Promise<Sample> {
  const load = loadAverage();
  const name = systemOf(variant);
  const system = await startSystem(name, freshDir());
  try {
    const family = familyOf(name);
    let measured: Sample;
    if (family === "booblik") {
      // One request of `depth` records per round trip, or (single) `depth` one-record requests.
      const [batch, pipeline] = variant.endsWith("-single") ? [1, depth] : [depth, 1];
      measured = await sample(
        system,
        async () =>
          (await runLoad(PIPELINED, [
            String(system.port),
            TOPIC,
            String(RECORD_BYTES),
            String(batch),
            String(connections),
            String(seconds),
            String(pipeline),
          ])) as { records: number; recordsPerSecond: number },
        load,
      );
      await runLoad(LOAD, ["booblik", "verify", String(system.port), "{}"]);
    } else if (family === "redis") {
      const key = `${name}/${depth}/${connections}`;
      const xadd = (requests: number) =>
        redisBenchmarkXadd({ port: system.port, connections, pipeline: depth, requests, stream: TOPIC });
      const requests = await countFor(
        key,
        seconds,
        (n) => xadd(n).recordsPerSecond,
        Math.max(2_000, 2 * depth * connections),
      );
      measured = await sample(
        system,
        async () => {
          const result = xadd(requests);
          rememberRate(key, result.recordsPerSecond);
          // CPU per record over the whole run (redis-benchmark's rate excludes its own start).
          return {
            records: result.recordsPerSecond * result.seconds,
            recordsPerSecond: result.recordsPerSecond,
          };
        },
        load,
      );
      verifyRedisRecord(system.port, TOPIC);
    } else {
      if (natscli === undefined) {
        measured = await sample(
          system,
          async () =>
            (await runLoad(LOAD, [
              "nats",
              "produce",
              String(system.port),
              JSON.stringify({ depth, connections, seconds }),
            ])) as {
              records: number;
              recordsPerSecond: number;
            },
          load,
        );
      } else {
        const key = `${name}/${depth}/${connections}`;
        const messages = await countFor(
          key,
          seconds,
          (n) => natsBench(system.port, depth, connections, n),
          Math.max(2_000, 2 * depth * connections),
        );
        measured = await sample(
          system,
          async () => {
            const rate = natsBench(system.port, depth, connections, messages);
            rememberRate(key, rate);
            return { records: messages, recordsPerSecond: rate };
          },
          load,
        );
      }
      await runLoad(LOAD, ["nats", "verify", String(system.port), "{}"]);
    }
    return measured;
  } finally {
    await system.stop();
  }
}

/** One round of consume for one system: a fresh start, fills, then every depth in turn. */
async function consumeRound(name: SystemName, samples: Map<string, Sample[]>): Promise<void> {
  const system = await startSystem(name, freshDir());
  try {
    const family = familyOf(name);
    const port = String(system.port);
    // booblik: one topic per depth, written in batches of that depth; the others: one stream.
    if (family === "booblik") {
      for (const depth of consumeDepths)
        await runLoad(LOAD, [
          family,
          "fill",
          port,
          JSON.stringify({ count: consumeRecords, depth, topic: `${TOPIC}-${depth}` }),
        ]);
    } else if (family === "redis") {
      redisBenchmarkXadd({
        port: system.port,
        connections: 1,
        pipeline: 1000,
        requests: consumeRecords,
        stream: TOPIC,
      });
      verifyRedisRecord(system.port, TOPIC);
    } else if (natscli !== undefined) {
      natsBench(system.port, 1000, 1, consumeRecords);
    } else {
      await runLoad(LOAD, [family, "fill", port, JSON.stringify({ count: consumeRecords })]);
    }
    for (const depth of consumeDepths) {
      const load = loadAverage();
      const topic = family === "booblik" ? `${TOPIC}-${depth}` : TOPIC;
      const measured = await sample(
        system,
        async () =>
          (await runLoad(LOAD, [
            family,
            "consume",
            port,
            JSON.stringify({ count: consumeRecords, depth, seconds, topic }),
          ])) as { records: number; recordsPerSecond: number },
        load,
      );
      const key = `${name}/${depth}`;
      samples.set(key, [...(samples.get(key) ?? []), measured]);
      console.error(
        `consume ${name} ${depth}/round trip: ${formatRate(measured.recordsPerSecond)}/s (load ${load})`,
      );
    }
  } finally {
    await system.stop();
  }
}

interface LatencyResult {
  records: number;
  expected: number;
  overloaded: boolean;
  /** Sends that failed (timed out): the system fell behind. */
  sendFailures: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  cdf: [number, number][];
  load: number;
}

async function latencyOnce(name: SystemName, rate: number): Promise<LatencyResult> {
  const load = loadAverage();
  const system = await startSystem(name, freshDir());
  try {
    const result = (await runLoad(LOAD, [
      familyOf(name),
      "latency",
      String(system.port),
      JSON.stringify({ rate, seconds: latencySeconds }),
    ])) as LatencyResult;
    return { ...result, load };
  } finally {
    await system.stop();
  }
}

/** The order of round `round`: the list rotated by `round`, so that no system always goes first. */
const rotated = <T>(list: readonly T[], round: number): T[] =>
  list.map((_, i) => list[(i + round) % list.length]!);
const cell = (values: number[], format: (value: number) => string = formatRate) =>
  values.length === 0 ? "-" : medianRange(values, format, "–");
const loads = (samples: { load: number }[]) =>
  `${Math.min(...samples.map((s) => s.load)).toFixed(1)}–${Math.max(...samples.map((s) => s.load)).toFixed(1)}`;
const ratio = (ours: Sample[] | undefined, theirs: Sample[] | undefined) =>
  ours === undefined || theirs === undefined
    ? "-"
    : `${(median(ours.map((s) => s.recordsPerSecond)) / median(theirs.map((s) => s.recordsPerSecond))).toFixed(2)}×`;
const perSystem = (
  variants: readonly Variant[],
  runs: Map<Variant, Sample[]>,
  pick: (s: Sample) => number,
  digits: number,
) => variants.map((v) => (runs.has(v) ? median(runs.get(v)!.map(pick)).toFixed(digits) : "-")).join(", ");

console.log(`# booblik against NATS JetStream and Redis Streams\n\n${describeMachine(directory.fileSystem)}`);
console.log(
  `${os.cpus().length} cores shared by the servers and their load generators; ${seconds} s per run; ${rounds} rounds; ` +
    `systems interleaved (order rotated each round); a fresh data directory and \`sync\` before each run; ` +
    `${RECORD_BYTES} B records, every system sent the same bytes (one read back per run)`,
);
console.log("\nVersions:");
for (const name of ["booblik-append", "redis-everysec", "nats-jetstream"] as SystemName[])
  console.log(`- ${name.split("-")[0]}: ${versionOf(name, natscli)}`);
console.log("\nWhat an acknowledgement promises:");
for (const name of Object.keys(PROMISES) as SystemName[]) console.log(`- ${name}: ${PROMISES[name]}`);

try {
  if (sections.has("produce")) {
    console.log(
      `\n## produce: records per round trip × connections, one round trip in flight per connection (${seconds} s per run)\n`,
    );
    console.log(
      `booblik: bench/load/produce-pipelined.ts, one PRODUCE of n records per round trip${single ? ' (and "1 × n": n one-record PRODUCEs in one socket write)' : ""}; ` +
        `Redis: redis-benchmark -P n XADD; NATS: ${natscli === undefined ? "nats.js, n async publishes then wait for their acks" : "nats bench js pub async --batch n"}. ` +
        "Ratios are booblik (one request of n) ÷ the peer, medians. Server CPU: µs of the server process's user+system time per record. " +
        "RSS and anonymous memory of the server after the run.\n",
    );
    console.log(
      "| pairing | conns | records per round trip | load avg | booblik records/s median (range) | booblik 1 × n requests | Redis | NATS | booblik ÷ Redis | booblik ÷ NATS | server CPU µs/record booblik, 1×n, Redis, NATS | server RSS MiB | anon MiB |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const pairing of pairings) {
      for (const connections of connectionCounts) {
        for (const depth of depths) {
          const base = PAIRINGS[pairing];
          const booblik = base[0];
          const variants: Variant[] = [...base];
          if (single && depth > 1) variants.splice(1, 0, `${booblik}-single` as Variant);
          const runs = new Map<Variant, Sample[]>();
          for (let round = 0; round < rounds; round++) {
            for (const variant of rotated(variants, round)) {
              try {
                const measured = await produceOnce(variant, depth, connections);
                runs.set(variant, [...(runs.get(variant) ?? []), measured]);
                console.error(
                  `produce ${pairing} ${connections}c ${depth}/rt ${variant}: ${formatRate(measured.recordsPerSecond)}/s (load ${measured.load})`,
                );
              } catch (error) {
                console.error(
                  `produce ${variant} ${depth} × ${connections} failed: ${(error as Error).message.slice(0, 300)}`,
                );
              }
            }
          }
          const all = [...runs.values()].flat();
          const rate = (v: Variant) =>
            runs.has(v) ? cell(runs.get(v)!.map((s) => s.recordsPerSecond)) : "-";
          const redis = base[1];
          const nats = base.length > 2 ? (base[2] as Variant) : undefined;
          const columns: Variant[] = [
            booblik,
            `${booblik}-single` as Variant,
            redis,
            ...(nats ? [nats] : []),
          ];
          console.log(
            `| ${pairing} (Redis ${redis.replace("redis-", "")}) | ${connections} | ${depth} | ${all.length ? loads(all) : "-"} | ${rate(booblik)} | ${rate(`${booblik}-single` as Variant)} | ${rate(redis)} | ${nats ? rate(nats) : "no forced NATS in 2.9"} | ${ratio(runs.get(booblik), runs.get(redis))} | ${nats ? ratio(runs.get(booblik), runs.get(nats)) : "-"} | ${perSystem(
              columns,
              runs,
              (s) => s.cpuMicrosPerRecord,
              2,
            )} | ${perSystem(columns, runs, (s) => s.rssMiB, 0)} | ${perSystem(columns, runs, (s) => s.anonMiB, 0)} |`,
          );
        }
      }
    }
  }

  if (sections.has("consume")) {
    const systems: SystemName[] = ["booblik-append", "redis-everysec", "nats-jetstream"];
    console.log(
      `\n## consume: ${formatRate(consumeRecords)} records of ${RECORD_BYTES} B from the start, records per round trip, every value checked (${seconds} s or more per run)\n`,
    );
    console.log(
      "booblik: client.fetch of one batch of n records (the topic written in batches of n); Redis: XRANGE … COUNT n (Bun's client); " +
        "NATS: ordered pull consumer, fetch of n messages (nats.js). Each pass reads from the start; passes repeat until the time is up. " +
        "Servers: booblik append, Redis everysec, JetStream defaults (consume does not depend on the fsync policy).\n",
    );
    const samples = new Map<string, Sample[]>();
    for (let round = 0; round < rounds; round++)
      for (const name of rotated(systems, round)) {
        try {
          await consumeRound(name, samples);
        } catch (error) {
          console.error(`consume ${name} failed: ${(error as Error).message.slice(0, 300)}`);
        }
      }
    console.log(
      "| records per round trip | load avg | booblik records/s median (range) | Redis | NATS | booblik ÷ Redis | booblik ÷ NATS | server CPU µs/record booblik, Redis, NATS | server RSS MiB | anon MiB |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|");
    for (const depth of consumeDepths) {
      const of = (name: SystemName) => samples.get(`${name}/${depth}`);
      const all = systems.flatMap((name) => of(name) ?? []);
      const rate = (name: SystemName) => cell((of(name) ?? []).map((s) => s.recordsPerSecond));
      const each = (pick: (s: Sample) => number, digits: number) =>
        systems.map((name) => (of(name) ? median(of(name)!.map(pick)).toFixed(digits) : "-")).join(", ");
      console.log(
        `| ${depth} | ${all.length ? loads(all) : "-"} | ${rate("booblik-append")} | ${rate("redis-everysec")} | ${rate("nats-jetstream")} | ${ratio(of("booblik-append"), of("redis-everysec"))} | ${ratio(of("booblik-append"), of("nats-jetstream"))} | ${each((s) => s.cpuMicrosPerRecord, 2)} | ${each((s) => s.rssMiB, 0)} | ${each((s) => s.anonMiB, 0)} |`,
      );
    }
  }

  if (sections.has("latency")) {
    const systems = pairings.flatMap((pairing) => [...PAIRINGS[pairing]]) as SystemName[];
    console.log(
      `\n## end-to-end latency: ${RECORD_BYTES} B records at a fixed rate for ${latencySeconds} s, produce → consume, each system's own client\n`,
    );
    console.log(
      "booblik: client produce of what is due each millisecond as one batch, fetch with maxWaitMs; Redis: one XADD per record (Bun's client), XREAD BLOCK; " +
        "NATS: one js.publish per record, ordered consumer (nats.js). Median of the runs' percentiles (range).\n",
    );
    const results = new Map<string, LatencyResult[]>();
    for (let round = 0; round < rounds; round++)
      for (const rate of rates)
        for (const name of rotated(systems, round)) {
          try {
            const result = await latencyOnce(name, rate);
            const key = `${name}/${rate}`;
            results.set(key, [...(results.get(key) ?? []), result]);
            console.error(
              `latency ${name} ${rate}/s: p99 ${result.p99Ms.toFixed(2)} ms (load ${result.load})`,
            );
          } catch (error) {
            console.error(`latency ${name} at ${rate}/s failed: ${(error as Error).message.slice(0, 300)}`);
          }
        }
    console.log("| system | rate rec/s | load avg | p50 ms | p99 ms | p99.9 ms | max ms |");
    console.log("|---|---|---|---|---|---|---|");
    const ms = (value: number) => value.toFixed(2);
    const series: Series[] = [];
    for (const name of systems)
      for (const rate of rates) {
        const runs = results.get(`${name}/${rate}`) ?? [];
        const good = runs.filter((r) => !r.overloaded);
        if (good.length < runs.length || runs.length === 0) {
          const got = runs
            .map((r) => `${r.records} of ${r.expected}, ${r.sendFailures} sends failed`)
            .join("; ");
          console.log(
            `| ${name} | ${formatRate(rate)} | ${runs.length ? loads(runs) : "-"} | cannot sustain this rate in ${runs.length - good.length} of ${runs.length} runs (records arrived: ${got || "the runs failed"}) | | | |`,
          );
          continue;
        }
        console.log(
          `| ${name} | ${formatRate(rate)} | ${loads(runs)} | ${cell(
            runs.map((r) => r.p50Ms),
            ms,
          )} | ${cell(
            runs.map((r) => r.p99Ms),
            ms,
          )} | ${cell(
            runs.map((r) => r.p999Ms),
            ms,
          )} | ${cell(
            runs.map((r) => r.maxMs),
            ms,
          )} |`,
        );
        if (rate === rates[0]) {
          const middle = [...runs].sort((a, b) => a.p99Ms - b.p99Ms)[Math.floor(runs.length / 2)]!;
          series.push({ name, points: middle.cdf.map(([q, at]) => [at, q * 100]) });
        }
      }
    if (series.length > 0) {
      fs.mkdirSync("docs/charts", { recursive: true });
      fs.writeFileSync(
        "docs/charts/peers-latency-cdf.svg",
        lineChart({
          title: `Produce → consume latency CDF at ${formatRate(rates[0]!)} records/s (100 B), the median run by p99`,
          xLabel: "latency, ms (log scale)",
          yLabel: "percentile",
          series,
          logX: true,
        }),
      );
      console.log("\nchart: docs/charts/peers-latency-cdf.svg");
    }
  }
} finally {
  directory.remove();
}
console.log(`\nwhole run: ${((performance.now() - benchStarted) / 60_000).toFixed(1)} min`);
