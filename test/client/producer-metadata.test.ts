/**
 * The Producer learns a topic's new partition count (issue 15: it read it once and kept it, so
 * after add-partitions keyed records never reached the new partitions): its metadata is read again
 * in the background once older than `metadataMaxAgeMs` (Kafka's metadata.max.age.ms). Against a
 * real broker process; partitions are added by another client, as an operator would.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { partitionForKey } from "../../src/record/partitioner.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

/** A key that Kafka's partitioner puts on partition 0 of 1 and on a new partition of 4. */
function keyMovingTo(): { key: string; partition: number } {
  for (let i = 0; ; i++) {
    const key = `k${i}`;
    const partition = partitionForKey(new TextEncoder().encode(key), 4);
    if (partition !== 0) return { key, partition };
  }
}

test("a producer's keyed records reach partitions added after its first send", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await admin.createTopic("t", { partitions: 1 });
    const { key, partition } = keyMovingTo();
    const producer = new Producer(client, { lingerMs: 1, metadataMaxAgeMs: 0 });
    expect((await producer.send("t", { key, value: "before" })).partition).toBe(0);
    await admin.addPartitions("t", 4);
    // The batch that finds the metadata stale still goes by the old count; a later one by the new.
    // Bounded by a count of sends, not by time: each send waits for its acknowledgement.
    const landed: number[] = [];
    for (let i = 0; i < 20 && landed.at(-1) !== partition; i++)
      landed.push((await producer.send("t", { key, value: `after ${i}` })).partition);
    expect(landed.at(-1)).toBe(partition);
    // Once moved, the key stays on its new partition.
    expect((await producer.send("t", { key, value: "last" })).partition).toBe(partition);
    await producer.close();
  } finally {
    client.close();
    admin.close();
  }
});

test("with the default age the count is kept (no METADATA per batch), and a bad age is refused", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("t", { partitions: 1 });
    const { key } = keyMovingTo();
    const producer = new Producer(client, { lingerMs: 1 });
    await producer.send("t", { key, value: "a" });
    await client.addPartitions("t", 4);
    for (let i = 0; i < 5; i++) expect((await producer.send("t", { key, value: `b${i}` })).partition).toBe(0);
    await producer.close();
    expect(() => new Producer(client, { metadataMaxAgeMs: -1 })).toThrow(
      /metadataMaxAgeMs must be a number ≥ 0/,
    );
  } finally {
    client.close();
  }
});
