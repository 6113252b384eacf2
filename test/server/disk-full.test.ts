/**
 * A full disk under a running broker (a small tmpfs mounted by the test as its data directory):
 * PRODUCE gets a retriable STORAGE_ERROR naming ENOSPC, nothing acknowledged is lost, reads and
 * fetches keep working, and appends resume once space is freed, without a restart. A broker started
 * or stopped on a full disk starts read-only (start line, /ready, every refused write say so), stops
 * with exit 0, leaves no temporary files, and takes writes again once space returns. Skipped, with
 * the reason printed, where mounting is impossible.
 *
 * Then the case that used to kill the broker: a `mapped` topic whose segment is larger than a full
 * ext4 or XFS (loop-mounted). The broker died of SIGBUS there before any client saw an ENOSPC.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import {
  type LoopFileSystemKind,
  loopFileSystemUnavailable,
  mountLoopFileSystem,
} from "../helpers/loop-fs.ts";
import { valuesOf } from "../helpers/records.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";
import { waitUntil } from "../helpers/wait.ts";

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
              batchOfValues(Array.from({ length: 10 }, (_, i) => record(acknowledged + i))),
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
            values.push(...valuesOf(result.records).map((bytes) => new TextDecoder().decode(bytes)));
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
        const tooMuch = batchOfValues(Array.from({ length: 10 }, (_, i) => record(acknowledged + i)));
        await expect(client.produce("full", 0, tooMuch)).rejects.toMatchObject({
          code: "STORAGE_ERROR",
          retriable: true,
        });
        expect((await client.listOffsets("full", 0)).nextOffset).toBe(acknowledged);
        // Free space: appends resume on the same broker, same connection.
        fs.unlinkSync(filler);
        const resumed = await client.produce("full", 0, batchOfValues(["after the disk was freed"]));
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

  test.skipIf(smallFileSystemUnavailable !== undefined).each(WRITE_MODES.map((mode) => [mode]))(
    "%s write path: a broker started and stopped on a full disk serves reads, refuses writes saying why, exits 0, and writes again once space returns",
    async (writeMode: WriteMode) => {
      using small = mountSmallFileSystem(2 * 1024 * 1024);
      const dataDir = path.join(small.path, "data");
      const record = (i: number) => `record ${i} `.padEnd(500, "x");
      const filler = path.join(small.path, "filler");
      const fillTheDisk = () => {
        const fd = fs.openSync(filler, "a"); // tops up what a previous fill left
        const block = new Uint8Array(4096);
        try {
          for (;;) fs.writeSync(fd, block);
        } catch (error) {
          expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
        } finally {
          fs.closeSync(fd);
        }
      };
      {
        // The disk fills under a running broker; SIGTERM still stops it cleanly.
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        await client.createTopic("kept", {
          partitions: 2,
          durability: "force",
          writeMode,
          segmentBytes: 64 * 1024,
        });
        for (let p = 0; p < 2; p++) await client.produce("kept", p, batchOfValues([0, 1, 2].map(record)));
        client.close();
        // The checkpoint a force writes in the background must land before the fill: one still in
        // flight frees the old file's block after it, and both clean marks then fit (seen once in
        // CI after the first write stopped being held back for 5 s).
        const pointOf = (p: number) =>
          JSON.parse(fs.readFileSync(path.join(dataDir, `kept-${p}`, "checkpoint.json"), "utf8"))
            .recoveryPoint.nextOffset;
        await waitUntil(() => pointOf(0) === 3 && pointOf(1) === 3, "both checkpoints at offset 3");
        fillTheDisk();
        expect(await broker.stop("SIGTERM")).toBe(0);
        const said = await broker.lines.rest();
        // How many depends on the write path: closing a mapped segment trims its reserved blocks,
        // which can make room for the next partition's mark.
        expect(said.join("\n")).toMatch(
          /the disk is full: [12] partitions? could not write the clean-shutdown mark/,
        );
      }
      const leftovers = () =>
        fs.readdirSync(dataDir, { recursive: true }).filter((name) => String(name).endsWith(".tmp"));
      for (let start = 0; start < 2; start++) {
        fillTheDisk(); // a mapped segment's close trims its reserved blocks: space comes back
        await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
        expect(broker.startLine).toContain("DISK FULL: 2 partitions read-only until space is freed");
        const metricsPort = metricsPortOf(broker.startLine);
        const ready = await fetch(`http://127.0.0.1:${metricsPort}/ready`);
        expect(ready.status).toBe(200);
        expect(await ready.text()).toContain("read-only: the disk is full; 2 partitions");
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        for (let p = 0; p < 2; p++) {
          const fetched = await client.fetch("kept", p, 0);
          expect(valuesOf(fetched.records).map((bytes) => new TextDecoder().decode(bytes))).toEqual(
            [0, 1, 2].map(record),
          );
        }
        const refused = await client.produce("kept", 0, batchOfValues(["no room"])).catch((error) => error);
        expect(refused).toMatchObject({ code: "STORAGE_ERROR", retriable: true });
        expect((refused as Error).message).toContain("ENOSPC");
        expect((refused as Error).message).toContain("read-only until space is freed");
        expect((await client.listOffsets("kept", 0)).nextOffset).toBe(3);
        client.close();
        expect(await broker.stop("SIGTERM")).toBe(0);
        expect(leftovers()).toEqual([]);
      }
      // Space returns while a broker runs: writes resume without a restart, and /ready says so.
      {
        await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
        const metricsPort = metricsPortOf(broker.startLine);
        fs.unlinkSync(filler);
        expect(await (await fetch(`http://127.0.0.1:${metricsPort}/ready`)).text()).toBe("ready\n");
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        expect(await client.produce("kept", 0, batchOfValues(["after space returned"]))).toMatchObject({
          firstOffset: 3,
          durability: "forced",
        });
        client.close();
        expect(await broker.stop("SIGTERM")).toBe(0);
      }
      // Nothing was lost across the starts and stops on the full disk.
      await using broker = await startBroker(dataDir);
      expect(broker.startLine).not.toContain("DISK FULL");
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      const values = valuesOf((await client.fetch("kept", 0, 0)).records).map((b) =>
        new TextDecoder().decode(b),
      );
      expect(values).toEqual([...[0, 1, 2].map(record), "after space returned"]);
      client.close();
      expect(await broker.stop("SIGTERM")).toBe(0);
    },
  );
});

const LOOP_KINDS: LoopFileSystemKind[] = ["ext4", "xfs"];
for (const kind of LOOP_KINDS) {
  const unavailable = loopFileSystemUnavailable(kind);
  if (unavailable !== undefined) console.warn(`${kind} disk-full broker test skipped: ${unavailable}`);
}

describe.each(LOOP_KINDS.map((kind) => [kind]))("a mapped topic on a full %s", (kind: LoopFileSystemKind) => {
  test.skipIf(loopFileSystemUnavailable(kind) !== undefined)(
    "segment larger than the disk: the broker lives, PRODUCE gets a retriable ENOSPC, fetches serve everything, appends resume",
    async () => {
      using fileSystem = mountLoopFileSystem(kind, 32 * 1024 * 1024);
      const filler = path.join(fileSystem.path, "filler");
      fs.writeFileSync(filler, new Uint8Array(2 * 1024 * 1024));
      await using broker = await startBroker(path.join(fileSystem.path, "data"));
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        await client.createTopic("full", {
          writeMode: "mapped",
          segmentBytes: 64 * 1024 * 1024,
          durability: "force",
        });
        const record = (i: number) => `record ${i} `.padEnd(1000, "x");
        let acknowledged = 0;
        let failure: unknown;
        for (let batch = 0; batch < 2000 && failure === undefined; batch++) {
          try {
            const ack = await client.produce(
              "full",
              0,
              batchOfValues(Array.from({ length: 50 }, (_, i) => record(acknowledged + i))),
            );
            acknowledged += ack.recordCount;
          } catch (error) {
            failure = error;
          }
        }
        // Before the window of written blocks, the broker died here: the client saw its connection
        // close, not this error.
        expect(failure).toMatchObject({ code: "STORAGE_ERROR", retriable: true });
        expect((failure as Error).message).toContain("ENOSPC");
        expect(broker.process.exitCode).toBeNull();
        // More than half of the 32 MiB holds acknowledged records: the disk really filled.
        expect(acknowledged * 1000).toBeGreaterThan(16 * 1024 * 1024);
        let offset = 0;
        for (;;) {
          const result = await client.fetch("full", 0, offset, { maxBytes: 1024 * 1024 });
          if (result.recordCount === 0) break;
          const values = valuesOf(result.records).map((bytes) => new TextDecoder().decode(bytes));
          values.forEach((value, i) => {
            if (value !== record(offset + i)) expect(value).toBe(record(offset + i));
          });
          offset += result.recordCount;
        }
        expect(offset).toBe(acknowledged);
        fs.unlinkSync(filler);
        const resumed = await client.produce("full", 0, batchOfValues(["after the disk was freed"]));
        expect(resumed).toMatchObject({ firstOffset: acknowledged, durability: "forced" });
      } finally {
        client.close();
      }
      expect(await broker.stop("SIGTERM")).toBe(0);
    },
  );
});

describe.each(LOOP_KINDS.map((kind) => [kind]))("a start on a full %s", (kind: LoopFileSystemKind) => {
  test.skipIf(loopFileSystemUnavailable(kind) !== undefined)(
    "the data directory lock needs no free block: the broker starts and serves every acknowledged record",
    async () => {
      // The shape of an operator's sequence that refused the start with `pwrite failed: ENOSPC on
      // <data-dir>/.lock` on ext4 while the lock's content was cut before it was written (their
      // script, 3 of 3 runs, also here on 2026-12-02): no blocks reserved for root (-m 0), the disk
      // filled by the broker's own appends, topped up byte by byte while it runs and again after it
      // stopped. This port of it did not reproduce the refusal (it passes on the old code too): it
      // guards the promise that a full disk never stops a start, with every acknowledged record.
      using fileSystem = mountLoopFileSystem(kind, 64 * 1024 * 1024, ["-m", "0"]);
      const dataDir = path.join(fileSystem.path, "data");
      let fillers = 0;
      const fillTheDisk = () => {
        for (const chunkBytes of [1024, 1]) {
          let fd: number;
          try {
            fd = fs.openSync(path.join(fileSystem.path, `filler-${fillers++}`), "w");
          } catch (error) {
            // XFS: no room even for the new file's inode; the disk is full already.
            expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
            continue;
          }
          const chunk = new Uint8Array(chunkBytes);
          try {
            for (;;) fs.writeSync(fd, chunk);
          } catch (error) {
            expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
          } finally {
            fs.closeSync(fd);
          }
        }
        Bun.spawnSync(["sync"]);
      };
      const acknowledged: number[] = [0, 0];
      {
        await using broker = await startBroker(dataDir, ["--durability", "append", "--segment-size", "8MiB"]);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        await client.createTopic("kept", { partitions: 2 });
        const value = "x".repeat(200);
        // Four writers, two to each partition, batches of 20 records, each until the disk refused it
        // 30 times in a row (the operator's load generator).
        const writer = async (p: number) => {
          for (let refusals = 0; refusals < 30; ) {
            try {
              const ack = await client.produce(
                "kept",
                p,
                batchOfValues(Array.from({ length: 20 }, () => value)),
              );
              acknowledged[p] = Math.max(acknowledged[p]!, ack.firstOffset + ack.recordCount);
              refusals = 0;
            } catch (error) {
              expect(error).toMatchObject({ code: "STORAGE_ERROR", retriable: true });
              refusals++;
            }
          }
        };
        await Promise.all([0, 1, 0, 1].map(writer));
        client.close();
        fillTheDisk();
        expect(await broker.stop("SIGTERM")).toBe(0);
      }
      fillTheDisk();
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        for (let p = 0; p < 2; p++)
          expect((await client.listOffsets("kept", p)).nextOffset).toBe(acknowledged[p]!);
      } finally {
        client.close();
      }
    },
  );
});
