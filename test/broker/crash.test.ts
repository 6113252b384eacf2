/**
 * Broker crash rounds with a real SIGKILL. A child runs concurrent producers and prints every
 * acknowledgement; the parent kills it at a random moment, reopens the data directory in-process and
 * checks: under `force`, every acknowledged record is at its offset with the right bytes; under every
 * policy, the log is a gap-free sequence of whole batches that some producer sent (each record's key
 * names its batch and the batch's size: a batch cut by the kill would show).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { decodeBatch } from "../../src/record/batch.ts";
import { scanEntries } from "../../src/record/entries.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { PAYLOAD_PATTERN, recordPayload } from "./fixtures/payloads.ts";

// These tests start processes and wait on disks; the 5 s default is too tight for a busy 2-core CI.
setDefaultTimeout(30_000);

const SEED = testSeed();
const FIXTURE = path.join(import.meta.dir, "fixtures", "producer-fixture.ts");

async function verify(dataDir: string, acked: Map<number, string>, requireAcked: boolean): Promise<number> {
  const broker = Broker.open({ dataDir });
  try {
    const next = broker.describeTopic("crash").partitions[0]!.nextOffset;
    const decoder = new TextDecoder();
    let offset = 0;
    while (offset < next) {
      const read = broker.read("crash", 0, offset, 256 * 1024);
      const scan = scanEntries(
        read.records,
        0,
        read.records.length,
        { framing: "framed", verifyCrc: true },
        undefined,
        (_entry, batchStart, batchEnd) => {
          const { records } = decodeBatch(read.records, batchStart, batchEnd);
          // All of a batch or none: its records carry the batch's name and size in their key.
          const key = decoder.decode(records[0]!.key!);
          expect(key.split("/")[2], `the batch at ${offset} is whole`).toBe(String(records.length));
          for (const record of records) {
            expect(decoder.decode(record.key!)).toBe(key);
            const value = decoder.decode(record.value!);
            expect(value, `offset ${offset}`).toMatch(PAYLOAD_PATTERN);
            const expected = acked.get(offset);
            if (expected !== undefined) expect(value, `acknowledged offset ${offset}`).toBe(expected);
            offset++;
          }
        },
      );
      expect(scan.stop).toBe("end");
    }
    expect(offset).toBe(next);
    if (requireAcked) for (const ackedOffset of acked.keys()) expect(ackedOffset).toBeLessThan(next);
    return next;
  } finally {
    await broker.close();
  }
}

/**
 * Every policy on both write paths, and every acknowledged record must survive under each: a process
 * crash keeps the page cache (and the pages stored through a shared mapping), so what `append` and
 * `interval` wrote before acknowledging survives it too; a power loss is another matter
 * (test/power-loss). docs/operations.md, "What survives what".
 */
const VARIANTS: [string, string][] = ["force", "append", "interval"].flatMap((policy) =>
  ["file", "mapped"].map((writeMode): [string, string] => [policy, writeMode]),
);

describe.each(VARIANTS)(`broker crash rounds, %s policy, %s path (seed ${SEED})`, (policy, writeMode) => {
  test("SIGKILL at random moments: acknowledged records survive; the log is a prefix of whole batches", async () => {
    using dir = tempDir();
    const random = new Random(SEED);
    const acked = new Map<number, string>();
    for (let round = 0; round < 4; round++) {
      const child = Bun.spawn(
        [process.execPath, FIXTURE, dir.path, policy, "8", String(random.int(0, 2 ** 30)), writeMode],
        {
          stdout: "pipe",
          stderr: "inherit",
        },
      );
      // Killed and waited for even when an assertion below fails.
      await using _child = killAtEnd(child);
      const lines = new LineReader(child.stdout);
      await lines.waitFor((line) => line.startsWith("started "), "the broker started");
      const acksToSee = random.int(20, 300);
      const record = (line: string) => {
        const [, first, count, producer, sequence] = line.split(" ").map(Number);
        for (let i = 0; i < count!; i++) acked.set(first! + i, recordPayload(producer!, sequence!, i));
      };
      for (let seen = 0; seen < acksToSee; seen++)
        record(await lines.waitFor((l) => l.startsWith("ack "), "an ack"));
      child.kill("SIGKILL");
      await child.exited;
      expect(child.signalCode).toBe("SIGKILL");
      for (const line of await lines.rest()) if (line.startsWith("ack ")) record(line);
      await verify(dir.path, acked, true);
    }
    expect(acked.size).toBeGreaterThan(0);
  }, 60_000);
});
