/**
 * The last cell of docs/operations.md's "What survives what" that only the design spoke for: under
 * `append` and `interval`, a background force fails (EIO from every fsync) and then the power goes.
 * The data directory is on volatile-fs (test/power-loss/volatile-fs.c), which keeps across a cut only
 * what a successful sync covered, so what the failed force was to cover is gone, as the kernel is
 * allowed to drop it after a failed fsync (the error reports exactly that).
 *
 * Checked, both write paths: records forced before (here by a clean stop) survive; records
 * acknowledged after that and before the failed force are lost, not half kept: the log restarts as
 * the forced prefix, whole batches, no hole; the partition that had stopped on the failure takes
 * writes again after the restart, at the next offset of that prefix. A consumer that saw the lost
 * records before the cut sees other records at their offsets afterwards, as for any unforced record
 * (test/power-loss/unforced-policies.test.ts).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { BooblikError } from "../../src/domain/errors.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { valuesOf } from "../helpers/records.ts";
import { waitUntil } from "../helpers/wait.ts";
import { VolatileFs, volatileFsUnavailable } from "./volatile-fs.ts";

setDefaultTimeout(120_000);
if (volatileFsUnavailable !== undefined)
  console.warn(`fsync-failure power-loss tests skipped: ${volatileFsUnavailable}`);

const VARIANTS = (["append", "interval"] as const).flatMap((policy) =>
  (["file", "mapped"] as const).map((writeMode) => [policy, writeMode] as const),
);
/** Batches of 16 KiB in segments of 1 MiB: under `append` a roll, and its force, after 64 PRODUCEs. */
const RECORD_BYTES = 2048;
const BATCH_RECORDS = 8;
const value = (i: number) => `record ${i} `.padEnd(RECORD_BYTES, "x");
const decoder = new TextDecoder();

async function readAll(port: number): Promise<string[]> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0 });
  try {
    const values: string[] = [];
    for (;;) {
      const fetched = await client.fetch("t", 0, values.length, { maxBytes: 256 * 1024 });
      if (fetched.recordCount === 0) return values;
      for (const payload of valuesOf(fetched.records)) values.push(decoder.decode(payload));
    }
  } finally {
    client.close();
  }
}

describe.skipIf(volatileFsUnavailable !== undefined).each(VARIANTS)(
  "a failed background force, then a power cut, %s policy, %s write path",
  (policy, writeMode) => {
    test("what was forced survives; what the failed force was to cover is lost as a whole; writes resume", async () => {
      await using vfs = await VolatileFs.mount();
      const dataDir = path.join(vfs.path, "data");
      /** Values by offset of every acknowledged PRODUCE (each batch acknowledged whole or refused). */
      const acknowledged: string[] = [];
      let next = 0;
      const produce = async (client: BooblikClient) => {
        const values = Array.from({ length: BATCH_RECORDS }, (_, i) => value(next + i));
        next += BATCH_RECORDS;
        const ack = await client.produce("t", 0, batchOfValues(values));
        expect(ack.firstOffset).toBe(acknowledged.length);
        acknowledged.push(...values);
      };
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          await client.createTopic("t", {
            durability: policy,
            writeMode,
            segmentBytes: 1024 * 1024,
            // `interval`: the timer's force is the one that fails, soon after the device does.
            flushIntervalMs: 200,
          });
          await produce(client);
          await produce(client);
        } finally {
          client.close();
        }
        expect(await broker.stop("SIGTERM")).toBe(0); // a clean stop forces everything
      }
      const forced = acknowledged.length;
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          await produce(client);
          await vfs.fail("syncs", true);
          // Acknowledged until the background force (a roll's under `append`, the timer's under
          // `interval`) has failed; then refused, naming the EIO.
          let refusal: unknown;
          await waitUntil(
            () =>
              produce(client).then(
                () => false,
                (error: unknown) => {
                  refusal = error;
                  return true;
                },
              ),
            "a PRODUCE refused after the failed force",
          );
          expect(refusal).toBeInstanceOf(BooblikError);
          expect(refusal).toMatchObject({ code: "STORAGE_ERROR", retriable: false });
          expect((refusal as Error).message).toContain("EIO");
          expect(acknowledged.length).toBeGreaterThan(forced);
        } finally {
          client.close();
        }
        // Everything acknowledged was shown: the lost records below were seen by a consumer.
        expect(await readAll(broker.port)).toEqual(acknowledged);
        await vfs.unplug(); // the power goes with the broker running
        broker.process.kill("SIGKILL");
        await broker.process.exited;
      }
      await vfs.powerCycle();
      await using broker = await startBroker(dataDir);
      // No sync succeeded after the clean stop, so the file system kept exactly the forced prefix.
      expect(await readAll(broker.port)).toEqual(acknowledged.slice(0, forced));
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        const after = await client.produce("t", 0, batchOfValues(["after the restart"]));
        expect(after.firstOffset).toBe(forced);
      } finally {
        client.close();
      }
      expect((await readAll(broker.port)).at(-1)).toBe("after the restart");
    });
  },
);
