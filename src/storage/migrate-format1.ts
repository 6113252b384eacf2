/**
 * `booblik-cli migrate <dir>`: the offline conversion of a format-1 data directory (one frame per
 * record, offsets implied by position) into format 2 (one frame per Kafka RecordBatch v2, offsets
 * stamped in the batch), keeping every offset and every payload (issue 11).
 *
 * Owns: reading format-1 segments (the last user of codec.ts's `scanRecords`), deciding what in them
 * is damage and what is a torn tail, writing the format-2 copy, and the crash-safe switch from the
 * old directory to the new one. It is an offline tool like inspect.ts and reads and writes files
 * directly, not through the Disk seam: nothing here runs inside a broker.
 *
 * What a record becomes: key null, value = the payload, no headers, timestamp = the modification
 * time of the old segment file in ms (format 1 kept no time; the file's mtime is the time of the
 * last append to it, the time retention by age looked at). Consecutive records of a segment are
 * grouped into batches of at most `MIGRATE_BATCH_RECORDS_MAX` records and about
 * min(`MIGRATE_BATCH_BYTES_MAX`, the topic's maxRecordBytes) bytes (a record larger than that gets a
 * batch of its own); a batch never crosses a segment. Each segment keeps its file name and base
 * offset, so every segment boundary stays where it was. Stamped: BaseOffset = the record's offset,
 * PartitionLeaderEpoch = −1.
 *
 * The directory around the segments is copied as it is (user files, anything else; modes kept, and
 * owners too when run as root), except: `.lock` (the new tree gets its own), each partition's
 * `checkpoint.json` (its positions are format-1 positions; without one the first start checks every
 * segment, which is also what proves the new files sound), and topic files, whose `maxRecordBytes`
 * changes meaning (`convertTopics`). A record above its topic's format-1 `maxRecordBytes` is damage,
 * as format-1 recovery judged it.
 *
 * What counts as damage (refused, every case reported with file, byte position and offset), and what
 * does not (dropped and reported, as the format-1 broker's recovery would have dropped it):
 * - a sealed (not newest) segment whose records stop before the end of the file, other than at a run
 *   of zeros up to the end (the unused tail of a mapped segment): damage;
 * - a segment whose base offset is not where the previous one ended (a hole), or whose header is
 *   bad: damage;
 * - the newest segment's tail after its last whole record, when it lies after the partition's
 *   recovery point (or there is no checkpoint): a torn write (a record cut by the end of the file,
 *   or a zero length: what a kill leaves on either write path) is dropped, as recovery would have;
 *   a CRC mismatch or an impossible length there is damage unless `dropDamagedTail` (then dropped
 *   with the rest of the segment, as the format-1 recovery did). Before the recovery point: damage;
 * - a newest segment with no header (shorter than one, or zeros: a kill right after a roll): written
 *   as a header-only segment with the base offset of its name, as it held no record;
 * - records ending before the recovery point's `nextOffset`: durable records lost, damage.
 *
 * Crash safety (a kill -9 at any moment leaves a usable directory at `<dir>`, and a rerun finishes):
 * 1. the data-directory lock of `<dir>` is held throughout (a running broker is refused);
 * 2. the new tree is built at `<dir>.migrating`, its lock held too, with a marker file saying
 *    "building"; every file and directory in it is fsynced, then the marker says "complete" (with a
 *    fingerprint of the source tree), then the parent directory is fsynced;
 * 3. renameat2(RENAME_EXCHANGE) swaps `<dir>` and `<dir>.migrating` in one step, and the parent is
 *    fsynced: before it `<dir>` is the old tree, after it the complete new one;
 * 4. the old tree (now at `<dir>.migrating`) is renamed to `<dir>.format1-backup`, then the marker is
 *    removed from `<dir>`.
 * A rerun reads the state from the names and markers: a complete marker in `<dir>` means step 4 is
 * left; a complete `<dir>.migrating` whose fingerprint matches the source is swapped in; a
 * `<dir>.migrating` still building is removed and the build restarts.
 */
import fs from "node:fs";
import path from "node:path";
import { crc32c } from "../../ffi/crc32c.ts";
import {
  availableBytes,
  closeFile,
  exchangePaths,
  fileSize,
  fsyncDirectory,
  ioError,
  openFile,
  preadFull,
  pwriteAll,
  removeDirectoryTree,
  renameFile,
  unlinkFile,
  writeFileAtomicallyNow,
} from "../../ffi/file.ts";
import {
  BadSegmentFileError,
  BooblikError,
  InvalidArgumentError,
  IoError,
  SegmentFormatVersionError,
} from "../domain/errors.ts";
import type { Offset } from "../domain/ids.ts";
import {
  MIGRATE_BATCH_BYTES_MAX,
  MIGRATE_BATCH_RECORDS_MAX,
  MIGRATE_READ_CHUNK_BYTES,
  MIGRATE_SPACE_FACTOR,
  MIGRATE_SPACE_SLACK_BYTES,
  MIGRATE_WRITE_BUFFER_BYTES,
  RECORD_BATCH_BYTES_LIMIT,
  RECORD_BATCH_OVERHEAD_BYTES,
  RECORD_HEADER_BYTES,
  RECORD_PAYLOAD_BYTES_LIMIT,
  SEGMENT_BYTES_MAX,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { RecordBatchWriter, type RecordInput } from "../record/batch.ts";
import { newScanResult, readUint32, scanRecords } from "../record/codec.ts";
import { writeFramedEntry } from "../record/entries.ts";
import {
  decodeSegmentHeader,
  encodeSegmentHeader,
  parseSegmentFileName,
  segmentFileName,
} from "./segment-header.ts";

/** The format a segment file is converted from, and the one it is converted to. */
const FROM_VERSION = 1;
const TO_VERSION = 2;

export const MIGRATING_SUFFIX = ".migrating";
export const BACKUP_SUFFIX = ".format1-backup";
/** In the new tree while it is built and until the switch is finished; never in a finished one. */
export const MIGRATION_MARKER = ".format2-migration";
const PROBE_SUFFIXES = [".exchange-probe-1", ".exchange-probe-2"] as const;
/** The data-directory lock file of the broker (src/broker/data-dir-lock.ts): never copied. */
const LOCK_FILE = ".lock";
const CHECKPOINT_FILE = "checkpoint.json";
const TOPICS_DIRECTORY = "topics";
const TOPIC_FILE_SUFFIX = ".json";
/**
 * What one record of a `value`-byte payload adds around it as a batch of its own: the 61-byte batch
 * header and the record's fields (Length ≤ 4 varint bytes below 2^27, Attributes 1, TimestampDelta 1,
 * OffsetDelta 1, null key 1, ValueLength ≤ 4, HeaderCount 1: at most 13). 16 leaves room.
 */
const ONE_RECORD_BATCH_OVERHEAD_BYTES = RECORD_BATCH_OVERHEAD_BYTES + 16;
const PARTITION_DIRECTORY = /^(.+)-(\d+)$/;

/** A lock held on a directory (the broker's data-directory lock). */
export interface DirectoryLock {
  release(): void;
}

export interface MigrationOptions {
  /**
   * Takes the data-directory lock of a directory (creating its `.lock`), throwing when a broker holds
   * it. The broker layer owns that lock (src/broker/data-dir-lock.ts); storage cannot import it, so
   * the caller passes `DataDirLock.acquire`.
   */
  lockDirectory: (directory: string) => DirectoryLock;
  /** Called before every change on disk, with what it is about to do (tests kill the process here). */
  onStep?: (step: string) => void;
  /**
   * Drop a damaged tail (a CRC mismatch or an impossible length) of a partition's newest segment
   * after its recovery point, with what follows it in that segment, as the format-1 broker's
   * recovery would have; without it that is refused as damage. A torn tail is always dropped.
   */
  dropDamagedTail?: boolean;
  /** Called with the bytes of old segments read so far, after each chunk. */
  onProgress?: (bytesRead: number, bytesTotal: number) => void;
}

export interface MigrationReport {
  /**
   * "migrated": converted and switched now; "finished": a run killed after its switch was completed;
   * "nothing-to-do": the directory holds no format-1 segment.
   */
  outcome: "migrated" | "finished" | "nothing-to-do";
  dataDir: string;
  /** Where the format-1 original is kept (after "migrated" or "finished"). */
  backupDir: string;
  partitions: number;
  segments: number;
  records: number;
  batches: number;
  bytesRead: number;
  bytesWritten: number;
  /** Things done that an operator should know: torn tails dropped, crash leftovers, reused work. */
  notes: string[];
}

export interface Damage {
  file: string;
  /** Byte position in the file. */
  position: number;
  /** The offset the record at `position` would have had. */
  offset: number;
  reason: string;
}

/** The source holds damage: nothing was changed, every place is listed. */
export class MigrationDamageError extends BooblikError {
  readonly damage: Damage[];
  constructor(dataDir: string, damage: Damage[]) {
    const list = damage
      .map((d) => `  ${d.file} at byte ${d.position} (offset ${d.offset}): ${d.reason}`)
      .join("\n");
    super(
      "BAD_SEGMENT_FILE",
      `refusing to migrate ${dataDir}: ${damage.length} damaged place${damage.length === 1 ? "" : "s"} ` +
        `(nothing was changed: restore the damaged files from a copy, or see docs/operations.md, ` +
        `"Migrating a format-1 data directory"):\n${list}`,
    );
    this.damage = damage;
  }
}

interface Marker {
  version: 1;
  state: "building" | "complete";
  /** The source tree's fingerprint when the build started (names, sizes, mtimes). */
  fingerprint: string;
  /** With "complete": what the build did, for the report of a run that reuses it. */
  totals?: Totals;
}

type Totals = Pick<
  MigrationReport,
  "partitions" | "segments" | "records" | "batches" | "bytesRead" | "bytesWritten" | "notes"
>;

export function migrateFormat1(dataDirArgument: string, options: MigrationOptions): MigrationReport {
  const dataDir = path.resolve(dataDirArgument);
  const migrating = `${dataDir}${MIGRATING_SUFFIX}`;
  const backup = `${dataDir}${BACKUP_SUFFIX}`;
  const parent = path.dirname(dataDir);
  const step = options.onStep ?? (() => undefined);
  const report: MigrationReport = {
    outcome: "nothing-to-do",
    dataDir,
    backupDir: backup,
    partitions: 0,
    segments: 0,
    records: 0,
    batches: 0,
    bytesRead: 0,
    bytesWritten: 0,
    notes: [],
  };
  if (!isDirectory(dataDir)) throw new InvalidArgumentError(`${dataDir} is not a directory`);
  const locks: DirectoryLock[] = [options.lockDirectory(dataDir)];
  try {
    // A run killed after its switch: `<dir>` is the new tree, still marked. Finish steps 4.
    const marker = readMarker(dataDir);
    if (marker?.state === "complete") {
      finishAfterSwitch(dataDir, migrating, backup, step, report);
      report.outcome = "finished";
      report.notes.push("finished a migration that was interrupted after its switch");
      return report;
    }
    const survey = surveySegments(dataDir);
    if (survey.versions.get(FROM_VERSION) === undefined) {
      const other = survey.versions.get(TO_VERSION);
      report.notes.push(
        other !== undefined
          ? `${dataDir} is in format ${TO_VERSION} already`
          : `${dataDir} holds no segment files`,
      );
      if (pathExists(migrating))
        report.notes.push(`${migrating} is left from something else and was not touched`);
      return report;
    }
    if (survey.versions.size > 1) {
      const found = [...survey.versions].map(([version, file]) => `format ${version} in ${file}`).join(", ");
      throw new InvalidArgumentError(
        `refusing to migrate ${dataDir}: it mixes segment formats (${found}); each data directory is in one format`,
      );
    }
    if (pathExists(backup))
      throw new InvalidArgumentError(
        `refusing to migrate ${dataDir}: ${backup} exists (the backup of an earlier migration?); move it away first`,
      );
    probeExchange(dataDir, step);
    const fingerprint = `${fingerprintOf(dataDir)}${options.dropDamagedTail === true ? "+drop-damaged-tail" : ""}`;
    let reuse = false;
    if (pathExists(migrating)) {
      const previous = readMarker(migrating);
      // A copy killed before its marker was written holds at most the lock and the marker's
      // temporary file; anything more without a marker is someone else's.
      const ours = (name: string) => name === LOCK_FILE || name === `${MIGRATION_MARKER}.tmp`;
      if (previous === undefined && !fs.readdirSync(migrating).every(ours))
        throw new InvalidArgumentError(
          `refusing to migrate ${dataDir}: ${migrating} exists and was not made by booblik-cli migrate; move it away first`,
        );
      if (previous?.state === "complete" && previous.fingerprint === fingerprint) {
        reuse = true;
        if (previous.totals !== undefined) Object.assign(report, previous.totals);
        report.notes.push(`reused the complete copy an interrupted run left at ${migrating}`);
      } else {
        step(`remove ${migrating}`);
        removeDirectoryTree(migrating);
        fsyncDirectory(parent);
        report.notes.push(
          `restarted: removed the copy an interrupted run left at ${migrating} (unfinished, or made from files that changed since)`,
        );
      }
    }
    if (reuse) {
      locks.push(options.lockDirectory(migrating));
    } else {
      checkSpace(dataDir, parent);
      try {
        build(dataDir, migrating, fingerprint, options, locks, report);
      } catch (error) {
        // Nothing of a failed build may look like a finished one; the source was never touched.
        for (const lock of locks.splice(1)) lock.release();
        try {
          removeDirectoryTree(migrating);
        } catch {
          // Best effort: the rerun removes an unfinished copy anyway.
        }
        throw error;
      }
    }
    step(`exchange ${migrating} and ${dataDir}`);
    exchangePaths(migrating, dataDir);
    fsyncDirectory(parent);
    finishAfterSwitch(dataDir, migrating, backup, step, report);
    report.outcome = "migrated";
    return report;
  } finally {
    for (const lock of locks) lock.release();
  }
}

/** Step 4: the old tree moves to the backup name, then the marker goes. Idempotent. */
function finishAfterSwitch(
  dataDir: string,
  migrating: string,
  backup: string,
  step: (what: string) => void,
  report: MigrationReport,
): void {
  if (pathExists(migrating)) {
    if (pathExists(backup))
      throw new InvalidArgumentError(
        `cannot finish the migration of ${dataDir}: the format-1 original is at ${migrating} and ${backup} exists; move ${backup} away and run migrate again`,
      );
    step(`rename ${migrating} to ${backup}`);
    renameFile(migrating, backup);
    fsyncDirectory(path.dirname(dataDir));
  }
  const markerPath = path.join(dataDir, MIGRATION_MARKER);
  if (pathExists(markerPath)) {
    step(`remove ${markerPath}`);
    unlinkFile(markerPath);
    fsyncDirectory(dataDir);
  }
  report.backupDir = backup;
}

// --- Looking at the source --------------------------------------------------------------------------

/** Which segment format versions the partition directories hold, with one file of each. */
function surveySegments(dataDir: string): { versions: Map<number, string> } {
  const versions = new Map<number, string>();
  for (const directory of partitionDirectories(dataDir)) {
    for (const name of fs.readdirSync(directory)) {
      if (parseSegmentFileName(name) === undefined) continue;
      const file = path.join(directory, name);
      const version = segmentVersionOf(file);
      if (version !== undefined && !versions.has(version)) versions.set(version, file);
    }
  }
  return { versions };
}

/**
 * The format version a segment file's header claims, or undefined when it has no valid header
 * (none yet: a crash leftover; or a bad one, which the conversion reports as damage).
 */
function segmentVersionOf(file: string): number | undefined {
  const header = new Uint8Array(SEGMENT_HEADER_BYTES);
  const fd = openFile(file, "read");
  let got: number;
  try {
    got = preadFull(fd, header, 0, SEGMENT_HEADER_BYTES, 0, file);
  } finally {
    closeFile(fd, file);
  }
  if (got < SEGMENT_HEADER_BYTES || header.every((byte) => byte === 0)) return undefined;
  try {
    decodeSegmentHeader(header, got, file, undefined, FROM_VERSION);
    return FROM_VERSION;
  } catch (error) {
    return error instanceof SegmentFormatVersionError ? error.formatVersion : undefined;
  }
}

/**
 * The first format-1 segment at `target` (a segment file, a partition directory or a data
 * directory), or undefined: lets `segment dump`/`verify` say "migrate it" instead of "damaged".
 */
export function findFormat1Segment(target: string): string | undefined {
  const stat = fs.statSync(target);
  if (stat.isFile()) return segmentVersionOf(target) === FROM_VERSION ? target : undefined;
  const directories = fs.readdirSync(target).some((name) => parseSegmentFileName(name) !== undefined)
    ? [target]
    : partitionDirectories(target);
  for (const directory of directories)
    for (const name of fs.readdirSync(directory).sort()) {
      if (parseSegmentFileName(name) === undefined) continue;
      const file = path.join(directory, name);
      if (segmentVersionOf(file) === FROM_VERSION) return file;
    }
  return undefined;
}

function partitionDirectories(dataDir: string): string[] {
  return fs
    .readdirSync(dataDir)
    .filter((name) => PARTITION_DIRECTORY.test(name))
    .map((name) => path.join(dataDir, name))
    .filter(isDirectory)
    .sort();
}

/** Names, sizes and modification times of every file below `dataDir` but the lock and the marker. */
function fingerprintOf(dataDir: string): string {
  const parts: string[] = [];
  const walk = (directory: string, relative: string) => {
    for (const name of fs.readdirSync(directory).sort()) {
      if (relative === "" && (name === LOCK_FILE || name === MIGRATION_MARKER)) continue;
      const full = path.join(directory, name);
      const stat = fs.lstatSync(full);
      if (stat.isDirectory()) walk(full, `${relative}${name}/`);
      else parts.push(`${relative}${name}\t${stat.size}\t${stat.mtimeMs}`);
    }
  };
  walk(dataDir, "");
  const bytes = new TextEncoder().encode(parts.join("\n"));
  return `${crc32c(bytes, 0, bytes.length).toString(16)}-${parts.length}`;
}

/** Refuses early when the file system clearly cannot hold the copy (a full disk mid-way only wastes time). */
function checkSpace(dataDir: string, parent: string): void {
  let needed = 0;
  const walk = (directory: string) => {
    for (const name of fs.readdirSync(directory)) {
      const stat = fs.lstatSync(path.join(directory, name));
      if (stat.isDirectory()) walk(path.join(directory, name));
      // A mapped segment is sized to its capacity but holds blocks only where it was written.
      else needed += Math.min(stat.size, stat.blocks * 512);
    }
  };
  walk(dataDir);
  const wanted = Math.ceil(needed * MIGRATE_SPACE_FACTOR) + MIGRATE_SPACE_SLACK_BYTES;
  const fd = fs.openSync(parent, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  let available: number;
  try {
    available = availableBytes(fd, parent);
  } finally {
    fs.closeSync(fd);
  }
  if (available < wanted)
    throw new BooblikError(
      "STORAGE_ERROR",
      `refusing to migrate ${dataDir}: the copy needs about ${wanted} bytes next to it (the data plus 10 % and 64 MiB), ${available} are free on ${parent}`,
    );
}

/**
 * renameat2(RENAME_EXCHANGE) on two empty directories next to `dataDir`, before any work: a file
 * system without it (EINVAL), a kernel without it (ENOSYS) is refused now, not after the copy.
 */
function probeExchange(dataDir: string, step: (what: string) => void): void {
  const probes = PROBE_SUFFIXES.map((suffix) => `${dataDir}${suffix}`);
  try {
    for (const probe of probes) {
      step(`probe ${probe}`);
      fs.rmSync(probe, { recursive: true, force: true });
      fs.mkdirSync(probe);
    }
    exchangePaths(probes[0]!, probes[1]!);
  } catch (error) {
    if (error instanceof IoError && ["EINVAL", "ENOSYS", "EOPNOTSUPP"].includes(error.errnoName))
      throw new BooblikError(
        "STORAGE_ERROR",
        `refusing to migrate ${dataDir}: its file system does not swap directories atomically ` +
          `(renameat2 RENAME_EXCHANGE: ${error.errnoName}), and without that a crash could leave no usable ` +
          `directory; copy the data directory to ext4, XFS, btrfs or tmpfs and migrate it there`,
      );
    throw error;
  } finally {
    for (const probe of probes) fs.rmSync(probe, { recursive: true, force: true });
  }
}

// --- Building the new tree --------------------------------------------------------------------------

interface BuildContext {
  options: MigrationOptions;
  step: (what: string) => void;
  report: MigrationReport;
  damage: Damage[];
  bytesTotal: number;
  readBuffer: Uint8Array;
  readView: DataView;
  writeBuffer: Uint8Array;
  batches: RecordBatchWriter;
  ownerOfRoot: boolean;
}

function build(
  dataDir: string,
  migrating: string,
  fingerprint: string,
  options: MigrationOptions,
  locks: DirectoryLock[],
  report: MigrationReport,
): void {
  const step = options.onStep ?? (() => undefined);
  const readBuffer = new Uint8Array(MIGRATE_READ_CHUNK_BYTES);
  const context: BuildContext = {
    options,
    step,
    report,
    damage: [],
    bytesTotal: segmentBytesBelow(dataDir),
    readBuffer,
    readView: new DataView(readBuffer.buffer),
    writeBuffer: new Uint8Array(MIGRATE_WRITE_BUFFER_BYTES),
    batches: new RecordBatchWriter(MIGRATE_BATCH_BYTES_MAX + 64 * 1024, RECORD_BATCH_BYTES_LIMIT),
    ownerOfRoot: process.getuid?.() === 0,
  };
  step(`create ${migrating}`);
  fs.mkdirSync(migrating);
  copyAttributes(context, dataDir, migrating);
  writeMarker(migrating, { version: 1, state: "building", fingerprint }, step);
  locks.push(options.lockDirectory(migrating));
  for (const name of fs.readdirSync(dataDir).sort()) {
    if (name === LOCK_FILE || name === MIGRATION_MARKER) continue;
    const source = path.join(dataDir, name);
    const target = path.join(migrating, name);
    if (PARTITION_DIRECTORY.test(name) && isDirectory(source))
      convertPartition(context, dataDir, source, target);
    else if (name === TOPICS_DIRECTORY && isDirectory(source)) convertTopics(context, source, target);
    else copyEntry(context, source, target);
  }
  if (context.damage.length > 0) throw new MigrationDamageError(dataDir, context.damage);
  step(`fsync ${migrating}`);
  fsyncDirectory(migrating);
  // The marker's own write fsyncs `migrating` again after its rename: "complete" is durable only
  // after everything it vouches for.
  const { partitions, segments, records, batches, bytesRead, bytesWritten, notes } = report;
  const totals = { partitions, segments, records, batches, bytesRead, bytesWritten, notes: [...notes] };
  writeMarker(migrating, { version: 1, state: "complete", fingerprint, totals }, step);
  step(`fsync ${path.dirname(migrating)}`);
  fsyncDirectory(path.dirname(migrating));
}

function segmentBytesBelow(dataDir: string): number {
  let total = 0;
  for (const directory of partitionDirectories(dataDir))
    for (const name of fs.readdirSync(directory))
      if (parseSegmentFileName(name) !== undefined) total += fs.statSync(path.join(directory, name)).size;
  return total;
}

interface RecoveryPoint {
  segmentBaseOffset: number;
  position: number;
  nextOffset: number;
}

/** A format-1 partition checkpoint's recovery point, or undefined when there is none to trust. */
function readRecoveryPoint(directory: string): RecoveryPoint | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(directory, CHECKPOINT_FILE), "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as { version?: unknown; recoveryPoint?: Partial<RecoveryPoint> };
    const point = parsed.recoveryPoint;
    const count = (value: unknown): value is number =>
      typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
    if (
      parsed.version !== 1 ||
      point === undefined ||
      !count(point.segmentBaseOffset) ||
      !count(point.position) ||
      !count(point.nextOffset)
    )
      return undefined;
    return {
      segmentBaseOffset: point.segmentBaseOffset,
      position: point.position,
      nextOffset: point.nextOffset,
    };
  } catch {
    return undefined;
  }
}

/** A format-1 topic's record limit (the largest payload) from its file, when readable. */
function topicRecordLimit(dataDir: string, topic: string): number | undefined {
  try {
    const file = path.join(dataDir, TOPICS_DIRECTORY, `${topic}${TOPIC_FILE_SUFFIX}`);
    const parsed = JSON.parse(fs.readFileSync(file, "utf8")) as { config?: { maxRecordBytes?: unknown } };
    const limit = parsed.config?.maxRecordBytes;
    return typeof limit === "number" && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `maxRecordBytes` changes meaning with the format: the largest payload in format 1, the largest
 * whole batch in format 2 (the broker's recovery takes a longer entry for damage). Each topic file
 * is copied with the limit raised by what a one-record batch adds, so every converted batch fits
 * and a producer can still send a record as large as before; `segmentBytes` grows with it when the
 * batch would no longer fit a segment; `timestampType` is written as CreateTime (the converted
 * records carry the segments' times), so no broker default can reinterpret them. Anything that does
 * not parse as a topic file is copied as it is.
 */
function convertTopics(context: BuildContext, source: string, target: string): void {
  const { step, report } = context;
  step(`create ${target}`);
  fs.mkdirSync(target);
  copyAttributes(context, source, target);
  for (const name of fs.readdirSync(source).sort()) {
    const from = path.join(source, name);
    const to = path.join(target, name);
    const converted = name.endsWith(TOPIC_FILE_SUFFIX) ? convertedTopicFile(from) : undefined;
    if (converted === undefined) {
      copyEntry(context, from, to);
      continue;
    }
    step(`write ${to}`);
    const stat = fs.statSync(from);
    const mode = stat.mode & 0o7777;
    const fd = fs.openSync(to, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, mode);
    try {
      fs.writeSync(fd, converted.text);
      fs.fchmodSync(fd, mode);
      if (context.ownerOfRoot) fs.fchownSync(fd, stat.uid, stat.gid);
      step(`fsync ${to}`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    if (converted.note !== undefined) report.notes.push(`${from}: ${converted.note}`);
  }
  step(`fsync ${target}`);
  fsyncDirectory(target);
}

function convertedTopicFile(file: string): { text: string; note: string | undefined } | undefined {
  let parsed: { config?: unknown };
  try {
    parsed = JSON.parse(fs.readFileSync(file, "utf8")) as typeof parsed;
  } catch {
    return undefined;
  }
  const config = parsed.config as Record<string, unknown> | null | undefined;
  if (config === null || typeof config !== "object") return undefined;
  const changes: string[] = [];
  const limit = config.maxRecordBytes;
  if (typeof limit === "number" && Number.isSafeInteger(limit) && limit > 0) {
    const batchLimit = Math.min(RECORD_PAYLOAD_BYTES_LIMIT, limit + ONE_RECORD_BATCH_OVERHEAD_BYTES);
    config.maxRecordBytes = batchLimit;
    changes.push(`maxRecordBytes ${limit} → ${batchLimit} (format 2 counts the whole batch)`);
    const segmentBytes = config.segmentBytes;
    const needed = SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES + batchLimit;
    if (typeof segmentBytes === "number" && segmentBytes < needed && needed <= SEGMENT_BYTES_MAX) {
      config.segmentBytes = needed;
      changes.push(`segmentBytes ${segmentBytes} → ${needed} (a batch of the largest record must fit one)`);
    }
  }
  if (config.timestampType === undefined) config.timestampType = "CreateTime";
  return {
    text: `${JSON.stringify(parsed, null, 2)}\n`,
    note: changes.length === 0 ? undefined : changes.join("; "),
  };
}

function convertPartition(context: BuildContext, dataDir: string, source: string, target: string): void {
  const { step, report } = context;
  report.partitions++;
  step(`create ${target}`);
  fs.mkdirSync(target);
  copyAttributes(context, source, target);
  const names = fs.readdirSync(source).sort();
  const bases = names
    .map((name) => parseSegmentFileName(name))
    .filter((base) => base !== undefined)
    .sort((a, b) => a - b);
  for (const name of names) {
    if (name === CHECKPOINT_FILE || parseSegmentFileName(name) !== undefined) continue;
    copyEntry(context, path.join(source, name), path.join(target, name));
  }
  const recoveryPoint = readRecoveryPoint(source);
  const topic = PARTITION_DIRECTORY.exec(path.basename(source))![1]!;
  // Format 1's recovery took a record above the topic's limit for damage: so does this walk.
  const payloadLimit = topicRecordLimit(dataDir, topic) ?? RECORD_PAYLOAD_BYTES_LIMIT;
  const batchBytes = Math.min(MIGRATE_BATCH_BYTES_MAX, payloadLimit);
  let nextOffset: number | undefined;
  for (let i = 0; i < bases.length; i++) {
    const base = bases[i]!;
    const name = segmentFileName(base);
    const converted = convertSegment(context, {
      sourceFile: path.join(source, name),
      targetFile: path.join(target, name),
      nameBase: base,
      newest: i === bases.length - 1,
      expectedBase: nextOffset,
      recoveryPoint,
      batchBytes,
      payloadLimit,
    });
    if (converted === undefined) return; // damage: reported, the rest of the partition is not looked at
    nextOffset = converted;
  }
  if (recoveryPoint !== undefined && (nextOffset ?? 0) < recoveryPoint.nextOffset) {
    const last = bases.at(-1);
    context.damage.push({
      file: last === undefined ? source : path.join(source, segmentFileName(last)),
      position: -1,
      offset: nextOffset ?? 0,
      reason: `the records end at offset ${nextOffset ?? 0}, but ${CHECKPOINT_FILE} says offsets below ${recoveryPoint.nextOffset} were forced to disk: durable records are missing`,
    });
    return;
  }
  step(`fsync ${target}`);
  fsyncDirectory(target);
}

interface SegmentJob {
  sourceFile: string;
  targetFile: string;
  nameBase: number;
  newest: boolean;
  /** Where the previous segment ended; undefined for the first. */
  expectedBase: number | undefined;
  recoveryPoint: RecoveryPoint | undefined;
  batchBytes: number;
  /** The largest payload a record may have (the topic's format-1 maxRecordBytes). */
  payloadLimit: number;
}

/**
 * Converts one segment; returns the offset after its last record, or undefined when it found damage
 * (pushed to `context.damage`).
 */
function convertSegment(context: BuildContext, job: SegmentJob): number | undefined {
  const { step, report } = context;
  const { sourceFile, targetFile } = job;
  report.segments++;
  const stat = fs.statSync(sourceFile);
  const timestampMs = Math.floor(stat.mtimeMs);
  const input = openFile(sourceFile, "read");
  try {
    const sizeBytes = fileSize(input, sourceFile);
    const header = new Uint8Array(SEGMENT_HEADER_BYTES);
    const got = preadFull(input, header, 0, SEGMENT_HEADER_BYTES, 0, sourceFile);
    report.bytesRead += got;
    const damage = (position: number, offset: number, reason: string): undefined => {
      context.damage.push({ file: sourceFile, position, offset, reason });
      return undefined;
    };
    if (job.expectedBase !== undefined && job.nameBase !== job.expectedBase)
      return damage(
        0,
        job.nameBase,
        `the segment starts at offset ${job.nameBase}, but the one before it ends at ${job.expectedBase}: offsets ${Math.min(job.nameBase, job.expectedBase)}..${Math.max(job.nameBase, job.expectedBase) - 1} are missing or doubled`,
      );
    const headerless = got < SEGMENT_HEADER_BYTES || header.every((byte) => byte === 0);
    if (headerless) {
      if (!job.newest)
        return damage(
          0,
          job.nameBase,
          got < SEGMENT_HEADER_BYTES
            ? `a sealed segment of ${got} bytes, shorter than its header`
            : "a sealed segment whose header is zeros",
        );
      // A kill right after a roll: nothing was in it, so a header alone is all it holds.
      report.notes.push(
        `${sourceFile}: no header (${sizeBytes} bytes; a kill right after a roll left it, with no record in it): written as an empty segment`,
      );
    } else {
      try {
        decodeSegmentHeader(header, got, sourceFile, job.nameBase as Offset, FROM_VERSION);
      } catch (error) {
        if (error instanceof BadSegmentFileError) return damage(0, job.nameBase, error.message);
        throw error;
      }
    }
    step(`create ${targetFile}`);
    const output = openFile(targetFile, "createNew");
    try {
      const writer = new SegmentOutput(context, output, targetFile, job.nameBase, job.batchBytes);
      if (!headerless && !convertRecords(context, job, input, sizeBytes, timestampMs, writer))
        return undefined;
      const next = writer.finish();
      fs.chmodSync(targetFile, stat.mode & 0o7777);
      if (context.ownerOfRoot) fs.chownSync(targetFile, stat.uid, stat.gid);
      // The old file's times: the last append to this segment, as before (retention's fallback).
      fs.utimesSync(targetFile, stat.atime, stat.mtime);
      step(`fsync ${targetFile}`);
      fs.fsyncSync(output);
      return next;
    } finally {
      closeFile(output, targetFile);
    }
  } finally {
    closeFile(input, sourceFile);
  }
}

/**
 * Walks the records of a format-1 segment in chunks and hands each to `writer`. Returns false for
 * damage (pushed to `context.damage`); a torn tail after the recovery point is dropped and noted.
 */
function convertRecords(
  context: BuildContext,
  job: SegmentJob,
  input: number,
  fileBytes: number,
  timestampMs: number,
  writer: SegmentOutput,
): boolean {
  const { report } = context;
  const file = job.sourceFile;
  const scan = newScanResult();
  let sizeBytes = fileBytes;
  let buffer = context.readBuffer;
  let view = context.readView;
  /** File position of buffer[0]. */
  let chunkStart = SEGMENT_HEADER_BYTES;
  /** Bytes of the file in buffer[0, filled). */
  let filled = 0;
  let offset = job.nameBase;
  // One record object for the whole walk: the batch writer copies the value when it is added.
  const record: RecordInput = { key: null, value: null, timestamp: timestampMs };
  const visit = (position: number) => {
    const length = readUint32(buffer, position);
    record.value = buffer.subarray(position + RECORD_HEADER_BYTES, position + RECORD_HEADER_BYTES + length);
    writer.add(record, length);
  };
  for (;;) {
    const want = Math.min(buffer.length - filled, sizeBytes - chunkStart - filled);
    if (want > 0) {
      const read = preadFull(input, buffer, filled, want, chunkStart + filled, file);
      // Shorter than asked: the file ended early (it cannot shrink under our lock, but a loop that
      // waited for bytes that never come would be worse than a torn tail).
      if (read < want) sizeBytes = chunkStart + filled + read;
      report.bytesRead += read;
      context.options.onProgress?.(report.bytesRead, context.bytesTotal);
      filled += read;
    }
    const atEndOfFile = chunkStart + filled >= sizeBytes;
    scanRecords(buffer, view, 0, filled, job.payloadLimit, true, scan, visit);
    offset += scan.recordCount;
    const stoppedAt = chunkStart + scan.endPosition;
    if (scan.stop === "end" && atEndOfFile) return true;
    if (scan.stop === "end" || (scan.stop === "truncated" && !atEndOfFile)) {
      // The chunk ended on or inside a record: keep its start, read the rest after it.
      const rest = filled - scan.endPosition;
      const needed =
        rest >= RECORD_HEADER_BYTES
          ? RECORD_HEADER_BYTES + readUint32(buffer, scan.endPosition)
          : RECORD_HEADER_BYTES;
      if (needed > buffer.length) {
        const grown = new Uint8Array(needed);
        grown.set(buffer.subarray(scan.endPosition, filled));
        buffer = grown;
        view = new DataView(grown.buffer);
      } else buffer.copyWithin(0, scan.endPosition, filled);
      filled = rest;
      chunkStart = stoppedAt;
      continue;
    }
    // Stopped inside the file: a clean end (zeros to the end), a torn tail, or damage.
    if (scan.stop === "zero-length" && allZero(input, file, stoppedAt, sizeBytes)) return true;
    const reason =
      scan.stop === "zero-length"
        ? "a zero length followed by nonzero bytes"
        : scan.stop === "truncated"
          ? `a record cut short by the end of the file (${sizeBytes - stoppedAt} bytes left)`
          : scan.stop === "bad-length"
            ? `a record length of ${readUint32(buffer, scan.endPosition)} bytes, above the topic's maxRecordBytes of ${job.payloadLimit}`
            : "a record whose CRC32C does not match";
    const point = job.recoveryPoint;
    const pastRecoveryPoint =
      job.newest &&
      (point === undefined ||
        job.nameBase > point.segmentBaseOffset ||
        (job.nameBase === point.segmentBaseOffset && stoppedAt >= point.position));
    // What a kill leaves at the end of the log: a record cut by the end of the file (file path), or
    // a zero length with the rest of an unfinished batch after it (mapped path: the first length is
    // stored last). A CRC mismatch or an impossible length is damage, even there, unless asked.
    const torn = scan.stop === "truncated" || scan.stop === "zero-length";
    if (pastRecoveryPoint && (torn || context.options.dropDamagedTail === true)) {
      report.notes.push(
        `${file}: dropped ${sizeBytes - stoppedAt} bytes after the last whole record (byte ${stoppedAt}, offset ${offset}): ` +
          `${reason}; ${torn ? "a write torn by a crash" : "dropped as asked (--drop-damaged-tail)"}, after the recovery point, ` +
          "as the format-1 broker's recovery would have cut it",
      );
      return true;
    }
    context.damage.push({
      file,
      position: stoppedAt,
      offset,
      reason: !job.newest
        ? `${reason} in a sealed segment`
        : pastRecoveryPoint
          ? `${reason} in the newest segment, after the recovery point (--drop-damaged-tail drops it and the ${sizeBytes - stoppedAt} bytes from there on, as the format-1 broker's recovery would have)`
          : `${reason}, before the recovery point in ${CHECKPOINT_FILE}`,
    });
    return false;
  }
}

function allZero(fd: number, file: string, from: number, to: number): boolean {
  const buffer = new Uint8Array(64 * 1024);
  for (let at = from; at < to; ) {
    const read = preadFull(fd, buffer, 0, Math.min(buffer.length, to - at), at, file);
    if (read === 0) break;
    for (let i = 0; i < read; i++) if (buffer[i] !== 0) return false;
    at += read;
  }
  return true;
}

/**
 * The format-2 segment being written: its header, then framed batches, through one write buffer
 * flushed with pwrite at explicit positions. The batch being filled always starts at `nextBase`.
 */
class SegmentOutput {
  private readonly context: BuildContext;
  private readonly fd: number;
  private readonly file: string;
  private readonly batchBytes: number;
  /** Offset of the first record not yet in a written batch. */
  private nextBase: number;
  private position = 0;
  private buffered = 0;

  constructor(context: BuildContext, fd: number, file: string, base: number, batchBytes: number) {
    this.context = context;
    this.fd = fd;
    this.file = file;
    this.batchBytes = batchBytes;
    this.nextBase = base;
    const header = encodeSegmentHeader(base as Offset, TO_VERSION);
    context.writeBuffer.set(header, 0);
    this.buffered = header.length;
    context.batches.begin({ baseOffset: base, partitionLeaderEpoch: -1 });
  }

  add(record: RecordInput, valueBytes: number): void {
    const batches = this.context.batches;
    // A record's encoded size is its value plus at most 16 bytes of varints and fields.
    const recordBytes = valueBytes + 16;
    const count = batches.recordCount;
    if (
      count > 0 &&
      (count >= MIGRATE_BATCH_RECORDS_MAX || batches.sizeBytes + recordBytes > this.batchBytes)
    )
      this.flushBatch();
    if (RECORD_BATCH_OVERHEAD_BYTES + recordBytes > RECORD_BATCH_BYTES_LIMIT)
      throw new InvalidArgumentError(
        `${this.file}: the record of ${valueBytes} bytes at offset ${this.nextBase} does not fit a batch (at most ${RECORD_BATCH_BYTES_LIMIT} bytes)`,
      );
    batches.add(record);
  }

  /** Writes what is left; returns the offset after the last record written. */
  finish(): number {
    if (this.context.batches.recordCount > 0) this.flushBatch();
    this.flush();
    return this.nextBase;
  }

  private flushBatch(): void {
    const batches = this.context.batches;
    const count = batches.recordCount;
    const batch = batches.finish();
    this.context.report.records += count;
    this.context.report.batches++;
    const buffer = this.context.writeBuffer;
    const entryBytes = RECORD_HEADER_BYTES + batch.length;
    if (this.buffered + entryBytes > buffer.length) this.flush();
    if (entryBytes > buffer.length) {
      // Larger than the write buffer (one huge record): framed in a buffer of its own.
      const entry = new Uint8Array(entryBytes);
      writeFramedEntry(entry, 0, batch);
      this.write(entry, entryBytes);
    } else {
      this.buffered = writeFramedEntry(buffer, this.buffered, batch);
    }
    this.nextBase += count;
    batches.begin({ baseOffset: this.nextBase, partitionLeaderEpoch: -1 });
  }

  private flush(): void {
    if (this.buffered === 0) return;
    this.write(this.context.writeBuffer, this.buffered);
    this.buffered = 0;
  }

  private write(bytes: Uint8Array, length: number): void {
    this.context.step(`write ${length} bytes to ${this.file} at ${this.position}`);
    pwriteAll(this.fd, bytes, 0, length, this.position, this.file);
    this.position += length;
    this.context.report.bytesWritten += length;
  }
}

// --- Copying everything else ------------------------------------------------------------------------

/** Copies a file, directory tree or symbolic link, with modes (and owners as root), fsynced. */
function copyEntry(context: BuildContext, source: string, target: string): void {
  const { step } = context;
  const stat = fs.lstatSync(source);
  if (stat.isDirectory()) {
    step(`create ${target}`);
    fs.mkdirSync(target);
    copyAttributes(context, source, target);
    for (const name of fs.readdirSync(source).sort())
      copyEntry(context, path.join(source, name), path.join(target, name));
    step(`fsync ${target}`);
    fsyncDirectory(target);
  } else if (stat.isSymbolicLink()) {
    step(`link ${target}`);
    fs.symlinkSync(fs.readlinkSync(source), target);
  } else if (stat.isFile()) {
    step(`copy ${source} to ${target}`);
    fs.copyFileSync(source, target, fs.constants.COPYFILE_EXCL);
    copyAttributes(context, source, target);
    fs.utimesSync(target, stat.atime, stat.mtime);
    const fd = fs.openSync(target, "r");
    try {
      step(`fsync ${target}`);
      fs.fsyncSync(fd);
    } catch (error) {
      throw ioError("fsync", 5, target, (error as Error).message);
    } finally {
      fs.closeSync(fd);
    }
  } else {
    context.report.notes.push(`${source}: neither a file, a directory nor a link; not copied`);
  }
}

function copyAttributes(context: BuildContext, source: string, target: string): void {
  const stat = fs.statSync(source);
  fs.chmodSync(target, stat.mode & 0o7777);
  if (context.ownerOfRoot) fs.chownSync(target, stat.uid, stat.gid);
}

// --- Small helpers ----------------------------------------------------------------------------------

function writeMarker(directory: string, marker: Marker, step: (what: string) => void): void {
  const file = path.join(directory, MIGRATION_MARKER);
  step(`write ${file} (${marker.state})`);
  writeFileAtomicallyNow(file, `${JSON.stringify(marker)}\n`);
}

function readMarker(directory: string): Marker | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(directory, MIGRATION_MARKER), "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<Marker>;
    if (
      parsed.version === 1 &&
      (parsed.state === "building" || parsed.state === "complete") &&
      typeof parsed.fingerprint === "string"
    )
      return {
        version: 1,
        state: parsed.state,
        fingerprint: parsed.fingerprint,
        ...(parsed.totals === undefined ? {} : { totals: parsed.totals }),
      };
  } catch {
    // A marker cut by a crash cannot be: it is replaced atomically. Anything else is not ours.
  }
  return undefined;
}

function isDirectory(file: string): boolean {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}

function pathExists(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch {
    return false;
  }
}
