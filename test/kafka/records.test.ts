/**
 * Produce and Fetch over the Kafka listener. Raw frames (in-process listener): every rejection has
 * Kafka's code, acks=0 gets no answer, a fetch at the high watermark returns nothing, a first batch
 * larger than every limit comes whole, a long poll ends when a record arrives, a fetch from inside a
 * batch returns that batch. Real clients (a broker child process): kcat produces keys, headers and
 * timestamps and consumes them back with check.crcs=true, compressed batches pass untouched, kafkajs
 * produces and kcat reads what it sent.
 */
import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import { Kafka, logLevel } from "kafkajs";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { FetchBufferPool } from "../../src/kafka/fetch-buffers.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import type { FetchRequest } from "../../src/kafka/messages.ts";
import { fetchRecords } from "../../src/kafka/records.ts";
import { computeBatchCrc, decodeBatch, encodeBatch, type RecordInput } from "../../src/record/batch.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import { type BrokerProcess, kafkaPortOf, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { KCAT, kcat } from "../helpers/kcat.ts";
import { metricValue } from "../helpers/metrics.ts";
import { type RawSocket, rawConnect } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "./bytes.ts";

if (KCAT === null)
  console.log("kafka/records.test.ts: kcat tests skipped: kcat is not installed (apt-get install -y kcat)");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDir(): TempDir {
  const dir = tempDir("kafka-records");
  cleanups.push(() => dir[Symbol.dispose]());
  return dir;
}

const TEXT = new TextEncoder();
const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

function records(values: string[], timestamp = 1_700_000_000_000): RecordInput[] {
  return values.map((value, i) => ({
    key: TEXT.encode(`k${i}`),
    value: TEXT.encode(value),
    timestamp: timestamp + i,
  }));
}

/** An in-process broker and Kafka listener (append durability: no force per produce). */
function inProcess(fetchPath: "copy" | "sendfile" = "copy"): {
  broker: Broker;
  port: number;
  listener: KafkaListener;
} {
  const broker = Broker.open({ dataDir: dataDir().path, topicDefaults: { durability: "append" } });
  cleanups.push(() => broker.close());
  return { broker, ...listen(broker, fetchPath) };
}

/** A Kafka listener on `broker`, with its own port. */
function listen(broker: Broker, fetchPath: "copy" | "sendfile"): { port: number; listener: KafkaListener } {
  const listener = new KafkaListener(broker, {
    hostname: "127.0.0.1",
    port: 0,
    maxFrameBytes: 4 << 20,
    maxConnections: 16,
    maxConnectionsPerAddress: 16,
    idleTimeoutMs: 60_000,
    requestTimeoutMs: 30_000,
    inboundBudget: new InboundBudget(1 << 26),
    fetchPath,
  });
  const { port } = listener.listen();
  listeners.set(port, listener);
  cleanups.push(() => listener.stop());
  return { port, listener };
}

async function connect(port: number): Promise<RawSocket> {
  const socket = await rawConnect(port);
  cleanups.push(() => socket.close());
  return socket;
}

const listeners = new Map<number, KafkaListener>();
function listenerOf(port: number): KafkaListener {
  return listeners.get(port)!;
}

/** The response frame that starts at byte `from` of what arrived (waiting for all of it). */
async function roundTripResult(
  socket: RawSocket,
  from: number,
): Promise<{ reader: KafkaReader; correlationId: number; end: number }> {
  let bytes = await socket.waitForBytes(from + 4);
  const size = new DataView(bytes.buffer, bytes.byteOffset + from).getInt32(0);
  bytes = await socket.waitForBytes(from + 4 + size);
  const reader = new KafkaReader(bytes, from + 4, from + 4 + size);
  const correlationId = reader.int32("correlation_id");
  return { reader, correlationId, end: from + 4 + size };
}

/** Sends one request and returns a reader over its response body (after size and correlation id). */
async function roundTrip(socket: RawSocket, request: Uint8Array): Promise<KafkaReader> {
  const from = socket.received().length;
  socket.write(request);
  let bytes = await socket.waitForBytes(from + 4);
  const size = new DataView(bytes.buffer, bytes.byteOffset + from).getInt32(0);
  bytes = await socket.waitForBytes(from + 4 + size);
  const reader = new KafkaReader(bytes, from + 4, from + 4 + size);
  reader.int32("correlation_id");
  return reader;
}

function produceV8(
  topic: string,
  partition: number,
  recordSet: Uint8Array,
  acks = -1,
  correlationId = 1,
  transactionalId: string | null = null,
): Uint8Array {
  return new Expect()
    .i16(0)
    .i16(8)
    .i32(correlationId)
    .str("t")
    .str(transactionalId)
    .i16(acks)
    .i32(30_000)
    .i32(1)
    .str(topic)
    .i32(1)
    .i32(partition)
    .i32(recordSet.length)
    .raw(recordSet)
    .frame();
}

/** The one partition answer of a Produce v8 response: [error, base offset, error message]. */
function produceAnswer(reader: KafkaReader): [number, number, string | null] {
  reader.int32("topics");
  reader.string("name");
  reader.int32("partitions");
  reader.int32("index");
  const error = reader.int16("error");
  const baseOffset = reader.int64("base_offset");
  reader.int64("log_append_time");
  reader.int64("log_start_offset");
  reader.int32("record_errors");
  return [error, baseOffset, reader.nullableString("error_message")];
}

function fetchV11(
  topic: string,
  partition: number,
  offset: number,
  options: { maxWaitMs?: number; minBytes?: number; partitionMaxBytes?: number; maxBytes?: number } = {},
): Uint8Array {
  return new Expect()
    .i16(1)
    .i16(11)
    .i32(2)
    .str("t")
    .i32(-1)
    .i32(options.maxWaitMs ?? 0)
    .i32(options.minBytes ?? 1)
    .i32(options.maxBytes ?? 52_428_800)
    .i8(1)
    .i32(0)
    .i32(-1)
    .i32(1)
    .str(topic)
    .i32(1)
    .i32(partition)
    .i32(-1)
    .i64(offset)
    .i64(-1)
    .i32(options.partitionMaxBytes ?? 1_048_576)
    .i32(0)
    .str("")
    .frame();
}

/** The one partition answer of a Fetch v11 response. */
function fetchAnswer(reader: KafkaReader): {
  error: number;
  highWatermark: number;
  records: Uint8Array | null;
} {
  reader.int32("throttle");
  reader.int16("error");
  reader.int32("session");
  reader.int32("topics");
  reader.string("topic");
  reader.int32("partitions");
  reader.int32("index");
  const error = reader.int16("error");
  const highWatermark = reader.int64("hw");
  reader.int64("lso");
  reader.int64("log_start");
  reader.int32("aborted");
  reader.int32("preferred_read_replica");
  const records = reader.nullableBytes("records");
  return { error, highWatermark, records };
}

/** Every record of bare batches back to back: [offset, key, value, timestamp]. */
function decodeAll(bytes: Uint8Array): [number, string | null, string | null, number][] {
  const out: [number, string | null, string | null, number][] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = 12 + new DataView(bytes.buffer, bytes.byteOffset + at).getInt32(8);
    for (const record of decodeBatch(bytes.subarray(at, at + length)).records) {
      out.push([record.offset, text(record.key), text(record.value), record.timestamp]);
    }
    at += length;
  }
  return out;
}

describe("Produce and Fetch over raw frames", () => {
  test("a produced batch is stamped with its offsets and fetched back whole, bare, from any offset inside it", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("r");
    const socket = await connect(port);
    expect(
      produceAnswer(await roundTrip(socket, produceV8("r", 0, encodeBatch(records(["a", "b", "c"]))))),
    ).toEqual([0, 0, null]);
    expect(produceAnswer(await roundTrip(socket, produceV8("r", 0, encodeBatch(records(["d"])))))).toEqual([
      0,
      3,
      null,
    ]);
    const all = fetchAnswer(await roundTrip(socket, fetchV11("r", 0, 0)));
    expect(all.error).toBe(0);
    expect(all.highWatermark).toBe(4);
    expect(decodeAll(all.records!)).toEqual([
      [0, "k0", "a", 1_700_000_000_000],
      [1, "k1", "b", 1_700_000_000_001],
      [2, "k2", "c", 1_700_000_000_002],
      [3, "k0", "d", 1_700_000_000_000],
    ]);
    // From inside the first batch: that whole batch (clients drop what lies below their offset).
    expect(
      decodeAll(fetchAnswer(await roundTrip(socket, fetchV11("r", 0, 2))).records!).map((r) => r[0]),
    ).toEqual([0, 1, 2, 3]);
    expect(
      decodeAll(fetchAnswer(await roundTrip(socket, fetchV11("r", 0, 3))).records!).map((r) => r[0]),
    ).toEqual([3]);
  });

  test.each(["copy", "sendfile"] as const)(
    "a response larger than the socket takes at once waits for a slow reader, then arrives whole, before the next answer (--kafka-fetch-path %s)",
    async (fetchPath) => {
      const { broker, port, listener } = inProcess(fetchPath);
      broker.createTopic("wide");
      // Eight stored batches of ~900 KB: a ~7 MiB answer, more than the socket buffers hold.
      const values = Array.from({ length: 8 }, (_, i) => String.fromCharCode(97 + i).repeat(900_000));
      for (const value of values)
        await broker.produce("wide", 0, [{ key: null, value: TEXT.encode(value), timestamp: 1 }]);
      const socket = await rawConnect(port, { readPaused: true });
      cleanups.push(() => socket.close());
      const fetch = fetchV11("wide", 0, 0, { partitionMaxBytes: 16 << 20 });
      const apiVersions = new Expect().i16(18).i16(0).i32(99).str("t").frame();
      socket.write(Uint8Array.from([...fetch, ...apiVersions]));
      // Not reading: the broker's socket buffer fills and the rest of the answer waits for `drain`
      // (which Bun fires only after its own write met backpressure: ffi/file-send.ts for sendfile).
      await waitUntil(
        () =>
          fetchPath === "sendfile" ? listener.counters.sendfileBytes > 0 : listener.counters.requests >= 1,
        "the answer to start",
      );
      socket.socket.resume();
      const first = await roundTripResult(socket, 0);
      const answer = fetchAnswer(first.reader);
      expect(decodeAll(answer.records!).map((r) => [r[0], r[2]?.length, r[2]?.[0]])).toEqual(
        values.map((value, i) => [i, value.length, value[0]]),
      );
      // sendfile sent the records, but for the bytes that armed `drain` through Bun's write (one per
      // full socket buffer: ffi/file-send.ts).
      const sentByFile = listener.counters.sendfileBytes;
      if (fetchPath === "copy") expect(sentByFile).toBe(0);
      else expect(answer.records!.length - sentByFile).toBeWithin(0, 1000);
      // The ApiVersions sent behind it is answered after it, whole.
      const second = await roundTripResult(socket, first.end);
      expect(second.correlationId).toBe(99);
    },
  );

  test("a Fetch answer still waiting for a slow reader is not overwritten by the Fetches answered meanwhile", async () => {
    // Fetch answers are encoded into reused buffers (src/kafka/fetch-buffers.ts), and their reads
    // land in reused arenas. A buffer given back before its answer is written whole would be
    // handed to the next Fetch, whose records would then reach the slow reader in its place.
    const { broker, port } = inProcess();
    broker.createTopic("slow");
    broker.createTopic("fast");
    // 1,000 records of 1,000 bytes: one stored batch of ~1 MiB (the largest batch is 1 MiB).
    const expectedValue = (letter: string, offset: number) => `${letter}${offset}`.padEnd(1000, letter);
    const batchOf = (letter: string, from: number) =>
      Array.from({ length: 1000 }, (_, i) => ({
        key: null,
        value: TEXT.encode(expectedValue(letter, from + i)),
        timestamp: 1,
      }));
    // 7 batches: an answer (~7 MiB) that fits a pooled buffer (at most 8 MiB) and not the socket
    // buffers (here at most 4 MiB to send, 128 KiB to receive while the reader does not read).
    for (let batch = 0; batch < 7; batch++) await broker.produce("slow", 0, batchOf("s", batch * 1000));
    for (let batch = 0; batch < 7; batch++) await broker.produce("fast", 0, batchOf("f", batch * 1000));
    const slow = await rawConnect(port, { readPaused: true });
    cleanups.push(() => slow.close());
    slow.write(fetchV11("slow", 0, 0, { partitionMaxBytes: 7_500_000, maxBytes: 7_500_000 }));
    await waitUntil(() => listenerOf(port).counters.requests >= 1, "the slow reader's fetch to be read");
    // Meanwhile another consumer fetches the other topic, one answer after another, each of them
    // of the slow answer's size (so they would be given its buffer, were it free).
    const fast = await connect(port);
    for (let round = 0; round < 6; round++) {
      const answer = fetchAnswer(
        await roundTrip(fast, fetchV11("fast", 0, 0, { partitionMaxBytes: 7_500_000, maxBytes: 7_500_000 })),
      );
      const got = decodeAll(answer.records!);
      expect(got.length).toBe(7000);
      expect(got.every((record) => record[2] === expectedValue("f", record[0]))).toBe(true);
    }
    slow.socket.resume();
    const answer = fetchAnswer((await roundTripResult(slow, 0)).reader);
    // decodeAll checks every batch's CRC32C; every record is the slow topic's, in order.
    const got = decodeAll(answer.records!);
    expect(got.length).toBe(7000);
    expect(got.map((record) => record[0])).toEqual(Array.from({ length: 7000 }, (_, i) => i));
    expect(got.every((record) => record[2] === expectedValue("s", record[0]))).toBe(true);
  });

  test("a Fetch across many segments returns every batch in order, whole, in one answer", async () => {
    // The reads of one Fetch land one after another in one reused arena: a read across segments
    // is one view of it, not a concatenated copy (PartitionLog.read); this reads 40 segments.
    const { broker, port } = inProcess();
    broker.createTopic("seg", { segmentBytes: 16 * 1024 });
    const expectedValue = (offset: number) => `v${offset}`.padEnd(600, "-");
    for (let batch = 0; batch < 40; batch++)
      await broker.produce(
        "seg",
        0,
        Array.from({ length: 20 }, (_, i) => ({
          key: null,
          value: TEXT.encode(expectedValue(batch * 20 + i)),
          timestamp: 1,
        })),
      );
    const socket = await connect(port);
    for (const from of [0, 1, 395, 799]) {
      const answer = fetchAnswer(
        await roundTrip(socket, fetchV11("seg", 0, from, { partitionMaxBytes: 1 << 20 })),
      );
      const got = decodeAll(answer.records!);
      const firstOffset = from - (from % 20);
      expect(got.map((record) => record[0])).toEqual(
        Array.from({ length: 800 - firstOffset }, (_, i) => firstOffset + i),
      );
      expect(got.every((record) => record[2] === expectedValue(record[0]))).toBe(true);
    }
  });

  test("at the high watermark: no records and the high watermark; beyond it: OFFSET_OUT_OF_RANGE", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("h");
    const socket = await connect(port);
    await roundTrip(socket, produceV8("h", 0, encodeBatch(records(["a", "b"]))));
    const atEnd = fetchAnswer(await roundTrip(socket, fetchV11("h", 0, 2, { maxWaitMs: 0 })));
    expect([atEnd.error, atEnd.highWatermark, atEnd.records?.length]).toEqual([0, 2, 0]);
    const beyond = fetchAnswer(await roundTrip(socket, fetchV11("h", 0, 3)));
    expect([beyond.error, beyond.highWatermark]).toEqual([KAFKA_ERROR.OFFSET_OUT_OF_RANGE, 2]);
    const unknown = fetchAnswer(await roundTrip(socket, fetchV11("nope", 0, 0)));
    expect(unknown.error).toBe(KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION);
    // /metrics' booblik_kafka_response_errors_total: each partition's code once, NONE left out.
    expect(listenerOf(port).responseErrors).toEqual(
      new Map([
        [
          "FETCH",
          new Map([
            ["OFFSET_OUT_OF_RANGE", 1],
            ["UNKNOWN_TOPIC_OR_PARTITION", 1],
          ]),
        ],
      ]),
    );
  });

  test("a first batch larger than partition_max_bytes and max_bytes comes whole; a second one does not come", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("big");
    const socket = await connect(port);
    const big = "x".repeat(10_000);
    await roundTrip(socket, produceV8("big", 0, encodeBatch(records([big]))));
    await roundTrip(socket, produceV8("big", 0, encodeBatch(records(["small"]))));
    const answer = fetchAnswer(
      await roundTrip(socket, fetchV11("big", 0, 0, { partitionMaxBytes: 100, maxBytes: 100 })),
    );
    expect(decodeAll(answer.records!).map((r) => [r[0], r[2]?.length])).toEqual([[0, 10_000]]);
  });

  test("a long poll at the high watermark answers when a record arrives", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("poll");
    const consumer = await connect(port);
    const producer = await connect(port);
    const pending = roundTrip(consumer, fetchV11("poll", 0, 0, { maxWaitMs: 20_000, minBytes: 1 }));
    let answered = false;
    void pending.then(() => {
      answered = true;
    });
    // The fetch is parked (no answer yet) until the produce below.
    await waitUntil(() => broker.describeTopic("poll").partitions.length === 1, "the topic");
    expect(answered).toBe(false);
    await roundTrip(producer, produceV8("poll", 0, encodeBatch(records(["late"]))));
    expect(decodeAll(fetchAnswer(await pending).records!).map((r) => r[2])).toEqual(["late"]);
  });

  test("stopping the listener ends a long poll: it is answered with what there is", async () => {
    const { broker, port, listener } = inProcess();
    broker.createTopic("stop");
    const consumer = await connect(port);
    const pending = roundTrip(consumer, fetchV11("stop", 0, 0, { maxWaitMs: 25_000, minBytes: 1 }));
    await waitUntil(() => listener.counters.requests === 1, "the fetch to arrive");
    const stopped = listener.stop();
    // Answered long before its 25 s (the test's 5 s timeout would fail first).
    const answer = fetchAnswer(await pending);
    expect([answer.error, answer.highWatermark, answer.records?.length]).toEqual([0, 0, 0]);
    await stopped;
    await consumer.closed;
  });

  test("acks=0 gets no answer at all, yet the records are appended", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("quiet");
    const socket = await connect(port);
    socket.write(produceV8("quiet", 0, encodeBatch(records(["a"])), 0, 41));
    // The next request's answer is the first bytes to arrive: nothing came for the produce.
    const reader = await roundTrip(socket, new Expect().i16(18).i16(0).i32(42).str("t").frame());
    expect(new DataView(socket.received().buffer, socket.received().byteOffset).getInt32(4)).toBe(42);
    expect(reader.int16("error")).toBe(0);
    expect(broker.describeTopic("quiet").partitions[0]!.nextOffset).toBe(1);
  });

  test("acks=0 with a refused batch closes the connection: the producer has no other way to learn", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("quiet");
    const socket = await connect(port);
    const bad = encodeBatch(records(["a"]));
    bad[16] = 1; // magic 1
    socket.write(produceV8("quiet", 0, bad, 0, 41));
    await socket.closed;
    expect(socket.received().length).toBe(0);
    expect(broker.describeTopic("quiet").partitions[0]!.nextOffset).toBe(0);
  });

  test("refused batches carry Kafka's codes and say why; nothing of them is stored", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("bad", { maxRecordBytes: 512 });
    const socket = await connect(port);
    const good = () => encodeBatch(records(["a", "b"]));
    const flippedCrc = good();
    flippedCrc[17] = flippedCrc[17]! ^ 0xff;
    // Attribute and delta changes are inside the CRC: recompute it, so the rule itself is what fails.
    const recrc = (batch: Uint8Array) => {
      new DataView(batch.buffer, batch.byteOffset).setUint32(17, computeBatchCrc(batch, 0, batch.length));
      return batch;
    };
    const codec5 = encodeBatch(records(["a"]));
    codec5[22] = (codec5[22]! & ~0x07) | 5;
    recrc(codec5);
    const lastDelta = encodeBatch(records(["a", "b"]));
    new DataView(lastDelta.buffer, lastDelta.byteOffset).setInt32(23, 5);
    recrc(lastDelta);
    const baseOffset7 = encodeBatch(records(["a"]), { baseOffset: 7 });
    const magic1 = good();
    magic1[16] = 1;
    const two = Uint8Array.from([...good(), ...good()]);
    const control = good();
    control[22] = control[22]! | 0x20;
    recrc(control);
    const noSequence = encodeBatch(records(["a"]), { producerId: 5, producerEpoch: 0, baseSequence: -1 });
    const tooLarge = encodeBatch(records(["x".repeat(1000)]));
    const transactional = encodeBatch(records(["a"]), {
      transactional: true,
      producerId: 5,
      producerEpoch: 0,
      baseSequence: 0,
    });
    const cases: [string, Uint8Array, number, string][] = [
      ["flipped CRC byte", flippedCrc, KAFKA_ERROR.CORRUPT_MESSAGE, "invalid record batch (crc) at byte 17"],
      ["codec 5", codec5, KAFKA_ERROR.UNSUPPORTED_COMPRESSION_TYPE, "compression codec 5"],
      [
        "LastOffsetDelta 5 of 2 records",
        lastDelta,
        KAFKA_ERROR.INVALID_RECORD,
        "LastOffsetDelta 5 must be RecordCount − 1 = 1",
      ],
      ["BaseOffset 7", baseOffset7, KAFKA_ERROR.INVALID_RECORD, "BaseOffset 7 from a producer"],
      ["magic 1", magic1, KAFKA_ERROR.UNSUPPORTED_FOR_MESSAGE_FORMAT, "a magic 1 message set"],
      ["two batches", two, KAFKA_ERROR.INVALID_RECORD, "more than one batch"],
      ["transactional", transactional, KAFKA_ERROR.INVALID_RECORD, "transactional batches are not accepted"],
      ["control batch", control, KAFKA_ERROR.INVALID_RECORD, "a control batch (attributes bit 5)"],
      [
        "ProducerId without a sequence",
        noSequence,
        KAFKA_ERROR.INVALID_RECORD,
        "BaseSequence -1 with ProducerId 5",
      ],
      [
        "empty record set",
        new Uint8Array(0),
        KAFKA_ERROR.INVALID_RECORD,
        "the partition's record set is empty",
      ],
      [
        "batch above maxRecordBytes",
        tooLarge,
        KAFKA_ERROR.MESSAGE_TOO_LARGE,
        "exceeds the batch size limit of 512 bytes",
      ],
    ];
    for (const [what, batch, code, message] of cases) {
      const [error, baseOffset, text] = produceAnswer(await roundTrip(socket, produceV8("bad", 0, batch)));
      expect([what, error, baseOffset]).toEqual([what, code, -1]);
      expect(text).toContain(message);
    }
    const acks2 = produceAnswer(await roundTrip(socket, produceV8("bad", 0, good(), 2)));
    expect(acks2[0]).toBe(KAFKA_ERROR.INVALID_REQUIRED_ACKS);
    expect(produceAnswer(await roundTrip(socket, produceV8("nope", 0, good())))[0]).toBe(
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    );
    const transactionalId = produceV8("bad", 0, good(), -1, 1, "tx-1");
    expect(produceAnswer(await roundTrip(socket, transactionalId)).slice(0, 1)).toEqual([
      KAFKA_ERROR.INVALID_RECORD,
    ]);
    expect(broker.describeTopic("bad").partitions[0]!.nextOffset).toBe(0);
    // An idempotent batch sent twice is stored once: the resend gets the original offset
    // (test/kafka/idempotence.test.ts has the sequence rules).
    const idempotent = () =>
      encodeBatch(records(["a"]), { producerId: 5, producerEpoch: 0, baseSequence: 0 });
    expect(produceAnswer(await roundTrip(socket, produceV8("bad", 0, idempotent())))).toEqual([0, 0, null]);
    expect(produceAnswer(await roundTrip(socket, produceV8("bad", 0, idempotent())))).toEqual([0, 0, null]);
    expect(broker.describeTopic("bad").partitions[0]!.nextOffset).toBe(1);
  });

  test("a LogAppendTime topic answers the append time, and its records carry it", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("lat", { timestampType: "LogAppendTime" });
    const socket = await connect(port);
    const before = Date.now();
    const reader = await roundTrip(socket, produceV8("lat", 0, encodeBatch(records(["a", "b"]))));
    const after = Date.now();
    reader.int32("topics");
    reader.string("name");
    reader.int32("partitions");
    reader.int32("index");
    expect([reader.int16("error"), reader.int64("base_offset")]).toEqual([0, 0]);
    const appendTime = reader.int64("log_append_time_ms");
    expect(appendTime).toBeGreaterThanOrEqual(before);
    expect(appendTime).toBeLessThanOrEqual(after);
    const fetched = decodeAll(fetchAnswer(await roundTrip(socket, fetchV11("lat", 0, 0))).records!);
    expect(fetched.map((r) => r[3])).toEqual([appendTime, appendTime]);
  });

  test("below the log start (after retention): OFFSET_OUT_OF_RANGE; a fetch session id: FETCH_SESSION_ID_NOT_FOUND", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("ret", { segmentBytes: 256, retentionBytes: 1 });
    const socket = await connect(port);
    for (let i = 0; i < 8; i++) await roundTrip(socket, produceV8("ret", 0, encodeBatch(records([`r${i}`]))));
    broker.applyRetention();
    const start = broker.describeTopic("ret").partitions[0]!.logStartOffset;
    expect(start).toBeGreaterThan(0);
    const below = fetchAnswer(await roundTrip(socket, fetchV11("ret", 0, start - 1)));
    expect([below.error, below.highWatermark]).toEqual([KAFKA_ERROR.OFFSET_OUT_OF_RANGE, 8]);
    const fromStart = fetchAnswer(await roundTrip(socket, fetchV11("ret", 0, start)));
    expect(decodeAll(fromStart.records!)[0]![0]).toBe(start);
    const session = fetchV11("ret", 0, start);
    new DataView(session.buffer).setInt32(4 + 2 + 2 + 4 + 3 + 4 + 4 + 4 + 4 + 1, 77); // session_id
    const reader = await roundTrip(socket, session);
    expect([
      reader.int32("throttle"),
      reader.int16("error"),
      reader.int32("session"),
      reader.int32("topics"),
    ]).toEqual([0, 70, 0, 0]);
  });
});

async function brokerProcess(): Promise<{ broker: BrokerProcess; kafkaPort: number }> {
  const broker = await startBroker(dataDir().path, ["--kafka-port", "0"]);
  cleanups.push(async () => {
    await broker.stop();
  });
  return { broker, kafkaPort: await kafkaPortOf(broker) };
}

describe.skipIf(KCAT === null)("real clients against a broker process", () => {
  test("kcat produces keyed lines with headers; kcat consumes them back with check.crcs=true", async () => {
    const { kafkaPort } = await brokerProcess();
    const admin = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "lines" }] });
    await admin.disconnect();
    const before = Date.now();
    const produced = await kcat(
      kafkaPort,
      ["-P", "-t", "lines", "-p", "0", "-K", ":", "-H", "trace=abc", "-H", "n=1"],
      "k1:first\nk2:second value\nключ:значение\n",
    );
    const after = Date.now();
    expect([produced.exitCode, produced.stderr]).toEqual([0, ""]);
    const consumed = await kcat(kafkaPort, [
      "-C",
      "-t",
      "lines",
      "-p",
      "0",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-X",
      "check.crcs=true",
      "-f",
      "%o|%k|%s|%T|%h\\n",
    ]);
    expect(consumed.exitCode).toBe(0);
    const rows = consumed.stdout
      .trim()
      .split("\n")
      .map((line) => line.split("|"));
    expect(rows.map(([offset, key, value, , headers]) => [offset, key, value, headers])).toEqual([
      ["0", "k1", "first", "trace=abc,n=1"],
      ["1", "k2", "second value", "trace=abc,n=1"],
      ["2", "ключ", "значение", "trace=abc,n=1"],
    ]);
    for (const row of rows) {
      expect(Number(row[3])).toBeGreaterThanOrEqual(before);
      expect(Number(row[3])).toBeLessThanOrEqual(after);
    }
    const middle = await kcat(kafkaPort, [
      "-C",
      "-t",
      "lines",
      "-p",
      "0",
      "-o",
      "1",
      "-c",
      "1",
      "-q",
      "-f",
      "%o %s\\n",
    ]);
    expect(middle.stdout).toBe("1 second value\n");
  });

  test("--kafka-fetch-path sendfile: kcat reads 40,000 lines (batches of up to 1 MB from kcat -P) with check.crcs=true, sent from the segment files", async () => {
    const broker = await startBroker(dataDir().path, [
      "--kafka-port",
      "0",
      "--kafka-fetch-path",
      "sendfile",
      "--metrics-port",
      "0",
    ]);
    cleanups.push(async () => {
      await broker.stop();
    });
    const line = await broker.lines.waitFor(
      (l) => l.includes("Kafka protocol on"),
      "the Kafka listener line",
    );
    expect(line).toEndWith(
      "; Fetch sends batches of 64 KiB and more with sendfile, unchecked (--kafka-fetch-path)",
    );
    const kafkaPort = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
    const admin = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "bulk" }] });
    await admin.disconnect();
    const lines = Array.from({ length: 40_000 }, (_, i) => `line ${i} `.padEnd(100, "."));
    // A long linger: librdkafka fills batches up to its 1 MB batch.size.
    const produced = await kcat(
      kafkaPort,
      ["-P", "-t", "bulk", "-p", "0", "-X", "linger.ms=1000"],
      `${lines.join("\n")}\n`,
    );
    expect(produced.exitCode).toBe(0);
    const consumed = await kcat(kafkaPort, [
      "-C",
      "-t",
      "bulk",
      "-p",
      "0",
      "-o",
      "beginning",
      "-c",
      String(lines.length),
      "-q",
      "-X",
      "check.crcs=true",
    ]);
    expect(consumed.exitCode).toBe(0);
    expect(consumed.stdout.trim().split("\n")).toEqual(lines);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)).text();
    // Most of the ~4 MB of records left by sendfile.
    const sendfileBytes = metricValue(metrics, "booblik_kafka_fetch_sendfile_bytes_total");
    expect(sendfileBytes).toBeGreaterThan(3_000_000);
    // Every record produced is counted once, and every batch was fetched once: as many bytes as
    // were produced, those of batches of 64 KiB and more by sendfile.
    expect(metricValue(metrics, "booblik_kafka_produce_records_total")).toBe(lines.length);
    const producedBytes = metricValue(metrics, "booblik_kafka_produce_bytes_total");
    expect(metricValue(metrics, "booblik_kafka_fetch_bytes_total")).toBe(producedBytes);
    expect(sendfileBytes).toBeLessThanOrEqual(producedBytes);
  });

  test.each(["gzip", "snappy", "lz4", "zstd"])(
    "kcat -z %s: 300 lines pass untouched and verify (check.crcs=true)",
    async (codec) => {
      const { kafkaPort } = await brokerProcess();
      const admin = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: "z" }] });
      await admin.disconnect();
      const lines = Array.from({ length: 300 }, (_, i) => `line ${i} lorem ipsum dolor sit amet`);
      const produced = await kcat(
        kafkaPort,
        ["-P", "-t", "z", "-p", "0", "-z", codec],
        `${lines.join("\n")}\n`,
      );
      expect(produced.exitCode).toBe(0);
      const consumed = await kcat(kafkaPort, [
        "-C",
        "-t",
        "z",
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-X",
        "check.crcs=true",
      ]);
      expect([consumed.exitCode, consumed.stdout.trim().split("\n")]).toEqual([0, lines]);
      // Stored as sent: the fetched batches carry the codec in attributes bits 0-2. librdkafka sends
      // a batch uncompressed when compression does not shrink it (a few lines read early from stdin),
      // so look at every batch of the whole log.
      const socket = await connect(kafkaPort);
      const fetched = fetchAnswer(
        await roundTrip(socket, fetchV11("z", 0, 0, { partitionMaxBytes: 1 << 24 })),
      ).records!;
      const codecs = new Set<number>();
      for (
        let at = 0;
        at < fetched.length;
        at += 12 + new DataView(fetched.buffer, fetched.byteOffset + at).getInt32(8)
      ) {
        codecs.add(fetched[at + 22]! & 0x07);
      }
      // librdkafka 2.0.2 switches lz4 on only when FindCoordinator is advertised (rdkafka_feature.c):
      // with the group coordinator it is, and `-z lz4` batches arrive compressed.
      const codecIds: Record<string, number> = { gzip: 1, snappy: 2, lz4: 3, zstd: 4 };
      expect(codecs.has(codecIds[codec]!)).toBe(true);
    },
  );

  test("a kafkajs producer sends keyed messages with headers; kcat reads exactly them", async () => {
    const { kafkaPort } = await brokerProcess();
    const kafka = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "kjs", numPartitions: 3 }] });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const sent = await producer.send({
      topic: "kjs",
      messages: Array.from({ length: 5 }, (_, i) => ({
        key: `key-${i}`,
        value: `value-${i}`,
        partition: 1,
        headers: { h: `${i}` },
        timestamp: String(1_700_000_000_000 + i),
      })),
    });
    expect(sent).toEqual([
      expect.objectContaining({ topicName: "kjs", partition: 1, errorCode: 0, baseOffset: "0" }),
    ]);
    const consumed = await kcat(kafkaPort, [
      "-C",
      "-t",
      "kjs",
      "-p",
      "1",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-X",
      "check.crcs=true",
      "-f",
      "%o %k %s %T %h\\n",
    ]);
    expect(consumed.stdout.trim().split("\n")).toEqual(
      Array.from({ length: 5 }, (_, i) => `${i} key-${i} value-${i} ${1_700_000_000_000 + i} h=${i}`),
    );
    // By timestamp (ListOffsets with a time): from the first record at or after it, inside the batch.
    const fromTime = await kcat(kafkaPort, [
      "-C",
      "-t",
      "kjs",
      "-p",
      "1",
      "-o",
      "s@1700000000003",
      "-e",
      "-q",
      "-f",
      "%o\\n",
    ]);
    expect(fromTime.stdout).toBe("3\n4\n");
    const tail = await kcat(kafkaPort, [
      "-C",
      "-t",
      "kjs",
      "-p",
      "1",
      "-o",
      "-1",
      "-e",
      "-q",
      "-f",
      "%o %s\\n",
    ]);
    expect(tail.stdout).toBe("4 value-4\n");
  });
});

/** This process's descriptors open on `file` (also after it was deleted: "<path> (deleted)"). */
function descriptorsOpenOn(file: string): number {
  return fs.readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(file);
    } catch {
      return false; // closed meanwhile
    }
  }).length;
}

describe("--kafka-fetch-path sendfile", () => {
  /** A batch of `count` records of 1,000 bytes (~1 KiB each): 100 make a batch above the 64 KiB bound. */
  const batchOf = (letter: string, from: number, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      key: null,
      value: TEXT.encode(`${letter}${from + i}`.padEnd(1000, letter)),
      timestamp: 1,
    }));

  /** The records fields of Fetches from offset 0 until the high watermark, one per answer. */
  async function fetchAll(port: number, topic: string, end: number): Promise<Uint8Array[]> {
    const socket = await connect(port);
    const answers: Uint8Array[] = [];
    for (let offset = 0; offset < end; ) {
      const answer = fetchAnswer(
        await roundTrip(socket, fetchV11(topic, 0, offset, { partitionMaxBytes: 16 << 20 })),
      );
      expect(answer.error).toBe(KAFKA_ERROR.NONE);
      answers.push(answer.records!);
      const got = decodeAll(answer.records!);
      offset = got.at(-1)![0] + 1;
    }
    return answers;
  }

  test("large batches leave from their files, byte for byte what the copy path sends; a small batch ends the run and is copied", async () => {
    const { broker, port, listener } = inProcess("sendfile");
    const copying = listen(broker, "copy");
    broker.createTopic("big");
    // Three batches of ~100 KiB, two of one record, one more large one.
    const counts = [100, 100, 100, 1, 1, 100];
    let offset = 0;
    for (const [i, count] of counts.entries()) {
      await broker.produce("big", 0, batchOf(String.fromCharCode(97 + i), offset, count));
      offset += count;
    }
    const sent = await fetchAll(port, "big", offset);
    const copied = await fetchAll(copying.port, "big", offset);
    const joined = (answers: Uint8Array[]) => Buffer.concat(answers);
    expect(joined(sent).equals(joined(copied))).toBe(true);
    // The copy path answers everything at once; the sendfile path the three large batches, then the
    // rest copied (a small batch first).
    expect(copied.length).toBe(1);
    expect(sent.map((records) => decodeAll(records).length)).toEqual([300, 102]);
    // All of the first answer's records but the bytes, if any, that armed `drain` (ffi/file-send.ts).
    expect(sent[0]!.length - listener.counters.sendfileBytes).toBeWithin(0, 1000);
    expect(copying.listener.counters.sendfileBytes).toBe(0);
    // /metrics' booblik_kafka_fetch_bytes_total: every record byte answered, on either path.
    expect(listener.traffic.fetchBytes).toBe(joined(sent).length);
    expect(copying.listener.traffic.fetchBytes).toBe(joined(copied).length);
    // decodeAll checked every batch CRC; every value is where it was produced.
    expect(decodeAll(joined(sent)).every(([o, , value]) => value!.startsWith(`${value![0]}${o}`))).toBe(true);
  });

  test("a client that hangs up in the middle of a sendfile answer gives its segment back: a purged segment's file closes", async () => {
    const { broker, port, listener } = inProcess("sendfile");
    // Nine ~900 KB batches fill the first 8 MiB segment (more than the socket buffers take while
    // the client does not read: the answer's lease holds that segment), the tenth rolls.
    broker.createTopic("gone", { segmentBytes: 8 << 20 });
    for (let i = 0; i < 10; i++)
      await broker.produce("gone", 0, [
        { key: null, value: new Uint8Array(900_000).fill(97 + i), timestamp: 1 },
      ]);
    expect(broker.partition("gone", 0).log.segmentBaseOffsets).toEqual([0, 9]);
    const first = `${broker.dataDir}/gone-0/00000000000000000000.log`;
    const openFirst = () => descriptorsOpenOn(first);
    const socket = await rawConnect(port, { readPaused: true });
    socket.write(fetchV11("gone", 0, 0, { partitionMaxBytes: 16 << 20 }));
    await waitUntil(() => listener.counters.sendfileBytes > 0, "the answer to start");
    // Purged while the answer is being sent: the segment file is deleted, its descriptor kept open
    // for the send (Segment.acquire) until the answer's lease is given back.
    await broker.purge("gone", 0, 9);
    expect(fs.existsSync(first)).toBe(false);
    expect(openFirst()).toBe(1);
    socket.close();
    await waitUntil(() => openFirst() === 0, "the purged segment's descriptor closed", 4_000);
  });

  test("a long poll whose rounds take and drop a lease, and one closed while it waits, leave no segment file open", async () => {
    const { broker, port } = inProcess("sendfile");
    broker.createTopic("poll", { segmentBytes: 1 << 20 });
    // One ~100 KB batch in the first segment, then one that rolls: the first can be purged.
    await broker.produce("poll", 0, batchOf("p", 0, 100));
    await broker.produce("poll", 0, [{ key: null, value: new Uint8Array(1_000_000), timestamp: 1 }]);
    expect(broker.partition("poll", 0).log.segmentBaseOffsets).toEqual([0, 100]);
    const first = `${broker.dataDir}/poll-0/00000000000000000000.log`;
    const openFirst = () => descriptorsOpenOn(first);
    // min_bytes above what the partition holds: every round reads the ~100 KB batch from its file
    // (a lease), finds too few bytes and waits; a record produced meanwhile wakes it for a round
    // more, and max_wait_ms ends it with what there is.
    const socket = await connect(port);
    const waiting = roundTrip(
      socket,
      fetchV11("poll", 0, 0, { minBytes: 64 << 20, maxWaitMs: 400, partitionMaxBytes: 150_000 }),
    );
    await broker.produce("poll", 0, batchOf("q", 101, 1));
    expect(decodeAll(fetchAnswer(await waiting).records!).map((r) => r[0])).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
    // A second poll, closed by its client while it waits.
    const closing = await rawConnect(port);
    closing.write(
      fetchV11("poll", 0, 0, { minBytes: 64 << 20, maxWaitMs: 5_000, partitionMaxBytes: 150_000 }),
    );
    await waitUntil(() => listenerOf(port).counters.requests >= 2, "the second poll to be read");
    closing.close();
    await broker.purge("poll", 0, 100);
    expect(fs.existsSync(first)).toBe(false);
    // No round kept its lease: the purged segment's descriptor closes at once.
    expect(openFirst()).toBe(0);
  });

  test("a listener stopped while a sendfile answer waits for its reader sends it whole, then gives the segment back", async () => {
    const { broker, port, listener } = inProcess("sendfile");
    // As in the hang-up test: ~8 MiB in the first segment, more than the socket buffers take.
    broker.createTopic("stopping", { segmentBytes: 8 << 20 });
    for (let i = 0; i < 10; i++)
      await broker.produce("stopping", 0, [
        { key: null, value: new Uint8Array(900_000).fill(97 + i), timestamp: 1 },
      ]);
    const first = `${broker.dataDir}/stopping-0/00000000000000000000.log`;
    const socket = await rawConnect(port, { readPaused: true });
    cleanups.push(() => socket.close());
    socket.write(fetchV11("stopping", 0, 0, { partitionMaxBytes: 16 << 20 }));
    await waitUntil(() => listener.counters.sendfileBytes > 0, "the answer to start");
    const stopped = listener.stop();
    await broker.purge("stopping", 0, 9);
    expect(descriptorsOpenOn(first)).toBe(1);
    // The stop waits for the answer being written (at most SHUTDOWN_DRAIN_MS): the reader gets it
    // all, from the purged file, and then the connection closes.
    socket.socket.resume();
    const answer = fetchAnswer((await roundTripResult(socket, 0)).reader);
    expect(decodeAll(answer.records!).map((r) => [r[0], r[2]?.length, r[2]?.charCodeAt(899_999)])).toEqual(
      Array.from({ length: 9 }, (_, i) => [i, 900_000, 97 + i]),
    );
    await stopped;
    await socket.closed;
    expect(descriptorsOpenOn(first)).toBe(0);
  });

  test("an answer that fails to encode gives back the leases it was handed: the purged segment's file closes", async () => {
    const broker = Broker.open({ dataDir: dataDir().path, topicDefaults: { durability: "append" } });
    cleanups.push(() => broker.close());
    broker.createTopic("fails", { segmentBytes: 1 << 20 });
    await broker.produce("fails", 0, batchOf("f", 0, 100));
    await broker.produce("fails", 0, [{ key: null, value: new Uint8Array(1_000_000), timestamp: 1 }]);
    const first = `${broker.dataDir}/fails-0/00000000000000000000.log`;
    const request: FetchRequest = {
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 16 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        { topic: "fails", partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 150_000 }] },
      ],
    };
    const handed: number[] = [];
    const fetching = fetchRecords(
      broker,
      request,
      11,
      { stopped: false, promise: new Promise<void>(() => undefined) },
      () => undefined,
      new FetchBufferPool(),
      (_response, leases) => {
        handed.push(leases.length);
        throw new Error("the encoder failed");
      },
      true,
    );
    await expect(fetching).rejects.toThrow("the encoder failed");
    // The ~100 KB batch was read for sendfile: one lease, on the first segment.
    expect(handed).toEqual([1]);
    await broker.purge("fails", 0, 100);
    expect(fs.existsSync(first)).toBe(false);
    expect(descriptorsOpenOn(first)).toBe(0);
  });

  test("one Fetch of two partitions mixes file and copied records, each within its limit; a first batch above the limit comes whole", async () => {
    const { broker, port, listener } = inProcess("sendfile");
    broker.createTopic("two", { partitions: 2 });
    for (let batch = 0; batch < 3; batch++) await broker.produce("two", 0, batchOf("l", batch * 100, 100));
    for (let batch = 0; batch < 5; batch++) await broker.produce("two", 1, batchOf("s", batch, 1));
    const socket = await connect(port);
    // Fetch v11 of partitions 0 and 1 of "two", each from offset 0 with `partitionMaxBytes`.
    const fetchTwo = (partitionMaxBytes: number) =>
      new Expect()
        .i16(1)
        .i16(11)
        .i32(7)
        .str("t")
        .i32(-1)
        .i32(0)
        .i32(1)
        .i32(52_428_800)
        .i8(1)
        .i32(0)
        .i32(-1)
        .i32(1)
        .str("two")
        .i32(2)
        .raw(new Expect().i32(0).i32(-1).i64(0).i64(-1).i32(partitionMaxBytes).body())
        .raw(new Expect().i32(1).i32(-1).i64(0).i64(-1).i32(partitionMaxBytes).body())
        .i32(0)
        .str("")
        .frame();
    const answers = (reader: KafkaReader) => {
      reader.int32("throttle");
      reader.int16("error");
      reader.int32("session");
      reader.int32("topics");
      reader.string("topic");
      const count = reader.int32("partitions");
      const out: [number, number, number[]][] = [];
      for (let i = 0; i < count; i++) {
        const partition = reader.int32("index");
        const error = reader.int16("error");
        reader.int64("hw");
        reader.int64("lso");
        reader.int64("log_start");
        reader.int32("aborted");
        reader.int32("preferred_read_replica");
        out.push([partition, error, decodeAll(reader.nullableBytes("records")!).map((r) => r[0])]);
      }
      return out;
    };
    const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
    // 250 KB per partition: two of partition 0's ~100 KB batches (the third would pass the limit),
    // all five small ones of partition 1, copied.
    expect(answers(await roundTrip(socket, fetchTwo(250_000)))).toEqual([
      [0, 0, range(0, 200)],
      [1, 0, range(0, 5)],
    ]);
    const afterFirst = listener.counters.sendfileBytes;
    expect(afterFirst).toBeGreaterThan(200_000);
    // 10 KB per partition: partition 0's first batch comes whole anyway (KIP-74), by sendfile;
    // partition 1 gets what fits.
    const small = answers(await roundTrip(socket, fetchTwo(10_000)));
    expect(small[0]).toEqual([0, 0, range(0, 100)]);
    expect(small[1]![2].length).toBeGreaterThan(0);
    expect(listener.counters.sendfileBytes - afterFirst).toBeGreaterThan(100_000);
  });

  test("a topic deleted while a sendfile answer is sent: the answer still carries that topic's records, not another file's", async () => {
    const { broker, port, listener } = inProcess("sendfile");
    broker.createTopic("doomed", { segmentBytes: 16 << 20 });
    // ~8 MiB in one segment: more than the socket buffers take while the client does not read.
    const values = Array.from({ length: 9 }, (_, i) => String.fromCharCode(97 + i).repeat(900_000));
    for (const value of values)
      await broker.produce("doomed", 0, [{ key: null, value: TEXT.encode(value), timestamp: 1 }]);
    const socket = await rawConnect(port, { readPaused: true });
    cleanups.push(() => socket.close());
    socket.write(fetchV11("doomed", 0, 0, { partitionMaxBytes: 16 << 20 }));
    await waitUntil(() => listener.counters.sendfileBytes > 0, "the answer to start");
    await broker.deleteTopic("doomed");
    // Files opened now take the lowest free descriptor numbers: before the fix, the deleted
    // segment's among them, and the rest of the answer came from these files.
    const decoy = dataDir().file("decoy");
    fs.writeFileSync(decoy, new Uint8Array(1 << 20).fill(0x5a));
    const decoys = Array.from({ length: 8 }, () => fs.openSync(decoy, "r"));
    cleanups.push(() => {
      for (const fd of decoys) fs.closeSync(fd);
    });
    socket.socket.resume();
    const answer = fetchAnswer((await roundTripResult(socket, 0)).reader);
    // decodeAll checks every batch CRC32C; every value is the deleted topic's.
    expect(decodeAll(answer.records!).map((r) => [r[0], r[2]?.length, r[2]?.[0]])).toEqual(
      values.map((value, i) => [i, value.length, value[0]]),
    );
  });

  test("the first batch of an answer is still checked: a damaged one is CORRUPT_MESSAGE", async () => {
    const { broker, port } = inProcess("sendfile");
    broker.createTopic("rot");
    await broker.produce("rot", 0, batchOf("a", 0, 100));
    await broker.produce("rot", 0, batchOf("b", 100, 100));
    const file = `${broker.dataDir}/rot-0/00000000000000000000.log`;
    const bytes = fs.readFileSync(file);
    // The last byte of the second entry's batch, which only the CRCs cover.
    const second = 32 + 8 + bytes.readUInt32BE(32);
    const damagedAt = second + 8 + bytes.readUInt32BE(second) - 1;
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, Uint8Array.of(bytes[damagedAt]! ^ 0x20), 0, 1, damagedAt);
    fs.closeSync(fd);
    const socket = await connect(port);
    expect(fetchAnswer(await roundTrip(socket, fetchV11("rot", 0, 100))).error).toBe(
      KAFKA_ERROR.CORRUPT_MESSAGE,
    );
    // From the first batch the run is sent unread: the damage reaches a client, which must check.
    const fromStart = fetchAnswer(await roundTrip(socket, fetchV11("rot", 0, 0)));
    expect(fromStart.error).toBe(KAFKA_ERROR.NONE);
    expect(() => decodeAll(fromStart.records!)).toThrow();
  });
});

describe("a damaged stored batch (issue 15)", () => {
  test("Fetch returns the valid batches before it, then CORRUPT_MESSAGE from it, and the batches after it from the next offset", async () => {
    const { broker, port } = inProcess();
    broker.createTopic("z");
    const socket = await connect(port);
    for (let i = 0; i < 4; i++) {
      const values = [`v${3 * i}`, `v${3 * i + 1}`, `v${3 * i + 2}`];
      expect(produceAnswer(await roundTrip(socket, produceV8("z", 0, encodeBatch(records(values)))))).toEqual(
        [0, 3 * i, null],
      );
    }
    // The third stored entry (offsets 6-8): a byte of its last record, which only the CRCs cover.
    const file = `${broker.dataDir}/z-0/00000000000000000000.log`;
    const bytes = fs.readFileSync(file);
    let position = 32;
    for (let i = 0; i < 2; i++) position += 8 + bytes.readUInt32BE(position);
    const damagedAt = position + 8 + bytes.readUInt32BE(position) - 2;
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, Uint8Array.of(bytes[damagedAt]! ^ 0x20), 0, 1, damagedAt);
    fs.closeSync(fd);

    const before = fetchAnswer(await roundTrip(socket, fetchV11("z", 0, 0)));
    expect(before.error).toBe(KAFKA_ERROR.NONE);
    expect(decodeAll(before.records!).map((r) => r[0])).toEqual([0, 1, 2, 3, 4, 5]);
    const at = fetchAnswer(await roundTrip(socket, fetchV11("z", 0, 6)));
    expect(at.error).toBe(KAFKA_ERROR.CORRUPT_MESSAGE);
    const after = fetchAnswer(await roundTrip(socket, fetchV11("z", 0, 9)));
    expect(after.error).toBe(KAFKA_ERROR.NONE);
    expect(decodeAll(after.records!).map((r) => r[0])).toEqual([9, 10, 11]);
  });
});
