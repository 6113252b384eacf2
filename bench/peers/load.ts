/**
 * Load generator for bench/peers.bench.ts, one process per run, talking to one system through its
 * own client: booblik through its client library, NATS JetStream through the official `nats` client
 * (async publish with acks, an ordered pull consumer), Redis Streams through Bun's built-in Redis
 * client (auto-pipelined XADD; XRANGE and XREAD to consume).
 *
 *   bun load.ts <booblik|nats|redis> <produce|fill|consume|latency> <port> '<options JSON>'
 *
 * Prints one JSON line with the result.
 */
import { connect, StorageType } from "nats";
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer } from "../../src/client/consumer.ts";
import { forEachFetchedRecord } from "../../src/client/fetched.ts";
import { Producer } from "../../src/client/producer.ts";
import { RecordBatchReader, recordValue } from "../../src/record/batch.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { LOAD_SETTINGS } from "./systems.ts";

type Family = "booblik" | "nats" | "redis";
interface Options {
  recordBytes?: number;
  producers?: number;
  seconds?: number;
  count?: number;
  rate?: number;
}

const [familyText, mode, portText, optionsText] = process.argv.slice(2);
const family = familyText as Family;
const port = Number(portText);
const options = JSON.parse(optionsText ?? "{}") as Options;
const recordBytes = options.recordBytes ?? 100;
const TOPIC = "peers";
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

function value(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(recordBytes));
}

// --- What every system's produce load shares --------------------------------------------------------

/** One producer's view of the run: whether to go on, and counting what it sent. */
interface ProduceRun {
  /** Time left and records left. */
  more(): boolean;
  /** Records left (no clock read). */
  belowLimit(): boolean;
  sent(): void;
}

/**
 * Runs `producers` producer sessions side by side until `seconds` pass or `limit` records were sent
 * in all; returns the records sent.
 */
async function produceFor(
  seconds: number,
  producers: number,
  limit: number,
  session: (run: ProduceRun) => Promise<void>,
): Promise<number> {
  let records = 0;
  const end = performance.now() + seconds * 1000;
  const run: ProduceRun = {
    more: () => records < limit && performance.now() < end,
    belowLimit: () => records < limit,
    sent: () => {
      records++;
    },
  };
  await Promise.all(Array.from({ length: producers }, () => session(run)));
  return records;
}

/** Sends while `run` says so, with at most `window` acknowledgements outstanding. */
async function windowed(window: number, run: ProduceRun, send: () => Promise<unknown>): Promise<void> {
  const pending: Promise<unknown>[] = [];
  while (run.more()) {
    pending.push(send());
    run.sent();
    if (pending.length >= window) await pending.shift();
  }
  await Promise.all(pending);
}

// --- booblik ----------------------------------------------------------------------------------------

async function booblikClient(): Promise<BooblikClient> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port });
  await client.createTopic(TOPIC).catch((error: { code?: string }) => {
    if (error.code !== "TOPIC_EXISTS") throw error;
  });
  return client;
}

async function booblikProduce(
  seconds: number,
  producers: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<number> {
  const values = Array.from({ length: 64 }, value);
  return produceFor(seconds, producers, limit, async (run) => {
    const client = await booblikClient();
    const producer = new Producer(client, { bufferBytes: LOAD_SETTINGS.booblikBufferBytes });
    let i = 0;
    while (run.more()) {
      // The clock is read once per 4096 records, not per record: at millions of records/s a
      // performance.now() per record would be a measurable share of the sender's time.
      for (let k = 0; k < 4096 && run.belowLimit(); k++) {
        if (!producer.write(TOPIC, values[i++ & 63]!, { partition: 0 })) await producer.drained();
        run.sent();
      }
      // Let the other producers, the sockets and the acknowledgements run (the other systems'
      // loops do so while they wait on their publish windows).
      await new Promise((resolve) => setImmediate(resolve));
    }
    await producer.close();
    client.close();
  });
}

async function booblikConsume(count: number): Promise<number> {
  const client = await booblikClient();
  const consumer = new Consumer(client, { topic: TOPIC, from: "earliest", stopAtEnd: true });
  let records = 0;
  for await (const batch of consumer.batches()) {
    records += batch.count;
    if (records >= count) break;
  }
  client.close();
  return records;
}

// --- NATS JetStream ---------------------------------------------------------------------------------

async function natsConnection() {
  const nc = await connect({ servers: `127.0.0.1:${port}` });
  const jsm = await nc.jetstreamManager();
  await jsm.streams
    .add({ name: "PEERS", subjects: [TOPIC], storage: StorageType.File })
    .catch(() => undefined);
  return nc;
}

async function natsProduce(
  seconds: number,
  producers: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<number> {
  const values = Array.from({ length: 64 }, value);
  return produceFor(seconds, producers, limit, async (run) => {
    const nc = await natsConnection();
    const js = nc.jetstream();
    let i = 0;
    await windowed(LOAD_SETTINGS.natsPublishWindow, run, () => js.publish(TOPIC, values[i++ & 63]!));
    await nc.close();
  });
}

async function natsConsume(count: number): Promise<number> {
  const nc = await natsConnection();
  const consumer = await nc.jetstream().consumers.get("PEERS");
  const messages = await consumer.consume({ max_messages: LOAD_SETTINGS.consumeBatchRecords });
  let records = 0;
  for await (const _message of messages) {
    if (++records >= count) break;
  }
  await nc.close();
  return records;
}

// --- Redis Streams ----------------------------------------------------------------------------------

function redisClient(): InstanceType<typeof Bun.RedisClient> {
  return new Bun.RedisClient(`redis://127.0.0.1:${port}`);
}

async function redisProduce(
  seconds: number,
  producers: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<number> {
  const values = Array.from({ length: 64 }, () => Buffer.from(value()).toString("latin1"));
  return produceFor(seconds, producers, limit, async (run) => {
    const redis = redisClient();
    await redis.connect();
    let i = 0;
    await windowed(LOAD_SETTINGS.redisXaddWindow, run, () =>
      redis.send("XADD", [TOPIC, "*", "v", values[i++ & 63]!]),
    );
    redis.close();
  });
}

async function redisConsume(count: number): Promise<number> {
  const redis = redisClient();
  await redis.connect();
  let records = 0;
  let start = "-";
  while (records < count) {
    const entries = (await redis.send("XRANGE", [
      TOPIC,
      start,
      "+",
      "COUNT",
      String(LOAD_SETTINGS.consumeBatchRecords),
    ])) as [string, string[]][];
    if (entries.length === 0) break;
    records += entries.length;
    start = `(${entries.at(-1)![0]}`;
  }
  redis.close();
  return records;
}

// --- Latency ----------------------------------------------------------------------------------------

/**
 * A producer sends `rate` records/s (everything due, every millisecond; each record carries the time
 * it was due); a consumer on another connection measures due → arrival per record.
 */
async function latency(rate: number, seconds: number): Promise<number[]> {
  const total = rate * seconds;
  const latencies: number[] = [];
  const payload = new Uint8Array(Math.max(16, recordBytes));
  const stamp = (dueUs: number) => {
    const copy = payload.slice();
    new DataView(copy.buffer).setFloat64(0, dueUs, false);
    return copy;
  };
  const arrived = (bytes: Uint8Array, atUs: number) =>
    latencies.push(atUs - new DataView(bytes.buffer, bytes.byteOffset, 8).getFloat64(0, false));
  let send: (records: Uint8Array[]) => void;
  let consume: () => Promise<void>;
  let finish: () => Promise<void>;
  if (family === "booblik") {
    const producer = await booblikClient();
    const consumer = await booblikClient();
    const pending: Promise<unknown>[] = [];
    const reader = new RecordBatchReader();
    // A sender that fell behind sends its backlog at once: in batches of at most half a MiB, so
    // that each stays within the topic's 1 MiB batch limit.
    const perBatch = Math.max(1, Math.floor((512 * 1024) / (payload.length + 16)));
    send = (records) => {
      for (let i = 0; i < records.length; i += perBatch)
        pending.push(producer.produce(TOPIC, 0, batchOfValues(records.slice(i, i + perBatch))));
    };
    consume = async () => {
      let offset = (await consumer.listOffsets(TOPIC, 0)).nextOffset;
      while (latencies.length < total) {
        const result = await consumer.fetch(TOPIC, 0, offset, { maxWaitMs: 1000 });
        const at = nowUs();
        forEachFetchedRecord(result.records, result.batchBounds, offset, reader, (record) =>
          arrived(recordValue(record)!, at),
        );
        offset += result.recordCount;
      }
    };
    finish = async () => {
      await Promise.all(pending);
      producer.close();
      consumer.close();
    };
  } else if (family === "nats") {
    const producer = await natsConnection();
    const consumerConnection = await natsConnection();
    const js = producer.jetstream();
    const info = await (await producer.jetstreamManager()).streams.info("PEERS");
    // An ordered consumer that starts after what earlier runs left in the stream.
    const consumer = await consumerConnection
      .jetstream()
      .consumers.get("PEERS", { opt_start_seq: info.state.last_seq + 1 });
    const pending: Promise<unknown>[] = [];
    send = (records) => {
      for (const record of records) pending.push(js.publish(TOPIC, record));
    };
    consume = async () => {
      const messages = await consumer.consume({ max_messages: LOAD_SETTINGS.consumeBatchRecords });
      for await (const message of messages) {
        arrived(message.data, nowUs());
        if (latencies.length >= total) break;
      }
    };
    finish = async () => {
      await Promise.all(pending);
      await producer.close();
      await consumerConnection.close();
    };
  } else {
    const producer = redisClient();
    const consumer = redisClient();
    await producer.connect();
    await consumer.connect();
    const pending: Promise<unknown>[] = [];
    send = (records) => {
      for (const record of records)
        pending.push(producer.send("XADD", [TOPIC, "*", "v", Buffer.from(record).toString("latin1")]));
    };
    consume = async () => {
      let last = "$";
      while (latencies.length < total) {
        // Bun's client speaks RESP3: the reply is a map from stream name to entries (null on timeout).
        const reply = (await consumer.send("XREAD", [
          "COUNT",
          "10000",
          "BLOCK",
          "1000",
          "STREAMS",
          TOPIC,
          last,
        ])) as Record<string, [string, string[]][]> | null;
        const at = nowUs();
        const entries = reply?.[TOPIC];
        if (entries === undefined) continue;
        for (const [id, fields] of entries) {
          arrived(Buffer.from(fields[1]!, "latin1"), at);
          last = id;
        }
      }
    };
    finish = async () => {
      await Promise.all(pending);
      producer.close();
      consumer.close();
    };
  }
  const consuming = consume();
  await new Promise((resolve) => setTimeout(resolve, 200)); // the consumer is waiting before the first record
  const perMs = rate / 1000;
  const startUs = nowUs();
  let sent = 0;
  while (sent < total) {
    const now = nowUs();
    const batch: Uint8Array[] = [];
    while (sent < total && startUs + (sent / perMs) * 1000 <= now)
      batch.push(stamp(startUs + (sent++ / perMs) * 1000));
    if (batch.length > 0) send(batch);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  // A system that cannot keep up never delivers everything: stop waiting a while after the last send.
  const timedOut = await Promise.race([
    consuming.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 15_000)),
  ]);
  const failed = await finish().then(
    () => false,
    () => true,
  );
  overloaded = timedOut || failed;
  return latencies.sort((a, b) => a - b);
}

/** The system could not take the rate: publishes failed or records never arrived. */
let overloaded = false;

// --- Entry ------------------------------------------------------------------------------------------

const produceOf = { booblik: booblikProduce, nats: natsProduce, redis: redisProduce }[family];
const consumeOf = { booblik: booblikConsume, nats: natsConsume, redis: redisConsume }[family];
const started = performance.now();
if (mode === "produce" || mode === "fill") {
  const records =
    mode === "fill"
      ? await produceOf(3600, options.producers ?? 4, options.count ?? 1_000_000)
      : await produceOf(options.seconds ?? 5, options.producers ?? 1);
  const seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ records, seconds, recordsPerSecond: records / seconds }));
} else if (mode === "consume") {
  const records = await consumeOf(options.count ?? 1_000_000);
  const seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ records, seconds, recordsPerSecond: records / seconds }));
} else if (mode === "latency") {
  const sorted = await latency(options.rate ?? 10_000, options.seconds ?? 10);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! / 1000;
  const cdf = Array.from({ length: 200 }, (_, i) => {
    const q = 1 - 10 ** (-(i / 199) * 3.5); // denser towards the tail
    return [q, at(q)];
  });
  console.log(
    JSON.stringify({
      records: sorted.length,
      expected: (options.rate ?? 10_000) * (options.seconds ?? 10),
      overloaded,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      p999Ms: at(0.999),
      maxMs: sorted.at(-1)! / 1000,
      cdf,
    }),
  );
} else {
  throw new Error(`unknown mode ${mode}`);
}
process.exit(0);
