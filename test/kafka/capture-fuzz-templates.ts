/**
 * Captures valid request frames of every Kafka API booblik serves and writes them to
 * fixtures/fuzz-templates.json: the starting points the Kafka fuzzer (fuzz-kafka.ts) mutates. Most
 * are what kafkajs 2.2.4 sends in a session that uses every API it has (admin, an idempotent
 * producer, a consumer group); the APIs kafkajs does not send (IncrementalAlterConfigs,
 * DescribeCluster, OffsetDelete, OffsetForLeaderEpoch, DescribeLogDirs, ElectLeaders) and
 * DescribeConfigs of a broker are hand-built with test/kafka/bytes.ts and
 * sent on the same listener, so every template is a frame the handler answered. A fixture, not a
 * capture at test time, so that a seed replays the same frames. Run by hand when the served APIs
 * change: `bun test/kafka/capture-fuzz-templates.ts`. Topic names start with `tpl-`, group names
 * with `tpl`, so that the fuzzer's replayed templates do not touch the well-behaved client's topic.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from "kafkajs";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_API_NAMES } from "../../src/kafka/apis.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import { Expect } from "./bytes.ts";

interface Template {
  api: string;
  apiKey: number;
  apiVersion: number;
  source: string;
  /** The frame without its int32 size prefix, as the handler receives it. */
  hex: string;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "booblik-fuzz-templates-"));
// ACLs enforced with the anonymous client a super user: the ACL APIs answer (not SECURITY_DISABLED).
const broker = Broker.open({ dataDir, authorization: { superUsers: ["User:ANONYMOUS"] } });
const listener = new KafkaListener(broker, {
  hostname: "127.0.0.1",
  port: 0,
  maxFrameBytes: 1 << 24,
  maxConnections: 64,
  maxConnectionsPerAddress: 64,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 30_000,
  inboundBudget: new InboundBudget(1 << 26),
});
const { port } = listener.listen();
const captured: Template[] = [];
let source = "";
const handle = listener.handler.handle.bind(listener.handler);
listener.handler.handle = (frame, clientAddress) => {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const apiKey = view.getInt16(0);
  const apiVersion = view.getInt16(2);
  captured.push({
    api: KAFKA_API_NAMES[apiKey] ?? `unknown ${apiKey}`,
    apiKey,
    apiVersion,
    source,
    hex: Buffer.from(frame).toString("hex"),
  });
  return handle(frame, clientAddress);
};

/** Sends one hand-built frame and waits for its answer (any bytes back). */
async function sendRaw(name: string, request: Expect): Promise<void> {
  source = `hand-built ${name} (test/kafka/bytes.ts)`;
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request.frame()));
    socket.once("data", () => {
      socket.destroy();
      resolve();
    });
    socket.once("error", reject);
  });
}

try {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${port}`], clientId: "tpl", logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  source = "kafkajs 2.2.4 admin";
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: "tpl-a", numPartitions: 2, configEntries: [{ name: "retention.ms", value: "60000" }] },
      { topic: "tpl-b", numPartitions: 1 },
    ],
  });
  await admin.createPartitions({ topicPartitions: [{ topic: "tpl-b", count: 2 }] });
  await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: "tpl-a" }] });
  await admin.fetchTopicMetadata({ topics: ["tpl-a"] });
  await admin.fetchTopicOffsets("tpl-a");
  await admin.fetchTopicOffsetsByTimestamp("tpl-a", 1_700_000_000_000);

  source = "kafkajs 2.2.4 idempotent producer";
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await producer.send({
    topic: "tpl-a",
    messages: [
      { key: "k1", value: "v1", partition: 0, headers: { h: "x" } },
      { key: "k2", value: "v2", partition: 1 },
    ],
  });
  await producer.disconnect();

  source = "kafkajs 2.2.4 consumer group";
  const consumer = kafka.consumer({ groupId: "tpl-group", sessionTimeout: 6000, heartbeatInterval: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: ["tpl-a"], fromBeginning: true });
  let seen = 0;
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ heartbeat }) => {
        seen++;
        await heartbeat();
        if (seen === 2) resolve();
      },
    });
  });
  await consumer.commitOffsets([{ topic: "tpl-a", partition: 0, offset: "1" }]);
  await consumer.disconnect();

  source = "kafkajs 2.2.4 admin";
  await admin.listGroups();
  await admin.describeGroups(["tpl-group"]);
  await admin.fetchOffsets({ groupId: "tpl-group", topics: ["tpl-a"] });
  await admin.setOffsets({
    groupId: "tpl-group",
    topic: "tpl-a",
    partitions: [{ partition: 1, offset: "1" }],
  });
  await admin.deleteTopicRecords({ topic: "tpl-a", partitions: [{ partition: 0, offset: "1" }] });

  await sendRaw(
    "INCREMENTAL_ALTER_CONFIGS v0",
    new Expect()
      .i16(44)
      .i16(0)
      .i32(7)
      .str("tpl")
      .i32(1)
      .i8(2)
      .str("tpl-a")
      .i32(1)
      .str("retention.ms")
      .i8(0)
      .str("120000")
      .i8(0),
  );
  await sendRaw(
    "DESCRIBE_CLUSTER v1",
    new Expect().i16(60).i16(1).i32(7).str("tpl").uvarint(0).i8(0).i8(1).uvarint(0),
  );
  await sendRaw(
    "OFFSET_DELETE v0",
    new Expect().i16(47).i16(0).i32(7).str("tpl").str("tpl-group").i32(1).str("tpl-a").i32(1).i32(1),
  );
  await sendRaw(
    "OFFSET_FOR_LEADER_EPOCH v3",
    new Expect().i16(23).i16(3).i32(7).str("tpl").i32(-1).i32(1).str("tpl-a").i32(1).i32(0).i32(-1).i32(0),
  );
  await sendRaw(
    "DESCRIBE_LOG_DIRS v1",
    new Expect().i16(35).i16(1).i32(7).str("tpl").i32(1).str("tpl-a").i32(2).i32(0).i32(1),
  );
  await sendRaw(
    "DESCRIBE_LOG_DIRS v4",
    new Expect()
      .i16(35)
      .i16(4)
      .i32(7)
      .str("tpl")
      .uvarint(0)
      .uvarint(2)
      .cstr("tpl-a")
      .uvarint(2)
      .i32(0)
      .uvarint(0)
      .uvarint(0),
  );
  await sendRaw(
    "ELECT_LEADERS v1",
    new Expect().i16(43).i16(1).i32(7).str("tpl").i8(0).i32(1).str("tpl-a").i32(2).i32(0).i32(1).i32(1000),
  );
  await sendRaw(
    "ELECT_LEADERS v2",
    new Expect().i16(43).i16(2).i32(7).str("tpl").uvarint(0).i8(1).uvarint(0).i32(1000).uvarint(0),
  );
  await sendRaw(
    "DESCRIBE_CONFIGS v3 (broker)",
    new Expect().i16(32).i16(3).i32(7).str("tpl").i32(1).i8(4).str("1").i32(-1).i8(1).i8(1),
  );

  source = "kafkajs 2.2.4 admin";
  const tplAcl = {
    resourceType: AclResourceTypes.TOPIC,
    resourceName: "tpl-",
    resourcePatternType: ResourcePatternTypes.PREFIXED,
    principal: "User:tpl",
    host: "*",
    operation: AclOperationTypes.READ,
    permissionType: AclPermissionTypes.ALLOW,
  };
  await admin.createAcls({ acl: [tplAcl] });
  await admin.describeAcls({
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.MATCH,
    resourceName: "tpl-a",
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  await admin.deleteAcls({ filters: [tplAcl] });
  await admin.deleteGroups(["tpl-group"]);
  await admin.deleteTopics({ topics: ["tpl-b"] });
  await admin.disconnect();
} finally {
  await listener.stop();
  await broker.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

// One frame per API key and version (the first seen): the fuzzer picks among them uniformly.
const unique = new Map<string, Template>();
for (const template of captured) {
  const key = `${template.apiKey}/${template.apiVersion}`;
  if (!unique.has(key)) unique.set(key, template);
}
const templates = [...unique.values()].sort((a, b) => a.apiKey - b.apiKey || a.apiVersion - b.apiVersion);
const out = path.join(import.meta.dir, "fixtures", "fuzz-templates.json");
fs.writeFileSync(out, `${JSON.stringify(templates, null, 2)}\n`);
console.log(
  `wrote ${templates.length} frames to ${out}: ${templates.map((t) => `${t.api} v${t.apiVersion}`).join(", ")}`,
);
const missing = Object.entries(KAFKA_API_NAMES).filter(
  ([key]) => !templates.some((t) => t.apiKey === Number(key)),
);
if (missing.length > 0) console.log(`no frame of: ${missing.map(([, name]) => name).join(", ")}`);
