/**
 * A damaged segment header, as an operator meets it (docs/operations.md, "What survives what"): the
 * broker and booblik-cli as child processes, the damage made by hand in the data directory.
 *
 * - In a sealed segment after a clean stop (not checked at start, which scans nothing): the broker
 *   starts; a read of that segment is refused with STORAGE_ERROR naming the file; the other segments
 *   are served; `segment verify` reports the damage (exit 3).
 * - In the newest segment (always checked at start): the broker refuses to start, naming the file,
 *   and changes nothing on disk.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { flipByte } from "../helpers/segment-file.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

/** A byte inside the segment header (its first 32 bytes), past the magic: only its checksum can tell. */
const HEADER_BYTE = 20;

/** `consume` of `max` records of partition 0 of `h` from `offset`. */
function consumeH(at: string[], offset: number, max: number) {
  return runCli([...at, "consume", "h", "--partition", "0", "--from", String(offset), "--max", String(max)]);
}

function flipHeaderByte(file: string): void {
  flipByte(file, HEADER_BYTE, 0x01);
}

test("a damaged header over intact records: a sealed segment's reads are refused and the rest served until segment repair writes it again; the newest one's the start writes again", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  const lines = Array.from({ length: 300 }, (_, i) => `record ${i} ${"x".repeat(30)}`);
  {
    await using broker = await startBroker(dataDir);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    expect((await runCli([...at, "topics", "create", "h", "--segment-size", "4KiB"])).exitCode).toBe(0);
    const produced = await runCli([...at, "produce", "h", "--partition", "0"], {
      stdin: `${lines.join("\n")}\n`,
    });
    expect(produced.exitCode).toBe(0);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  const partitionDir = path.join(dataDir, "h-0");
  const segments = fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith(".log"))
    .sort();
  expect(segments.length).toBeGreaterThanOrEqual(3);
  const secondBase = Number.parseInt(segments[1]!, 10);

  flipHeaderByte(path.join(partitionDir, segments[0]!));
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain("clean shutdown, nothing scanned");
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const refused = await runCli([...at, "--json", "consume", "h", "--partition", "0", "--max", "1"]);
    expect(refused.exitCode).toBe(1);
    const error = JSON.parse(refused.stderr).error;
    expect(error.code).toBe("STORAGE_ERROR");
    expect(error.message).toContain(`refusing segment <data-dir>/h-0/${segments[0]}`);
    expect(error.message).toContain(
      `; offsets 0..${secondBase - 1} are unreadable until \`booblik-cli segment repair\` writes the header again (it does when intact records follow), readable again from offset ${secondBase}`,
    );
    // The segments after it are served, with their records.
    const served = await consumeH(at, secondBase, 2);
    expect(served.exitCode).toBe(0);
    expect(served.stdout).toBe(`${lines[secondBase]}\n${lines[secondBase + 1]}\n`);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  const verify = await runCli(["segment", "verify", dataDir]);
  expect(verify.exitCode).toBe(3);
  expect(verify.stdout).toContain(`damage: ${path.join(partitionDir, segments[0]!)}`);

  // The newest one: its records are intact, so the start writes its header again from the file
  // name (before, the start refused the partition, and so did `segment repair`).
  const newest = path.join(partitionDir, segments.at(-1)!);
  const newestBase = Number.parseInt(segments.at(-1)!, 10);
  flipHeaderByte(newest);
  {
    await using broker = await startBroker(dataDir);
    expect(broker.startLine).toContain(`HEADER REWRITTEN: ${newest} (`);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    const served = await consumeH(at, newestBase, 1);
    expect(served.stdout).toBe(`${lines[newestBase]}\n`);
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  // The sealed one: `segment repair` scans every segment and writes its header again.
  const repaired = await runCli(["segment", "repair", dataDir]);
  expect(repaired.exitCode).toBe(0);
  expect((await runCli(["segment", "verify", dataDir])).exitCode).toBe(0);
  await using broker = await startBroker(dataDir);
  const at = ["--broker", `127.0.0.1:${broker.port}`];
  const all = await runCli([...at, "consume", "h", "--partition", "0"]);
  expect(all.stdout).toBe(`${lines.join("\n")}\n`);
  expect(
    fs
      .readdirSync(partitionDir)
      .filter((name) => name.endsWith(".log"))
      .sort(),
  ).toEqual(segments);
});
