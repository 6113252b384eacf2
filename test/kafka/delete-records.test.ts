/**
 * Kafka's DeleteRecords (21) on the Kafka listener, through kafkajs 2.2.4's admin
 * (`deleteTopicRecords`) against a broker process started with `--kafka-port 0`: the log start moves
 * (ListOffsets earliest, `fetchTopicOffsets` low), a consumer from the beginning starts there, −1
 * deletes every record, and an offset beyond the high watermark is refused with
 * OFFSET_OUT_OF_RANGE. The native LIST_OFFSETS sees the same start.
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

test("kafkajs admin.deleteTopicRecords moves the low watermark; beyond the high one is refused", async () => {
  const dir = tempDir("kafka-delete-records");
  cleanups.push(() => dir[Symbol.dispose]());
  const broker = await startBroker(dir.path, ["--kafka-port", "0"]);
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
  const producer = kafka.producer();
  cleanups.push(() => producer.disconnect());
  await producer.connect();
  for (let i = 0; i < 10; i++) {
    await producer.send({
      topic: "orders",
      messages: [
        { value: `a${i}`, partition: 0 },
        { value: `b${i}`, partition: 1 },
      ],
    });
  }
  await admin.fetchTopicMetadata({ topics: ["orders"] });

  await admin.deleteTopicRecords({
    topic: "orders",
    partitions: [
      { partition: 0, offset: "4" },
      { partition: 1, offset: "-1" },
    ],
  });
  const offsets = await admin.fetchTopicOffsets("orders");
  expect(offsets.map((p) => [p.partition, p.low, p.high]).sort()).toEqual([
    [0, "4", "10"],
    [1, "10", "10"],
  ]);
  // The native protocol sees the same start.
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  cleanups.push(() => client.close());
  expect(await client.listOffsets("orders", 0)).toEqual({ logStartOffset: 4, nextOffset: 10 });

  // A consumer from the beginning starts at the low watermark.
  const consumer = kafka.consumer({ groupId: "g" });
  cleanups.push(() => consumer.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topic: "orders", fromBeginning: true });
  const seen: string[] = [];
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.push(`${partition}:${message.offset}:${message.value?.toString()}`);
        if (seen.length === 6) resolve();
      },
    });
  });
  await done;
  expect(seen.sort()).toEqual(["0:4:a4", "0:5:a5", "0:6:a6", "0:7:a7", "0:8:a8", "0:9:a9"]);
  await consumer.disconnect();

  // Beyond the high watermark: OFFSET_OUT_OF_RANGE, nothing moved.
  type Refusal = { cause?: { partitions?: { partition: number; error: { type: string } }[] } };
  const refused = (await admin
    .deleteTopicRecords({ topic: "orders", partitions: [{ partition: 0, offset: "11" }] })
    .then(
      () => undefined,
      (error: unknown) => error,
    )) as Refusal | undefined;
  // kafkajs wraps the broker's per-partition answer (KafkaJSDeleteTopicRecordsError) as the cause.
  expect(refused?.cause?.partitions?.map((p) => [p.partition, p.error.type])).toEqual([
    [0, "OFFSET_OUT_OF_RANGE"],
  ]);
  expect(await client.listOffsets("orders", 0)).toEqual({ logStartOffset: 4, nextOffset: 10 });
});
