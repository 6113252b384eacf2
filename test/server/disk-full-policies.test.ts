/**
 * A full disk under a running broker for the policies test/server/disk-full.test.ts does not run
 * (`append`, `interval`), on both write paths: a small tmpfs mounted by the test as the data
 * directory. The refusal comes from the write, before the policy acts, so it must look the same:
 * PRODUCE gets a retriable STORAGE_ERROR naming ENOSPC, nothing of it is appended, every
 * acknowledged record reads back, appends resume once space is freed, without a restart, and
 * everything is there after a clean stop. docs/operations.md, "What survives what", cites it.
 * Skipped, with the reason printed, where mounting is impossible.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { valuesOf } from "../helpers/records.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";

setDefaultTimeout(60_000);
if (smallFileSystemUnavailable !== undefined) {
  console.warn(`disk-full policy tests skipped: ${smallFileSystemUnavailable}`);
}

const VARIANTS = (["append", "interval"] as const).flatMap((policy) =>
  (["file", "mapped"] as const).map((writeMode) => [policy, writeMode] as const),
);

const record = (i: number) => `record ${i} `.padEnd(1000, "x");
const decoder = new TextDecoder();

async function readAll(client: BooblikClient): Promise<string[]> {
  const values: string[] = [];
  for (;;) {
    const fetched = await client.fetch("full", 0, values.length, { maxBytes: 64 * 1024 });
    if (fetched.recordCount === 0) return values;
    for (const payload of valuesOf(fetched.records)) values.push(decoder.decode(payload));
  }
}

describe.skipIf(smallFileSystemUnavailable !== undefined).each(VARIANTS)(
  "disk full, %s policy, %s write path",
  (policy, writeMode) => {
    test("a retriable ENOSPC, nothing of it appended, reads go on, appends resume without a restart", async () => {
      // 4 MiB: the mapped path stops 1 MiB short of full (FREE_SPACE_MARGIN_BYTES).
      using small = mountSmallFileSystem(4 * 1024 * 1024);
      const dataDir = path.join(small.path, "data");
      const filler = path.join(small.path, "filler");
      let acknowledged = 0;
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          await client.createTopic("full", { durability: policy, writeMode, segmentBytes: 256 * 1024 });
          const stat = fs.statfsSync(small.path);
          fs.writeFileSync(filler, new Uint8Array(Math.max(0, stat.bavail * stat.bsize - 1536 * 1024)));
          let failure: unknown;
          for (let batch = 0; batch < 2000 && failure === undefined; batch++) {
            const values = Array.from({ length: 10 }, (_, i) => record(acknowledged + i));
            const ack = await client.produce("full", 0, batchOfValues(values)).catch((error: unknown) => {
              failure = error;
              return undefined;
            });
            if (ack === undefined) break;
            expect(ack).toMatchObject({ firstOffset: acknowledged, durability: "appended" });
            acknowledged += ack.recordCount;
          }
          expect(failure).toMatchObject({ code: "STORAGE_ERROR", retriable: true });
          expect((failure as Error).message).toContain("ENOSPC");
          expect(acknowledged).toBeGreaterThan(0);
          expect((await client.listOffsets("full", 0)).nextOffset).toBe(acknowledged);
          const before = await readAll(client);
          expect(before.length).toBe(acknowledged);
          before.forEach((value, i) => {
            if (value !== record(i)) expect(value).toBe(record(i));
          });
          fs.unlinkSync(filler);
          const resumed = await client.produce("full", 0, batchOfValues(["after the disk was freed"]));
          expect(resumed.firstOffset).toBe(acknowledged);
          acknowledged++;
        } finally {
          client.close();
        }
        expect(await broker.stop("SIGTERM")).toBe(0);
      }
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        const after = await readAll(client);
        expect(after.length).toBe(acknowledged);
        expect(after.at(-1)).toBe("after the disk was freed");
      } finally {
        client.close();
      }
    });
  },
);
