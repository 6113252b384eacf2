/**
 * Kafka's CreatePartitions (37) on the Kafka listener, through kafkajs 2.2.4's admin against a broker
 * process started with `--kafka-port 0`: partitions added show up in metadata and take records;
 * fewer partitions, manual assignments and growth beyond --max-partitions are refused with Kafka's codes.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Refusal = { type?: string; errors?: { type: string; topic?: string }[]; message: string };

test("kafkajs admin.createPartitions raises the count; refusals carry Kafka's codes", async () => {
  const dir = tempDir("kafka-partitions");
  cleanups.push(() => dir[Symbol.dispose]());
  const broker = await startBroker(dir.path, ["--kafka-port", "0", "--max-partitions", "6"]);
  cleanups.push(async () => {
    await broker.stop();
  });
  const kafkaPort = await kafkaPortOf(broker);
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${kafkaPort}`],
    clientId: "test",
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  cleanups.push(() => admin.disconnect());
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "orders", numPartitions: 2 }] });

  await admin.createPartitions({ topicPartitions: [{ topic: "orders", count: 4 }] });
  const metadata = await admin.fetchTopicMetadata({ topics: ["orders"] });
  expect(metadata.topics[0]!.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2, 3]);

  // A new partition takes records at once.
  const producer = kafka.producer();
  cleanups.push(() => producer.disconnect());
  await producer.connect();
  const [sent] = await producer.send({ topic: "orders", messages: [{ value: "x", partition: 3 }] });
  expect([sent!.partition, sent!.baseOffset]).toEqual([3, "0"]);

  const refusal = async (request: Parameters<typeof admin.createPartitions>[0]) =>
    (await admin.createPartitions(request).then(
      () => ({ message: "accepted" }),
      (error: unknown) => error,
    )) as Refusal;
  const fewer = await refusal({ topicPartitions: [{ topic: "orders", count: 3 }] });
  expect(fewer.type ?? fewer.errors?.[0]?.type).toBe("INVALID_PARTITIONS");
  const assigned = await refusal({ topicPartitions: [{ topic: "orders", count: 5, assignments: [[1]] }] });
  expect(assigned.type ?? assigned.errors?.[0]?.type).toBe("INVALID_REPLICA_ASSIGNMENT");
  // Beyond --max-partitions: the broker's limit, as Kafka's POLICY_VIOLATION.
  const beyond = await refusal({ topicPartitions: [{ topic: "orders", count: 7 }] });
  expect(beyond.type ?? beyond.errors?.[0]?.type).toBe("POLICY_VIOLATION");
  expect((await admin.fetchTopicMetadata({ topics: ["orders"] })).topics[0]!.partitions.length).toBe(4);
});
