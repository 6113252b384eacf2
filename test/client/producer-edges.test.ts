/**
 * Edge cases of the client library, each against a real broker process or a fake broker over a
 * real socket (for answers a real broker never gives, and for controlling when frames arrive):
 * - close() of a producer waits for sends that were still waiting for their topic's metadata;
 * - a record over the topic's maxRecordBytes is refused alone, not with its whole batch;
 * - records given while the topic's metadata is being applied keep their order;
 * - a corrupt FETCH answer fails that fetch only, not the requests pipelined behind it;
 * - OFFSET_OUT_OF_RANGE names the offset the request asked for (not one parsed from the message);
 * - a client closed while it reconnects closes the connection that opens afterwards.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Socket } from "bun";
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer, headersTextOf, keyTextOf, textOf } from "../../src/client/consumer.ts";
import { Producer } from "../../src/client/producer.ts";
import { CorruptRecordError, OffsetOutOfRangeError, RecordTooLargeError } from "../../src/domain/errors.ts";
import { ByteReader, ByteWriter } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import {
  API,
  peekFrameSize,
  REQUEST_HEADER_BYTES,
  readRequestHeader,
  SIZE_BYTES,
} from "../../src/protocol/frame.ts";
import {
  decodeProduceRequest,
  encodeErrorResponse,
  encodeFetchResponseHeader,
  encodeListOffsetsResponse,
  encodeMetadataResponse,
  encodeProduceResponse,
} from "../../src/protocol/messages.ts";
import { encodeInitProducerIdResponse } from "../../src/protocol/producer-messages.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { storedEntries } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

async function consumeAll(client: BooblikClient, topic: string, partition = 0): Promise<string[]> {
  const values: string[] = [];
  for await (const record of new Consumer(client, { topic, partition, stopAtEnd: true })) {
    values.push(textOf(record));
  }
  return values;
}

// --- A fake broker -----------------------------------------------------------------------------------

interface FakeRequest {
  apiKey: number;
  correlationId: number;
  /** The request's payload (after its header). */
  reader: ByteReader;
}

interface SocketState {
  index: number;
  inbound: Uint8Array;
  pending: FakeRequest[];
}

interface FakeBroker {
  readonly port: number;
  opened: number;
  /** Indexes of the connections that closed (either side). */
  closed: Set<number>;
  stop(): void;
}

/**
 * A TCP server on 127.0.0.1:0 that cuts requests into frames and hands each connection's unanswered
 * ones to `handle`, which answers (and removes) what it wants to. `onOpen` sees each new connection
 * with its index (0 for the first).
 */
function startFakeBroker(
  handle: (socket: Socket<SocketState>, state: SocketState) => void,
  onOpen: (socket: Socket<SocketState>, index: number) => void = () => undefined,
): FakeBroker {
  const fake = { opened: 0, closed: new Set<number>() };
  const listener = Bun.listen<SocketState>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      binaryType: "uint8array",
      open(socket) {
        socket.data = { index: fake.opened++, inbound: new Uint8Array(0), pending: [] };
        onOpen(socket, socket.data.index);
      },
      data(socket, chunk) {
        const state = socket.data;
        const joined = new Uint8Array(state.inbound.length + chunk.length);
        joined.set(state.inbound);
        joined.set(chunk, state.inbound.length);
        let at = 0;
        for (;;) {
          const size = peekFrameSize(joined, at, joined.length);
          if (size < 0 || at + SIZE_BYTES + size > joined.length) break;
          const frame = joined.slice(at, at + SIZE_BYTES + size);
          const header = readRequestHeader(frame, 0, { apiKey: 0, apiVersion: 0, correlationId: 0 });
          state.pending.push({
            apiKey: header.apiKey,
            correlationId: header.correlationId,
            reader: new ByteReader(frame, REQUEST_HEADER_BYTES, frame.length),
          });
          at += SIZE_BYTES + size;
        }
        state.inbound = joined.slice(at);
        // An idempotent Producer asks for a producer id before its first batch: answered here, so
        // that `handle` sees what the tests are about.
        const ids = state.pending.filter((request) => request.apiKey === API.INIT_PRODUCER_ID);
        if (ids.length > 0) {
          state.pending = state.pending.filter((request) => request.apiKey !== API.INIT_PRODUCER_ID);
          reply(
            socket,
            ids.map((request) =>
              frameOf((writer) =>
                encodeInitProducerIdResponse(writer, request.correlationId, {
                  producerId: 1,
                  producerEpoch: 0,
                }),
              ),
            ),
          );
        }
        handle(socket, state);
      },
      close(socket) {
        fake.closed.add(socket.data.index);
      },
    },
  });
  return Object.assign(fake, { port: listener.port, stop: () => listener.stop(true) });
}

/** Writes frames with one write, so that they arrive together. */
function reply(socket: Socket<SocketState>, frames: Uint8Array[]): void {
  const total = frames.reduce((sum, frame) => sum + frame.length, 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const frame of frames) {
    bytes.set(frame, at);
    at += frame.length;
  }
  socket.write(bytes);
}

function frameOf(encode: (writer: ByteWriter) => void, trailing?: Uint8Array): Uint8Array {
  const writer = new ByteWriter();
  encode(writer);
  const head = writer.written();
  if (trailing === undefined) return head.slice();
  const frame = new Uint8Array(head.length + trailing.length);
  frame.set(head);
  frame.set(trailing, head.length);
  return frame;
}

// --- Producer -----------------------------------------------------------------------------------------

describe("producer", () => {
  test("close() waits for sends still waiting for their topic's metadata; all of them are appended", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("fresh", { durability: "force" });
      const producer = new Producer(client);
      let settled = 0;
      // This producer has never seen "fresh": every send first waits for its METADATA answer.
      const sends = Array.from({ length: 10 }, (_, i) =>
        producer.send("fresh", `record ${i}`).finally(() => {
          settled++;
        }),
      );
      for (const send of sends) send.catch(() => undefined); // failures are asserted below

      await producer.close();
      // A microtask for the `finally` callbacks of sends that settled before close() resolved.
      await Promise.resolve();
      expect(settled).toBe(10);
      const results = await Promise.all(sends);
      expect(results.map((result) => result.offset).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 10 }, (_, i) => i),
      );
      expect((await client.listOffsets("fresh", 0)).nextOffset).toBe(10);
      expect(await consumeAll(client, "fresh")).toEqual(Array.from({ length: 10 }, (_, i) => `record ${i}`));
      await expect(producer.send("fresh", "after close")).rejects.toMatchObject({ code: "CLOSED" });
    } finally {
      client.close();
    }
  });

  test("a record over the topic's maxRecordBytes is refused alone; the rest of its batch goes", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      // maxRecordBytes bounds a whole batch: 61 header bytes, then about 8 per record besides its value.
      await client.createTopic("small", { maxRecordBytes: 100, segmentBytes: 4096 });
      // A long linger: all records below would share one batch.
      const producer = new Producer(client, { lingerMs: 200 });
      const before = producer.send("small", "ok 1");
      const tooLarge = producer.send("small", "x".repeat(60));
      const after = producer.send("small", ["ok 2", "ok 3"]);
      for (const send of [before, after]) send.catch(() => undefined); // failures are asserted below
      const refused = await tooLarge.catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RecordTooLargeError);
      // Its batch would be 129 bytes: the record's Length varint takes 2 bytes at this size.
      const recordBytes = batchOfValues(["x".repeat(60)]).length;
      expect(refused).toMatchObject({ code: "RECORD_TOO_LARGE", recordBytes, maxBytes: 100 });
      expect((refused as Error).message).toContain('maxRecordBytes (largest batch) of topic "small"');
      expect((await before).offset).toBe(0);
      expect((await after).offset).toBe(1);
      // flush() reports the refusal too: nothing given to the producer disappears silently.
      await expect(producer.flush()).rejects.toMatchObject({ code: "RECORD_TOO_LARGE" });

      // write(): the refusal surfaces from close(); its neighbours are appended.
      producer.write("small", "ok 4");
      producer.write("small", "y".repeat(60));
      producer.write("small", "ok 5");
      await expect(producer.close()).rejects.toMatchObject({ code: "RECORD_TOO_LARGE" });
      expect(await consumeAll(client, "small")).toEqual(["ok 1", "ok 2", "ok 3", "ok 4", "ok 5"]);
    } finally {
      client.close();
    }
  });

  test("write() of records of every shape, back to back, keeps each record's own key, headers and time", async () => {
    // write() encodes into reused record objects and takes a header list of bytes as it is: a record
    // must never carry a field of the one before it.
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("shapes");
      const producer = new Producer(client);
      await producer.send("shapes", "known", { partition: 0 }); // the topic is known: the fast path
      const bytes = (text: string) => new TextEncoder().encode(text);
      const sharedHeaders = [{ key: "trace-id", value: bytes("t1") }];
      const written = [
        { key: "a", value: "with bytes headers", headers: sharedHeaders, timestamp: 1_000 },
        { value: "no headers, no key", timestamp: 2_000 },
        {
          key: "c",
          value: "object headers",
          headers: { "trace-id": "t3", ключ: "значение" },
          timestamp: 3_000,
        },
        { key: null, value: null, headers: [{ key: "z", value: null }], timestamp: 4_000 },
        { key: "e", value: "text headers", headers: [{ key: "trace-id", value: "t5" }], timestamp: 5_000 },
        { value: "empty headers", headers: [], timestamp: 6_000 },
      ];
      for (const record of written) producer.write("shapes", record, { partition: 0 });
      producer.write("shapes", "bare, key from options", { partition: 0, key: "opt" });
      sharedHeaders[0]!.value = bytes("changed after write"); // read at write(), not later
      await producer.close();
      const seen: unknown[] = [];
      for await (const record of new Consumer(client, { topic: "shapes", partition: 0, stopAtEnd: true })) {
        if (record.offset === 0) continue;
        seen.push([keyTextOf(record), record.value === null ? null : textOf(record), headersTextOf(record)]);
        if (record.offset <= written.length)
          expect(record.timestamp).toBe(written[record.offset - 1]!.timestamp);
      }
      expect(seen).toEqual([
        ["a", "with bytes headers", { "trace-id": "t1" }],
        [null, "no headers, no key", {}],
        ["c", "object headers", { "trace-id": "t3", ключ: "значение" }],
        [null, null, { z: null }],
        ["e", "text headers", { "trace-id": "t5" }],
        [null, "empty headers", {}],
        ["opt", "bare, key from options", {}],
      ]);
    } finally {
      client.close();
    }
  });

  test("records given while the topic's metadata is applied keep their order", async () => {
    const received: string[] = [];
    let metadataSeen = 0;
    const topicJson = JSON.stringify({ partitions: 1, segmentBytes: 1 << 20, maxRecordBytes: 1 << 16 });
    // Holds the first METADATA answer until a second METADATA request came, then answers both in one
    // write: the producer's answer and the application's are then handled in the same turn.
    const fake = startFakeBroker((socket, state) => {
      metadataSeen += state.pending.filter((request) => request.apiKey === API.METADATA).length;
      if (metadataSeen < 2 && state.pending.some((request) => request.apiKey === API.METADATA)) return;
      const frames = state.pending.map((request) => {
        if (request.apiKey === API.METADATA) {
          return frameOf((writer) =>
            encodeMetadataResponse(writer, request.correlationId, {
              brokerVersion: "fake",
              crc32cImplementation: "fake",
              topics: [
                {
                  name: "ordered",
                  configJson: topicJson,
                  timestampType: "CreateTime",
                  partitions: [{ partition: 0, logStartOffset: 0, nextOffset: 0 }],
                },
              ],
            }),
          );
        }
        const { records } = decodeProduceRequest(request.reader);
        const firstOffset = received.length;
        for (const value of valuesOfEntries(records, "bare")) received.push(new TextDecoder().decode(value!));
        return frameOf((writer) =>
          encodeProduceResponse(writer, request.correlationId, {
            firstOffset,
            recordCount: received.length - firstOffset,
            durability: "appended",
            logAppendTimeMs: -1,
          }),
        );
      });
      state.pending.length = 0;
      reply(socket, frames);
    });
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: fake.port });
    try {
      const producer = new Producer(client);
      producer.write("ordered", "first");
      // The application's own METADATA request; after its answer, it writes on every microtask
      // turn, so some writes run while the producer applies its own answer.
      await client.metadata(["ordered"]);
      for (let i = 0; i < 20; i++) {
        producer.write("ordered", `then ${i}`);
        await Promise.resolve();
      }
      await producer.close();
      expect(received).toEqual(["first", ...Array.from({ length: 20 }, (_, i) => `then ${i}`)]);
    } finally {
      client.close();
      fake.stop();
    }
  });
});

// --- Connection ---------------------------------------------------------------------------------------

describe("connection", () => {
  test("a FETCH answer with a bad CRC fails that fetch only: the pipelined PRODUCE succeeds once", async () => {
    // A FETCH from offset 1 answered with the damaged entry first (damage after a valid entry would
    // only end the answer there: issue 15).
    const corrupted = storedEntries(1, [["damaged"]]);
    corrupted[corrupted.length - 3]! ^= 0x20; // a value byte of the entry's record
    let produceRequests = 0;
    // The first connection answers only once both requests are in, in one write; later connections
    // (a reconnect would be the bug) answer at once.
    const fake = startFakeBroker((socket, state) => {
      produceRequests += state.pending.filter((request) => request.apiKey === API.PRODUCE).length;
      if (state.index === 0 && state.pending.length < 2) return;
      const frames = state.pending.map((request) =>
        request.apiKey === API.FETCH
          ? frameOf(
              (writer) =>
                encodeFetchResponseHeader(writer, request.correlationId, {
                  logStartOffset: 0,
                  nextOffset: 2,
                  recordsBytes: corrupted.length,
                }),
              corrupted,
            )
          : frameOf((writer) =>
              encodeProduceResponse(writer, request.correlationId, {
                firstOffset: 2,
                recordCount: 1,
                durability: "appended",
                logAppendTimeMs: -1,
              }),
            ),
      );
      state.pending.length = 0;
      reply(socket, frames);
    });
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: fake.port, backoffMs: 1 });
    try {
      const fetching = client.fetch("t", 0, 1).catch((error: unknown) => error);
      // At-least-once: a PRODUCE that failed with its connection would be sent again.
      const producing = client.produce("t", 0, batchOfValues(["new"]), true);
      expect(await producing).toMatchObject({ firstOffset: 2, recordCount: 1 });
      const failure = await fetching;
      expect(failure).toBeInstanceOf(CorruptRecordError);
      expect(failure).toMatchObject({ code: "CORRUPT_RECORD" });
      expect((failure as Error).message).toContain(
        "the first entry (containing offset 1) is damaged (crc-mismatch",
      );
      expect(produceRequests).toBe(1);
      expect(client.connectionsOpened).toBe(1);
    } finally {
      client.close();
      fake.stop();
    }
  });

  test("OFFSET_OUT_OF_RANGE names the offset the fetch asked for, whatever the message says", async () => {
    const fake = startFakeBroker((socket, state) => {
      const frames = state.pending.map((request) =>
        frameOf((writer) =>
          encodeErrorResponse(writer, request.correlationId, WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE, {
            retriable: false,
            message: "offset 7 is not here (a message for people, in any words)",
            logStartOffset: 3,
            nextOffset: 5,
          }),
        ),
      );
      state.pending.length = 0;
      reply(socket, frames);
    });
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: fake.port, retries: 0 });
    try {
      const error = await client.fetch("t", 0, 42).catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(OffsetOutOfRangeError);
      expect(error).toMatchObject({ offset: 42, logStartOffset: 3, nextOffset: 5 });
    } finally {
      client.close();
      fake.stop();
    }
  });

  test("close() during a reconnect closes the connection that opens afterwards", async () => {
    // Until told otherwise, connections are hung up at once; then LIST_OFFSETS is answered.
    let hangUp = true;
    const fake = startFakeBroker(
      (socket, state) => {
        const frames = state.pending.map((request) =>
          frameOf((writer) =>
            encodeListOffsetsResponse(writer, request.correlationId, {
              logStartOffset: 0,
              nextOffset: 0,
              timestampOffset: -1,
              offsetTimestampMs: -1,
            }),
          ),
        );
        state.pending.length = 0;
        reply(socket, frames);
      },
      (socket) => {
        if (hangUp) socket.end();
      },
    );
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: fake.port, retries: 0 });
    try {
      // Fails on a hung-up connection; after it, the client holds no live connection.
      await expect(client.listOffsets("t", 0)).rejects.toMatchObject({ code: "CONNECTION_ERROR" });
      hangUp = false;
      const opened = fake.opened;
      const request = client.listOffsets("t", 0); // starts connecting again
      client.close(); // while that connection is being opened
      expect(await request.catch((error: unknown) => error)).toMatchObject({ code: "CLOSED" });
      await waitUntil(() => fake.opened === opened + 1, "the new connection to be opened");
      await waitUntil(() => fake.closed.has(opened), "the new connection to be closed");
    } finally {
      client.close();
      fake.stop();
    }
  });
});

test("maxInFlightBatches above the 5 batches the broker remembers is refused with idempotence, allowed without; below 1 always refused", async () => {
  // With 8 in flight and their answers lost, the resends of the 3 oldest were refused as sequence
  // gaps though the broker had stored them: reported failed, stored once (a helper's stress run,
  // 2026-12-02). Kafka refuses max.in.flight.requests.per.connection > 5 with idempotence.
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    expect(() => new Producer(client, { maxInFlightBatches: 6 })).toThrow(
      "maxInFlightBatches 6 is above 5, the batches per partition the broker remembers of an idempotent producer",
    );
    expect(() => new Producer(client, { maxInFlightBatches: 0, idempotent: false })).toThrow(
      "maxInFlightBatches must be an integer ≥ 1, got 0",
    );
    await client.createTopic("m");
    const plain = new Producer(client, { maxInFlightBatches: 8, idempotent: false, lingerMs: 0 });
    expect((await plain.send("m", "a", { partition: 0 })).offset).toBe(0);
    await plain.close();
    const idempotent = new Producer(client, { maxInFlightBatches: 5, lingerMs: 0 });
    expect((await idempotent.send("m", "b", { partition: 0 })).offset).toBe(1);
    await idempotent.close();
  } finally {
    client.close();
  }
});
