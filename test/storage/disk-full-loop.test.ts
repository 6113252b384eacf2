/**
 * A full ext4 or XFS file system (a 32 MiB loop-mounted image) on both write paths, with a segment
 * larger than the whole file system and with one smaller (so the partition rolls until the disk is
 * full). A child process fills the disk through one partition: it must not die (on the mapped path a
 * store into fallocated, unwritten blocks of a full ext4 or XFS killed it with SIGBUS), the failing
 * append must be the typed, retriable ENOSPC error, the partition must keep refusing appends while
 * serving every acknowledged record, and recovery of the directory must find every acknowledged record.
 *
 * Needs root, loop devices, e2fsprogs and xfsprogs (CI installs them); skipped per file system with
 * the reason printed where that is impossible.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { valuesOfEntries } from "../../src/record/entries.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import {
  type LoopFileSystemKind,
  loopFileSystemUnavailable,
  mountLoopFileSystem,
} from "../helpers/loop-fs.ts";
import { killAtEnd } from "../helpers/process.ts";
import { payloadForOffset } from "../helpers/random.ts";

const FILE_SYSTEM_BYTES = 32 * 1024 * 1024;
const FIXTURE = path.join(import.meta.dir, "fixtures", "fill-disk-fixture.ts");
/** Must match the fixture's record size. */
const RECORD_EXTRA_BYTES = 8000;

const KINDS: LoopFileSystemKind[] = ["ext4", "xfs"];
const SEGMENTS = [
  ["larger than the disk", 64 * 1024 * 1024],
  ["smaller than the disk", 4 * 1024 * 1024],
] as const;

for (const kind of KINDS) {
  const unavailable = loopFileSystemUnavailable(kind);
  if (unavailable !== undefined) console.warn(`${kind} disk-full tests skipped: ${unavailable}`);
}

interface FixtureError {
  name: string;
  code?: string;
  errnoName?: string;
  retriable?: boolean;
  message: string;
}

type FixtureEvent =
  | { event: "full"; acknowledged: number; error: FixtureError }
  | { event: "refused"; error: FixtureError | null }
  | { event: "readBack"; records: number };

const diskFull = { name: "IoError", code: "STORAGE_ERROR", errnoName: "ENOSPC", retriable: true };

describe.each(KINDS.map((kind) => [kind]))("full %s file system", (kind: LoopFileSystemKind) => {
  describe.each(WRITE_MODES.map((mode) => [mode]))("%s write path", (mode: WriteMode) => {
    test
      .skipIf(loopFileSystemUnavailable(kind) !== undefined)
      .each(SEGMENTS.map(([name, bytes]) => [name, bytes]))(
      "segment %s: no crash, a retriable ENOSPC, every acknowledged record readable before and after recovery",
      async (_name: string, segmentBytes: number) => {
        using fileSystem = mountLoopFileSystem(kind, FILE_SYSTEM_BYTES);
        const dataDir = path.join(fileSystem.path, "data");
        // Room the test frees before the restart, as an operator would: opening a partition writes
        // its recovery point, which a completely full disk refuses (so a broker does not start there).
        const filler = path.join(fileSystem.path, "filler");
        fs.writeFileSync(filler, new Uint8Array(1024 * 1024));
        const child = Bun.spawn([process.execPath, FIXTURE, dataDir, mode, String(segmentBytes)], {
          stdout: "pipe",
          stderr: "pipe",
        });
        await using _child = killAtEnd(child);
        const [stdout, stderr] = await Promise.all([
          new Response(child.stdout).text(),
          new Response(child.stderr).text(),
        ]);
        await child.exited;
        // A SIGBUS arrives here as signalCode "SIGBUS" (Bun's crash report is then on stderr).
        expect(child.signalCode, stderr).toBeNull();
        expect(child.exitCode, stderr).toBe(0);
        const events = stdout
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as FixtureEvent);
        const full = events.find((event) => event.event === "full");
        const refused = events.find((event) => event.event === "refused");
        const readBack = events.find((event) => event.event === "readBack");
        expect(full?.error).toMatchObject(diskFull);
        expect(refused?.error).toMatchObject(diskFull);
        const acknowledged = full?.event === "full" ? full.acknowledged : -1;
        // The disk really filled (more than half of it holds acknowledged records), not a refusal
        // far ahead of need. Payloads average half of RECORD_EXTRA_BYTES.
        expect((acknowledged * RECORD_EXTRA_BYTES) / 2).toBeGreaterThan(FILE_SYSTEM_BYTES / 2);
        expect(readBack).toEqual({ event: "readBack", records: acknowledged });

        // What a restart finds: recovery keeps exactly the acknowledged records.
        fs.unlinkSync(filler);
        const broker = Broker.open({ dataDir });
        try {
          let offset = 0;
          for (;;) {
            const read = broker.read("fill", 0, offset, 256 * 1024);
            if (read.recordCount === 0) break;
            for (const payload of valuesOfEntries(read.records)) {
              expect(
                Buffer.from(payload!).equals(Buffer.from(payloadForOffset(offset, RECORD_EXTRA_BYTES))),
                `record ${offset}`,
              ).toBe(true);
              offset++;
            }
          }
          expect(offset).toBe(acknowledged);
        } finally {
          await broker.close();
        }
      },
      60_000,
    );
  });
});
