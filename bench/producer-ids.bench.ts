/**
 * Memory of remembered idempotent producer ids, with and without the broker-wide bound
 * (`--max-producer-ids`, PRODUCER_IDS_BROKER_DEFAULT_MAX; src/broker/producer-state.ts "Bounds"):
 * an embedded Broker on a real disk takes one batch of one 1-byte record from each of
 * `--ids-per-partition` new producer ids on each of `--partitions` partitions (`append`
 * durability, file write path), then prints how many ids it remembers, the heap after a full
 * collection and the process's RSS. Each variant runs in a child process of its own (a fresh heap),
 * the variants interleaved round by round (`--rounds`); median and range printed.
 *
 *   BOOBLIK_BENCH_DIR=<ext4 dir> bun bench/producer-ids.bench.ts [--rounds=3] [--partitions=40]
 *     [--ids-per-partition=10000]
 */
import { Broker } from "../src/broker/broker.ts";
import { PRODUCER_IDS_BROKER_DEFAULT_MAX } from "../src/domain/limits.ts";
import { encodeBatch } from "../src/record/batch.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, loadAverages, measurementDirectory } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const CHILD = "--child";

if (process.argv[2] === CHILD) {
  const [, , , max, partitionsText, idsText] = process.argv;
  const partitions = Number(partitionsText);
  const idsPerPartition = Number(idsText);
  const directory = measurementDirectory("producer-ids");
  const broker = Broker.open({
    dataDir: directory.path,
    topicDefaults: { durability: "append" },
    limits: { maxProducerIds: Number(max) },
  });
  broker.createTopic("t", { partitions });
  const value = new Uint8Array(1);
  let producerId = 1;
  for (let partition = 0; partition < partitions; partition++)
    for (let i = 0; i < idsPerPartition; i++)
      await broker.append(
        "t",
        partition,
        encodeBatch([{ key: null, value, timestamp: 1_700_000_000_000 }], {
          producerId: producerId++,
          producerEpoch: 0,
          baseSequence: 0,
        }),
      );
  Bun.gc(true);
  const memory = process.memoryUsage();
  console.log(
    JSON.stringify({
      remembered: broker.producerIdBudget.count,
      heapMiB: memory.heapUsed / 2 ** 20,
      rssMiB: memory.rss / 2 ** 20,
      fileSystem: directory.fileSystem,
    }),
  );
  await broker.close();
  directory.remove();
  process.exit(0);
}

const args = parseBenchArgs({
  usage: "bun bench/producer-ids.bench.ts [--rounds=3] [--partitions=40] [--ids-per-partition=10000]",
  options: { rounds: "3", partitions: "40", "ids-per-partition": "10000" },
});
const ROUNDS = args.number("rounds");
const PARTITIONS = args.number("partitions");
const IDS_PER_PARTITION = args.number("ids-per-partition");
const VARIANTS = [
  {
    name: `bounded (--max-producer-ids ${PRODUCER_IDS_BROKER_DEFAULT_MAX})`,
    max: PRODUCER_IDS_BROKER_DEFAULT_MAX,
  },
  { name: "unbounded (per partition only)", max: Number.MAX_SAFE_INTEGER },
];

interface Sample {
  remembered: number;
  heapMiB: number;
  rssMiB: number;
  fileSystem: string;
}
const samples = new Map<string, Sample[]>(VARIANTS.map((v) => [v.name, []]));
let fileSystem = "";
for (let round = 0; round < ROUNDS; round++) {
  // Interleaved, the order rotating each round.
  const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
  for (const variant of order) {
    const child = Bun.spawnSync(
      [
        process.execPath,
        import.meta.path,
        CHILD,
        String(variant.max),
        String(PARTITIONS),
        String(IDS_PER_PARTITION),
      ],
      { stdout: "pipe", stderr: "inherit", env: process.env },
    );
    if (child.exitCode !== 0) throw new Error(`the ${variant.name} child exited ${child.exitCode}`);
    const sample = JSON.parse(child.stdout.toString().trim().split("\n").at(-1)!) as Sample;
    fileSystem = sample.fileSystem;
    samples.get(variant.name)!.push(sample);
  }
}

console.log(describeMachine(fileSystem));
console.log(
  `${PARTITIONS} partitions x ${IDS_PER_PARTITION} new producer ids, one batch of one 1-byte record each, append durability; ${ROUNDS} rounds, load ${loadAverages()}`,
);
console.log("| variant | ids remembered | heap MiB after gc | RSS MiB |");
console.log("|---|---|---|---|");
for (const variant of VARIANTS) {
  const rows = samples.get(variant.name)!;
  console.log(
    `| ${variant.name} | ${medianRange(
      rows.map((r) => r.remembered),
      0,
    )} | ${medianRange(
      rows.map((r) => r.heapMiB),
      0,
    )} | ${medianRange(
      rows.map((r) => r.rssMiB),
      0,
    )} |`,
  );
}
