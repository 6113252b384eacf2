/**
 * A kill -9 at any moment of `booblik-cli migrate` leaves a usable directory at `<dir>` (the
 * original, byte for byte, or the complete format-2 copy), and running migrate again finishes the
 * job. Two ways in: a child that kills itself right before each of its changes on disk in turn
 * (every step of the run, then a second kill somewhere in the rerun for some of them), and the real
 * CLI killed with SIGKILL from outside when its progress reaches a point the test polls for.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { DataDirLock } from "../../src/broker/data-dir-lock.ts";
import { MIGRATION_MARKER, migrateFormat1 } from "../../src/storage/migrate-format1.ts";
import { CLI, runCli } from "../helpers/cli-process.ts";
import { killAtEnd } from "../helpers/process.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import {
  type ExpectedRecord,
  expectBrokerReads,
  expectMigrated,
  readFormat2Partition,
  snapshotTree,
  writeFormat1Partition,
  writeStandardFixture,
  writeTopicFile,
} from "./format1-fixture.ts";

setDefaultTimeout(300_000);

const CHILD = path.resolve(import.meta.dir, "migrate-child.ts");

async function runChild(dataDir: string, killAt: number): Promise<{ killed: boolean; steps: number }> {
  const child = Bun.spawn([process.execPath, CHILD, dataDir, String(killAt)], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (child.signalCode === "SIGKILL") return { killed: true, steps: killAt };
  if (child.exitCode !== 0) throw new Error(`migrate child failed (exit ${child.exitCode}): ${stderr}`);
  return { killed: false, steps: (JSON.parse(stdout) as { steps: number }).steps };
}

/**
 * After a kill: `<dir>` is the original (the same files, the same bytes) or the complete new tree
 * (every partition reads back whole in format 2 with every record; the marker may still be there).
 */
function expectUsable(
  dataDir: string,
  original: Map<string, string>,
  expected: Map<string, ExpectedRecord[]>,
  context: string,
): "old" | "new" {
  const now = snapshotTree(dataDir);
  const same =
    now.size === original.size && [...original].every(([file, summary]) => now.get(file) === summary);
  if (same) return "old";
  try {
    for (const [name, records] of expected) {
      const read = readFormat2Partition(path.join(dataDir, name)).flatMap((segment) => segment.records);
      expect(read.map((r) => r.offset)).toEqual(records.map((r) => r.offset));
      expect(read.map((r) => Buffer.from(r.value).toString("hex"))).toEqual(
        records.map((r) => Buffer.from(r.value).toString("hex")),
      );
    }
    for (const file of ["users.json", "notes/readme.txt", "events-0/operator-note.txt"])
      expect(now.get(file)).toBe(original.get(file));
  } catch (error) {
    throw new Error(`${context}: ${dataDir} is neither the original nor the complete new tree: ${error}`);
  }
  return "new";
}

function expectFinished(
  root: string,
  dataDir: string,
  original: Map<string, string>,
  expected: Map<string, ExpectedRecord[]>,
): void {
  expectMigrated(dataDir, expected);
  expect(snapshotTree(`${dataDir}.format1-backup`)).toEqual(original);
  expect(fs.readdirSync(root).sort()).toEqual(["data", "data.format1-backup"]);
}

describe("kill -9 during booblik-cli migrate", () => {
  test("before every change on disk in turn, and again during some reruns", async () => {
    const seed = testSeed();
    const random = new Random(seed);
    using dir = tempDir("migrate-kill");
    const fresh = (): { root: string; dataDir: string } => {
      const root = path.join(dir.path, "run");
      fs.rmSync(root, { recursive: true, force: true });
      const dataDir = path.join(root, "data");
      writeStandardFixture(dataDir);
      return { root, dataDir };
    };
    let { root, dataDir } = fresh();
    const { expected } = writeStandardFixture(path.join(dir.path, "reference"));
    const original = snapshotTree(dataDir);
    const complete = await runChild(dataDir, 0);
    expect(complete.killed).toBe(false);
    expectFinished(root, dataDir, original, expected);
    const totalSteps = complete.steps;
    expect(totalSteps).toBeGreaterThan(40);

    const seen = { old: 0, new: 0, secondKills: 0, reused: 0 };
    for (let killAt = 1; killAt <= totalSteps; killAt++) {
      ({ root, dataDir } = fresh());
      const context = `seed ${seed}, killed before step ${killAt} of ${totalSteps}`;
      const first = await runChild(dataDir, killAt);
      expect(first.killed).toBe(true);
      seen[expectUsable(dataDir, original, expected, context)]++;
      let done = false;
      if (killAt % 3 === 0) {
        // Killed again, somewhere in the rerun (which may finish first: then it is just done).
        const again = await runChild(dataDir, random.int(1, totalSteps));
        if (again.killed) seen.secondKills++;
        else done = true;
        expectUsable(dataDir, original, expected, `${context}, then killed in the rerun`);
      }
      // Every fourth through the real CLI, the others in this process.
      if (killAt % 4 === 0) {
        const rerun = await runCli(["migrate", dataDir]);
        expect([context, rerun.exitCode, rerun.stderr]).toEqual([context, 0, ""]);
        // A complete copy swapped in by the rerun reports what the run that built it did.
        if (rerun.stdout.includes("reused the complete copy")) {
          seen.reused++;
          expect(rerun.stdout).toContain("5 partitions, 9 segments, 215 records");
        }
      } else {
        const report = migrateFormat1(dataDir, { lockDirectory: (d) => DataDirLock.acquire(d) });
        expect([context, report.outcome]).toEqual([
          context,
          done ? "nothing-to-do" : expect.stringMatching(/^(migrated|finished)$/),
        ]);
      }
      expectFinished(root, dataDir, original, expected);
      if (killAt % 8 === 0) await expectBrokerReads(dataDir, expected);
    }
    // Both outcomes of a kill happened: before the switch (old) and after it (new).
    expect(seen.old).toBeGreaterThan(0);
    expect(seen.new).toBeGreaterThan(0);
    expect(seen.secondKills).toBeGreaterThan(0);
  });

  test("the real CLI killed from outside when its progress reaches a point", async () => {
    using dir = tempDir("migrate-kill");
    // Large enough that the conversion takes a while: 4 partitions of 3 MiB in 1 MiB segments.
    const build = (dataDir: string): Map<string, ExpectedRecord[]> => {
      const expected = new Map<string, ExpectedRecord[]>();
      writeTopicFile(dataDir, "big", { partitions: 4 });
      for (let partition = 0; partition < 4; partition++) {
        const segments = Array.from({ length: 3 }, (_, s) => ({
          base: s * 2000,
          payloads: Array.from({ length: 2000 }, (_, i) => new Uint8Array(500).fill((s * 2000 + i) & 0xff)),
          mtimeMs: 1_700_000_000_000 + s,
        }));
        writeFormat1Partition(dataDir, { topic: "big", partition, segments });
        expected.set(
          `big-${partition}`,
          segments.flatMap((segment) =>
            segment.payloads.map((value, i) => ({
              offset: segment.base + i,
              timestamp: segment.mtimeMs,
              value,
            })),
          ),
        );
      }
      return expected;
    };
    const points: [string, (dataDir: string) => boolean][] = [
      ["the copy exists", (d) => fs.existsSync(`${d}.migrating`)],
      [
        "the first partition is being written",
        (d) => fs.existsSync(`${d}.migrating/big-0/00000000000000002000.log`),
      ],
      ["the third partition is being written", (d) => fs.existsSync(`${d}.migrating/big-2`)],
      [
        "the copy is marked complete",
        (d) => fs.readFileSync(path.join(`${d}.migrating`, MIGRATION_MARKER), "utf8").includes("complete"),
      ],
      ["the switch happened", (d) => fs.existsSync(path.join(d, MIGRATION_MARKER))],
      ["the backup exists", (d) => fs.existsSync(`${d}.format1-backup`)],
    ];
    for (const [what, reached] of points) {
      const root = path.join(dir.path, "run");
      fs.rmSync(root, { recursive: true, force: true });
      const dataDir = path.join(root, "data");
      const expected = build(dataDir);
      const original = snapshotTree(dataDir);
      const child = Bun.spawn([process.execPath, CLI, "migrate", dataDir], {
        stdout: "ignore",
        stderr: "pipe",
      });
      await using _child = killAtEnd(child);
      await waitUntil(
        () => {
          try {
            if (reached(dataDir)) return true;
          } catch {
            // Not there yet (a file between its creation and its content).
          }
          return child.exitCode !== null;
        },
        what,
        60_000,
        1,
      );
      child.kill("SIGKILL");
      await child.exited;
      expectUsable(dataDir, original, expected, `killed when ${what}`);
      const rerun = await runCli(["migrate", dataDir]);
      expect([what, rerun.exitCode, rerun.stderr]).toEqual([what, 0, ""]);
      expectMigrated(dataDir, expected);
      expect(snapshotTree(`${dataDir}.format1-backup`)).toEqual(original);
      expect(fs.readdirSync(root).sort()).toEqual(["data", "data.format1-backup"]);
      await expectBrokerReads(dataDir, expected);
    }
  });
});
