/**
 * The broker-wide bound on remembered idempotent producer ids (`--max-producer-ids`,
 * producer-state.ts "Bounds"), through a real Broker on a temporary data directory: all partitions
 * together stay within it, a partition that meets a new producer beyond it forgets its own producer
 * idle longest (whose resend is then appended again, as after expiry) while every other producer
 * keeps its duplicate check, a deleted topic gives its ids back, and a restart counts the same.
 * Before 2026-12-03 only each partition was bounded (10,000 ids), so 4,096 partitions of made-up ids
 * could hold about 10 GiB.
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { ioError } from "../../ffi/file.ts";
import { Broker } from "../../src/broker/broker.ts";
import { PRODUCER_STATE_FILE } from "../../src/broker/producer-state.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";

function batch(producerId: number, baseSequence: number, value: string): Uint8Array {
  return encodeBatch([{ key: null, value: new TextEncoder().encode(value), timestamp: 1_000 }], {
    producerId,
    producerEpoch: 0,
    baseSequence,
  });
}

test("all partitions together remember at most --max-producer-ids producer ids; beyond, a partition forgets its own oldest", async () => {
  using dir = tempDir();
  const open = () =>
    Broker.open({
      dataDir: dir.path,
      topicDefaults: { durability: "append" },
      limits: { maxProducerIds: 4 },
    });
  let broker = open();
  try {
    broker.createTopic("a", { partitions: 1 });
    broker.createTopic("b", { partitions: 1 });
    for (let producerId = 1; producerId <= 4; producerId++)
      await broker.append("a", 0, batch(producerId, 0, `a${producerId}`));
    expect(broker.producerIdBudget.count).toBe(4);
    // The bound is reached: a partition without producers still takes its first one (so the
    // broker may exceed the bound by one per partition), and then forgets its own oldest.
    await broker.append("b", 0, batch(5, 0, "b5"));
    expect(broker.producerIdBudget.count).toBe(5);
    await broker.append("b", 0, batch(6, 0, "b6"));
    expect(broker.producerIdBudget.count).toBe(5);
    await broker.append("a", 0, batch(7, 0, "a7"));
    expect(broker.producerIdBudget.count).toBe(5);
    // a forgot producer 1 (its oldest), b forgot producer 5: their resends are appended again.
    expect((await broker.append("a", 0, batch(1, 0, "a1"))).duplicate).toBeFalsy();
    expect((await broker.append("b", 0, batch(5, 0, "b5"))).duplicate).toBeFalsy();
    // Producers still remembered keep their duplicate check: a resend gets the original offsets.
    const resend = await broker.append("a", 0, batch(7, 0, "a7"));
    expect(resend.duplicate).toBe(true);
    expect(Number(resend.firstOffset)).toBe(4);
    expect(broker.producerIdBudget.count).toBe(5);
    // A restart counts what the partitions rebuilt, within the same bound.
    await broker.close();
    broker = open();
    expect(broker.producerIdBudget.count).toBeGreaterThan(0);
    expect(broker.producerIdBudget.count).toBeLessThanOrEqual(5);
    const perPartition = [broker.partition("a", 0), broker.partition("b", 0)].map(
      (p) => p.producers.producerCount,
    );
    expect(perPartition[0]! + perPartition[1]!).toBe(broker.producerIdBudget.count);
    // A deleted topic gives its producer ids back.
    await broker.deleteTopic("b");
    expect(broker.producerIdBudget.count).toBe(perPartition[0]!);
  } finally {
    await broker.close();
  }
});

test("the count follows the tables: a delete whose first close fails gives every partition's ids back, and a snapshot naming an id twice counts it once", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  try {
    broker.createTopic("t", { partitions: 2 });
    for (const partition of [0, 1])
      for (let id = 0; id < 5; id++) await broker.append("t", partition, batch(1000 + id, 0, "x"));
    expect(broker.producerIdBudget.count).toBe(10);
    // The first file close of the delete fails (close(2) EIO, after closing): before 2026-12-03 the
    // delete stopped at that partition, the other one was never closed, and the count kept all 10.
    let failOnce = true;
    const restore = useDisk({
      ...realDisk,
      closeFile(fd, file) {
        realDisk.closeFile(fd, file);
        if (failOnce) {
          failOnce = false;
          throw ioError("close", 5, file, "test: a failing device");
        }
      },
    });
    const originalError = console.error;
    console.error = () => {};
    try {
      await broker.deleteTopic("t");
    } finally {
      console.error = originalError;
      restore();
    }
    expect(broker.producerIdBudget.count).toBe(0);
  } finally {
    await broker.close();
  }
  // A snapshot that names producer 7 twice (damaged or edited): one producer, counted once.
  const second = Broker.open({ dataDir: dir.path });
  second.createTopic("u");
  await second.close();
  fs.writeFileSync(
    path.join(dir.path, "u-0", PRODUCER_STATE_FILE),
    `${JSON.stringify({
      version: 1,
      nextOffset: 0,
      producers: [
        [7, 0, Date.now(), [0, 0, 0, 0]],
        [7, 0, Date.now(), [0, 0, 0, 0]],
      ],
    })}\n`,
  );
  const third = Broker.open({ dataDir: dir.path });
  try {
    expect(third.partition("u", 0).producers.producerCount).toBe(1);
    expect(third.producerIdBudget.count).toBe(1);
    await third.deleteTopic("u");
    expect(third.producerIdBudget.count).toBe(0);
  } finally {
    await third.close();
  }
});
