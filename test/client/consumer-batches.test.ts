/**
 * Consumer.batches() yields batches that iterate their records synchronously (one promise per fetch,
 * none per record), against a real broker process: the same records as `for await (record of
 * consumer)`, from the start offset on (a start inside a stored batch drops the records before it),
 * a batch can be iterated twice, and records kept from earlier fetches do not change later.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import {
  type ConsumedRecord,
  Consumer,
  headersTextOf,
  keyTextOf,
  textOf,
} from "../../src/client/consumer.ts";
import { Producer } from "../../src/client/producer.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const describeRecord = (record: ConsumedRecord) =>
  `${record.offset}:${keyTextOf(record)}:${textOf(record)}:${JSON.stringify(headersTextOf(record))}`;

test("batches iterate their records synchronously: the same records as for await, from the start offset", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("it");
    const producer = new Producer(client);
    // Stored batches of 10 records each, with keys, null values and headers among them.
    for (let b = 0; b < 50; b++) {
      await producer.send(
        "it",
        Array.from({ length: 10 }, (_, i) => {
          const n = b * 10 + i;
          return n % 7 === 0
            ? { key: "k", value: null, headers: [{ key: "h", value: `v${n}` }] }
            : { key: "k", value: `record ${n}` };
        }),
        { partition: 0 },
      );
    }
    const start = 123; // inside the stored batch of offsets 120-129
    const expected: string[] = [];
    for await (const record of new Consumer(client, { topic: "it", from: start, stopAtEnd: true }))
      expected.push(describeRecord(record));
    expect(expected.length).toBe(500 - start);
    expect(expected[0]!.startsWith("123:k:record 123")).toBe(true);

    // Small fetches, so that the records come in many batches.
    const consumer = new Consumer(client, { topic: "it", from: start, stopAtEnd: true, maxBytes: 1024 });
    const kept: ConsumedRecord[] = [];
    let fetches = 0;
    for await (const batch of consumer.batches()) {
      fetches++;
      const first = [...batch].map(describeRecord);
      const again: string[] = [];
      for (const record of batch) {
        again.push(describeRecord(record));
        kept.push(record);
      }
      expect(again).toEqual(first); // each iteration is its own
      expect(first.length).toBe(batch.count);
    }
    expect(fetches).toBeGreaterThan(5);
    // Records kept from the first fetches read the same after every later fetch.
    expect(kept.map(describeRecord)).toEqual(expected);
  } finally {
    client.close();
  }
});
