/**
 * Power loss inside `bun test`: a few cycles of the power-loss torture (power-loss.ts), and the
 * first-start case it found. The seed is in the test name; BOOBLIK_SEED replays it here and
 * `bun run torture:power-loss --seed <n>` replays it at length. Skipped, with the reason printed,
 * where the volatile file system cannot be built or mounted (no /dev/fuse, no libfuse3-dev).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { BooblikClient, frameRecords, payloadsOf } from "../../src/index.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { testSeed } from "../helpers/random.ts";
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
      const ack = await client.produce("first", 0, frameRecords(["acknowledged"]));
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
      expect(payloadsOf(fetched.records).map((payload) => new TextDecoder().decode(payload))).toEqual([
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
    const text = (records: Uint8Array) => payloadsOf(records).map((p) => new TextDecoder().decode(p));
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("kept", { durability: "force" });
      await client.produce("kept", 0, frameRecords(["kept record"]));
      await client.createTopic("again", { durability: "force", partitions: 2 });
      await client.produce("again", 1, frameRecords(["first life"]));
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
      await client.produce("again", 0, frameRecords(["second life"]));
      // A delete last: no later create fsyncs topics/ on its behalf.
      await client.createTopic("gone", { durability: "force" });
      await client.produce("gone", 0, frameRecords(["deleted record"]));
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
      // Every cut threw something away (at least the unsynced holder line of the lock file), so the
      // cycles did cut power rather than just restart.
      expect(result.cutsThatDiscarded).toBe(cycles);
    },
  );
}
