/**
 * `bun run bench:kafka`: kcat (librdkafka 2.0.2) producing to and consuming from booblik's Kafka
 * listener, one broker child process, topic durability `append` (acknowledged once written; no force
 * per batch), 1 partition. For each record size the same number of bytes is produced with kcat's
 * default batching (librdkafka: linger.ms 5, batch.num.messages 10000, batch.size 1000000), then
 * read back from the beginning to the end (`-e`), output to /dev/null. Sizes are interleaved and
 * repeated; each line prints median and range, the stored batch size and the broker's CPU.
 *
 * The fetch path is the copy path (src/kafka/records.ts): `Partition.read` (one pread, CRCs checked)
 * and each entry's batch sent without its 8-byte frame.
 */
import fs from "node:fs";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { newEntryScanResult, scanEntries } from "../src/record/entries.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { brokerCpuSeconds } from "./lib/processes.ts";

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const KCAT = Bun.which("kcat");
if (KCAT === null) {
  console.error("kcat is not installed (apt-get install -y kcat)");
  process.exit(2);
}
const BYTES_PER_RUN = Number(process.env.BOOBLIK_BENCH_KAFKA_MIB ?? 64) * 2 ** 20;
const SIZES = [100, 1024];
const REPEATS = Number(process.env.BOOBLIK_BENCH_REPEATS ?? 3);

const dir = measurementDirectory("kafka");
console.log(describeMachine(dir.fileSystem));
console.log(
  `kcat ${KCAT}, ${BYTES_PER_RUN / 2 ** 20} MiB of values per run, durability append, 1 partition, ${REPEATS} repeats interleaved`,
);

const child = Bun.spawn(
  [
    process.execPath,
    MAIN,
    "--data-dir",
    dir.path,
    "--port",
    "0",
    "--kafka-port",
    "0",
    "--durability",
    "append",
  ],
  { stdout: "pipe", stderr: "inherit" },
);
let kafkaPort = 0;
{
  const reader = child.stdout.getReader();
  let text = "";
  while (kafkaPort === 0) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`broker exited: ${text}`);
    text += new TextDecoder().decode(value);
    kafkaPort = Number(/Kafka protocol on [^:]+:(\d+)/.exec(text)?.[1] ?? 0);
  }
  reader.releaseLock();
  void (async () => {
    for await (const _ of child.stdout) {
      // keep draining
    }
  })().catch(() => undefined);
}
const broker = `127.0.0.1:${kafkaPort}`;
const admin = new Kafka({ brokers: [broker], logLevel: logLevel.NOTHING }).admin();
await admin.connect();

async function run(args: string[], stdinFile?: string): Promise<number> {
  const start = performance.now();
  const proc = Bun.spawn([KCAT!, "-b", broker, ...args], {
    stdin: stdinFile === undefined ? "ignore" : Bun.file(stdinFile),
    stdout: "ignore",
    stderr: "inherit",
  });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`kcat ${args.join(" ")} exited ${code}`);
  return (performance.now() - start) / 1000;
}

/** Average stored entry (batch) size of a topic's partition 0, from its segment files. */
function averageEntryBytes(topic: string): { entries: number; bytesPerEntry: number } {
  const partitionDir = path.join(dir.path, `${topic}-0`);
  let entries = 0;
  let bytes = 0;
  for (const name of fs.readdirSync(partitionDir).filter((n) => n.endsWith(".log"))) {
    const file = fs.readFileSync(path.join(partitionDir, name));
    const scan = scanEntries(
      file,
      32,
      file.length,
      { framing: "framed", verifyCrc: false },
      newEntryScanResult(),
      () => {
        entries++;
      },
    );
    bytes += scan.endPosition - 32;
  }
  return { entries, bytesPerEntry: entries === 0 ? 0 : bytes / entries };
}

const results = new Map<
  number,
  { produceMiBs: number[]; consumeMiBs: number[]; cpuPerGiB: number[]; entry: number }
>();
for (let repeat = 0; repeat < REPEATS; repeat++) {
  for (const size of SIZES) {
    const topic = `t${size}-${repeat}`;
    await admin.createTopics({
      topics: [{ topic, configEntries: [{ name: "booblik.durability", value: "append" }] }],
    });
    const count = Math.floor(BYTES_PER_RUN / size);
    const input = path.join(dir.path, `input-${size}.txt`);
    if (!fs.existsSync(input)) fs.writeFileSync(input, `${"x".repeat(size - 1)}\n`.repeat(count));
    const produceSeconds = await run(["-P", "-t", topic, "-p", "0"], input);
    const cpuBefore = brokerCpuSeconds(child.pid);
    const consumeSeconds = await run([
      "-C",
      "-t",
      topic,
      "-p",
      "0",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-f",
      "%o\\n",
    ]);
    const cpu = brokerCpuSeconds(child.pid) - cpuBefore;
    const mib = (count * size) / 2 ** 20;
    const entry = results.get(size) ?? { produceMiBs: [], consumeMiBs: [], cpuPerGiB: [], entry: 0 };
    entry.produceMiBs.push(mib / produceSeconds);
    entry.consumeMiBs.push(mib / consumeSeconds);
    entry.cpuPerGiB.push((cpu / mib) * 1024);
    entry.entry = averageEntryBytes(topic).bytesPerEntry;
    results.set(size, entry);
  }
}
await admin.disconnect();
child.kill("SIGTERM");
await child.exited;
dir.remove();

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const range = (values: number[]) => `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}`;
for (const [size, r] of results) {
  console.log(
    `record ${size} B, stored batches of ${(r.entry / 1024).toFixed(0)} KiB: produce ${median(r.produceMiBs).toFixed(0)} MiB/s (${range(r.produceMiBs)}), ` +
      `consume ${median(r.consumeMiBs).toFixed(0)} MiB/s (${range(r.consumeMiBs)}), broker CPU during consume ${median(r.cpuPerGiB).toFixed(1)} s/GiB`,
  );
}
