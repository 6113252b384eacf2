/**
 * Committed offsets in the internal topic `__consumer_offsets` (src/broker/offsets-store.ts): they
 * survive a clean restart and a SIGKILL of the broker's process (every acknowledged commit is there
 * afterwards), the topic is hidden from listings and refused to clients' appends, creates and
 * deletes, and a tombstone deletes a group's offsets.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import type { BooblikError } from "../../src/domain/errors.ts";
import { GROUP_RECORD_BYTES_MAX, OFFSETS_TOPIC_NAME } from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { useDisk } from "../../src/storage/disk.ts";
import { offsetsTopicFullDisk } from "../helpers/offsets-full-disk.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

const FIXTURE = path.join(import.meta.dir, "fixtures", "committer-fixture.ts");

function entry(topic: string, partition: number, offset: number, metadata: string | null = null) {
  return { topic, partition, offset, leaderEpoch: -1, metadata };
}

describe("committed offsets", () => {
  test("a broker that never saw a commit has no offsets topic; the first commit creates it, hidden", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("orders", { partitions: 2 });
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      expect(broker.listTopics({ includeInternal: true }).map((t) => t.name)).toEqual(["orders"]);
      await broker.offsets.commit("g", [entry("orders", 0, 5, "meta"), entry("orders", 1, 7)]);
      expect(broker.offsets.committed("g", "orders", 0)).toMatchObject({ offset: 5, metadata: "meta" });
      expect(broker.offsets.committed("g", "orders", 1)).toMatchObject({ offset: 7, metadata: null });
      expect(broker.listTopics().map((t) => t.name)).toEqual(["orders"]);
      expect(broker.listTopics({ includeInternal: true }).map((t) => t.name)).toEqual([
        OFFSETS_TOPIC_NAME,
        "orders",
      ]);
      const internal = broker.describeTopic(OFFSETS_TOPIC_NAME);
      expect(internal.config.durability).toBe("force");
      expect(internal.partitions).toHaveLength(1);
    } finally {
      await broker.close();
    }
  });

  test("all live commits stay within their memory bound: a commit that would grow them past it is LIMIT_EXCEEDED, one that replaces as much goes through, deletes free room; a reopen counts the same", async () => {
    using dir = tempDir();
    const limit = 20_000;
    const open = () => Broker.open({ dataDir: dir.path, committedOffsetsBytesMax: limit });
    const metadata = "m".repeat(1000);
    let broker = open();
    try {
      // Each commit of a 1,000-character metadata costs about 2 KiB (UTF-16): nine fit, a tenth not.
      let group = 0;
      for (; group < 20; group++) {
        try {
          await broker.offsets.commit(`g${group}`, [entry("orders", 0, 1, metadata)]);
        } catch (error) {
          expect((error as BooblikError).code).toBe("LIMIT_EXCEEDED");
          expect((error as Error).message).toContain("COMMITTED_OFFSETS_BYTES_MAX");
          break;
        }
      }
      expect(group).toBeGreaterThan(5);
      expect(group).toBeLessThan(20);
      expect(broker.offsets.committed(`g${group}`, "orders", 0)).toBeUndefined();
      expect(broker.offsets.liveBytes).toBeLessThanOrEqual(limit);
      // The same key again with as much metadata: no growth, stored.
      await broker.offsets.commit("g0", [entry("orders", 0, 2, metadata)]);
      expect(broker.offsets.committed("g0", "orders", 0)?.offset).toBe(2);
      // Deleting a group frees its share: the refused group now fits.
      await broker.offsets.deleteGroup("g1");
      await broker.offsets.commit(`g${group}`, [entry("orders", 0, 1, metadata)]);
      const before = broker.offsets.liveBytes;
      await broker.close();
      broker = open();
      expect(broker.offsets.liveBytes).toBe(before);
    } finally {
      await broker.close();
    }
  });

  test("clients cannot append to, create or delete the offsets topic", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      expect(() => broker.createTopic(OFFSETS_TOPIC_NAME)).toThrow(/internal to the broker/);
      await broker.offsets.commit("g", [entry("t", 0, 1)]);
      expect(() => broker.createTopic(OFFSETS_TOPIC_NAME)).toThrow(/already exists/);
      await expect(broker.append(OFFSETS_TOPIC_NAME, 0, batchOfValues(["x"]))).rejects.toThrow(
        /internal to the broker and cannot be appended to/,
      );
      await expect(broker.deleteTopic(OFFSETS_TOPIC_NAME)).rejects.toThrow(/cannot be deleted/);
      expect(broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.nextOffset).toBe(1);
    } finally {
      await broker.close();
    }
  });

  test("commits survive a restart; the latest commit of a partition wins; a deleted group is gone", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    await broker.offsets.commit("g1", [entry("a", 0, 1), entry("a", 1, 2)]);
    await broker.offsets.commit("g1", [entry("a", 0, 10, "later")]);
    await broker.offsets.commit("g2", [entry("b", 3, 4)]);
    await broker.offsets.commit("gone", [entry("a", 0, 99)]);
    await broker.offsets.deleteGroup("gone");
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    try {
      expect(broker.offsets.replayedRecords).toBe(6);
      expect(broker.offsets.groupIds()).toEqual(["g1", "g2"]);
      expect(
        broker.offsets
          .committedOf("g1")
          .map((c) => [c.topic, c.partition, c.committed.offset, c.committed.metadata]),
      ).toEqual([
        ["a", 0, 10, "later"],
        ["a", 1, 2, null],
      ]);
      expect(broker.offsets.committed("g2", "b", 3)?.offset).toBe(4);
      expect(broker.offsets.committed("gone", "a", 0)).toBeUndefined();
    } finally {
      await broker.close();
    }
  });

  test("bad group ids and oversized metadata are refused before anything is written", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      await expect(broker.offsets.commit("", [entry("a", 0, 1)])).rejects.toThrow(/group id is empty/);
      await expect(broker.offsets.commit("a\0b", [entry("a", 0, 1)])).rejects.toThrow(/NUL/);
      await expect(broker.offsets.commit("g", [entry("a", 0, 1, "x".repeat(4097))])).rejects.toThrow(
        /longer than 4096 bytes/,
      );
      expect(broker.listTopics({ includeInternal: true })).toEqual([]);
    } finally {
      await broker.close();
    }
  });

  test("a commit of many partitions is split into batches and applied whole", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    const many = Array.from({ length: 100 }, (_, p) => entry("wide", p, p * 3, "m".repeat(4096)));
    await broker.offsets.commit("g", many);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    try {
      const committed = broker.offsets.committedOf("g");
      expect(committed).toHaveLength(100);
      expect(committed.every((c) => c.committed.offset === c.partition * 3)).toBe(true);
    } finally {
      await broker.close();
    }
  });

  test("compaction: a snapshot of the live commits, then the sealed segments below it go; restart sees the latest of each", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
    const latest = new Map<string, number>();
    let tombstonesEnd = 0;
    for (let round = 0; round < 200; round++) {
      const group = `g${round % 4}`;
      if (group === "g3" && round > 150) continue; // deleted at round 150, never committed again
      const offset = round * 10;
      await broker.offsets.commit(group, [entry("t", round % 3, offset, `r${round}`)]);
      latest.set(`${group}/${round % 3}`, offset);
      if (round === 150) {
        await broker.offsets.deleteGroup("g3");
        tombstonesEnd = broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.nextOffset;
      }
    }
    for (const key of [...latest.keys()]) if (key.startsWith("g3/")) latest.delete(key);
    // Compactions after the delete too: its tombstone went with the segments below a snapshot.
    const compactions = broker.offsets.compactions;
    const description = broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!;
    expect(compactions).toBeGreaterThan(0);
    expect(description.logStartOffset).toBeGreaterThan(tombstonesEnd);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
    try {
      // 200 commits and a tombstone were written; replay reads far fewer.
      expect(broker.offsets.replayedRecords).toBeLessThan(120);
      const seen = new Map<string, number>();
      for (const group of broker.offsets.groupIds())
        for (const c of broker.offsets.committedOf(group))
          seen.set(`${group}/${c.partition}`, c.committed.offset);
      expect(seen).toEqual(latest);
      expect(broker.offsets.committed("g0", "t", 0)?.metadata).toBe(`r${latest.get("g0/0")! / 10}`);
    } finally {
      await broker.close();
    }
  });

  test("group records: stored, replaced, deleted with the group, kept through compaction, and back after a restart", async () => {
    using dir = tempDir();
    const member = (id: string, assignment: number[]) => ({
      memberId: id,
      groupInstanceId: id === "m1" ? "static-1" : null,
      clientId: "client",
      clientHost: "/127.0.0.1",
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 20_000,
      protocols: [{ name: "range", metadata: new Uint8Array([0, 1, 2, 255]) }],
      assignment: new Uint8Array(assignment),
    });
    const record = (generationId: number, members: ReturnType<typeof member>[]) => ({
      protocolType: "consumer",
      protocol: members.length === 0 ? "" : "range",
      generationId,
      leaderId: members[0]?.memberId ?? "",
      members,
    });
    let broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
    await broker.offsets.storeGroup("g", record(1, [member("m1", [7])]));
    await broker.offsets.storeGroup("g", record(2, [member("m1", [1]), member("m2", [2, 3])]));
    await broker.offsets.storeGroup("emptied", record(5, []));
    await broker.offsets.commit("gone", [entry("t", 0, 1)]);
    await broker.offsets.storeGroup("gone", record(3, [member("x", [])]));
    await broker.offsets.deleteGroup("gone");
    // A tombstone is written only for a group that has a record.
    const before = broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.nextOffset;
    await broker.offsets.storeGroup("never-stored", null);
    expect(broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.nextOffset).toBe(before);
    // Enough commits for snapshots: the group records must be in them.
    for (let round = 0; round < 150; round++)
      await broker.offsets.commit("busy", [entry("t", round % 2, round, "x".repeat(64))]);
    expect(broker.offsets.compactions).toBeGreaterThan(0);
    expect(broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.logStartOffset).toBeGreaterThan(before);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
    try {
      const stored = broker.offsets.storedGroups();
      expect([...stored.keys()].sort()).toEqual(["emptied", "g"]);
      expect(stored.get("g")).toEqual(record(2, [member("m1", [1]), member("m2", [2, 3])]));
      expect(stored.get("emptied")).toEqual(record(5, []));
      expect(broker.offsets.groupRecordsSkipped).toBe(0);
      // A group record is not a commit: the offsets of "g" are none.
      expect(broker.offsets.hasCommits("g")).toBe(false);
      expect(broker.offsets.groupIds()).toEqual(["busy"]);
    } finally {
      await broker.close();
    }
  });

  test("compaction with group records of 40 KiB: the snapshot is split into batches by bytes, so it succeeds", async () => {
    using dir = tempDir();
    // 30 members with 600 B of subscription and 300 B of assignment each: about 40 KiB of JSON.
    const record = (generationId: number) => {
      const members = Array.from({ length: 30 }, (_, i) => ({
        memberId: `consumer-${i}-${"0".repeat(34)}`,
        groupInstanceId: null,
        clientId: "consumer",
        clientHost: "/10.0.0.1",
        sessionTimeoutMs: 45_000,
        rebalanceTimeoutMs: 300_000,
        protocols: [{ name: "range", metadata: new Uint8Array(600).fill(i) }],
        assignment: new Uint8Array(300).fill(generationId),
      }));
      return {
        protocolType: "consumer",
        protocol: "range",
        generationId,
        leaderId: members[0]!.memberId,
        members,
      };
    };
    let broker = Broker.open({ dataDir: dir.path });
    // Before: 32 such records made one snapshot batch over the 1 MiB batch limit, refused at every
    // try: no compaction ever, and the offsets topic grew without bound.
    for (let generation = 1; generation <= 14; generation++)
      for (let g = 0; g < 40; g++) await broker.offsets.storeGroup(`group-${g}`, record(generation));
    await waitUntil(() => broker.offsets.compactions > 0, "a compaction");
    expect(broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.logStartOffset).toBeGreaterThan(0);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    try {
      const stored = broker.offsets.storedGroups();
      expect(stored.size).toBe(40);
      expect(stored.get("group-7")).toEqual(record(14));
    } finally {
      await broker.close();
    }
  });

  test("a group record too large to store deletes the old one instead", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    const record = (metadataBytes: number) => ({
      protocolType: "consumer",
      protocol: "range",
      generationId: 4,
      leaderId: "m",
      members: [
        {
          memberId: "m",
          groupInstanceId: null,
          clientId: "c",
          clientHost: "/127.0.0.1",
          sessionTimeoutMs: 10_000,
          rebalanceTimeoutMs: 10_000,
          protocols: [{ name: "range", metadata: new Uint8Array(metadataBytes) }],
          assignment: new Uint8Array(0),
        },
      ],
    });
    await broker.offsets.storeGroup("g", record(10));
    expect(broker.offsets.storedGroups().has("g")).toBe(true);
    await broker.offsets.storeGroup("g", record(GROUP_RECORD_BYTES_MAX));
    expect(broker.offsets.groupRecordsTooLarge).toBe(1);
    expect(broker.offsets.storedGroups().has("g")).toBe(false);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    try {
      expect(broker.offsets.storedGroups().has("g")).toBe(false);
    } finally {
      await broker.close();
    }
  });

  test("SIGKILL of the broker's process: every acknowledged commit is there after restart", async () => {
    using dir = tempDir();
    const acked = new Map<number, number>();
    for (let round = 0; round < 3; round++) {
      // 4 KiB segments of the offsets topic: compactions run (and are killed) during the rounds.
      const child = Bun.spawn([process.execPath, FIXTURE, dir.path, "3", "4096"], {
        stdout: "pipe",
        stderr: "inherit",
      });
      await using _child = killAtEnd(child);
      const lines = new LineReader(child.stdout);
      await lines.waitFor((line) => line.startsWith("started "), "the broker started");
      const record = (line: string) => {
        const [, committer, offset] = line.split(" ").map(Number);
        acked.set(committer!, Math.max(acked.get(committer!) ?? 0, offset!));
      };
      for (let seen = 0; seen < 20 + round * 15; seen++)
        record(await lines.waitFor((l) => l.startsWith("ack "), "an acknowledged commit"));
      child.kill("SIGKILL");
      await child.exited;
      expect(child.signalCode).toBe("SIGKILL");
      for (const line of await lines.rest()) if (line.startsWith("ack ")) record(line);
      const broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
      try {
        if (round > 0)
          expect(broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.logStartOffset).toBeGreaterThan(0);
        for (const [committer, offset] of acked) {
          for (const partition of [0, 1, 2]) {
            const committed = broker.offsets.committed(`g${committer}`, "t", partition);
            expect(committed?.offset, `g${committer} t/${partition}`).toBeGreaterThanOrEqual(offset);
            expect(committed?.metadata).toBe(`m${committed?.offset}`);
          }
        }
      } finally {
        await broker.close();
      }
    }
    expect(acked.size).toBe(3);
  });
});

describe("a deleted topic's committed offsets", () => {
  const endOfOffsets = (broker: Broker) => broker.describeTopic(OFFSETS_TOPIC_NAME).partitions[0]!.nextOffset;

  test("are forgotten by every group when the topic is deleted: a topic created again under the name starts with none, also after a restart; other topics' commits stay", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("orders", { partitions: 2 });
      broker.createTopic("audit");
      await broker.offsets.commit("billing", [
        entry("orders", 0, 100),
        entry("orders", 1, 7),
        entry("audit", 0, 3),
      ]);
      await broker.offsets.commit("shipping", [entry("orders", 0, 40)]);
      await broker.deleteTopic("orders");
      expect(broker.offsets.committed("billing", "orders", 0)).toBeUndefined();
      expect(broker.offsets.committedOf("billing").map((c) => c.topic)).toEqual(["audit"]);
      expect(broker.offsets.hasCommits("shipping")).toBe(false);
      broker.createTopic("orders", { partitions: 2 });
      expect(broker.offsets.committed("billing", "orders", 0)).toBeUndefined();
      expect(broker.offsets.committed("shipping", "orders", 0)).toBeUndefined();
      await broker.close();
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.offsets.committed("billing", "orders", 0)).toBeUndefined();
      expect(broker.offsets.committed("billing", "orders", 1)).toBeUndefined();
      expect(broker.offsets.committed("shipping", "orders", 0)).toBeUndefined();
      expect(broker.offsets.committed("billing", "audit", 0)).toMatchObject({ offset: 3 });
    } finally {
      await broker.close();
    }
  });

  test("a commit still in flight when its topic is deleted stays out, in memory and after a restart", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("orders");
      await broker.offsets.commit("g", [entry("orders", 0, 5)]);
      // Appended now, acknowledged after its force: the delete runs in between.
      const inFlight = broker.offsets.commit("g", [entry("orders", 0, 9)]);
      await broker.deleteTopic("orders");
      await inFlight;
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      broker.createTopic("orders");
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      await broker.close();
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
    } finally {
      await broker.close();
    }
  });

  test("a delete stopped by a crash after its commit point: the next start forgets the topic's offsets (its directories tell), and writes the tombstones", async () => {
    using dir = tempDir();
    let broker = Broker.open({ dataDir: dir.path });
    broker.createTopic("orders");
    broker.createTopic("audit");
    await broker.offsets.commit("g", [entry("orders", 0, 100), entry("audit", 0, 3)]);
    await broker.close();
    // What a delete leaves when it stops right after its commit point: the topic file removed, its
    // partition directories not yet.
    fs.rmSync(path.join(dir.path, "topics", "orders.json"));
    const logged: string[] = [];
    const originalError = console.error;
    console.error = (...args: unknown[]) => void logged.push(args.map(String).join(" "));
    try {
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      expect(broker.offsets.committed("g", "audit", 0)).toMatchObject({ offset: 3 });
      // The tombstone is appended in the background; once forced, the log says what the map says,
      // and then the directories go.
      expect(endOfOffsets(broker)).toBe(2);
      await waitUntil(() => endOfOffsets(broker) === 3, "the tombstone forced");
      await waitUntil(
        () =>
          logged.some((line) =>
            line.includes("forgot 1 committed offset(s) of the deleted topic orders (at start)"),
          ),
        "the start's log of the forgotten commit",
      );
      await waitUntil(() => !fs.existsSync(path.join(dir.path, "orders-0")), "the directory removed");
      await broker.close();
      logged.length = 0;
      broker = Broker.open({ dataDir: dir.path });
      expect(logged.filter((line) => line.includes("forgot"))).toEqual([]);
      broker.createTopic("orders");
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
    } finally {
      console.error = originalError;
      await broker.close();
    }
  });
});

describe("a deleted topic's commits when their tombstones cannot be written (a full disk)", () => {
  test("the partition directories stay, so a restart still forgets the commits, and writes the tombstones", async () => {
    using dir = tempDir();
    const full = { on: false };
    const restore = useDisk(offsetsTopicFullDisk(full));
    const logged: string[] = [];
    const originalError = console.error;
    console.error = (...args: unknown[]) => void logged.push(args.map(String).join(" "));
    let broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("orders");
      broker.createTopic("audit");
      await broker.offsets.commit("g", [entry("orders", 0, 100), entry("audit", 0, 3)]);
      full.on = true;
      // The delete itself is done (its commit point is the topic file's removal); the failure is logged.
      await broker.deleteTopic("orders");
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      expect(
        logged.some((line) => line.includes("could not be removed from the log") && line.includes("ENOSPC")),
      ).toBe(true);
      // The records are gone (a delete on a full disk frees space); the empty directory stays, the
      // mark that makes the next start forget the commits.
      expect(fs.readdirSync(path.join(dir.path, "orders-0"))).toEqual([]);
      await broker.close();
      // Before 2026-12-03 the directories were removed anyway, and this start gave the commit back.
      full.on = false;
      logged.length = 0;
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      expect(broker.offsets.committed("g", "audit", 0)).toMatchObject({ offset: 3 });
      await waitUntil(() => !fs.existsSync(path.join(dir.path, "orders-0")), "the directory removed");
      expect(
        logged.some((line) => line.includes("forgot 1 committed offset(s) of the deleted topic orders")),
      ).toBe(true);
      await broker.close();
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      broker.createTopic("orders");
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
    } finally {
      console.error = originalError;
      await broker.close();
      restore();
    }
  });

  test("the name cannot be created again until they are written: refused with the reason while the disk is full, created once a retry wrote them", async () => {
    using dir = tempDir();
    const full = { on: false };
    const restore = useDisk(offsetsTopicFullDisk(full));
    const originalError = console.error;
    console.error = () => {};
    let broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("orders");
      await broker.offsets.commit("g", [entry("orders", 0, 100)]);
      full.on = true;
      await broker.deleteTopic("orders");
      const refusal = (() => {
        try {
          broker.createTopic("orders");
          return undefined;
        } catch (error) {
          return error as BooblikError;
        }
      })();
      // Before 2026-12-03 this create succeeded, and a restart handed it the old topic's commit.
      expect(refusal?.code).toBe("STORAGE_ERROR");
      expect(refusal?.retriable).toBe(true);
      expect(refusal?.message).toContain("committed offsets could not be removed from the log yet");
      expect(refusal?.message).toContain("ENOSPC");
      // A retry on a disk still full fails again, and the create after it is refused again.
      await broker.deletion("orders");
      expect(() => broker.createTopic("orders")).toThrow("could not be removed from the log yet");
      full.on = false;
      await broker.deletion("orders");
      expect(fs.existsSync(path.join(dir.path, "orders-0"))).toBe(false);
      broker.createTopic("orders");
      await broker.append("orders", 0, ["new"]);
      await broker.close();
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.offsets.committed("g", "orders", 0)).toBeUndefined();
      expect(broker.describeTopic("orders").partitions[0]!.nextOffset).toBe(1);
    } finally {
      console.error = originalError;
      await broker.close();
      restore();
    }
  });
});

describe("a deleted topic with more commits than one offsets segment takes", () => {
  test("its tombstones go in appends that each fit: the delete finishes, the name can be created again, a restart keeps none", async () => {
    using dir = tempDir();
    // 6,000 commits with 190-byte group ids: about 1.2 MB of tombstones, above a 1 MiB segment.
    // Before 2026-12-03 they went in one append, refused every time, so the name stayed refused
    // and its directories stayed, across restarts (a reviewer's run).
    const open = () => Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 1 << 20 });
    let broker = open();
    try {
      broker.createTopic("t", { partitions: 100 });
      for (let g = 0; g < 60; g++)
        await broker.offsets.commit(
          `${"g".repeat(190)}-${g}`,
          Array.from({ length: 100 }, (_, partition) => entry("t", partition, 1)),
        );
      await broker.offsets.commit("small", [entry("t", 0, 7)]);
      await broker.deleteTopic("t");
      expect(fs.readdirSync(dir.path).filter((name) => /^t-\d+$/.test(name))).toEqual([]);
      broker.createTopic("t", { partitions: 100 });
      expect(broker.offsets.committed("small", "t", 0)).toBeUndefined();
      await broker.close();
      broker = open();
      expect(broker.offsets.committed("small", "t", 0)).toBeUndefined();
      expect(broker.offsets.committed(`${"g".repeat(190)}-59`, "t", 99)).toBeUndefined();
    } finally {
      await broker.close();
    }
  });
});

describe("a damaged batch in the offsets topic (issue 15)", () => {
  test("the broker still opens: the replay steps over the damaged commit, the later commits apply", async () => {
    using dir = tempDir();
    {
      const broker = Broker.open({ dataDir: dir.path });
      try {
        for (const offset of [1, 2, 3]) await broker.offsets.commit("g", [entry("t", 0, offset)]);
      } finally {
        await broker.close();
      }
    }
    // The second commit's stored batch: a byte of its last record.
    const file = path.join(dir.path, `${OFFSETS_TOPIC_NAME}-0`, "00000000000000000000.log");
    const bytes = fs.readFileSync(file);
    let position = 32;
    position += 8 + bytes.readUInt32BE(position);
    const damagedAt = position + 8 + bytes.readUInt32BE(position) - 2;
    bytes[damagedAt]! ^= 0x20;
    fs.writeFileSync(file, bytes);
    const broker = Broker.open({ dataDir: dir.path });
    try {
      expect(broker.offsets.damagedRangesSkipped).toBe(1);
      expect(broker.offsets.committed("g", "t", 0)).toMatchObject({ offset: 3 });
    } finally {
      await broker.close();
    }
  });
});
