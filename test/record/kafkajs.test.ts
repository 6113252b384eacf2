/**
 * Golden bytes from a real Kafka client. A tiny TCP listener (kafka-listener.ts) speaks just enough
 * Kafka for kafkajs 2.2.4's producer to send, and records the RecordBatch of each Produce request as
 * it crossed the socket.
 * Then:
 * - the captured batches pass our PRODUCE validation and decode to exactly the messages given;
 * - our encoder, given kafkajs's producer fields, reproduces the uncompressed batch byte for byte;
 * - batches we encode (none and gzip; kafkajs has no built-in zstd) decode in kafkajs's own decoder.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CompressionTypes, Kafka, logLevel } from "kafkajs";
import { decodeBatch, encodeBatch, type RecordInput, validateBatch } from "../../src/record/batch.ts";
import { hex, utf8 } from "./helpers.ts";
import { type KafkaListener, listenLikeKafka } from "./kafka-listener.ts";

const T = 1_700_000_000_000;
const TOPIC = "golden";

// --- The messages kafkajs is given ----------------------------------------------------------------

const MESSAGES = [
  {
    key: "user-1",
    value: "first value",
    headers: { "trace-id": "abc", multi: ["x", "y"] },
    timestamp: String(T),
  },
  { key: null, value: "no key", timestamp: String(T + 7) },
  { key: "user-3", value: null, headers: { empty: "" }, timestamp: String(T + 2) },
  { key: "ключ", value: "значение 🔑", timestamp: String(T + 1000) },
];

/** The same records as RecordInput, in the order kafkajs writes headers (object order, arrays flattened). */
const EXPECTED: RecordInput[] = [
  {
    key: utf8("user-1"),
    value: utf8("first value"),
    headers: [
      { key: "trace-id", value: utf8("abc") },
      { key: "multi", value: utf8("x") },
      { key: "multi", value: utf8("y") },
    ],
    timestamp: T,
  },
  { key: null, value: utf8("no key"), headers: [], timestamp: T + 7 },
  {
    key: utf8("user-3"),
    value: null,
    headers: [{ key: "empty", value: new Uint8Array(0) }],
    timestamp: T + 2,
  },
  { key: utf8("ключ"), value: utf8("значение 🔑"), headers: [], timestamp: T + 1000 },
];

function plain(
  records: readonly {
    key: Uint8Array | null;
    value: Uint8Array | null;
    timestamp: number;
    headers?: readonly { key: string; value: Uint8Array | null }[];
  }[],
) {
  return records.map((record) => ({
    key: record.key && hex(record.key),
    value: record.value && hex(record.value),
    timestamp: record.timestamp,
    headers: (record.headers ?? []).map((header) => [header.key, header.value && hex(header.value)]),
  }));
}

let listener: KafkaListener;
/** kafkajs's batches: [uncompressed, gzip]. */
let golden: Uint8Array[];

beforeAll(async () => {
  listener = listenLikeKafka();
  const kafka = new Kafka({
    clientId: "golden",
    brokers: [`127.0.0.1:${listener.port}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic: TOPIC, messages: MESSAGES });
    await producer.send({ topic: TOPIC, messages: MESSAGES, compression: CompressionTypes.GZIP });
  } finally {
    await producer.disconnect();
  }
  golden = listener.captured;
});

afterAll(() => listener?.stop());

describe("batches captured from kafkajs 2.2.4's producer", () => {
  test("two Produce requests, one batch each, as sent on the socket", () => {
    expect(golden.length).toBe(2);
    expect(golden[0]![16]).toBe(2); // magic
    expect(golden[1]![22]! & 7).toBe(1); // gzip
  });

  test.each([
    ["uncompressed", 0],
    ["gzip", 1],
  ])("%s: passes PRODUCE validation and decodes to the messages given", (_name, index) => {
    const batch = golden[index]!;
    const header = validateBatch(batch, 0, batch.length, { walkCompressed: true });
    // What kafka-wire.md says kafkajs sends: PLE 0, ProducerId −1, epoch 0, BaseSequence 0.
    expect([
      header.partitionLeaderEpoch,
      header.producerId,
      header.producerEpoch,
      header.baseSequence,
    ]).toEqual([0, -1, 0, 0]);
    expect([header.recordCount, header.baseTimestamp, header.maxTimestamp]).toEqual([4, T, T + 1000]);
    const decoded = decodeBatch(batch);
    expect(decoded.records.map((record) => record.offset)).toEqual([0, 1, 2, 3]);
    expect(plain(decoded.records)).toEqual(plain(EXPECTED));
  });

  test("our encoder, given kafkajs's producer fields, writes the very same bytes", () => {
    const ours = encodeBatch(EXPECTED, {
      partitionLeaderEpoch: 0,
      producerId: -1,
      producerEpoch: 0,
      baseSequence: 0,
    });
    expect(hex(ours)).toBe(hex(golden[0]!));
  });
});

describe("batches we encode, decoded by kafkajs 2.2.4", () => {
  const RecordBatchDecoder = require("kafkajs/src/protocol/recordBatch/v0/decoder") as (
    decoder: unknown,
  ) => Promise<{
    firstOffset: string;
    records: {
      offset: string;
      timestamp: string;
      key: Buffer | null;
      value: Buffer | null;
      headers: Record<string, Buffer | null | (Buffer | null)[]>;
    }[];
  }>;
  const Decoder = require("kafkajs/src/protocol/decoder") as new (buffer: Buffer) => unknown;

  test.each([["none"], ["gzip"]] as const)("codec %s", async (codec) => {
    const records: RecordInput[] = [
      ...EXPECTED,
      {
        key: utf8("n"),
        value: utf8("null header"),
        headers: [{ key: "gone", value: null }],
        timestamp: T - 5,
      },
      { key: null, value: null, timestamp: -1 },
    ];
    const batch = encodeBatch(records, { codec });
    const decoded = await RecordBatchDecoder(new Decoder(Buffer.from(batch)));
    expect(decoded.records.length).toBe(records.length);
    decoded.records.forEach((theirs, i) => {
      const mine = records[i]!;
      expect(theirs.offset).toBe(String(i));
      expect(theirs.timestamp).toBe(String(mine.timestamp));
      expect(theirs.key === null ? null : hex(theirs.key)).toBe(mine.key && hex(mine.key));
      expect(theirs.value === null ? null : hex(theirs.value)).toBe(mine.value && hex(mine.value));
      // kafkajs folds headers into an object; a repeated key becomes an array.
      const folded: Record<string, (string | null)[]> = {};
      for (const header of mine.headers ?? []) {
        const values = folded[header.key] ?? [];
        values.push(header.value && hex(header.value));
        folded[header.key] = values;
      }
      const theirsFolded = Object.fromEntries(
        Object.entries(theirs.headers).map(([key, value]) => [
          key,
          (Array.isArray(value) ? value : [value]).map((item) => (item === null ? null : hex(item))),
        ]),
      );
      expect(theirsFolded).toEqual(folded);
    });
  });
});
