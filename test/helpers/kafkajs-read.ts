/**
 * Reading a topic back with kafkajs, as the fuzzers' well-behaved clients check what they produced:
 * a consumer group of its own from the beginning, until `count` values arrived.
 */
import type { Kafka } from "kafkajs";

/** The first `count` values of `topic` (partition order as kafkajs delivers them), as text. */
export async function readValuesWithKafkajs(
  kafka: Kafka,
  groupId: string,
  topic: string,
  count: number,
): Promise<string[]> {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000 });
  await consumer.connect();
  const values: string[] = [];
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value?.toString() ?? "");
          if (values.length === count) resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return values;
}
