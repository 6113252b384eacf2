/**
 * Producer.accept() of one record, against a real broker process: once the topic's metadata is
 * known and the buffer has room, the record is buffered synchronously and the Accepted comes back
 * without a promise; its acknowledgement is derived from its batch's. These tests check what that
 * must not change: every record's acknowledgement names its own offset (read before or after the
 * batch settled), a failed batch rejects every record's acknowledgement in it, and errors stay
 * rejected promises (never a synchronous throw).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer, keyTextOf, textOf } from "../../src/client/consumer.ts";
import { Producer, type SendResult } from "../../src/client/producer.ts";
import { RecordTooLargeError } from "../../src/domain/errors.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

describe("Producer.accept() of one record", () => {
  test("returns the Accepted itself once the topic is known; each acknowledgement names its record's offset", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("acks", { partitions: 2, durability: "append" });
      // Small batches, so that the records spread over many batches and both partitions.
      const producer = new Producer(client, { batchBytes: 2048, lingerMs: 1 });
      const first = producer.accept("acks", "r0", { partition: 0 });
      expect(first).toBeInstanceOf(Promise); // the topic's metadata is not known yet
      const early: { index: number; acknowledged: Promise<SendResult> }[] = [
        { index: 0, acknowledged: (await first).acknowledged },
      ];
      const late: { index: number; accepted: Awaited<ReturnType<Producer["accept"]>> }[] = [];
      let synchronous = 0;
      for (let i = 1; i < 3000; i++) {
        const options = i % 3 === 0 ? { key: `k${i % 11}` } : { partition: i % 2 };
        const result = producer.accept(
          "acks",
          i % 5 === 0 ? { value: `r${i}`, headers: { h: "x" } } : `r${i}`,
          options,
        );
        if (!(result instanceof Promise)) synchronous++;
        const accepted = await result;
        // Some read at once (before their batch settled), the others only after flush().
        if (i % 4 === 0) early.push({ index: i, acknowledged: accepted.acknowledged });
        else late.push({ index: i, accepted });
      }
      expect(synchronous).toBeGreaterThan(2900); // all but those that waited for room
      await producer.flush();
      const byPartition = [new Map<number, string>(), new Map<number, string>()];
      for (const partition of [0, 1]) {
        for await (const record of new Consumer(client, { topic: "acks", partition, stopAtEnd: true }))
          byPartition[partition]!.set(record.offset, `${textOf(record)}/${keyTextOf(record)}`);
      }
      expect(byPartition[0]!.size + byPartition[1]!.size).toBe(3000);
      const all = [
        ...early,
        ...late.map(({ index, accepted }) => ({ index, acknowledged: accepted.acknowledged })),
      ];
      const seen = new Set<string>();
      for (const { index, acknowledged } of all) {
        const result = await acknowledged;
        expect(result.count).toBe(1);
        expect(result.topic).toBe("acks");
        expect(result.durability).toBe("appended");
        const stored = byPartition[result.partition]!.get(result.offset);
        expect(stored).toBe(`r${index}/${index > 0 && index % 3 === 0 ? `k${index % 11}` : null}`);
        seen.add(`${result.partition}:${result.offset}`);
      }
      expect(seen.size).toBe(3000); // no two records were given one offset
      await producer.close();
    } finally {
      client.close();
    }
  });

  test("a batch that fails rejects the acknowledgement of every record in it, read before or after", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("gone");
      const producer = new Producer(client, { lingerMs: 1, idempotent: false });
      await (await producer.accept("gone", "warm-up")).acknowledged; // the topic is known now
      await client.deleteTopic("gone");
      const readAtOnce = (await producer.accept("gone", "a")).acknowledged;
      const readLater = await producer.accept("gone", "b");
      await expect(producer.flush()).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
      await expect(readAtOnce).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
      await expect(readLater.acknowledged).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
      await producer.close().catch(() => undefined);
    } finally {
      client.close();
    }
  });

  test("errors are rejected promises, never synchronous throws", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("small", { maxRecordBytes: 100, segmentBytes: 4096 });
      const producer = new Producer(client);
      await (await producer.accept("small", "fits")).acknowledged;
      const tooLarge = producer.accept("small", new Uint8Array(500));
      expect(tooLarge).toBeInstanceOf(Promise);
      await expect(tooLarge).rejects.toBeInstanceOf(RecordTooLargeError);
      const notBytes = producer.accept("small", 42 as unknown as string);
      expect(notBytes).toBeInstanceOf(Promise);
      await expect(notBytes).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(producer.close()).rejects.toMatchObject({ code: "RECORD_TOO_LARGE" });
      const closed = producer.accept("small", "late");
      expect(closed).toBeInstanceOf(Promise);
      await expect(closed).rejects.toMatchObject({ code: "CLOSED" });
      expect((await client.listOffsets("small", 0)).nextOffset).toBe(1);
    } finally {
      client.close();
    }
  });
});
