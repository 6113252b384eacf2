/**
 * Damage to a batch-header field that only the CRC covers: LastOffsetDelta, which says how many
 * offsets the batch holds. Recovery walks forced bytes without computing CRCs (they were verified
 * when written), and a sealed segment's index is built the same way on its first read, so a flipped
 * bit there made the walk believe the batch held a different number of offsets. The next, intact
 * batch then looked like the damage, and the offsets it was searched past were wrong:
 * - in the newest segment (a reviewer's fault harness, 2026-12-02): bit 26 made the log end jump
 *   to 67,109,464 and the cut destroyed every later forced batch; a lower bit lost the intact batch
 *   after the damaged one;
 * - in a sealed segment: every read of it failed ("segment holds entries of 67109464 offsets …").
 * Now a walk without CRCs that stops anywhere but a clean end is walked again with them, so only the
 * damaged batch's offsets are lost. Real files, a broker child process, booblik-cli.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { entriesOf, flipByte, type SegmentEntry, writeCheckpointFile } from "../helpers/segment-file.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(90_000);

/** The frame (8 bytes) and the batch fields before LastOffsetDelta (23 bytes); big-endian int32. */
const LAST_OFFSET_DELTA_AT = 8 + 23;

/** Flips bit `bit` (0: the lowest) of the LastOffsetDelta of `entry` in `file`. */
function flipLastOffsetDelta(file: string, entry: SegmentEntry, bit: number): void {
  flipByte(file, entry.position + LAST_OFFSET_DELTA_AT + 3 - Math.floor(bit / 8), 1 << (bit % 8));
}

/** `lines` produced one batch each to partition 0 of `topic` (created with `createArgs`). */
async function produceBatches(
  port: number,
  topic: string,
  createArgs: string[],
  lines: string[],
): Promise<void> {
  const at = ["--broker", `127.0.0.1:${port}`];
  expect((await runCli([...at, "topics", "create", topic, ...createArgs])).exitCode).toBe(0);
  for (const line of lines) {
    const produced = await runCli([...at, "produce", topic, "--partition", "0"], { stdin: `${line}\n` });
    expect(produced.exitCode).toBe(0);
  }
}

async function consume(port: number, topic: string, from: number, max: number) {
  return runCli([
    ...["--broker", `127.0.0.1:${port}`, "consume", topic, "--partition", "0"],
    ...["--from", String(from), "--max", String(max)],
  ]);
}

async function nextOffset(port: number, topic: string): Promise<number> {
  const offsets = await runCli(["--broker", `127.0.0.1:${port}`, "--json", "offsets", topic]);
  expect(offsets.exitCode).toBe(0);
  const partitions: { partition: number; nextOffset: number }[] = JSON.parse(offsets.stdout);
  return partitions[0]!.nextOffset;
}

const LINES = Array.from({ length: 6 }, (_, i) => `parcel ${i} left the depot at 0${i}:00`);

/**
 * Topic `parcels` under `force`, LINES produced to partition 0 one batch each, then the checkpoint of
 * a crash after every batch was forced: one segment of six one-record batches, which the start scans
 * trusting the forced bytes' CRCs.
 */
async function prepareParcels(
  dataDir: string,
): Promise<{ partitionDir: string; file: string; entries: SegmentEntry[] }> {
  {
    await using broker = await startBroker(dataDir);
    await produceBatches(broker.port, "parcels", ["--durability", "force"], LINES);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  const partitionDir = path.join(dataDir, "parcels-0");
  const file = path.join(partitionDir, "00000000000000000000.log");
  const entries = entriesOf(file);
  expect(entries.map((e) => e.baseOffset)).toEqual([0, 1, 2, 3, 4, 5]);
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: fs.statSync(file).size,
    nextOffset: 6,
  });
  return { partitionDir, file, entries };
}

for (const bit of [0, 26]) {
  test(`newest segment, before the recovery point: bit ${bit} of a batch's LastOffsetDelta loses that batch only`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const { file, entries } = await prepareParcels(dataDir);

    flipLastOffsetDelta(file, entries[1]!, bit);

    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(
      `${file} at file position ${entries[1]!.position}: offsets 1..1 unreadable`,
    );
    expect(broker.startLine).toContain("readable again from offset 2");
    expect(await nextOffset(broker.port, "parcels")).toBe(6);
    const after = await consume(broker.port, "parcels", 2, 4);
    expect(after.exitCode).toBe(0);
    expect(after.stdout).toBe(`${LINES.slice(2).join("\n")}\n`);
    const damaged = await consume(broker.port, "parcels", 1, 1);
    expect(damaged.exitCode).toBe(1);
    expect(damaged.stderr).toContain("the entry at offset 1 is damaged");
    expect(damaged.stderr).toContain("the next readable offset is 2");
  });

  test(`newest segment, the last forced batch: bit ${bit} of its LastOffsetDelta loses that batch only, and the log goes on at the recovery point's offset`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const { file, entries } = await prepareParcels(dataDir);
    // The walk to the recovery point reaches it, at the offset the damaged field says: the log's
    // end was taken from it (67,108,869 for bit 26).
    flipLastOffsetDelta(file, entries[5]!, bit);

    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain("DATA LOSS");
    expect(broker.startLine).toContain(
      `${file} at file position ${entries[5]!.position}: offsets 5..5 unreadable`,
    );
    expect(await nextOffset(broker.port, "parcels")).toBe(6);
    const before = await consume(broker.port, "parcels", 0, 5);
    expect(before.stdout).toBe(`${LINES.slice(0, 5).join("\n")}\n`);
    const damaged = await consume(broker.port, "parcels", 5, 1);
    expect(damaged.exitCode).toBe(1);
    expect(damaged.stderr).toContain("the next segment starts at offset 6");
  });

  test(`sealed segment: bit ${bit} of a batch's LastOffsetDelta loses that batch only, on the first read`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    {
      await using broker = await startBroker(dataDir);
      // Segments of 8 KiB, 20 lines a batch: the first segment is sealed after about 150 lines.
      const lines = Array.from({ length: 300 }, (_, i) => `parcel ${i} ${"x".repeat(40)}`);
      const chunks = Array.from({ length: 15 }, (_, i) => lines.slice(i * 20, i * 20 + 20).join("\n"));
      await produceBatches(
        broker.port,
        "sealed",
        ["--durability", "force", "--segment-size", "8KiB"],
        chunks,
      );
      expect(await broker.stop("SIGTERM")).toBe(0);
    }
    const partitionDir = path.join(dataDir, "sealed-0");
    const segments = fs
      .readdirSync(partitionDir)
      .filter((name) => name.endsWith(".log"))
      .sort();
    expect(segments.length).toBeGreaterThanOrEqual(2);
    const first = path.join(partitionDir, segments[0]!);
    const entries = entriesOf(first);
    expect(entries.length).toBeGreaterThanOrEqual(4);
    const victim = entries[2]!;
    const resume = entries[3]!.baseOffset;
    flipLastOffsetDelta(first, victim, bit);
    // A clean stop: the start opens the first segment without a scan; its first read indexes it.
    await using broker = await startBroker(dataDir);
    const before = await consume(broker.port, "sealed", 0, victim.baseOffset);
    expect(before.exitCode).toBe(0);
    expect(before.stdout.split("\n").length - 1).toBe(victim.baseOffset);
    const damaged = await consume(broker.port, "sealed", victim.baseOffset, 1);
    expect(damaged.exitCode).toBe(1);
    expect(damaged.stderr).toContain(`the entry at offset ${victim.baseOffset} is damaged`);
    expect(damaged.stderr).toContain(`the next readable offset is ${resume}`);
    const after = await consume(broker.port, "sealed", resume, 1);
    expect(after.exitCode).toBe(0);
    expect(after.stdout).toStartWith(`parcel ${resume} `);
    expect(await nextOffset(broker.port, "sealed")).toBe(300);
  });
}
