/**
 * Kafka's `cleanup.policy` (topic-config.ts, CLEANUP_POLICIES): a compacted topic needs a key on every
 * record, compressed or not, as Kafka's LogValidator refuses "message without key"; a compact-only
 * topic applies no retention (its latest record per key must stay), `compact,delete` does; the
 * policy survives a restart, and a topic file without it (written before it existed) reads as
 * `delete`. booblik keeps every record of a compacted topic (no compaction): the records read back
 * are all of them, in order.
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { encodeBatch, InvalidBatchError, type RecordInput } from "../../src/record/batch.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const text = new TextEncoder();
const keyed = (key: string | null, value: string, timestamp = Date.now()): RecordInput => ({
  key: key === null ? null : text.encode(key),
  value: text.encode(value),
  timestamp,
});

test("a compacted topic refuses a record without a key, in a plain or a compressed batch", async () => {
  using dir = tempDir("compacted-keys");
  const broker = Broker.open({ dataDir: dir.path });
  try {
    broker.createTopic("c", { cleanupPolicy: "compact", durability: "append" });
    const ack = await broker.append(
      "c",
      0,
      encodeBatch([keyed("k1", "a"), keyed("k2", "b"), keyed("k1", "c")]),
    );
    expect(ack.recordCount).toBe(3);
    for (const codec of ["none", "gzip", "zstd"] as const) {
      const refused = broker.append("c", 0, encodeBatch([keyed("k", "x"), keyed(null, "y")], { codec }));
      await expect(refused).rejects.toBeInstanceOf(InvalidBatchError);
      await expect(refused).rejects.toMatchObject({ check: "key" });
      await expect(refused).rejects.toThrow("record 1 has no key; a compacted topic");
    }
    // Nothing of the refused batches was stored; every record appended is kept (no compaction).
    expect(broker.describeTopic("c").partitions[0]!.nextOffset).toBe(3);
    // Back to delete: keys are optional again.
    await broker.alterTopic("c", { cleanupPolicy: "delete" });
    expect((await broker.append("c", 0, encodeBatch([keyed(null, "z")]))).recordCount).toBe(1);
  } finally {
    await broker.close();
  }
});

test("compact alone applies no retention; compact,delete does; the policy survives a restart", async () => {
  using dir = tempDir("compacted-retention");
  let broker = Broker.open({ dataDir: dir.path });
  try {
    const old = Date.now() - 3_600_000;
    for (const [name, cleanupPolicy] of [
      ["c", "compact"],
      ["cd", "compact,delete"],
    ] as const) {
      broker.createTopic(name, {
        cleanupPolicy,
        segmentBytes: 1024,
        retentionMs: 60_000,
        durability: "append",
      });
      for (let i = 0; i < 20; i++)
        await broker.append(name, 0, encodeBatch([keyed(`k${i % 3}`, "v".repeat(100), old)]));
      expect(broker.describeTopic(name).partitions[0]!.segments).toBeGreaterThan(3);
    }
    broker.applyRetention();
    // Every record of the compact-only topic is still there, from offset 0.
    expect(broker.describeTopic("c").partitions[0]).toMatchObject({ logStartOffset: 0, nextOffset: 20 });
    expect(broker.describeTopic("cd").partitions[0]!.logStartOffset).toBeGreaterThan(0);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    expect(broker.describeTopic("c").config.cleanupPolicy).toBe("compact");
    expect(broker.describeTopic("cd").config.cleanupPolicy).toBe("compact,delete");
  } finally {
    await broker.close();
  }
});

test("a topic file without the key (written before it existed) reads as delete; a delete topic's file omits it", async () => {
  using dir = tempDir("compacted-file");
  let broker = Broker.open({ dataDir: dir.path });
  broker.createTopic("d", {});
  broker.createTopic("c", { cleanupPolicy: "compact" });
  await broker.close();
  const fileOf = (name: string) => path.join(dir.path, "topics", `${name}.json`);
  expect(JSON.parse(fs.readFileSync(fileOf("d"), "utf8")).config.cleanupPolicy).toBeUndefined();
  expect(JSON.parse(fs.readFileSync(fileOf("c"), "utf8")).config.cleanupPolicy).toBe("compact");
  broker = Broker.open({ dataDir: dir.path });
  try {
    expect(broker.describeTopic("d").config.cleanupPolicy).toBe("delete");
    expect(() => broker.createTopic("bad", { cleanupPolicy: "compact, delete" as "compact,delete" })).toThrow(
      'cleanupPolicy must be one of delete, compact, compact,delete, got "compact, delete"',
    );
  } finally {
    await broker.close();
  }
});
