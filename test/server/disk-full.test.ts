/**
 * A full disk under a running broker (a small tmpfs mounted by the test as its data directory):
 * PRODUCE gets a retriable STORAGE_ERROR naming ENOSPC, nothing acknowledged is lost, reads and
 * fetches keep working, and appends resume once space is freed, without a restart. Skipped, with
 * the reason printed, where mounting is impossible.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { frameRecords } from "../../src/record/batch-builder.ts";
import { payloadsOf } from "../../src/record/codec.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";

setDefaultTimeout(60_000);

describe("disk full under a running broker", () => {
  test.skipIf(smallFileSystemUnavailable !== undefined)(
    "produce fails with a retriable ENOSPC, acknowledged data stays readable, appends resume after space is freed",
    async () => {
      using small = mountSmallFileSystem(2 * 1024 * 1024);
      const dataDir = path.join(small.path, "data");
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        await client.createTopic("full", { segmentBytes: 256 * 1024, durability: "force" });
        // Leave little room: a filler the test deletes later to "free space".
        const filler = path.join(small.path, "filler");
        const free = () => {
          const stat = fs.statfsSync(small.path);
          return stat.bavail * stat.bsize;
        };
        fs.writeFileSync(filler, new Uint8Array(Math.max(0, free() - 300 * 1024)));
        const record = (i: number) => `record ${i} `.padEnd(1000, "x");
        let acknowledged = 0;
        let failure: unknown;
        for (let batch = 0; batch < 1000 && failure === undefined; batch++) {
          let ack: Awaited<ReturnType<typeof client.produce>>;
          try {
            ack = await client.produce(
              "full",
              0,
              frameRecords(Array.from({ length: 10 }, (_, i) => record(acknowledged + i))),
            );
          } catch (error) {
            failure = error;
            break;
          }
          // Outside the try: a wrong offset fails here, not later as a confusing "failure" mismatch.
          expect(ack.firstOffset).toBe(acknowledged);
          acknowledged += ack.recordCount;
        }
        expect(failure).toMatchObject({ code: "STORAGE_ERROR", retriable: true });
        expect((failure as Error).message).toContain("ENOSPC");
        expect(acknowledged).toBeGreaterThan(0);
        // Everything acknowledged reads back while the disk is full.
        const readBack = async () => {
          const values: string[] = [];
          let offset = 0;
          for (;;) {
            const result = await client.fetch("full", 0, offset, { maxBytes: 64 * 1024 });
            if (result.recordCount === 0) break;
            values.push(...payloadsOf(result.records).map((bytes) => new TextDecoder().decode(bytes)));
            offset += result.recordCount;
          }
          return values;
        };
        const before = await readBack();
        expect(before.length).toBe(acknowledged);
        before.forEach((value, i) => {
          expect(value).toBe(record(i));
        });
        // The batch that did not fit still does not (nothing was appended by the failed attempt).
        const tooMuch = frameRecords(Array.from({ length: 10 }, (_, i) => record(acknowledged + i)));
        await expect(client.produce("full", 0, tooMuch)).rejects.toMatchObject({
          code: "STORAGE_ERROR",
          retriable: true,
        });
        expect((await client.listOffsets("full", 0)).nextOffset).toBe(acknowledged);
        // Free space: appends resume on the same broker, same connection.
        fs.unlinkSync(filler);
        const resumed = await client.produce("full", 0, frameRecords(["after the disk was freed"]));
        expect(resumed).toMatchObject({ firstOffset: acknowledged, durability: "forced" });
        const after = await readBack();
        expect(after.length).toBe(acknowledged + 1);
        expect(after.at(-1)).toBe("after the disk was freed");
      } finally {
        client.close();
      }
      expect(await broker.stop("SIGTERM")).toBe(0);
    },
  );
});
