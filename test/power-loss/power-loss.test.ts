/**
 * Power loss inside `bun test`: a few cycles of the power-loss torture (power-loss.ts), and the
 * first-start case it found. The seed is in the test name; BOOBLIK_SEED replays it here and
 * `bun run torture:power-loss --seed <n>` replays it at length. Skipped, with the reason printed,
 * where the volatile file system cannot be built or mounted (no /dev/fuse, no libfuse3-dev).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { pwriteAll } from "../../ffi/file.ts";
import { RECORD_PAYLOAD_BYTES_DEFAULT_MAX, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { BooblikClient } from "../../src/index.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { scanSegmentFile } from "../../src/storage/recovery.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { testSeed } from "../helpers/random.ts";
import { storedEntries, valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { runPowerLoss } from "./power-loss.ts";
import { VolatileFs, volatileFsUnavailable } from "./volatile-fs.ts";

setDefaultTimeout(120_000);
const SEED = testSeed();
if (volatileFsUnavailable !== undefined) console.warn(`power-loss tests skipped: ${volatileFsUnavailable}`);

test.skipIf(volatileFsUnavailable !== undefined)(
  "a first start: the data directory the broker created survives a power cut with its acknowledged record",
  async () => {
    await using vfs = await VolatileFs.mount();
    // A data directory that does not exist yet, two levels deep: the broker creates both.
    const dataDir = path.join(vfs.path, "var", "booblik");
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("first", { durability: "force" });
      const ack = await client.produce("first", 0, batchOfValues(["acknowledged"]));
      expect(ack.durability).toBe("forced");
      client.close();
      broker.process.kill("SIGKILL");
      await broker.process.exited;
    }
    await vfs.powerCycle();
    await using broker = await startBroker(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      const fetched = await client.fetch("first", 0, 0);
      expect(valuesOf(fetched.records).map((payload) => new TextDecoder().decode(payload))).toEqual([
        "acknowledged",
      ]);
    } finally {
      client.close();
    }
  },
);

test.skipIf(volatileFsUnavailable !== undefined)(
  "acknowledged topic creates and deletes survive a power cut, a re-created name with its new records",
  async () => {
    await using vfs = await VolatileFs.mount();
    const dataDir = path.join(vfs.path, "data");
    const text = (records: Uint8Array) => valuesOf(records).map((p) => new TextDecoder().decode(p));
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("kept", { durability: "force" });
      await client.produce("kept", 0, batchOfValues(["kept record"]));
      await client.createTopic("again", { durability: "force", partitions: 2 });
      await client.produce("again", 1, batchOfValues(["first life"]));
      await client.deleteTopic("again");
      // The name is free once the delete finished; until then a create is refused (retriable).
      await waitUntil(
        () =>
          client.createTopic("again", { durability: "force" }).then(
            () => true,
            () => false,
          ),
        "the re-create of a deleted topic",
      );
      await client.produce("again", 0, batchOfValues(["second life"]));
      // A delete last: no later create fsyncs topics/ on its behalf.
      await client.createTopic("gone", { durability: "force" });
      await client.produce("gone", 0, batchOfValues(["deleted record"]));
      await client.deleteTopic("gone");
      client.close();
      broker.process.kill("SIGKILL");
      await broker.process.exited;
    }
    await vfs.powerCycle();
    await using broker = await startBroker(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      const metadata = await client.metadata();
      // name: the next offset of each partition (the re-created topic has one partition, not two).
      const topics = metadata.topics.map(
        (topic) => `${topic.name}: ${topic.partitions.map((partition) => partition.nextOffset).join(",")}`,
      );
      expect(topics.sort()).toEqual(["again: 1", "kept: 1"]);
      expect(text((await client.fetch("kept", 0, 0)).records)).toEqual(["kept record"]);
      expect(text((await client.fetch("again", 0, 0)).records)).toEqual(["second life"]);
    } finally {
      client.close();
    }
  },
);

/** Where a segment's entries end (the first zero length, or the end of the file): recovery's scan. */
function endOfEntries(fd: number, file: string): number {
  const size = fs.fstatSync(fd).size;
  return scanSegmentFile(
    fd,
    file,
    SEGMENT_HEADER_BYTES,
    0,
    size,
    RECORD_PAYLOAD_BYTES_DEFAULT_MAX,
    true,
    undefined,
  ).endPosition;
}

test.skipIf(volatileFsUnavailable !== undefined)(
  "a record a restart read back from the page cache is made durable before it is shown",
  async () => {
    await using vfs = await VolatileFs.mount();
    const dataDir = path.join(vfs.path, "data");
    const segment = path.join(dataDir, "pages-0", "00000000000000000000.log");
    const text = (records: Uint8Array) => valuesOf(records).map((p) => new TextDecoder().decode(p));
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("pages", { durability: "force" });
      await client.produce("pages", 0, batchOfValues(["forced"]));
      client.close();
      broker.process.kill("SIGKILL");
      await broker.process.exited;
    }
    // A broker that died between its pwrite and its fdatasync (a window group commit keeps to
    // microseconds, too short to hit from outside): the next record, written and never synced.
    const fd = fs.openSync(segment, "r+");
    // The next entry as the broker stores it: BaseOffset 1, in its frame.
    const record = storedEntries(1, [["only in the page cache"]]);
    // At the end of the log, which is not the end of the file: zeros follow it (file-segment-writer.ts).
    pwriteAll(fd, record, 0, record.length, endOfEntries(fd, segment));
    fs.closeSync(fd);
    // A process crash, not a power loss: the restart reads the record back and shows it.
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      expect(text((await client.fetch("pages", 0, 0)).records)).toEqual(["forced", "only in the page cache"]);
      client.close();
      await vfs.unplug(); // then the power goes
      broker.process.kill("SIGKILL");
      await broker.process.exited;
    }
    await vfs.powerCycle();
    await using broker = await startBroker(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      // What a consumer was shown survived: the recovery forced it before showing it.
      expect(text((await client.fetch("pages", 0, 0)).records)).toEqual(["forced", "only in the page cache"]);
    } finally {
      client.close();
    }
  },
);

// The mapped path is covered too: FUSE backs shared writable mappings through the page cache, an
// fdatasync writes the dirty pages to the daemon before its fsync, and the unmount at the cut drops
// whatever was still dirty (with the mapped writer's fdatasync disabled the run fails at once; see
// docs/operations.md, "Power loss"). Fewer cycles: the file path is the default.
for (const [writeMode, cycles] of [
  ["file", 5],
  ["mapped", 3],
] as const) {
  test.skipIf(volatileFsUnavailable !== undefined)(
    `power-loss torture, ${writeMode} write path, ${cycles} cycles (seed ${SEED})`,
    async () => {
      using dir = tempDir();
      const result = await runPowerLoss({ cycles, seed: SEED, workDir: dir.path, writeMode });
      expect(result.cycles).toBe(cycles);
      expect(result.acknowledged).toBeGreaterThan(0);
      expect(result.consumed).toBeGreaterThanOrEqual(result.acknowledged);
      // The group committer's commits were acknowledged, and checked after each restart.
      expect(result.commitsAcknowledged).toBeGreaterThan(0);
      // The first cycle always cuts the power; every cut threw something away (at least the unsynced
      // holder line of the lock file), so the cycles did cut power rather than just restart.
      expect(result.cycles - result.killsOnly).toBeGreaterThan(0);
      expect(result.cutsThatDiscarded).toBe(result.cycles - result.killsOnly);
    },
  );
}
