/**
 * DescribeConfigs (32), DescribeCluster (60), DeleteGroups (42), OffsetDelete (47) and
 * OffsetForLeaderEpoch (23): hand-built request frames through the KafkaHandler against a real
 * Broker on a temporary data directory, read back field by field; then kafkajs 2.2.4's admin
 * (describeConfigs, deleteGroups) against a broker child process.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaHandler } from "../../src/kafka/handler.ts";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { Expect } from "./bytes.ts";

let dir: TempDir;
let broker: Broker;
let handler: KafkaHandler;

beforeEach(() => {
  dir = tempDir("kafka-admin-apis");
  broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  handler = new KafkaHandler(broker, { advertisedHost: "127.0.0.1", advertisedPort: 9092 });
});

afterEach(async () => {
  handler.stop();
  await broker.close();
  dir[Symbol.dispose]();
});

/** A request of `apiKey` v`version` (header v1, or v2 when `flexible`), answered: its reader after the header. */
async function ask(apiKey: number, version: number, body: (e: Expect) => void, flexible = false) {
  const request = new Expect().i16(apiKey).i16(version).i32(7).str("test");
  if (flexible) request.uvarint(0);
  body(request);
  const outcome = await handler.handle(request.body());
  if (outcome.kind !== "respond") throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  const reader = new KafkaReader(outcome.bytes);
  expect(reader.int32("size")).toBe(outcome.bytes.length - 4);
  expect(reader.int32("correlation_id")).toBe(7);
  if (flexible) reader.skipTaggedFields("response header");
  return reader;
}

const TOPIC = 2;
const BROKER = 4;
const BROKER_LOGGER = 8;

describe("DescribeConfigs", () => {
  type Row = [name: string, value: string | null, readOnly: boolean, source: number, synonyms: number];

  async function describeConfigs(
    version: number,
    resources: [type: number, name: string, keys: string[] | null][],
    includeSynonyms = false,
  ) {
    const reader = await ask(32, version, (e) => {
      e.i32(resources.length);
      for (const [type, name, keys] of resources) {
        e.i8(type).str(name);
        if (keys === null) e.i32(-1);
        else {
          e.i32(keys.length);
          for (const key of keys) e.str(key);
        }
      }
      if (version >= 1) e.i8(includeSynonyms ? 1 : 0);
      if (version >= 3) e.i8(1); // include_documentation
    });
    expect(reader.int32("throttle_time_ms")).toBe(0);
    const results: { code: number; message: string | null; type: number; name: string; configs: Row[] }[] =
      [];
    const count = reader.int32("results");
    for (let r = 0; r < count; r++) {
      const code = reader.int16("error_code");
      const message = reader.nullableString("error_message");
      const type = reader.int8("resource_type");
      const name = reader.string("resource_name");
      const configs: Row[] = [];
      const configCount = reader.int32("configs");
      for (let c = 0; c < configCount; c++) {
        const configName = reader.string("name");
        const value = reader.nullableString("value");
        const readOnly = reader.boolean("read_only");
        // v0: is_default (true: 5, the default source), v1+: config_source.
        const source = version === 0 ? (reader.boolean("is_default") ? 5 : 1) : reader.int8("config_source");
        expect(reader.boolean("is_sensitive")).toBe(false);
        let synonyms = 0;
        if (version >= 1) {
          synonyms = reader.int32("synonyms");
          for (let s = 0; s < synonyms; s++) {
            expect(reader.string("synonym name")).toBe(configName);
            expect(reader.nullableString("synonym value")).toBe(value);
            expect(reader.int8("synonym source")).toBe(source);
          }
        }
        if (version >= 3) {
          expect(reader.int8("config_type")).toBeGreaterThan(0);
          expect(reader.nullableString("documentation")).toBeString();
        }
        configs.push([configName, value, readOnly, source, synonyms]);
      }
      results.push({ code, message, type, name, configs });
    }
    reader.expectEnd("DescribeConfigs response");
    return results;
  }

  test("v0-3: a topic's settings by Kafka's names, overridden ones as topic configs, the rest as defaults", async () => {
    broker.createTopic("t", { retentionMs: 60_000, maxRecordBytes: 2000, timestampType: "LogAppendTime" });
    const defaults = broker.topicDefaults;
    const expected: Row[] = [
      ["retention.ms", "60000", false, 1, 0],
      ["retention.bytes", "-1", false, 5, 0],
      ["segment.bytes", String(defaults.segmentBytes), false, 5, 0],
      ["max.message.bytes", "2000", false, 1, 0],
      ["message.timestamp.type", "LogAppendTime", false, 1, 0],
      ["cleanup.policy", "delete", false, 5, 0],
      ["booblik.durability", "append", false, 5, 0],
      ["booblik.flush.interval.ms", String(defaults.flushIntervalMs), false, 5, 0],
      ["booblik.write.mode", defaults.writeMode, false, 5, 0],
    ];
    for (const version of [0, 1, 2, 3]) {
      const [result] = await describeConfigs(version, [[TOPIC, "t", null]]);
      expect([version, result!.code, result!.message, result!.type, result!.name]).toEqual([
        version,
        KAFKA_ERROR.NONE,
        null,
        TOPIC,
        "t",
      ]);
      expect(result!.configs).toEqual(expected);
    }
  });

  test("named keys only (unknown ones left out, as Kafka does), synonyms, and refusals per resource", async () => {
    broker.createTopic("t", { retentionBytes: 1 << 20 });
    const results = await describeConfigs(
      2,
      [
        [TOPIC, "t", ["retention.bytes", "min.compaction.lag.ms"]],
        [TOPIC, "missing", null],
        [BROKER_LOGGER, "1", null],
      ],
      true,
    );
    expect(results[0]!.configs).toEqual([["retention.bytes", "1048576", false, 1, 1]]);
    expect(results.slice(1).map(({ code, type, name, configs }) => [code, type, name, configs])).toEqual([
      [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, TOPIC, "missing", []],
      [KAFKA_ERROR.INVALID_REQUEST, BROKER_LOGGER, "1", []],
    ]);
    expect(results[1]!.message).toMatch(/missing/);
    expect(results[2]!.message).toMatch(
      /only topic \(resource type 2\) and broker \(4\) configs, not resource type 8/,
    );
  });

  test('a broker (resource type 4): node 1\'s settings, read-only, set ones as static broker configs; "" (the dynamic defaults) has none; another id is refused', async () => {
    const dynamic = 1;
    const staticBroker = 4;
    const byDefault = 5;
    for (const version of [0, 1, 3]) {
      const [node, defaults, other, filtered] = await describeConfigs(version, [
        [BROKER, "1", null],
        [BROKER, "", null],
        [BROKER, "2", null],
        [BROKER, "1", ["log.retention.ms", "booblik.durability", "no.such.config"]],
      ]);
      const rows = new Map(node!.configs.map((row) => [row[0], row]));
      expect([node!.code, rows.get("node.id"), rows.get("log.dirs")]).toEqual([
        KAFKA_ERROR.NONE,
        ["node.id", "1", true, byDefault, 0],
        ["log.dirs", broker.dataDir, true, version === 0 ? dynamic : staticBroker, 0],
      ]);
      // This broker was opened with durability append: set at its start, so a static broker config.
      expect(rows.get("booblik.durability")).toEqual([
        "booblik.durability",
        "append",
        true,
        version === 0 ? dynamic : staticBroker,
        0,
      ]);
      expect(rows.get("auto.create.topics.enable")).toEqual([
        "auto.create.topics.enable",
        "false",
        true,
        byDefault,
        0,
      ]);
      expect(rows.has("num.partitions")).toBe(false); // auto-creation is off
      expect(rows.get("message.max.bytes")![1]).toBe(String(broker.topicDefaults.maxRecordBytes));
      expect(node!.configs.every((row) => row[2])).toBe(true); // all read-only
      expect([defaults!.code, defaults!.configs]).toEqual([KAFKA_ERROR.NONE, []]);
      expect([other!.code, other!.message]).toEqual([
        KAFKA_ERROR.INVALID_REQUEST,
        "Unexpected broker id, expected 1 or empty string, but received 2",
      ]);
      expect(filtered!.configs.map((row) => row[0])).toEqual(["log.retention.ms", "booblik.durability"]);
    }
  });
});

describe("DescribeConfigs of a broker under ACLs", () => {
  test("needs DESCRIBE_CONFIGS on the cluster: CLUSTER_AUTHORIZATION_FAILED (31) without it, as Kafka answers", async () => {
    using aclDir = tempDir("kafka-admin-apis-acl");
    const guarded = Broker.open({ dataDir: aclDir.path, authorization: { superUsers: ["User:admin"] } });
    const acl = new KafkaHandler(guarded, { advertisedHost: "127.0.0.1", advertisedPort: 9092 });
    try {
      const asked = async (user: string) => {
        const request = new Expect()
          .i16(32)
          .i16(1)
          .i32(7)
          .str("test")
          .i32(1)
          .i8(BROKER)
          .str("1")
          .i32(-1)
          .i8(0);
        const outcome = await acl.handle(request.body(), "127.0.0.1", user);
        if (outcome.kind !== "respond") throw new Error(`expected a response, got ${outcome.kind}`);
        const reader = new KafkaReader(outcome.bytes);
        reader.int32("size");
        reader.int32("correlation_id");
        reader.int32("throttle_time_ms");
        reader.int32("results");
        const code = reader.int16("error_code");
        reader.nullableString("error_message");
        reader.int8("resource_type");
        reader.string("resource_name");
        return [code, reader.int32("configs") > 0];
      };
      expect(await asked("alice")).toEqual([KAFKA_ERROR.CLUSTER_AUTHORIZATION_FAILED, false]);
      expect(await asked("admin")).toEqual([KAFKA_ERROR.NONE, true]);
    } finally {
      acl.stop();
      await guarded.close();
    }
  });
});

describe("DescribeCluster (flexible from v0)", () => {
  async function describeCluster(version: number, endpointType: number) {
    const reader = await ask(
      60,
      version,
      (e) => {
        e.i8(0); // include_cluster_authorized_operations
        if (version >= 1) e.i8(endpointType);
        e.uvarint(0);
      },
      true,
    );
    expect(reader.int32("throttle_time_ms")).toBe(0);
    const code = reader.int16("error_code");
    const message = reader.compactNullableString("error_message");
    const type = version >= 1 ? reader.int8("endpoint_type") : 1;
    const clusterId = reader.compactString("cluster_id");
    const controllerId = reader.int32("controller_id");
    const brokers: [number, string, number, string | null][] = [];
    const count = reader.compactArrayCount("brokers", 1);
    for (let b = 0; b < count; b++) {
      brokers.push([
        reader.int32("broker_id"),
        reader.compactString("host"),
        reader.int32("port"),
        reader.compactNullableString("rack"),
      ]);
      reader.skipTaggedFields("broker");
    }
    expect(reader.int32("cluster_authorized_operations")).toBe(-2147483648);
    reader.skipTaggedFields("response");
    reader.expectEnd("DescribeCluster response");
    return { code, message, type, clusterId, controllerId, brokers };
  }

  test("v0-1: this one node; asked for controllers, MISMATCHED_ENDPOINT_TYPE as a Kafka broker answers", async () => {
    for (const version of [0, 1]) {
      expect(await describeCluster(version, 1)).toEqual({
        code: KAFKA_ERROR.NONE,
        message: null,
        type: 1,
        clusterId: "booblik",
        controllerId: 1,
        brokers: [[1, "127.0.0.1", 9092, null]],
      });
    }
    const controllers = await describeCluster(1, 2);
    expect([controllers.code, controllers.type, controllers.brokers]).toEqual([
      KAFKA_ERROR.MISMATCHED_ENDPOINT_TYPE,
      2,
      [],
    ]);
    expect(controllers.message).toMatch(/broker endpoint/);
  });
});

/** A JoinGroup v0 of a consumer subscribed to `topics`, through the handler: its member id. */
async function joinConsumer(group: string, topics: string[]): Promise<string> {
  const subscription = new Expect().i16(0).i32(topics.length);
  for (const topic of topics) subscription.str(topic);
  subscription.i32(-1); // user_data
  const metadata = subscription.body();
  const reader = await ask(11, 0, (e) => {
    e.str(group).i32(30_000).str("").str("consumer").i32(1).str("range").i32(metadata.length).raw(metadata);
  });
  expect(reader.int16("error_code")).toBe(KAFKA_ERROR.NONE);
  reader.int32("generation_id");
  reader.string("protocol_name");
  reader.string("leader");
  return reader.string("member_id");
}

describe("DeleteGroups and OffsetDelete", () => {
  async function deleteGroups(version: number, groups: string[]): Promise<[string, number][]> {
    const reader = await ask(42, version, (e) => {
      e.i32(groups.length);
      for (const group of groups) e.str(group);
    });
    expect(reader.int32("throttle_time_ms")).toBe(0);
    const results: [string, number][] = [];
    const count = reader.int32("results");
    for (let i = 0; i < count; i++) results.push([reader.string("group_id"), reader.int16("error_code")]);
    reader.expectEnd("DeleteGroups response");
    return results;
  }

  async function offsetDelete(group: string, topics: [string, number[]][]) {
    const reader = await ask(47, 0, (e) => {
      e.str(group).i32(topics.length);
      for (const [name, partitions] of topics) {
        e.str(name).i32(partitions.length);
        for (const partition of partitions) e.i32(partition);
      }
    });
    const code = reader.int16("error_code");
    expect(reader.int32("throttle_time_ms")).toBe(0);
    const answers: [string, number, number][] = [];
    const topicCount = reader.int32("topics");
    for (let t = 0; t < topicCount; t++) {
      const name = reader.string("name");
      const count = reader.int32("partitions");
      for (let p = 0; p < count; p++)
        answers.push([name, reader.int32("partition"), reader.int16("error_code")]);
    }
    reader.expectEnd("OffsetDelete response");
    return { code, answers };
  }

  const commit = (group: string, topic: string, partition: number, offset: number) =>
    broker.offsets.commit(group, [{ topic, partition, offset, leaderEpoch: -1, metadata: null }]);

  test("DeleteGroups v0-1: deletes committed offsets; a live group is NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND", async () => {
    broker.createTopic("t", { partitions: 2 });
    await commit("idle", "t", 0, 5);
    await commit("idle2", "t", 1, 6);
    await commit("busy", "t", 0, 7);
    await joinConsumer("busy", ["t"]);
    expect(await deleteGroups(0, ["idle", "busy", "never", ""])).toEqual([
      ["idle", KAFKA_ERROR.NONE],
      ["busy", KAFKA_ERROR.NON_EMPTY_GROUP],
      ["never", KAFKA_ERROR.GROUP_ID_NOT_FOUND],
      ["", KAFKA_ERROR.INVALID_GROUP_ID],
    ]);
    expect(await deleteGroups(1, ["idle2", "idle"])).toEqual([
      ["idle2", KAFKA_ERROR.NONE],
      ["idle", KAFKA_ERROR.GROUP_ID_NOT_FOUND],
    ]);
    expect(broker.offsets.committedOf("idle")).toEqual([]);
    expect(broker.offsets.committedOf("idle2")).toEqual([]);
    expect(broker.offsets.committed("busy", "t", 0)?.offset).toBe(7);
  });

  test("the deletion survives a restart: it is in the offsets topic", async () => {
    broker.createTopic("t");
    await commit("g", "t", 0, 5);
    await commit("h", "t", 0, 9);
    expect(await deleteGroups(1, ["g"])).toEqual([["g", KAFKA_ERROR.NONE]]);
    expect((await offsetDelete("h", [["t", [0]]])).answers).toEqual([["t", 0, KAFKA_ERROR.NONE]]);
    handler.stop();
    await broker.close();
    broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
    handler = new KafkaHandler(broker, { advertisedHost: "127.0.0.1", advertisedPort: 9092 });
    expect(broker.offsets.committedOf("g")).toEqual([]);
    expect(broker.offsets.committedOf("h")).toEqual([]);
  });

  test("OffsetDelete v0: chosen partitions only; subscribed topics, unknown partitions and groups refused", async () => {
    broker.createTopic("t", { partitions: 3 });
    broker.createTopic("u");
    for (const partition of [0, 1, 2]) await commit("g", "t", partition, 10 + partition);
    await commit("g", "u", 0, 20);
    expect(
      await offsetDelete("g", [
        ["t", [0, 2, 7]],
        ["missing", [0]],
      ]),
    ).toEqual({
      code: KAFKA_ERROR.NONE,
      answers: [
        ["t", 0, KAFKA_ERROR.NONE],
        ["t", 2, KAFKA_ERROR.NONE],
        ["t", 7, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION],
        ["missing", 0, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION],
      ],
    });
    expect(broker.offsets.committedOf("g").map(({ topic, partition }) => `${topic}/${partition}`)).toEqual([
      "t/1",
      "u/0",
    ]);
    // A live member subscribed to u: its offsets stay; t's may go.
    await joinConsumer("g", ["u"]);
    expect(
      (
        await offsetDelete("g", [
          ["u", [0]],
          ["t", [1]],
        ])
      ).answers,
    ).toEqual([
      ["u", 0, KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC],
      ["t", 1, KAFKA_ERROR.NONE],
    ]);
    expect(broker.offsets.committed("g", "u", 0)?.offset).toBe(20);
    expect(broker.offsets.committed("g", "t", 1)).toBeUndefined();
    expect(await offsetDelete("nobody", [["t", [0]]])).toEqual({
      code: KAFKA_ERROR.GROUP_ID_NOT_FOUND,
      answers: [],
    });
  });
});

describe("OffsetCommit too large for the offsets topic", () => {
  test("is refused whole with INVALID_COMMIT_OFFSET_SIZE (28), the code Kafka's clients raise to the user for it", async () => {
    // A broker whose offsets topic has 4 KiB segments: two partitions with 4000 bytes of metadata
    // each cannot be one append there.
    handler.stop();
    await broker.close();
    broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
    handler = new KafkaHandler(broker, { advertisedHost: "127.0.0.1", advertisedPort: 9092 });
    broker.createTopic("t", { partitions: 2 });
    const commit = async (metadataBytes: number) => {
      const reader = await ask(8, 2, (e) => {
        e.str("big").i32(-1).str("").i64(-1).i32(1).str("t").i32(2);
        for (const partition of [0, 1]) e.i32(partition).i64(5).str("m".repeat(metadataBytes));
      });
      expect([reader.int32("topics"), reader.string("name"), reader.int32("partitions")]).toEqual([
        1,
        "t",
        2,
      ]);
      const codes = [0, 1].map(() => [reader.int32("partition_index"), reader.int16("error_code")]);
      reader.expectEnd("OffsetCommit response");
      return codes;
    };
    expect(await commit(4000)).toEqual([
      [0, KAFKA_ERROR.INVALID_COMMIT_OFFSET_SIZE],
      [1, KAFKA_ERROR.INVALID_COMMIT_OFFSET_SIZE],
    ]);
    expect(broker.offsets.committedOf("big")).toEqual([]);
    expect(await commit(10)).toEqual([
      [0, KAFKA_ERROR.NONE],
      [1, KAFKA_ERROR.NONE],
    ]);
  });
});

describe("OffsetForLeaderEpoch", () => {
  test("v0-3: epoch −1 and 0 end at the high watermark, a later epoch is unknown (−1, −1)", async () => {
    broker.createTopic("t", { partitions: 2 });
    const record = { key: null, value: new Uint8Array([1]), timestamp: 1_700_000_000_000 };
    await broker.produce("t", 0, [record, record, record]);
    for (const version of [0, 1, 2, 3]) {
      const reader = await ask(23, version, (e) => {
        if (version >= 3) e.i32(-1); // replica_id: a consumer
        e.i32(2).str("t").i32(3);
        for (const [partition, epoch] of [
          [0, 0],
          [1, -1],
          [0, 5],
        ] as const) {
          e.i32(partition);
          if (version >= 2) e.i32(-1); // current_leader_epoch
          e.i32(epoch);
        }
        e.str("missing").i32(1).i32(0);
        if (version >= 2) e.i32(-1);
        e.i32(0);
      });
      if (version >= 2) expect(reader.int32("throttle_time_ms")).toBe(0);
      const answers: [string, number, number, number, number][] = [];
      const topics = reader.int32("topics");
      for (let t = 0; t < topics; t++) {
        const name = reader.string("topic");
        const count = reader.int32("partitions");
        for (let p = 0; p < count; p++) {
          const code = reader.int16("error_code");
          const partition = reader.int32("partition");
          const epoch = version >= 1 ? reader.int32("leader_epoch") : -9;
          answers.push([name, code, partition, epoch, reader.int64("end_offset")]);
        }
      }
      reader.expectEnd("OffsetForLeaderEpoch response");
      const epoch = (value: number) => (version >= 1 ? value : -9);
      expect(answers).toEqual([
        ["t", KAFKA_ERROR.NONE, 0, epoch(0), 3],
        ["t", KAFKA_ERROR.NONE, 1, epoch(-1), 0],
        ["t", KAFKA_ERROR.NONE, 0, epoch(-1), -1],
        ["missing", KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, 0, epoch(-1), -1],
      ]);
    }
  });
});

describe("kafkajs 2.2.4 admin against a broker process", () => {
  test("describeConfigs of a topic and deleteGroups", async () => {
    const processDir = tempDir("kafka-admin-apis-process");
    const child = await startBroker(processDir.path, ["--kafka-port", "0"]);
    try {
      const port = await kafkaPortOf(child);
      const client = new Kafka({
        brokers: [`127.0.0.1:${port}`],
        clientId: "test",
        logLevel: logLevel.NOTHING,
      });
      const admin = client.admin();
      await admin.connect();
      try {
        await admin.createTopics({
          topics: [{ topic: "orders", configEntries: [{ name: "retention.ms", value: "3600000" }] }],
        });
        const described = await admin.describeConfigs({
          resources: [{ type: 2, name: "orders", configNames: ["retention.ms", "max.message.bytes"] }],
          includeSynonyms: false,
        });
        expect(described.resources).toHaveLength(1);
        const resource = described.resources[0]!;
        expect([resource.errorCode, resource.resourceName]).toEqual([0, "orders"]);
        expect(resource.configEntries.map((entry) => [entry.configName, entry.configValue])).toEqual([
          ["retention.ms", "3600000"],
          ["max.message.bytes", expect.stringMatching(/^\d+$/)],
        ]);

        // alterConfigs sends AlterConfigs (33), which replaces the topic's settings whole: the one
        // named is set, retention.ms goes back to the default. Before 2026-12-03 it was not served.
        await admin.alterConfigs({
          validateOnly: false,
          resources: [
            { type: 2, name: "orders", configEntries: [{ name: "retention.bytes", value: "1048576" }] },
          ],
        });
        const altered = await admin.describeConfigs({
          resources: [{ type: 2, name: "orders", configNames: ["retention.ms", "retention.bytes"] }],
          includeSynonyms: false,
        });
        expect(
          altered.resources[0]!.configEntries.map((entry) => [
            entry.configName,
            entry.configValue,
            entry.isDefault,
          ]),
        ).toEqual([
          ["retention.ms", expect.not.stringMatching(/^3600000$/), true],
          ["retention.bytes", "1048576", false],
        ]);

        // A group with a commit and no members can be deleted; then it is gone.
        await admin.setOffsets({
          groupId: "g",
          topic: "orders",
          partitions: [{ partition: 0, offset: "0" }],
        });
        expect(await admin.fetchOffsets({ groupId: "g", topics: ["orders"] })).toEqual([
          { topic: "orders", partitions: [{ partition: 0, offset: "0", metadata: null }] },
        ]);
        expect(await admin.deleteGroups(["g"])).toEqual([{ groupId: "g", errorCode: 0 }]);
        const again = await admin.deleteGroups(["g"]).catch((error: unknown) => error);
        expect((again as { groups?: { error: { type: string } }[] }).groups?.[0]?.error.type).toBe(
          "GROUP_ID_NOT_FOUND",
        );
      } finally {
        await admin.disconnect();
      }
    } finally {
      await child.stop();
      processDir[Symbol.dispose]();
    }
  }, 30_000);
});

describe("malformed requests of these APIs", () => {
  test("every truncation and a trailing byte close the connection, naming the field and byte", async () => {
    broker.createTopic("t");
    const requests: [name: string, request: Expect][] = [
      [
        "DESCRIBE_CONFIGS v3",
        new Expect()
          .i16(32)
          .i16(3)
          .i32(7)
          .str("test")
          .i32(1)
          .i8(2)
          .str("t")
          .i32(1)
          .str("retention.ms")
          .i8(1)
          .i8(1),
      ],
      [
        "DESCRIBE_CLUSTER v1",
        new Expect().i16(60).i16(1).i32(7).str("test").uvarint(0).i8(0).i8(1).uvarint(0),
      ],
      ["DELETE_GROUPS v1", new Expect().i16(42).i16(1).i32(7).str("test").i32(2).str("g").str("h")],
      [
        "OFFSET_DELETE v0",
        new Expect().i16(47).i16(0).i32(7).str("test").str("g").i32(1).str("t").i32(2).i32(0).i32(1),
      ],
      [
        "OFFSET_FOR_LEADER_EPOCH v3",
        new Expect().i16(23).i16(3).i32(7).str("test").i32(-1).i32(1).str("t").i32(1).i32(0).i32(-1).i32(0),
      ],
    ];
    for (const [name, request] of requests) {
      const whole = request.body();
      // The whole request is answered; a header cut short closes without a reason about the API.
      expect([name, (await handler.handle(whole)).kind]).toEqual([name, "respond"]);
      const headerBytes =
        new Expect().i16(0).i16(0).i32(0).str("test").out.length +
        (name.startsWith("DESCRIBE_CLUSTER") ? 1 : 0);
      for (let length = headerBytes; length < whole.length; length++) {
        const outcome = await handler.handle(whole.subarray(0, length));
        expect([name, length, outcome.kind]).toEqual([name, length, "close"]);
        if (outcome.kind === "close")
          expect(outcome.reason).toMatch(new RegExp(`^malformed ${name} request: .* at byte \\d+`));
      }
      const trailing = Uint8Array.from([...whole, 0]);
      const outcome = await handler.handle(trailing);
      expect([name, outcome.kind]).toEqual([name, "close"]);
      if (outcome.kind === "close") expect(outcome.reason).toMatch(/unexpected bytes after its last field/);
    }
  });
});
