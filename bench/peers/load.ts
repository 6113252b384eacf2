/**
 * Load generator for bench/peers.bench.ts, one process per run, talking to one system through its
 * own client: booblik through its client library, NATS JetStream through the official `nats` client,
 * Redis Streams through Bun's built-in Redis client. (Produce is driven by each system's pipelined
 * tool instead where one exists: bench/load/produce-pipelined.ts, redis-benchmark, `nats bench`; the
 * `produce` mode here is the nats.js fallback for a machine without natscli.)
 *
 *   bun load.ts <booblik|nats|redis> <fill|produce|consume|verify|latency> <port> '<options JSON>'
 *
 * Every value written is PEER_VALUE (100 ASCII bytes, bench/lib/peer-tools.ts), sent as those bytes:
 * Redis's client sends the ASCII string, whose UTF-8 form is the same 100 bytes. Every consumer here
 * compares every value it reads with PEER_VALUE and exits 1 on the first that differs.
 *
 * Prints one JSON line with the result.
 */
import { connect, type NatsConnection, StorageType } from "nats";
import { BooblikClient } from "../../src/client/client.ts";
import { forEachFetchedRecord } from "../../src/client/fetched.ts";
import { RecordBatchReader, type RecordView, recordValue } from "../../src/record/batch.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { PEER_VALUE, PEER_VALUE_TEXT } from "../lib/peer-tools.ts";
import { type Family, NATS_STREAM, TOPIC } from "./systems.ts";

interface Options {
  /** Records per round trip (produce: per request or per pipelined round; consume: per fetch). */
  depth?: number;
  connections?: number;
  seconds?: number;
  count?: number;
  rate?: number;
  topic?: string;
}

const [familyText, mode, portText, optionsText] = process.argv.slice(2);
const family = familyText as Family;
const port = Number(portText);
const options = JSON.parse(optionsText ?? "{}") as Options;
const topic = options.topic ?? TOPIC;
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const EXPECTED = Buffer.from(PEER_VALUE);

function fail(reason: string): never {
  console.error(`peers load (${family} ${mode}): ${reason}`);
  process.exit(1);
}

/** `bytes[start, start + length)` is PEER_VALUE (memcmp, no copy). */
function isPeerValue(bytes: Uint8Array, start: number, length: number): boolean {
  return length === EXPECTED.length && EXPECTED.compare(bytes, start, start + length) === 0;
}

function checkView(view: RecordView): void {
  if (!isPeerValue(view.bytes, view.valueStart, view.valueLength))
    fail(`record ${view.offset}: the value is not the one sent`);
}

// --- booblik ----------------------------------------------------------------------------------------

async function booblikClient(): Promise<BooblikClient> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port });
  await client.createTopic(topic).catch((error: { code?: string }) => {
    if (error.code !== "TOPIC_EXISTS") throw error;
  });
  return client;
}

/** `count` records in batches of `depth` (so that one FETCH of one batch is `depth` records). */
async function booblikFill(count: number, depth: number): Promise<void> {
  const client = await booblikClient();
  const batch = batchOfValues(Array.from({ length: depth }, () => PEER_VALUE));
  const pending: Promise<unknown>[] = [];
  for (let sent = 0; sent < count; sent += depth) {
    pending.push(client.produce(topic, 0, batch));
    if (pending.length >= 16) await pending.shift();
  }
  await Promise.all(pending);
  client.close();
}

/**
 * Reads from offset 0 to the end, one batch (`depth` records: booblikFill's batches) per FETCH
 * (maxBytes 1: the broker always returns the first entry and nothing more), again from 0 until
 * `seconds` pass; checks every CRC (the client does) and every value.
 */
async function booblikConsume(count: number, seconds: number): Promise<number> {
  const client = await booblikClient();
  const reader = new RecordBatchReader();
  const end = performance.now() + seconds * 1000;
  let records = 0;
  do {
    let offset = 0;
    while (offset < count) {
      const result = await client.fetch(topic, 0, offset, { maxBytes: 1 });
      if (result.recordCount === 0) fail(`no records at offset ${offset} of ${count}`);
      forEachFetchedRecord(result.records, result.batchBounds, offset, reader, checkView);
      offset += result.recordCount;
      records += result.recordCount;
    }
  } while (performance.now() < end);
  client.close();
  return records;
}

async function booblikVerify(): Promise<void> {
  const client = await booblikClient();
  const result = await client.fetch(topic, 0, 0, { maxBytes: 1 });
  const reader = new RecordBatchReader();
  let seen = 0;
  forEachFetchedRecord(result.records, result.batchBounds, 0, reader, (view) => {
    if (seen++ === 0) checkView(view);
  });
  if (seen === 0) fail("no record at offset 0");
  client.close();
}

// --- NATS JetStream ---------------------------------------------------------------------------------

async function natsConnection(): Promise<NatsConnection> {
  const nc = await connect({ servers: `127.0.0.1:${port}` });
  const jsm = await nc.jetstreamManager();
  await jsm.streams
    .add({ name: NATS_STREAM, subjects: [topic], storage: StorageType.File })
    .catch(() => undefined);
  return nc;
}

/**
 * Each of `connections` connections publishes `depth` messages asynchronously, waits for all their
 * acknowledgements, and publishes the next round (what `nats bench js pub async --batch` does).
 */
async function natsProduce(
  depth: number,
  connections: number,
  seconds: number,
  limit: number,
): Promise<number> {
  let records = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const nc = await natsConnection();
      const js = nc.jetstream();
      const round: Promise<unknown>[] = new Array(depth);
      while (records < limit && performance.now() < end) {
        for (let i = 0; i < depth; i++) round[i] = js.publish(topic, PEER_VALUE);
        await Promise.all(round);
        records += depth;
      }
      await nc.close();
    }),
  );
  return records;
}

/**
 * An ordered pull consumer from sequence 1; one `fetch` of `depth` messages per round trip (the
 * last one of a pass asks only for what is left); again from 1 until `seconds` pass.
 */
async function natsConsume(count: number, depth: number, seconds: number): Promise<number> {
  const nc = await natsConnection();
  const js = nc.jetstream();
  const end = performance.now() + seconds * 1000;
  let records = 0;
  do {
    const consumer = await js.consumers.get(NATS_STREAM, { opt_start_seq: 1 });
    let read = 0;
    while (read < count) {
      const batch = await consumer.fetch({ max_messages: Math.min(depth, count - read), expires: 5000 });
      let got = 0;
      for await (const message of batch) {
        if (!isPeerValue(message.data, 0, message.data.length))
          fail(`message ${message.seq}: not the value sent`);
        got++;
      }
      if (got === 0) fail(`no messages after ${read} of ${count}`);
      read += got;
    }
    records += read;
  } while (performance.now() < end);
  await nc.close();
  return records;
}

async function natsVerify(): Promise<void> {
  const nc = await connect({ servers: `127.0.0.1:${port}` });
  const jsm = await nc.jetstreamManager();
  const stored = await jsm.streams.getMessage(NATS_STREAM, { seq: 1 });
  if (!isPeerValue(stored.data, 0, stored.data.length))
    fail(`the first message is not the value sent (${stored.data.length} bytes)`);
  await nc.close();
}

// --- Redis Streams ----------------------------------------------------------------------------------

function redisClient(): InstanceType<typeof Bun.RedisClient> {
  return new Bun.RedisClient(`redis://127.0.0.1:${port}`);
}

async function redisFill(count: number): Promise<void> {
  const redis = redisClient();
  await redis.connect();
  const pending: Promise<unknown>[] = [];
  for (let sent = 0; sent < count; sent++) {
    // An ASCII string: its UTF-8 bytes are PEER_VALUE's, so Redis stores the same 100 bytes.
    pending.push(redis.send("XADD", [topic, "*", "v", PEER_VALUE_TEXT]));
    if (pending.length >= 1024) await pending.shift();
  }
  await Promise.all(pending);
  redis.close();
}

/** `XRANGE … COUNT depth` from the start to the end, again until `seconds` pass; checks every value. */
async function redisConsume(count: number, depth: number, seconds: number): Promise<number> {
  const redis = redisClient();
  await redis.connect();
  const end = performance.now() + seconds * 1000;
  let records = 0;
  do {
    let read = 0;
    let start = "-";
    while (read < count) {
      const entries = (await redis.send("XRANGE", [topic, start, "+", "COUNT", String(depth)])) as [
        string,
        string[],
      ][];
      if (entries.length === 0) fail(`no entries after ${read} of ${count}`);
      for (const [id, fields] of entries)
        if (fields[0] !== "v" || fields[1] !== PEER_VALUE_TEXT) fail(`entry ${id}: not the value sent`);
      read += entries.length;
      start = `(${entries.at(-1)![0]}`;
    }
    records += read;
  } while (performance.now() < end);
  redis.close();
  return records;
}

// --- Latency ----------------------------------------------------------------------------------------

/** The due time in µs as 16 ASCII digits over the first 16 bytes of PEER_VALUE: 100 ASCII bytes. */
const STAMP_DIGITS = 16;
function stamped(dueUs: number): Uint8Array {
  const copy = PEER_VALUE.slice();
  const digits = String(Math.round(dueUs)).padStart(STAMP_DIGITS, "0");
  for (let i = 0; i < STAMP_DIGITS; i++) copy[i] = digits.charCodeAt(i);
  return copy;
}
function dueOf(bytes: Uint8Array, start: number): number {
  let value = 0;
  for (let i = 0; i < STAMP_DIGITS; i++) value = value * 10 + (bytes[start + i]! - 48);
  return value;
}

/**
 * A producer sends `rate` records/s (everything due, every millisecond; each record carries the time
 * it was due); a consumer on another connection measures due → arrival per record.
 */
async function latency(rate: number, seconds: number): Promise<number[]> {
  const total = rate * seconds;
  const latencies: number[] = [];
  const arrived = (due: number, atUs: number) => latencies.push(atUs - due);
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
    const perBatch = Math.max(1, Math.floor((512 * 1024) / (PEER_VALUE.length + 16)));
    send = (records) => {
      for (let i = 0; i < records.length; i += perBatch)
        pending.push(
          producer.produce(topic, 0, batchOfValues(records.slice(i, i + perBatch))).catch(failedSend),
        );
    };
    consume = async () => {
      let offset = (await consumer.listOffsets(topic, 0)).nextOffset;
      while (latencies.length < total) {
        const result = await consumer.fetch(topic, 0, offset, { maxWaitMs: 1000 });
        const at = nowUs();
        forEachFetchedRecord(result.records, result.batchBounds, offset, reader, (record) => {
          const value = recordValue(record)!;
          arrived(dueOf(value, 0), at);
        });
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
    const info = await (await producer.jetstreamManager()).streams.info(NATS_STREAM);
    // An ordered consumer that starts after what earlier runs left in the stream.
    const consumer = await consumerConnection
      .jetstream()
      .consumers.get(NATS_STREAM, { opt_start_seq: info.state.last_seq + 1 });
    const pending: Promise<unknown>[] = [];
    send = (records) => {
      for (const record of records) pending.push(js.publish(topic, record).catch(failedSend));
    };
    consume = async () => {
      const messages = await consumer.consume({ max_messages: 1000 });
      for await (const message of messages) {
        arrived(dueOf(message.data, 0), nowUs());
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
    const decoder = new TextDecoder();
    send = (records) => {
      // ASCII: the string's UTF-8 bytes are the record's bytes.
      for (const record of records)
        pending.push(producer.send("XADD", [topic, "*", "v", decoder.decode(record)]).catch(failedSend));
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
          topic,
          last,
        ])) as Record<string, [string, string[]][]> | null;
        const at = nowUs();
        const entries = reply?.[topic];
        if (entries === undefined) continue;
        for (const [id, fields] of entries) {
          arrived(Number(fields[1]!.slice(0, STAMP_DIGITS)), at);
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
      batch.push(stamped(startUs + (sent++ / perMs) * 1000));
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
  overloaded = timedOut || failed || sendFailures > 0;
  return latencies.sort((a, b) => a - b);
}

/**
 * Sends that failed (a publish timed out: the system fell behind). Counted here, not left to reject
 * on their own: an overloaded NATS once failed about 570 K publishes per run, and each unhandled
 * rejection printed a stack trace, costing the load process CPU in the run it measured.
 */
let sendFailures = 0;
function failedSend(): void {
  sendFailures++;
}

/** The system could not take the rate: publishes failed or records never arrived. */
let overloaded = false;

// --- Entry ------------------------------------------------------------------------------------------

const depth = options.depth ?? 1;
const count = options.count ?? 100_000;
const seconds = options.seconds ?? 3;
const started = performance.now();
const rateLine = (records: number) => {
  const elapsed = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ records, seconds: elapsed, recordsPerSecond: records / elapsed }));
};
if (mode === "fill") {
  if (family === "booblik") await booblikFill(count, depth);
  else if (family === "redis") await redisFill(count);
  else await natsProduce(1000, 1, 3600, count);
  rateLine(count);
} else if (mode === "produce") {
  if (family !== "nats") fail("produce is the nats.js fallback; booblik and Redis have their own tools");
  rateLine(await natsProduce(depth, options.connections ?? 1, seconds, Number.POSITIVE_INFINITY));
} else if (mode === "consume") {
  const consumeOf = {
    booblik: () => booblikConsume(count, seconds),
    nats: () => natsConsume(count, depth, seconds),
    redis: () => redisConsume(count, depth, seconds),
  };
  rateLine(await consumeOf[family]());
} else if (mode === "verify") {
  if (family === "booblik") await booblikVerify();
  else if (family === "nats") await natsVerify();
  else fail("Redis is verified with redis-cli --raw (bench/lib/peer-tools.ts)");
  console.log(JSON.stringify({ verified: true }));
} else if (mode === "latency") {
  const sorted = await latency(options.rate ?? 10_000, seconds);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! / 1000;
  const cdf = Array.from({ length: 200 }, (_, i) => {
    const q = 1 - 10 ** (-(i / 199) * 3.5); // denser towards the tail
    return [q, at(q)];
  });
  console.log(
    JSON.stringify({
      records: sorted.length,
      expected: (options.rate ?? 10_000) * seconds,
      overloaded,
      sendFailures,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      p999Ms: at(0.999),
      maxMs: sorted.at(-1)! / 1000,
      cdf,
    }),
  );
} else {
  fail(`unknown mode ${mode}`);
}
process.exit(0);
