/**
 * KafkaHandler over bytes, against a real Broker on a temporary data directory: request frames in,
 * response frames (or a close with its reason) out. The client-level proofs are in listener.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { ADVERTISED_VERSIONS, KafkaHandler, type KafkaOutcome } from "../../src/kafka/handler.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { Expect } from "./bytes.ts";
import captured from "./fixtures/captured-requests.json";

let dir: TempDir;
let broker: Broker;
let handler: KafkaHandler;

beforeEach(() => {
  dir = tempDir("kafka-handler");
  broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  handler = new KafkaHandler(broker, { advertisedHost: "kafka.example", advertisedPort: 19092 });
});

afterEach(async () => {
  // Its group coordinator first: a member's session timer that fired after the broker closed threw
  // ClosedError into whichever test ran 10 s later.
  handler.stop();
  await broker.close();
  dir[Symbol.dispose]();
});

function header(apiKey: number, version: number, correlationId = 7): Expect {
  return new Expect().i16(apiKey).i16(version).i32(correlationId).str("test");
}

/** The response body after the 4-byte size and the correlation id (header v0). */
async function answer(request: Expect): Promise<KafkaReader> {
  const outcome = await handler.handle(request.body());
  if (outcome.kind !== "respond") throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  const reader = new KafkaReader(outcome.bytes);
  expect(reader.int32("size")).toBe(outcome.bytes.length - 4);
  expect(reader.int32("correlation_id")).toBe(7);
  return reader;
}

function apiList(reader: KafkaReader, compact: boolean): number[][] {
  const count = compact ? reader.uvarint("n") - 1 : reader.int32("n");
  const list: number[][] = [];
  for (let i = 0; i < count; i++) {
    list.push([reader.int16("key"), reader.int16("min"), reader.int16("max")]);
    if (compact) reader.uvarint("tags");
  }
  return list;
}

const ADVERTISED = [...ADVERTISED_VERSIONS].map(([key, { min, max }]) => [key, min, max]);

describe("ApiVersions", () => {
  test("v0-v4 list the advertised APIs (v3 and v4 flexible: header v2 in, compact array out)", async () => {
    for (const version of [0, 1, 2]) {
      const reader = await answer(header(18, version));
      expect(reader.int16("error")).toBe(0);
      expect(apiList(reader, false)).toEqual(ADVERTISED);
      if (version >= 1) expect(reader.int32("throttle")).toBe(0);
      reader.expectEnd("response");
    }
    // v4 as Sarama 1.61 sends it with Version ≥ V3_9_0_0: v3's layout.
    for (const version of [3, 4]) {
      const request = header(18, version).uvarint(0).cstr("librdkafka").cstr("2.0.2").uvarint(0);
      const reader = await answer(request);
      expect(reader.int16("error")).toBe(0);
      expect(apiList(reader, true)).toEqual(ADVERTISED);
      expect(reader.int32("throttle")).toBe(0);
      expect(reader.uvarint("tags")).toBe(0);
      reader.expectEnd("response");
    }
  });

  test("a version above 4 gets UNSUPPORTED_VERSION in the v0 layout with the list (KIP-511)", async () => {
    // A v5 body is unknown to booblik; it is never read.
    const reader = await answer(header(18, 5).uvarint(0).raw([1, 2, 3]));
    expect(reader.int16("error")).toBe(KAFKA_ERROR.UNSUPPORTED_VERSION);
    expect(apiList(reader, false)).toEqual(ADVERTISED);
    reader.expectEnd("response");
  });

  test("the advertised ranges: Produce 0-8 (∋ 3) and Fetch 0-11 (∋ 4) for librdkafka's MsgVer2, Metadata 0-8, ListOffsets 0-10, CreateTopics 0-4, DeleteTopics 0-3, the group APIs from 0 (librdkafka's BrokerBalancedConsumer needs JoinGroup 0 and OffsetFetch 1) to JoinGroup 9, SyncGroup 5, Heartbeat 4, LeaveGroup 5, OffsetCommit 8, OffsetFetch 7 and FindCoordinator 3, DescribeGroups up to 6, ListGroups up to 5, CreatePartitions 0-1, IncrementalAlterConfigs 0, AlterConfigs 0-1, DescribeConfigs 0-3, DescribeCluster 0-1, DeleteGroups 0-1, OffsetDelete 0, OffsetForLeaderEpoch 0-3, DeleteRecords 0-1, DescribeLogDirs 0-4, ElectLeaders 0-2, InitProducerId 0-4, DescribeAcls, CreateAcls and DeleteAcls 0-1, SaslHandshake 0-1, SaslAuthenticate 0-1", () => {
    expect(ADVERTISED).toEqual([
      [18, 0, 4],
      [0, 0, 8],
      [1, 0, 11],
      [3, 0, 8],
      [2, 0, 10],
      [19, 0, 4],
      [20, 0, 3],
      [10, 0, 3],
      [11, 0, 9],
      [14, 0, 5],
      [12, 0, 4],
      [13, 0, 5],
      [8, 0, 8],
      [9, 0, 7],
      [16, 0, 5],
      [15, 0, 6],
      [37, 0, 1],
      [44, 0, 0],
      [33, 0, 1],
      [32, 0, 3],
      [60, 0, 1],
      [42, 0, 1],
      [47, 0, 0],
      [23, 0, 3],
      [21, 0, 1],
      [35, 0, 4],
      [43, 0, 2],
      [22, 0, 4],
      [29, 0, 1],
      [30, 0, 1],
      [31, 0, 1],
      [17, 0, 1],
      [36, 0, 1],
    ]);
  });
});

describe("requests booblik does not answer", () => {
  const close = async (request: Expect): Promise<string> => {
    const outcome: KafkaOutcome = await handler.handle(request.body());
    if (outcome.kind !== "close") throw new Error(`expected a close, got ${outcome.kind}`);
    return outcome.reason;
  };

  test("an unknown API key closes the connection, naming it and what is served", async () => {
    expect(await close(header(9999, 0))).toStartWith(
      "unknown API key 9999 (version 0); booblik serves API_VERSIONS 0-4",
    );
  });

  test("a known API outside its advertised versions, or not served yet, closes with the reason", async () => {
    expect(await close(header(3, 9))).toBe(
      "METADATA (API key 3) version 9 is not supported: served in versions 0-8",
    );
    expect(await close(header(0, 9))).toBe(
      "PRODUCE (API key 0) version 9 is not supported: served in versions 0-8",
    );
    expect(await close(header(11, 10))).toBe(
      "JOIN_GROUP (API key 11) version 10 is not supported: served in versions 0-9",
    );
    expect(await close(header(9, 8))).toBe(
      "OFFSET_FETCH (API key 9) version 8 is not supported: served in versions 0-7",
    );
  });

  test("a malformed request closes the connection with the field and byte position", async () => {
    expect(await close(header(3, 4).i32(5))).toBe(
      "malformed METADATA v4 request: topics at byte 14 counts 5 elements of at least 2 bytes, but only 0 bytes are left",
    );
    expect(await close(new Expect().i16(3).i16(1))).toBe(
      "a request of 4 bytes cannot hold the 8-byte header",
    );
  });
});

describe("topics", () => {
  const create = (version: number, topics: Expect[], validateOnly = false): Expect => {
    const request = header(19, version).i32(topics.length);
    for (const topic of topics) request.raw(topic.out);
    request.i32(5000);
    if (version >= 1) request.i8(validateOnly ? 1 : 0);
    return request;
  };
  const creatable = (
    name: string,
    partitions: number,
    replication = -1,
    configs: [string, string | null][] = [],
  ) => {
    const topic = new Expect().str(name).i32(partitions).i16(replication).i32(0).i32(configs.length);
    for (const [key, value] of configs) topic.str(key).str(value);
    return topic;
  };
  const results = (reader: KafkaReader, version: number) => {
    if (version >= 2) expect(reader.int32("throttle")).toBe(0);
    const count = reader.int32("n");
    const out: [string, number, string | null][] = [];
    for (let i = 0; i < count; i++) {
      out.push([
        reader.string("name"),
        reader.int16("error"),
        version >= 1 ? reader.nullableString("msg") : null,
      ]);
    }
    reader.expectEnd("response");
    return out;
  };

  test("CreateTopics creates with Kafka config names; single-node and config refusals have their codes", async () => {
    const reader = await answer(
      create(4, [
        creatable("a", 3, 1, [
          ["retention.ms", "60000"],
          ["retention.bytes", "-1"],
          ["booblik.durability", "force"],
          ["message.timestamp.type", "LogAppendTime"],
        ]),
        creatable("b", -1),
        creatable("a", 1),
        creatable("r3", 1, 3),
        creatable("p0", 0),
        creatable("cfg", 1, -1, [["min.compaction.lag.ms", "0"]]),
        creatable("bad/name", 1),
        creatable("seg", 1, -1, [["segment.bytes", "12"]]),
        creatable("ts", 1, -1, [["message.timestamp.type", "WallClock"]]),
        creatable("cc", 1, -1, [["cleanup.policy", "delete, compact"]]),
        creatable("none", 1, -1, [["cleanup.policy", ""]]),
      ]),
    );
    const out = results(reader, 4);
    expect(out.map(([name, code]) => [name, code])).toEqual([
      ["a", 0],
      ["b", 0],
      ["a", KAFKA_ERROR.INVALID_REQUEST],
      ["r3", KAFKA_ERROR.INVALID_REPLICATION_FACTOR],
      ["p0", KAFKA_ERROR.INVALID_PARTITIONS],
      ["cfg", KAFKA_ERROR.INVALID_CONFIG],
      ["bad/name", KAFKA_ERROR.INVALID_TOPIC_EXCEPTION],
      ["seg", KAFKA_ERROR.INVALID_CONFIG],
      ["ts", KAFKA_ERROR.INVALID_CONFIG],
      ["cc", 0],
      ["none", KAFKA_ERROR.INVALID_CONFIG],
    ]);
    expect(out[3]![2]).toBe("booblik is a single broker: replication_factor must be 1 (or -1), got 3");
    expect(out[5]![2]).toStartWith(
      'topic config "min.compaction.lag.ms" is not supported; booblik knows retention.ms',
    );
    // Kafka's list in any order, as booblik's one value; an empty list (no cleanup at all) refused.
    expect(broker.describeTopic("cc").config.cleanupPolicy).toBe("compact,delete");
    expect(out[10]![2]).toBe('cleanup.policy must be delete, compact or compact,delete, got ""');
    expect(out[7]![2]).toStartWith("segmentBytes must be an integer in [256, ");
    expect(out[8]![2]).toBe('timestampType must be one of CreateTime, LogAppendTime, got "WallClock"');
    const a = broker.describeTopic("a");
    expect([
      a.partitions.length,
      a.config.retentionMs,
      a.config.retentionBytes,
      a.config.durability,
      a.config.timestampType,
    ]).toEqual([3, 60_000, null, "force", "LogAppendTime"]);
    expect(broker.describeTopic("b").partitions.length).toBe(broker.topicDefaults.partitions);
    expect(broker.listTopics().map((topic) => topic.name)).toEqual(["a", "b", "cc"]);

    const again = results(await answer(create(0, [creatable("a", 1)])), 0);
    expect(again).toEqual([["a", KAFKA_ERROR.TOPIC_ALREADY_EXISTS, null]]);
  });

  test("CreateTopics validate_only checks without creating", async () => {
    const out = results(await answer(create(1, [creatable("v", 2), creatable("w", 2, 2)], true)), 1);
    expect(out).toEqual([
      ["v", 0, null],
      [
        "w",
        KAFKA_ERROR.INVALID_REPLICATION_FACTOR,
        "booblik is a single broker: replication_factor must be 1 (or -1), got 2",
      ],
    ]);
    expect(broker.listTopics()).toEqual([]);
  });

  test("DeleteTopics deletes and names unknown topics", async () => {
    broker.createTopic("gone", { partitions: 2 });
    const reader = await answer(header(20, 1).i32(2).str("gone").str("never").i32(5000));
    expect(reader.int32("throttle")).toBe(0);
    expect(reader.int32("n")).toBe(2);
    expect([reader.string("a"), reader.int16("e"), reader.string("b"), reader.int16("e")]).toEqual([
      "gone",
      0,
      "never",
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    ]);
    expect(broker.listTopics()).toEqual([]);
  });
});

describe("Metadata and ListOffsets", () => {
  test("Metadata v4 names this node as the advertised listener, leader of every partition", async () => {
    broker.createTopic("m", { partitions: 2 });
    const reader = await answer(header(3, 4).i32(3).str("m").str("nope").str("bad name").i8(0));
    expect(reader.int32("throttle")).toBe(0);
    expect([reader.int32("n"), reader.int32("node"), reader.string("host"), reader.int32("port")]).toEqual([
      1,
      1,
      "kafka.example",
      19092,
    ]);
    expect(reader.nullableString("rack")).toBeNull();
    expect([reader.nullableString("cluster"), reader.int32("controller")]).toEqual(["booblik", 1]);
    expect(reader.int32("topics")).toBe(3);
    expect([
      reader.int16("e"),
      reader.string("n"),
      reader.boolean("internal"),
      reader.int32("parts"),
    ]).toEqual([0, "m", false, 2]);
    for (const index of [0, 1]) {
      expect([reader.int16("e"), reader.int32("i"), reader.int32("leader")]).toEqual([0, index, 1]);
      expect([reader.int32("rn"), reader.int32("r"), reader.int32("in"), reader.int32("i")]).toEqual([
        1, 1, 1, 1,
      ]);
    }
    // Unknown topics are not auto-created: error 3, whatever allow_auto_topic_creation says.
    expect([reader.int16("e"), reader.string("n"), reader.boolean("i"), reader.int32("p")]).toEqual([
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
      "nope",
      false,
      0,
    ]);
    expect([reader.int16("e"), reader.string("n")]).toEqual([
      KAFKA_ERROR.INVALID_TOPIC_EXCEPTION,
      "bad name",
    ]);
    expect(broker.listTopics().map((topic) => topic.name)).toEqual(["m"]);
  });

  test("Metadata v1 with a null topic array lists every topic; v0 with an empty one too", async () => {
    broker.createTopic("x");
    broker.createTopic("y");
    for (const version of [0, 1]) {
      const reader = await answer(header(3, version).i32(version === 0 ? 0 : -1));
      reader.int32("brokers");
      reader.int32("node");
      reader.string("host");
      reader.int32("port");
      if (version >= 1) {
        reader.nullableString("rack");
        reader.int32("controller");
      }
      const names: string[] = [];
      const count = reader.int32("topics");
      for (let i = 0; i < count; i++) {
        reader.int16("e");
        names.push(reader.string("name"));
        if (version >= 1) reader.boolean("internal");
        const partitions = reader.int32("p");
        for (let p = 0; p < partitions; p++) {
          reader.int16("e");
          reader.int32("i");
          reader.int32("l");
          // replica_nodes and isr_nodes: [1] each
          expect([reader.int32("rn"), reader.int32("r"), reader.int32("in"), reader.int32("i")]).toEqual([
            1, 1, 1, 1,
          ]);
        }
      }
      reader.expectEnd("response");
      expect(names).toEqual(["x", "y"]);
    }
  });

  test("DescribeLogDirs: null topics lists every partition in the data directory, the internal offsets topic included, with the sizes the broker reports", async () => {
    broker.createTopic("b", { partitions: 1 });
    broker.createTopic("a", { partitions: 2 });
    broker.ensureOffsetsTopic();
    await broker.produce("a", 1, [
      { key: null, value: new TextEncoder().encode("x".repeat(50)), timestamp: 1 },
    ]);
    const reader = await answer(header(35, 1).i32(-1));
    expect([reader.int32("throttle"), reader.int32("results"), reader.int16("error")]).toEqual([0, 1, 0]);
    expect(reader.string("log dir")).toBe(broker.dataDir);
    const listed: [string, number, number, number, boolean][] = [];
    for (let t = reader.int32("topics"); t > 0; t--) {
      const name = reader.string("name");
      for (let p = reader.int32("partitions"); p > 0; p--)
        listed.push([
          name,
          reader.int32("p"),
          reader.int64("size"),
          reader.int64("lag"),
          reader.boolean("future"),
        ]);
    }
    reader.expectEnd("response");
    const size = (topic: string, partition: number) =>
      broker.describeTopic(topic).partitions[partition]!.sizeBytes;
    expect(listed).toEqual([
      ["__consumer_offsets", 0, size("__consumer_offsets", 0), 0, false],
      ["a", 0, size("a", 0), 0, false],
      ["a", 1, size("a", 1), 0, false],
      ["b", 0, size("b", 0), 0, false],
    ]);
    expect(size("a", 1)).toBeGreaterThan(size("a", 0));
  });

  test("DescribeLogDirs needs DESCRIBE on the cluster: without it no directory is answered (v3+: CLUSTER_AUTHORIZATION_FAILED, 31); ElectLeaders needs ALTER on it", async () => {
    using aclDir = tempDir("kafka-handler-acl");
    const guarded = Broker.open({ dataDir: aclDir.path, authorization: { superUsers: ["User:admin"] } });
    try {
      const acl = new KafkaHandler(guarded, { advertisedHost: "kafka.example", advertisedPort: 19092 });
      guarded.createTopic("t");
      const asked = async (version: number, user: string) => {
        const request = header(35, version);
        if (version >= 2) request.uvarint(0).uvarint(0).uvarint(0);
        else request.i32(-1);
        const outcome = await acl.handle(request.body(), "127.0.0.1", user);
        if (outcome.kind !== "respond") throw new Error(`expected a response, got ${outcome.kind}`);
        const reader = new KafkaReader(outcome.bytes);
        reader.int32("size");
        reader.int32("correlation_id");
        if (version >= 2) reader.uvarint("header tags");
        reader.int32("throttle");
        const error = version >= 3 ? reader.int16("error") : 0;
        const results = version >= 2 ? reader.uvarint("results") - 1 : reader.int32("results");
        return [error, results];
      };
      expect(await asked(3, "alice")).toEqual([KAFKA_ERROR.CLUSTER_AUTHORIZATION_FAILED, 0]);
      expect(await asked(1, "alice")).toEqual([0, 0]);
      expect(await asked(4, "admin")).toEqual([0, 1]);
      const elect = async (user: string) => {
        const request = header(43, 1).i8(0).i32(1).str("t").i32(1).i32(0).i32(1000);
        const outcome = await acl.handle(request.body(), "127.0.0.1", user);
        if (outcome.kind !== "respond") throw new Error(`expected a response, got ${outcome.kind}`);
        const reader = new KafkaReader(outcome.bytes);
        reader.int32("size");
        reader.int32("correlation_id");
        reader.int32("throttle");
        const top = reader.int16("error");
        reader.int32("topics");
        reader.string("topic");
        reader.int32("partitions");
        reader.int32("partition");
        return [top, reader.int16("partition error")];
      };
      expect(await elect("alice")).toEqual([
        KAFKA_ERROR.CLUSTER_AUTHORIZATION_FAILED,
        KAFKA_ERROR.CLUSTER_AUTHORIZATION_FAILED,
      ]);
      expect(await elect("admin")).toEqual([0, KAFKA_ERROR.ELECTION_NOT_NEEDED]);
    } finally {
      await guarded.close();
    }
  });

  test("ElectLeaders: named partitions need no election (84), unknown ones are 3, every partition (null) lists the topics with none; an unknown type is INVALID_REQUEST", async () => {
    broker.createTopic("t", { partitions: 2 });
    const results = (reader: KafkaReader) => {
      const rows: [string, number, number, string | null][] = [];
      for (let t = reader.int32("topics"); t > 0; t--) {
        const topic = reader.string("topic");
        const count = reader.int32("partitions");
        if (count === 0) rows.push([topic, -1, 0, null]);
        for (let p = 0; p < count; p++)
          rows.push([
            topic,
            reader.int32("partition"),
            reader.int16("error"),
            reader.nullableString("message"),
          ]);
      }
      reader.expectEnd("response");
      return rows;
    };
    const named = await answer(
      header(43, 1).i8(0).i32(2).str("t").i32(2).i32(1).i32(2).str("u").i32(1).i32(0).i32(1000),
    );
    expect([named.int32("throttle"), named.int16("error")]).toEqual([0, 0]);
    expect(results(named)).toEqual([
      ["t", 1, KAFKA_ERROR.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."],
      ["t", 2, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-2"],
      ["u", 0, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as u"],
    ]);
    const all = await answer(header(43, 0).i32(-1).i32(1000));
    expect(all.int32("throttle")).toBe(0);
    expect(results(all)).toEqual([["t", -1, 0, null]]);
    const unknownType = await answer(header(43, 1).i8(7).i32(1).str("t").i32(1).i32(0).i32(1000));
    expect([unknownType.int32("throttle"), unknownType.int16("error")]).toEqual([
      0,
      KAFKA_ERROR.INVALID_REQUEST,
    ]);
    expect(results(unknownType)).toEqual([["t", 0, KAFKA_ERROR.INVALID_REQUEST, "Unknown election type 7"]]);
  });

  test("ListOffsets: earliest (−2), latest (−1), by timestamp (first record at or after it), the largest timestamp (−3), earliest local (−4), latest tiered (−5), unknown partitions", async () => {
    broker.createTopic("o", { partitions: 1 });
    const at = (value: string, timestamp: number) => ({
      key: null,
      value: new TextEncoder().encode(value),
      timestamp,
    });
    await broker.produce("o", 0, [at("a", 1_000), at("b", 1_001), at("c", 1_002)]);
    await broker.produce("o", 0, [at("d", 5_000)]);
    await broker.produce("o", 0, [at("e", 4_000), at("f", 5_000)]);
    const asked: [number, number][] = [
      [0, -1],
      [0, -2],
      [9, -1],
      [0, 1_001],
      [0, 2_000],
      [0, 9_999],
      [0, -3],
      [0, -4],
      [0, -5],
      [9, -4],
      [0, -6],
    ];
    const request = header(2, 2).i32(-1).i8(1).i32(1).str("o").i32(asked.length);
    for (const [partition, timestamp] of asked) request.i32(partition).i64(timestamp);
    const reader = await answer(request);
    expect(reader.int32("throttle")).toBe(0);
    expect([reader.int32("topics"), reader.string("name"), reader.int32("partitions")]).toEqual([
      1,
      "o",
      asked.length,
    ]);
    const rows = asked.map(() => [
      reader.int32("p"),
      reader.int16("e"),
      reader.int64("timestamp"),
      reader.int64("offset"),
    ]);
    expect(rows).toEqual([
      [0, 0, -1, 6],
      [0, 0, -1, 0],
      [9, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, -1, -1],
      // Inside the first batch: the record itself, with its own timestamp.
      [0, 0, 1_001, 1],
      [0, 0, 5_000, 3],
      // Nothing at or after it: −1 and −1, as Kafka answers.
      [0, 0, -1, -1],
      // The largest timestamp (KIP-734): its first record, not the later one with the same time.
      [0, 0, 5_000, 3],
      // Earliest local (KIP-405): every record is local, so the log start; latest tiered (KIP-1005):
      // nothing was tiered, −1 and −1, as Kafka answers a log without tiered storage. Kafka's clients
      // ask for them from v8 and v9; like −3 they are answered at any version.
      [0, 0, -1, 0],
      [0, 0, -1, -1],
      [9, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, -1, -1],
      // Other negative values mean nothing.
      [0, KAFKA_ERROR.INVALID_REQUEST, -1, -1],
    ]);
    reader.expectEnd("response");
  });

  test("ListOffsets v7 (flexible: compact strings and arrays, tagged fields) answers the largest timestamp; an empty partition has none", async () => {
    broker.createTopic("m", { partitions: 2 });
    const at = (value: string, timestamp: number) => ({
      key: null,
      value: new TextEncoder().encode(value),
      timestamp,
    });
    await broker.produce("m", 0, [at("a", 7_000), at("b", 9_000), at("c", 8_000)]);
    // Request header v2 (client id, then tags), replica_id, isolation_level, one topic of three
    // partitions (partition, current_leader_epoch, timestamp, tags), tags.
    const request = header(2, 7).uvarint(0).i32(-1).i8(0).uvarint(2).cstr("m").uvarint(4);
    for (const [partition, timestamp] of [
      [0, -3],
      [1, -3],
      [0, 8_500],
    ] as const)
      request.i32(partition).i32(-1).i64(timestamp).uvarint(0);
    request.uvarint(0).uvarint(0);
    const reader = await answer(request);
    // Response header v1: its tags after the correlation id.
    expect(reader.uvarint("header tags")).toBe(0);
    expect(reader.int32("throttle")).toBe(0);
    expect([
      reader.uvarint("topics + 1"),
      reader.compactString("name"),
      reader.uvarint("partitions + 1"),
    ]).toEqual([2, "m", 4]);
    const rows = [0, 1, 2].map(() => {
      const row = [
        reader.int32("p"),
        reader.int16("e"),
        reader.int64("timestamp"),
        reader.int64("offset"),
        reader.int32("leader epoch"),
      ];
      expect(reader.uvarint("partition tags")).toBe(0);
      return row;
    });
    // By the largest timestamp and by 8,500 alike: offset 1 (9,000); leader epoch −1.
    expect(rows).toEqual([
      [0, 0, 9_000, 1, -1],
      [1, 0, -1, -1, -1],
      [0, 0, 9_000, 1, -1],
    ]);
    expect([reader.uvarint("topic tags"), reader.uvarint("tags")]).toEqual([0, 0]);
    reader.expectEnd("response");
  });

  test("ListOffsets v8-v10: earliest local (−4) is the log start, latest tiered (−5) is −1; v10's timeout_ms is read, and a request cut before it is refused", async () => {
    broker.createTopic("tiered", { partitions: 1 });
    const at = (value: string) => ({ key: null, value: new TextEncoder().encode(value), timestamp: 1_000 });
    await broker.produce("tiered", 0, [at("a"), at("b"), at("c")]);
    await broker.purge("tiered", 0, 2);
    const ask = (version: number, timestamp: number, withTimeout: boolean) => {
      const request = header(2, version).uvarint(0).i32(-1).i8(0).uvarint(2).cstr("tiered").uvarint(2);
      request.i32(0).i32(-1).i64(timestamp).uvarint(0).uvarint(0);
      if (withTimeout) request.i32(30_000);
      return request.uvarint(0);
    };
    const row = async (request: Expect) => {
      const reader = await answer(request);
      expect([reader.uvarint("header tags"), reader.int32("throttle")]).toEqual([0, 0]);
      expect([
        reader.uvarint("topics + 1"),
        reader.compactString("name"),
        reader.uvarint("partitions + 1"),
      ]).toEqual([2, "tiered", 2]);
      const fields = [
        reader.int32("p"),
        reader.int16("e"),
        reader.int64("timestamp"),
        reader.int64("offset"),
        reader.int32("leader epoch"),
      ];
      expect([
        reader.uvarint("partition tags"),
        reader.uvarint("topic tags"),
        reader.uvarint("tags"),
      ]).toEqual([0, 0, 0]);
      reader.expectEnd("response");
      return fields;
    };
    // After the purge the log starts at 2: the earliest local offset follows it.
    expect(await row(ask(8, -4, false))).toEqual([0, 0, -1, 2, -1]);
    expect(await row(ask(9, -5, false))).toEqual([0, 0, -1, -1, -1]);
    expect(await row(ask(10, -4, true))).toEqual([0, 0, -1, 2, -1]);
    expect(await row(ask(10, -2, true))).toEqual([0, 0, -1, 2, -1]);
    // v10 without its timeout_ms: the request is cut short, and the connection is closed.
    const outcome = await handler.handle(ask(10, -4, false).body());
    expect(outcome.kind).toBe("close");
  });
});

describe("mutated frames of real clients", () => {
  test("every mutation is answered or closes the connection; none throws, none touches other topics", async () => {
    const seed = testSeed();
    const random = new Random(seed);
    broker.createTopic("kept", { partitions: 2 });
    const frames = captured.map((entry) => Uint8Array.from(Buffer.from(entry.hex, "hex")));
    const outcomes = { respond: 0, close: 0, silent: 0 };
    for (let round = 0; round < 3000; round++) {
      const frame = frames[random.int(0, frames.length - 1)]!.slice();
      const flips = random.int(1, 4);
      for (let i = 0; i < flips; i++) frame[random.int(0, frame.length - 1)] = random.int(0, 255);
      let outcome: KafkaOutcome;
      try {
        outcome = await handler.handle(frame);
      } catch (error) {
        throw new Error(`seed ${seed}, round ${round}: ${Buffer.from(frame).toString("hex")} threw ${error}`);
      }
      outcomes[outcome.kind]++;
    }
    expect(outcomes.respond).toBeGreaterThan(0);
    expect(outcomes.close).toBeGreaterThan(0);
    expect(outcomes.silent).toBe(0);
    // A mutated DeleteTopics names "made-by-kafkajs" or garbage: turning it into "kept" takes five byte
    // changes (the length and four letters), more than a round makes, so "kept" survives every round.
    expect(broker.describeTopic("kept").partitions.length).toBe(2);
  });
});

describe("groups and committed offsets over bytes", () => {
  /** OffsetCommit v2 (generation, member, retention) of one partition. */
  const commit = (
    group: string,
    generation: number,
    member: string,
    topic: string,
    partition: number,
    metadata: string | null,
  ) =>
    header(8, 2)
      .str(group)
      .i32(generation)
      .str(member)
      .i64(-1)
      .i32(1)
      .str(topic)
      .i32(1)
      .i32(partition)
      .i64(42)
      .str(metadata);

  const commitErrors = async (request: Expect): Promise<number[]> => {
    const reader = await answer(request);
    const errors: number[] = [];
    const topics = reader.int32("topics");
    for (let t = 0; t < topics; t++) {
      reader.string("name");
      const partitions = reader.int32("partitions");
      for (let p = 0; p < partitions; p++) {
        reader.int32("partition");
        errors.push(reader.int16("error"));
      }
    }
    reader.expectEnd("OffsetCommit response");
    return errors;
  };

  test("FindCoordinator v0-2 answers this node at the advertised listener", async () => {
    for (const version of [0, 1, 2]) {
      const request = header(10, version).str("g");
      if (version >= 1) request.i8(0);
      const reader = await answer(request);
      if (version >= 1) expect(reader.int32("throttle")).toBe(0);
      expect(reader.int16("error")).toBe(0);
      if (version >= 1) expect(reader.nullableString("message")).toBeNull();
      expect([reader.int32("node"), reader.string("host"), reader.int32("port")]).toEqual([
        1,
        "kafka.example",
        19092,
      ]);
      reader.expectEnd("response");
    }
  });

  test("a client id of 32,767 bytes starts its member id with only 255 characters of it: JoinGroup and DescribeGroups answers stay well-formed (before, the id's int16 length wrapped negative)", async () => {
    const clientId = "c".repeat(32_767);
    const join = (version: number, memberId: string) =>
      new Expect()
        .i16(11)
        .i16(version)
        .i32(7)
        .str(clientId)
        .str("big")
        .i32(10_000)
        .i32(10_000)
        .str(memberId)
        .str("consumer")
        .i32(1)
        .str("range")
        .i32(0);
    const joined = (reader: KafkaReader) => {
      expect(reader.int32("throttle")).toBe(0);
      const fields = {
        error: reader.int16("error"),
        generation: reader.int32("generation"),
        protocol: reader.string("protocol"),
        leader: reader.string("leader"),
        memberId: reader.string("member_id"),
      };
      const members = reader.int32("members");
      for (let i = 0; i < members; i++) [reader.string("member"), reader.nullableBytes("metadata")];
      reader.expectEnd("response");
      return { ...fields, members };
    };
    // v4: the member learns its id first (KIP-394), then joins with it and leads.
    const first = joined(await answer(join(4, "")));
    expect(first.error).toBe(KAFKA_ERROR.MEMBER_ID_REQUIRED);
    expect(first.memberId).toMatch(/^c{255}-[0-9a-f-]{36}$/);
    const second = joined(await answer(join(4, first.memberId)));
    expect([second.error, second.leader, second.memberId, second.members]).toEqual([
      0,
      first.memberId,
      first.memberId,
      1,
    ]);
    // DescribeGroups v0 names the member and echoes its whole client id (32,767 bytes fit).
    const described = await answer(header(15, 0).i32(1).str("big"));
    expect([described.int32("groups"), described.int16("error"), described.string("group")]).toEqual([
      1,
      0,
      "big",
    ]);
    // During the rebalance no protocol and no metadata, as Kafka 4.1.1 answers.
    expect([described.string("state"), described.string("type"), described.string("protocol")]).toEqual([
      "CompletingRebalance",
      "consumer",
      "",
    ]);
    expect(described.int32("members")).toBe(1);
    expect([described.string("member"), described.string("client")]).toEqual([first.memberId, clientId]);
    expect([described.string("host"), described.nullableBytes("metadata")?.length]).toEqual(["/", 0]);
    // Synced, the group is Stable: its protocol and the member's metadata (empty here) and assignment.
    const synced = await answer(
      header(14, 0)
        .str("big")
        .i32(second.generation)
        .str(first.memberId)
        .i32(1)
        .str(first.memberId)
        .i32(2)
        .raw([1, 2]),
    );
    expect(synced.int16("error")).toBe(0);
    const stable = await answer(header(15, 0).i32(1).str("big"));
    expect([
      stable.int32("groups"),
      stable.int16("error"),
      stable.string("group"),
      stable.string("state"),
    ]).toEqual([1, 0, "big", "Stable"]);
    expect([stable.string("type"), stable.string("protocol")]).toEqual(["consumer", "range"]);
  });

  test("OffsetCommit: a simple commit (generation −1, no member) is stored and OffsetFetch v1 answers it; −1 where none", async () => {
    broker.createTopic("t", { partitions: 2 });
    expect(await commitErrors(commit("g", -1, "", "t", 1, "meta"))).toEqual([0]);
    const reader = await answer(header(9, 1).str("g").i32(1).str("t").i32(2).i32(0).i32(1));
    expect([reader.int32("topics"), reader.string("name"), reader.int32("partitions")]).toEqual([1, "t", 2]);
    expect([
      reader.int32("p"),
      reader.int64("offset"),
      reader.nullableString("m"),
      reader.int16("e"),
    ]).toEqual([0, -1, "", 0]);
    expect([
      reader.int32("p"),
      reader.int64("offset"),
      reader.nullableString("m"),
      reader.int16("e"),
    ]).toEqual([1, 42, "meta", 0]);
    reader.expectEnd("OffsetFetch response");
  });

  test("OffsetCommit refusals per partition: unknown topic, metadata above 4096 bytes, an unknown member", async () => {
    broker.createTopic("t");
    expect(await commitErrors(commit("g", -1, "", "nope", 0, null))).toEqual([
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    ]);
    expect(await commitErrors(commit("g", -1, "", "t", 0, "x".repeat(4097)))).toEqual([
      KAFKA_ERROR.OFFSET_METADATA_TOO_LARGE,
    ]);
    // A generation for a group nobody knows: ILLEGAL_GENERATION; for one that has only committed
    // offsets (an Empty group to Kafka), the member is unknown. As Kafka 4.x answers both.
    expect(await commitErrors(commit("g", 3, "someone", "t", 0, null))).toEqual([
      KAFKA_ERROR.ILLEGAL_GENERATION,
    ]);
    expect(broker.offsets.committedOf("g")).toEqual([]);
    expect(await commitErrors(commit("g", -1, "", "t", 0, null))).toEqual([KAFKA_ERROR.NONE]);
    expect(await commitErrors(commit("g", 3, "someone", "t", 0, null))).toEqual([
      KAFKA_ERROR.UNKNOWN_MEMBER_ID,
    ]);
    expect(broker.offsets.committedOf("g").map((c) => c.committed.offset)).toEqual([42]); // the simple commit only
  });

  test("FindCoordinator for a group creates the offsets topic, as Kafka does", async () => {
    expect(broker.listTopics({ includeInternal: true })).toEqual([]);
    // FindCoordinator v1: key "g", key_type 0 (group).
    await answer(header(10, 1).str("g").i8(0));
    expect(broker.listTopics({ includeInternal: true }).map((topic) => topic.name)).toEqual([
      "__consumer_offsets",
    ]);
    // The native listing still hides it.
    expect(broker.listTopics()).toEqual([]);
  });

  test("the offsets topic: Produce gets INVALID_TOPIC_EXCEPTION; Metadata lists it (all topics or by name), marked internal", async () => {
    broker.createTopic("t");
    await broker.offsets.commit("g", [
      { topic: "t", partition: 0, offset: 1, leaderEpoch: -1, metadata: null },
    ]);
    const all = await answer(header(3, 1).i32(-1));
    all.int32("brokers");
    all.int32("node");
    all.string("host");
    all.int32("port");
    all.nullableString("rack");
    all.int32("controller");
    // As Kafka does (its all-topics Metadata lists every topic, internal ones flagged): clients filter
    // on the flag (Java's exclude.internal.topics, franz-go's TestConsumeRegex).
    const listed: [number, string, boolean][] = [];
    const count = all.int32("topics");
    for (let i = 0; i < count; i++) {
      listed.push([all.int16("error"), all.string("name"), all.boolean("internal")]);
      const partitions = all.int32("partitions");
      for (let p = 0; p < partitions; p++) {
        all.int16("error");
        all.int32("partition");
        all.int32("leader");
        for (const what of ["replicas", "isr"]) {
          const nodes = all.int32(what);
          for (let n = 0; n < nodes; n++) all.int32("node");
        }
      }
    }
    expect(listed).toEqual([
      [0, "__consumer_offsets", true],
      [0, "t", false],
    ]);
    const named = await answer(header(3, 1).i32(1).str("__consumer_offsets"));
    named.int32("brokers");
    named.int32("node");
    named.string("host");
    named.int32("port");
    named.nullableString("rack");
    named.int32("controller");
    expect([
      named.int32("topics"),
      named.int16("error"),
      named.string("name"),
      named.boolean("internal"),
    ]).toEqual([1, 0, "__consumer_offsets", true]);
    const batch = encodeBatch([{ key: null, value: new Uint8Array([1]), timestamp: 0 }]);
    const reader = await answer(
      header(0, 3)
        .str(null)
        .i16(-1)
        .i32(1000)
        .i32(1)
        .str("__consumer_offsets")
        .i32(1)
        .i32(0)
        .i32(batch.length)
        .raw(batch),
    );
    expect([
      reader.int32("topics"),
      reader.string("name"),
      reader.int32("partitions"),
      reader.int32("p"),
      reader.int16("error"),
    ]).toEqual([1, "__consumer_offsets", 1, 0, KAFKA_ERROR.INVALID_TOPIC_EXCEPTION]);
  });
});

describe("Produce", () => {
  /** A Produce v3 (acks −1) of one batch of one record to partition 0 of `topic`. */
  function produceV3(topic: string, value: number, correlationId: number): Uint8Array {
    const batch = encodeBatch([{ key: null, value: new Uint8Array([value]), timestamp: 0 }]);
    return header(0, 3, correlationId)
      .str(null)
      .i16(-1)
      .i32(1000)
      .i32(1)
      .str(topic)
      .i32(1)
      .i32(0)
      .i32(batch.length)
      .raw(batch)
      .body();
  }

  test("Produces of one event-loop turn join one coalesced group, as the native PRODUCE's do (one write, and one force under `force`)", async () => {
    broker.createTopic("joined", { durability: "force" });
    const partition = broker.partition("joined", 0);
    const outcomes = [handler.handle(produceV3("joined", 1, 1)), handler.handle(produceV3("joined", 2, 2))];
    // Whatever the handler awaits before the append runs as microtasks; the group is written at
    // the end of the turn (Partition.flushTurn, an immediate). Before, each Produce wrote its own
    // batch at once (`Partition.append`), so the log's end had moved by now.
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(Number(partition.log.nextOffset)).toBe(0);
    const baseOffsets: number[] = [];
    for (const outcome of await Promise.all(outcomes)) {
      if (outcome.kind !== "respond") throw new Error(`expected a response, got ${outcome.kind}`);
      const reader = new KafkaReader(outcome.bytes);
      reader.int32("size");
      reader.int32("correlation_id");
      expect([
        reader.int32("topics"),
        reader.string("name"),
        reader.int32("partitions"),
        reader.int32("p"),
      ]).toEqual([1, "joined", 1, 0]);
      expect(reader.int16("error")).toBe(KAFKA_ERROR.NONE);
      baseOffsets.push(reader.int64("base_offset"));
    }
    expect(baseOffsets).toEqual([0, 1]);
    expect(Number(partition.log.nextOffset)).toBe(2);
    expect(partition.visibleNextOffset).toBe(2);
  });
});
