/**
 * A new producer's first keyless batch goes to a random partition: before, every producer started
 * at partition 0, so six short CLI runs into a 4-partition topic all landed on partition 0.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

test("twenty one-record producers do not all land on one of four partitions", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("spread", { partitions: 4 });
    const PRODUCERS = 20;
    const partitions: number[] = [];
    for (let i = 0; i < PRODUCERS; i++) {
      const producer = new Producer(client);
      partitions.push((await producer.send("spread", `record ${i}`)).partition);
      await producer.close();
    }
    // With a uniform random start, all 20 land on the same partition with probability
    // 4 × (1/4)^20 = 4^-19 ≈ 3.6e-12: a false failure is practically impossible. Before the fix all
    // 20 went to partition 0 every time.
    expect(new Set(partitions).size).toBeGreaterThan(1);
    const metadata = await client.metadata(["spread"]);
    const total = metadata.topics[0]!.partitions.reduce((sum, p) => sum + p.nextOffset, 0);
    expect(total).toBe(PRODUCERS);
  } finally {
    client.close();
  }
});
