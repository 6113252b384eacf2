/**
 * Kafka's record model end to end, against a broker process on both fetch paths (sendfile and
 * copy): keys, values, headers, null values and timestamps round-trip through the client; a fetch
 * from the middle of a batch returns the whole batch and the client drops the records below;
 * LIST_OFFSETS by time agrees with a reference model (CreateTime and LogAppendTime); compressed
 * batches the client produced come back; every PRODUCE validation error, sent over a raw socket,
 * names its rule and position and leaves the log unchanged (also inside a request of two batches);
 * version 0 is refused naming version 1; and batches captured from real Kafka clients (kafkajs,
 * kcat) PRODUCEd here are consumed as the records those clients were given.
 *
 * The random timestamps print their seed in the test name; BOOBLIK_SEED=<n> replays them.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { CompressionTypes, Kafka, logLevel } from "kafkajs";
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer, headersTextOf, keyTextOf, textOf } from "../../src/client/consumer.ts";
import type { ConsumedRecord } from "../../src/client/fetched.ts";
import { Producer } from "../../src/client/producer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API } from "../../src/protocol/frame.ts";
import {
  beginRequest,
  encodeMetadataRequest,
  encodeProduceRequest,
  endFrame,
} from "../../src/protocol/messages.ts";
import {
  ATTRIBUTES_OFFSET,
  decodeBatch,
  encodeBatch,
  LAST_OFFSET_DELTA_OFFSET,
  MAGIC_OFFSET,
  RECORD_COUNT_OFFSET,
  type RecordInput,
} from "../../src/record/batch.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { frame, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { fetchedRecords } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { resign } from "../record/helpers.ts";
import { type KafkaListener, listenLikeKafka } from "../record/kafka-listener.ts";

setDefaultTimeout(60_000);

const SEED = testSeed();
const utf8 = (text: string) => new TextEncoder().encode(text);
const T = 1_700_000_000_000;

/** A record as plain data, comparable with toEqual. */
function plain(record: {
  offset?: number;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers?: readonly { key: string; value: Uint8Array | null }[];
}) {
  const text = (bytes: Uint8Array | null) => (bytes === null ? null : Buffer.from(bytes).toString("hex"));
  return {
    ...(record.offset === undefined ? {} : { offset: record.offset }),
    timestamp: record.timestamp,
    key: text(record.key),
    value: text(record.value),
    headers: (record.headers ?? []).map((header) => [header.key, text(header.value)]),
  };
}

async function consumeAll(
  client: BooblikClient,
  topic: string,
  partition: number,
  from: number | { timestampMs: number } = 0,
) {
  const records: ConsumedRecord[] = [];
  for await (const record of new Consumer(client, { topic, partition, from, stopAtEnd: true, maxBytes: 300 }))
    records.push(record);
  return records;
}

describe.each(["sendfile", "copy"] as const)("--fetch-path %s", (fetchPath) => {
  test("keys, values, headers, null values and timestamps round-trip through producer, broker and consumer", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--fetch-path", fetchPath]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("shapes", { partitions: 1 });
      const producer = new Producer(client);
      const sent = [
        { key: "k1", value: "plain", headers: { "trace-id": "abc", empty: "" }, timestamp: T },
        { key: null, value: null, timestamp: new Date(T - 1) }, // a tombstone with no key, an earlier time
        {
          key: utf8("bytes key"),
          value: new Uint8Array([0, 1, 2, 255]),
          headers: [
            { key: "multi", value: "x" },
            { key: "multi", value: null },
            { key: "ключ", value: utf8("значение") },
          ],
          timestamp: T + 123_456,
        },
        { value: "", timestamp: T + 1 }, // an empty value is a value, not a null
      ];
      const ack = await producer.send("shapes", sent, { partition: 0 });
      expect([ack.offset, ack.count, ack.logAppendTimeMs]).toEqual([0, 4, -1]);
      // write(): the fast path takes the same record shape.
      producer.write(
        "shapes",
        { key: "w", value: "written", headers: [{ key: "h", value: "v" }], timestamp: T + 2 },
        { partition: 0 },
      );
      await producer.close();

      const records = await consumeAll(client, "shapes", 0);
      expect(records.map((record) => [record.topic, record.partition, record.offset])).toEqual(
        [0, 1, 2, 3, 4].map((offset) => ["shapes", 0, offset]),
      );
      expect(records.map(plain)).toEqual(
        [
          {
            timestamp: T,
            key: utf8("k1"),
            value: utf8("plain"),
            headers: [
              { key: "trace-id", value: utf8("abc") },
              { key: "empty", value: new Uint8Array(0) },
            ],
          },
          { timestamp: T - 1, key: null, value: null, headers: [] },
          {
            timestamp: T + 123_456,
            key: utf8("bytes key"),
            value: new Uint8Array([0, 1, 2, 255]),
            headers: [
              { key: "multi", value: utf8("x") },
              { key: "multi", value: null },
              { key: "ключ", value: utf8("значение") },
            ],
          },
          { timestamp: T + 1, key: null, value: new Uint8Array(0), headers: [] },
          {
            timestamp: T + 2,
            key: utf8("w"),
            value: utf8("written"),
            headers: [{ key: "h", value: utf8("v") }],
          },
        ].map((record, offset) => plain({ offset, ...record })),
      );
      // Anything but a string, bytes or null is refused, not encoded as garbage.
      const again = new Producer(client);
      await expect(again.send("shapes", { value: 42 as never })).rejects.toThrow("got number");
      await expect(again.send("shapes", { value: "v", headers: { h: {} as never } })).rejects.toThrow(
        "got object",
      );
      await again.close().catch(() => undefined);
      expect([keyTextOf(records[0]!), textOf(records[0]!), headersTextOf(records[0]!)]).toEqual([
        "k1",
        "plain",
        { "trace-id": "abc", empty: "" },
      ]);
    } finally {
      client.close();
    }
  });

  test("a FETCH from the middle of a batch returns the whole batch; the client drops the records below", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--fetch-path", fetchPath]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("middle");
      await client.produce("middle", 0, batchOfValues(["a", "b", "c", "d"], T));
      await client.produce("middle", 0, batchOfValues(["e", "f"], T));
      const fetched = await client.fetch("middle", 0, 2);
      expect([fetched.firstOffset, fetched.recordCount]).toEqual([0, 4]); // offsets 2-5 are new to us
      expect(fetchedRecords(fetched, 2).map((record) => [record.offset, textOf(record)])).toEqual([
        [2, "c"],
        [3, "d"],
        [4, "e"],
        [5, "f"],
      ]);
      // The consumer from offset 5 (inside the second batch) and from 3 yields nothing below.
      expect((await consumeAll(client, "middle", 0, 5)).map((record) => record.offset)).toEqual([5]);
      expect((await consumeAll(client, "middle", 0, 3)).map(textOf)).toEqual(["d", "e", "f"]);
      const stats = await client.stats();
      expect(stats.fetchPath).toBe(fetchPath);
    } finally {
      client.close();
    }
  });
});

test("write() stamps each record with the time it was written, not a clock read before an await", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("clock");
    const producer = new Producer(client);
    const bounds: [number, number][] = [];
    for (let i = 0; i < 3; i++) {
      const before = Date.now();
      for (let k = 0; k < 300; k++) producer.write("clock", `r${i}-${k}`, { partition: 0 });
      bounds.push([before, Date.now()]);
      // Let the clock move on (a condition, not a sleep): the next run's records must show it.
      await waitUntil(() => Date.now() > bounds[i]![1] + 1, "the clock to advance");
    }
    await producer.close();
    const records = await consumeAll(client, "clock", 0);
    expect(records.length).toBe(900);
    records.forEach((record, index) => {
      const [before, after] = bounds[Math.floor(index / 300)]!;
      expect(record.timestamp).toBeGreaterThanOrEqual(before);
      expect(record.timestamp).toBeLessThanOrEqual(after);
    });
  } finally {
    client.close();
  }
});

describe("LIST_OFFSETS by time", () => {
  test(`answers the first offset whose timestamp is ≥ T, as a reference model does (seed ${SEED})`, async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    const random = new Random(SEED);
    try {
      await client.createTopic("times", { segmentBytes: 4096 });
      // CreateTime is the producers' clock: mostly rising, sometimes going back.
      const timestamps: number[] = [];
      let clock = T;
      for (let batch = 0; batch < 40; batch++) {
        const records: RecordInput[] = [];
        for (let i = random.int(1, 8); i > 0; i--) {
          clock += random.int(-30, 100);
          timestamps.push(clock);
          records.push({ key: null, value: utf8(`r${timestamps.length - 1}`), timestamp: clock });
        }
        await client.produce("times", 0, encodeBatch(records));
      }
      const reference = (at: number) => {
        const offset = timestamps.findIndex((timestamp) => timestamp >= at);
        return offset < 0 ? { offset: -1, timestampMs: -1 } : { offset, timestampMs: timestamps[offset]! };
      };
      const queries = [
        T - 1_000_000,
        T,
        clock,
        clock + 1,
        Math.max(...timestamps) + 1,
        ...timestamps.slice(0, 20),
      ];
      for (let i = 0; i < 60; i++) queries.push(random.int(T - 100, clock + 100));
      for (const at of queries) {
        const answer = await client.offsetForTime("times", 0, at);
        expect({ at, offset: answer.offset, timestampMs: answer.timestampMs }).toEqual({
          at,
          ...reference(at),
        });
      }
      // The consumer's "from a time" starts there (or at the end when nothing is that recent).
      const middle = timestamps[17]!;
      const from = reference(middle).offset;
      const consumed = await consumeAll(client, "times", 0, { timestampMs: middle });
      expect(consumed[0]!.offset).toBe(from);
      expect(consumed.length).toBe(timestamps.length - from);
      const latest = Math.max(...timestamps);
      expect(await consumeAll(client, "times", 0, { timestampMs: latest + 1 })).toEqual([]);
    } finally {
      client.close();
    }
  });

  test("a LogAppendTime topic stamps the broker's time into every record and METADATA says so", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("stamped", { timestampType: "LogAppendTime" });
      const topic = (await client.metadata(["stamped"])).topics[0]!;
      expect([topic.timestampType, topic.config.timestampType]).toEqual(["LogAppendTime", "LogAppendTime"]);
      const before = Date.now();
      const ack = await client.produce("stamped", 0, batchOfValues(["old", "older"], 1000));
      const after = Date.now();
      expect(ack.logAppendTimeMs).toBeGreaterThanOrEqual(before);
      expect(ack.logAppendTimeMs).toBeLessThanOrEqual(after);
      const records = await consumeAll(client, "stamped", 0);
      expect(records.map((record) => record.timestamp)).toEqual([ack.logAppendTimeMs, ack.logAppendTimeMs]);
      expect(await client.offsetForTime("stamped", 0, 2000)).toMatchObject({
        offset: 0,
        timestampMs: ack.logAppendTimeMs,
      });
      expect((await client.metadata(["stamped"])).topics[0]!.timestampType).toBe("LogAppendTime");
      await client.createTopic("created");
      expect((await client.metadata(["created"])).topics[0]!.timestampType).toBe("CreateTime");
    } finally {
      client.close();
    }
  });
});

describe("compression", () => {
  test.each(["gzip", "zstd"] as const)(
    "batches the client compressed with %s are stored as sent and read back",
    async (codec) => {
      using dir = tempDir();
      await using broker = await startBroker(dir.path);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      try {
        await client.createTopic("squeezed");
        const producer = new Producer(client, { compression: codec });
        const values = Array.from({ length: 500 }, (_, i) => `record ${i} ${"lorem ipsum ".repeat(5)}`);
        for (const value of values) producer.write("squeezed", { key: "k", value, headers: { codec } });
        await producer.close();
        const records = await consumeAll(client, "squeezed", 0);
        expect(records.map(textOf)).toEqual(values);
        expect(records.every((record) => headersTextOf(record).codec === codec)).toBe(true);
        // Stored compressed: the log holds far fewer bytes than the values.
        const stored = (await client.fetch("squeezed", 0, 0, { maxBytes: 10_000_000 })).records.length;
        expect(stored).toBeLessThan(values.join("").length / 4);
      } finally {
        client.close();
      }
    },
  );
});

describe("PRODUCE validation over a raw socket", () => {
  const good = () =>
    encodeBatch([
      { key: utf8("k"), value: utf8("hello"), headers: [{ key: "h", value: utf8("1") }], timestamp: T },
      { key: null, value: utf8("x"), timestamp: T },
    ]);
  const view = (batch: Uint8Array) => new DataView(batch.buffer, batch.byteOffset);
  const cases: [string, () => Uint8Array, RegExp][] = [
    [
      "a bad batch CRC",
      () => {
        const b = good();
        b[b.length - 1]! ^= 1;
        return b;
      },
      /\(crc\) at byte 17 of the batch/,
    ],
    [
      "a bad magic",
      () => {
        const b = good();
        b[MAGIC_OFFSET] = 1;
        return b;
      },
      /\(magic\) at byte 16 of the batch: magic 1 is not 2/,
    ],
    [
      "BaseOffset ≠ 0",
      () => {
        const b = good();
        view(b).setUint32(4, 7);
        return b;
      },
      /\(base-offset\) at byte 0 of the batch: BaseOffset 7/,
    ],
    [
      "RecordCount ≠ the records",
      () => {
        const b = good();
        view(b).setInt32(RECORD_COUNT_OFFSET, 3);
        view(b).setInt32(LAST_OFFSET_DELTA_OFFSET, 2);
        return resign(b);
      },
      /\(record(-count)?\) at byte \d+ of the batch/,
    ],
    [
      "LastOffsetDelta ≠ RecordCount − 1",
      () => {
        const b = good();
        view(b).setInt32(LAST_OFFSET_DELTA_OFFSET, 5);
        return resign(b);
      },
      /\(last-offset-delta\) at byte 23 of the batch/,
    ],
    [
      "a control batch",
      () => {
        const b = good();
        b[ATTRIBUTES_OFFSET + 1]! |= 0x20;
        return resign(b);
      },
      /\(control\) at byte 21 of the batch/,
    ],
    [
      "an unknown codec",
      () => {
        const b = good();
        b[ATTRIBUTES_OFFSET + 1]! |= 6;
        return resign(b);
      },
      /\(codec\) at byte 21 of the batch: compression codec 6/,
    ],
    [
      "a malformed record",
      () => {
        const b = good();
        b[61] = 0x7e;
        return resign(b);
      },
      /\(record\) at byte 61 of the batch: record 0/,
    ],
    [
      "a BatchLength that disagrees",
      () => {
        const b = good();
        view(b).setInt32(8, b.length);
        return b;
      },
      /\(batch-length\) at byte 8 of the batch/,
    ],
  ];

  test("each rejection is CORRUPT_RECORD naming the rule and the byte position; the log is unchanged", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    const socket = await rawConnect(broker.port);
    try {
      await admin.createTopic("strict");
      await admin.produce("strict", 0, good());
      let id = 1;
      let received = 0;
      for (const [what, build, message] of cases) {
        socket.write(
          frame((w) => encodeProduceRequest(w, id++, { topic: "strict", partition: 0, records: build() })),
        );
        const [response] = await waitForResponses(socket, 1, received);
        received = socket.received().length;
        expect({ what, code: response!.errorCode }).toEqual({ what, code: WIRE_ERROR_CODES.CORRUPT_RECORD });
        expect(response!.message, what).toMatch(message);
        expect((await admin.listOffsets("strict", 0)).nextOffset, what).toBe(2);
      }
      // Two batches in one request, the second bad: neither is appended; the message names it.
      const pair = new Uint8Array([...good(), ...cases[0]![1]()]);
      socket.write(
        frame((w) => encodeProduceRequest(w, id++, { topic: "strict", partition: 0, records: pair })),
      );
      const [both] = await waitForResponses(socket, 1, received);
      received = socket.received().length;
      expect(both!.errorCode).toBe(WIRE_ERROR_CODES.CORRUPT_RECORD);
      expect(both!.message).toMatch(new RegExp(`batch 1 \\(at byte ${good().length} of the records\\)`));
      expect((await admin.listOffsets("strict", 0)).nextOffset).toBe(2);
      // Two good batches in one request: both appended, offsets in order.
      const ack = await admin.produce("strict", 0, new Uint8Array([...good(), ...good()]));
      expect([ack.firstOffset, ack.recordCount]).toEqual([2, 4]);
      expect((await consumeAll(admin, "strict", 0)).map((record) => record.offset)).toEqual([
        0, 1, 2, 3, 4, 5,
      ]);
    } finally {
      socket.close();
      admin.close();
    }
  });

  test("version 0 of a changed API is UNSUPPORTED_VERSION naming version 1; the connection stays usable", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const socket = await rawConnect(broker.port);
    try {
      for (const [apiKey, name] of [
        [API.PRODUCE, "PRODUCE"],
        [API.FETCH, "FETCH"],
        [API.METADATA, "METADATA"],
        [API.LIST_OFFSETS, "LIST_OFFSETS"],
      ] as const) {
        const before = socket.received().length;
        socket.write(frame((w) => endFrame(w, beginRequest(w, apiKey, 9, 0))));
        const [response] = await waitForResponses(socket, 1, before);
        expect(response!.errorCode).toBe(WIRE_ERROR_CODES.UNSUPPORTED_VERSION);
        expect(response!.message).toBe(`${name} version 0 is not supported (this broker speaks version 1)`);
      }
      const before = socket.received().length;
      socket.write(frame((w) => encodeMetadataRequest(w, 10, { topics: [] })));
      const [metadata] = await waitForResponses(socket, 1, before);
      expect([metadata!.correlationId, metadata!.errorCode]).toEqual([10, 0]);
    } finally {
      socket.close();
    }
  });
});

describe("golden batches from real Kafka clients, PRODUCEd to booblik", () => {
  let listener: KafkaListener | undefined;
  afterEach(() => listener?.stop());

  async function roundTrip(batches: Uint8Array[]) {
    expect(batches.length).toBeGreaterThan(0);
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("golden");
      const expected: ReturnType<typeof plain>[] = [];
      let offset = 0;
      for (const batch of batches) {
        await client.produce("golden", 0, batch);
        for (const record of decodeBatch(batch).records)
          expected.push(plain({ ...record, offset: offset + record.offset }));
        offset += decodeBatch(batch).records.length;
      }
      expect((await consumeAll(client, "golden", 0)).map(plain)).toEqual(expected);
    } finally {
      client.close();
    }
  }

  test("kafkajs 2.2.4: an uncompressed and a gzip batch", async () => {
    listener = listenLikeKafka();
    const kafka = new Kafka({
      clientId: "golden",
      brokers: [`127.0.0.1:${listener.port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const messages = [
      {
        key: "user-1",
        value: "first",
        headers: { "trace-id": "abc", multi: ["x", "y"] },
        timestamp: String(T),
      },
      { key: null, value: "no key", timestamp: String(T + 7) },
      { key: "user-3", value: null, timestamp: String(T + 2) },
    ];
    try {
      await producer.send({ topic: "golden", messages });
      await producer.send({ topic: "golden", messages, compression: CompressionTypes.GZIP });
    } finally {
      await producer.disconnect();
    }
    await roundTrip(listener.captured);
  });

  const KCAT = Bun.which("kcat");
  test.skipIf(KCAT === null).each(["none", "gzip", "snappy", "lz4", "zstd"])(
    "kcat (librdkafka) -z %s, keys and headers",
    async (codec) => {
      listener = listenLikeKafka();
      const lines = Array.from({ length: 50 }, (_, i) => `key-${i % 3}:value ${i}`);
      const child = Bun.spawn(
        [
          KCAT!,
          "-b",
          `127.0.0.1:${listener.port}`,
          "-P",
          "-t",
          "golden",
          "-p",
          "0",
          "-K",
          ":",
          "-H",
          "trace-id=abc",
          "-z",
          codec,
        ],
        { stdin: new TextEncoder().encode(`${lines.join("\n")}\n`), stdout: "pipe", stderr: "pipe" },
      );
      const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: "" });
      await roundTrip(listener.captured);
    },
  );
});
