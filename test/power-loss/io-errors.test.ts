/**
 * I/O errors under a running broker, for every durability policy on both write paths: the data
 * directory on volatile-fs (test/power-loss/volatile-fs.c) with its syncs, or its writes, made to
 * fail with EIO while every other call works, as a failing device. The broker runs as a child
 * process; a client produces one batch per PRODUCE (acknowledged whole or refused whole).
 * docs/operations.md, "What survives what", cites it.
 *
 * Checked: once a write or force of a partition failed, that partition refuses every PRODUCE until
 * the broker restarts, even after the device works again (a retried fsync that succeeds proves
 * nothing about the data of the failed one); under `force` the PRODUCE whose write or force failed
 * is refused, not acknowledged; reads of what it showed keep working; another topic takes writes
 * once the device works; SIGTERM still stops the broker (exit 0); after a restart every
 * acknowledged record is there and the partition takes writes; a power cut after that restart keeps
 * every acknowledged record.
 *
 * Segments of 1 MiB, batches of 16 KiB: under `append` the first force (after a roll) and, on the
 * mapped path, the first pwrite that extends the window of written blocks (64 KiB ahead) come after
 * a few batches, before any roll creates a new file. (A failed creation of a new segment is not
 * sticky: its file is removed and the old segment stays active.)
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
if (volatileFsUnavailable !== undefined) console.warn(`I/O error tests skipped: ${volatileFsUnavailable}`);

const VARIANTS = (["syncs", "writes"] as const).flatMap((calls) =>
  (["force", "append", "interval"] as const).flatMap((policy) =>
    (["file", "mapped"] as const).map((writeMode) => [calls, policy, writeMode] as const),
  ),
);

const RECORD_BYTES = 2048;
const BATCH_RECORDS = 8;
const value = (i: number) => `record ${i} `.padEnd(RECORD_BYTES, "x");
const decoder = new TextDecoder();

async function readAll(client: BooblikClient, topic: string): Promise<string[]> {
  const values: string[] = [];
  for (;;) {
    const fetched = await client.fetch(topic, 0, values.length, { maxBytes: 256 * 1024 });
    if (fetched.recordCount === 0) return values;
    for (const payload of valuesOf(fetched.records)) values.push(decoder.decode(payload));
  }
}

describe.skipIf(volatileFsUnavailable !== undefined).each(VARIANTS)(
  "%s fail with EIO, %s policy, %s write path",
  (calls, policy, writeMode) => {
    test("the partition stops until restart, reads go on, nothing acknowledged is lost", async () => {
      await using vfs = await VolatileFs.mount();
      const dataDir = path.join(vfs.path, "data");
      /** Values of acknowledged PRODUCEs, by offset (every batch is acknowledged whole or refused). */
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
          for (const topic of ["t", "other"])
            await client.createTopic(topic, { durability: policy, writeMode, segmentBytes: 1024 * 1024 });
          await produce(client);

          await vfs.fail(calls, true);
          // Under `force` the next PRODUCE fails in its write (the file path's pwrite) or in the
          // force it waits for. Under `append` a force runs after a roll, under `interval` on its
          // timer; the mapped path's stores reach the device only when forced or when its window of
          // written blocks grows: PRODUCEs are acknowledged until one of those failed, then refused.
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
            `a PRODUCE refused after failing ${calls}`,
          );
          if (policy === "force") expect(acknowledged.length).toBe(BATCH_RECORDS);
          expect(refusal).toBeInstanceOf(BooblikError);
          expect(refusal).toMatchObject({ code: "STORAGE_ERROR", retriable: false });
          expect((refusal as Error).message).toContain("EIO");

          await vfs.fail(calls, false);
          // The device works again; the partition still refuses, naming the earlier failure.
          const again = await produce(client).catch((error: unknown) => error);
          expect(again).toMatchObject({ code: "STORAGE_ERROR", retriable: false });
          expect((again as Error).message).toContain("refuses appends after an earlier failure");
          expect((again as Error).message).toContain("EIO");
          // Reads of what it showed go on: every acknowledged record, at its offset.
          expect(await readAll(client, "t")).toEqual(acknowledged);
          // Another partition takes writes.
          expect((await client.produce("other", 0, batchOfValues(["elsewhere"]))).firstOffset).toBe(0);
        } finally {
          client.close();
        }
        expect(await broker.stop("SIGTERM")).toBe(0);
      }
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          const recovered = await readAll(client, "t");
          // Every acknowledged record at its offset; records of refused PRODUCEs may follow (written,
          // never acknowledged); then the partition takes writes again.
          expect(recovered.slice(0, acknowledged.length)).toEqual(acknowledged);
          const after = await client.produce("t", 0, batchOfValues(["after the restart"]));
          expect(after.firstOffset).toBe(recovered.length);
        } finally {
          client.close();
        }
        broker.process.kill("SIGKILL");
        await broker.process.exited;
      }
      // The restart made what it recovered durable: a power cut now keeps every acknowledged record.
      await vfs.powerCycle();
      {
        await using broker = await startBroker(dataDir);
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        try {
          expect((await readAll(client, "t")).slice(0, acknowledged.length)).toEqual(acknowledged);
        } finally {
          client.close();
        }
      }
    });
  },
);
