/**
 * What a start after a crash reads of a preallocated `mapped` segment: the scan's reads start small
 * (RECOVERY_FIRST_READ_BYTES) and double, so a 128 MiB file holding a few kilobytes costs one small
 * read instead of a 4 MiB chunk and 8 MiB of readahead. 4,096 such partitions took 25-27 s to start
 * before (docs/operations.md). Through a broker child process and its start line.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { RECOVERY_CHUNK_BYTES, RECOVERY_FIRST_READ_BYTES } from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

test("a start after a crash reads one small piece of each preallocated mapped segment, and recovers every record", async () => {
  using dir = tempDir("recovery-reads");
  const dataDir = dir.file("data");
  const partitions = 8;
  {
    await using broker = await startBroker(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      await client.createTopic("m", { partitions, writeMode: "mapped", durability: "force" });
      for (let p = 0; p < partitions; p++) {
        await client.produce(
          "m",
          p,
          batchOfValues(Array.from({ length: 100 }, (_, i) => `p${p} r${i}`.padEnd(100, "x"))),
        );
      }
    } finally {
      client.close();
    }
    broker.process.kill("SIGKILL");
    await broker.process.exited;
  }
  await using broker = await startBroker(dataDir);
  const scanned = /recovered after a crash, (\d+) segments? scanned \(([\d.]+) MiB\)/.exec(broker.startLine);
  expect(scanned).not.toBeNull();
  expect(Number(scanned![1])).toBe(partitions);
  // Per segment, the forced records before the checkpoint's recovery point (about 11 KB: written
  // after the first force) and one first read after it (the data ends inside it); before, a whole
  // chunk each.
  const scannedMiB = Number(scanned![2]);
  expect(scannedMiB).toBeLessThanOrEqual((partitions * 2 * RECOVERY_FIRST_READ_BYTES) / 2 ** 20 + 0.05);
  expect(scannedMiB).toBeLessThan((partitions * RECOVERY_CHUNK_BYTES) / 2 ** 20 / 4);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
  try {
    for (let p = 0; p < partitions; p++) expect((await client.fetch("m", p, 0)).recordCount).toBe(100);
  } finally {
    client.close();
  }
});
