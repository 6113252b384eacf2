/**
 * The promises of docs/protocol.md, checked byte by byte through a raw socket against a real broker
 * process: every topic name the doc allows works (and survives a restart), error messages on the wire
 * never show the server's data directory, an empty PRODUCE batch gets a code the PRODUCE section
 * lists, a long poll ended by a delete or a shutdown gets what the doc says, INVALID_CONFIG names the
 * key and its real range, a record limit the frame cannot carry is refused, a FETCH ends at a
 * segment's end on both fetch paths, and the statements about u64 ≥ 2^53, error order, FETCH
 * maxBytes, METADATA answers and the default connection limit hold.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { ByteReader, type ByteWriter } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API, RESPONSE_HEADER_BYTES, readResponseHeader } from "../../src/protocol/frame.ts";
import {
  beginRequest,
  decodeErrorBody,
  decodeFetchResponse,
  decodeListOffsetsResponse,
  decodeMetadataResponse,
  decodeProduceResponse,
  decodeStatsResponse,
  encodeCreateTopicRequest,
  encodeDeleteTopicRequest,
  encodeFetchRequest,
  encodeListOffsetsRequest,
  encodeMetadataRequest,
  encodeProduceRequest,
  endFrame,
  type FetchRequest,
} from "../../src/protocol/messages.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { frame, type RawSocket, rawConnect } from "../helpers/raw-socket.ts";
import { valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

interface Response {
  correlationId: number;
  errorCode: number;
  /** The error body when errorCode ≠ 0. */
  retriable: boolean;
  message: string;
  /** OFFSET_OUT_OF_RANGE only: the bounds its error body carries. */
  logStartOffset?: number | undefined;
  nextOffset?: number | undefined;
  /** The payload after the response header (a view), for the API's decoder. */
  reader: ByteReader;
}

/**
 * A raw connection that sends one request at a time and reads exactly one response frame for it:
 * every byte the test looks at is a byte the broker sent.
 */
class Session {
  private consumed = 0;
  private nextCorrelationId = 1;

  private constructor(readonly socket: RawSocket) {}

  static async open(port: number): Promise<Session> {
    return new Session(await rawConnect(port));
  }

  /** Sends a request built by `build(writer, correlationId)` and returns the response to it. */
  async call(build: (writer: ByteWriter, correlationId: number) => void): Promise<Response> {
    const correlationId = this.nextCorrelationId++;
    this.socket.write(frame((writer) => build(writer, correlationId)));
    return this.read(correlationId);
  }

  /** Sends a request without waiting; `read` gets its response later. */
  send(build: (writer: ByteWriter, correlationId: number) => void): number {
    const correlationId = this.nextCorrelationId++;
    this.socket.write(frame((writer) => build(writer, correlationId)));
    return correlationId;
  }

  async read(correlationId: number): Promise<Response> {
    let bytes = await this.socket.waitForBytes(this.consumed + 4);
    const size = new DataView(bytes.buffer, bytes.byteOffset + this.consumed).getUint32(0, false);
    const end = this.consumed + 4 + size;
    bytes = await this.socket.waitForBytes(end);
    const header = readResponseHeader(bytes, this.consumed, { correlationId: 0, errorCode: 0 });
    const reader = new ByteReader(bytes, this.consumed + RESPONSE_HEADER_BYTES, end);
    this.consumed = end;
    expect(header.correlationId).toBe(correlationId);
    if (header.errorCode === 0) return { ...header, retriable: false, message: "", reader };
    const body = decodeErrorBody(reader, header.errorCode);
    return { ...header, ...body, reader };
  }

  createTopic(name: string, config: Record<string, unknown> = {}): Promise<Response> {
    return this.call((w, id) =>
      encodeCreateTopicRequest(w, id, { name, configJson: JSON.stringify(config) }),
    );
  }

  produce(topic: string, partition: number, records: Uint8Array): Promise<Response> {
    return this.call((w, id) => encodeProduceRequest(w, id, { topic, partition, records }));
  }

  fetch(request: Partial<FetchRequest> & { topic: string }): Promise<Response> {
    return this.call((w, id) =>
      encodeFetchRequest(w, id, { partition: 0, offset: 0, maxBytes: 1 << 20, maxWaitMs: 0, ...request }),
    );
  }

  listOffsets(topic: string, partition: number): Promise<Response> {
    return this.call((w, id) => encodeListOffsetsRequest(w, id, { topic, partition }));
  }

  metadata(topics: string[]): Promise<Response> {
    return this.call((w, id) => encodeMetadataRequest(w, id, { topics }));
  }

  close(): void {
    this.socket.close();
  }
}

const { NONE, UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE, INVALID_REQUEST, INVALID_CONFIG } =
  WIRE_ERROR_CODES;

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("topic names", () => {
  test("names of 247, 248 and 249 characters work end to end and survive a restart; 250 is refused", async () => {
    using dir = tempDir();
    const names = [247, 248, 249].map((length) => `${"n".repeat(length - 1)}${length % 10}`);
    {
      await using broker = await startBroker(dir.path);
      const session = await Session.open(broker.port);
      for (const name of names) {
        // Two partitions, not 1024: creating 1024 takes seconds of fsyncs here. That `<name>-1023`
        // (254 bytes) fits NAME_MAX is asserted when src/domain/limits.ts loads.
        const created = await session.createTopic(name, { partitions: 2, segmentBytes: 4096 });
        expect([created.errorCode, created.message]).toEqual([NONE, ""]);
        const produced = await session.produce(name, 1, batchOfValues([`to ${name.length}`]));
        expect(produced.errorCode).toBe(NONE);
        expect(decodeProduceResponse(produced.reader).firstOffset).toBe(0);
      }
      const tooLong = await session.createTopic("x".repeat(250));
      expect(tooLong.errorCode).toBe(INVALID_CONFIG);
      expect(tooLong.message).toContain("the limit is 249");
      session.close();
      expect(await broker.stop()).toBe(0);
    }
    await using broker = await startBroker(dir.path);
    const session = await Session.open(broker.port);
    const listed = decodeMetadataResponse((await session.metadata([])).reader);
    expect(listed.topics.map((topic) => topic.name)).toEqual([...names].sort());
    for (const name of names) {
      const fetched = await session.fetch({ topic: name, partition: 1 });
      expect(valuesOf(decodeFetchResponse(fetched.reader).records).map(decode)).toEqual([
        `to ${name.length}`,
      ]);
    }
    session.close();
  });

  test("an error from the disk reaches the client without the server's data directory in it", async () => {
    using dir = tempDir();
    // The copying fetch path checks CRCs on the broker, so damage on disk becomes an error response
    // whose cause (CorruptRecordError) names the segment file by its full path.
    await using broker = await startBroker(dir.path, ["--fetch-path", "copy"]);
    const session = await Session.open(broker.port);
    expect((await session.createTopic("disk", { segmentBytes: 4096 })).errorCode).toBe(NONE);
    expect((await session.produce("disk", 0, batchOfValues(["one", "two"]))).errorCode).toBe(NONE);
    const file = `${dir.path}/disk-0/00000000000000000000.log`;
    const descriptor = fs.openSync(file, "r+");
    fs.writeSync(descriptor, new Uint8Array([0xff]), 0, 1, 32 + 8); // first payload byte
    fs.closeSync(descriptor);
    const failed = await session.fetch({ topic: "disk" });
    expect(failed.errorCode).toBe(WIRE_ERROR_CODES.CORRUPT_RECORD);
    expect(failed.message).toContain("00000000000000000000.log");
    expect(failed.message).not.toContain(dir.path);
    session.close();
    // The operator's log keeps the full path.
    expect(await broker.stop()).toBe(0);
    const stderr = await new Response(broker.process.stderr).text();
    expect(stderr).toContain(`booblik: request failed: corrupt record in ${dir.path}/disk-0/`);
  });
});

describe("PRODUCE", () => {
  test("an empty batch is INVALID_REQUEST (a code the PRODUCE section lists); nothing is appended", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const session = await Session.open(broker.port);
    expect((await session.createTopic("empty")).errorCode).toBe(NONE);
    const refused = await session.produce("empty", 0, new Uint8Array(0));
    expect([refused.errorCode, refused.retriable]).toEqual([INVALID_REQUEST, false]);
    expect(refused.message).toContain("at least one record");
    // The connection stays usable and the log is untouched.
    expect(decodeListOffsetsResponse((await session.listOffsets("empty", 0)).reader).nextOffset).toBe(0);
    session.close();
  });
});

describe("CREATE_TOPIC settings", () => {
  test("every INVALID_CONFIG names the key and its real range", async () => {
    using dir = tempDir();
    // A frame limit above the record hard limit, so that the hard limit is what bounds maxRecordBytes.
    await using broker = await startBroker(dir.path, ["--max-frame-size", "128MiB"]);
    const session = await Session.open(broker.port);
    const cases: [Record<string, unknown>, string][] = [
      [{ segmentBytes: 100 }, "segmentBytes must be an integer in [256, 1073741824], got 100"],
      [{ segmentBytes: 2 ** 31 }, "segmentBytes must be an integer in [256, 1073741824], got 2147483648"],
      [
        { segmentBytes: 2 ** 30, maxRecordBytes: 2 ** 26 + 1 },
        "maxRecordBytes must be an integer in [68, 67108864] (the hard limit of 67108864 bytes), got 67108865",
      ],
      [
        { maxRecordBytes: 0 },
        "maxRecordBytes must be an integer in [68, 67108864] (the hard limit of 67108864 bytes), got 0",
      ],
      [
        { segmentBytes: 4096, maxRecordBytes: 4057 },
        "maxRecordBytes must be an integer in [68, 4056] (a batch and its 8-byte frame must fit a " +
          "segment of 4096 bytes after its 32-byte header), got 4057",
      ],
      [{ partitions: 0 }, "partitions must be an integer in [1, 1024], got 0"],
      [{ partitions: 1.5 }, "partitions must be an integer in [1, 1024], got 1.5"],
      [{ flushIntervalMs: 0 }, "flushIntervalMs must be an integer in [1, 86400000], got 0"],
      [{ indexIntervalBytes: 0 }, "indexIntervalBytes must be an integer in [1, 9007199254740991], got 0"],
      [{ retentionBytes: 0 }, "retentionBytes must be an integer in [1, 9007199254740991], got 0"],
      [{ retentionMs: "1d" }, 'retentionMs must be an integer in [1, 9007199254740991], got "1d"'],
      [{ durability: "sometimes" }, 'durability must be one of append, force, interval, got "sometimes"'],
      [{ writeMode: 1 }, "writeMode must be one of mapped, file, got 1"],
      [{ colour: "blue" }, 'unknown topic setting "colour"'],
    ];
    for (const [config, message] of cases) {
      const refused = await session.createTopic("t", config);
      expect([refused.errorCode, refused.retriable, refused.message]).toEqual([
        INVALID_CONFIG,
        false,
        expect.stringContaining(message),
      ]);
    }
    // Nothing of all that was created; the bounds themselves are accepted.
    expect(decodeMetadataResponse((await session.metadata([])).reader).topics).toEqual([]);
    expect((await session.createTopic("t", { segmentBytes: 4096, maxRecordBytes: 4056 })).errorCode).toBe(
      NONE,
    );
    session.close();
  });

  test("a maxRecordBytes no PRODUCE could carry in the broker's maximum frame is refused, naming both", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-frame-size", "64KiB"]);
    const session = await Session.open(broker.port);
    // A frame of 65536 bytes holds 8 (header) + 2 + 3 ("big") + 4 (partition) + 4 (records length)
    // + the batch: maxRecordBytes bounds a whole batch.
    const largest = 65536 - 21;
    const refused = await session.createTopic("big", { maxRecordBytes: largest + 1 });
    expect(refused.errorCode).toBe(INVALID_CONFIG);
    expect(refused.message).toBe(
      `maxRecordBytes must be an integer in [68, ${largest}] (the largest record batch a PRODUCE to this topic ` +
        `can carry in the broker's maximum frame of 65536 bytes), got ${largest + 1}`,
    );
    expect((await session.createTopic("big", { maxRecordBytes: largest })).errorCode).toBe(NONE);
    // The bound is exact: a PRODUCE of a batch of that size is a frame of exactly 65536 bytes.
    let valueBytes = largest - 61 - 11;
    while (batchOfValues([new Uint8Array(valueBytes)]).length < largest) valueBytes++;
    const batch = batchOfValues([new Uint8Array(valueBytes).fill(1)]);
    expect(batch.length).toBe(largest);
    const produced = await session.produce("big", 0, batch);
    expect(produced.errorCode).toBe(NONE);
    // Without an explicit maxRecordBytes the default (1 MiB) shrinks to what the frame carries.
    expect((await session.createTopic("dflt")).errorCode).toBe(NONE);
    const [described] = decodeMetadataResponse((await session.metadata(["dflt"])).reader).topics;
    expect(JSON.parse(described!.configJson).maxRecordBytes).toBe(65536 - 22);
    session.close();
    // An explicit broker default that no PRODUCE could carry stops the broker before it starts.
    using other = tempDir();
    const run = await runBrokerExpectingFailure([
      ...["--data-dir", other.path, "--host", "127.0.0.1", "--port", "0"],
      ...["--max-frame-size", "64KiB", "--max-record-size", "64KiB"],
    ]);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain(
      "--max-record-size 65536 does not fit a --max-frame-size of 65536 bytes: a PRODUCE carries a record batch of at most 65517 bytes",
    );
  });
});

describe("long polls that end without records", () => {
  test("a DELETE_TOPIC ends a waiting FETCH with UNKNOWN_TOPIC_OR_PARTITION, not retriable", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const consumer = await Session.open(broker.port);
    const admin = await Session.open(broker.port);
    expect((await admin.createTopic("gone")).errorCode).toBe(NONE);
    expect((await admin.produce("gone", 0, batchOfValues(["old"]))).errorCode).toBe(NONE);
    const waiting = consumer.send((w, id) =>
      encodeFetchRequest(w, id, { topic: "gone", partition: 0, offset: 1, maxBytes: 100, maxWaitMs: 20_000 }),
    );
    await waitUntil(async () => (await waitingFetches(admin)) === 1, "the FETCH to wait");
    const deleted = await admin.call((w, id) => encodeDeleteTopicRequest(w, id, { name: "gone" }));
    expect(deleted.errorCode).toBe(NONE);
    const ended = await consumer.read(waiting);
    expect([ended.errorCode, ended.retriable]).toEqual([UNKNOWN_TOPIC_OR_PARTITION, false]);
    expect(ended.message).toContain("gone");
    // Created again, the name starts empty.
    expect((await admin.produce("gone", 0, batchOfValues(["x"]))).errorCode).toBe(UNKNOWN_TOPIC_OR_PARTITION);
    expect((await admin.createTopic("gone")).errorCode).toBe(NONE);
    expect(decodeListOffsetsResponse((await admin.listOffsets("gone", 0)).reader)).toEqual({
      logStartOffset: 0,
      nextOffset: 0,
      timestampOffset: -1,
      offsetTimestampMs: -1,
    });
    consumer.close();
    admin.close();
  });

  test("a shutdown answers a waiting FETCH at once with what the log holds (no records, no error)", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const consumer = await Session.open(broker.port);
    expect((await consumer.createTopic("stay")).errorCode).toBe(NONE);
    expect((await consumer.produce("stay", 0, batchOfValues(["a"]))).errorCode).toBe(NONE);
    const waiting = consumer.send((w, id) =>
      encodeFetchRequest(w, id, { topic: "stay", partition: 0, offset: 1, maxBytes: 100, maxWaitMs: 20_000 }),
    );
    const startMs = performance.now();
    const admin = await Session.open(broker.port);
    await waitUntil(async () => (await waitingFetches(admin)) === 1, "the FETCH to wait");
    admin.close();
    broker.process.kill("SIGTERM");
    const ended = await consumer.read(waiting);
    expect(ended.errorCode).toBe(NONE);
    expect(decodeFetchResponse(ended.reader)).toMatchObject({ recordsBytes: 0, nextOffset: 1 });
    expect(performance.now() - startMs).toBeLessThan(15_000);
    expect(await broker.process.exited).toBe(0);
    consumer.close();
  });
});

describe("long polls on one partition (one waiter object each, issue 13)", () => {
  test("closed connections' FETCHes stop waiting; one PRODUCE answers the rest; a wait that ends answers no records", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const admin = await Session.open(broker.port);
    expect((await admin.createTopic("polls")).errorCode).toBe(NONE);
    expect((await admin.produce("polls", 0, batchOfValues(["first"]))).errorCode).toBe(NONE);
    const consumers = await Promise.all(Array.from({ length: 4 }, () => Session.open(broker.port)));
    const waiting = consumers.map((consumer) =>
      consumer.send((w, id) =>
        encodeFetchRequest(w, id, {
          topic: "polls",
          partition: 0,
          offset: 1,
          maxBytes: 1000,
          maxWaitMs: 20_000,
        }),
      ),
    );
    await waitUntil(async () => (await waitingFetches(admin)) === 4, "four FETCHes to wait");
    consumers[0]!.close();
    consumers[2]!.close();
    await waitUntil(
      async () => (await waitingFetches(admin)) === 2,
      "the closed connections' FETCHes to stop waiting",
    );
    expect((await admin.produce("polls", 0, batchOfValues(["second"]))).errorCode).toBe(NONE);
    for (const i of [1, 3]) {
      const answered = await consumers[i]!.read(waiting[i]!);
      expect(answered.errorCode).toBe(NONE);
      expect(valuesOf(decodeFetchResponse(answered.reader).records).map(decode)).toEqual(["second"]);
    }
    expect(await waitingFetches(admin)).toBe(0);
    // The timer path: nothing arrives, the wait ends with no records, and nothing is left waiting.
    const timed = consumers[1]!.send((w, id) =>
      encodeFetchRequest(w, id, { topic: "polls", partition: 0, offset: 2, maxBytes: 1000, maxWaitMs: 50 }),
    );
    const empty = await consumers[1]!.read(timed);
    expect(empty.errorCode).toBe(NONE);
    expect(decodeFetchResponse(empty.reader)).toMatchObject({ recordsBytes: 0, nextOffset: 2 });
    expect(await waitingFetches(admin)).toBe(0);
    // The partition still wakes a new reader after every earlier one left.
    const later = consumers[3]!.send((w, id) =>
      encodeFetchRequest(w, id, {
        topic: "polls",
        partition: 0,
        offset: 2,
        maxBytes: 1000,
        maxWaitMs: 20_000,
      }),
    );
    await waitUntil(async () => (await waitingFetches(admin)) === 1, "a new FETCH to wait");
    expect((await admin.produce("polls", 0, batchOfValues(["third"]))).errorCode).toBe(NONE);
    expect(
      valuesOf(decodeFetchResponse((await consumers[3]!.read(later)).reader).records).map(decode),
    ).toEqual(["third"]);
    for (const consumer of [consumers[1]!, consumers[3]!, admin]) consumer.close();
  });
});

describe("what the doc leaves no longer open", () => {
  test("a u64 of 2^53 or more is INVALID_REQUEST; 2^53 - 1 decodes; the connection stays usable", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const session = await Session.open(broker.port);
    expect((await session.createTopic("t")).errorCode).toBe(NONE);
    const fetchAt = (high: number, low: number) =>
      session.call((w, id) => {
        const start = beginRequest(w, API.FETCH, id);
        // topic, partition, offset as two u32 halves (the writer refuses a u64 ≥ 2^53), maxBytes, maxWaitMs
        w.string("t").u32(0).u32(high).u32(low).u32(100).u32(0);
        endFrame(w, start);
      });
    for (const [high, low] of [
      [0x200000, 0],
      [0xffffffff, 0xffffffff],
    ] as const) {
      const refused = await fetchAt(high, low);
      expect([refused.errorCode, refused.retriable]).toEqual([INVALID_REQUEST, false]);
      expect(refused.message).toBe(`offset is ${high} * 2^32 + ${low}, beyond 2^53`);
    }
    const largest = await fetchAt(0x1fffff, 0xffffffff);
    expect(largest.errorCode).toBe(OFFSET_OUT_OF_RANGE);
    expect(decodeListOffsetsResponse((await session.listOffsets("t", 0)).reader)).toEqual({
      logStartOffset: 0,
      nextOffset: 0,
      timestampOffset: -1,
      offsetTimestampMs: -1,
    });
    session.close();
  });

  test("errors of LIST_OFFSETS, FETCH and METADATA, and the order their checks apply in", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const session = await Session.open(broker.port);
    expect((await session.createTopic("t")).errorCode).toBe(NONE);
    expect((await session.produce("t", 0, batchOfValues(["r"]))).errorCode).toBe(NONE);
    const errorOf = (response: Response) => [response.errorCode, response.message];
    // For every API: the apiKey, then the apiVersion, then the payload (here undecodable: one byte).
    const header = async (apiKey: number, apiVersion: number) =>
      errorOf(
        await session.call((w, id) => {
          const start = beginRequest(w, apiKey, id, apiVersion);
          w.u8(0);
          endFrame(w, start);
        }),
      );
    expect(await header(99, 1)).toEqual([INVALID_REQUEST, "unknown request type 99"]);
    expect(await header(API.METADATA, 2)).toEqual([
      WIRE_ERROR_CODES.UNSUPPORTED_VERSION,
      "METADATA version 2 is not supported (this broker speaks version 1)",
    ]);
    expect(await header(API.METADATA, 0)).toEqual([
      WIRE_ERROR_CODES.UNSUPPORTED_VERSION,
      "METADATA version 0 is not supported (this broker speaks version 1)",
    ]);
    expect((await header(API.METADATA, 1))[0]).toBe(INVALID_REQUEST);
    // The topic and partition are checked before the offset.
    const offset = Number.MAX_SAFE_INTEGER;
    expect(errorOf(await session.fetch({ topic: "nope", offset }))).toEqual([
      UNKNOWN_TOPIC_OR_PARTITION,
      'unknown topic "nope"',
    ]);
    expect(errorOf(await session.fetch({ topic: "t", partition: 1, offset }))).toEqual([
      UNKNOWN_TOPIC_OR_PARTITION,
      "unknown partition t/1",
    ]);
    const outOfRange = await session.fetch({ topic: "t", offset: 2 });
    expect(outOfRange.errorCode).toBe(OFFSET_OUT_OF_RANGE);
    expect([outOfRange.logStartOffset, outOfRange.nextOffset]).toEqual([0, 1]);
    expect(errorOf(await session.listOffsets("nope", 0))).toEqual([
      UNKNOWN_TOPIC_OR_PARTITION,
      'unknown topic "nope"',
    ]);
    expect(errorOf(await session.listOffsets("t", 1))).toEqual([
      UNKNOWN_TOPIC_OR_PARTITION,
      "unknown partition t/1",
    ]);
    // METADATA fails whole, naming the first unknown name in request order.
    expect(errorOf(await session.metadata(["t", "nope1", "nope2"]))).toEqual([
      UNKNOWN_TOPIC_OR_PARTITION,
      'unknown topic "nope1"',
    ]);
    session.close();
  });

  test("METADATA: all topics sorted by name; named ones in request order, a name asked twice answered twice", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const session = await Session.open(broker.port);
    for (const name of ["b", "a-1", "A", "a"]) expect((await session.createTopic(name)).errorCode).toBe(NONE);
    const names = async (topics: string[]) =>
      decodeMetadataResponse((await session.metadata(topics)).reader).topics.map((topic) => topic.name);
    expect(await names([])).toEqual(["A", "a", "a-1", "b"]);
    expect(await names(["b", "a", "b"])).toEqual(["b", "a", "b"]);
    session.close();
  });

  test("the default connection limit is 1,024", async () => {
    const help = await runBrokerExpectingFailure(["--help"]);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(
      /--max-connections <value> +connections beyond this are refused \(default 1024;/,
    );
  });

  for (const fetchPath of ["sendfile", "copy"]) {
    test(`FETCH maxBytes counts whole entries with their headers, and 0 still returns one (--fetch-path ${fetchPath})`, async () => {
      using dir = tempDir();
      await using broker = await startBroker(dir.path, ["--fetch-path", fetchPath]);
      const session = await Session.open(broker.port);
      expect((await session.createTopic("m")).errorCode).toBe(NONE);
      // Three entries of one record of 10 value bytes each: the 8-byte entry header, the batch.
      const payloads = ["0123456789", "abcdefghij", "ABCDEFGHIJ"];
      for (const payload of payloads)
        expect((await session.produce("m", 0, batchOfValues([payload]))).errorCode).toBe(NONE);
      const entry = 8 + batchOfValues([payloads[0]!]).length;
      const countAt = async (maxBytes: number) => {
        const response = await session.fetch({ topic: "m", maxBytes });
        return valuesOf(decodeFetchResponse(response.reader).records).length;
      };
      const counts = [];
      for (const maxBytes of [
        0,
        1,
        entry - 1,
        entry,
        2 * entry - 1,
        2 * entry,
        3 * entry - 1,
        3 * entry,
        1000,
      ])
        counts.push(await countAt(maxBytes));
      expect(counts).toEqual([1, 1, 1, 1, 1, 2, 2, 3, 3]);
      session.close();
    });
  }

  test("copying FETCHes share one read buffer: a FETCH answered behind a waiting one, and the waiting one after it, each carry their own records (--fetch-path copy)", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--fetch-path", "copy"]);
    const session = await Session.open(broker.port);
    const producer = await Session.open(broker.port);
    expect((await session.createTopic("w", { partitions: 2 })).errorCode).toBe(NONE);
    const early = Array.from({ length: 50 }, (_, i) => `early-${i}-${"e".repeat(200)}`);
    expect((await producer.produce("w", 1, batchOfValues(early))).errorCode).toBe(NONE);
    // Partition 0 is empty: this FETCH waits at the head of the connection's answers...
    const waiting = session.send((w, id) =>
      encodeFetchRequest(w, id, {
        topic: "w",
        partition: 0,
        offset: 0,
        maxBytes: 1 << 20,
        maxWaitMs: 30_000,
      }),
    );
    await waitUntil(async () => (await waitingFetches(producer)) === 1, "the FETCH to wait");
    // ...so this one is answered behind it (its records copied into a response of their own)...
    const behind = session.send((w, id) =>
      encodeFetchRequest(w, id, { topic: "w", partition: 1, offset: 0, maxBytes: 1 << 20, maxWaitMs: 0 }),
    );
    await waitUntil(
      async () => (await brokerStats(producer)).fetchRecords === early.length,
      "the FETCH behind it answered",
    );
    expect(await waitingFetches(producer)).toBe(1);
    // ...and the waiting one is then answered with other records, read into the same buffer.
    const late = Array.from({ length: 50 }, (_, i) => `late-${i}-${"l".repeat(300)}`);
    expect((await producer.produce("w", 0, batchOfValues(late))).errorCode).toBe(NONE);
    const first = decodeFetchResponse((await session.read(waiting)).reader);
    const second = decodeFetchResponse((await session.read(behind)).reader);
    expect(valuesOf(first.records).map(decode)).toEqual(late);
    expect(valuesOf(second.records).map(decode)).toEqual(early);
    // At the head (straight into the connection's output) the same holds, fetch after fetch.
    for (let round = 0; round < 3; round++) {
      const [a, b] = [
        session.send((w, id) =>
          encodeFetchRequest(w, id, {
            topic: "w",
            partition: round % 2,
            offset: 0,
            maxBytes: 1 << 20,
            maxWaitMs: 0,
          }),
        ),
        session.send((w, id) =>
          encodeFetchRequest(w, id, {
            topic: "w",
            partition: (round + 1) % 2,
            offset: 0,
            maxBytes: 1 << 20,
            maxWaitMs: 0,
          }),
        ),
      ];
      expect(valuesOf(decodeFetchResponse((await session.read(a)).reader).records).map(decode)).toEqual(
        round % 2 === 0 ? late : early,
      );
      expect(valuesOf(decodeFetchResponse((await session.read(b)).reader).records).map(decode)).toEqual(
        round % 2 === 0 ? early : late,
      );
    }
    session.close();
    producer.close();
  });

  test("a FETCH response ends at the end of a segment, on either fetch path", async () => {
    using dir = tempDir();
    for (const fetchPath of ["sendfile", "copy"]) {
      await using broker = await startBroker(`${dir.path}/${fetchPath}`, ["--fetch-path", fetchPath]);
      const session = await Session.open(broker.port);
      // 512-byte segments hold (512 - 32) / 120 = 4 entries of 3 records of 10 bytes each
      // (8 + 61 + 3 × 17 bytes): 12 records.
      expect((await session.createTopic("s", { segmentBytes: 512 })).errorCode).toBe(NONE);
      const payloads = Array.from({ length: 20 }, (_, i) => `record-${String(i).padStart(3, "0")}`);
      expect(8 + batchOfValues(payloads.slice(0, 3)).length).toBe(120);
      for (let i = 0; i < payloads.length; i += 3)
        expect((await session.produce("s", 0, batchOfValues(payloads.slice(i, i + 3)))).errorCode).toBe(NONE);
      const first = decodeFetchResponse((await session.fetch({ topic: "s", maxBytes: 1000 })).reader);
      expect([fetchPath, valuesOf(first.records).length]).toEqual([fetchPath, 12]);
      session.close();
    }
  });
});

/** The broker's counters, from STATS. */
async function brokerStats(session: Session): Promise<Record<string, number>> {
  const response = await session.call((w, id) => endFrame(w, beginRequest(w, API.STATS, id)));
  return JSON.parse(decodeStatsResponse(response.reader)) as Record<string, number>;
}

/** The broker's count of waiting FETCHes, from STATS. */
async function waitingFetches(session: Session): Promise<number> {
  const response = await session.call((w, id) => endFrame(w, beginRequest(w, API.STATS, id)));
  return (JSON.parse(decodeStatsResponse(response.reader)) as { waitingFetches: number }).waitingFetches;
}
