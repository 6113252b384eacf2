/**
 * Idempotent producers over Kafka request bytes, against a real Broker on a temporary data
 * directory: InitProducerId hands out ids unique across restarts; Produce answers a resent batch
 * with its original offset and appends nothing, refuses gaps (OUT_OF_ORDER_SEQUENCE_NUMBER) and old
 * epochs (INVALID_PRODUCER_EPOCH), and the state survives a clean restart (snapshot) and a restart
 * without one (replay of the log).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { PRODUCER_STATE_FILE } from "../../src/broker/producer-state.ts";
import {
  PRODUCER_ID_BLOCK_SIZE,
  PRODUCER_ID_EXPIRATION_MS,
  PRODUCER_IDS_PER_PARTITION_MAX,
} from "../../src/domain/limits.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaHandler } from "../../src/kafka/handler.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { Expect } from "./bytes.ts";

let dir: TempDir;
let broker: Broker;
let handler: KafkaHandler;

function open(): void {
  broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  handler = new KafkaHandler(broker, { advertisedHost: "127.0.0.1", advertisedPort: 19092 });
}

beforeEach(() => {
  dir = tempDir("kafka-idempotence");
  open();
});

afterEach(async () => {
  await broker.close();
  dir[Symbol.dispose]();
});

async function respond(request: Expect): Promise<KafkaReader> {
  const outcome = await handler.handle(request.body());
  if (outcome.kind !== "respond") throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  const reader = new KafkaReader(outcome.bytes);
  reader.int32("size");
  reader.int32("correlation_id");
  return reader;
}

async function initProducerId(version = 1, transactionalId: string | null = null): Promise<number[]> {
  const request = new Expect().i16(22).i16(version).i32(7).str("test");
  if (version >= 2) request.uvarint(0).cstr(transactionalId);
  else request.str(transactionalId);
  request.i32(60_000);
  if (version >= 3) request.i64(-1).i16(-1);
  if (version >= 2) request.uvarint(0);
  const reader = await respond(request);
  if (version >= 2) reader.uvarint("header tags");
  const answer = [
    reader.int32("throttle"),
    reader.int16("error"),
    reader.int64("pid"),
    reader.int16("epoch"),
  ];
  if (version >= 2) reader.uvarint("tags");
  reader.expectEnd("InitProducerId response");
  return answer.slice(1);
}

function batch(producerId: number, epoch: number, baseSequence: number, values: string[]): Uint8Array {
  return encodeBatch(
    values.map((value) => ({ key: null, value: new TextEncoder().encode(value), timestamp: 1_000 })),
    { producerId, producerEpoch: epoch, baseSequence },
  );
}

/** Produce v3 of one batch to t/0: [error code, base offset]. */
async function produce(records: Uint8Array): Promise<[number, number]> {
  const request = new Expect().i16(0).i16(3).i32(7).str("test").str(null).i16(-1).i32(5000);
  request.i32(1).str("t").i32(1).i32(0).i32(records.length).raw(records);
  const reader = await respond(request);
  reader.int32("topics");
  reader.string("name");
  reader.int32("partitions");
  reader.int32("index");
  const answer: [number, number] = [reader.int16("error"), reader.int64("base_offset")];
  reader.int64("log_append_time");
  reader.int32("throttle");
  reader.expectEnd("Produce response");
  return answer;
}

function endOffset(): number {
  return broker.partition("t", 0).log.nextOffset;
}

describe("InitProducerId", () => {
  test("v0-4 hand out a new id with epoch 0 each time; a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED", async () => {
    const ids: number[] = [];
    for (const version of [0, 1, 2, 3, 4]) {
      const [error, producerId, epoch] = await initProducerId(version);
      expect([error, epoch]).toEqual([KAFKA_ERROR.NONE, 0]);
      ids.push(producerId!);
    }
    expect(new Set(ids).size).toBe(5);
    expect(await initProducerId(1, "tx")).toEqual([
      KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
      -1,
      -1,
    ]);
    expect(await initProducerId(4, "tx")).toEqual([
      KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
      -1,
      -1,
    ]);
  });

  test("ids are never reused across restarts: a restart starts after the reserved block", async () => {
    const [, first] = await initProducerId();
    await broker.close();
    open();
    const [, second] = await initProducerId();
    expect(second).toBeGreaterThanOrEqual(first! + 1);
    expect(second).toBe(PRODUCER_ID_BLOCK_SIZE);
  });
});

describe("Produce with a producer id", () => {
  beforeEach(() => {
    broker.createTopic("t");
  });

  test("a resent batch is answered with its original offset and appended once", async () => {
    const [, pid] = await initProducerId();
    expect(await produce(batch(pid!, 0, 0, ["a", "b"]))).toEqual([0, 0]);
    expect(await produce(batch(pid!, 0, 2, ["c"]))).toEqual([0, 2]);
    expect(await produce(batch(pid!, 0, 0, ["a", "b"]))).toEqual([0, 0]);
    expect(await produce(batch(pid!, 0, 2, ["c"]))).toEqual([0, 2]);
    expect(endOffset()).toBe(3);
    // Another producer's batch with the same sequences is not a duplicate.
    const [, other] = await initProducerId();
    expect(await produce(batch(other!, 0, 0, ["a", "b"]))).toEqual([0, 3]);
    expect(endOffset()).toBe(5);
  });

  test("only the last 5 batches are remembered: an older resend is out of order", async () => {
    const [, pid] = await initProducerId();
    for (let i = 0; i < 6; i++) expect(await produce(batch(pid!, 0, i, [`v${i}`]))).toEqual([0, i]);
    expect(await produce(batch(pid!, 0, 1, ["v1"]))).toEqual([0, 1]);
    expect((await produce(batch(pid!, 0, 0, ["v0"])))[0]).toBe(KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect(endOffset()).toBe(6);
  });

  test("a gap is OUT_OF_ORDER_SEQUENCE_NUMBER and appends nothing", async () => {
    const [, pid] = await initProducerId();
    await produce(batch(pid!, 0, 0, ["a"]));
    expect(await produce(batch(pid!, 0, 2, ["c"]))).toEqual([KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER, -1]);
    // A batch that overlaps the last one without being it is a gap too.
    expect((await produce(batch(pid!, 0, 0, ["a", "b"])))[0]).toBe(KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect(endOffset()).toBe(1);
    expect(await produce(batch(pid!, 0, 1, ["b"]))).toEqual([0, 1]);
  });

  test("an older epoch is INVALID_PRODUCER_EPOCH; a newer one must start at sequence 0", async () => {
    const [, pid] = await initProducerId();
    await produce(batch(pid!, 1, 0, ["a"]));
    expect(await produce(batch(pid!, 0, 1, ["b"]))).toEqual([KAFKA_ERROR.INVALID_PRODUCER_EPOCH, -1]);
    expect(await produce(batch(pid!, 2, 5, ["b"]))).toEqual([KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER, -1]);
    expect(await produce(batch(pid!, 2, 0, ["b"]))).toEqual([0, 1]);
    expect(endOffset()).toBe(2);
  });

  test("an unknown producer is accepted at any sequence (Kafka since KIP-360)", async () => {
    expect(await produce(batch(424_242, 0, 17, ["a"]))).toEqual([0, 0]);
    expect(await produce(batch(424_242, 0, 18, ["b"]))).toEqual([0, 1]);
  });

  test("sequences wrap at Int32 max", async () => {
    const max = 2_147_483_647;
    expect(await produce(batch(7, 0, max - 1, ["a", "b"]))).toEqual([0, 0]);
    expect(await produce(batch(7, 0, 0, ["c", "d"]))).toEqual([0, 2]);
    expect(await produce(batch(7, 0, max, ["e", "f"]))).toEqual([
      KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER,
      -1,
    ]);
    expect(await produce(batch(7, 0, 2, ["e"]))).toEqual([0, 4]);
    // A batch that wraps inside itself: sequences max..1.
    expect(await produce(batch(8, 0, max, ["x", "y", "z"]))).toEqual([0, 5]);
    expect(await produce(batch(8, 0, max, ["x", "y", "z"]))).toEqual([0, 5]);
    expect(await produce(batch(8, 0, 2, ["w"]))).toEqual([0, 8]);
  });

  test(`a partition remembers at most ${PRODUCER_IDS_PER_PARTITION_MAX} producer ids: a new one beyond forgets the producer whose last append is oldest`, async () => {
    expect(await produce(batch(1, 0, 0, ["a"]))).toEqual([0, 0]);
    expect(await produce(batch(2, 0, 0, ["b"]))).toEqual([0, 1]);
    for (let id = 3; id <= PRODUCER_IDS_PER_PARTITION_MAX; id++)
      expect((await produce(batch(id, 0, 0, ["x"])))[0]).toBe(0);
    // Producer 1 appends again: now producer 2's last append is the oldest.
    expect((await produce(batch(1, 0, 1, ["a2"])))[0]).toBe(0);
    const partition = broker.partition("t", 0);
    expect(partition.producers.producerCount).toBe(PRODUCER_IDS_PER_PARTITION_MAX);
    expect((await produce(batch(PRODUCER_IDS_PER_PARTITION_MAX + 1, 0, 0, ["new"])))[0]).toBe(0);
    expect(partition.producers.producerCount).toBe(PRODUCER_IDS_PER_PARTITION_MAX);
    // Producer 1 is still known (a gap is refused); producer 2 was forgotten (any sequence goes).
    expect((await produce(batch(1, 0, 5, ["gap"])))[0]).toBe(KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect((await produce(batch(2, 0, 5, ["gap"])))[0]).toBe(0);
  });

  test("a producer idle for PRODUCER_ID_EXPIRATION_MS is forgotten at the next retention run: any sequence is then accepted", async () => {
    const [, pid] = await initProducerId();
    await produce(batch(pid!, 0, 0, ["a"]));
    const partition = broker.partition("t", 0);
    partition.applyRetention(Date.now() + PRODUCER_ID_EXPIRATION_MS - 60_000);
    expect((await produce(batch(pid!, 0, 5, ["gap"])))[0]).toBe(KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER);
    partition.applyRetention(Date.now() + PRODUCER_ID_EXPIRATION_MS + 60_000);
    expect(partition.producers.producerCount).toBe(0);
    expect(await produce(batch(pid!, 0, 5, ["after"]))).toEqual([0, 1]);
  });

  for (const how of ["a clean restart (snapshot)", "a restart without a snapshot (replay)"]) {
    test(`the state survives ${how}`, async () => {
      const [, pid] = await initProducerId();
      await produce(batch(pid!, 0, 0, ["a", "b"]));
      await produce(batch(pid!, 0, 2, ["c"]));
      await broker.close();
      const snapshot = path.join(dir.path, "t-0", PRODUCER_STATE_FILE);
      expect(await Bun.file(snapshot).exists()).toBe(true);
      if (how.includes("replay")) rmSync(snapshot);
      open();
      expect(broker.partition("t", 0).producerStateReplayedFrom).toBe(how.includes("replay") ? 0 : 3);
      expect(await produce(batch(pid!, 0, 0, ["a", "b"]))).toEqual([0, 0]);
      expect(await produce(batch(pid!, 0, 2, ["c"]))).toEqual([0, 2]);
      expect((await produce(batch(pid!, 0, 4, ["e"])))[0]).toBe(KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER);
      expect(await produce(batch(pid!, 0, 3, ["d"]))).toEqual([0, 3]);
      expect(endOffset()).toBe(4);
    });
  }
});
