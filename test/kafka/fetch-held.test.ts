/**
 * Fetch answers held for readers that do not read them: all of them together stay within
 * `--max-inbound-memory` (plus one batch), against a broker child process over real sockets, and
 * through the handler with a pool whose room a stalled reader has taken (kafka/fetch-buffers.ts).
 * Before, each answer was as large as its request asked (up to 64 MiB) whatever the others held:
 * 25 connections that asked for 64 MiB and never read held 1.5 GiB (a hostile-input helper's run).
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { FETCH_ANSWER_FREE_BYTES } from "../../src/domain/limits.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { FetchBufferPool } from "../../src/kafka/fetch-buffers.ts";
import { KafkaHandler } from "../../src/kafka/handler.ts";
import { encodeFetchRequest } from "../../src/protocol/messages.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { kafkaPortOf, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { frame, rawConnect } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "./bytes.ts";

setDefaultTimeout(60_000);

const MIB = 1024 * 1024;

/** Fetch v4 of partition 0 of `topic` from offset 0, asking for up to 64 MiB. */
function fetchRequest(topic: string, maxWaitMs: number, correlationId = 7): Expect {
  return new Expect()
    .i16(1)
    .i16(4)
    .i32(correlationId)
    .str("held")
    .i32(-1)
    .i32(maxWaitMs)
    .i32(1)
    .i32(64 * MIB)
    .i8(0)
    .i32(1)
    .str(topic)
    .i32(1)
    .i32(0)
    .i64(0)
    .i32(64 * MIB);
}

/** A connection that sends one request and reads nothing until `resume` (then the whole answer). */
async function stalledReader(port: number, request: Uint8Array) {
  const raw = await rawConnect(port, { readPaused: true });
  raw.write(request);
  return {
    /** The answer's size prefix plus 4: the whole frame's bytes. */
    async resume(): Promise<number> {
      raw.socket.resume();
      const head = await raw.waitForBytes(4);
      const frameBytes = new DataView(head.buffer, head.byteOffset, 4).getInt32(0) + 4;
      await raw.waitForBytes(frameBytes);
      raw.close();
      return frameBytes;
    },
  };
}

/** Topic `wide`: 128 batches of 64 records of 1,000 B (8 MiB). */
async function fillWide(client: BooblikClient): Promise<void> {
  await client.createTopic("wide");
  const value = "v".repeat(1000);
  for (let i = 0; i < 128; i++) await client.produce("wide", 0, batchOfValues(Array(64).fill(value)));
}

describe("Fetch answers held for readers", () => {
  test("answers to connections that do not read stay within --max-inbound-memory plus one batch, and are whole once read", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      ...["--kafka-port", "0", "--metrics-port", "0", "--durability", "append"],
      ...["--max-frame-size", "1MiB", "--max-inbound-memory", "1MiB"],
    ]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await fillWide(client);
    client.close();
    const port = await kafkaPortOf(broker);
    const metrics = async () =>
      await (await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)).text();
    const readers = await Promise.all(
      [0, 1, 2].map(() => stalledReader(port, fetchRequest("wide", 0).frame())),
    );
    await waitUntil(
      async () => metricValue(await metrics(), "booblik_kafka_requests_total") >= 3,
      "three Fetches answered",
    );
    const batchBytes = 64 * 1000 + 64 * 16 + 128;
    const limit = MIB + batchBytes;
    for (const reader of readers) {
      const answerBytes = await reader.resume();
      // Records were read: at least one batch, and no more than the limit (before: 8 MiB each).
      expect(answerBytes).toBeGreaterThan(batchBytes);
      expect(answerBytes).toBeLessThanOrEqual(limit);
    }
    expect(metricValue(await metrics(), "booblik_kafka_fetch_held_peak_bytes")).toBeLessThanOrEqual(limit);
    await waitUntil(
      async () => metricValue(await metrics(), "booblik_kafka_fetch_held_bytes") === 0,
      "every answer written",
    );
  });
});

describe("native FETCH on the copying path", () => {
  test("answers to connections that do not read stay within --max-inbound-memory plus one entry (--fetch-path copy)", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      ...["--kafka-port", "off", "--fetch-path", "copy", "--durability", "append"],
      ...["--max-frame-size", "1MiB", "--max-inbound-memory", "1MiB"],
    ]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await fillWide(client);
    const request = frame((writer) =>
      encodeFetchRequest(writer, 1, {
        topic: "wide",
        partition: 0,
        offset: 0,
        maxBytes: 64 * MIB,
        maxWaitMs: 0,
      }),
    );
    const readers = await Promise.all([0, 1, 2].map(() => stalledReader(broker.port, request)));
    const stats = async () => Number((await client.stats()).fetchRequests);
    await waitUntil(async () => (await stats()) >= 3, "three FETCHes answered");
    client.close();
    const entryBytes = 64 * 1000 + 64 * 16 + 128;
    for (const reader of readers) {
      const answerBytes = await reader.resume();
      // Records were read, and no more than the limit plus one entry (before: 8 MiB each).
      expect(answerBytes).toBeGreaterThan(entryBytes);
      expect(answerBytes).toBeLessThanOrEqual(MIB + entryBytes);
    }
  });
});

describe("native FETCH on the copying path, pipelined", () => {
  test("a connection that holds unread answers gets no more entries once the room is gone: 50 pipelined FETCHes stay within the limit plus one entry", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      ...["--kafka-port", "off", "--fetch-path", "copy", "--durability", "append"],
      ...["--max-frame-size", "1MiB", "--max-inbound-memory", "1MiB"],
    ]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      await fillWide(client);
      const stalled = await rawConnect(broker.port, { readPaused: true });
      const pipelined = new Uint8Array(50 * 64);
      let at = 0;
      for (let i = 0; i < 50; i++) {
        const request = frame((writer) =>
          encodeFetchRequest(writer, i + 1, {
            topic: "wide",
            partition: 0,
            offset: 0,
            maxBytes: 64 * MIB,
            maxWaitMs: 0,
          }),
        );
        pipelined.set(request, at);
        at += request.length;
      }
      stalled.write(pipelined.subarray(0, at));
      // Once the room is gone (the socket's own buffers full), later FETCHes add no entries.
      await waitUntil(
        async () => Number((await client.stats()).copiedFetchesHeldToFreeBytes) > 0,
        "a copying FETCH past the room",
      );
      await waitUntil(
        async () => Number((await client.stats()).fetchRequests) >= 50,
        "every FETCH answered",
        20_000,
      );
      const entryBytes = 64 * 1000 + 64 * 16 + 128;
      // Before, each pipelined FETCH got at least 256 KiB, so one connection held up to its 8 MiB
      // of queued responses.
      expect(Number((await client.stats()).heldResponseBytes)).toBeLessThanOrEqual(MIB + entryBytes);
      stalled.close();
    } finally {
      client.close();
    }
  });
});

describe("a Fetch round with no room", () => {
  let dir: TempDir;
  let broker: Broker;
  beforeEach(() => {
    dir = tempDir("fetch-held");
    broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  });
  afterEach(async () => {
    await broker.close();
    dir[Symbol.dispose]();
  });

  test("reads no more than FETCH_ANSWER_FREE_BYTES while held answers fill the limit, everything asked for once room is back; an answer is held until released", async () => {
    const pool = new FetchBufferPool(MIB);
    const handler = new KafkaHandler(broker, {
      advertisedHost: "127.0.0.1",
      advertisedPort: 9092,
      fetchBuffers: pool,
    });
    broker.createTopic("slow", { partitions: 1 });
    // 40 batches of 10 records of 1,000 B: about 400 KB.
    for (let batch = 0; batch < 40; batch++)
      await broker.produce(
        "slow",
        0,
        Array.from({ length: 10 }, (_, i) => ({
          key: null,
          value: new Uint8Array(1000),
          timestamp: batch * 10 + i,
        })),
      );
    /** The record bytes of partition 0 in a Fetch v4 answer. */
    const recordBytes = (answer: Uint8Array): number => {
      // size, correlation id, throttle, topics (1), name, partitions (1), partition, error, high
      // watermark, last stable offset, aborted transactions (-1 or 0), records size.
      const view = new DataView(answer.buffer, answer.byteOffset, answer.byteLength);
      const nameBytes = view.getInt16(16);
      const at = 18 + nameBytes + 4 + 4 + 2 + 8 + 8;
      const aborted = view.getInt32(at);
      return view.getInt32(at + 4 + Math.max(aborted, 0) * 12);
    };
    const batchBytes = 10 * 1000 + 10 * 16 + 128;
    // Stalled readers hold the whole room: this reader still gets the free allowance, not nothing
    // (getting nothing starved every consumer while they held it).
    pool.hold(MIB);
    const squeezed = await handler.handle(fetchRequest("slow", 0).body());
    if (squeezed.kind !== "respond") throw new Error(`expected an answer, got ${squeezed.kind}`);
    expect(recordBytes(squeezed.bytes)).toBeGreaterThan(FETCH_ANSWER_FREE_BYTES - batchBytes);
    expect(recordBytes(squeezed.bytes)).toBeLessThanOrEqual(FETCH_ANSWER_FREE_BYTES + batchBytes);
    expect(pool.roundsWithoutRoom).toBe(1);
    squeezed.release?.();
    pool.unhold(MIB);
    expect(pool.heldBytes).toBe(0);
    const served = await handler.handle(fetchRequest("slow", 0).body());
    if (served.kind !== "respond") throw new Error(`expected an answer, got ${served.kind}`);
    expect(recordBytes(served.bytes)).toBeGreaterThan(400_000);
    expect(pool.heldBytes).toBe(served.bytes.length);
    served.release?.();
    expect(pool.heldBytes).toBe(0);
  });

  test("a first batch larger than the allowance waits for room when the room is gone; a later partition's batch beyond max_bytes waits for the next Fetch", async () => {
    const pool = new FetchBufferPool(MIB);
    const handler = new KafkaHandler(broker, {
      advertisedHost: "127.0.0.1",
      advertisedPort: 9092,
      fetchBuffers: pool,
    });
    broker.createTopic("big", { partitions: 2 });
    // One batch of 300 records of 1,000 B (about 305 KB, above the 256 KiB allowance) per partition.
    for (const partition of [0, 1])
      await broker.produce(
        "big",
        partition,
        Array.from({ length: 300 }, (_, i) => ({ key: null, value: new Uint8Array(1000), timestamp: i })),
      );
    /** Fetch v4 of both partitions from 0: the record bytes of each. */
    const fetchBoth = async (maxBytes: number): Promise<number[]> => {
      const request = new Expect()
        .i16(1)
        .i16(4)
        .i32(7)
        .str("held")
        .i32(-1)
        .i32(0)
        .i32(1)
        .i32(maxBytes)
        .i8(0)
        .i32(1)
        .str("big")
        .i32(2);
      for (const partition of [0, 1])
        request
          .i32(partition)
          .i64(0)
          .i32(64 * MIB);
      const outcome = await handler.handle(request.body());
      if (outcome.kind !== "respond") throw new Error(`expected an answer, got ${outcome.kind}`);
      const reader = new KafkaReader(outcome.bytes);
      reader.int32("size");
      reader.int32("correlation id");
      reader.int32("throttle");
      expect([reader.int32("topics"), reader.string("name"), reader.int32("partitions")]).toEqual([
        1,
        "big",
        2,
      ]);
      const sizes: number[] = [];
      for (const _ of [0, 1]) {
        reader.int32("partition");
        reader.int16("error");
        reader.int64("high watermark");
        reader.int64("last stable offset");
        reader.int32("aborted transactions");
        const records = reader.nullableBytes("records");
        sizes.push(records?.length ?? 0);
      }
      outcome.release?.();
      return sizes;
    };
    // The room taken by others: not even the first batch (it is above the 256 KiB allowance).
    pool.hold(MIB);
    expect(await fetchBoth(64 * MIB)).toEqual([0, 0]);
    pool.unhold(MIB);
    // Room: the first partition's batch whole even beyond max_bytes; the second's does not fit what
    // is left, so it waits (it used to be sent whole too).
    const [first = 0, second] = await fetchBoth(1000);
    expect(first).toBeGreaterThan(FETCH_ANSWER_FREE_BYTES);
    expect(second).toBe(0);
    expect(await fetchBoth(64 * MIB)).toEqual([first, first]);
    expect(pool.heldBytes).toBe(0);
  });
});
