/**
 * Committed offsets through the client against a broker process: commitOffsets / fetchOffsets /
 * deleteGroup round trips with typed errors; a Consumer with a `group` starts from the group's
 * committed offset (else its `from`), commits in batches (a few commits for thousands of records,
 * read from the offsets topic's own end offset), commits its final position on close, and a second
 * consumer of the group resumes exactly there.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer, textOf } from "../../src/client/consumer.ts";
import { Producer } from "../../src/client/producer.ts";
import { BooblikError } from "../../src/domain/errors.ts";
import { OFFSETS_TOPIC_NAME } from "../../src/domain/limits.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(60_000);

const RECORDS = 5000;

async function withBroker(run: (client: BooblikClient) => Promise<void>): Promise<void> {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("events", { partitions: 2 });
    // Batches of 100 records, so that a fetch of 16 KiB returns about 1,000 of them.
    const producer = new Producer(client, {});
    for (let start = 0; start < RECORDS; start += 100)
      await producer.send(
        "events",
        Array.from({ length: 100 }, (_, i) => `e${start + i}`),
        { partition: 1 },
      );
    await producer.close();
    await run(client);
  } finally {
    client.close();
  }
}

describe("client commitOffsets / fetchOffsets / deleteGroup", () => {
  test("round trip, −1 where nothing was committed, typed errors for bad input", async () => {
    await withBroker(async (client) => {
      await client.commitOffsets("app", [
        { topic: "events", partition: 1, offset: 10, metadata: "host-a" },
        { topic: "events", partition: 0, offset: 0 },
      ]);
      const fetched = await client.fetchOffsets("app", [{ topic: "events" }]);
      expect(fetched.map(({ partition, offset, metadata }) => ({ partition, offset, metadata }))).toEqual([
        { partition: 0, offset: 0, metadata: "" },
        { partition: 1, offset: 10, metadata: "host-a" },
      ]);
      expect((await client.fetchOffsets("other", [{ topic: "events", partitions: [1] }]))[0]!.offset).toBe(
        -1,
      );
      const unknown = await client
        .commitOffsets("app", [{ topic: "events", partition: 2, offset: 1 }])
        .catch((error: unknown) => error);
      expect(unknown).toBeInstanceOf(BooblikError);
      expect((unknown as BooblikError).code).toBe("UNKNOWN_TOPIC_OR_PARTITION");
      expect((unknown as BooblikError).message).toContain("unknown partition events/2");
      await client.deleteGroup("app");
      expect(await client.fetchOffsets("app")).toEqual([]);
    });
  });
});

describe("Consumer with a group", () => {
  test("commits in batches and on close; the next consumer of the group resumes there; `from` when none", async () => {
    await withBroker(async (client) => {
      const first = new Consumer(client, {
        topic: "events",
        partition: 1,
        group: "readers",
        commitEveryRecords: 1000,
        commitIntervalMs: 60_000,
        maxBytes: 16 * 1024,
      });
      let seen = 0;
      for await (const record of first) {
        expect(textOf(record)).toBe(`e${seen}`);
        seen++;
        if (seen === 4321) break;
      }
      await first.close();
      expect(first.committed).toBe(4321);
      // Batched: a handful of commits (each a record of the offsets topic), not one per record.
      const commits = (await client.listOffsets(OFFSETS_TOPIC_NAME, 0)).nextOffset;
      expect(commits).toBeGreaterThanOrEqual(2);
      expect(commits).toBeLessThanOrEqual(10);
      const [stored] = await client.fetchOffsets("readers", [{ topic: "events", partitions: [1] }]);
      expect(stored!.offset).toBe(4321);

      // `from` is ignored when the group has a committed offset.
      const second = new Consumer(client, {
        topic: "events",
        partition: 1,
        group: "readers",
        from: 0,
        stopAtEnd: true,
      });
      const rest: string[] = [];
      for await (const record of second) rest.push(textOf(record));
      await second.close();
      expect(rest).toEqual(Array.from({ length: RECORDS - 4321 }, (_, i) => `e${4321 + i}`));
      expect(second.committed).toBe(RECORDS);

      // A group without a commit for this partition starts at `from`.
      const fresh = new Consumer(client, {
        topic: "events",
        partition: 1,
        group: "fresh",
        from: 4998,
        stopAtEnd: true,
      });
      const tail: string[] = [];
      for await (const record of fresh) tail.push(textOf(record));
      await fresh.close();
      expect(tail).toEqual(["e4998", "e4999"]);
      expect((await client.fetchOffsets("fresh"))[0]!.offset).toBe(RECORDS);
    });
  });

  test("the record iterator commits within a fetch: after commitEveryRecords records, or commitIntervalMs, never past what was processed", async () => {
    await withBroker(async (client) => {
      const committedOf = async (group: string) =>
        (await client.fetchOffsets(group, [{ topic: "events", partitions: [1] }]))[0]!.offset;
      // One fetch (1 MiB) holds all 5,000 records: before 2026-12-03 nothing was committed until
      // the iteration came back for a second fetch.
      const byCount = new Consumer(client, {
        topic: "events",
        partition: 1,
        group: "by-count",
        commitEveryRecords: 1000,
        commitIntervalMs: 60_000,
      });
      let seen = 0;
      for await (const record of byCount) {
        expect(textOf(record)).toBe(`e${seen}`);
        seen++;
        if (seen === 2500) {
          await waitUntil(async () => (await committedOf("by-count")) >= 1000, "a commit within the fetch");
          // Only what was handed out before the record in hand, which may still be being processed.
          expect(await committedOf("by-count")).toBeLessThan(2500);
          break;
        }
      }
      await byCount.close();
      const byTime = new Consumer(client, {
        topic: "events",
        partition: 1,
        group: "by-time",
        commitEveryRecords: 1_000_000,
        commitIntervalMs: 50,
      });
      seen = 0;
      for await (const _ of byTime) {
        seen++;
        if (seen === 300) await Bun.sleep(60); // processing that outlasts the interval
        if (seen === 500) {
          await waitUntil(async () => (await committedOf("by-time")) >= 300, "a commit after the interval");
          expect(await committedOf("by-time")).toBeLessThan(500);
          break;
        }
      }
      await byTime.close();
    });
  });

  test("a topic deleted and created again under a running group consumer: the iteration ends with a clear error, and the old position is not committed into the new topic", async () => {
    await withBroker(async (client) => {
      const consumer = new Consumer(client, { topic: "events", partition: 1, group: "across" });
      let seen = 0;
      let ended: unknown;
      try {
        for await (const _ of consumer) {
          seen++;
          if (seen === 10) {
            // While the application works on record 10 (the rest of the 5,000 already fetched).
            await client.deleteTopic("events");
            await client.createTopic("events", { partitions: 2 });
            const producer = new Producer(client, {});
            for (let start = 0; start < 6000; start += 100)
              await producer.send(
                "events",
                Array.from({ length: 100 }, (_, i) => `n${start + i}`),
                { partition: 1 },
              );
            await producer.close();
          }
        }
      } catch (error) {
        ended = error;
      }
      // Before 2026-12-03 it went on at offset 5,000 of the new topic, skipping n0-n4999, and
      // committed there.
      expect(ended).toBeInstanceOf(BooblikError);
      expect((ended as BooblikError).code).toBe("UNKNOWN_TOPIC_OR_PARTITION");
      expect((ended as BooblikError).message).toContain("deleted and created again");
      await consumer.close();
      const [stored] = await client.fetchOffsets("across", [{ topic: "events", partitions: [1] }]);
      expect(stored!.offset).toBe(-1);
      // A new consumer of the group reads the new topic from its start.
      const again = new Consumer(client, { topic: "events", partition: 1, group: "across", stopAtEnd: true });
      const first: string[] = [];
      for await (const record of again) {
        first.push(textOf(record));
        if (first.length === 3) break;
      }
      await again.close();
      expect(first).toEqual(["n0", "n1", "n2"]);
    });
  });

  test("a group the broker refuses ends the iteration with the broker's error", async () => {
    await withBroker(async (client) => {
      const consumer = new Consumer(client, { topic: "events", group: "", stopAtEnd: true });
      const error = await (async () => {
        for await (const _ of consumer) return undefined;
        return undefined;
      })().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(BooblikError);
      expect((error as BooblikError).message).toBe("OFFSET_FETCH: the group id is empty");
    });
  });
});
