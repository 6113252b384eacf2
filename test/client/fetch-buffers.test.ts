/**
 * A FETCH answer's records are views into its own receive buffer, which the connection hands over
 * and never writes again (src/client/connection.ts keepsFrame, InboundBuffer.detach): every record
 * of every fetch must stay intact while later answers arrive, whether they come one at a time or
 * pipelined back to back in the same chunks, and whether a value is read at once or much later.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient, type FetchResult } from "../../src/client/client.ts";
import { type ConsumedRecord, Consumer } from "../../src/client/consumer.ts";
import { Producer } from "../../src/client/producer.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { fetchedValues } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

/** Record i's value: `bytes` bytes that differ from every other record's (its index, then a pattern). */
function recordValueOf(i: number, bytes: number): Uint8Array {
  const value = new Uint8Array(bytes);
  new DataView(value.buffer).setUint32(0, i);
  for (let b = 4; b < bytes; b++) value[b] = (i * 7 + b) & 0xff;
  return value;
}

const RECORDS = 3000;
const VALUE_BYTES = 1000;

describe("fetched records keep their bytes", () => {
  test("records held from many fetches (one at a time, then pipelined) are unchanged at the end", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("held", { durability: "append" });
      // Small batches, so that a fetch of 64 KiB ends between entries and fetches are many.
      const producer = new Producer(client, { batchBytes: 16 * 1024 });
      for (let i = 0; i < RECORDS; i++)
        producer.write("held", recordValueOf(i, VALUE_BYTES), { partition: 0 });
      await producer.close();

      // One at a time through the consumer: every record kept, none read before the end.
      const held: ConsumedRecord[] = [];
      const consumer = new Consumer(client, { topic: "held", from: 0, stopAtEnd: true, maxBytes: 64 * 1024 });
      for await (const record of consumer) held.push(record);
      expect(held.length).toBe(RECORDS);
      held.forEach((record, i) => {
        expect(record.offset).toBe(i);
        expect(record.value).toEqual(recordValueOf(i, VALUE_BYTES));
      });

      // Pipelined: 24 fetches in flight at once, so that answers follow each other in the same
      // chunks (a buffer handed over while the next answer's first bytes are already in it).
      const offsets = Array.from({ length: 24 }, (_, k) => k * 120);
      const results: FetchResult[] = await Promise.all(
        offsets.map((offset) => client.fetch("held", 0, offset, { maxBytes: 64 * 1024 })),
      );
      results.forEach((result, k) => {
        const values = fetchedValues(result, offsets[k]!);
        expect(values.length).toBeGreaterThan(0);
        values.forEach((value, j) => {
          expect(value).toEqual(recordValueOf(offsets[k]! + j, VALUE_BYTES));
        });
      });
    } finally {
      client.close();
    }
  });

  test("records hold at most about twice their fetch's bytes: a small answer is copied, a large one keeps its buffer", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("sizes", { durability: "append" });
      const producer = new Producer(client, { batchBytes: 16 * 1024 });
      producer.write("sizes", recordValueOf(0, 10), { partition: 0 });
      await producer.flush();
      for (let i = 1; i < 200; i++) producer.write("sizes", recordValueOf(i, VALUE_BYTES), { partition: 0 });
      await producer.close();
      // One 10-byte record: its answer is small against the 64 KiB receive buffer.
      const small = await client.fetch("sizes", 0, 0, { maxBytes: 100 });
      expect(fetchedValues(small, 0)[0]).toEqual(recordValueOf(0, 10));
      expect(small.records.buffer.byteLength).toBeLessThan(2048);
      // A 64 KiB answer: the buffer it arrived in, at most twice its size.
      const large = await client.fetch("sizes", 0, 1, { maxBytes: 64 * 1024 });
      expect(large.records.length).toBeGreaterThan(32 * 1024);
      expect(large.records.buffer.byteLength).toBeLessThanOrEqual(2 * (64 * 1024 + 1024));
      fetchedValues(large, 1).forEach((value, j) => {
        expect(value).toEqual(recordValueOf(1 + j, VALUE_BYTES));
      });
    } finally {
      client.close();
    }
  });
});
