/**
 * The native protocol's OFFSET_COMMIT (9) and OFFSET_FETCH (10) over a raw socket against a broker
 * process: a FETCH pipelined right behind a COMMIT on one connection sees it; partitions never
 * committed answer −1; every bad input (unknown topic or partition, empty group, oversized
 * metadata, no offsets, a count the frame cannot hold, a wrong version) gets its error code and a
 * message naming the reason, and stores nothing, not even the good items of the same request; and
 * an acknowledged commit survives SIGKILL of the broker. DELETE_GROUP removes a group's offsets
 * (surviving a restart too) and refuses a group without any.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { COMMIT_METADATA_BYTES_MAX } from "../../src/domain/limits.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API } from "../../src/protocol/frame.ts";
import {
  decodeOffsetFetchResponse,
  encodeDeleteGroupRequest,
  encodeOffsetCommitRequest,
  encodeOffsetFetchRequest,
  type FetchedOffset,
  type OffsetCommitItem,
  type OffsetFetchTopic,
} from "../../src/protocol/group-messages.ts";
import { beginRequest, endFrame } from "../../src/protocol/messages.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { frame, type RawSocket, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const commit = (id: number, group: string, offsets: OffsetCommitItem[]) =>
  frame((w) => encodeOffsetCommitRequest(w, id, { group, offsets }));
const fetchOf = (id: number, group: string, topics: OffsetFetchTopic[]) =>
  frame((w) => encodeOffsetFetchRequest(w, id, { group, topics }));
const item = (topic: string, partition: number, offset: number, metadata = ""): OffsetCommitItem => ({
  topic,
  partition,
  offset,
  metadata,
});
/** Offsets without their commit time (which is the broker's clock). */
const plain = (offsets: FetchedOffset[]) =>
  offsets.map(({ topic, partition, offset, metadata }) => ({ topic, partition, offset, metadata }));

let dir: TempDir | undefined;
let broker: BrokerProcess | undefined;
let socket: RawSocket | undefined;

afterEach(async () => {
  socket?.close();
  socket = undefined;
  await broker?.[Symbol.asyncDispose]();
  broker = undefined;
  dir?.[Symbol.dispose]();
  dir = undefined;
});

async function setUp(): Promise<RawSocket> {
  dir = tempDir();
  broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("orders", { partitions: 3 });
    await client.createTopic("audit");
  } finally {
    client.close();
  }
  socket = await rawConnect(broker.port);
  return socket;
}

/** Sends `bytes` (one or more frames) and waits for `count` responses after what came before. */
async function exchange(raw: RawSocket, bytes: Uint8Array, count = 1) {
  const from = raw.received().length;
  raw.write(bytes);
  return waitForResponses(raw, count, from);
}

describe("OFFSET_COMMIT and OFFSET_FETCH", () => {
  test("a FETCH pipelined behind a COMMIT on one connection sees it; partitions never committed answer −1", async () => {
    const raw = await setUp();
    const burst = new Uint8Array([
      ...commit(1, "billing", [item("orders", 0, 42, "worker-1"), item("orders", 2, 7), item("audit", 0, 3)]),
      ...fetchOf(2, "billing", [{ topic: "orders", partitions: [] }]),
      ...fetchOf(3, "billing", [
        { topic: "audit", partitions: [0] },
        { topic: "orders", partitions: [2, 1] },
      ]),
      ...fetchOf(4, "billing", []),
      ...fetchOf(5, "nobody", [{ topic: "orders", partitions: [0] }]),
    ]);
    const [committed, everyPartition, named, all, unknownGroup] = await exchange(raw, burst, 5);
    expect(committed!.errorCode).toBe(0);
    expect(committed!.body.remaining).toBe(0);
    expect(plain(decodeOffsetFetchResponse(everyPartition!.body))).toEqual([
      { topic: "orders", partition: 0, offset: 42, metadata: "worker-1" },
      { topic: "orders", partition: 1, offset: -1, metadata: "" },
      { topic: "orders", partition: 2, offset: 7, metadata: "" },
    ]);
    const namedOffsets = decodeOffsetFetchResponse(named!.body);
    expect(plain(namedOffsets)).toEqual([
      { topic: "audit", partition: 0, offset: 3, metadata: "" },
      { topic: "orders", partition: 2, offset: 7, metadata: "" },
      { topic: "orders", partition: 1, offset: -1, metadata: "" },
    ]);
    // A commit time is the broker's clock; none with −1.
    expect(namedOffsets[0]!.commitTimestampMs).toBeGreaterThan(1_700_000_000_000);
    expect(namedOffsets[2]!.commitTimestampMs).toBe(-1);
    expect(plain(decodeOffsetFetchResponse(all!.body))).toEqual([
      { topic: "audit", partition: 0, offset: 3, metadata: "" },
      { topic: "orders", partition: 0, offset: 42, metadata: "worker-1" },
      { topic: "orders", partition: 2, offset: 7, metadata: "" },
    ]);
    expect(plain(decodeOffsetFetchResponse(unknownGroup!.body))).toEqual([
      { topic: "orders", partition: 0, offset: -1, metadata: "" },
    ]);
    // A later commit of the same partition wins, in one request as across requests.
    const [again, after] = await exchange(
      raw,
      new Uint8Array([
        ...commit(6, "billing", [item("orders", 0, 50), item("orders", 0, 60, "last")]),
        ...fetchOf(7, "billing", [{ topic: "orders", partitions: [0] }]),
      ]),
      2,
    );
    expect(again!.errorCode).toBe(0);
    expect(plain(decodeOffsetFetchResponse(after!.body))).toEqual([
      { topic: "orders", partition: 0, offset: 60, metadata: "last" },
    ]);
  });

  test("bad input gets a clear error and stores nothing, not even the good items of the same request", async () => {
    const raw = await setUp();
    expect((await exchange(raw, commit(1, "g", [item("orders", 1, 5)])))[0]!.errorCode).toBe(0);
    const tooLong = "m".repeat(COMMIT_METADATA_BYTES_MAX + 1);
    const cases: [string, Uint8Array, number, RegExp][] = [
      [
        "an unknown topic",
        commit(10, "g", [item("orders", 1, 99), item("nope", 0, 1)]),
        WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION,
        /OFFSET_COMMIT offset 1 \(nope\/0\): unknown topic "nope"/,
      ],
      [
        "an unknown partition",
        commit(11, "g", [item("orders", 1, 99), item("orders", 3, 1)]),
        WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION,
        /OFFSET_COMMIT offset 1 \(orders\/3\): unknown partition orders\/3/,
      ],
      [
        "an empty group",
        commit(12, "", [item("orders", 1, 99)]),
        WIRE_ERROR_CODES.INVALID_REQUEST,
        /OFFSET_COMMIT: the group id is empty/,
      ],
      [
        "oversized metadata",
        commit(13, "g", [item("orders", 1, 99), item("orders", 2, 1, tooLong)]),
        WIRE_ERROR_CODES.INVALID_REQUEST,
        /OFFSET_COMMIT offset 1 \(orders\/2\): commit metadata is longer than 4096 bytes/,
      ],
      ["no offsets", commit(14, "g", []), WIRE_ERROR_CODES.INVALID_REQUEST, /OFFSET_COMMIT holds no offsets/],
      [
        "the offsets topic itself",
        commit(15, "g", [item("__consumer_offsets", 0, 1)]),
        WIRE_ERROR_CODES.INVALID_REQUEST,
        /__consumer_offsets is the broker's own topic/,
      ],
      [
        "a count the frame cannot hold",
        frame((w) => {
          const start = beginRequest(w, API.OFFSET_COMMIT, 16);
          w.string("g").u32(1_000_000);
          endFrame(w, start);
        }),
        WIRE_ERROR_CODES.INVALID_REQUEST,
        /offset count 1000000 at byte 15 cannot fit in the 0 bytes left in the frame/,
      ],
      [
        "a FETCH of an unknown partition",
        fetchOf(17, "g", [{ topic: "orders", partitions: [1, 9] }]),
        WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION,
        /OFFSET_FETCH topic 0 \(orders\): unknown partition orders\/9/,
      ],
      [
        "a FETCH with an empty group",
        fetchOf(18, "", []),
        WIRE_ERROR_CODES.INVALID_REQUEST,
        /OFFSET_FETCH: the group id is empty/,
      ],
      [
        "version 1",
        frame((w) => {
          const start = beginRequest(w, API.OFFSET_COMMIT, 19, 1);
          w.string("g").u32(0);
          endFrame(w, start);
        }),
        WIRE_ERROR_CODES.UNSUPPORTED_VERSION,
        /OFFSET_COMMIT version 1 is not supported \(this broker speaks version 0\)/,
      ],
    ];
    for (const [what, bytes, code, message] of cases) {
      const [answer] = await exchange(raw, bytes);
      expect({ what, code: answer!.errorCode }).toEqual({ what, code });
      expect(answer!.message).toMatch(message);
    }
    // Nothing of the refused requests was stored, and the connection still works.
    const [after] = await exchange(raw, fetchOf(20, "g", []));
    expect(plain(decodeOffsetFetchResponse(after!.body))).toEqual([
      { topic: "orders", partition: 1, offset: 5, metadata: "" },
    ]);
  });

  test("an acknowledged commit survives SIGKILL of the broker", async () => {
    const raw = await setUp();
    const [answer] = await exchange(
      raw,
      commit(1, "durable", [item("orders", 2, 1234, "meta"), item("audit", 0, 9)]),
    );
    expect(answer!.errorCode).toBe(0);
    raw.close();
    socket = undefined;
    await broker!.stop("SIGKILL");
    broker = await startBroker(dir!.path);
    socket = await rawConnect(broker.port);
    const [fetched] = await exchange(socket, fetchOf(2, "durable", []));
    expect(plain(decodeOffsetFetchResponse(fetched!.body))).toEqual([
      { topic: "audit", partition: 0, offset: 9, metadata: "" },
      { topic: "orders", partition: 2, offset: 1234, metadata: "meta" },
    ]);
  });

  test("DELETE_GROUP removes every committed offset of a group, for good; other groups keep theirs", async () => {
    const raw = await setUp();
    const del = (id: number, group: string) => frame((w) => encodeDeleteGroupRequest(w, id, { group }));
    const [a, b, deleted, gone, other, again, empty] = await exchange(
      raw,
      new Uint8Array([
        ...commit(1, "old", [item("orders", 0, 5), item("audit", 0, 6)]),
        ...commit(2, "kept", [item("orders", 0, 8)]),
        ...del(3, "old"),
        ...fetchOf(4, "old", []),
        ...fetchOf(5, "kept", []),
        ...del(6, "old"),
        ...del(7, ""),
      ]),
      7,
    );
    expect([a!.errorCode, b!.errorCode, deleted!.errorCode]).toEqual([0, 0, 0]);
    expect(decodeOffsetFetchResponse(gone!.body)).toEqual([]);
    expect(plain(decodeOffsetFetchResponse(other!.body))).toEqual([
      { topic: "orders", partition: 0, offset: 8, metadata: "" },
    ]);
    expect(again!.errorCode).toBe(WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
    expect(again!.message).toBe('DELETE_GROUP: group "old" has no committed offsets');
    expect(empty!.errorCode).toBe(WIRE_ERROR_CODES.INVALID_REQUEST);
    expect(empty!.message).toBe("DELETE_GROUP: the group id is empty");
    raw.close();
    socket = undefined;
    await broker!.stop("SIGKILL");
    broker = await startBroker(dir!.path);
    socket = await rawConnect(broker.port);
    const [afterRestart] = await exchange(socket, fetchOf(8, "old", [{ topic: "orders", partitions: [0] }]));
    expect(plain(decodeOffsetFetchResponse(afterRestart!.body))).toEqual([
      { topic: "orders", partition: 0, offset: -1, metadata: "" },
    ]);
  });
});
