/**
 * `bun run bench:kafka`: kcat (librdkafka 2.0.2) producing to and consuming from booblik's Kafka
 * listener, one broker child process per fetch path, topic durability `append` (acknowledged once
 * written; no force per batch), 1 partition. For each record size the same number of bytes is
 * produced with kcat's default batching (librdkafka: linger.ms 5, batch.num.messages 10000,
 * batch.size 1000000), then read back from the beginning to the last record (`-c N -e`), output to
 * /dev/null. Sizes and fetch paths are interleaved and repeated; each line prints median and range,
 * the stored batch size and the broker's CPU.
 *
 * Then a raw fetch loop (no kcat): one connection, Fetch v11 one after the other with 16 MiB limits,
 * for what the broker's fetch path delivers over a socket when the client is not the bottleneck.
 *
 * `BOOBLIK_BENCH_KAFKA_BATCH_BYTES` sets kcat's batch.size for the produce runs (smaller stored
 * batches). Fetch paths (`BOOBLIK_BENCH_KAFKA_FETCH_PATHS`, default `copy,sendfile`; `--kafka-fetch-path`):
 * `copy` reads every entry with `Partition.read` (one pread, CRCs checked) and sends each batch
 * without its 8-byte frame; `sendfile` sends batches of KAFKA_SENDFILE_BATCH_BYTES_MIN and more
 * from their segment files (src/kafka/records.ts).
 */
import fs from "node:fs";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { newEntryScanResult, scanEntries } from "../src/record/entries.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { type BrokerHandle, brokerCpuSeconds, freePort, startBrokerProcess } from "./lib/processes.ts";
import { median } from "./lib/stats.ts";

const KCAT = Bun.which("kcat");
if (KCAT === null) {
  console.error("kcat is not installed (apt-get install -y kcat)");
  process.exit(2);
}
const BYTES_PER_RUN = Number(process.env.BOOBLIK_BENCH_KAFKA_MIB ?? 64) * 2 ** 20;
const SIZES = [100, 1024];
const REPEATS = Number(process.env.BOOBLIK_BENCH_REPEATS ?? 3);
const FETCH_PATHS = (process.env.BOOBLIK_BENCH_KAFKA_FETCH_PATHS ?? "copy,sendfile").split(",");
/** librdkafka's batch.size for the produce runs (its default: 1,000,000), to store smaller batches. */
const BATCH_BYTES = process.env.BOOBLIK_BENCH_KAFKA_BATCH_BYTES;
for (const fetchPath of FETCH_PATHS)
  if (fetchPath !== "copy" && fetchPath !== "sendfile") throw new Error(`unknown fetch path ${fetchPath}`);

const dir = measurementDirectory("kafka");
console.log(describeMachine(dir.fileSystem));
console.log(
  `kcat ${KCAT}, ${BYTES_PER_RUN / 2 ** 20} MiB of values per run, durability append, 1 partition, fetch paths ${FETCH_PATHS.join(", ")}, kcat batch.size ${BATCH_BYTES ?? "default (1000000)"}, ${REPEATS} repeats interleaved`,
);

interface BrokerUnderTest {
  readonly fetchPath: string;
  readonly handle: BrokerHandle;
  readonly kafkaPort: number;
  readonly dataDir: string;
  readonly admin: ReturnType<InstanceType<typeof Kafka>["admin"]>;
}

async function startBroker(fetchPath: string): Promise<BrokerUnderTest> {
  const dataDir = path.join(dir.path, fetchPath);
  // The Kafka listener is bound before the start line that startBrokerProcess waits for.
  const kafkaPort = freePort();
  const handle = await startBrokerProcess(dataDir, [
    "--kafka-port",
    String(kafkaPort),
    "--durability",
    "append",
    "--kafka-fetch-path",
    fetchPath,
  ]);
  const admin = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  return { fetchPath, handle, kafkaPort, dataDir, admin };
}

const brokers: BrokerUnderTest[] = [];

async function run(kafkaPort: number, args: string[], stdinFile?: string): Promise<number> {
  const start = performance.now();
  const proc = Bun.spawn([KCAT!, "-b", `127.0.0.1:${kafkaPort}`, ...args], {
    stdin: stdinFile === undefined ? "ignore" : Bun.file(stdinFile),
    stdout: "ignore",
    stderr: "inherit",
  });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`kcat ${args.join(" ")} exited ${code}`);
  return (performance.now() - start) / 1000;
}

/** Average stored entry (batch) size of a topic's partition 0, from its segment files. */
function averageEntryBytes(dataDir: string, topic: string): { entries: number; bytesPerEntry: number } {
  const partitionDir = path.join(dataDir, `${topic}-0`);
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

/**
 * A consumer without kcat: one connection, Fetch v11 requests one after the other from offset 0 to
 * the high watermark, `partition_max_bytes` = `max_bytes` = 16 MiB, responses parsed only as far as
 * the next offset. Measures the broker's fetch path over a socket. Returns the record bytes read.
 */
async function rawFetchLoop(kafkaPort: number, topic: string): Promise<number> {
  const socket = await new Promise<import("bun").Socket<undefined>>((resolve, reject) => {
    void Bun.connect<undefined>({
      hostname: "127.0.0.1",
      port: kafkaPort,
      socket: {
        binaryType: "uint8array",
        open: resolve,
        data(_s, chunk) {
          onChunk(chunk);
        },
        error(_s, error) {
          reject(error);
        },
      },
    }).catch(reject);
  });
  let chunks: Uint8Array[] = [];
  let held = 0;
  let wake: (() => void) | undefined;
  function onChunk(chunk: Uint8Array): void {
    chunks.push(chunk);
    held += chunk.length;
    wake?.();
  }
  /** The next response frame; chunks are joined once per frame, when it is all there. */
  async function response(): Promise<Uint8Array> {
    for (;;) {
      if (held >= 4) {
        if (chunks[0]!.length < 4) chunks = [Buffer.concat(chunks)];
        const head = chunks[0]!;
        const size = new DataView(head.buffer, head.byteOffset).getInt32(0);
        if (held >= 4 + size) {
          const all = chunks.length === 1 ? head : Buffer.concat(chunks);
          const frame = all.subarray(4, 4 + size);
          chunks = held > 4 + size ? [all.subarray(4 + size)] : [];
          held -= 4 + size;
          return frame;
        }
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  }
  const topicBytes = new TextEncoder().encode(topic);
  let offset = 0;
  let recordBytes = 0;
  for (;;) {
    // 83 bytes of fixed fields (size included) plus the topic name.
    const request = Buffer.alloc(83 + topicBytes.length);
    let at = 4;
    at = request.writeInt16BE(1, at); // Fetch
    at = request.writeInt16BE(11, at);
    at = request.writeInt32BE(offset & 0x7fffffff, at);
    at = request.writeInt16BE(-1, at); // client_id null
    at = request.writeInt32BE(-1, at); // replica_id
    at = request.writeInt32BE(0, at); // max_wait_ms
    at = request.writeInt32BE(1, at); // min_bytes
    at = request.writeInt32BE(16 << 20, at); // max_bytes
    at = request.writeInt8(0, at); // isolation
    at = request.writeInt32BE(0, at); // session_id
    at = request.writeInt32BE(-1, at); // session_epoch
    at = request.writeInt32BE(1, at);
    at = request.writeInt16BE(topicBytes.length, at);
    request.set(topicBytes, at);
    at += topicBytes.length;
    at = request.writeInt32BE(1, at);
    at = request.writeInt32BE(0, at); // partition
    at = request.writeInt32BE(-1, at); // current_leader_epoch
    at = request.writeBigInt64BE(BigInt(offset), at);
    at = request.writeBigInt64BE(-1n, at); // log_start_offset
    at = request.writeInt32BE(16 << 20, at); // partition_max_bytes
    at = request.writeInt32BE(0, at); // forgotten topics
    at = request.writeInt16BE(0, at); // rack_id ""
    request.writeInt32BE(at - 4, 0);
    socket.write(request.subarray(0, at));
    const frame = await response();
    const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    // correlation 4, throttle 4, error 2, session 4, topics 4, name, partitions 4, index 4, error 2,
    // hw 8, lso 8, log start 8, aborted 4, preferred replica 4, records length 4
    let p = 4 + 4 + 2 + 4 + 4;
    p += 2 + view.getInt16(p) + 4 + 4;
    const error = view.getInt16(p);
    const highWatermark = Number(view.getBigInt64(p + 2));
    p += 2 + 8 + 8 + 8 + 4 + 4;
    const length = view.getInt32(p);
    p += 4;
    if (error !== 0) throw new Error(`fetch error ${error}`);
    recordBytes += length;
    for (let b = p; b < p + length; b += 12 + view.getInt32(b + 8)) {
      offset = Number(view.getBigInt64(b)) + view.getInt32(b + 23) + 1;
    }
    if (offset >= highWatermark) break;
  }
  socket.end();
  return recordBytes;
}

const results = new Map<
  string,
  {
    produceMiBs: number[];
    consumeMiBs: number[];
    cpuPerGiB: number[];
    rawMiBs: number[];
    rawCpuPerGiB: number[];
    entry: number;
  }
>();
// The broker children must not outlive a failed run.
try {
  for (const fetchPath of FETCH_PATHS) brokers.push(await startBroker(fetchPath));
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    for (const size of SIZES) {
      // Alternate which fetch path goes first.
      const order = repeat % 2 === 0 ? brokers : [...brokers].reverse();
      for (const broker of order) {
        const topic = `t${size}-${repeat}`;
        await broker.admin.createTopics({
          topics: [{ topic, configEntries: [{ name: "booblik.durability", value: "append" }] }],
        });
        const count = Math.floor(BYTES_PER_RUN / size);
        const input = path.join(dir.path, `input-${size}.txt`);
        if (!fs.existsSync(input)) fs.writeFileSync(input, `${"x".repeat(size - 1)}\n`.repeat(count));
        const produceSeconds = await run(
          broker.kafkaPort,
          [
            "-P",
            "-t",
            topic,
            "-p",
            "0",
            ...(BATCH_BYTES === undefined ? [] : ["-X", `batch.size=${BATCH_BYTES}`]),
          ],
          input,
        );
        const cpuBefore = brokerCpuSeconds(broker.handle.pid);
        const consumeSeconds = await run(broker.kafkaPort, [
          "-C",
          "-t",
          topic,
          "-p",
          "0",
          "-o",
          "beginning",
          // -c: exit at the last record. With -e alone kcat also waits out one empty long poll at
          // the end (librdkafka's fetch.wait.max.ms, 500 ms), which is not consuming (seen with -d fetch).
          "-c",
          String(count),
          "-e",
          "-q",
          "-f",
          "%o\\n",
        ]);
        const cpu = brokerCpuSeconds(broker.handle.pid) - cpuBefore;
        const rawCpuBefore = brokerCpuSeconds(broker.handle.pid);
        const rawStart = performance.now();
        const rawBytes = await rawFetchLoop(broker.kafkaPort, topic);
        const rawSeconds = (performance.now() - rawStart) / 1000;
        const rawCpu = brokerCpuSeconds(broker.handle.pid) - rawCpuBefore;
        const mib = (count * size) / 2 ** 20;
        const key = `${size}/${broker.fetchPath}`;
        const entry = results.get(key) ?? {
          produceMiBs: [],
          consumeMiBs: [],
          cpuPerGiB: [],
          rawMiBs: [],
          rawCpuPerGiB: [],
          entry: 0,
        };
        entry.rawMiBs.push(rawBytes / 2 ** 20 / rawSeconds);
        entry.rawCpuPerGiB.push((rawCpu / (rawBytes / 2 ** 20)) * 1024);
        entry.produceMiBs.push(mib / produceSeconds);
        entry.consumeMiBs.push(mib / consumeSeconds);
        entry.cpuPerGiB.push((cpu / mib) * 1024);
        entry.entry = averageEntryBytes(broker.dataDir, topic).bytesPerEntry;
        results.set(key, entry);
      }
    }
  }
} finally {
  for (const broker of brokers) {
    await broker.admin.disconnect();
    await broker.handle.stop();
  }
}
dir.remove();

const range = (values: number[]) => `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}`;
for (const [key, r] of results) {
  const [size, fetchPath] = key.split("/");
  console.log(
    `record ${size} B, fetch path ${fetchPath}, stored batches of ${(r.entry / 1024).toFixed(0)} KiB: produce ${median(r.produceMiBs).toFixed(0)} MiB/s (${range(r.produceMiBs)}), ` +
      `consume ${median(r.consumeMiBs).toFixed(0)} MiB/s (${range(r.consumeMiBs)}), broker CPU during consume ${median(r.cpuPerGiB).toFixed(2)} s/GiB (${r.cpuPerGiB.map((v) => v.toFixed(2)).join(", ")}); ` +
      `raw fetch loop (16 MiB per fetch, batches as stored) ${median(r.rawMiBs).toFixed(0)} MiB/s (${range(r.rawMiBs)}), broker CPU ${median(r.rawCpuPerGiB).toFixed(2)} s/GiB (${r.rawCpuPerGiB.map((v) => v.toFixed(2)).join(", ")})`,
  );
}
