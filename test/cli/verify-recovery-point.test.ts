/**
 * `booblik-cli segment verify` splits a partition's newest segment where start-up recovery does: at
 * the recovery point of its `checkpoint.json` (src/storage/log-recovery.ts, `forcedEnd`). Bytes
 * before the point were forced, so a batch there that fails its check is damage (exit 3, naming
 * file, file position, offset and reason), never a torn tail; after the point an invalid batch is
 * still "ok (unverified tail)". A missing or unparsable checkpoint gives no point, as at a start.
 * Every case runs on real files: a broker child process writes them, bytes are flipped by hand, and
 * where recovery has something to say the broker is started on the same files to show it agrees.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Offset } from "../../src/domain/ids.ts";
import { encodeSegmentHeader, segmentFileName } from "../../src/storage/segment-header.ts";
import { runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { entriesOf, flipByte, type SegmentEntry, writeCheckpointFile } from "../helpers/segment-file.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(90_000);

function zeroBytes(file: string, position: number, count: number): void {
  const fd = fs.openSync(file, "r+");
  try {
    fs.writeSync(fd, new Uint8Array(count), 0, count, position);
  } finally {
    fs.closeSync(fd);
  }
}

/** One produce per line: one batch (entry) each. */
const LINES = Array.from({ length: 5 }, (_, i) => `order ${i} shipped to 221B Baker Street, London NW1 6XE`);

/**
 * Topic `orders` with 10 partitions under `force`, `lineCount` lines produced to partition 9 one
 * batch each, a clean stop: the checkpoint's recovery point is then the end of the only segment.
 */
async function prepare(dataDir: string, lineCount: number): Promise<{ partitionDir: string; file: string }> {
  {
    await using broker = await startBroker(dataDir);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const created = await runCli([
      ...at,
      "topics",
      "create",
      "orders",
      "--partitions",
      "10",
      "--durability",
      "force",
    ]);
    expect(created.exitCode).toBe(0);
    for (const line of LINES.slice(0, lineCount)) {
      const produced = await runCli([...at, "produce", "orders", "--partition", "9"], { stdin: `${line}\n` });
      expect(produced.exitCode).toBe(0);
    }
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  const partitionDir = path.join(dataDir, "orders-9");
  const file = path.join(partitionDir, "00000000000000000000.log");
  expect(fs.readdirSync(partitionDir).filter((name) => name.endsWith(".log"))).toEqual([
    "00000000000000000000.log",
  ]);
  return { partitionDir, file };
}

/**
 * Topic `rolled` under `force` with segments of 8 KiB, `records` records of 70 bytes produced to
 * partition 0 in batches of 40, a clean stop: several segments, the recovery point at the end.
 */
async function prepareRolled(dataDir: string, records: number): Promise<{ partitionDir: string }> {
  await using broker = await startBroker(dataDir);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const created = await runCli([
    ...at,
    "topics",
    "create",
    "rolled",
    "--durability",
    "force",
    "--segment-size",
    "8KiB",
  ]);
  expect(created.exitCode).toBe(0);
  for (let from = 0; from < records; from += 40) {
    const lines = Array.from({ length: 40 }, (_, i) => `record ${from + i} ${"x".repeat(60)}`);
    const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], {
      stdin: `${lines.join("\n")}\n`,
    });
    expect(produced.exitCode).toBe(0);
  }
  expect(await broker.stop("SIGTERM")).toBe(0);
  return { partitionDir: path.join(dataDir, "rolled-0") };
}

/** The segment files of a partition directory, in offset order. */
function segmentNames(partitionDir: string): string[] {
  return fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort();
}

function readCheckpointFile(partitionDir: string): {
  cleanShutdown: boolean;
  recoveryPoint: { segmentBaseOffset: number; position: number; nextOffset: number };
} {
  return JSON.parse(fs.readFileSync(path.join(partitionDir, "checkpoint.json"), "utf8"));
}

/** `segment verify` of the whole data directory: exit 3 and `reported` in its output. */
async function expectDamageReported(dataDir: string, reported: string): Promise<string> {
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(3);
  expect(verify.stdout).toContain(reported);
  return verify.stdout;
}

/** `consume` of the record at `offset` of partition 0 of `rolled`: the CLI's exit code and output. */
function consumeRolledAt(at: string[], offset: number) {
  return runCli([...at, "consume", "rolled", "--partition", "0", "--from", String(offset), "--max", "1"]);
}

function statusOf(stdout: string, partition: string): string | undefined {
  return new RegExp(`^${partition}\\s+\\d+\\s+\\d+\\s+\\S+ \\S+\\s+(.+)$`, "m").exec(stdout)?.[1]?.trim();
}

test("a flipped byte before the recovery point of the only segment is damage (exit 3), as reads and recovery treat it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 1);
  const [entry] = entriesOf(file);
  expect(entry!.position).toBe(32);
  // The reviewer's case: every record forced, the recovery point at the end of the file.
  expect(readCheckpointFile(partitionDir).recoveryPoint.position).toBe(fs.statSync(file).size);
  // A byte of the record's value: only the CRC can tell.
  flipByte(file, entry!.position + entry!.bytes - 3);

  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.stderr).toBe("");
  expect(verify.exitCode).toBe(3);
  expect(statusOf(verify.stdout, "orders-9")).toBe("DAMAGED");
  expect(verify.stdout).toContain(`damage: ${file} at file position 32 (offset 0): crc-mismatch: `);
  expect(verify.stdout).not.toContain("unverified tail");
  expect(verify.stdout).toContain("1 damaged");
  const json = JSON.parse(
    (await runCli(["--json", "segment", "verify", path.join(dataDir, "orders-9")])).stdout,
  );
  expect(json.ok).toBe(false);
  expect(json.partitions[0].unverifiedTail).toBeUndefined();
  expect(json.partitions[0].damages).toEqual([
    {
      file,
      position: 32,
      offset: 0,
      reason: expect.stringContaining("crc-mismatch"),
    },
  ]);

  // The broker agrees: the start keeps the forced batch, the read refuses it naming the same place.
  await using broker = await startBroker(dataDir);
  const consumed = await runCli([
    "--broker",
    `127.0.0.1:${broker.port}`,
    "consume",
    "orders",
    "--partition",
    "9",
    "--from",
    "0",
  ]);
  expect(consumed.exitCode).toBe(1);
  expect(consumed.stderr).toContain("<data-dir>/orders-9/00000000000000000000.log at file position 32");
  expect(consumed.stderr).toContain("crc-mismatch");
});

test("in the newest segment, damage before the recovery point is stepped over and reported; an invalid batch after it is an unverified tail", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 5);
  const entries = entriesOf(file);
  expect(entries.length).toBe(5);
  const [, second, third, fourth] = entries as [
    SegmentEntry,
    SegmentEntry,
    SegmentEntry,
    SegmentEntry,
    SegmentEntry,
  ];
  // A crash after the force that covered the first three batches: the last two were never forced.
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: fourth.position,
    nextOffset: fourth.baseOffset,
  });
  // The second batch's length field (before the point: forced bytes), a value byte of the fourth
  // (after it: a torn write, as far as anyone can tell).
  flipByte(file, second.position + 2);
  flipByte(file, fourth.position + fourth.bytes - 3);

  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(3);
  expect(statusOf(verify.stdout, "orders-9")).toBe("DAMAGED");
  const damages = verify.stdout.split("\n").filter((line) => line.startsWith("damage: "));
  expect(damages.length).toBe(1);
  expect(damages[0]).toStartWith(
    `damage: ${file} at file position ${second.position} (offset ${second.baseOffset}): `,
  );
  expect(damages[0]).toEndWith(`; readable again from offset ${third.baseOffset}`);
  expect(verify.stdout).toContain(
    `note: ${file} ends with ${fs.statSync(file).size - fourth.position} bytes after its last whole record (at byte ${fourth.position}: crc-mismatch: `,
  );
  const json = JSON.parse((await runCli(["--json", "segment", "verify", dataDir])).stdout);
  const partition = json.partitions.find((p: { directory: string }) => p.directory === partitionDir);
  expect(partition.damages.map((d: { position: number }) => d.position)).toEqual([second.position]);
  expect(partition.unverifiedTail).toMatchObject({ file, position: fourth.position });
  // The first and third batches: one record each.
  expect(partition.records).toBe(2);

  // Recovery draws the same line: the damaged range kept in place and reported as durable data
  // lost, the invalid batch after the point cut (the valid one after it quarantined).
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain("DATA LOSS");
  expect(broker.startLine).toContain(
    `${file} at file position ${second.position}: offsets ${second.baseOffset}..${third.baseOffset - 1} unreadable`,
  );
  expect(broker.startLine).toContain(`readable again from offset ${third.baseOffset}`);
  expect(broker.startLine).toContain(`cut and kept in ${file}.quarantine-${fourth.position}`);
});

test("damage after the recovery point of the newest segment is still an unverified tail (exit 0)", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 3);
  const [, , third] = entriesOf(file) as [SegmentEntry, SegmentEntry, SegmentEntry];
  // Forced up to the third batch, which starts exactly at the point: the boundary is after it.
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: third.position,
    nextOffset: third.baseOffset,
  });
  flipByte(file, third.position + third.bytes - 3);
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(0);
  expect(statusOf(verify.stdout, "orders-9")).toBe("ok (unverified tail)");
  expect(verify.stdout).not.toContain("damage: ");
  expect(verify.stdout).toContain(
    `note: ${file} ends with ${fs.statSync(file).size - third.position} bytes after its last whole record (at byte ${third.position}: crc-mismatch: `,
  );
  expect(verify.stdout).toContain("verified 10 partitions: no damage");
});

test("without a checkpoint, or with one that does not parse or that no segment can hold, there is no recovery point: the same damage is an unverified tail, as recovery cuts it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 1);
  const [entry] = entriesOf(file);
  flipByte(file, entry!.position + entry!.bytes - 3);
  const checkpoint = path.join(partitionDir, "checkpoint.json");
  const impossible = JSON.stringify({
    version: 1,
    cleanShutdown: false,
    recoveryPoint: { segmentBaseOffset: 0, position: 1e15, nextOffset: 1 },
  });
  for (const contents of ["{ not json", impossible, undefined]) {
    if (contents === undefined) fs.rmSync(checkpoint);
    else fs.writeFileSync(checkpoint, contents);
    const verify = await runCli(["segment", "verify", dataDir]);
    expect(verify.exitCode).toBe(0);
    expect(statusOf(verify.stdout, "orders-9")).toBe("ok (unverified tail)");
    expect(verify.stdout).toContain(
      `note: ${file} ends with ${entry!.bytes} bytes after its last whole record (at byte 32: crc-mismatch: `,
    );
  }
  // And recovery, which has no point either, cuts it as a torn tail.
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain(`${entry!.bytes} torn bytes cut`);
  expect(broker.startLine).not.toContain("DATA LOSS");
});

test("a newest segment cut short before the recovery point is damage: forced batches are missing, and the start counts their bytes", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { file } = await prepare(dataDir, 3);
  const [, , third] = entriesOf(file) as [SegmentEntry, SegmentEntry, SegmentEntry];
  // The file ends on a batch boundary before the point: the forced third batch is gone.
  fs.truncateSync(file, third.position);
  await expectDamageReported(
    dataDir,
    `damage: ${file} at file position ${third.position} (offset ${third.baseOffset}): the file ends at byte ${third.position} (before the recovery point`,
  );
  // Recovery sees the same, and says how many forced bytes are gone: the start line said "DATA
  // LOSS: 0 bytes" here (an operator's fault run), counting only the bytes still in the file.
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain(
    `DATA LOSS: ${third.bytes} bytes that had been forced are missing or failed`,
  );
  expect(broker.startLine).toContain("orders-9");
  // Counts in the singular where they are one ("1 topics, 1 segments scanned" before); the 11th
  // segment is the one the log goes on in, after the missing offsets.
  expect(broker.startLine).toContain(
    "opened 1 topic, 10 partitions, 11 segments (clean shutdown, 1 segment scanned",
  );
  await expectMissingOffsetsReserved(broker, dataDir, file, third.baseOffset, 3);
});

/**
 * After a start that found the forced batches of offsets `missing`..`forcedNext` - 1 gone from the
 * end of the newest segment `file`: those offsets are not handed out again (recovery used to end
 * the log at `missing`, and the next records got them), a read of them names the loss, the records
 * before them and after the next produce are served, and a crash and a restart keep all of that.
 */
async function expectMissingOffsetsReserved(
  broker: Awaited<ReturnType<typeof startBroker>>,
  dataDir: string,
  file: string,
  missing: number,
  sealedNext: number,
): Promise<void> {
  const partitionDir = path.dirname(file);
  const newSegment = path.join(partitionDir, `${String(sealedNext).padStart(20, "0")}.log`);
  expect(fs.existsSync(newSegment)).toBe(true);
  const first = ["--broker", `127.0.0.1:${broker.port}`];
  const named = await runCli([...first, "consume", "orders", "--partition", "9", "--from", String(missing)]);
  expect(named.exitCode).toBe(1);
  expect(named.stderr).toContain(`the forced records of offsets ${missing}..${sealedNext - 1} are missing`);
  const produced = await runCli([...first, "produce", "orders", "--partition", "9"], {
    stdin: "after the loss\n",
  });
  expect(produced.exitCode).toBe(0);
  await broker.stop("SIGKILL");
  await using again = await startBroker(dataDir);
  const at = ["--broker", `127.0.0.1:${again.port}`];
  const offsets = await runCli([...at, "--json", "offsets", "orders"]);
  const partitions: { partition: number; nextOffset: number }[] = JSON.parse(offsets.stdout);
  expect(partitions.find((p) => p.partition === 9)?.nextOffset).toBe(sealedNext + 1);
  const gap = await runCli([...at, "consume", "orders", "--partition", "9", "--from", String(missing)]);
  expect(gap.exitCode).toBe(1);
  // The restart opens the sealed segment without a scan; its first read finds the same range.
  expect(gap.stderr).toContain(`offsets ${missing}..${sealedNext - 1} are in no segment file`);
  expect(gap.stderr).toContain(`the next segment starts at offset ${sealedNext}`);
  const before = await runCli([
    ...at,
    "consume",
    "orders",
    "--partition",
    "9",
    "--from",
    "0",
    "--max",
    String(missing),
  ]);
  expect(before.exitCode).toBe(0);
  expect(before.stdout.split("\n").filter((line) => line !== "").length).toBe(missing);
  const after = await runCli([...at, "consume", "orders", "--partition", "9", "--from", String(sealedNext)]);
  expect(after.exitCode).toBe(0);
  expect(after.stdout).toBe("after the loss\n");
  expect(await again.stop("SIGTERM")).toBe(0);
  // Offline, the missing offsets are a gap between the two segments: damage.
  await expectDamageReported(
    dataDir,
    `damage: ${newSegment} at file position 0 (offset ${missing}): the previous segment ends at offset ${missing} but this one starts at ${sealedNext}; readable again from offset ${sealedNext}`,
  );
  // And `segment repair` keeps them so: it removed the checkpoint, the empty segment the log went
  // on in became a crash leftover, and the next record got offset `missing` (a reviewer's fault
  // harness, 2026-12-02). Here the segment holds a record; the harness's case, where it held none,
  // is the start's own (the next test).
  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode).toBe(0);
  await using third = await startBroker(dataDir);
  const afterRepair = await runCli(["--broker", `127.0.0.1:${third.port}`, "--json", "offsets", "orders"]);
  const repairedPartitions: { partition: number; nextOffset: number }[] = JSON.parse(afterRepair.stdout);
  expect(repairedPartitions.find((p) => p.partition === 9)?.nextOffset).toBe(sealedNext + 1);
}

test("segment repair after a start that sealed a segment with missing forced offsets: the empty segment the log went on in stays, and so do the offsets", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { file } = await prepare(dataDir, 3);
  const [, , third] = entriesOf(file) as [SegmentEntry, SegmentEntry, SegmentEntry];
  fs.truncateSync(file, third.position);
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain("DATA LOSS");
    await broker.stop("SIGKILL");
  }
  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode).toBe(0);
  expect(repaired.stdout).not.toContain("left by a crash");
  await using broker = await startBroker(dataDir);
  const produced = await runCli(
    ["--broker", `127.0.0.1:${broker.port}`, "produce", "orders", "--partition", "9"],
    {
      stdin: "after the repair\n",
    },
  );
  expect(produced.stdout).toContain(`partition 9 offset ${third.baseOffset + 1}`);
});

test("a zero length before the recovery point of the newest segment is damage: the forced batch after it stays readable", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 3);
  const [, second, third] = entriesOf(file) as [SegmentEntry, SegmentEntry, SegmentEntry];
  // After a crash (the point at the end of the file, not a clean stop, so the start scans).
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: fs.statSync(file).size,
    nextOffset: 3,
  });
  zeroBytes(file, second.position, 4);
  const reported = await expectDamageReported(
    dataDir,
    `damage: ${file} at file position ${second.position} (offset ${second.baseOffset}): zero length followed by nonzero bytes (before the recovery point`,
  );
  expect(reported).toContain(`readable again from offset ${third.baseOffset}`);
  // The start steps over the zeroed batch as over any damage before the point. It used to stop its
  // walk at the zero length, cut the file there, and so destroy the intact forced third batch
  // (an operator's fault run); the next produce then got its offset again.
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain("DATA LOSS");
  expect(broker.startLine).toContain(
    `${file} at file position ${second.position}: offsets ${second.baseOffset}..${third.baseOffset - 1} unreadable`,
  );
  expect(broker.startLine).not.toContain("QUARANTINED");
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const thirdRead = await runCli([
    ...at,
    "consume",
    "orders",
    "--partition",
    "9",
    "--from",
    String(third.baseOffset),
  ]);
  expect(thirdRead.exitCode).toBe(0);
  expect(thirdRead.stdout).toBe(`${LINES[2]}\n`);
  const produced = await runCli([...at, "produce", "orders", "--partition", "9"], {
    stdin: "after the damage\n",
  });
  expect(produced.exitCode).toBe(0);
  const offsets = await runCli([...at, "--json", "offsets", "orders"]);
  expect(offsets.exitCode).toBe(0);
  const partitions: { partition: number; nextOffset: number }[] = JSON.parse(offsets.stdout);
  expect(partitions.find((p) => p.partition === 9)?.nextOffset).toBe(third.baseOffset + 2);
});

for (const damaged of ["the last batch", "every batch"] as const) {
  test(`a flipped byte in ${damaged} before the recovery point of the newest segment: segment repair and the start keep the bytes in place, report them, and give none of their offsets again`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const lineCount = damaged === "every batch" ? 1 : 5;
    const { partitionDir, file } = await prepare(dataDir, lineCount);
    const entries = entriesOf(file);
    const last = entries[entries.length - 1]!;
    const sizeBytes = fs.statSync(file).size;
    flipByte(file, last.position + last.bytes - 3);
    const damage = `damage: ${file} at file position ${last.position} (offset ${last.baseOffset}): crc-mismatch`;
    await expectDamageReported(dataDir, damage);
    // Repair: it used to cut the batch without a quarantine copy while reporting "cut 0 bytes"; the
    // file of the single damaged batch was left a bare header, which the next start removed as a
    // crash leftover, moving the log start past the damaged offsets.
    const repaired = await runCli(["segment", "repair", dataDir]);
    expect(repaired.exitCode).toBe(0);
    expect(repaired.stdout).toContain(
      `${file} at file position ${last.position}: offsets ${last.baseOffset}..${last.baseOffset} unreadable (crc-mismatch`,
    );
    expect(repaired.stdout).toContain("cut 0 bytes");
    // An empty partition: "no records", where the line said "offsets 0..-1".
    expect(repaired.stdout).toContain("orders-0: kept 1 segments, no records (next offset 0); cut 0 bytes");
    expect(fs.statSync(file).size).toBe(sizeBytes);
    expect(fs.readdirSync(partitionDir).filter((name) => name.includes("quarantine"))).toEqual([]);
    await expectDamageReported(dataDir, damage);
    // Unclean again (the point at the end of the file), so the start scans the segment as well.
    writeCheckpointFile(partitionDir, { segmentBaseOffset: 0, position: sizeBytes, nextOffset: lineCount });
    {
      await using broker = await startBroker(dataDir);
      expect(broker.startLine).not.toContain("left by a crash removed");
      const at = ["--broker", `127.0.0.1:${broker.port}`];
      const refused = await runCli([
        ...at,
        "consume",
        "orders",
        "--partition",
        "9",
        "--from",
        String(last.baseOffset),
      ]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain(
        `orders-9/00000000000000000000.log at file position ${last.position}: the entry at offset ${last.baseOffset} is damaged (crc-mismatch`,
      );
      const produced = await runCli([...at, "produce", "orders", "--partition", "9"], {
        stdin: "after the damage\n",
      });
      expect(produced.exitCode).toBe(0);
      const offsets = JSON.parse((await runCli([...at, "--json", "offsets", "orders"])).stdout);
      const partition = offsets.find((p: { partition: number }) => p.partition === 9);
      expect([partition.logStartOffset, partition.nextOffset]).toEqual([0, lineCount + 1]);
      expect(await broker.stop("SIGTERM")).toBe(0);
    }
    expect(fs.statSync(file).size).toBe(sizeBytes);
  });
}

test("zeros from a batch before the recovery point to the end of the newest segment: forced bytes lost, counted, nothing left to read", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 3);
  const [, second] = entriesOf(file) as [SegmentEntry, SegmentEntry, SegmentEntry];
  const sizeBytes = fs.statSync(file).size;
  writeCheckpointFile(partitionDir, { segmentBaseOffset: 0, position: sizeBytes, nextOffset: 3 });
  // What a disk that lost the last two forced batches of a mapped file would show.
  zeroBytes(file, second.position, sizeBytes - second.position);
  const reported = await expectDamageReported(
    dataDir,
    `damage: ${file} at file position ${second.position} (offset ${second.baseOffset}): the entries end at file position ${second.position}, zeros follow (before the recovery point`,
  );
  expect(reported).not.toContain("readable again");
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain(`DATA LOSS: ${sizeBytes - second.position} bytes that had been forced`);
  await expectMissingOffsetsReserved(broker, dataDir, file, second.baseOffset, 3);
});

test("a newest segment with a zeroed header and first batch is damage when the recovery point vouches for it, a crash leftover when nothing does", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 3);
  // A torn creation, unless the point says records in it were forced (their force carried the
  // header): then damage, and the start writes the header again (the next test). No valid entry
  // follows the header directly (the first one's length is zeroed too).
  zeroBytes(file, 0, 36);
  const reported = await expectDamageReported(
    dataDir,
    `damage: ${file} at file position 0 (offset 0): refusing segment ${file}: not a booblik segment (magic 0x00000000), but intact records follow: a start writes the header again`,
  );
  expect(reported).not.toContain("crash leftover");
  // Without a checkpoint nothing vouches for it: a crash leftover, which recovery removes.
  fs.rmSync(path.join(partitionDir, "checkpoint.json"));
  const leftover = await runCli(["segment", "verify", dataDir]);
  expect(leftover.exitCode).toBe(0);
  expect(statusOf(leftover.stdout, "orders-9")).toBe("ok (crash leftover)");
});

test("zeros over a newest segment's header and its first batch, the recovery point past them: the start and segment repair write the header again, lose that batch only, and serve the rest", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, file } = await prepare(dataDir, 3);
  const entries = entriesOf(file);
  // A crash's recovery point that vouches for all three batches. Not a torn creation then (that
  // needs no point past the header): damage. Before, the start refused the partition because the
  // header failed, and `segment repair` did the same (a reviewer's fault harness, 2026-12-02).
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: fs.statSync(file).size,
    nextOffset: 3,
  });
  zeroBytes(file, 0, entries[0]!.position + 12);
  const copy = dir.file("copy");
  fs.cpSync(dataDir, copy, { recursive: true });
  const repaired = await runCli(["segment", "repair", copy]);
  expect(repaired.stderr).toBe("");
  expect(repaired.exitCode).toBe(0);
  // The damaged batch stays in place, reported; the header is whole again.
  const afterRepair = await runCli(["segment", "verify", copy]);
  expect(afterRepair.stdout).toContain("at file position 32 (offset 0)");
  expect(afterRepair.stdout).not.toContain("at file position 0 ");
  const verified = await expectDamageReported(
    dataDir,
    "but intact records follow: a start writes the header again",
  );
  expect(verified).toContain(`damage: ${file} at file position 0 (offset 0)`);
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(`HEADER REWRITTEN: ${file} (`);
    expect(broker.startLine).toContain(`${file} at file position 32: offsets 0..0 unreadable`);
    expect(broker.startLine).toContain("DATA LOSS");
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const consumed = await runCli([...at, "consume", "orders", "--partition", "9", "--from", "1"]);
    expect(consumed.stdout).toBe(`${LINES[1]}\n${LINES[2]}\n`);
    const produced = await runCli([...at, "produce", "orders", "--partition", "9"], { stdin: "next\n" });
    expect(produced.stdout).toContain("partition 9 offset 3");
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
});

test("a newest segment with a zeroed header over intact records: the start writes the header again and keeps them, with or without a recovery point", async () => {
  for (const checkpoint of ["kept", "removed"]) {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const { partitionDir, file } = await prepare(dataDir, 3);
    // Zeros over the 32 header bytes only: bit rot, or a zeroed range. The start used to take it
    // for a torn creation without a recovery point, delete the file with its records and give
    // their offsets to new ones (a reviewer's fault harness, 2026-12-02); with one, it refused.
    zeroBytes(file, 0, 32);
    if (checkpoint === "removed") fs.rmSync(path.join(partitionDir, "checkpoint.json"));
    await expectDamageReported(
      dataDir,
      `damage: ${file} at file position 0 (offset 0): refusing segment ${file}: not a booblik segment (magic 0x00000000), but intact records follow: a start writes the header again from the file name and recovers the records after it like any other segment's`,
    );
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(
      `HEADER REWRITTEN: ${file} (its 32-byte header was zeros or failed its check; written again from the file name, then recovered like any other segment)`,
    );
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const consumed = await runCli([...at, "consume", "orders", "--partition", "9", "--from", "0"]);
    expect(consumed.exitCode).toBe(0);
    expect(consumed.stdout).toBe(`${LINES.slice(0, 3).join("\n")}\n`);
    const produced = await runCli([...at, "produce", "orders", "--partition", "9"], { stdin: "next\n" });
    expect(produced.stdout).toContain("partition 9 offset 3");
    expect(await broker.stop("SIGTERM")).toBe(0);
    const verify = await runCli(["segment", "verify", dataDir]);
    expect(verify.exitCode).toBe(0);
  }
});

for (const pointAt of ["the end of the previous segment", "the newest segment's header"] as const) {
  test(`a newest segment torn at creation, after a segment whose forced end was lost, the recovery point at ${pointAt}: the offsets it vouches for are not handed out again`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const { partitionDir } = await prepareRolled(dataDir, 160);
    const names = segmentNames(partitionDir);
    expect(names.length).toBeGreaterThanOrEqual(2);
    const previous = path.join(partitionDir, names.at(-2)!);
    const newest = path.join(partitionDir, names.at(-1)!);
    const newestBase = Number(names.at(-1)!.slice(0, 20));
    // Either point says everything in the previous segment was forced (one at the newest segment's
    // header is what a force after the roll writes). Then a disk that lost that segment's last batch
    // and tore the newest one's header and first entry. The second case handed the lost batch's
    // offsets out again (a second review of the harness, 2026-12-02).
    writeCheckpointFile(
      partitionDir,
      pointAt === "the end of the previous segment"
        ? {
            segmentBaseOffset: Number(names.at(-2)!.slice(0, 20)),
            position: fs.statSync(previous).size,
            nextOffset: newestBase,
          }
        : { segmentBaseOffset: newestBase, position: 32, nextOffset: newestBase },
    );

    const lastOfPrevious = entriesOf(previous).at(-1)!;
    fs.truncateSync(previous, lastOfPrevious.position);
    zeroBytes(newest, 0, 36);
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(`offsets ${lastOfPrevious.baseOffset}..${newestBase - 1} unreadable`);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], { stdin: "next\n" });
    expect(produced.exitCode).toBe(0);
    // Before: the log went on at the lost batch's first offset.
    expect(produced.stdout).toContain(`partition 0 offset ${newestBase}`);
    const gap = await runCli([
      ...at,
      "consume",
      "rolled",
      "--partition",
      "0",
      "--from",
      String(lastOfPrevious.baseOffset),
    ]);
    expect(gap.exitCode).toBe(1);
    expect(gap.stderr).toContain(`the next segment starts at offset ${newestBase}`);
  });
}

test("an empty newest segment (a crash right after a roll), bit rot in the segment before it, the recovery point older: the records after the damage are served and no offset is handed out again", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 400);
  const names = segmentNames(partitionDir);
  expect(names.length).toBeGreaterThanOrEqual(3);
  const sealed = path.join(partitionDir, names.at(-1)!);
  const entries = entriesOf(sealed);
  expect(entries.length).toBeGreaterThanOrEqual(2);
  // The roll to offset 400 created the next segment, and the crash came before its first append.
  fs.writeFileSync(
    path.join(partitionDir, segmentFileName(400 as Offset)),
    encodeSegmentHeader(400 as Offset),
  );
  // The last checkpoint written lies in the first segment: the later forces were not yet recorded.
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: fs.statSync(path.join(partitionDir, names[0]!)).size,
    nextOffset: Number(names[1]!.slice(0, 20)),
  });
  const [damaged, intact] = entries;
  flipByte(sealed, damaged!.position + damaged!.bytes - 3);

  // Before: the empty file was removed first, the damaged segment became the newest and was cut at
  // the damage like a torn tail, its intact batch quarantined and its offsets handed out again (a
  // reviewer's fault harness, seed 881).
  await expectDamageReported(dataDir, `offset ${damaged!.baseOffset}`);
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain(
    `${sealed} at file position ${damaged!.position}: offsets ${damaged!.baseOffset}..${intact!.baseOffset - 1} unreadable`,
  );
  expect(broker.startLine).not.toContain("quarantine");
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], { stdin: "next\n" });
  expect(produced.exitCode).toBe(0);
  expect(produced.stdout).toContain("partition 0 offset 400");
  const read = await consumeRolledAt(at, intact!.baseOffset);
  expect(read.exitCode).toBe(0);
  expect(read.stdout).toContain(`record ${intact!.baseOffset} `);
});

for (const zerosAfterBytes of [0, 4096]) {
  test(`a flipped bit in the header of an empty newest segment (${zerosAfterBytes} bytes of zeros after it): verify says no record is lost, the start writes the header again and appends there`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const { partitionDir } = await prepareRolled(dataDir, 400);
    // A roll to offset 400 made the next segment; nothing was appended to it before the stop
    // (a mapped one would have its capacity of zeros after the header), then its header rotted.
    const empty = path.join(partitionDir, segmentFileName(400 as Offset));
    fs.writeFileSync(
      empty,
      Buffer.concat([encodeSegmentHeader(400 as Offset), Buffer.alloc(zerosAfterBytes)]),
    );
    flipByte(empty, 10);

    // Before: the start and segment repair both refused the partition ("header checksum mismatch")
    // until the file was deleted by hand.
    const verified = await expectDamageReported(dataDir, `damage: ${empty} at file position 0`);
    expect(verified).toContain(
      "over a segment that holds no record (nothing but zeros after it): a start writes the header again from the file name; no record is lost",
    );
    {
      await using broker = await startBroker(dataDir);
      expect(broker.startLine).toContain(
        `HEADER REWRITTEN: ${empty} (its 32-byte header failed its check over a segment that holds no record; written again from the file name)`,
      );
      const at = ["--broker", `127.0.0.1:${broker.port}`];
      const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], { stdin: "next\n" });
      expect(produced.stdout).toContain("partition 0 offset 400");
      const read = await consumeRolledAt(at, 399);
      expect(read.stdout).toContain("record 399 ");
      expect(await broker.stop("SIGTERM")).toBe(0);
    }
    expect((await runCli(["segment", "verify", dataDir])).exitCode).toBe(0);
  });
}

test("a sealed segment with 1-3 zero bytes after its last batch: verify calls it a clean end and its records are read (before, verify said damage and every read of it failed)", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 200);
  const names = segmentNames(partitionDir);
  expect(names.length).toBeGreaterThanOrEqual(3);
  // A trim that stopped a few bytes past the last entry: zeros shorter than an entry header.
  fs.appendFileSync(path.join(partitionDir, names[1]!), Buffer.alloc(3));
  // Before: exit 3, "entry cut short: 3 bytes left, 8 needed" (4 to 7 zeros read as a zero length:
  // clean), and every read of the segment failed ("segment holds entries of 80 offsets … truncated").
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.stdout).not.toContain("cut short");
  expect(verify.exitCode, verify.stdout).toBe(0);
  await using broker = await startBroker(dataDir);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const read = await consumeRolledAt(at, Number(names[1]!.slice(0, 20)));
  expect(read.exitCode, read.stderr).toBe(0);
  expect(read.stdout).toContain(`record ${Number(names[1]!.slice(0, 20))} `);
});

test("a sealed segment cut 1-2 bytes into its last entry's length field (those bytes are zeros): still damage, named at that entry", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 400);
  const names = segmentNames(partitionDir);
  const sealed = path.join(partitionDir, names[1]!);
  const last = entriesOf(sealed).at(-1)!;
  for (const keep of [1, 2]) {
    fs.truncateSync(sealed, last.position + keep);
    // Not the end-of-log zeros: the entries stop short of the next segment's base (a reviewer's
    // run: the first version of the 1-3 zeros rule took them for an end, and verify then blamed the
    // next segment's base instead).
    const verify = await runCli(["segment", "verify", dataDir]);
    expect(verify.exitCode).toBe(3);
    expect(verify.stdout).toContain(`damage: ${sealed} at file position ${last.position}`);
  }
});

test("a header flipped over zeros in the newest segment the recovery point vouches for: records are lost, and the start refuses as before", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { file } = await prepare(dataDir, 3);
  const size = fs.statSync(file).size;
  zeroBytes(file, 32, size - 32);
  flipByte(file, 10);
  // The clean stop's checkpoint vouches for 3 records in this file: the rewrite is not lossless.
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(3);
  expect(verify.stdout).not.toContain("no record is lost");
  const refused = await runBrokerExpectingFailure([
    "--data-dir",
    dataDir,
    "--host",
    "127.0.0.1",
    "--port",
    "0",
  ]);
  expect(refused.exitCode).toBe(1);
  expect(refused.stderr).toContain(`refusing segment ${file}: header checksum mismatch`);
});

test("an empty file inside the offsets the segment before it holds (a failed roll's leftover): verify notes it, as the start removes it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 400);
  const names = segmentNames(partitionDir);
  const second = Number(names[1]!.slice(0, 20));
  const third = Number(names[2]!.slice(0, 20));
  const inside = (second + 5) as Offset;
  expect(inside).toBeLessThan(third);
  const leftover = path.join(partitionDir, segmentFileName(inside));
  fs.writeFileSync(leftover, encodeSegmentHeader(inside));
  // Before: exit 3, "the previous segment ends at offset <third> but this one starts at <inside>",
  // and the next segment's base reported as a gap too.
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.stdout).not.toContain("damage:");
  expect(verify.stdout).toContain(`note: ${leftover} holds no record (32 bytes)`);
  expect(verify.exitCode, verify.stdout).toBe(0);
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain("1 segment file left by a crash removed");
    const read = await consumeRolledAt(["--broker", `127.0.0.1:${broker.port}`], inside);
    expect(read.stdout).toContain(`record ${inside} `);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  expect(fs.existsSync(leftover)).toBe(false);
  expect((await runCli(["segment", "verify", dataDir])).stdout).not.toContain("note:");
});

test("segment repair writes the header of an empty newest segment again too", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 400);
  const empty = path.join(partitionDir, segmentFileName(400 as Offset));
  fs.writeFileSync(empty, encodeSegmentHeader(400 as Offset));
  flipByte(empty, 10);
  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode, repaired.stderr).toBe(0);
  expect((await runCli(["segment", "verify", dataDir])).exitCode).toBe(0);
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).not.toContain("HEADER REWRITTEN");
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], { stdin: "next\n" });
  expect(produced.stdout).toContain("partition 0 offset 400");
});

for (const damage of ["zeros", "a flipped bit"] as const) {
  test(`a sealed segment's header with ${damage} over intact records: a start that scans it writes it again, so does segment repair for one it does not scan`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const { partitionDir } = await prepareRolled(dataDir, 400);
    const names = segmentNames(partitionDir);
    expect(names.length).toBeGreaterThanOrEqual(4);
    const damageHeader = (file: string) => (damage === "zeros" ? zeroBytes(file, 0, 32) : flipByte(file, 10));
    // Scanned by a start: the segment the recovery point lies in (the point is at its first entry's
    // end, so the crash checkpoint leaves the segments from there to be scanned).
    const scanned = path.join(partitionDir, names.at(-2)!);
    const scannedBase = Number(names.at(-2)!.slice(0, 20));
    const scannedEntries = entriesOf(scanned);
    expect(scannedEntries.length).toBeGreaterThanOrEqual(2);
    writeCheckpointFile(partitionDir, {
      segmentBaseOffset: scannedBase,
      position: scannedEntries[1]!.position,
      nextOffset: scannedEntries[1]!.baseOffset,
    });
    damageHeader(scanned);
    // Not scanned by a start: a segment before the point's.
    const sealed = path.join(partitionDir, names[1]!);
    const sealedBase = Number(names[1]!.slice(0, 20));
    damageHeader(sealed);

    // Before: the start refused the whole partition ("not a booblik segment", "header checksum
    // mismatch"), and so did segment repair: nothing but a hand edit opened it again.
    const verified = await expectDamageReported(dataDir, `damage: ${scanned} at file position 0`);
    const lineOf = (file: string) =>
      verified.split("\n").find((line) => line.startsWith(`damage: ${file} at file position 0`));
    expect(lineOf(scanned)).toContain(
      "but intact records follow: a start writes the header again from the file name and recovers the records after it like any other segment's",
    );
    expect(lineOf(sealed)).toContain(
      "but intact records follow: booblik-cli segment repair (a start does not scan this segment; reads of it fail until then) writes the header again",
    );
    {
      await using broker = await startBroker(dataDir);
      expect(broker.startLine).toContain(
        `HEADER REWRITTEN: ${scanned} (its 32-byte header was zeros or failed its check; written again from the file name, then recovered like any other segment)`,
      );
      const at = ["--broker", `127.0.0.1:${broker.port}`];
      const read = await consumeRolledAt(at, scannedBase);
      expect(read.exitCode).toBe(0);
      expect(read.stdout).toContain(`record ${scannedBase} `);
      const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], { stdin: "next\n" });
      expect(produced.stdout).toContain("partition 0 offset 400");
      expect(await broker.stop("SIGTERM")).toBe(0);
    }
    const repaired = await runCli(["segment", "repair", dataDir]);
    expect(repaired.exitCode).toBe(0);
    await using broker = await startBroker(dataDir);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const read = await consumeRolledAt(at, sealedBase);
    expect(read.exitCode).toBe(0);
    expect(read.stdout).toContain(`record ${sealedBase} `);
    const verify = await runCli(["segment", "verify", dataDir]);
    expect(verify.exitCode).toBe(0);
  });
}

test("a newest segment torn at creation after a segment whose last batch is damaged, the recovery point older: the start line says that batch was cut, not kept", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 400);
  const names = segmentNames(partitionDir);
  const sealed = path.join(partitionDir, names.at(-1)!);
  const last = entriesOf(sealed).at(-1)!;
  // What a kill right at a roll leaves (the new file created, its header not yet written), and a
  // flipped bit in the length of the last batch of the segment before it.
  fs.writeFileSync(path.join(partitionDir, segmentFileName(400 as Offset)), new Uint8Array(0));
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: 0,
    position: fs.statSync(path.join(partitionDir, names[0]!)).size,
    nextOffset: Number(names[1]!.slice(0, 20)),
  });
  flipByte(sealed, last.position, 0x40);
  // Verify says what the start then does: the segment before the dropped file is the newest one, so
  // its invalid last batch, past the recovery point, is an unverified tail (before: damage kept in
  // place, exit 3, the last note's F1).
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.stdout).not.toContain("damage:");
  expect(verify.stdout).toContain("crash leftover");
  expect(verify.stdout).toContain(
    `note: ${sealed} ends with ${last.bytes} bytes after its last whole record`,
  );
  expect(verify.exitCode, verify.stdout).toBe(0);
  await using broker = await startBroker(dataDir);
  // Before: "DAMAGE: … offsets <last>..399 unreadable …, kept in place …, readable again from offset
  // 400", while the reopen as the newest segment cut that batch and the log went on at its first
  // offset (a reviewer's fault harness, 2026-12-02). Past the recovery point, unvouched: cut, as a
  // torn tail is.
  expect(broker.startLine).not.toContain("unreadable");
  expect(broker.startLine).toContain(`${last.bytes} torn bytes cut`);
  expect(broker.startLine).toContain("1 segment file left by a crash removed");
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const produced = await runCli([...at, "produce", "rolled", "--partition", "0"], { stdin: "next\n" });
  expect(produced.stdout).toContain(`partition 0 offset ${last.baseOffset}`);
});

test("the segment the recovery point lies in removed while the broker was stopped: the start refuses, verify reports it, repair accepts the loss", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepareRolled(dataDir, 400);
  const segments = segmentNames(partitionDir);
  expect(segments.length).toBeGreaterThanOrEqual(3);
  const point = readCheckpointFile(partitionDir).recoveryPoint;
  expect(point.nextOffset).toBe(400);
  const newest = segments.at(-1)!;
  expect(Number(newest.slice(0, 20))).toBe(point.segmentBaseOffset);
  // An operator's fault run removed the newest segment by hand: the broker used to start without a
  // word, its log ending at that segment's base offset, and hand those offsets out again.
  fs.unlinkSync(path.join(partitionDir, newest));

  const refused = await runBrokerExpectingFailure(["--data-dir", dataDir, "--port", "0"]);
  expect(refused.exitCode).toBe(1);
  expect(refused.stderr).toContain(`${newest}, which is missing: records up to offset 399 were forced there`);
  expect(refused.stderr).toContain("booblik-cli segment repair");

  await expectDamageReported(dataDir, `${newest}, which is missing`);

  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode).toBe(0);
  await using broker = await startBroker(dataDir);
  const client = await runCli(["--broker", `127.0.0.1:${broker.port}`, "offsets", "rolled"]);
  expect(client.exitCode).toBe(0);
  expect(client.stdout).toContain(String(point.segmentBaseOffset));
});

test("a partition directory removed while the broker was stopped: the start says so and creates it again empty", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir } = await prepare(dataDir, 2);
  fs.rmSync(partitionDir, { recursive: true });
  // Before, the partition started again at offset 0 without a word.
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain(
    "; PARTITION DIRECTORY MISSING: orders-9 (created again, empty: a crash while it was being created, or removed by hand, its records then gone)",
  );
  expect(fs.existsSync(partitionDir)).toBe(true);
});
