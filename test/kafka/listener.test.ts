/**
 * The Kafka listener's socket rules over raw TCP, in-process (a Broker and a KafkaListener with small
 * limits): answers in order for pipelined requests, frame sizes checked before buffering, the
 * connection limits, the idle and request timeouts, and the shared inbound budget released on close.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { releaseChunk } from "../../src/kafka/buffers.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaListener, type KafkaListenerOptions } from "../../src/kafka/listener.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { valuesOfEntries } from "../../src/record/entries.ts";
import { AdminRateLimiter, KAFKA_ADMIN_REQUESTS } from "../../src/server/admin-rate.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import { rawConnect } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "./bytes.ts";

let dir: TempDir;
let broker: Broker;
let listener: KafkaListener | undefined;
let budget: InboundBudget;
const logged: string[] = [];

beforeEach(() => {
  dir = tempDir("kafka-listener");
  broker = Broker.open({ dataDir: dir.path });
  budget = new InboundBudget(1 << 20);
  logged.length = 0;
});

afterEach(async () => {
  await listener?.stop();
  listener = undefined;
  await broker.close();
  dir[Symbol.dispose]();
});

function start(options: Partial<KafkaListenerOptions> = {}): number {
  listener = new KafkaListener(broker, {
    hostname: "127.0.0.1",
    port: 0,
    maxFrameBytes: 1 << 20,
    maxConnections: 16,
    maxConnectionsPerAddress: 16,
    idleTimeoutMs: 60_000,
    requestTimeoutMs: 30_000,
    inboundBudget: budget,
    log: (line) => logged.push(line),
    ...options,
  });
  return listener.listen().port;
}

/** A Produce v8 (acks=all unless `acks` says) of one batch holding `values`, to partition 0 of `topic`. */
function produce(topic: string, values: Uint8Array[], correlationId: number, acks = -1): Uint8Array {
  const batch = encodeBatch(values.map((value) => ({ key: null, value, timestamp: 1_700_000_000_000 })));
  const head = new Expect()
    .i16(0)
    .i16(8)
    .i32(correlationId)
    .str("t")
    .str(null)
    .i16(acks)
    .i32(30_000)
    .i32(1)
    .str(topic)
    .i32(1)
    .i32(0)
    .i32(batch.length)
    .body();
  // Expect.raw copies byte by byte (slow for 600 KiB): the batch is appended here instead.
  const frame = new Uint8Array(4 + head.length + batch.length);
  new DataView(frame.buffer).setInt32(0, head.length + batch.length);
  frame.set(head, 4);
  frame.set(batch, 4 + head.length);
  return frame;
}

/** [correlation id, error code, base offset] of each complete Produce v8 response in `bytes`. */
function produceAnswers(bytes: Uint8Array): [number, number, number][] {
  const answers: [number, number, number][] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + 4 <= bytes.length; ) {
    const size = view.getInt32(at);
    if (at + 4 + size > bytes.length) break;
    const reader = new KafkaReader(bytes, at + 4, at + 4 + size);
    const correlationId = reader.int32("correlation_id");
    reader.int32("topics");
    reader.string("name");
    reader.int32("partitions");
    reader.int32("index");
    const error = reader.int16("error");
    answers.push([correlationId, error, Number(reader.int64("base_offset"))]);
    at += 4 + size;
  }
  return answers;
}

const apiVersions = (correlationId: number) =>
  new Expect().i16(18).i16(0).i32(correlationId).str("t").frame();
const metadataAll = (correlationId: number) =>
  new Expect().i16(3).i16(1).i32(correlationId).str("t").i32(-1).frame();

/** Correlation ids of the complete response frames in `bytes`. */
function correlationIds(bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ids: number[] = [];
  for (let at = 0; at + 8 <= bytes.length; ) {
    const size = view.getInt32(at);
    if (at + 4 + size > bytes.length) break;
    ids.push(view.getInt32(at + 4));
    at += 4 + size;
  }
  return ids;
}

describe("ordering", () => {
  test("pipelined requests in one write are answered one at a time, in order", async () => {
    const port = start();
    broker.createTopic("p");
    const socket = await rawConnect(port);
    const burst: number[] = [];
    for (let id = 1; id <= 40; id++) burst.push(...(id % 2 === 0 ? metadataAll(id) : apiVersions(id)));
    // Byte by byte for the first request: frames split anywhere must still be whole requests.
    const bytes = Uint8Array.from(burst);
    for (let i = 0; i < 10; i++) socket.write(bytes.subarray(i, i + 1));
    socket.write(bytes.subarray(10));
    await waitUntil(() => correlationIds(socket.received()).length === 40, "40 answers");
    expect(correlationIds(socket.received())).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(listener!.counters.requests).toBe(40);
    socket.close();
  });
});

describe("a client that closes right after its requests", () => {
  test("the Produce requests it sent before its close are still stored, in order, acks=0 or not", async () => {
    const port = start();
    broker.createTopic("quiet");
    const socket = await rawConnect(port);
    const encoder = new TextEncoder();
    const burst: Uint8Array[] = [];
    // Ten with acks=0 (what Sarama's SyncProducer with NoResponse writes before its Close), one
    // with acks=all, and a Metadata between them, which is not answered any more.
    for (let i = 0; i < 10; i++) burst.push(produce("quiet", [encoder.encode(`record ${i}`)], i + 1, 0));
    burst.push(metadataAll(11));
    burst.push(produce("quiet", [encoder.encode("record 10")], 12));
    const bytes = new Uint8Array(burst.reduce((sum, frame) => sum + frame.length, 0));
    let at = 0;
    for (const frame of burst) {
      bytes.set(frame, at);
      at += frame.length;
    }
    socket.write(bytes);
    socket.end(); // FIN right after, as a client's close does
    // Before 2026-12-03 every request not yet started when the close arrived was dropped (the first
    // one or two were stored); Kafka stores them all.
    const stored = () => broker.describeTopic("quiet").partitions[0]!.nextOffset;
    await waitUntil(() => stored() === 11, "all 11 records stored");
    const values = valuesOfEntries(broker.read("quiet", 0, 0).records).map((value) =>
      new TextDecoder().decode(value!),
    );
    expect(values).toEqual(Array.from({ length: 11 }, (_, i) => `record ${i}`));
  });
});

describe("inbound buffers", () => {
  test("pipelined Produce requests of mixed sizes, arriving in odd pieces while earlier ones are answered, are stored whole and answered in order", async () => {
    // Requests from 10 bytes to 300 KiB in one stream: bytes keep arriving while a request is
    // answered, so the listener moves them between its two buffers (listener.ts header) many times.
    const port = start();
    broker.createTopic("m", { durability: "force" });
    // A slow handler: each request is read again a few event-loop turns later (bytes of the next
    // requests arrive meanwhile) and must be unchanged: views stay valid until answered.
    const handler = listener!.handler;
    const handle = handler.handle.bind(handler);
    let changedUnderHandler = 0;
    handler.handle = async (frame, clientAddress, user) => {
      const copy = frame.slice();
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
      if (!Buffer.from(frame).equals(copy)) changedUnderHandler++;
      return handle(frame, clientAddress, user);
    };
    const requests = 60;
    const values: Uint8Array[][] = [];
    const parts: Uint8Array[] = [];
    for (let id = 1; id <= requests; id++) {
      const sizeBytes = id % 5 === 0 ? 300 * 1024 : id % 3 === 0 ? 70 * 1024 + id : 10 + id;
      const recordValues = [0, 1].map((r) => {
        const value = new Uint8Array(sizeBytes);
        for (let i = 0; i < value.length; i += 65_536) crypto.getRandomValues(value.subarray(i, i + 65_536));
        value[0] = id;
        value[1] = r;
        return value;
      });
      values.push(recordValues);
      parts.push(produce("m", recordValues, id));
    }
    const stream = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    let at = 0;
    for (const part of parts) {
      stream.set(part, at);
      at += part.length;
    }
    const socket = await rawConnect(port);
    // Pieces of 1 B to ~192 KiB, cut anywhere (a frame's size field too).
    for (let from = 0, piece = 1; from < stream.length; piece = (piece * 7 + 13) % 196_613) {
      socket.write(stream.subarray(from, Math.min(stream.length, from + piece)));
      from += piece;
    }
    await waitUntil(() => produceAnswers(socket.received()).length === requests, `${requests} answers`);
    expect(changedUnderHandler).toBe(0);
    expect(produceAnswers(socket.received())).toEqual(
      Array.from({ length: requests }, (_, i) => [i + 1, 0, 2 * i] as [number, number, number]),
    );
    // Every record as it was sent: a byte moved under a request being answered would show here (or
    // as a CRC refusal above).
    const tail = broker.tail("m", 0, 0);
    for (let i = 0; i < requests * 2; i++) {
      const record = (await tail.next()).value!;
      expect(record.offset).toBe(i);
      expect(Buffer.from(record.value!).equals(Buffer.from(values[i >> 1]![i & 1]!))).toBe(true);
    }
    await tail.return(undefined);
    socket.close();
  });

  test("releaseChunk frees a socket chunk's own buffer, and leaves a view of a larger buffer alone", () => {
    const chunk = new Uint8Array(64 * 1024).fill(1);
    expect(releaseChunk(chunk)).toBe(true);
    expect(chunk.buffer.detached).toBe(true);
    expect(chunk.length).toBe(0);
    expect(releaseChunk(chunk)).toBe(false);

    const shared = new Uint8Array(1024).fill(2);
    const head = shared.subarray(0, 512);
    const tail = shared.subarray(512);
    expect(releaseChunk(head)).toBe(false);
    expect(releaseChunk(tail)).toBe(false);
    expect(shared.buffer.detached).toBe(false);
    expect(tail[0]).toBe(2);
  });
});

describe("hostile input", () => {
  test("a frame size above the maximum closes the connection before its body is read", async () => {
    const port = start({ maxFrameBytes: 1000 });
    const socket = await rawConnect(port);
    socket.write(new Expect().i32(1001).frame().subarray(4));
    await socket.closed;
    expect(logged).toEqual([
      "kafka: closing the connection from 127.0.0.1: request frame of 1001 bytes is larger than the maximum frame of 1000 bytes (--max-frame-size)",
    ]);
    expect(budget.usedBytes).toBe(0);
  });

  test("a frame too small for a request header, and an unknown API key, close the connection", async () => {
    const port = start();
    const small = await rawConnect(port);
    small.write(new Expect().i32(4).i32(0).body());
    await small.closed;
    const unknown = await rawConnect(port);
    unknown.write(new Expect().i16(77).i16(0).i32(1).str("t").frame());
    await unknown.closed;
    expect(logged[0]).toEndWith("request frame of 4 bytes cannot hold the 8-byte request header");
    expect(logged[1]).toContain("unknown API key 77 (version 0)");
    expect(listener!.counters.closedForRequest).toBe(1);
  });

  test("answers before a bad request still arrive, then the connection closes", async () => {
    const port = start();
    const socket = await rawConnect(port);
    socket.write(
      Uint8Array.from([...apiVersions(1), ...apiVersions(2), ...new Expect().i16(3).i16(99).i32(3).frame()]),
    );
    await socket.closed;
    expect(correlationIds(socket.received())).toEqual([1, 2]);
    expect(logged).toEqual([
      "kafka: closing the connection from 127.0.0.1: METADATA (API key 3) version 99 is not supported: served in versions 0-8",
    ]);
  });

  test("a large frame reserves from the shared inbound budget and gives it back when the connection closes", async () => {
    const port = start({ maxFrameBytes: 4 << 20 });
    budget = listener!.options.inboundBudget as InboundBudget;
    const socket = await rawConnect(port);
    // A 1 MiB frame of which only the start arrives: beyond the 128 KiB free allowance, its size is reserved.
    socket.write(
      new Expect()
        .i32(1 << 20)
        .i16(18)
        .i16(0)
        .i32(1)
        .body(),
    );
    await waitUntil(() => budget.usedBytes > 0 || budget.waitingCount > 0, "the reservation");
    expect(budget.usedBytes).toBe((1 << 20) + 4 - 128 * 1024);
    socket.close();
    await waitUntil(() => budget.usedBytes === 0, "the budget released");
  });

  test("a frame the budget cannot hold yet pauses its connection; it resumes once another one closes", async () => {
    budget = new InboundBudget(300 * 1024);
    const port = start({ maxFrameBytes: 1 << 20 });
    const first = await rawConnect(port);
    first.write(
      new Expect()
        .i32(400 * 1024)
        .i16(18)
        .i16(0)
        .i32(1)
        .body(),
    );
    // 400 KiB + 4 minus the free 128 KiB fit the 300 KiB budget; the second frame's 72 KiB + 4 do not.
    await waitUntil(() => budget.usedBytes === 400 * 1024 + 4 - 128 * 1024, "the first reservation");
    const second = await rawConnect(port);
    const body = new Expect().i16(18).i16(0).i32(9).str("t").body();
    const padded = new Uint8Array(200 * 1024);
    padded.set(body);
    // ApiVersions v0 with 200 KiB of trailing bytes is malformed, but it must first arrive whole.
    second.write(Uint8Array.from([...new Expect().i32(padded.length).body(), ...padded]));
    await waitUntil(() => budget.waitingCount === 1, "the second connection waiting for the budget");
    first.close();
    await second.closed;
    expect(logged.at(-1)).toContain("ApiVersions request has 204789 unexpected bytes after its last field");
  });
});

describe("limits and timeouts", () => {
  test("topic creates and deletes take from the admin rate per address: beyond the burst, POLICY_VIOLATION names the wait", async () => {
    const port = start({ adminRate: new AdminRateLimiter(1, undefined, undefined, KAFKA_ADMIN_REQUESTS) }); // 1 a second after a burst of 10
    const socket = await rawConnect(port);
    const request = new Expect().i16(19).i16(1).i32(5).str("t").i32(12);
    for (let i = 0; i < 12; i++) request.str(`rate-${i}`).i32(1).i16(1).i32(0).i32(0);
    socket.write(request.i32(5000).i8(0).frame());
    await waitUntil(() => correlationIds(socket.received()).length === 1, "the CreateTopics answer");
    const reader = new KafkaReader(socket.received(), 8);
    const results: [string, number, string | null][] = [];
    for (let count = reader.int32("topics"), i = 0; i < count; i++) {
      results.push([reader.string("name"), reader.int16("error"), reader.nullableString("message")]);
    }
    expect(results.slice(0, 10).map((r) => r[1])).toEqual(Array(10).fill(0));
    expect(results.slice(10).map((r) => [r[0], r[1]])).toEqual([
      ["rate-10", 44],
      ["rate-11", 44],
    ]);
    expect(results[10]![2]).toStartWith(
      "too many admin requests (CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs, AlterConfigs, DeleteRecords, CreateAcls, DeleteAcls, Metadata auto-creating a topic) from 127.0.0.1: the limit is 1 a second after a burst of 10",
    );
    expect(broker.listTopics().length).toBe(10);
    socket.close();
  });

  test("connections beyond --max-connections are closed at once and logged", async () => {
    const port = start({ maxConnections: 1 });
    const first = await rawConnect(port);
    first.write(apiVersions(1));
    await waitUntil(() => correlationIds(first.received()).length === 1, "an answer");
    const second = await rawConnect(port);
    await second.closed;
    expect(logged).toEqual([
      "kafka: closing the connection from 127.0.0.1: refused: too many Kafka connections (the limit is 1, --max-connections)",
    ]);
    expect(listener!.counters.connectionsRefused).toBe(1);
    first.close();
  });

  test("an idle connection is closed after the idle timeout; a request that stops arriving after the request timeout", async () => {
    const port = start({ idleTimeoutMs: 200, requestTimeoutMs: 300 });
    const idle = await rawConnect(port);
    idle.write(apiVersions(1));
    await idle.closed;
    expect(correlationIds(idle.received())).toEqual([1]);
    const partial = await rawConnect(port);
    partial.write(apiVersions(2).subarray(0, 10));
    await partial.closed;
    expect(logged).toEqual([
      "kafka: closing the connection from 127.0.0.1: idle for 200 ms (--idle-timeout)",
      expect.stringMatching(/a request did not arrive whole within 300 ms \(10 of 15 bytes\)$/),
    ]);
  });

  test("a request that waited for the budget longer than the request timeout is read whole, not closed as overdue", async () => {
    budget = new InboundBudget(300 * 1024);
    const port = start({ requestTimeoutMs: 300 });
    // The first connection announces a 400 KiB frame and stops: it holds 272 KiB of the budget
    // until the sweep closes it as overdue (300 ms + 400 KiB at 1 MiB/s).
    const first = await rawConnect(port);
    first.write(
      new Expect()
        .i32(400 * 1024)
        .i16(18)
        .i16(0)
        .i32(1)
        .body(),
    );
    await waitUntil(() => budget.usedBytes === 400 * 1024 + 4 - 128 * 1024, "the first reservation");
    // The second sends a whole 200 KiB frame, which waits for the budget (its 72 KiB do not fit)
    // longer than its own allowance (300 ms + 200 KiB at 1 MiB/s): that time is the broker's.
    const second = await rawConnect(port);
    const body = new Expect().i16(18).i16(0).i32(9).str("t").body();
    const padded = new Uint8Array(200 * 1024);
    padded.set(body);
    second.write(Uint8Array.from([...new Expect().i32(padded.length).body(), ...padded]));
    await waitUntil(() => budget.waitingCount === 1, "the second connection waiting for the budget");
    await first.closed;
    await second.closed;
    // The second frame was read whole (and refused for what it says), not closed while unread.
    expect(logged).toEqual([
      expect.stringMatching(/a request did not arrive whole within \d+ ms \(12 of 409604 bytes\)$/),
      expect.stringContaining("ApiVersions request has 204789 unexpected bytes after its last field"),
    ]);
  });
});
