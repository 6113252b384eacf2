/**
 * Hostile and unlucky clients against a real broker process: impossible frame sizes, unknown request
 * types, unsupported versions, truncated and malformed payloads, random bytes, a seeded fuzzer of
 * random and mutated frames while a well-behaved client keeps working, a client that sends and never
 * reads (memory stays bounded), a half-closed client, idle connections, the connection limit.
 *
 * The fuzzer prints its seed in the test name; BOOBLIK_SEED=<n> replays it.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import net from "node:net";
import { BooblikClient } from "../../src/client/client.ts";
import type { ByteWriter } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API, RESPONSE_HEADER_BYTES } from "../../src/protocol/frame.ts";
import {
  beginRequest,
  encodeFetchRequest,
  encodeMetadataRequest,
  encodeProduceRequest,
  endFrame,
  FETCH_RESPONSE_FIXED_BYTES,
} from "../../src/protocol/messages.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { memoryOf, startBroker } from "../helpers/broker-process.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { frame, rawConnect, repeated, responses } from "../helpers/raw-socket.ts";
import { readValues, valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

// These tests start processes and wait on disks; the 5 s default is too tight for a busy 2-core CI.
setDefaultTimeout(30_000);

const SEED = testSeed();
const ROUNDS = 150;

/** A request frame with a hand-written payload. */
function request(
  apiKey: number,
  correlationId: number,
  body: (writer: ByteWriter) => void,
  apiVersion?: number,
): Uint8Array {
  return frame((writer) => {
    const start = beginRequest(writer, apiKey, correlationId, apiVersion);
    body(writer);
    endFrame(writer, start);
  });
}

describe("malformed requests", () => {
  test("unknown types, unsupported versions and malformed payloads get error responses; the connection stays usable", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const socket = await rawConnect(broker.port);
    socket.write(request(99, 1, () => undefined));
    socket.write(request(API.METADATA, 2, (w) => w.u32(0), 7));
    // A PRODUCE whose records field claims more bytes than the frame holds.
    socket.write(request(API.PRODUCE, 3, (w) => w.string("t").u32(0).u32(1000)));
    // A METADATA with a topic name that is not UTF-8.
    socket.write(request(API.METADATA, 4, (w) => w.u32(1).u16(2).u8(0xff).u8(0xfe)));
    // Trailing garbage after a valid METADATA request.
    socket.write(request(API.METADATA, 5, (w) => w.u32(0).u8(1)));
    socket.write(frame((w) => encodeMetadataRequest(w, 6, { topics: [] })));
    const all = await socket.waitForBytes(1);
    let parsed = responses(all);
    while (parsed.length < 6) parsed = responses(await socket.waitForBytes(socket.received().length + 1));
    expect(parsed.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [1, WIRE_ERROR_CODES.INVALID_REQUEST],
      [2, WIRE_ERROR_CODES.UNSUPPORTED_VERSION],
      [3, WIRE_ERROR_CODES.INVALID_REQUEST],
      [4, WIRE_ERROR_CODES.INVALID_REQUEST],
      [5, WIRE_ERROR_CODES.INVALID_REQUEST],
      [6, 0],
    ]);
    expect(parsed[0]!.message).toContain("unknown request type 99");
    expect(parsed[1]!.message).toContain("METADATA version 7 is not supported");
    expect(parsed[2]!.message).toContain("needs 1000 bytes, 0 left in the frame");
    expect(parsed[3]!.message).toContain("not valid UTF-8");
    expect(socket.isClosed()).toBe(false);
    socket.close();
  });

  test("an error names the byte in its own frame, also for a frame behind another in the same chunk", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const socket = await rawConnect(broker.port);
    // One write, so the bad frame sits behind a good one in whatever chunk carries it: the broker
    // reads frames as ranges of the chunk, and positions must still count from each frame's start.
    const good = frame((w) => encodeMetadataRequest(w, 1, { topics: [] }));
    // METADATA: size, apiKey, apiVersion and correlationId (12 bytes), the topic count (4), the
    // name's length (2): the name starts at byte 18 of its frame.
    const bad = request(API.METADATA, 2, (w) => w.u32(1).u16(2).u8(0xff).u8(0xfe));
    const short = request(API.PRODUCE, 3, (w) => w.string("t").u32(0).u32(1000));
    socket.write(new Uint8Array([...good, ...bad, ...short]));
    let parsed = responses(await socket.waitForBytes(1));
    while (parsed.length < 3) parsed = responses(await socket.waitForBytes(socket.received().length + 1));
    expect(parsed.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [1, 0],
      [2, WIRE_ERROR_CODES.INVALID_REQUEST],
      [3, WIRE_ERROR_CODES.INVALID_REQUEST],
    ]);
    expect(parsed[1]!.message).toContain("at byte 18 is not valid UTF-8");
    // PRODUCE: the header (12), the topic "t" (2 + 1), the partition (4), the records length (4): the
    // records would start at byte 23.
    expect(parsed[2]!.message).toContain("records at byte 23 needs 1000 bytes, 0 left in the frame");
    socket.close();
  });

  test("impossible frame sizes close that connection only; the broker and other connections carry on", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-frame-size", "1MiB"]);
    const good = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      await good.createTopic("ok");
      for (const bytes of [
        new Uint8Array([0xff, 0xff, 0xff, 0xff]), // 4 GiB frame
        new Uint8Array([0x00, 0x10, 0x00, 0x01]), // 1 MiB + 1 byte: just over the limit
        new Uint8Array([0, 0, 0, 3, 1, 2, 3]), // shorter than a request header
      ]) {
        const hostile = await rawConnect(broker.port);
        hostile.write(bytes);
        await hostile.closed;
        const said = responses(hostile.received());
        expect(said[0]).toMatchObject({ correlationId: 0, errorCode: WIRE_ERROR_CODES.INVALID_REQUEST });
        expect(said[0]!.message).toMatch(
          /frame size \d+ (exceeds the maximum|is smaller than a request header)/,
        );
      }
      // A frame whose size is fine but whose bytes stop coming: the broker waits without harm.
      const truncated = await rawConnect(broker.port);
      truncated.write(frame((w) => encodeMetadataRequest(w, 1, { topics: [] })).subarray(0, 9));
      expect((await good.produce("ok", 0, batchOfValues(["still fine"]))).firstOffset).toBe(0);
      expect(truncated.isClosed()).toBe(false);
      truncated.close();
    } finally {
      good.close();
    }
  });

  test(`seeded fuzzer: random and mutated frames never crash the broker; a well-behaved client keeps working (seed ${SEED})`, async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-frame-size", "256KiB"]);
    const random = new Random(SEED);
    const good = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await good.createTopic("fuzz", { segmentBytes: 8192, partitions: 2 });
    const templates = [
      frame((w) => encodeMetadataRequest(w, 1, { topics: ["fuzz"] })),
      frame((w) =>
        encodeProduceRequest(w, 2, {
          topic: "fuzz",
          partition: 0,
          records: batchOfValues(["a", "bb", "ccc"]),
        }),
      ),
      frame((w) =>
        encodeFetchRequest(w, 3, { topic: "fuzz", partition: 1, offset: 0, maxBytes: 1000, maxWaitMs: 5 }),
      ),
      request(API.CREATE_TOPIC, 4, (w) => w.string("f").string("{}")),
      request(API.LIST_OFFSETS, 5, (w) => w.string("fuzz").u32(1)),
    ];
    let acknowledged = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const hostile = await rawConnect(broker.port);
      for (let message = 0; message < 8; message++) {
        let bytes: Uint8Array;
        const kind = random.next();
        if (kind < 0.3) {
          bytes = random.bytes(random.int(1, 300));
        } else {
          bytes = templates[random.int(0, templates.length - 1)]!.slice();
          const mutations = random.int(1, 4);
          for (let m = 0; m < mutations; m++) {
            const at = random.int(0, bytes.length - 1);
            bytes[at] = random.next() < 0.5 ? random.int(0, 255) : bytes[at]! ^ (1 << random.int(0, 7));
          }
          if (random.next() < 0.2) bytes = bytes.subarray(0, random.int(1, bytes.length));
        }
        hostile.write(bytes);
      }
      if (random.next() < 0.5) hostile.close();
      else hostile.end();
      // Meanwhile the good client produces and reads back.
      const ack = await good.produce("fuzz", 1, batchOfValues([`good ${round}`]));
      expect(ack.firstOffset).toBeGreaterThanOrEqual(acknowledged);
      acknowledged = ack.firstOffset + 1;
    }
    const values = (await readValues(good, "fuzz", 1, 0, acknowledged, 1_000_000)).map((b) =>
      new TextDecoder().decode(b!),
    );
    expect(values.filter((value) => value.startsWith("good ")).length).toBe(ROUNDS);
    expect(broker.process.exitCode).toBeNull();
    const stats = await good.stats();
    expect(Number(stats.requests)).toBeGreaterThan(40);
    good.close();
    // The broker still stops cleanly after all that.
    expect(await broker.stop("SIGTERM")).toBe(0);
  }, 60_000);
});

describe("unlucky clients", () => {
  test("a client that sends and never reads cannot grow broker memory without bound", async () => {
    using dir = tempDir();
    // The copying fetch path holds each response in memory, which is the path backpressure must bound.
    await using broker = await startBroker(dir.path, ["--fetch-path", "copy"]);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      // Batches of 16 values of 64 KiB: above the default 1 MiB batch limit, so raise it.
      await admin.createTopic("big", { durability: "append", maxRecordBytes: 2 * 1024 * 1024 });
      const payload = new Uint8Array(64 * 1024).fill(42);
      for (let i = 0; i < 64; i++)
        await admin.produce("big", 0, batchOfValues(Array.from({ length: 16 }, () => payload))); // 64 MiB
      const before = await memoryOf(broker.process.pid);
      const slow = await rawConnect(broker.port, { readPaused: true });
      // 4,000 fetches of 1 MiB each: 4 GiB of responses if the broker kept reading and queueing.
      const request = frame((w) =>
        encodeFetchRequest(w, 7, {
          topic: "big",
          partition: 0,
          offset: 0,
          maxBytes: 1024 * 1024,
          maxWaitMs: 0,
        }),
      );
      slow.write(repeated(request, 4000));
      // Wait until the broker stopped reading that connection: its queue is full and it is paused.
      let stats = await admin.stats();
      await waitUntil(
        async () => {
          stats = await admin.stats();
          return stats.connectionsPaused === 1;
        },
        "the broker to pause the connection that does not read",
        20_000,
      );
      const after = await memoryOf(broker.process.pid);
      // It answered only as many fetches as fit under its outbound limit, not thousands.
      expect(Number(stats.fetchRequests)).toBeLessThan(200);
      expect(after.rssBytes - before.rssBytes).toBeLessThan(128 * 1024 * 1024);
      // Other clients are served meanwhile.
      expect((await admin.listOffsets("big", 0)).nextOffset).toBe(1024);
      slow.close();
    } finally {
      admin.close();
    }
  });

  test("a slow reader of a large zero-copy fetch gets every byte (sendfile EAGAIN, then drain)", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await admin.createTopic("large", { durability: "append" });
      const values = Array.from({ length: 600 }, (_, i) =>
        `record ${i} `.padEnd(50_000, String.fromCharCode(97 + (i % 26))),
      );
      for (let i = 0; i < values.length; i += 20)
        await admin.produce("large", 0, batchOfValues(values.slice(i, i + 20)));
      // One FETCH of ~30 MiB, far more than the socket buffers hold, to a client that is not reading.
      const slow = await rawConnect(broker.port, { readPaused: true });
      slow.write(
        frame((w) =>
          encodeFetchRequest(w, 9, {
            topic: "large",
            partition: 0,
            offset: 0,
            maxBytes: 64 * 1024 * 1024,
            maxWaitMs: 0,
          }),
        ),
      );
      // The broker hit EAGAIN: sendfile stopped part way (it counts what it sent so far).
      let stats = await admin.stats();
      await waitUntil(
        async () => {
          stats = await admin.stats();
          return Number(stats.sendfileBytes) > 0;
        },
        "the broker to start the zero-copy send",
        20_000,
      );
      const sentWhilePaused = Number(stats.sendfileBytes);
      expect(sentWhilePaused).toBeLessThan(30 * 1024 * 1024);
      // Other clients are served meanwhile; then the slow one reads, and drain resumes the send.
      expect((await admin.listOffsets("large", 0)).nextOffset).toBe(600);
      slow.socket.resume();
      // Each stored entry: an 8-byte frame around the batch of 20 values as produced.
      let entriesBytes = 0;
      for (let i = 0; i < values.length; i += 20)
        entriesBytes += 8 + batchOfValues(values.slice(i, i + 20)).length;
      const expectedBytes = RESPONSE_HEADER_BYTES + FETCH_RESPONSE_FIXED_BYTES + entriesBytes;
      const bytes = await slow.waitForBytes(expectedBytes);
      expect(bytes.length).toBe(expectedBytes);
      const records = valuesOf(bytes.subarray(RESPONSE_HEADER_BYTES + FETCH_RESPONSE_FIXED_BYTES));
      expect(records.length).toBe(600);
      records.forEach((record, i) => {
        expect(new TextDecoder().decode(record)).toBe(values[i]!);
      });
      expect(Number((await admin.stats()).sendfileBytes)).toBeGreaterThan(sentWhilePaused);
      slow.close();
    } finally {
      admin.close();
    }
  });

  test("a client that half-closes after its request still gets the response", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    // node:net with allowHalfOpen keeps reading after end() (shutdown(SHUT_WR)); Bun.connect's end()
    // closes the reading side too, so it cannot stand in for such a client.
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: "127.0.0.1", port: broker.port, allowHalfOpen: true });
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("connect", () => {
      socket.write(frame((w) => encodeMetadataRequest(w, 42, { topics: [] })));
      socket.end();
    });
    await closed;
    const said = responses(new Uint8Array(Buffer.concat(chunks)));
    expect(said.map(({ correlationId, errorCode }) => ({ correlationId, errorCode }))).toEqual([
      { correlationId: 42, errorCode: 0 },
    ]);
  });

  test("idle connections are closed after the configured time; busy ones are not", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--idle-timeout", "300ms"]);
    const idle = await rawConnect(broker.port);
    // The idle connection's clock starts when it connects, so the time is taken here: taken after
    // the createTopic below (which can take 100 ms on a loaded machine) it made a correct close
    // look early (225 ms against the 250 ms bound, seen in a full run).
    const startMs = performance.now();
    const closedAfter = idle.closed.then(() => performance.now() - startMs);
    const busy = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await busy.createTopic("idle");
    // The busy client keeps talking past the idle timeout.
    await waitUntil(
      async () => {
        if (idle.isClosed()) return true;
        await busy.listOffsets("idle", 0);
        return false;
      },
      "the idle connection to be closed",
      20_000,
      20,
    );
    expect(await closedAfter).toBeGreaterThanOrEqual(250);
    expect((await busy.listOffsets("idle", 0)).nextOffset).toBe(0);
    expect(busy.connectionsOpened).toBe(1);
    busy.close();
  });

  test("an idle connection is closed with a FIN (end-of-stream), not a reset", async () => {
    // Before 2026-12-03 the idle sweep reset the connection: clients logged ECONNRESET for a close
    // that owed them nothing.
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--idle-timeout", "200ms"]);
    const socket = net.connect(broker.port, "127.0.0.1");
    const how = await new Promise<string>((resolve) => {
      socket.once("end", () => resolve("end"));
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
    });
    socket.destroy();
    expect(how).toBe("end");
  });

  test("connections beyond the limit are refused with TOO_MANY_CONNECTIONS", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-connections", "2"]);
    const first = await rawConnect(broker.port);
    const second = await rawConnect(broker.port);
    first.write(frame((w) => encodeMetadataRequest(w, 1, { topics: [] })));
    second.write(frame((w) => encodeMetadataRequest(w, 1, { topics: [] })));
    await first.waitForBytes(RESPONSE_HEADER_BYTES);
    await second.waitForBytes(RESPONSE_HEADER_BYTES);
    const third = await rawConnect(broker.port);
    await third.closed;
    expect(responses(third.received())[0]).toMatchObject({
      correlationId: 0,
      errorCode: WIRE_ERROR_CODES.TOO_MANY_CONNECTIONS,
    });
    // The client library sees the refusal as a typed, retriable error: on its first request, or on
    // connecting if the refusal arrives first. Either way the refusal is what it reports.
    const refusal = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 }).then(
      async (client) => {
        try {
          return await client.metadata().then(
            () => "the first request succeeded",
            (error) => error,
          );
        } finally {
          client.close();
        }
      },
      (error) => error,
    );
    expect(refusal).toMatchObject({
      code: "TOO_MANY_CONNECTIONS",
      retriable: true,
    });
    first.close();
    second.close();
  });
});
