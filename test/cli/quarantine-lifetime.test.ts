/**
 * Quarantine files live as long as their segment (issue 15): recovery copies cut bytes that held
 * valid entries into `<segment>.log.quarantine-<file position>`; the broker and booblik-cli run as
 * child processes on a real data directory with a byte flipped by hand.
 *
 * - while the segment exists the file stays, /metrics counts it (booblik_quarantine_files and
 *   _bytes, also after a later start that wrote none), every later start line says so, and
 *   `segment verify` lists it (without calling it damage);
 * - a purge (or retention) that deletes the segment removes the file with it, and the gauges fall;
 * - a quarantine file whose segment is already gone (left by a broker before this rule) is removed
 *   at the next start, which says so;
 * - so is one whose segment recovery itself removed: a newest segment that its cut left with only
 *   a header, removed as an empty leftover by `segment repair` (no checkpoint names it), a newest
 *   segment whose header is zeros (a torn creation, dropped by rule 2 of pass 3), and one whose
 *   segment was in the middle of the log;
 * - a topic's deletion removes its partitions' quarantine files with the directory;
 * - retention (PartitionLog.applyRetention, both write paths) removes those of deleted segments only.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Offset } from "../../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES, SEGMENT_HEADER_BYTES } from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { PartitionLog } from "../../src/storage/partition-log.ts";
import { segmentConfig } from "../../src/storage/segment.ts";
import { quarantineFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES } from "../../src/storage/segment-writer.ts";
import { metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { entriesOf, flipByte } from "../helpers/segment-file.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(90_000);

const LINES = Array.from({ length: 300 }, (_, i) => `record ${i} ${"x".repeat(30)}`);

async function produce(at: string[], lines: string[]): Promise<void> {
  for (let from = 0; from < lines.length; from += 20) {
    const produced = await runCli([...at, "produce", "q", "--partition", "0"], {
      stdin: `${lines.slice(from, from + 20).join("\n")}\n`,
    });
    expect(produced.exitCode).toBe(0);
  }
}

async function metrics(startLine: string): Promise<string> {
  const port = metricsPortOf(startLine);
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

function segmentsOf(partitionDir: string): string[] {
  return fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort();
}

/**
 * A topic `q` (8 KiB segments) with LINES in partition 0, then a byte flipped in an entry of the
 * newest segment and the checkpoint removed, so that the next start cuts there and quarantines the
 * valid entries after it. Returns the quarantine file the next start is expected to write.
 */
async function damagedNewestSegment(
  dataDir: string,
): Promise<{ partitionDir: string; quarantine: string; bytes: number }> {
  {
    await using broker = await startBroker(dataDir);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    expect((await runCli([...at, "topics", "create", "q", "--segment-size", "8KiB"])).exitCode).toBe(0);
    await produce(at, LINES);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  const partitionDir = path.join(dataDir, "q-0");
  const newest = path.join(partitionDir, segmentsOf(partitionDir).at(-1)!);
  const entries = entriesOf(newest);
  expect(entries.length).toBeGreaterThanOrEqual(4);
  const damaged = entries[1]!;
  const last = entries.at(-1)!;
  flipByte(newest, damaged.position + damaged.bytes - 3);
  fs.rmSync(path.join(partitionDir, "checkpoint.json"));
  return {
    partitionDir,
    quarantine: `${newest}.quarantine-${damaged.position}`,
    bytes: last.position + last.bytes - damaged.position,
  };
}

test("a quarantine file stays with its segment (listed, counted, named at every start) and a purge that deletes the segment removes it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, quarantine, bytes } = await damagedNewestSegment(dataDir);

  {
    await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
    expect(broker.startLine).toContain(`cut and kept in ${quarantine}`);
    expect(broker.startLine).toContain(
      `1 quarantine file on disk (${bytes} bytes; removed with their segments; booblik-cli segment verify lists them)`,
    );
    expect(fs.statSync(quarantine).size).toBe(bytes);
    const scrape = await metrics(broker.startLine);
    expect(metricValue(scrape, "booblik_quarantine_files")).toBe(1);
    expect(metricValue(scrape, "booblik_quarantine_bytes")).toBe(bytes);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }

  // A later start writes no quarantine file but still counts and names the one on disk.
  {
    await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
    expect(broker.startLine).not.toContain("QUARANTINED");
    expect(broker.startLine).toContain(`1 quarantine file on disk (${bytes} bytes;`);
    expect(metricValue(await metrics(broker.startLine), "booblik_quarantine_files")).toBe(1);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }

  // segment verify lists it, and it is not damage (exit 0: the cut is done, the log is whole).
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(0);
  expect(verify.stdout).toContain(
    `quarantine: ${quarantine} (${bytes} bytes cut from ${path.basename(quarantine).split(".quarantine-")[0]} at file position `,
  );
  expect(verify.stdout).toContain("no damage (1 quarantine file, ");
  const json = JSON.parse((await runCli(["--json", "segment", "verify", dataDir])).stdout);
  expect(json.partitions[0].quarantine).toEqual([
    expect.objectContaining({ file: quarantine, bytes, segmentExists: true }),
  ]);

  // New records roll past the quarantined segment; a purge past it deletes the segment and the file.
  await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  await produce(at, LINES);
  const segment = quarantine.split(".quarantine-")[0]!;
  expect(segmentsOf(partitionDir).at(-1)).not.toBe(path.basename(segment));
  const end = JSON.parse((await runCli([...at, "--json", "topics", "describe", "q"])).stdout).partitions[0]
    .nextOffset as number;
  const purged = await runCli([...at, "topics", "purge", "q", "--before", String(end)]);
  expect(purged.exitCode).toBe(0);
  expect(fs.existsSync(segment)).toBe(false);
  expect(fs.existsSync(quarantine)).toBe(false);
  const scrape = await metrics(broker.startLine);
  expect(metricValue(scrape, "booblik_quarantine_files")).toBe(0);
  expect(metricValue(scrape, "booblik_quarantine_bytes")).toBe(0);
});

test("a quarantine file whose segment is gone is removed at the next start, which says so; a topic's deletion removes the rest", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, quarantine } = await damagedNewestSegment(dataDir);
  // One left by an older broker, whose retention deleted the oldest segment and forgot this file.
  const oldest = path.join(partitionDir, segmentsOf(partitionDir)[0]!);
  expect(segmentsOf(partitionDir).length).toBeGreaterThanOrEqual(2);
  fs.rmSync(oldest);
  const orphan = `${oldest}.quarantine-32`;
  fs.writeFileSync(orphan, new Uint8Array(100));

  const verify = await runCli(["segment", "verify", partitionDir]);
  expect(verify.stdout).toContain(
    `quarantine: ${orphan} (100 bytes; its segment ${path.basename(oldest)} is gone: the broker's next start removes it)`,
  );

  await using broker = await startBroker(dataDir);
  // The one this start wrote stays; the orphan is gone.
  expect(broker.startLine).toContain("; 1 quarantine file on disk (");
  expect(broker.startLine).toContain(", 1 quarantine file of deleted segments removed");
  expect(fs.existsSync(orphan)).toBe(false);
  expect(fs.existsSync(quarantine)).toBe(true);

  const at = ["--broker", `127.0.0.1:${broker.port}`];
  expect((await runCli([...at, "topics", "delete", "q"])).exitCode).toBe(0);
  expect(fs.existsSync(quarantine)).toBe(false);
  expect(fs.existsSync(partitionDir)).toBe(false);
});

test("a quarantine file of a newest segment cut to its header stays with it; one whose segment was in the middle of the log is removed: segment repair, then a start", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  {
    await using broker = await startBroker(dataDir);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    expect((await runCli([...at, "topics", "create", "q", "--segment-size", "8KiB"])).exitCode).toBe(0);
    await produce(at, [...LINES, ...LINES]);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  const partitionDir = path.join(dataDir, "q-0");
  const segments = segmentsOf(partitionDir);
  expect(segments.length).toBeGreaterThanOrEqual(3);
  // The newest segment's first entry damaged, valid ones after it, no checkpoint: the next start
  // cuts the whole segment back to its header and quarantines every entry.
  const newest = path.join(partitionDir, segments.at(-1)!);
  const first = entriesOf(newest)[0]!;
  expect(first.position).toBe(SEGMENT_HEADER_BYTES);
  flipByte(newest, first.position + first.bytes - 3);
  fs.rmSync(path.join(partitionDir, "checkpoint.json"));
  const quarantine = `${newest}.quarantine-${SEGMENT_HEADER_BYTES}`;
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(`cut and kept in ${quarantine}`);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  expect(fs.statSync(newest).size).toBe(SEGMENT_HEADER_BYTES);
  expect(fs.existsSync(quarantine)).toBe(true);

  // Without a checkpoint (lost; segment repair keeps one that is there) the header-only newest
  // segment is the empty active segment it is: pass 2 leaves the newest file to pass 3
  // (log-recovery.ts), which opens a whole header for append. It stays, and its quarantine file with it.
  fs.rmSync(path.join(partitionDir, "checkpoint.json"));
  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode).toBe(0);
  expect(repaired.stdout).not.toContain("quarantine files of deleted segments");
  expect(fs.statSync(newest).size).toBe(SEGMENT_HEADER_BYTES);
  expect(fs.existsSync(quarantine)).toBe(true);
  const quarantineBytes = fs.statSync(quarantine).size;
  const verify = await runCli(["segment", "verify", partitionDir]);
  expect(verify.exitCode).toBe(0);
  expect(verify.stdout).toContain(`quarantine: ${quarantine}`);

  // One whose segment was in the middle of the log (the next segment starts after its base): left
  // by a pass-2 removal of an older broker. The start removes it, and says so.
  const middle = segmentsOf(partitionDir)[1]!;
  const middleBase = Number(middle.slice(0, -".log".length));
  const orphan = path.join(
    partitionDir,
    quarantineFileName((middleBase - 1) as Offset, SEGMENT_HEADER_BYTES),
  );
  fs.writeFileSync(orphan, new Uint8Array(100));
  const before = await runCli(["segment", "verify", partitionDir]);
  expect(before.stdout).toContain(`quarantine: ${orphan} (100 bytes; its segment `);
  expect(before.stdout).toContain(" is gone: the broker's next start removes it)");
  {
    await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
    expect(broker.startLine).toContain(`; 1 quarantine file on disk (${quarantineBytes} bytes;`);
    expect(broker.startLine).toContain(", 1 quarantine file of deleted segments removed");
    expect(fs.existsSync(orphan)).toBe(false);
    const scrape = await metrics(broker.startLine);
    expect(metricValue(scrape, "booblik_quarantine_files")).toBe(1);
    expect(metricValue(scrape, "booblik_quarantine_bytes")).toBe(quarantineBytes);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  expect((await runCli(["segment", "verify", partitionDir])).stdout).not.toContain(orphan);
});

test("a quarantine file whose newest segment recovery drops as a torn creation (rule 2 of pass 3) is removed with it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const { partitionDir, quarantine } = await damagedNewestSegment(dataDir);
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(`cut and kept in ${quarantine}`);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  expect(fs.existsSync(quarantine)).toBe(true);
  // The newest segment now holds its header and one entry. A header of zeros with no checkpoint
  // to vouch for it and no valid entry after it is what a power cut right after a roll leaves
  // (recovery.ts isTornCreation; the entry's length is zeroed too, or the header is written again):
  // the next start deletes the segment (log-recovery.ts, rule 2), and its quarantine file must go.
  const segments = segmentsOf(partitionDir);
  const newest = path.join(partitionDir, segments.at(-1)!);
  expect(fs.statSync(newest).size).toBeGreaterThan(SEGMENT_HEADER_BYTES);
  const bytes = fs.readFileSync(newest);
  bytes.fill(0, 0, SEGMENT_HEADER_BYTES + 4);
  fs.writeFileSync(newest, bytes);
  fs.rmSync(path.join(partitionDir, "checkpoint.json"));
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(
      ", 1 segment file left by a crash removed (empty, or a header that never reached the disk)",
    );
    expect(broker.startLine).toContain(", 1 quarantine file of deleted segments removed");
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  expect(fs.existsSync(newest)).toBe(false);
  expect(fs.existsSync(quarantine)).toBe(false);
  expect(segmentsOf(partitionDir)).toEqual(segments.slice(0, -1));
  const verify = await runCli(["segment", "verify", partitionDir]);
  expect(verify.exitCode).toBe(0);
  expect(verify.stdout).not.toContain("quarantine");
});

test("retention that deletes a segment removes its quarantine files, and only those (PartitionLog, both write paths)", () => {
  for (const writeMode of WRITE_MODES) {
    using dir = tempDir();
    const payload = new Uint8Array(90).fill(0x61);
    const entryBytes = ENTRY_HEADER_BYTES + batchOfValues([payload]).length;
    const config = segmentConfig({ writeMode, segmentBytes: SEGMENT_HEADER_BYTES + 3 * entryBytes });
    const first = PartitionLog.open(dir.path, config);
    for (let i = 0; i < 10; i++) first.append(batchOfValues([payload]));
    expect(first.segmentBaseOffsets).toEqual([0, 3, 6, 9]);
    first.close();
    // As recovery names them (segment.ts): next to segments 0 and 6.
    const ofZero = path.join(dir.path, quarantineFileName(0 as Offset, 32));
    const ofSix = path.join(dir.path, quarantineFileName(6 as Offset, 64));
    fs.writeFileSync(ofZero, new Uint8Array(10));
    fs.writeFileSync(ofSix, new Uint8Array(20));
    const log = PartitionLog.open(dir.path, config);
    try {
      expect(log.openReport.quarantineFiles).toBe(2);
      expect(log.quarantineBytes).toBe(30);
      // Down to about one segment more than 2 entries' worth: segments 0 and 3 go, 6 and 9 stay.
      const result = log.applyRetention({ retentionBytes: 2 * entryBytes });
      expect(result.segmentsDeleted).toBe(2);
      expect(log.segmentBaseOffsets).toEqual([6, 9]);
      expect(fs.existsSync(ofZero)).toBe(false);
      expect(fs.existsSync(ofSix)).toBe(true);
      expect(log.quarantineFiles.map((q) => q.file)).toEqual([ofSix]);
      expect(log.quarantineBytes).toBe(20);
    } finally {
      log.close();
    }
  }
});
