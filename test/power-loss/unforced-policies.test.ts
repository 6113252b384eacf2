/**
 * What `append` and `interval` promise across a power loss, shown rather than assumed
 * (docs/operations.md, "What survives what"): records acknowledged and shown before any force
 * covered them are gone after a power cut, the log restarts as a gap-free prefix, and their offsets
 * are given to other records. Records a force covered (a roll's background force under `append`,
 * the timer under `interval`: here a clean stop stands in for both) survive. Both write paths, on the
 * FUSE file system that forgets whatever no fsync covered (volatile-fs.c).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { valuesOf } from "../helpers/records.ts";
import { VolatileFs, volatileFsUnavailable } from "./volatile-fs.ts";

setDefaultTimeout(60_000);
if (volatileFsUnavailable !== undefined)
  console.warn(`unforced-policy tests skipped: ${volatileFsUnavailable}`);

const VARIANTS = (["append", "interval"] as const).flatMap((policy) =>
  (["file", "mapped"] as const).map((writeMode) => [policy, writeMode] as const),
);
const decoder = new TextDecoder();

async function values(port: number): Promise<string[]> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0 });
  try {
    return valuesOf((await client.fetch("t", 0, 0)).records).map((bytes) => decoder.decode(bytes));
  } finally {
    client.close();
  }
}

describe.skipIf(volatileFsUnavailable !== undefined).each(VARIANTS)(
  "power loss, %s policy, %s write path",
  (policy, writeMode) => {
    test("acknowledged and shown records no force covered are lost; forced ones kept; offsets reused", async () => {
      await using vfs = await VolatileFs.mount();
      const dataDir = path.join(vfs.path, "data");
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          // A segment and an interval that nothing here reaches: no force but the clean stop's.
          await client.createTopic("t", {
            durability: policy,
            writeMode,
            segmentBytes: 1024 * 1024,
            flushIntervalMs: 3_600_000,
          });
          expect(await client.produce("t", 0, batchOfValues(["forced 0", "forced 1"]))).toMatchObject({
            firstOffset: 0,
            durability: "appended",
          });
        } finally {
          client.close();
        }
        expect(await broker.stop("SIGTERM")).toBe(0); // forces everything
      }
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          expect(await client.produce("t", 0, batchOfValues(["unforced 2", "unforced 3"]))).toMatchObject({
            firstOffset: 2,
            durability: "appended",
          });
        } finally {
          client.close();
        }
        // Shown to a consumer at once, before any force.
        expect(await values(broker.port)).toEqual(["forced 0", "forced 1", "unforced 2", "unforced 3"]);
        await vfs.unplug(); // the power goes with the broker running
        broker.process.kill("SIGKILL");
        await broker.process.exited;
      }
      await vfs.powerCycle();
      await using broker = await startBroker(dataDir);
      expect(await values(broker.port)).toEqual(["forced 0", "forced 1"]);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        // Offset 2 now holds another record than the one a consumer was shown before the cut.
        expect((await client.produce("t", 0, batchOfValues(["another 2"]))).firstOffset).toBe(2);
      } finally {
        client.close();
      }
      expect(await values(broker.port)).toEqual(["forced 0", "forced 1", "another 2"]);
    });
  },
);
