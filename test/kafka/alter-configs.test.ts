/**
 * Kafka's IncrementalAlterConfigs (44) v0 through the KafkaHandler over bytes, against a real Broker
 * on a temporary data directory (kafkajs 2.2.4 cannot send it: its admin only has AlterConfigs):
 * SET and DELETE change live settings through Broker.alterTopic; what cannot change, unknown names,
 * list operations, other resource types and unknown topics are refused per resource.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaHandler } from "../../src/kafka/handler.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { Expect } from "./bytes.ts";

let dir: TempDir;
let broker: Broker;
let handler: KafkaHandler;

beforeEach(() => {
  dir = tempDir("kafka-alter-configs");
  broker = Broker.open({
    dataDir: dir.path,
    topicDefaults: { durability: "append", retentionMs: 604_800_000 },
  });
  handler = new KafkaHandler(broker, { advertisedHost: "127.0.0.1", advertisedPort: 9092 });
});

afterEach(async () => {
  await broker.close();
  dir[Symbol.dispose]();
});

type Config = [name: string, operation: number, value: string | null];

/** The per-resource answers of an (Incremental)AlterConfigs response (the same layout). */
function answersOf(
  outcome: Awaited<ReturnType<KafkaHandler["handle"]>>,
  correlationId: number,
  what: string,
): [code: number, message: string | null, type: number, name: string][] {
  if (outcome.kind !== "respond") throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  const reader = new KafkaReader(outcome.bytes);
  expect(reader.int32("size")).toBe(outcome.bytes.length - 4);
  expect(reader.int32("correlation_id")).toBe(correlationId);
  expect(reader.int32("throttle_time_ms")).toBe(0);
  const count = reader.int32("responses");
  const answers: [number, string | null, number, string][] = [];
  for (let i = 0; i < count; i++) {
    answers.push([
      reader.int16("error_code"),
      reader.nullableString("error_message"),
      reader.int8("resource_type"),
      reader.string("resource_name"),
    ]);
  }
  reader.expectEnd(what);
  return answers;
}

/** One IncrementalAlterConfigs v0 request of `resources`; its per-resource answers. */
async function alterConfigs(
  resources: [type: number, name: string, configs: Config[]][],
  validateOnly = false,
): Promise<[code: number, message: string | null, type: number, name: string][]> {
  const request = new Expect().i16(44).i16(0).i32(7).str("test").i32(resources.length);
  for (const [type, name, configs] of resources) {
    request.i8(type).str(name).i32(configs.length);
    for (const [configName, operation, value] of configs) request.str(configName).i8(operation).str(value);
  }
  request.i8(validateOnly ? 1 : 0);
  return answersOf(await handler.handle(request.body()), 7, "IncrementalAlterConfigs response");
}

const TOPIC = 2;
const SET = 0;
const DELETE = 1;
const APPEND = 2;

test("SET and DELETE change a live topic; each resource is answered on its own", async () => {
  broker.createTopic("t", { retentionMs: 1000, maxRecordBytes: 2000, segmentBytes: 1 << 20 });
  const answers = await alterConfigs([
    [
      TOPIC,
      "t",
      [
        ["retention.bytes", SET, "1048576"],
        ["retention.ms", DELETE, null],
        ["max.message.bytes", SET, "4000"],
        ["booblik.durability", SET, "force"],
        ["message.timestamp.type", SET, "LogAppendTime"],
      ],
    ],
    [TOPIC, "missing", [["retention.ms", SET, "5"]]],
    [4, "1", [["log.retention.ms", SET, "5"]]],
  ]);
  expect(answers.map(([code, , type, name]) => [code, type, name])).toEqual([
    [KAFKA_ERROR.NONE, TOPIC, "t"],
    [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, TOPIC, "missing"],
    [KAFKA_ERROR.INVALID_REQUEST, 4, "1"],
  ]);
  expect(answers[2]![1]).toBe(
    "only topic configs (resource type 2) can change: the broker's settings are its command-line options, fixed at its start",
  );
  // One refusal per request (a resource named twice in one request is refused whole, as Kafka does).
  const refusals = [];
  for (const configs of [
    [["segment.bytes", SET, "2097152"]],
    [["min.compaction.lag.ms", SET, "0"]],
    [["retention.ms", APPEND, "5"]],
  ] as Config[][])
    refusals.push(...(await alterConfigs([[TOPIC, "t", configs]])));
  expect(refusals.map(([code]) => code)).toEqual([
    KAFKA_ERROR.INVALID_CONFIG,
    KAFKA_ERROR.INVALID_CONFIG,
    KAFKA_ERROR.INVALID_CONFIG,
  ]);
  // The refusal names the setting as the client sent it (it named booblik's segmentBytes).
  expect(refusals[0]![1]).toMatch(/^segment\.bytes cannot change on an existing topic/);
  expect(refusals[1]![1]).toMatch(/topic config "min.compaction.lag.ms" is not supported/);
  expect(refusals[2]![1]).toMatch(/config operation 2 on retention.ms is not supported/);
  expect(broker.describeTopic("t").config).toMatchObject({
    retentionBytes: 1_048_576,
    retentionMs: 604_800_000, // DELETE: the broker's default
    maxRecordBytes: 4000,
    durability: "force",
    timestampType: "LogAppendTime",
    segmentBytes: 1 << 20,
  });
  // A smaller max.message.bytes names Kafka's config too (it named maxRecordBytes).
  const [smaller] = await alterConfigs([[TOPIC, "t", [["max.message.bytes", SET, "3000"]]]]);
  expect(smaller![0]).toBe(KAFKA_ERROR.INVALID_CONFIG);
  expect(smaller![1]).toMatch(/^max\.message\.bytes can only increase on an existing topic/);
  // validate_only is refused rather than pretending: nothing changes.
  const [validated] = await alterConfigs([[TOPIC, "t", [["retention.bytes", SET, "5"]]]], true);
  expect(validated![0]).toBe(KAFKA_ERROR.INVALID_REQUEST);
  expect(broker.describeTopic("t").config.retentionBytes).toBe(1_048_576);
});

/** One AlterConfigs (33) request of `version` (0 or 1: the same layout); its per-resource answers. */
async function legacyAlterConfigs(
  version: number,
  resources: [type: number, name: string, configs: [name: string, value: string | null][]][],
): Promise<[code: number, message: string | null, type: number, name: string][]> {
  const request = new Expect().i16(33).i16(version).i32(9).str("test").i32(resources.length);
  for (const [type, name, configs] of resources) {
    request.i8(type).str(name).i32(configs.length);
    for (const [configName, value] of configs) request.str(configName).str(value);
  }
  request.i8(0); // validate_only
  return answersOf(await handler.handle(request.body()), 9, "AlterConfigs response");
}

test("AlterConfigs (33) v0 and v1 replace a topic's Kafka settings whole: those named are set, the others go back to the default where a live topic allows; booblik's own keep theirs", async () => {
  // Before 2026-12-03 AlterConfigs was not served: the connection was closed (kafka-go's
  // Client.AlterConfigs, kafkajs's admin.alterConfigs) or the client refused (Sarama).
  broker.createTopic("t", {
    retentionMs: 1000,
    retentionBytes: 5000,
    maxRecordBytes: 2 * 1024 * 1024,
    segmentBytes: 8 << 20,
    durability: "force",
  });
  const [first] = await legacyAlterConfigs(0, [[TOPIC, "t", [["retention.bytes", "1048576"]]]]);
  expect(first).toEqual([KAFKA_ERROR.NONE, null, TOPIC, "t"]);
  const defaults = broker.topicDefaults;
  expect(broker.describeTopic("t").config).toMatchObject({
    retentionBytes: 1_048_576,
    retentionMs: defaults.retentionMs, // not named: back to the default
    durability: "force", // booblik's own setting, which a Kafka client cannot know: kept
    // Cannot change on a live topic, not named: kept.
    segmentBytes: 8 << 20,
    maxRecordBytes: 2 * 1024 * 1024,
  });
  // v1 is v0's layout; a fixed setting named with another value is refused (nothing changes), as
  // in IncrementalAlterConfigs; unknown topics and other resource types per resource.
  const answers = await legacyAlterConfigs(1, [
    [TOPIC, "t", [["retention.ms", "60000"]]],
    [TOPIC, "missing", [["retention.ms", "5"]]],
    [4, "1", [["log.retention.ms", "5"]]],
  ]);
  expect(answers.map(([code, , type, name]) => [code, type, name])).toEqual([
    [KAFKA_ERROR.NONE, TOPIC, "t"],
    [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, TOPIC, "missing"],
    [KAFKA_ERROR.INVALID_REQUEST, 4, "1"],
  ]);
  const [fixed] = await legacyAlterConfigs(1, [[TOPIC, "t", [["segment.bytes", "1048576"]]]]);
  expect(fixed![0]).toBe(KAFKA_ERROR.INVALID_CONFIG);
  expect(fixed![1]).toMatch(/^segment\.bytes cannot change on an existing topic/);
  expect(broker.describeTopic("t").config).toMatchObject({
    retentionMs: 60_000,
    retentionBytes: defaults.retentionBytes,
    segmentBytes: 8 << 20,
  });
});

test("the shape Kafka refuses before applying anything: a resource named twice (both refused), a config named twice, a null value (AlterConfigs; in IncrementalAlterConfigs only DELETE may have one)", async () => {
  broker.createTopic("t", { retentionMs: 1000 });
  // Before 2026-12-03 both were applied: the second replace-all silently undid the first.
  const twice = await legacyAlterConfigs(0, [
    [TOPIC, "t", [["retention.ms", "5000"]]],
    [TOPIC, "t", [["retention.bytes", "1048576"]]],
  ]);
  expect(twice.map(([code, message]) => [code, message])).toEqual([
    [KAFKA_ERROR.INVALID_REQUEST, "Each resource must appear at most once."],
    [KAFKA_ERROR.INVALID_REQUEST, "Each resource must appear at most once."],
  ]);
  const [duplicateKey] = await legacyAlterConfigs(0, [
    [
      TOPIC,
      "t",
      [
        ["retention.ms", "5000"],
        ["retention.ms", "6000"],
      ],
    ],
  ]);
  expect(duplicateKey!.slice(0, 2)).toEqual([
    KAFKA_ERROR.INVALID_REQUEST,
    "Error due to duplicate config keys",
  ]);
  const [nullValue] = await legacyAlterConfigs(1, [[TOPIC, "t", [["retention.ms", null]]]]);
  expect(nullValue!.slice(0, 2)).toEqual([
    KAFKA_ERROR.INVALID_REQUEST,
    "Null value not supported for : retention.ms",
  ]);
  const [nullSet] = await alterConfigs([[TOPIC, "t", [["retention.ms", SET, null]]]]);
  expect(nullSet!.slice(0, 2)).toEqual([
    KAFKA_ERROR.INVALID_REQUEST,
    "Null value not supported for : retention.ms",
  ]);
  const incrementalTwice = await alterConfigs([
    [TOPIC, "t", [["retention.ms", SET, "5"]]],
    [TOPIC, "t", [["retention.ms", DELETE, null]]],
  ]);
  expect(incrementalTwice.map(([code]) => code)).toEqual([
    KAFKA_ERROR.INVALID_REQUEST,
    KAFKA_ERROR.INVALID_REQUEST,
  ]);
  expect(broker.describeTopic("t").config.retentionMs).toBe(1000); // nothing applied
});

// Kafka 4.1.1's ConfigAdminManager.prepareIncrementalConfigs: APPEND (2) and SUBTRACT (3) apply to a
// LIST config, and `cleanup.policy` is one (booblik's DescribeConfigs answers its type LIST, 7):
// APPEND compact to delete gives delete,compact; SUBTRACT delete from that gives compact. Only a
// non-list config refuses them ("Config value append is not allowed for config key").
test("APPEND and SUBTRACT change cleanup.policy, a list config, as Kafka applies them", async () => {
  broker.createTopic("t", {});
  const SUBTRACT = 3;
  expect((await alterConfigs([[TOPIC, "t", [["cleanup.policy", APPEND, "compact"]]]]))[0]).toEqual([
    KAFKA_ERROR.NONE,
    null,
    TOPIC,
    "t",
  ]);
  expect(broker.describeTopic("t").config.cleanupPolicy).toBe("compact,delete");
  expect((await alterConfigs([[TOPIC, "t", [["cleanup.policy", SUBTRACT, "delete"]]]]))[0]![0]).toBe(
    KAFKA_ERROR.NONE,
  );
  expect(broker.describeTopic("t").config.cleanupPolicy).toBe("compact");
});
