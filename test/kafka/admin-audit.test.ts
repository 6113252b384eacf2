/**
 * Admin actions through the Kafka listener, and a group deleted through the native one, are audited
 * with who and from where, done or refused, like the native admin requests (issue 14; the lines'
 * form is docs/security.md "Audit"). kafkajs 2.2.4's admin against a broker child process.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { BooblikClient } from "../../src/client/client.ts";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

test("kafkajs admin actions and a native group delete each leave an audit line naming who and from where", async () => {
  const dir = tempDir("kafka-admin-audit");
  cleanups.push(() => dir[Symbol.dispose]());
  const broker = await startBroker(dir.path, ["--kafka-port", "0"]);
  cleanups.push(async () => {
    await broker.stop();
  });
  const kafkaPort = await kafkaPortOf(broker);
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${kafkaPort}`],
    clientId: "audit",
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  cleanups.push(() => admin.disconnect());
  await admin.connect();

  const audited = (text: string) =>
    broker.lines.waitFor(
      (l) => l.startsWith("booblik: audit: ") && l.includes(text),
      `the audit line "${text}"`,
    );

  await admin.createTopics({ topics: [{ topic: "orders", numPartitions: 1 }] });
  expect(await audited('created topic "orders" (1 partitions')).toMatch(
    /^booblik: audit: anonymous from 127\.0\.0\.1 \(kafka\): created topic "orders" \(1 partitions, force, file, segments of \d+ bytes\)$/,
  );
  await admin.createTopics({ topics: [{ topic: "bad name!", numPartitions: 1 }] }).catch(() => undefined);
  await audited('create topic "bad name!" refused:');

  await admin.createPartitions({ topicPartitions: [{ topic: "orders", count: 3 }] });
  await audited('added partitions to topic "orders": 1 → 3');

  const producer = kafka.producer();
  cleanups.push(() => producer.disconnect());
  await producer.connect();
  await producer.send({
    topic: "orders",
    messages: [0, 1, 2, 3].map((i) => ({ value: `v${i}`, partition: 0 })),
  });
  await admin.deleteTopicRecords({ topic: "orders", partitions: [{ partition: 0, offset: "2" }] });
  await audited('purged topic "orders": partition 0 before 2; it now starts from 2');

  // A group with commits and no members, deleted through Kafka, then another through the native listener.
  await admin.setOffsets({
    groupId: "billing",
    topic: "orders",
    partitions: [{ partition: 0, offset: "3" }],
  });
  await admin.deleteGroups(["billing"]);
  await audited('(kafka): deleted group "billing"');
  await admin.setOffsets({
    groupId: "reports",
    topic: "orders",
    partitions: [{ partition: 0, offset: "1" }],
  });
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
  cleanups.push(() => client.close());
  await client.deleteGroup("reports");
  expect(await audited('deleted group "reports"')).toMatch(
    /^booblik: audit: anonymous from 127\.0\.0\.1: deleted group "reports"$/,
  );
  await client.deleteGroup("never-committed").catch(() => undefined);
  await audited('delete group "never-committed" refused:');

  await admin.deleteTopics({ topics: ["orders"] });
  await audited('(kafka): deleted topic "orders"');
});
