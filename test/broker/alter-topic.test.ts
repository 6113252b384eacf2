/**
 * Topics that change (Broker.alterTopic, Broker.addPartitions) through the embedded broker: which
 * settings change on a live topic and take effect without a restart, which are refused and why,
 * that changes persist across a restart, and that added partitions start empty and count against
 * the broker's partition limit.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { BooblikError, InvalidArgumentError, UnknownTopicOrPartitionError } from "../../src/domain/errors.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const decode = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes!);

describe("alterTopic", () => {
  test("retention, durability, record limit and timestamp type change live and persist", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("t", { segmentBytes: 1024, maxRecordBytes: 200, durability: "append" });
    // 300 bytes are refused under the 200-byte limit, accepted after raising it (no restart).
    const big = batchOfValues(["x".repeat(300)]);
    await expect(broker.append("t", 0, big)).rejects.toThrow();
    const raised = await broker.alterTopic("t", { maxRecordBytes: 500 });
    expect(raised.config.maxRecordBytes).toBe(500);
    expect((await broker.append("t", 0, big)).recordCount).toBe(1);
    // Durability: the next append's acknowledgement follows the new policy.
    await broker.alterTopic("t", { durability: "force" });
    expect((await broker.append("t", 0, ["a"])).durability).toBe("forced");
    // The timestamp type applies to batches appended from now on.
    await broker.alterTopic("t", { timestampType: "LogAppendTime" });
    const ack = await broker.append("t", 0, batchOfValues(["b"], 1000));
    expect(ack.logAppendTimeMs).toBeGreaterThan(1000);
    // Retention: the next run deletes sealed segments beyond the new byte limit.
    for (let i = 0; i < 20; i++) await broker.append("t", 0, ["y".repeat(100)]);
    const segmentsBefore = broker.describeTopic("t").partitions[0]!.segments;
    expect(segmentsBefore).toBeGreaterThan(3);
    expect(broker.applyRetention().segmentsDeleted).toBe(0);
    await broker.alterTopic("t", { retentionBytes: 1024 });
    expect(broker.applyRetention().segmentsDeleted).toBeGreaterThan(0);
    await broker.close();

    broker = Broker.open({ dataDir: dir.path });
    expect(broker.describeTopic("t").config).toMatchObject({
      maxRecordBytes: 500,
      durability: "force",
      timestampType: "LogAppendTime",
      retentionBytes: 1024,
      segmentBytes: 1024,
    });
    // The 300-byte batch stored under the raised limit is still there and readable after restart.
    const start = broker.describeTopic("t").partitions[0]!.logStartOffset;
    expect(valuesOfEntries(broker.read("t", 0, start).records).length).toBeGreaterThan(0);
    await broker.close();
  });

  test("a record written under append stays visible when the topic becomes force", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("v", { durability: "append" });
    await broker.append("v", 0, ["one", "two"]);
    const altered = broker.alterTopic("v", { durability: "force" });
    // Before the force it awaits completes, the visible end already holds both records.
    expect(broker.describeTopic("v").partitions[0]!.nextOffset).toBe(2);
    await altered;
    expect(valuesOfEntries(broker.read("v", 0, 0).records).map(decode)).toEqual(["one", "two"]);
    await broker.close();
  });

  test("settings that cannot change are refused with the reason; nothing changes", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("r", { segmentBytes: 4096, maxRecordBytes: 1000, partitions: 2 });
    const before = broker.describeTopic("r").config;
    await expect(broker.alterTopic("r", { segmentBytes: 8192 })).rejects.toThrow(
      /segmentBytes cannot change on an existing topic/,
    );
    await expect(broker.alterTopic("r", { writeMode: "mapped" })).rejects.toThrow(/writeMode cannot change/);
    await expect(broker.alterTopic("r", { partitions: 3 })).rejects.toThrow(/addPartitions/);
    await expect(broker.alterTopic("r", { maxRecordBytes: 999 })).rejects.toThrow(
      /maxRecordBytes can only increase/,
    );
    // Beyond what fits a 4096-byte segment.
    await expect(broker.alterTopic("r", { maxRecordBytes: 5000 })).rejects.toThrow(/must fit a segment/);
    await expect(broker.alterTopic("r", { durability: "sometimes" } as never)).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(broker.alterTopic("r", { colour: "blue" } as never)).rejects.toThrow(
      /unknown topic setting/,
    );
    await expect(broker.alterTopic("nope", { retentionMs: 1 })).rejects.toThrow(UnknownTopicOrPartitionError);
    // The same value for a fixed setting is accepted (a full config sent back).
    await broker.alterTopic("r", { segmentBytes: 4096, retentionMs: 60_000 });
    expect(broker.describeTopic("r").config).toEqual({ ...before, retentionMs: 60_000 });
    await broker.close();
  });
});

describe("addPartitions", () => {
  test("new partitions start empty, take appends at once and survive a restart", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
    broker.createTopic("p", { partitions: 2 });
    await broker.append("p", 1, ["kept"]);
    const description = broker.addPartitions("p", 4);
    expect(description.partitions.map((p) => [p.partition, p.nextOffset])).toEqual([
      [0, 0],
      [1, 1],
      [2, 0],
      [3, 0],
    ]);
    await broker.append("p", 3, ["new"]);
    await broker.close();

    broker = Broker.open({ dataDir: dir.path });
    expect(broker.describeTopic("p").config.partitions).toBe(4);
    expect(valuesOfEntries(broker.read("p", 1, 0).records).map(decode)).toEqual(["kept"]);
    expect(valuesOfEntries(broker.read("p", 3, 0).records).map(decode)).toEqual(["new"]);
    await broker.close();
  });

  test("refuses fewer or as many partitions, and growth beyond the broker's limit", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path, limits: { maxPartitions: 5 } });
    broker.createTopic("a", { partitions: 2 });
    broker.createTopic("b", { partitions: 2 });
    expect(() => broker.addPartitions("a", 2)).toThrow(
      /partitions can only increase: topic "a" has 2, got 2/,
    );
    expect(() => broker.addPartitions("a", 1)).toThrow(InvalidArgumentError);
    expect(() => broker.addPartitions("missing", 3)).toThrow(UnknownTopicOrPartitionError);
    let refused: unknown;
    try {
      broker.addPartitions("a", 4);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(BooblikError);
    expect((refused as BooblikError).code).toBe("LIMIT_EXCEEDED");
    expect((refused as Error).message).toMatch(/above the limit of 5/);
    expect(broker.describeTopic("a").partitions.length).toBe(2);
    broker.addPartitions("a", 3);
    expect(broker.describeTopic("a").partitions.length).toBe(3);
    await broker.close();
  });
});
