/**
 * The promises docs/protocol.md makes about a connection, checked through raw sockets against a
 * broker process: every request read before a protocol violation is answered before the error frame
 * and a clean close (FIN, not RST); requests apply in arrival order (fixed sequences and a seeded
 * random one against a reference model); a request must arrive whole in bounded time; unfinished
 * requests share a bounded memory budget; connection slots are limited per client address; a
 * connection opened during shutdown gets an error frame, not a TCP refusal.
 *
 * The random sequence prints its seed in the test name; BOOBLIK_SEED=<n> replays it.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import net from "node:net";
import { BooblikClient } from "../../src/client/client.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import {
  decodeFetchResponse,
  decodeListOffsetsResponse,
  decodeMetadataResponse,
  decodeProduceResponse,
  encodeCreateTopicRequest,
  encodeDeleteTopicRequest,
  encodeFetchRequest,
  encodeListOffsetsRequest,
  encodeMetadataRequest,
  encodeProduceRequest,
  encodeStatsRequest,
} from "../../src/protocol/messages.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { memoryOf, startBroker } from "../helpers/broker-process.ts";
import { Random, testSeed } from "../helpers/random.ts";
import {
  frame,
  type ParsedResponse,
  rawConnect,
  responses,
  waitForResponses,
} from "../helpers/raw-socket.ts";
import { valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(60_000);

const SEED = testSeed();
const text = new TextDecoder();

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A node:net client that records how the broker closed: FIN ("end") or RST ("ECONNRESET"). */
interface Observed {
  bytes: Uint8Array;
  sawEnd: boolean;
  error: string | undefined;
}

function sendAndObserve(
  port: number,
  writes: Uint8Array[],
  options: { localAddress?: string } = {},
): { socket: net.Socket; done: Promise<Observed>; received: () => Uint8Array } {
  const chunks: Buffer[] = [];
  let sawEnd = false;
  let error: string | undefined;
  const socket = net.connect({ host: "127.0.0.1", port, allowHalfOpen: true, ...options });
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("end", () => {
    sawEnd = true;
    socket.end();
  });
  socket.on("error", (e: NodeJS.ErrnoException) => {
    error = e.code ?? e.message;
  });
  socket.on("connect", () => {
    for (const bytes of writes) socket.write(bytes);
  });
  const received = () => new Uint8Array(Buffer.concat(chunks));
  const done = new Promise<Observed>((resolve) =>
    socket.on("close", () => resolve({ bytes: received(), sawEnd, error })),
  );
  return { socket, done, received };
}

async function stats(port: number): Promise<Record<string, number>> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0 });
  try {
    return (await client.stats()) as unknown as Record<string, number>;
  } finally {
    client.close();
  }
}

describe("lost answers", () => {
  for (const [what, bad] of [
    ["a 4 GiB frame size", new Uint8Array([0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4])],
    ["a frame size below a header", new Uint8Array([0, 0, 0, 3, 1, 2, 3])],
  ] as const) {
    test(`pipelined PRODUCEs before ${what} in the same write are all answered, then the error frame, then FIN`, async () => {
      using dir = tempDir();
      await using broker = await startBroker(dir.path, ["--durability", "append"]);
      const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await admin.createTopic("t");
      for (let round = 0; round < 3; round++) {
        const produces = Array.from({ length: 10 }, (_, i) =>
          frame((w) =>
            encodeProduceRequest(w, i + 1, {
              topic: "t",
              partition: 0,
              records: batchOfValues([`r${round}-${i}`]),
            }),
          ),
        );
        // Everything in one write, with more garbage behind the bad size that the broker must discard.
        const observed = await sendAndObserve(broker.port, [concat([...produces, bad, new Uint8Array(4096)])])
          .done;
        const said = responses(observed.bytes);
        expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
          ...produces.map((_, i) => [i + 1, 0]),
          [0, WIRE_ERROR_CODES.INVALID_REQUEST],
        ]);
        expect(said.slice(0, 10).map((r) => decodeProduceResponse(r.body).firstOffset)).toEqual(
          produces.map((_, i) => round * 10 + i),
        );
        expect(said[10]!.message).toMatch(/frame size \d+/);
        expect(observed.error).toBeUndefined(); // no ECONNRESET
        expect(observed.sawEnd).toBe(true); // the broker's FIN after its last byte
      }
      expect((await admin.listOffsets("t", 0)).nextOffset).toBe(30);
      admin.close();
    });
  }

  test("a client that keeps sending after the violation still reads every answer and a FIN", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-frame-size", "64KiB"]);
    const metadata = frame((w) => encodeMetadataRequest(w, 7, { topics: [] }));
    const tooLarge = new Uint8Array([0, 1, 0, 1]); // 64 KiB + 1
    const observed = await sendAndObserve(broker.port, [
      concat([metadata, tooLarge]),
      ...Array.from({ length: 64 }, () => new Uint8Array(16 * 1024)),
    ]).done;
    const said = responses(observed.bytes);
    expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [7, 0],
      [0, WIRE_ERROR_CODES.INVALID_REQUEST],
    ]);
    expect(observed.sawEnd).toBe(true);
    expect(observed.error).toBeUndefined();
  });
});

describe("order of application", () => {
  test("CREATE, PRODUCE, DELETE, CREATE, LIST_OFFSETS, PRODUCE, METADATA back to back all apply in order", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    for (let round = 0; round < 5; round++) {
      const t = `t${round}`;
      const socket = await rawConnect(broker.port);
      socket.write(
        concat([
          frame((w) => encodeCreateTopicRequest(w, 1, { name: t, configJson: "{}" })),
          frame((w) =>
            encodeProduceRequest(w, 2, { topic: t, partition: 0, records: batchOfValues(["a", "b"]) }),
          ),
          frame((w) => encodeDeleteTopicRequest(w, 3, { name: t })),
          frame((w) => encodeCreateTopicRequest(w, 4, { name: t, configJson: "{}" })),
          frame((w) => encodeListOffsetsRequest(w, 5, { topic: t, partition: 0 })),
          frame((w) => encodeProduceRequest(w, 6, { topic: t, partition: 0, records: batchOfValues(["c"]) })),
          frame((w) => encodeMetadataRequest(w, 7, { topics: [t] })),
        ]),
      );
      const said = await waitForResponses(socket, 7);
      expect(said.map((r) => [r.correlationId, r.errorCode, r.message])).toEqual(
        [1, 2, 3, 4, 5, 6, 7].map((id) => [id, 0, undefined]),
      );
      expect(decodeProduceResponse(said[1]!.body).firstOffset).toBe(0);
      expect(decodeListOffsetsResponse(said[4]!.body).nextOffset).toBe(0);
      expect(decodeProduceResponse(said[5]!.body).firstOffset).toBe(0);
      expect(decodeMetadataResponse(said[6]!.body).topics[0]!.partitions[0]!.nextOffset).toBe(1);
      socket.close();
    }
  });

  test("on a force topic, LIST_OFFSETS and FETCH pipelined behind a PRODUCE see its records", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await admin.createTopic("f", { durability: "force" });
    admin.close();
    const socket = await rawConnect(broker.port);
    let expected = 0;
    for (let round = 0; round < 10; round++) {
      const before = socket.received().length;
      socket.write(
        concat([
          frame((w) =>
            encodeProduceRequest(w, 1, { topic: "f", partition: 0, records: batchOfValues(["x", "y", "z"]) }),
          ),
          frame((w) => encodeListOffsetsRequest(w, 2, { topic: "f", partition: 0 })),
          frame((w) =>
            encodeFetchRequest(w, 3, {
              topic: "f",
              partition: 0,
              offset: expected,
              maxBytes: 1 << 20,
              maxWaitMs: 0,
            }),
          ),
        ]),
      );
      const said = await waitForResponses(socket, 3, before);
      expect(said.map((r) => r.errorCode)).toEqual([0, 0, 0]);
      expect(decodeProduceResponse(said[0]!.body).firstOffset).toBe(expected);
      expect(decodeListOffsetsResponse(said[1]!.body).nextOffset).toBe(expected + 3);
      const fetched = decodeFetchResponse(said[2]!.body);
      expect(fetched.nextOffset).toBe(expected + 3);
      expect(valuesOf(fetched.records).map((p) => text.decode(p))).toEqual(["x", "y", "z"]);
      expected += 3;
    }
    socket.close();
  });

  test(`random pipelined sequences match a reference model of in-order application (seed ${SEED})`, async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const random = new Random(SEED);
    const names = ["a", "b"];
    // The reference: for each existing topic, its records.
    const model = new Map<string, string[]>();
    // Which creation of each topic this connection fetched from: the first FETCH of a topic deleted
    // and created again since is refused once (server.ts `fetch`).
    const created = new Map<string, number>();
    const fetchedFrom = new Map<string, number>();
    let creations = 0;
    const socket = await rawConnect(broker.port);
    for (let round = 0; round < 6; round++) {
      const requests: Uint8Array[] = [];
      const expectations: ((r: ParsedResponse) => void)[] = [];
      for (let i = 0; i < 40; i++) {
        const id = requests.length + 1;
        const name = names[random.int(0, names.length - 1)]!;
        const records = model.get(name);
        const kind = random.int(0, 9);
        if (kind === 0) {
          const durability = ["force", "append", "interval"][random.int(0, 2)]!;
          requests.push(
            frame((w) =>
              encodeCreateTopicRequest(w, id, { name, configJson: JSON.stringify({ durability }) }),
            ),
          );
          if (records === undefined) {
            model.set(name, []);
            created.set(name, ++creations);
            expectations.push((r) => expect(r.errorCode).toBe(0));
          } else {
            expectations.push((r) => expect(r.errorCode).toBe(WIRE_ERROR_CODES.TOPIC_EXISTS));
          }
        } else if (kind === 1) {
          requests.push(frame((w) => encodeDeleteTopicRequest(w, id, { name })));
          model.delete(name);
          const existed = records !== undefined;
          expectations.push((r) =>
            expect(r.errorCode).toBe(existed ? 0 : WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION),
          );
        } else if (kind <= 5) {
          const payloads = Array.from({ length: random.int(1, 4) }, (_, k) => `${round}.${id}.${k}`);
          requests.push(
            frame((w) =>
              encodeProduceRequest(w, id, { topic: name, partition: 0, records: batchOfValues(payloads) }),
            ),
          );
          if (records === undefined) {
            expectations.push((r) => expect(r.errorCode).toBe(WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION));
          } else {
            const first = records.length;
            records.push(...payloads);
            expectations.push((r) => {
              expect(r.errorCode).toBe(0);
              expect(decodeProduceResponse(r.body).firstOffset).toBe(first);
            });
          }
        } else if (kind <= 7) {
          requests.push(frame((w) => encodeListOffsetsRequest(w, id, { topic: name, partition: 0 })));
          const next = records?.length;
          expectations.push((r) => {
            if (next === undefined) expect(r.errorCode).toBe(WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
            else expect([r.errorCode, decodeListOffsetsResponse(r.body).nextOffset]).toEqual([0, next]);
          });
        } else if (kind === 8) {
          requests.push(
            frame((w) =>
              encodeFetchRequest(w, id, {
                topic: name,
                partition: 0,
                offset: 0,
                maxBytes: 1 << 20,
                maxWaitMs: 0,
              }),
            ),
          );
          const seen = records === undefined ? undefined : [...records];
          const replaced =
            records !== undefined && fetchedFrom.has(name) && fetchedFrom.get(name) !== created.get(name);
          if (records !== undefined) fetchedFrom.set(name, created.get(name)!);
          expectations.push((r) => {
            if (seen === undefined) expect(r.errorCode).toBe(WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
            else if (replaced) {
              expect(r.errorCode).toBe(WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
              expect(r.message).toContain("deleted and created again");
            } else {
              expect(r.errorCode).toBe(0);
              expect(valuesOf(decodeFetchResponse(r.body).records).map((p) => text.decode(p))).toEqual(seen);
            }
          });
        } else {
          requests.push(frame((w) => encodeMetadataRequest(w, id, { topics: [name] })));
          const next = records?.length;
          expectations.push((r) => {
            if (next === undefined) expect(r.errorCode).toBe(WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
            else {
              expect(r.errorCode).toBe(0);
              expect(decodeMetadataResponse(r.body).topics[0]!.partitions[0]!.nextOffset).toBe(next);
            }
          });
        }
      }
      const before = socket.received().length;
      socket.write(concat(requests));
      const said = await waitForResponses(socket, requests.length, before);
      expect(said.length).toBe(requests.length);
      said.forEach((response, i) => {
        expect(response.correlationId).toBe(i + 1);
        expectations[i]!(response);
      });
    }
    socket.close();
  });
});

describe("slow senders and memory", () => {
  test("a request that trickles in is cut off after the request timeout; earlier requests are answered", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--request-timeout", "500ms"]);
    const startMs = performance.now();
    const metadata = frame((w) => encodeMetadataRequest(w, 5, { topics: [] }));
    // A header that claims 1 MiB (allowed: 500 ms + 1 s at the minimum rate), then a byte at a time.
    const header = new Uint8Array([0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
    const client = sendAndObserve(broker.port, [concat([metadata, header])]);
    const drip = setInterval(() => client.socket.write(new Uint8Array([1])), 50);
    const observed = await client.done;
    clearInterval(drip);
    const elapsedMs = performance.now() - startMs;
    const said = responses(observed.bytes);
    expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [5, 0],
      [0, WIRE_ERROR_CODES.INVALID_REQUEST],
    ]);
    expect(said[1]!.message).toContain("not received whole within 1500 ms");
    expect(observed.sawEnd).toBe(true);
    expect(elapsedMs).toBeGreaterThanOrEqual(1400);
    expect((await stats(broker.port)).requestTimeouts).toBe(1);
  });

  test("many stalled large frames hold no more than the inbound budget; a well-behaved client keeps working", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, [
      "--max-frame-size",
      "8MiB",
      "--max-inbound-memory",
      "8MiB",
    ]);
    const good = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await good.createTopic("ok", { durability: "append" });
    const before = await memoryOf(broker.process.pid);
    const frameBytes = 8 * 1024 * 1024;
    const stalled = [];
    for (let i = 0; i < 16; i++) {
      const socket = await rawConnect(broker.port);
      // A PRODUCE header claiming 8 MiB − 4 bytes after the size, then all of it but the last byte.
      const bytes = new Uint8Array(frameBytes - 1);
      new DataView(bytes.buffer).setUint32(0, frameBytes - 4);
      new DataView(bytes.buffer).setUint16(4, 4);
      socket.write(bytes);
      stalled.push(socket);
    }
    // Two frames fit the budget (one 8 MiB frame needs 8 MiB − 128 KiB of it); the others wait.
    await waitUntil(
      async () => (await stats(broker.port)).inboundBudgetWaiting === 15,
      "15 waiting connections",
    );
    for (let i = 0; i < 20; i++) {
      const ack = await good.produce("ok", 0, batchOfValues([`still fine ${i}`]));
      expect(ack.firstOffset).toBe(i);
    }
    const figures = await stats(broker.port);
    expect(figures.inboundBudgetUsedBytes).toBeLessThanOrEqual(8 * 1024 * 1024 + 16 * 256 * 1024);
    const after = await memoryOf(broker.process.pid);
    // Without the budget the 16 frames would hold 128 MiB (16 × 8 MiB); with it, about 8 MiB.
    expect(after.rssBytes - before.rssBytes).toBeLessThan(48 * 1024 * 1024);
    for (const socket of stalled) socket.close();
    await waitUntil(
      async () => (await stats(broker.port)).inboundBudgetUsedBytes === 0,
      "the budget given back",
    );
    good.close();
  });
});

describe("connection slots", () => {
  test("one client address cannot take every slot", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-connections-per-address", "2"]);
    const metadata = frame((w) => encodeMetadataRequest(w, 1, { topics: [] }));
    const first = await rawConnect(broker.port);
    const second = await rawConnect(broker.port);
    first.write(metadata);
    second.write(metadata);
    await first.waitForBytes(10);
    await second.waitForBytes(10);
    const third = await sendAndObserve(broker.port, [metadata]).done;
    const said = responses(third.bytes);
    expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [0, WIRE_ERROR_CODES.TOO_MANY_CONNECTIONS],
    ]);
    expect(said[0]!.message).toContain("from 127.0.0.1 (the limit is 2 per address)");
    expect(third.sawEnd).toBe(true);
    // Another address of this machine still gets in.
    const other = sendAndObserve(broker.port, [metadata], { localAddress: "127.0.0.2" });
    await waitUntil(() => responses(other.received()).length === 1, "an answer on 127.0.0.2");
    expect(responses(other.received())[0]!.errorCode).toBe(0);
    other.socket.destroy();
    // A slot given back is free again.
    first.close();
    await waitUntil(async () => (await stats(broker.port)).connectionsActive === 2, "the slot released");
    const fourth = await rawConnect(broker.port);
    fourth.write(metadata);
    await waitUntil(() => responses(fourth.received()).length === 1, "an answer");
    expect(responses(fourth.received())[0]!.errorCode).toBe(0);
    fourth.close();
    second.close();
  });

  test("a connection opened while the broker drains gets BROKER_SHUTTING_DOWN, not a TCP refusal", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--durability", "append"]);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await admin.createTopic("big");
    for (let i = 0; i < 8; i++)
      await admin.produce("big", 0, batchOfValues([new Uint8Array(1024 * 1024 - 128)]));
    admin.close();
    // A client that asks for 8 MiB and does not read: its response keeps the broker draining.
    const stuck = await rawConnect(broker.port, { readPaused: true });
    stuck.write(
      frame((w) =>
        encodeFetchRequest(w, 1, { topic: "big", partition: 0, offset: 0, maxBytes: 8 << 20, maxWaitMs: 0 }),
      ),
    );
    await waitUntil(async () => (await stats(broker.port)).fetchRequests === 1, "the fetch being answered");
    broker.process.kill("SIGTERM");
    await broker.lines.waitFor((line) => line.includes("SIGTERM: stopping"), "the stopping line");
    const late = await sendAndObserve(broker.port, [frame((w) => encodeStatsRequest(w, 1))]).done;
    const said = responses(late.bytes);
    expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [0, WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN],
    ]);
    expect(said[0]!.message).toContain("shutting down");
    expect(late.error).toBeUndefined();
    stuck.close();
    expect(await broker.process.exited).toBe(0);
  });
});

describe("half-close", () => {
  test("a client that half-closes after pipelined requests held back by ordering gets every answer, then FIN", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await admin.createTopic("h", { durability: "force" });
    admin.close();
    for (let round = 0; round < 10; round++) {
      const chunks: Buffer[] = [];
      const socket = net.connect({ host: "127.0.0.1", port: broker.port, allowHalfOpen: true });
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
      socket.on("end", () => socket.end());
      socket.on("connect", () => {
        socket.write(
          concat([
            frame((w) =>
              encodeProduceRequest(w, 1, { topic: "h", partition: 0, records: batchOfValues(["x"]) }),
            ),
            frame((w) => encodeListOffsetsRequest(w, 2, { topic: "h", partition: 0 })),
            frame((w) => encodeMetadataRequest(w, 3, { topics: ["h"] })),
          ]),
        );
        socket.end(); // half-close: no more requests, answers still wanted
      });
      await closed;
      const said = responses(new Uint8Array(Buffer.concat(chunks)));
      expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
        [1, 0],
        [2, 0],
        [3, 0],
      ]);
      expect(decodeListOffsetsResponse(said[1]!.body).nextOffset).toBe(round + 1);
    }
  });
});
