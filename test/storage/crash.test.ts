/**
 * A real kill -9 on both write paths. A child process appends and forces, printing each forced
 * offset; the parent sends SIGKILL at a random moment, reopens the segment in-process and checks that
 * every record below the highest printed offset is there with its exact bytes, that the log is a
 * gap-free prefix of recognisable records, and that every batch in it is whole (batch atomicity:
 * each record's key names its batch's first offset and size, so a batch cut by the kill would show).
 * Several rounds on one segment: each child first recovers what the previous one left.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import type { Offset } from "../../src/domain/ids.ts";
import { decodeBatch } from "../../src/record/batch.ts";
import { scanEntries } from "../../src/record/entries.ts";
import { Segment, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { payloadForOffset, Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";

// These tests start processes and wait on disks; the 5 s default is too tight for a busy 2-core CI.
setDefaultTimeout(30_000);

const SEED = testSeed();
const FIXTURE = path.join(import.meta.dir, "fixtures", "append-fixture.ts");

function verifyPrefix(filePath: string, mode: WriteMode, forced: number): number {
  const { segment } = Segment.openForAppend(
    filePath,
    segmentConfig({ writeMode: mode, segmentBytes: 8 * 1024 * 1024 }),
  );
  try {
    const next = segment.nextOffset;
    expect(next).toBeGreaterThanOrEqual(forced);
    let offset = 0;
    const decoder = new TextDecoder();
    while (offset < next) {
      const read = segment.read(offset, 256 * 1024);
      const scan = scanEntries(
        read.records,
        0,
        read.records.length,
        { framing: "framed", verifyCrc: true },
        undefined,
        (_entry, batchStart, batchEnd) => {
          const { header, records } = decodeBatch(read.records, batchStart, batchEnd);
          // The whole batch the child appended, or none of it.
          expect(header.baseOffset).toBe(offset);
          expect(decoder.decode(records[0]!.key!)).toBe(`${offset}/${records.length}`);
          for (const record of records) {
            expect(record.offset).toBe(offset);
            expect(
              Buffer.from(record.value!).equals(Buffer.from(payloadForOffset(offset))),
              `record ${offset}`,
            ).toBe(true);
            offset++;
          }
        },
      );
      expect(scan.stop).toBe("end");
    }
    expect(offset).toBe(next);
    return next;
  } finally {
    segment.close();
  }
}

describe.each(WRITE_MODES.map((mode) => [mode]))(
  `kill -9, %s write path (seed ${SEED})`,
  (mode: WriteMode) => {
    test("every forced record survives SIGKILL; the log is a gap-free prefix of whole batches", async () => {
      using dir = tempDir();
      const random = new Random(SEED);
      const filePath = path.join(dir.path, segmentFileName(0 as Offset));
      let survived = 0;
      for (let round = 0; round < 4; round++) {
        const child = Bun.spawn([process.execPath, FIXTURE, dir.path, mode, String(random.int(0, 2 ** 31))], {
          stdout: "pipe",
          stderr: "inherit",
        });
        // Killed and waited for even when an assertion below fails.
        await using _child = killAtEnd(child);
        const lines = new LineReader(child.stdout);
        const started = await lines.waitFor((line) => line.startsWith("started "), "the child started");
        // The new child recovered at least everything the previous one had forced.
        expect(Number(started.split(" ")[1])).toBeGreaterThanOrEqual(survived);
        const forcesToSee = random.int(1, 40);
        let forced = 0;
        for (let seen = 0; seen < forcesToSee; seen++) {
          const line = await lines.waitFor((l) => l.startsWith("forced ") || l === "full", "a forced offset");
          if (line === "full") break;
          forced = Number(line.split(" ")[1]);
        }
        child.kill("SIGKILL");
        await child.exited;
        expect(child.signalCode).toBe("SIGKILL");
        // Lines printed between our last read and the kill were forced too.
        for (const line of await lines.rest())
          if (line.startsWith("forced ")) forced = Number(line.split(" ")[1]);
        survived = verifyPrefix(filePath, mode, forced);
      }
    }, 60_000);
  },
);
