/**
 * The Kafka codec over bytes. Requests: frames captured from kcat (librdkafka 2.0.2) and kafkajs
 * 2.2.4 by capture-requests.ts decode to what those commands asked; every truncation of them, and
 * every frame with a byte too many, is a KafkaProtocolError naming a position (never another
 * exception). Responses: each encoder's bytes equal a frame built field by field, in this file, from
 * the field lists of apache/kafka's message JSON files (the "(vN+)" notes say where a field starts).
 */
import { describe, expect, test } from "bun:test";
import {
  decodeCreateAclsRequest,
  decodeDeleteAclsRequest,
  decodeDescribeAclsRequest,
} from "../../src/kafka/acl-messages.ts";
import {
  decodeDeleteGroupsRequest,
  decodeDescribeClusterRequest,
  decodeDescribeConfigsRequest,
  decodeOffsetDeleteRequest,
  decodeOffsetForLeaderEpochRequest,
} from "../../src/kafka/admin-messages.ts";
import {
  CODEC_VERSIONS,
  KAFKA_API,
  type KafkaApiKey,
  readRequestHeader,
  requestHeaderVersion,
  responseHeaderVersion,
} from "../../src/kafka/apis.ts";
import { KafkaProtocolError, KafkaReader, KafkaWriter } from "../../src/kafka/codec.ts";
import { decodeDeleteRecordsRequest } from "../../src/kafka/delete-records-messages.ts";
import {
  decodeElectLeadersRequest,
  encodeElectLeadersResponse,
} from "../../src/kafka/elect-leaders-messages.ts";
import {
  decodeDescribeGroupsRequest,
  decodeHeartbeatRequest,
  decodeJoinGroupRequest,
  decodeLeaveGroupRequest,
  decodeListGroupsRequest,
  decodeOffsetCommitRequest,
  decodeOffsetFetchRequest,
  decodeSyncGroupRequest,
  encodeDescribeGroupsResponse,
  encodeJoinGroupResponse,
  encodeLeaveGroupResponse,
  encodeListGroupsResponse,
} from "../../src/kafka/group-messages.ts";
import {
  decodeDescribeLogDirsRequest,
  encodeDescribeLogDirsResponse,
} from "../../src/kafka/log-dirs-messages.ts";
import {
  AUTHORIZED_OPERATIONS_OMITTED,
  decodeApiVersionsRequest,
  decodeCreateTopicsRequest,
  decodeDeleteTopicsRequest,
  decodeFetchRequest,
  decodeFindCoordinatorRequest,
  decodeInitProducerIdRequest,
  decodeListOffsetsRequest,
  decodeMetadataRequest,
  decodeProduceRequest,
  encodeApiVersionsResponse,
  encodeCreateTopicsResponse,
  encodeDeleteTopicsResponse,
  encodeFetchResponse,
  encodeFindCoordinatorResponse,
  encodeInitProducerIdResponse,
  encodeListOffsetsResponse,
  encodeMetadataResponse,
  encodeProduceResponse,
  type FetchRequest,
  type ProduceRequest,
} from "../../src/kafka/messages.ts";
import { decodeSaslAuthenticateRequest, decodeSaslHandshakeRequest } from "../../src/kafka/sasl.ts";
import {
  decodeAlterConfigsRequest,
  decodeCreatePartitionsRequest,
  decodeIncrementalAlterConfigsRequest,
} from "../../src/kafka/topic-admin-messages.ts";
import { decodeBatch } from "../../src/record/batch.ts";
import { Expect } from "./bytes.ts";
import captured from "./fixtures/captured-requests.json";

const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

type Decoder = (reader: KafkaReader, version: number) => unknown;
const DECODERS: Record<KafkaApiKey, Decoder> = {
  [KAFKA_API.PRODUCE]: decodeProduceRequest,
  [KAFKA_API.FETCH]: decodeFetchRequest,
  [KAFKA_API.LIST_OFFSETS]: decodeListOffsetsRequest,
  [KAFKA_API.METADATA]: decodeMetadataRequest,
  [KAFKA_API.FIND_COORDINATOR]: decodeFindCoordinatorRequest,
  [KAFKA_API.API_VERSIONS]: decodeApiVersionsRequest,
  [KAFKA_API.CREATE_TOPICS]: decodeCreateTopicsRequest,
  [KAFKA_API.DELETE_TOPICS]: decodeDeleteTopicsRequest,
  [KAFKA_API.INIT_PRODUCER_ID]: decodeInitProducerIdRequest,
  [KAFKA_API.OFFSET_COMMIT]: decodeOffsetCommitRequest,
  [KAFKA_API.OFFSET_FETCH]: decodeOffsetFetchRequest,
  [KAFKA_API.JOIN_GROUP]: decodeJoinGroupRequest,
  [KAFKA_API.HEARTBEAT]: decodeHeartbeatRequest,
  [KAFKA_API.LEAVE_GROUP]: decodeLeaveGroupRequest,
  [KAFKA_API.SYNC_GROUP]: decodeSyncGroupRequest,
  [KAFKA_API.DESCRIBE_GROUPS]: decodeDescribeGroupsRequest,
  [KAFKA_API.LIST_GROUPS]: decodeListGroupsRequest,
  [KAFKA_API.CREATE_PARTITIONS]: decodeCreatePartitionsRequest,
  [KAFKA_API.INCREMENTAL_ALTER_CONFIGS]: decodeIncrementalAlterConfigsRequest,
  [KAFKA_API.ALTER_CONFIGS]: decodeAlterConfigsRequest,
  [KAFKA_API.DESCRIBE_CONFIGS]: decodeDescribeConfigsRequest,
  [KAFKA_API.DESCRIBE_CLUSTER]: decodeDescribeClusterRequest,
  [KAFKA_API.DELETE_GROUPS]: decodeDeleteGroupsRequest,
  [KAFKA_API.OFFSET_DELETE]: decodeOffsetDeleteRequest,
  [KAFKA_API.OFFSET_FOR_LEADER_EPOCH]: decodeOffsetForLeaderEpochRequest,
  [KAFKA_API.DELETE_RECORDS]: decodeDeleteRecordsRequest,
  [KAFKA_API.SASL_HANDSHAKE]: decodeSaslHandshakeRequest,
  [KAFKA_API.SASL_AUTHENTICATE]: decodeSaslAuthenticateRequest,
  [KAFKA_API.DESCRIBE_ACLS]: decodeDescribeAclsRequest,
  [KAFKA_API.CREATE_ACLS]: decodeCreateAclsRequest,
  [KAFKA_API.DELETE_ACLS]: decodeDeleteAclsRequest,
  [KAFKA_API.DESCRIBE_LOG_DIRS]: decodeDescribeLogDirsRequest,
  [KAFKA_API.ELECT_LEADERS]: decodeElectLeadersRequest,
};

function decode(frame: Uint8Array) {
  const reader = new KafkaReader(frame);
  const apiKey = ((frame[0]! << 8) | frame[1]!) as KafkaApiKey;
  const version = (frame[2]! << 8) | frame[3]!;
  const header = readRequestHeader(reader, requestHeaderVersion(apiKey, version));
  return { header, body: DECODERS[apiKey](reader, version) };
}

const frames = captured.map((entry) => ({ ...entry, bytes: Uint8Array.from(Buffer.from(entry.hex, "hex")) }));
const find = (command: string, apiKey: number) =>
  frames.find((frame) => frame.command === command && ((frame.bytes[0]! << 8) | frame.bytes[1]!) === apiKey)!;

describe("requests captured from real clients decode", () => {
  test("kcat: ApiVersions v3 (flexible: header v2, compact strings, tag buffers)", () => {
    const { header, body } = decode(find("kcat -L", KAFKA_API.API_VERSIONS).bytes);
    expect(header).toEqual({ apiKey: 18, apiVersion: 3, correlationId: 1, clientId: "rdkafka" });
    expect(body).toEqual({ clientSoftwareName: "librdkafka", clientSoftwareVersion: "2.0.2" });
  });

  test("kcat -L: Metadata v4 for every topic (null array), then for a named one", () => {
    const all = frames.filter((f) => f.command === "kcat -L" && f.bytes[1] === KAFKA_API.METADATA);
    // librdkafka asks for no topics first (brokers only), then for all of them.
    expect(all.map((f) => decode(f.bytes).body)).toEqual([
      { topics: [], allowAutoTopicCreation: false },
      { topics: null, allowAutoTopicCreation: true },
    ]);
    expect(decode(find("kcat -L -t golden", KAFKA_API.METADATA).bytes).body).toEqual({
      topics: ["golden"],
      allowAutoTopicCreation: true,
    });
  });

  test("kcat -Q: ListOffsets v2, read_committed, latest (−1) and earliest (−2)", () => {
    const { header, body } = decode(
      find("kcat -Q -t golden:0:-1 -t golden:1:-2", KAFKA_API.LIST_OFFSETS).bytes,
    );
    expect(header.apiVersion).toBe(2);
    expect(body).toEqual({
      isolationLevel: 1,
      topics: [
        {
          name: "golden",
          partitions: [
            { partition: 0, timestamp: -1, maxNumOffsets: 1 },
            { partition: 1, timestamp: -2, maxNumOffsets: 1 },
          ],
        },
      ],
    });
  });

  test("kafkajs admin: ApiVersions v2, Metadata v6, CreateTopics v3, ListOffsets v3, DeleteTopics v1", () => {
    expect(decode(find("admin.connect", KAFKA_API.API_VERSIONS).bytes).header).toEqual({
      apiKey: 18,
      apiVersion: 2,
      correlationId: 0,
      clientId: "capture",
    });
    const create = decode(find("admin.createTopics", KAFKA_API.CREATE_TOPICS).bytes);
    expect(create.header.apiVersion).toBe(3);
    expect(create.body).toEqual({
      topics: [
        {
          name: "made-by-kafkajs",
          numPartitions: 3,
          replicationFactor: -1,
          assignments: [],
          configs: [{ name: "retention.ms", value: "60000" }],
        },
      ],
      timeoutMs: 5000,
      validateOnly: false,
    });
    const metadata = decode(find("admin.fetchTopicMetadata", KAFKA_API.METADATA).bytes);
    expect(metadata.header.apiVersion).toBe(6);
    expect(metadata.body).toEqual({ topics: ["made-by-kafkajs"], allowAutoTopicCreation: false });
    const offsets = frames
      .filter((f) => f.command === "admin.fetchTopicOffsets" && f.bytes[1] === KAFKA_API.LIST_OFFSETS)
      .map((f) => decode(f.bytes));
    expect(offsets.map((o) => o.header.apiVersion)).toEqual([3, 3]);
    expect(
      offsets.map((o) =>
        (o.body as { topics: { partitions: { timestamp: number }[] }[] }).topics[0]!.partitions.map(
          (p) => p.timestamp,
        ),
      ),
    ).toEqual([
      [-1, -1, -1],
      [-2, -2, -2],
    ]);
    expect(decode(find("admin.deleteTopics", KAFKA_API.DELETE_TOPICS).bytes).body).toEqual({
      topicNames: ["made-by-kafkajs"],
      timeoutMs: 5000,
    });
  });

  test("kcat -P: Produce v7, acks −1, one RecordBatch v2 per partition (a view into the frame)", () => {
    const frame = find("kcat -P -t golden -p 0 -K : -H h=v", KAFKA_API.PRODUCE).bytes;
    const { header, body } = decode(frame);
    expect(header.apiVersion).toBe(7);
    const request = body as ProduceRequest;
    expect([request.transactionalId, request.acks, request.timeoutMs, request.topics[0]!.name]).toEqual([
      null,
      -1,
      30_000,
      "golden",
    ]);
    const records = request.topics[0]!.partitions[0]!.records!;
    expect(records.buffer).toBe(frame.buffer);
    const batch = decodeBatch(records);
    // librdkafka 2.0.2: PartitionLeaderEpoch 0, ProducerId −1, BaseSequence −1 (kafka-wire.md §2).
    expect([
      batch.header.magic,
      batch.header.partitionLeaderEpoch,
      batch.header.producerId,
      batch.header.baseSequence,
    ]).toEqual([2, 0, -1, -1]);
    expect(
      batch.records.map((r) => [text(r.key), text(r.value), r.headers.map((h) => [h.key, text(h.value)])]),
    ).toEqual([
      ["k1", "v1", [["h", "v"]]],
      ["k2", "v2", [["h", "v"]]],
    ]);
  });

  test("kcat -C: Fetch v11 with read_committed, no session (id 0, epoch −1), 500 ms wait, then the next offset", () => {
    const fetches = frames
      .filter((f) => f.command.startsWith("kcat -C") && f.bytes[1] === KAFKA_API.FETCH)
      .map((f) => decode(f.bytes));
    expect(fetches.map((f) => f.header.apiVersion)).toEqual([11, 11, 11]);
    expect(fetches[0]!.body).toEqual({
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 52_428_800,
      isolationLevel: 1,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        { topic: "golden", partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1_048_576 }] },
      ],
    });
    expect(fetches.map((f) => (f.body as FetchRequest).topics[0]!.partitions[0]!.fetchOffset)).toEqual([
      0, 2, 2,
    ]);
  });

  test("kafkajs producer: Produce v7, BaseSequence 0 with ProducerId −1 (accepted, as Kafka does)", () => {
    const { header, body } = decode(find("producer.send", KAFKA_API.PRODUCE).bytes);
    expect(header.apiVersion).toBe(7);
    const partition = (body as ProduceRequest).topics[0]!.partitions[0]!;
    expect(partition.index).toBe(2);
    const batch = decodeBatch(partition.records!);
    expect([batch.header.producerId, batch.header.producerEpoch, batch.header.baseSequence]).toEqual([
      -1, 0, 0,
    ]);
    expect(batch.records.map((r) => [text(r.key), text(r.value), r.timestamp])).toEqual([
      ["k", "v", 1_700_000_000_000],
    ]);
  });

  test("every truncation and every trailing byte is a KafkaProtocolError with a position", () => {
    let checked = 0;
    for (const { bytes, command } of frames) {
      for (let length = 0; length < bytes.length; length++) {
        let thrown: unknown;
        try {
          decode(bytes.subarray(0, length));
        } catch (error) {
          thrown = error;
        }
        if (length < 4) continue; // apiKey/version unreadable: the test's own decode() reads them raw
        if (!(thrown instanceof KafkaProtocolError))
          throw new Error(`${command}, ${length} bytes: ${thrown}`);
        expect(thrown.position).toBeLessThanOrEqual(length);
        checked++;
      }
      const longer = Uint8Array.from([...bytes, 0]);
      expect(() => decode(longer)).toThrow(KafkaProtocolError);
      expect(() => decode(longer)).toThrow(`unexpected bytes after its last field (at byte ${bytes.length})`);
    }
    expect(checked).toBeGreaterThan(500);
  });
});

describe("primitives", () => {
  test("unsigned varints: 0, 127, 128, 16383, 16384, 2^32 − 1 round-trip in 1-5 bytes", () => {
    for (const [value, size] of [
      [0, 1],
      [127, 1],
      [128, 2],
      [16383, 2],
      [16384, 3],
      [2 ** 32 - 1, 5],
    ] as const) {
      const writer = new KafkaWriter(1).uvarint(value);
      expect(writer.written()).toEqual(new Expect().uvarint(value).frame().subarray(4));
      expect(writer.position).toBe(size);
      expect(new KafkaReader(writer.written()).uvarint("v")).toBe(value);
    }
  });

  test("a STRING longer than 32,767 bytes is cut at the last whole character that fits; its length never wraps", () => {
    const fits = "a".repeat(32_767);
    const ascii = new KafkaWriter(1).string(`${fits}bcd`).int8(9);
    const asciiReader = new KafkaReader(ascii.written());
    expect(asciiReader.string("s")).toBe(fits);
    expect(asciiReader.int8("after")).toBe(9);
    // "é" is 2 bytes: 16,383 of them are 32,766 bytes, and the next one would cross the limit.
    const accented = new KafkaReader(new KafkaWriter(1).nullableString("é".repeat(20_000)).written());
    expect(accented.nullableString("s")).toBe("é".repeat(16_383));
    accented.expectEnd("string");
  });

  test("a varint of six bytes, or beyond 2^32 − 1, is refused with its position", () => {
    const six = Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
    expect(() => new KafkaReader(six).uvarint("count")).toThrow(
      "count at byte 0 is an unsigned varint longer than 5 bytes",
    );
    const big = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x1f);
    expect(() => new KafkaReader(big).uvarint("count")).toThrow(KafkaProtocolError);
  });

  test("int64: negative values and the ±2^53 bound", () => {
    const writer = new KafkaWriter(1)
      .int64(-2)
      .int64(-1)
      .int64(2 ** 53 - 1);
    expect(writer.written()).toEqual(
      new Expect()
        .i64(-2)
        .i64(-1)
        .i64(2 ** 53 - 1)
        .frame()
        .subarray(4),
    );
    const reader = new KafkaReader(writer.written());
    expect([reader.int64("a"), reader.int64("b"), reader.int64("c")]).toEqual([-2, -1, 2 ** 53 - 1]);
    const huge = new Expect().i32(0x7fffffff).i32(-1).frame().subarray(4);
    expect(() => new KafkaReader(huge).int64("fetch_offset")).toThrow(
      "fetch_offset at byte 0 lies beyond ±2^53",
    );
  });

  test("an array count larger than the bytes left could hold is refused before any element is read", () => {
    const bytes = new Expect().i32(1_000_000).i16(0).frame().subarray(4);
    expect(() => new KafkaReader(bytes).arrayCount("topics", 2)).toThrow(
      "topics at byte 0 counts 1000000 elements of at least 2 bytes, but only 2 bytes are left",
    );
    const compact = new Expect().uvarint(1_000_001).frame().subarray(4);
    expect(() => new KafkaReader(compact).compactArrayCount("api_keys", 1)).toThrow(KafkaProtocolError);
  });

  test("strings: null, negative lengths, compact forms, invalid UTF-8", () => {
    const bytes = new Expect().str(null).str("ключ").cstr(null).cstr("x").i16(-2).frame().subarray(4);
    const reader = new KafkaReader(bytes);
    expect(reader.nullableString("a")).toBeNull();
    expect(reader.string("b")).toBe("ключ");
    expect(reader.compactNullableString("c")).toBeNull();
    expect(reader.compactString("d")).toBe("x");
    expect(() => reader.nullableString("e")).toThrow("e at byte 15 has length -2");
    expect(() => new KafkaReader(Uint8Array.of(0, 1, 0xff)).string("name")).toThrow(
      "name at byte 2 is not valid UTF-8",
    );
    expect(() => new KafkaReader(new Expect().str(null).frame().subarray(4)).string("topic")).toThrow(
      "topic at byte 0 is null",
    );
  });

  test("tag buffers are skipped, with their sizes checked", () => {
    const tags = new Expect().uvarint(2).uvarint(0).uvarint(3).raw([1, 2, 3]).uvarint(5).uvarint(0).i8(7);
    const reader = new KafkaReader(tags.frame().subarray(4));
    reader.skipTaggedFields("header");
    expect(reader.int8("after")).toBe(7);
    const short = new Expect().uvarint(1).uvarint(0).uvarint(9).raw([1]).frame().subarray(4);
    expect(() => new KafkaReader(short).skipTaggedFields("header")).toThrow(
      "header tagged field at byte 3 needs 9 bytes",
    );
  });
});

describe("hand-built requests of the APIs no capture covers yet", () => {
  test("Produce v3 and v8: transactional id, acks, partitions and the records as a view", () => {
    const records = Uint8Array.from({ length: 70 }, (_, i) => i);
    for (const version of [3, 7, 8]) {
      const frame = new Expect()
        .i16(0)
        .i16(version)
        .i32(9)
        .str("cli")
        .str(null)
        .i16(-1)
        .i32(30_000)
        .i32(1)
        .str("t")
        .i32(1)
        .i32(0)
        .i32(records.length)
        .raw(records)
        .frame()
        .subarray(4);
      const { body } = decode(frame);
      expect(body).toEqual({
        transactionalId: null,
        acks: -1,
        timeoutMs: 30_000,
        topics: [{ name: "t", partitions: [{ index: 0, records }] }],
      });
      const view = (body as { topics: { partitions: { records: Uint8Array }[] }[] }).topics[0]!.partitions[0]!
        .records;
      expect(view.buffer).toBe(frame.buffer); // a view into the frame, not a copy
    }
  });

  test("Fetch v4 and v11 (the versions kcat and kafkajs send): every field in order", () => {
    const v11 = new Expect()
      .i16(1)
      .i16(11)
      .i32(4)
      .str("rdkafka")
      .i32(-1)
      .i32(500)
      .i32(1)
      .i32(52_428_800)
      .i8(1)
      .i32(0)
      .i32(-1)
      .i32(1)
      .str("t")
      .i32(1)
      .i32(0)
      .i32(-1)
      .i64(42)
      .i64(-1)
      .i32(1_048_576)
      .i32(0)
      .str("")
      .frame()
      .subarray(4);
    expect(decode(v11).body).toEqual({
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 52_428_800,
      isolationLevel: 1,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: "t", partitions: [{ partition: 0, fetchOffset: 42, partitionMaxBytes: 1_048_576 }] }],
    });
    const v4 = new Expect()
      .i16(1)
      .i16(4)
      .i32(4)
      .str("kjs")
      .i32(-1)
      .i32(5000)
      .i32(1)
      .i32(10_485_760)
      .i8(0)
      .i32(1)
      .str("t")
      .i32(1)
      .i32(2)
      .i64(7)
      .i32(1_048_576)
      .frame()
      .subarray(4);
    expect(decode(v4).body).toMatchObject({
      maxWaitMs: 5000,
      isolationLevel: 0,
      topics: [{ partitions: [{ partition: 2, fetchOffset: 7 }] }],
    });
  });

  test("FindCoordinator v0-2 and InitProducerId v0-4", () => {
    const find2 = new Expect().i16(10).i16(2).i32(1).str("c").str("group-a").i8(0).frame().subarray(4);
    expect(decode(find2).body).toEqual({ key: "group-a", keyType: 0 });
    const find0 = new Expect().i16(10).i16(0).i32(1).str("c").str("g").frame().subarray(4);
    expect(decode(find0).body).toEqual({ key: "g", keyType: 0 });
    const init = new Expect().i16(22).i16(1).i32(1).str("c").str(null).i32(60_000).frame().subarray(4);
    expect(decode(init).body).toEqual({
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1,
      producerEpoch: -1,
    });
    // v2 is flexible: request header v2 (client id stays int16, then tags), compact nullable string.
    const init2 = new Expect().i16(22).i16(2).i32(1).str("c").uvarint(0).uvarint(0).i32(9).uvarint(0);
    expect(decode(init2.frame().subarray(4)).body).toEqual({
      transactionalId: null,
      transactionTimeoutMs: 9,
      producerId: -1,
      producerEpoch: -1,
    });
    // v3-4 add producer_id and producer_epoch (KIP-360).
    for (const version of [3, 4]) {
      const init4 = new Expect().i16(22).i16(version).i32(1).str("c").uvarint(0).cstr("tx").i32(9);
      init4.i64(77).i16(3).uvarint(0);
      expect(decode(init4.frame().subarray(4)).body).toEqual({
        transactionalId: "tx",
        transactionTimeoutMs: 9,
        producerId: 77,
        producerEpoch: 3,
      });
    }
  });
});

function encoded(encode: (writer: KafkaWriter) => void): Uint8Array {
  const writer = new KafkaWriter(8);
  encode(writer);
  return writer.written().slice();
}

describe("responses match Kafka's layouts field by field", () => {
  const apiKeys = [
    { apiKey: 18, min: 0, max: 3 },
    { apiKey: 3, min: 0, max: 8 },
  ];

  test("ApiVersions v0, v2 and v3 (v3: compact array and tag buffers, yet header v0)", () => {
    const v0 = new Expect().i32(5).i16(0).i32(2).i16(18).i16(0).i16(3).i16(3).i16(0).i16(8).frame();
    expect(encoded((w) => encodeApiVersionsResponse(w, 0, 5, { errorCode: 0, apiKeys }))).toEqual(v0);
    const v2 = new Expect().i32(5).i16(0).i32(2).i16(18).i16(0).i16(3).i16(3).i16(0).i16(8).i32(0).frame();
    expect(encoded((w) => encodeApiVersionsResponse(w, 2, 5, { errorCode: 0, apiKeys }))).toEqual(v2);
    const v3 = new Expect()
      .i32(5) // header v0: no tag buffer
      .i16(0)
      .uvarint(3)
      .i16(18)
      .i16(0)
      .i16(3)
      .uvarint(0)
      .i16(3)
      .i16(0)
      .i16(8)
      .uvarint(0)
      .i32(0)
      .uvarint(0)
      .frame();
    expect(encoded((w) => encodeApiVersionsResponse(w, 3, 5, { errorCode: 0, apiKeys }))).toEqual(v3);
    expect(responseHeaderVersion(KAFKA_API.API_VERSIONS, 3)).toBe(0);
  });

  const metadata = {
    brokers: [{ nodeId: 1, host: "h", port: 9092 }],
    clusterId: "booblik",
    controllerId: 1,
    topics: [
      {
        errorCode: 0,
        name: "t",
        isInternal: false,
        partitions: [
          { errorCode: 0, partitionIndex: 0, leaderId: 1, leaderEpoch: -1, replicaNodes: [1], isrNodes: [1] },
        ],
      },
    ],
  };

  test("Metadata v0, v1, v4 (kcat), v6 (kafkajs), v8", () => {
    const partition = (e: Expect, version: number) => {
      e.i16(0).i32(0).i32(1);
      if (version >= 7) e.i32(-1);
      e.i32(1).i32(1).i32(1).i32(1);
      if (version >= 5) e.i32(0);
    };
    for (const version of [0, 1, 2, 3, 4, 5, 6, 7, 8]) {
      const e = new Expect().i32(77);
      if (version >= 3) e.i32(0); // throttle_time_ms
      e.i32(1).i32(1).str("h").i32(9092);
      if (version >= 1) e.str(null); // rack
      if (version >= 2) e.str("booblik"); // cluster_id
      if (version >= 1) e.i32(1); // controller_id
      e.i32(1).i16(0).str("t");
      if (version >= 1) e.i8(0); // is_internal
      e.i32(1);
      partition(e, version);
      if (version >= 8) e.i32(AUTHORIZED_OPERATIONS_OMITTED);
      if (version >= 8) e.i32(AUTHORIZED_OPERATIONS_OMITTED);
      expect(encoded((w) => encodeMetadataResponse(w, version, 77, metadata))).toEqual(e.frame());
    }
  });

  test("ListOffsets v0 (old_style_offsets), v1, v2 (kcat), v3 (kafkajs), v4-5 (leader_epoch)", () => {
    const topics = [
      {
        name: "t",
        partitions: [
          { partition: 0, errorCode: 0, timestamp: -1, offset: 12 },
          { partition: 1, errorCode: 3, timestamp: -1, offset: -1 },
        ],
      },
    ];
    for (const version of [0, 1, 2, 3, 4, 5]) {
      const e = new Expect().i32(3);
      if (version >= 2) e.i32(0);
      e.i32(1).str("t").i32(2);
      for (const [index, error, offset] of [
        [0, 0, 12],
        [1, 3, -1],
      ] as const) {
        e.i32(index).i16(error);
        if (version === 0) {
          if (offset >= 0) e.i32(1).i64(offset);
          else e.i32(0);
          continue;
        }
        e.i64(-1).i64(offset);
        if (version >= 4) e.i32(-1);
      }
      expect(encoded((w) => encodeListOffsetsResponse(w, version, 3, topics))).toEqual(e.frame());
    }
  });

  test("CreateTopics v0-4 and DeleteTopics v0-3", () => {
    const results = [{ name: "t", errorCode: 36, errorMessage: "exists" }];
    for (const version of [0, 1, 2, 3, 4]) {
      const e = new Expect().i32(8);
      if (version >= 2) e.i32(0);
      e.i32(1).str("t").i16(36);
      if (version >= 1) e.str("exists");
      expect(encoded((w) => encodeCreateTopicsResponse(w, version, 8, results))).toEqual(e.frame());
    }
    for (const version of [0, 1, 2, 3]) {
      const e = new Expect().i32(8);
      if (version >= 1) e.i32(0);
      e.i32(1).str("t").i16(36);
      expect(encoded((w) => encodeDeleteTopicsResponse(w, version, 8, results))).toEqual(e.frame());
    }
  });

  test("Produce v0, v2, v5, v7, v8", () => {
    const topics = [
      {
        name: "t",
        partitions: [
          {
            index: 0,
            errorCode: 0,
            baseOffset: 40,
            logAppendTimeMs: -1,
            logStartOffset: 0,
            errorMessage: null,
          },
        ],
      },
    ];
    for (const version of [0, 1, 2, 3, 4, 5, 6, 7, 8]) {
      const e = new Expect().i32(6).i32(1).str("t").i32(1).i32(0).i16(0).i64(40);
      if (version >= 2) e.i64(-1);
      if (version >= 5) e.i64(0);
      if (version >= 8) e.i32(0).str(null);
      if (version >= 1) e.i32(0);
      expect(encoded((w) => encodeProduceResponse(w, version, 6, topics))).toEqual(e.frame());
    }
  });

  test("Fetch v0, v4, v5, v7, v11: records written from pieces, null records as −1", () => {
    const a = Uint8Array.of(1, 2, 3);
    const b = Uint8Array.of(4, 5);
    const response = {
      errorCode: 0,
      sessionId: 0,
      topics: [
        {
          topic: "t",
          partitions: [
            {
              partition: 0,
              errorCode: 0,
              highWatermark: 10,
              lastStableOffset: 10,
              logStartOffset: 2,
              records: [a, b],
            },
            {
              partition: 1,
              errorCode: 1,
              highWatermark: 0,
              lastStableOffset: 0,
              logStartOffset: 0,
              records: null,
            },
          ],
        },
      ],
    };
    for (const version of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]) {
      const e = new Expect().i32(4);
      if (version >= 1) e.i32(0);
      if (version >= 7) e.i16(0).i32(0);
      e.i32(1).str("t").i32(2);
      for (const [index, error, hw, start, records] of [
        [0, 0, 10, 2, [1, 2, 3, 4, 5]],
        [1, 1, 0, 0, null],
      ] as const) {
        e.i32(index).i16(error).i64(hw);
        if (version >= 4) e.i64(hw);
        if (version >= 5) e.i64(start);
        if (version >= 4) e.i32(0);
        if (version >= 11) e.i32(-1);
        if (records === null) e.i32(-1);
        else e.i32(records.length).raw(records);
      }
      expect(encoded((w) => encodeFetchResponse(w, version, 4, response))).toEqual(e.frame());
    }
  });

  test("FindCoordinator v0-2 and InitProducerId v0-4", () => {
    const coordinator = { errorCode: 0, errorMessage: null, nodeId: 1, host: "h", port: 9092 };
    expect(encoded((w) => encodeFindCoordinatorResponse(w, 0, 2, coordinator))).toEqual(
      new Expect().i32(2).i16(0).i32(1).str("h").i32(9092).frame(),
    );
    for (const version of [1, 2]) {
      expect(encoded((w) => encodeFindCoordinatorResponse(w, version, 2, coordinator))).toEqual(
        new Expect().i32(2).i32(0).i16(0).str(null).i32(1).str("h").i32(9092).frame(),
      );
    }
    for (const version of [0, 1]) {
      expect(
        encoded((w) =>
          encodeInitProducerIdResponse(w, version, 2, { errorCode: 35, producerId: -1, producerEpoch: -1 }),
        ),
      ).toEqual(new Expect().i32(2).i32(0).i16(35).i64(-1).i16(-1).frame());
    }
    // Flexible from v2: response header v1 (a tag buffer after the correlation id), tags at the end.
    for (const version of [2, 3, 4]) {
      expect(
        encoded((w) =>
          encodeInitProducerIdResponse(w, version, 2, { errorCode: 0, producerId: 1000, producerEpoch: 0 }),
        ),
      ).toEqual(new Expect().i32(2).uvarint(0).i32(0).i16(0).i64(1000).i16(0).uvarint(0).frame());
    }
  });

  test("the codec's version table ends every API at its last non-flexible version but ApiVersions, DescribeCluster, InitProducerId, ListOffsets, the group APIs, DescribeLogDirs and ElectLeaders", () => {
    expect(CODEC_VERSIONS).toEqual({
      0: { min: 0, max: 8 },
      1: { min: 0, max: 11 },
      2: { min: 0, max: 10 },
      3: { min: 0, max: 8 },
      8: { min: 0, max: 8 },
      9: { min: 0, max: 7 },
      10: { min: 0, max: 3 },
      11: { min: 0, max: 9 },
      12: { min: 0, max: 4 },
      13: { min: 0, max: 5 },
      14: { min: 0, max: 5 },
      15: { min: 0, max: 6 },
      16: { min: 0, max: 5 },
      18: { min: 0, max: 4 },
      19: { min: 0, max: 4 },
      20: { min: 0, max: 3 },
      21: { min: 0, max: 1 },
      22: { min: 0, max: 4 },
      37: { min: 0, max: 1 },
      44: { min: 0, max: 0 },
      33: { min: 0, max: 1 },
      23: { min: 0, max: 3 },
      32: { min: 0, max: 3 },
      42: { min: 0, max: 1 },
      47: { min: 0, max: 0 },
      60: { min: 0, max: 1 },
      17: { min: 0, max: 1 },
      36: { min: 0, max: 1 },
      29: { min: 0, max: 1 },
      30: { min: 0, max: 1 },
      31: { min: 0, max: 1 },
      35: { min: 0, max: 4 },
      43: { min: 0, max: 2 },
    });
    for (const [key, range] of Object.entries(CODEC_VERSIONS)) {
      const apiKey = Number(key) as KafkaApiKey;
      const flexibleMax = requestHeaderVersion(apiKey, range.max) === 2;
      // DescribeCluster has no non-flexible version. InitProducerId: librdkafka ≥ 1.x sends v2+
      // (flexible) when advertised, and the Java client bumps an idempotent producer's epoch only
      // through v3+. ListOffsets: the Java client and kafka-python ask for the largest timestamp
      // (KIP-734) only at v7+, the Java client for earliest local and latest tiered at v8+ and v9+. DescribeLogDirs: v4 carries the volume sizes kafka-log-dirs.sh prints.
      // ElectLeaders: the Java AdminClient's newest, v2, as for DescribeLogDirs. DescribeGroups:
      // v6 answers an unknown group GROUP_ID_NOT_FOUND, as Kafka 4.x answers the Java client.
      // ListGroups: v4's states filter is what `kafka-consumer-groups.sh --list --state` needs.
      // The classic group APIs: the versions the Java client 4.x and franz-go pick against Kafka
      // (JoinGroup 9, SyncGroup 5, Heartbeat 4, LeaveGroup 5, OffsetCommit 8, OffsetFetch 7,
      // FindCoordinator 3), since 2026-12-03.
      expect([apiKey, flexibleMax]).toEqual([
        apiKey,
        apiKey === KAFKA_API.API_VERSIONS ||
          apiKey === KAFKA_API.JOIN_GROUP ||
          apiKey === KAFKA_API.SYNC_GROUP ||
          apiKey === KAFKA_API.HEARTBEAT ||
          apiKey === KAFKA_API.LEAVE_GROUP ||
          apiKey === KAFKA_API.OFFSET_COMMIT ||
          apiKey === KAFKA_API.OFFSET_FETCH ||
          apiKey === KAFKA_API.FIND_COORDINATOR ||
          apiKey === KAFKA_API.DESCRIBE_GROUPS ||
          apiKey === KAFKA_API.LIST_GROUPS ||
          apiKey === KAFKA_API.DESCRIBE_CLUSTER ||
          apiKey === KAFKA_API.INIT_PRODUCER_ID ||
          apiKey === KAFKA_API.LIST_OFFSETS ||
          apiKey === KAFKA_API.DESCRIBE_LOG_DIRS ||
          apiKey === KAFKA_API.ELECT_LEADERS,
      ]);
    }
  });
});

describe("static membership fields (KIP-345)", () => {
  const request = (apiKey: number, version: number) => new Expect().i16(apiKey).i16(version).i32(1).str("c");

  test("JoinGroup v5, SyncGroup v3, Heartbeat v3, OffsetCommit v7 and LeaveGroup v3 carry group_instance_id", () => {
    const join = request(11, 5).str("g").i32(6000).i32(9000).str("").str("i-1").str("consumer");
    join.i32(1).str("range").i32(2).raw([7, 8]);
    expect(decode(join.body()).body).toMatchObject({
      memberId: "",
      groupInstanceId: "i-1",
      rebalanceTimeoutMs: 9000,
    });
    const sync = request(14, 3).str("g").i32(4).str("m").str("i-1").i32(0);
    expect(decode(sync.body()).body).toMatchObject({
      memberId: "m",
      groupInstanceId: "i-1",
      assignments: [],
    });
    const beat = request(12, 3).str("g").i32(4).str("m").str(null);
    expect(decode(beat.body()).body).toEqual({
      groupId: "g",
      generationId: 4,
      memberId: "m",
      groupInstanceId: null,
    });
    const commit = request(8, 7).str("g").i32(4).str("m").str("i-1").i32(0);
    expect(decode(commit.body()).body).toMatchObject({ memberId: "m", groupInstanceId: "i-1", topics: [] });
    // LeaveGroup v3: a member by id, and one by instance id alone (member id ""), as an admin sends it.
    const leave = request(13, 3).str("g").i32(2).str("m").str(null).str("").str("i-1");
    expect(decode(leave.body()).body).toEqual({
      groupId: "g",
      members: [
        { memberId: "m", groupInstanceId: null },
        { memberId: "", groupInstanceId: "i-1" },
      ],
    });
    expect(decode(request(13, 1).str("g").str("m").body()).body).toEqual({
      groupId: "g",
      members: [{ memberId: "m", groupInstanceId: null }],
    });
  });

  test("JoinGroup v5, LeaveGroup v3 and DescribeGroups v4 answers carry each member's instance id", () => {
    const members = [
      { memberId: "i-1-x", groupInstanceId: "i-1", metadata: Uint8Array.of(1) },
      { memberId: "c-y", groupInstanceId: null, metadata: Uint8Array.of(2) },
    ];
    const join = {
      errorCode: 0,
      generationId: 3,
      protocolName: "range",
      protocolType: "consumer",
      leader: "i-1-x",
      skipAssignment: true,
      memberId: "i-1-x",
      members,
    };
    const e = new Expect().i32(5).i32(0).i16(0).i32(3).str("range").str("i-1-x").str("i-1-x").i32(2);
    e.str("i-1-x").str("i-1").i32(1).i8(1).str("c-y").str(null).i32(1).i8(2);
    expect(encoded((w) => encodeJoinGroupResponse(w, 5, 5, join))).toEqual(e.frame());
    // v9 (flexible: header v1 with its tag buffer, compact strings, tag buffers; v7's protocol
    // type; v9's skip_assignment), byte by byte from JoinGroupResponse.json of kafka-clients 4.1.1.
    const e9 = new Expect().i32(5).uvarint(0).i32(0).i16(0).i32(3).cstr("consumer").cstr("range");
    e9.cstr("i-1-x").i8(1).cstr("i-1-x").uvarint(3);
    e9.cstr("i-1-x").cstr("i-1").uvarint(2).i8(1).uvarint(0);
    e9.cstr("c-y").cstr(null).uvarint(2).i8(2).uvarint(0).uvarint(0);
    expect(encoded((w) => encodeJoinGroupResponse(w, 9, 5, join))).toEqual(e9.frame());
    // v7+ with an error: protocol type and name are null.
    const failed = {
      ...join,
      errorCode: 25,
      generationId: -1,
      protocolName: "",
      protocolType: "",
      leader: "",
      skipAssignment: false,
      members: [],
    };
    const e7 = new Expect()
      .i32(5)
      .uvarint(0)
      .i32(0)
      .i16(25)
      .i32(-1)
      .cstr(null)
      .cstr(null)
      .cstr("")
      .cstr("i-1-x")
      .uvarint(1)
      .uvarint(0);
    expect(encoded((w) => encodeJoinGroupResponse(w, 7, 5, failed))).toEqual(e7.frame());
    const leave = new Expect().i32(6).i32(0).i16(0).i32(1).str("").str("i-1").i16(82);
    expect(
      encoded((w) =>
        encodeLeaveGroupResponse(w, 3, 6, {
          errorCode: 0,
          members: [{ memberId: "", groupInstanceId: "i-1", errorCode: 82 }],
        }),
      ),
    ).toEqual(leave.frame());
    const group = {
      errorCode: 0,
      errorMessage: null,
      groupId: "g",
      state: "Stable",
      protocolType: "consumer",
      protocolData: "range",
      members: [
        {
          memberId: "i-1-x",
          groupInstanceId: "i-1",
          clientId: "c",
          clientHost: "/127.0.0.1",
          metadata: Uint8Array.of(1),
          assignment: Uint8Array.of(3),
        },
      ],
    };
    for (const version of [3, 4]) {
      const d = new Expect().i32(7).i32(0).i32(1).i16(0).str("g").str("Stable").str("consumer").str("range");
      d.i32(1).str("i-1-x");
      if (version >= 4) d.str("i-1");
      d.str("c").str("/127.0.0.1").i32(1).i8(1).i32(1).i8(3).i32(-2147483648);
      expect(encoded((w) => encodeDescribeGroupsResponse(w, version, 7, [group]))).toEqual(d.frame());
    }
  });

  test("DescribeGroups v5-6 (flexible): compact fields and tag buffers; v6 adds each group's error message", () => {
    const request = requestHeader(KAFKA_API.DESCRIBE_GROUPS, 5)
      .uvarint(3)
      .cstr("a")
      .cstr("b")
      .i8(1)
      .uvarint(0);
    expect(decode(request.body()).body).toEqual({ groups: ["a", "b"] });
    const group = {
      errorCode: 0,
      errorMessage: null,
      groupId: "g",
      state: "Stable",
      protocolType: "consumer",
      protocolData: "range",
      members: [
        {
          memberId: "m",
          groupInstanceId: null,
          clientId: "c",
          clientHost: "/127.0.0.1",
          metadata: Uint8Array.of(1),
          assignment: Uint8Array.of(3, 4),
        },
      ],
    };
    const unknown = {
      errorCode: 69,
      errorMessage: "Group x not found.",
      groupId: "x",
      state: "Dead",
      protocolType: "",
      protocolData: "",
      members: [],
    };
    for (const version of [5, 6]) {
      // Response header v1: correlation id and a tag buffer.
      const d = new Expect().i32(7).uvarint(0).i32(0).uvarint(3);
      d.i16(0);
      if (version >= 6) d.cstr(null);
      d.cstr("g").cstr("Stable").cstr("consumer").cstr("range").uvarint(2);
      d.cstr("m").cstr(null).cstr("c").cstr("/127.0.0.1").uvarint(2).i8(1).uvarint(3).i8(3).i8(4).uvarint(0);
      d.i32(-2147483648).uvarint(0);
      d.i16(69);
      if (version >= 6) d.cstr("Group x not found.");
      d.cstr("x").cstr("Dead").cstr("").cstr("").uvarint(1).i32(-2147483648).uvarint(0);
      d.uvarint(0);
      expect(encoded((w) => encodeDescribeGroupsResponse(w, version, 7, [group, unknown]))).toEqual(
        d.frame(),
      );
    }
  });

  test("ListGroups v3-5 (flexible): v4 adds the states filter and each group's state, v5 the types filter and type", () => {
    expect(decode(requestHeader(KAFKA_API.LIST_GROUPS, 2).body()).body).toEqual({
      statesFilter: [],
      typesFilter: [],
    });
    expect(decode(requestHeader(KAFKA_API.LIST_GROUPS, 3).uvarint(0).body()).body).toEqual({
      statesFilter: [],
      typesFilter: [],
    });
    const v4 = requestHeader(KAFKA_API.LIST_GROUPS, 4).uvarint(3).cstr("Empty").cstr("stable").uvarint(0);
    expect(decode(v4.body()).body).toEqual({ statesFilter: ["Empty", "stable"], typesFilter: [] });
    const v5 = requestHeader(KAFKA_API.LIST_GROUPS, 5).uvarint(1).uvarint(2).cstr("classic").uvarint(0);
    expect(decode(v5.body()).body).toEqual({ statesFilter: [], typesFilter: ["classic"] });
    const groups = [{ groupId: "g", protocolType: "consumer", state: "Empty" }];
    const v2 = new Expect().i32(7).i32(0).i16(0).i32(1).str("g").str("consumer");
    expect(encoded((w) => encodeListGroupsResponse(w, 2, 7, groups))).toEqual(v2.frame());
    for (const version of [3, 4, 5]) {
      // Response header v1: correlation id and a tag buffer.
      const d = new Expect().i32(7).uvarint(0).i32(0).i16(0).uvarint(2).cstr("g").cstr("consumer");
      if (version >= 4) d.cstr("Empty");
      if (version >= 5) d.cstr("classic");
      d.uvarint(0).uvarint(0);
      expect(encoded((w) => encodeListGroupsResponse(w, version, 7, groups))).toEqual(d.frame());
    }
  });
});

/** A request's header (v1, or v2 with its tag buffer for a flexible version), the body to follow. */
function requestHeader(apiKey: KafkaApiKey, version: number): Expect {
  const header = new Expect().i16(apiKey).i16(version).i32(3).str("c");
  return requestHeaderVersion(apiKey, version) === 2 ? header.uvarint(0) : header;
}

describe("DescribeLogDirs (35)", () => {
  const request = (version: number) => requestHeader(KAFKA_API.DESCRIBE_LOG_DIRS, version);

  test("requests: null topics (every topic), and topics with partitions, in v1 and in the flexible v2-4", () => {
    expect(decode(request(1).i32(-1).body()).body).toEqual({ topics: null });
    expect(decode(request(0).i32(1).str("t").i32(2).i32(0).i32(3).body()).body).toEqual({
      topics: [{ topic: "t", partitions: [0, 3] }],
    });
    expect(decode(request(4).uvarint(0).uvarint(0).body()).body).toEqual({ topics: null });
    const flexible = request(2).uvarint(2).cstr("t").uvarint(2).i32(1).uvarint(0).uvarint(0);
    expect(decode(flexible.body()).body).toEqual({ topics: [{ topic: "t", partitions: [1] }] });
    // A count the bytes left cannot hold is refused before anything is allocated.
    expect(() => decode(request(1).i32(1_000_000).body())).toThrow(KafkaProtocolError);
  });

  test("responses: v1, v3 (top-level error code) and v4 (flexible, with the volume sizes)", () => {
    const results = [
      {
        errorCode: 0,
        logDir: "/d",
        topics: [{ name: "t", partitions: [{ partition: 0, sizeBytes: 4096, offsetLag: 2 }] }],
        totalBytes: 1000,
        usableBytes: 500,
      },
    ];
    expect(encoded((w) => encodeDescribeLogDirsResponse(w, 1, 7, 0, results))).toEqual(
      new Expect()
        .i32(7)
        .i32(0)
        .i32(1)
        .i16(0)
        .str("/d")
        .i32(1)
        .str("t")
        .i32(1)
        .i32(0)
        .i64(4096)
        .i64(2)
        .i8(0)
        .frame(),
    );
    expect(encoded((w) => encodeDescribeLogDirsResponse(w, 3, 7, 31, []))).toEqual(
      new Expect().i32(7).uvarint(0).i32(0).i16(31).uvarint(1).uvarint(0).frame(),
    );
    const v4 = new Expect().i32(7).uvarint(0).i32(0).i16(0).uvarint(2).i16(0).cstr("/d").uvarint(2).cstr("t");
    v4.uvarint(2)
      .i32(0)
      .i64(4096)
      .i64(2)
      .i8(0)
      .uvarint(0)
      .uvarint(0)
      .i64(1000)
      .i64(500)
      .uvarint(0)
      .uvarint(0);
    expect(encoded((w) => encodeDescribeLogDirsResponse(w, 4, 7, 0, results))).toEqual(v4.frame());
  });
});

describe("ElectLeaders (43)", () => {
  const request = (version: number) => requestHeader(KAFKA_API.ELECT_LEADERS, version);

  test("requests: v0 (preferred, no type), v1 with a type and every partition (null), v2 flexible", () => {
    expect(decode(request(0).i32(1).str("t").i32(1).i32(2).i32(60_000).body()).body).toEqual({
      electionType: 0,
      topics: [{ topic: "t", partitions: [2] }],
      timeoutMs: 60_000,
    });
    expect(decode(request(1).i8(1).i32(-1).i32(5_000).body()).body).toEqual({
      electionType: 1,
      topics: null,
      timeoutMs: 5_000,
    });
    const flexible = request(2)
      .i8(0)
      .uvarint(2)
      .cstr("t")
      .uvarint(3)
      .i32(0)
      .i32(1)
      .uvarint(0)
      .i32(100)
      .uvarint(0);
    expect(decode(flexible.body()).body).toEqual({
      electionType: 0,
      topics: [{ topic: "t", partitions: [0, 1] }],
      timeoutMs: 100,
    });
    expect(() => decode(request(1).i8(0).i32(1_000_000).i32(0).body())).toThrow(KafkaProtocolError);
  });

  test("responses: v0 (no top-level error), v1, v2 flexible", () => {
    const results = [{ topic: "t", partitions: [{ partition: 1, errorCode: 84, errorMessage: "m" }] }];
    expect(encoded((w) => encodeElectLeadersResponse(w, 0, 7, 0, results))).toEqual(
      new Expect().i32(7).i32(0).i32(1).str("t").i32(1).i32(1).i16(84).str("m").frame(),
    );
    expect(encoded((w) => encodeElectLeadersResponse(w, 1, 7, 31, []))).toEqual(
      new Expect().i32(7).i32(0).i16(31).i32(0).frame(),
    );
    const v2 = new Expect().i32(7).uvarint(0).i32(0).i16(0).uvarint(2).cstr("t").uvarint(2);
    v2.i32(1).i16(84).cstr("m").uvarint(0).uvarint(0).uvarint(0);
    expect(encoded((w) => encodeElectLeadersResponse(w, 2, 7, 0, results))).toEqual(v2.frame());
  });
});
