/**
 * Recovery speed: `Segment.openForAppend` over a set of 128 MiB segments (every entry's lengths,
 * magic, offsets and frame CRC32C checked, the index rebuilt, the valid prefix forced), in the three
 * states a crash can leave the data in:
 *
 * - unforced: the set was just written and never forced (a broker under `append` killed right
 *   after writing): much of it is dirty in the page cache, and recovery's fdatasync writes it back;
 * - warm: the same set again, now on disk and in the page cache (a crash after writeback ran);
 * - cold: the page cache dropped first (`/proc/sys/vm/drop_caches`, needs root): a reboot.
 *
 * With `--stages=yes`, two more rows over the warm set, with this checkout's code whatever the
 * variant: the preads alone, and the preads with `scanEntries` checking every frame CRC (no index,
 * no fdatasync): where a warm recovery's time goes.
 *
 *   bun bench/recovery.bench.ts [--baseline=<checkout>] [--gib=1] [--rounds=5] [--records=100,1024]
 *
 * Until 2026-12-01 `bench/storage.bench.ts recovery` printed the unforced state as "warm": its
 * 1.0-1.2 GiB/s were mostly the fdatasync writing the just-written GiB back (docs/benchmarks.md,
 * "Recovery speed"). Every run is a fresh process that writes its own set (100 records of
 * `recordBytes` random bytes per batch, one entry per batch, file write path) with this checkout's
 * code and recovers it with the code of the checkout under test; with `--baseline` (a checkout of an
 * earlier commit) A and B alternate, each round in the other order. Figures: GiB/s of wall time
 * (what a restart waits) and of the process's CPU time (user + system: what the scan costs, less
 * disturbed by a shared machine), median (range) over the rounds. Data goes to BOOBLIK_BENCH_DIR
 * (default ./bench-data), never to tmpfs.
 */
import fs from "node:fs";
import path from "node:path";
import type { Offset } from "../src/domain/ids.ts";
import { ENTRY_HEADER_BYTES, RECOVERY_CHUNK_BYTES, SEGMENT_HEADER_BYTES } from "../src/domain/limits.ts";
import { RecordBatchWriter } from "../src/record/batch.ts";
import { newEntryScanResult, scanEntries } from "../src/record/entries.ts";
import { disk } from "../src/storage/disk.ts";
import { Segment as WritingSegment, segmentConfig as writingConfig } from "../src/storage/segment.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage:
    "bun bench/recovery.bench.ts [--baseline=<checkout>] [--gib=1] [--rounds=5] [--records=100,1024] [--stages=no|yes] (--child=<checkout>,<recordBytes>,<dir> internal)",
  options: { baseline: "", gib: "1", rounds: "5", records: "100,1024", child: "", stages: "no" },
});
const WITH_STAGES = args.text("stages") === "yes";
const GIB = args.number("gib");
const BATCH_RECORDS = 100;
const STATES = ["unforced", "warm", "warm: pread only", "warm: pread + scanEntries", "cold"] as const;
/** The two stage rows (with `--stages=yes`): what a warm recovery costs without its bookkeeping. */
const STAGES: readonly State[] = ["warm: pread only", "warm: pread + scanEntries"];
type State = (typeof STATES)[number];
interface Measurement {
  bytes: number;
  wallSeconds: number;
  cpuSeconds: number;
}
type ChildResult = Partial<Record<State, Measurement>>;

function writeSet(directory: string, recordBytes: number): void {
  const config = writingConfig({ writeMode: "file" });
  const writer = new RecordBatchWriter();
  writer.begin();
  const timestamp = Date.now();
  for (let i = 0; i < BATCH_RECORDS; i++)
    writer.add({ key: null, value: crypto.getRandomValues(new Uint8Array(recordBytes)), timestamp });
  const batch = writer.finish().slice();
  let segment = WritingSegment.create(directory, 0 as Offset, config);
  let written = 0;
  while (written < GIB * 2 ** 30) {
    if (!segment.hasRoomFor(ENTRY_HEADER_BYTES + batch.length)) {
      segment.close();
      segment = WritingSegment.create(directory, segment.nextOffset, config);
    }
    segment.append(batch);
    written += ENTRY_HEADER_BYTES + batch.length;
  }
  segment.close(); // not forced: the "unforced" state
}

function dropPageCache(): boolean {
  try {
    fs.writeFileSync("/proc/sys/vm/drop_caches", "3");
    return true;
  } catch {
    return false;
  }
}

const stageChunk = new Uint8Array(RECOVERY_CHUNK_BYTES);
const stageScan = newEntryScanResult();

/**
 * A stage row (this checkout's code): the file's entries read in RECOVERY_CHUNK_BYTES preads, and
 * with `scan` walked by `scanEntries` with every frame CRC (no index, no fdatasync). Returns bytes.
 */
function readStage(file: string, scan: boolean): number {
  const fd = fs.openSync(file, "r");
  try {
    const size = fs.fstatSync(fd).size;
    let position = SEGMENT_HEADER_BYTES;
    while (position < size) {
      const got = disk.preadFull(fd, stageChunk, 0, Math.min(stageChunk.length, size - position), position);
      if (!scan) {
        position += got;
        continue;
      }
      scanEntries(stageChunk, 0, got, { framing: "framed", verifyCrc: true }, stageScan);
      if (stageScan.stop !== "end" && stageScan.stop !== "truncated")
        throw new Error(`${file}: ${stageScan.stop}`);
      position += stageScan.endPosition;
    }
    return position - SEGMENT_HEADER_BYTES;
  } finally {
    fs.closeSync(fd);
  }
}

/** One child: write a set, recover it in each state with `checkout`'s Segment. */
async function child(checkout: string, recordBytes: number, directory: string): Promise<ChildResult> {
  const module = (await import(path.join(checkout, "src/storage/segment.ts"))) as {
    Segment: {
      openForAppend(
        file: string,
        config: unknown,
      ): { segment: { close(): void }; report: { scannedBytes: number; stop: string } };
    };
    segmentConfig(partial: { writeMode: "file" }): unknown;
  };
  const config = module.segmentConfig({ writeMode: "file" });
  writeSet(directory, recordBytes);
  const files = fs
    .readdirSync(directory)
    .sort()
    .map((name) => path.join(directory, name));
  const result: ChildResult = {};
  for (const state of STATES) {
    if (STAGES.includes(state) && !WITH_STAGES) continue;
    if (state === "cold" && !dropPageCache()) continue;
    const cpuBefore = process.cpuUsage();
    const start = performance.now();
    let bytes = 0;
    for (const file of files) {
      if (STAGES.includes(state)) {
        bytes += readStage(file, state === "warm: pread + scanEntries");
        continue;
      }
      const { segment, report } = module.Segment.openForAppend(file, config);
      if (report.stop !== "end") throw new Error(`${file}: recovery stopped at ${report.stop}`);
      bytes += report.scannedBytes;
      segment.close();
    }
    const wallSeconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    result[state] = { bytes, wallSeconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  }
  return result;
}

const childArgument = args.text("child");
if (childArgument !== "") {
  const [checkout, recordBytes, directory] = childArgument.split(",");
  console.log(JSON.stringify(await child(checkout!, Number(recordBytes), directory!)));
  process.exit(0);
}

function runChild(checkout: string, recordBytes: number, root: string): ChildResult {
  const directory = fs.mkdtempSync(path.join(root, `set-${recordBytes}-`));
  try {
    const result = Bun.spawnSync(
      [
        process.execPath,
        import.meta.path,
        `--child=${checkout},${recordBytes},${directory}`,
        `--gib=${GIB}`,
        `--stages=${args.text("stages")}`,
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
    if (!result.success) throw new Error(`child run for ${checkout} failed (exit ${result.exitCode})`);
    return JSON.parse(result.stdout.toString()) as ChildResult;
  } finally {
    fs.rmSync(directory, { recursive: true, force: true });
  }
}

function summary(values: number[]): string {
  if (values.length === 0) return "-";
  return medianRange(values, 2);
}

const rounds = args.number("rounds");
const baseline = args.text("baseline");
const here = path.resolve(import.meta.dir, "..");
const recordSizes = args
  .text("records")
  .split(",")
  .map((text) => Number(text));
const directory = measurementDirectory("recovery");
try {
  console.log(
    `# booblik recovery benchmark\n\n${describeMachine(directory.fileSystem)}\ndata: ${directory.path}`,
  );
  console.log(
    `Segment.openForAppend over ${GIB} GiB of 128 MiB segments (file path; ${BATCH_RECORDS} records per batch, one entry per batch), ` +
      `${rounds} rounds, each run a fresh process` +
      (baseline === "" ? "" : `; A = ${baseline}, B = this checkout, alternating`) +
      "\nGiB/s of wall time and of CPU time (user + system), median (range)\n",
  );
  const variants =
    baseline === ""
      ? [["B", here]]
      : [
          ["A", path.resolve(baseline)],
          ["B", here],
        ];
  console.log(
    `| record B | state | ${variants.map(([name]) => `${name} GiB/s wall | ${name} GiB/s CPU`).join(" | ")} |`,
  );
  console.log(`|---|---|${variants.map(() => "---|---|").join("")}`);
  for (const recordBytes of recordSizes) {
    const figures = new Map<string, { wall: number[]; cpu: number[] }>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const [name, checkout] of order) {
        const result = runChild(checkout!, recordBytes, directory.path);
        for (const state of STATES) {
          const measured = result[state];
          if (measured === undefined) continue;
          const key = `${name} ${state}`;
          const entry = figures.get(key) ?? { wall: [], cpu: [] };
          entry.wall.push(measured.bytes / 2 ** 30 / measured.wallSeconds);
          entry.cpu.push(measured.bytes / 2 ** 30 / measured.cpuSeconds);
          figures.set(key, entry);
        }
      }
    }
    for (const state of STATES) {
      if (STAGES.includes(state) && !WITH_STAGES) continue;
      const cells = variants.map(([name]) => {
        const entry = figures.get(`${name} ${state}`);
        if (entry === undefined) return "- | -";
        return `${summary(entry.wall)} | ${summary(entry.cpu)}`;
      });
      if (state === "cold" && cells.every((cell) => cell === "- | -")) {
        console.log(`| ${recordBytes} | ${state} | (cannot drop the page cache without root) |`);
        continue;
      }
      console.log(`| ${recordBytes} | ${state} | ${cells.join(" | ")} |`);
    }
  }
} finally {
  directory.remove();
}
