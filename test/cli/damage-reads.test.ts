/**
 * Damage costs only what is damaged, on the read side (issue 15): a byte flipped by hand in an entry
 * in the middle of a segment, the broker and booblik-cli as child processes. A consumer gets every
 * valid record before the damage, then an error naming the segment file, the file position, the
 * offset and the next readable offset; a consumer that starts at that next offset reads on. On both
 * FETCH paths (sendfile, copy), in a sealed segment (after a clean stop: not scanned at start) and
 * in the newest one.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { entriesOf, flipByte, writeCheckpointFile } from "../helpers/segment-file.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(90_000);

const LINES = Array.from({ length: 400 }, (_, i) => `record ${i} ${"x".repeat(30)}`);
/**
 * Lines long enough that answers from the damaged entry on are 64 KiB and more, so the sendfile
 * path sends them from the file (FETCH_SENDFILE_ANSWER_BYTES_MIN; smaller ones are copied): 22
 * entries of about 40 KB in segments of 256 KiB, six to a segment, four in the newest.
 */
const LONG_LINES = Array.from({ length: 440 }, (_, i) => `record ${i} ${"x".repeat(2000)}`);

/** What `consume` prints for these lines: each with its newline. */
function linesText(lines: string[]): string {
  return lines.map((line) => `${line}\n`).join("");
}

/** Produces `lines` in small runs (several entries per segment), then stops the broker cleanly. */
async function prepare(
  dataDir: string,
  writeMode: string,
  lines = LINES,
  segmentSize = "8KiB",
): Promise<string> {
  await using broker = await startBroker(dataDir, ["--write-mode", writeMode]);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  expect((await runCli([...at, "topics", "create", "d", "--segment-size", segmentSize])).exitCode).toBe(0);
  for (let from = 0; from < lines.length; from += 20) {
    const produced = await runCli([...at, "produce", "d", "--partition", "0"], {
      stdin: `${lines.slice(from, from + 20).join("\n")}\n`,
    });
    expect(produced.exitCode).toBe(0);
  }
  expect(await broker.stop("SIGTERM")).toBe(0);
  return path.join(dataDir, "d-0");
}

for (const fetchPath of ["sendfile", "copy"] as const) {
  for (const where of ["sealed", "newest"] as const) {
    test(`a flipped byte in the ${where} segment (fetch path ${fetchPath}): valid records, then an error naming file, position, offset and the next readable offset`, async () => {
      using dir = tempDir();
      const dataDir = dir.file("data");
      const lines = fetchPath === "sendfile" ? LONG_LINES : LINES;
      const partitionDir = await prepare(
        dataDir,
        where === "newest" ? "file" : "mapped",
        lines,
        fetchPath === "sendfile" ? "256KiB" : "8KiB",
      );
      const segments = fs
        .readdirSync(partitionDir)
        .filter((name) => name.endsWith(".log"))
        .sort();
      expect(segments.length).toBeGreaterThanOrEqual(3);
      const segment = where === "sealed" ? segments[0]! : segments.at(-1)!;
      const file = path.join(partitionDir, segment);
      const entries = entriesOf(file);
      expect(entries.length).toBeGreaterThanOrEqual(4);
      const damaged = entries[2]!;
      const after = entries[3]!;
      // A byte of a record's value: only the frame CRC (and the batch CRC) can tell.
      flipByte(file, damaged.position + damaged.bytes - 3);

      await using broker = await startBroker(dataDir, ["--fetch-path", fetchPath, "--metrics-port", "0"]);
      const at = ["--broker", `127.0.0.1:${broker.port}`];
      const from = entries[0]!.baseOffset;
      const consumed = await runCli([...at, "consume", "d", "--partition", "0", "--from", String(from)]);
      expect(consumed.exitCode).toBe(1);
      // Every record before the damaged entry, nothing of it.
      expect(consumed.stdout).toBe(linesText(lines.slice(from, damaged.baseOffset)));
      expect(consumed.stderr).toContain(`<data-dir>/d-0/${segment}`);
      expect(consumed.stderr).toContain(`file position ${damaged.position}`);
      expect(consumed.stderr).toContain(`the entry at offset ${damaged.baseOffset} is damaged`);
      expect(consumed.stderr).toContain(
        `the next readable offset is ${after.baseOffset} (file position ${after.position})`,
      );
      // From the next readable offset on, everything is served.
      const rest = await runCli([
        ...at,
        "consume",
        "d",
        "--partition",
        "0",
        "--from",
        String(after.baseOffset),
      ]);
      expect(rest.exitCode).toBe(0);
      expect(rest.stdout).toBe(linesText(lines.slice(after.baseOffset)));
      // The sendfile variant sent its answers from the file (the copy path never does).
      const metrics = await (
        await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)
      ).text();
      const sentFromFile = metricValue(metrics, "booblik_fetch_sendfile_bytes_total");
      if (fetchPath === "sendfile") expect(sentFromFile).toBeGreaterThan(64 * 1024);
      else expect(sentFromFile).toBe(0);
    });
  }
}

test("a flipped byte in an entry's length field: the next readable offset is found by searching past it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const partitionDir = await prepare(dataDir, "file");
  const segment = fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort()[0]!;
  const file = path.join(partitionDir, segment);
  const entries = entriesOf(file);
  const damaged = entries[1]!;
  const after = entries[2]!;
  flipByte(file, damaged.position + 2); // the frame length: the entries after it cannot be walked to
  await using broker = await startBroker(dataDir);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const consumed = await runCli([...at, "consume", "d", "--partition", "0", "--from", "0"]);
  expect(consumed.exitCode).toBe(1);
  expect(consumed.stdout).toBe(linesText(LINES.slice(0, damaged.baseOffset)));
  expect(consumed.stderr).toContain(`<data-dir>/d-0/${segment} at file position ${damaged.position}`);
  expect(consumed.stderr).toContain(`the entry at offset ${damaged.baseOffset} is damaged`);
  expect(consumed.stderr).toContain(
    `the next readable offset is ${after.baseOffset} (file position ${after.position})`,
  );
});

for (const writeMode of ["file", "mapped"] as const) {
  test(`recovery without a recovery point (${writeMode}) meets damage in a sealed segment: nothing is cut, later segments are kept, the start line names the range`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const partitionDir = await prepare(dataDir, writeMode);
    const segments = fs
      .readdirSync(partitionDir)
      .filter((name) => name.endsWith(".log"))
      .sort();
    expect(segments.length).toBeGreaterThanOrEqual(3);
    const file = path.join(partitionDir, segments[0]!);
    const entries = entriesOf(file);
    const damaged = entries[2]!;
    const after = entries[3]!;
    flipByte(file, damaged.position + damaged.bytes - 3);
    fs.rmSync(path.join(partitionDir, "checkpoint.json"));
    const sizes = segments.map((name) => fs.statSync(path.join(partitionDir, name)).size);

    await using broker = await startBroker(dataDir, ["--metrics-port", "0"]);
    expect(broker.startLine).toContain(
      `DAMAGE: ${after.baseOffset - damaged.baseOffset} offsets unreadable in 1 damaged range`,
    );
    const metricsPort = metricsPortOf(broker.startLine);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metricValue(metrics, "booblik_open_offsets_unreadable")).toBe(
      after.baseOffset - damaged.baseOffset,
    );
    expect(metricValue(metrics, "booblik_open_damaged_ranges")).toBe(1);
    expect(broker.startLine).toContain(
      `${file} at file position ${damaged.position}: offsets ${damaged.baseOffset}..${after.baseOffset - 1} unreadable`,
    );
    expect(broker.startLine).not.toContain("dropped");
    // Every segment is still there, every byte of it.
    expect(
      fs
        .readdirSync(partitionDir)
        .filter((name) => name.endsWith(".log"))
        .sort(),
    ).toEqual(segments);
    for (let i = 0; i < segments.length - 1; i++)
      expect(fs.statSync(path.join(partitionDir, segments[i]!)).size).toBe(sizes[i]!);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const consumed = await runCli([...at, "consume", "d", "--partition", "0", "--from", "0"]);
    expect(consumed.exitCode).toBe(1);
    expect(consumed.stdout).toBe(linesText(LINES.slice(0, damaged.baseOffset)));
    expect(consumed.stderr).toContain(`the next readable offset is ${after.baseOffset}`);
    const rest = await runCli([
      ...at,
      "consume",
      "d",
      "--partition",
      "0",
      "--from",
      String(after.baseOffset),
    ]);
    expect(rest.exitCode).toBe(0);
    expect(rest.stdout).toBe(linesText(LINES.slice(after.baseOffset)));
  });
}

for (const writeMode of ["file", "mapped"] as const) {
  test(`recovery without a recovery point (${writeMode}) meets damage in the newest segment: the cut bytes go to a quarantine file, the start line says so`, async () => {
    using dir = tempDir();
    const dataDir = dir.file("data");
    const partitionDir = await prepare(dataDir, writeMode);
    const newest = fs
      .readdirSync(partitionDir)
      .filter((name) => name.endsWith(".log"))
      .sort()
      .at(-1)!;
    const file = path.join(partitionDir, newest);
    const entries = entriesOf(file);
    expect(entries.length).toBeGreaterThanOrEqual(4);
    const damaged = entries[2]!;
    const last = entries.at(-1)!;
    flipByte(file, damaged.position + damaged.bytes - 3);
    const expected = fs.readFileSync(file).subarray(damaged.position, last.position + last.bytes);
    fs.rmSync(path.join(partitionDir, "checkpoint.json"));

    await using broker = await startBroker(dataDir);
    const quarantine = `${file}.quarantine-${damaged.position}`;
    expect(broker.startLine).toContain(
      `QUARANTINED: ${expected.length} bytes from ${file} at file position ${damaged.position} (entries from offset ${damaged.baseOffset} on) cut and kept in ${quarantine}`,
    );
    expect(fs.readFileSync(quarantine).equals(expected)).toBe(true);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const consumed = await runCli([...at, "consume", "d", "--partition", "0", "--from", "0"]);
    expect(consumed.exitCode).toBe(0);
    expect(consumed.stdout).toBe(linesText(LINES.slice(0, damaged.baseOffset)));
  });
}

test("segment verify reports every damaged range, each with where the partition is readable again", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const partitionDir = await prepare(dataDir, "file");
  const segments = fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort();
  expect(segments.length).toBeGreaterThanOrEqual(3);
  const first = path.join(partitionDir, segments[0]!);
  const second = path.join(partitionDir, segments[1]!);
  const firstEntries = entriesOf(first);
  const secondEntries = entriesOf(second);
  // Two ranges in the first segment (a value byte, then a length field), one in the second.
  const damages = [
    { file: first, entry: firstEntries[1]!, after: firstEntries[2]!, at: firstEntries[1]!.bytes - 3 },
    { file: first, entry: firstEntries[3]!, after: firstEntries[4]!, at: 2 },
    { file: second, entry: secondEntries[2]!, after: secondEntries[3]!, at: secondEntries[2]!.bytes - 3 },
  ];
  for (const { file, entry, at } of damages) flipByte(file, entry.position + at);
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(3);
  const lines = verify.stdout.split("\n").filter((line) => line.startsWith("damage: "));
  expect(lines.length).toBe(3);
  damages.forEach(({ file, entry, after }, i) => {
    expect(lines[i]).toStartWith(
      `damage: ${file} at file position ${entry.position} (offset ${entry.baseOffset}): `,
    );
    expect(lines[i]).toEndWith(`; readable again from offset ${after.baseOffset}`);
  });
  const json = await runCli(["--json", "segment", "verify", dataDir]);
  expect(json.exitCode).toBe(3);
  const partition = JSON.parse(json.stdout).partitions[0];
  expect(partition.damages.map((d: { offset: number }) => d.offset)).toEqual(
    damages.map(({ entry }) => entry.baseOffset),
  );
  // Every record outside the damaged entries is counted as verified.
  const lost = damages.reduce((sum, { entry, after }) => sum + after.baseOffset - entry.baseOffset, 0);
  expect(partition.records).toBe(LINES.length - lost);
});

test("segment repair: refused while the broker holds the lock; then reports what it kept in place, cut and quarantined, and the broker serves around it", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const partitionDir = await prepare(dataDir, "file");
  const segments = fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort();
  const sealed = path.join(partitionDir, segments[0]!);
  const newest = path.join(partitionDir, segments.at(-1)!);
  const sealedEntries = entriesOf(sealed);
  const newestEntries = entriesOf(newest);
  const rot = sealedEntries[1]!;
  const rotAfter = sealedEntries[2]!;
  flipByte(sealed, rot.position + rot.bytes - 3);
  const torn = newestEntries[1]!;
  const newestLast = newestEntries.at(-1)!;
  flipByte(newest, torn.position + torn.bytes - 3);

  {
    await using broker = await startBroker(dataDir);
    const refused = await runCli(["segment", "repair", dataDir]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("stop the broker before repairing");
    expect(fs.existsSync(`${newest}.quarantine-${torn.position}`)).toBe(false);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  // A crash whose last force covered the newest segment up to `torn`: the damage there is a torn
  // tail, which the repair cuts (quarantining the valid entries after it). Before the recovery
  // point it would be stepped over and kept, as the start does (the repair keeps the point).
  writeCheckpointFile(partitionDir, {
    segmentBaseOffset: Number(segments.at(-1)!.slice(0, 20)),
    position: torn.position,
    nextOffset: torn.baseOffset,
  });

  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode).toBe(0);
  const quarantine = `${newest}.quarantine-${torn.position}`;
  expect(repaired.stdout).toContain(
    `d-0: kept ${segments.length} segments, offsets 0..${torn.baseOffset - 1} (${rotAfter.baseOffset - rot.baseOffset} of them unreadable, kept in place); cut ${newestLast.position + newestLast.bytes - torn.position} bytes`,
  );
  expect(repaired.stdout).toContain(
    `  damaged, kept: ${sealed} at file position ${rot.position}: offsets ${rot.baseOffset}..${rotAfter.baseOffset - 1} unreadable`,
  );
  expect(repaired.stdout).toContain(`  quarantined: `);
  expect(repaired.stdout).toContain(`cut and kept in ${quarantine}`);
  expect(fs.existsSync(quarantine)).toBe(true);
  // The broker starts clean on the repaired directory and serves everything around the damage.
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain("clean shutdown");
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const rest = await runCli([
    ...at,
    "consume",
    "d",
    "--partition",
    "0",
    "--from",
    String(rotAfter.baseOffset),
  ]);
  expect(rest.exitCode).toBe(0);
  expect(rest.stdout).toBe(linesText(LINES.slice(rotAfter.baseOffset, torn.baseOffset)));
});

test("a middle segment removed while the broker was stopped: the records around it are served, a read in the gap names the offsets and where reading goes on", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const partitionDir = await prepare(dataDir, "file");
  const segments = fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort();
  expect(segments.length).toBeGreaterThanOrEqual(3);
  const before = entriesOf(path.join(partitionDir, segments[0]!));
  const gapStart = Number(segments[1]!.slice(0, 20));
  const gapEnd = Number(segments[2]!.slice(0, 20));
  expect(before.at(-1)!.baseOffset).toBeLessThan(gapStart);
  fs.unlinkSync(path.join(partitionDir, segments[1]!));

  await using broker = await startBroker(dataDir);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const consumed = await runCli([...at, "consume", "d", "--partition", "0", "--from", "0"]);
  expect(consumed.exitCode).toBe(1);
  // Every record of the first segment (before, its reads failed too), then the gap named.
  expect(consumed.stdout).toBe(linesText(LINES.slice(0, gapStart)));
  expect(consumed.stderr).toContain(`<data-dir>/d-0/${segments[0]}`);
  expect(consumed.stderr).toContain(
    `offsets ${gapStart}..${gapEnd - 1} are in no segment file); no readable entry follows in this segment; the next segment starts at offset ${gapEnd}`,
  );
  const rest = await runCli([...at, "consume", "d", "--partition", "0", "--from", String(gapEnd)]);
  expect(rest.exitCode).toBe(0);
  expect(rest.stdout).toBe(linesText(LINES.slice(gapEnd)));
});
