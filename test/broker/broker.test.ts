/**
 * The embedded broker through its public API: topics on disk (create, list, describe, delete, refuse
 * bad names and settings, survive restarts), the three durability policies and what their
 * acknowledgements say, group commit under many concurrent producers, the event loop staying free
 * during a large force, the data-directory lock, leftovers of interrupted operations, retention.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import {
  DataDirLockedError,
  InvalidArgumentError,
  TopicExistsError,
  UnknownTopicOrPartitionError,
} from "../../src/domain/errors.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

// These tests start processes and wait on disks; the 5 s default is too tight for a busy 2-core CI.
setDefaultTimeout(30_000);

const decode = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes!);

function values(broker: Broker, topic: string, partition: number, offset = 0): string[] {
  return valuesOfEntries(broker.read(topic, partition, offset, 10 * 1024 * 1024).records).map(decode);
}

describe("topics", () => {
  test("create, list, describe, append, read, delete; configurations persist across restarts", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
    broker.createTopic("orders", { partitions: 3, segmentBytes: 4096, retentionBytes: 1_000_000 });
    broker.createTopic("audit.log_v2", { durability: "force" });
    expect(broker.listTopics().map((topic) => topic.name)).toEqual(["audit.log_v2", "orders"]);
    const orders = broker.describeTopic("orders");
    expect(orders.partitions.map((p) => p.partition)).toEqual([0, 1, 2]);
    expect(orders.config).toMatchObject({
      partitions: 3,
      segmentBytes: 4096,
      durability: "append",
      retentionBytes: 1_000_000,
    });
    expect(broker.describeTopic("audit.log_v2").config.durability).toBe("force");
    await broker.append("orders", 1, batchOfValues(["a", "b"]));
    await broker.append("orders", 1, batchOfValues(["c"]));
    expect(values(broker, "orders", 1)).toEqual(["a", "b", "c"]);
    expect(values(broker, "orders", 0)).toEqual([]);
    await broker.close();
    expect(broker.isClosed).toBe(true);
    expect(() => broker.listTopics()).toThrow(/closed/);

    broker = Broker.open({ dataDir: dir.path });
    try {
      expect(broker.openReport).toMatchObject({ topics: 2, partitions: 4, cleanShutdown: true });
      expect(broker.describeTopic("orders").config).toMatchObject({
        partitions: 3,
        segmentBytes: 4096,
        durability: "append",
      });
      expect(values(broker, "orders", 1)).toEqual(["a", "b", "c"]);
      await broker.deleteTopic("orders");
      expect(broker.listTopics().map((topic) => topic.name)).toEqual(["audit.log_v2"]);
      expect(fs.existsSync(path.join(dir.path, "orders-1"))).toBe(false);
      // Re-created under the same name, it starts empty.
      broker.createTopic("orders", { partitions: 2 });
      expect(values(broker, "orders", 1)).toEqual([]);
    } finally {
      await broker.close();
    }
  });

  test("bad names, bad settings, duplicates and unknown topics are refused with clear errors", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      expect(() => broker.createTopic("bad name")).toThrow(InvalidArgumentError);
      expect(() => broker.createTopic("..")).toThrow(/reserved/);
      expect(() => broker.createTopic("t", { partitions: 0 })).toThrow(
        /partitions must be an integer in \[1, 1024\]/,
      );
      expect(() => broker.createTopic("t", { durability: "sometimes" as never })).toThrow(
        /durability must be one of/,
      );
      expect(() => broker.createTopic("t", { writeMode: "carrier-pigeon" as never })).toThrow(
        /writeMode must be one of/,
      );
      expect(() => broker.createTopic("t", { segmentBytes: 10 })).toThrow(
        /segmentBytes must be an integer in \[256, 1073741824\], got 10/,
      );
      expect(() => broker.createTopic("t", { segmentBytes: 4096, maxRecordBytes: 5000 })).toThrow(
        /maxRecordBytes must be an integer in \[68, 4056\] \(a batch and its 8-byte frame must fit a segment/,
      );
      expect(() => broker.createTopic("t", { colour: "blue" } as never)).toThrow(
        /unknown topic setting "colour"/,
      );
      expect(broker.listTopics()).toEqual([]);
      expect(fs.readdirSync(dir.path).filter((name) => name.startsWith("t-"))).toEqual([]);
      broker.createTopic("t");
      expect(() => broker.createTopic("t")).toThrow(TopicExistsError);
      expect(() => broker.partition("nope", 0)).toThrow(UnknownTopicOrPartitionError);
      expect(() => broker.partition("t", 1)).toThrow(/unknown partition t\/1/);
      await expect(broker.deleteTopic("nope")).rejects.toThrow(UnknownTopicOrPartitionError);
    } finally {
      await broker.close();
    }
  });

  test("partition directories without a topic file (an interrupted create or delete) are removed at open", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("kept");
    await broker.close();
    fs.mkdirSync(path.join(dir.path, "ghost-0"));
    fs.writeFileSync(path.join(dir.path, "ghost-0", "00000000000000000000.log"), "leftover");
    fs.mkdirSync(path.join(dir.path, "kept-7")); // beyond the topic's partition count
    fs.writeFileSync(path.join(dir.path, "topics", "half-written.json.tmp"), "{");
    const reopened = Broker.open({ dataDir: dir.path });
    try {
      expect(fs.existsSync(path.join(dir.path, "ghost-0"))).toBe(false);
      expect(fs.existsSync(path.join(dir.path, "kept-7"))).toBe(false);
      expect(fs.existsSync(path.join(dir.path, "topics", "half-written.json.tmp"))).toBe(false);
      expect(reopened.listTopics().map((topic) => topic.name)).toEqual(["kept"]);
    } finally {
      await reopened.close();
    }
  });
});

describe("durability policies", () => {
  test("each acknowledgement says which guarantee it reached", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("appended", { durability: "append" });
      broker.createTopic("forced", { durability: "force" });
      broker.createTopic("interval", { durability: "interval", flushIntervalMs: 10 });
      expect(await broker.append("appended", 0, batchOfValues(["x"]))).toMatchObject({
        firstOffset: 0,
        recordCount: 1,
        durability: "appended",
      });
      const forced = await broker.append("forced", 0, batchOfValues(["x", "y"]));
      expect(forced).toMatchObject({ firstOffset: 0, recordCount: 2, durability: "forced" });
      expect(broker.partition("forced", 0).log.recoveryPoint.nextOffset).toBeGreaterThanOrEqual(2);
      expect(await broker.append("interval", 0, batchOfValues(["x"]))).toMatchObject({
        durability: "appended",
      });
      // The interval timer forces what is unforced; wait for it (a condition, not a sleep).
      const log = broker.partition("interval", 0).log;
      await waitUntil(() => !log.hasUnforcedData, "the background force");
      expect(log.recoveryPoint.nextOffset).toBe(1);
    } finally {
      await broker.close();
    }
  });

  test("under force, a record becomes visible to readers once forced; under append, at once", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("durable", { durability: "force" });
      broker.createTopic("fast", { durability: "append" });
      const durable = broker.partition("durable", 0);
      durable.log.append(batchOfValues(["not yet forced"])); // appended, no force requested
      expect(durable.log.nextOffset).toBe(1 as never);
      expect(durable.visibleNextOffset).toBe(0);
      expect(broker.read("durable", 0, 0).recordCount).toBe(0);
      expect(() => broker.read("durable", 0, 1)).toThrow(/out of range: the log holds \[0, 0\)/);
      expect(broker.describeTopic("durable").partitions[0]).toMatchObject({ nextOffset: 0, logEndOffset: 1 });
      const tail = broker.tail("durable", 0, 0);
      let seen = false;
      const next = tail.next().then((result) => {
        seen = true;
        return result;
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(seen).toBe(false);
      await durable.log.force();
      expect(decode((await next).value!.value)).toBe("not yet forced");
      expect(durable.visibleNextOffset).toBe(1);
      const fast = broker.partition("fast", 0);
      fast.log.append(batchOfValues(["visible now"]));
      expect(fast.visibleNextOffset).toBe(1);
      expect(values(broker, "fast", 0)).toEqual(["visible now"]);
    } finally {
      await broker.close();
    }
  });

  test("group commit: every acknowledgement follows a force that covers it, with far fewer forces than batches", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("gc", { durability: "force", segmentBytes: 256 * 1024 });
      const partition = broker.partition("gc", 0);
      const producers = 64;
      const batchesEach = 20;
      let uncovered = 0;
      await Promise.all(
        Array.from({ length: producers }, async (_, producer) => {
          for (let batch = 0; batch < batchesEach; batch++) {
            const ack = await broker.append(
              "gc",
              0,
              batchOfValues([`p${producer}-b${batch}-a`, `p${producer}-b${batch}-b`]),
            );
            // The durable point moves only after a completed force: it must cover this batch now.
            if (partition.log.recoveryPoint.nextOffset < ack.firstOffset + ack.recordCount) uncovered++;
            expect(ack.durability).toBe("forced");
          }
        }),
      );
      expect(uncovered).toBe(0);
      const batches = producers * batchesEach;
      expect(partition.groupCommit.requestCount).toBe(batches);
      expect(partition.groupCommit.forceCount).toBeGreaterThan(0);
      expect(partition.groupCommit.forceCount * 8).toBeLessThanOrEqual(batches);
      expect<number>(partition.log.nextOffset).toBe(batches * 2);
      console.log(
        `group commit: ${batches} batches acknowledged by ${partition.groupCommit.forceCount} forces`,
      );
    } finally {
      await broker.close();
    }
  });

  test("the event loop keeps running while a large force is in flight", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("big", { durability: "append", segmentBytes: 256 * 1024 * 1024 });
      // 63 records of 16 KiB: one batch within the default 1 MiB batch limit.
      const chunk = batchOfValues(Array.from({ length: 63 }, () => new Uint8Array(16 * 1024).fill(7)));
      for (let i = 0; i < 64; i++) await broker.append("big", 0, chunk); // 63 MiB dirty
      const log = broker.partition("big", 0).log;
      let ticks = 0;
      let forced = false;
      const tick = () => {
        ticks++;
        if (!forced) setImmediate(tick);
      };
      setImmediate(tick);
      // A force on the JS thread would finish before any immediate could run; the thread-pool
      // fdatasync lets the loop turn while the disk works.
      await log.force();
      forced = true;
      expect(ticks).toBeGreaterThan(0);
      expect(log.hasUnforcedData).toBe(false);
      console.log(`event loop turned ${ticks} times during a 64 MiB force`);
    } finally {
      await broker.close();
    }
  });
});

describe("data directory", () => {
  test("a second broker on the same directory is refused, in this process and from another one", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      expect(() => Broker.open({ dataDir: dir.path })).toThrow(DataDirLockedError);
      expect(() => Broker.open({ dataDir: dir.path })).toThrow(new RegExp(`in use by pid ${process.pid}`));
      const script = `
        import { Broker } from ${JSON.stringify(path.resolve(import.meta.dir, "../../src/broker/broker.ts"))};
        try { Broker.open({ dataDir: ${JSON.stringify(dir.path)} }); console.log("opened"); }
        catch (error) { console.log(error.code + " " + error.message); }`;
      const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe" });
      const output = (await new Response(child.stdout).text()).trim();
      await child.exited;
      expect(output).toStartWith("DATA_DIR_LOCKED");
      expect(output).toContain(`pid ${process.pid}`);
    } finally {
      await broker.close();
    }
    // Released on close.
    const again = Broker.open({ dataDir: dir.path });
    await again.close();
  });

  test("retention runs per topic; the broker reports it", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("short", { segmentBytes: 1024, retentionBytes: 2048, durability: "append" });
      broker.createTopic("long", { segmentBytes: 1024, durability: "append" });
      for (let i = 0; i < 100; i++) {
        await broker.append("short", 0, batchOfValues([`record ${i}`.padEnd(100, ".")]));
        await broker.append("long", 0, batchOfValues([`record ${i}`.padEnd(100, ".")]));
      }
      const result = broker.applyRetention();
      expect(result.segmentsDeleted).toBeGreaterThan(0);
      expect(broker.describeTopic("short").partitions[0]!.logStartOffset).toBeGreaterThan(0);
      expect(broker.describeTopic("long").partitions[0]!.logStartOffset).toBe(0);
      expect(
        values(broker, "short", 0, broker.describeTopic("short").partitions[0]!.logStartOffset).at(-1),
      ).toStartWith("record 99");
    } finally {
      await broker.close();
    }
  });
});
