#!/usr/bin/env bun
/**
 * booblik-cli: the operator's command line. `bunx booblik-cli --help` for the commands.
 *
 * Exit codes: 0 success; 1 the operation failed (broker down, unknown topic, refused, nothing to
 * verify); 2 the command line is wrong (every flag is read before connecting, so a bad value never
 * half-runs a command); 3 `segment verify` found damage. Expected failures print one line, no stack
 * trace.
 */
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../client/client.ts";
import { Consumer, type StartPosition } from "../client/consumer.ts";
import { Producer } from "../client/producer.ts";
import { BooblikError, InvalidArgumentError } from "../domain/errors.ts";
import { PARTITIONS_MAX, SEGMENT_HEADER_BYTES } from "../domain/limits.ts";
import { formatBytes, parseBytes, parseDurationMs, parseHostPort, parseInteger } from "../domain/units.ts";
import { type PartitionVerification, verifyPartitionDirectory, walkSegmentFile } from "../storage/inspect.ts";
import { Progress, table } from "./output.ts";

const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_DAMAGE = 3;
/** Partitions are u32 on the wire; offsets are JS numbers, exact up to 2^53 - 1. */
const PARTITION_MAX = 2 ** 32 - 1;
const OFFSET_MAX = Number.MAX_SAFE_INTEGER;

class UsageError extends Error {}

const HELP = `booblik-cli: operate a booblik broker.

usage: booblik-cli [--broker host:port] [--json] [--timeout 5s] <command>

  health                                exit 0 when the broker answers METADATA in time
  topics list                           topics with partitions and offsets
  topics create <name> [--partitions N] [--durability append|force|interval]
                [--write-mode file|mapped] [--segment-size 128MiB] [--retention-size 10GiB]
                [--retention-time 7d] [--max-record-size 1MiB]
  topics delete <name>
  topics describe <name>
  produce <topic> [--partition N | --key K] [--file F]
                                        one record per line, from the file or stdin
  consume <topic> [--partition N] [--from earliest|latest|<offset>] [--follow] [--max N]
                [--format raw|json]     records to stdout (raw: the payload and a newline)
  offsets <topic>                       earliest and next offset of every partition
  segment dump <file> [--max N]         the records of a segment file (offline)
  segment verify <path>                 check every record of a data directory, partition
                                        directory or segment file (offline, read-only, safe while a
                                        broker runs); exit 3 on damage, 1 when it
                                        holds no segment at all; an empty newest
                                        segment (a kill right after a roll) is a
                                        crash leftover that recovery removes: exit 0

  --broker host:port   the broker (default 127.0.0.1:7979; BOOBLIK_BROKER)
  --json               machine-readable output
  --progress           draw progress bars even when stderr is not a terminal`;

interface Parsed {
  positional: string[];
  flags: Map<string, string>;
}

const BOOLEAN_FLAGS = new Set(["json", "follow", "progress", "help"]);

function parseArgs(argv: string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i]!;
    if (argument === "-h") {
      flags.set("help", "true");
    } else if (argument.startsWith("--")) {
      const eq = argument.indexOf("=");
      const name = argument.slice(2, eq < 0 ? undefined : eq);
      if (BOOLEAN_FLAGS.has(name)) {
        flags.set(name, "true");
        continue;
      }
      const value = eq >= 0 ? argument.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else {
      positional.push(argument);
    }
  }
  return { positional, flags };
}

function allowOnly(parsed: Parsed, allowed: string[]): void {
  const global = ["broker", "json", "timeout", "progress", "help"];
  for (const name of parsed.flags.keys()) {
    if (!global.includes(name) && !allowed.includes(name))
      throw new UsageError(`unknown option --${name} for this command`);
  }
}

/**
 * Reads a flag's value with one of the shared parsers (src/domain/units.ts). A value they refuse is
 * the command line's fault (exit 2), not a failed operation: InvalidArgumentError becomes UsageError
 * here, and only here, since the broker's INVALID_ARGUMENT answers must stay exit 1.
 */
function flagValue<T>(parsed: Parsed, name: string, parse: (what: string, text: string) => T): T | undefined {
  const text = parsed.flags.get(name);
  return text === undefined ? undefined : asUsage(() => parse(`--${name}`, text));
}

function asUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw new UsageError(error.message);
    throw error;
  }
}

function integerFlag(parsed: Parsed, name: string, min: number, max: number): number | undefined {
  return flagValue(parsed, name, (what, text) => parseInteger(what, text, min, max));
}

function need(parsed: Parsed, index: number, what: string): string {
  const value = parsed.positional[index];
  if (value === undefined) throw new UsageError(`missing ${what} (see --help)`);
  return value;
}

async function connect(parsed: Parsed): Promise<BooblikClient> {
  // An empty --broker is a mistake; an empty BOOBLIK_BROKER counts as unset (the way to clear it).
  const broker = parsed.flags.get("broker") ?? (process.env.BOOBLIK_BROKER || "127.0.0.1:7979");
  const { host, port } = asUsage(() => parseHostPort("--broker", broker));
  const timeoutMs = flagValue(parsed, "timeout", parseDurationMs) ?? 5000;
  return BooblikClient.connect({
    host,
    port,
    connectTimeoutMs: timeoutMs,
    requestTimeoutMs: timeoutMs,
    retries: 0,
  });
}

function print(parsed: Parsed, json: unknown, human: () => string): void {
  console.log(parsed.flags.has("json") ? JSON.stringify(json, null, 2) : human());
}

// --- Commands ---------------------------------------------------------------------------------------

async function health(parsed: Parsed): Promise<number> {
  allowOnly(parsed, []);
  const client = await connect(parsed);
  try {
    const metadata = await client.metadata();
    print(
      parsed,
      { ok: true, brokerVersion: metadata.brokerVersion, topics: metadata.topics.length },
      () =>
        `ok: booblik ${metadata.brokerVersion}, ${metadata.topics.length} topics, CRC32C ${metadata.crc32cImplementation}`,
    );
    return 0;
  } finally {
    client.close();
  }
}

async function topics(parsed: Parsed): Promise<number> {
  const action = need(parsed, 1, "topics action: list, create, delete or describe");
  if (!["list", "create", "delete", "describe"].includes(action)) {
    throw new UsageError(`unknown topics action ${action} (list, create, delete, describe)`);
  }
  if (action !== "list") need(parsed, 2, "topic name");
  allowOnly(
    parsed,
    action === "create"
      ? [
          "partitions",
          "durability",
          "write-mode",
          "segment-size",
          "retention-size",
          "retention-time",
          "max-record-size",
        ]
      : [],
  );
  // Read before connecting: a bad value is a usage error, whatever the broker's state.
  const config = action === "create" ? topicConfig(parsed) : {};
  const client = await connect(parsed);
  try {
    if (action === "list") {
      const metadata = await client.metadata();
      print(parsed, metadata.topics, () =>
        metadata.topics.length === 0
          ? "no topics"
          : table(
              ["topic", "partitions", "durability", "records"],
              metadata.topics.map((topic) => [
                topic.name,
                topic.partitions.length,
                String(topic.config.durability),
                topic.partitions.reduce((sum, p) => sum + (p.nextOffset - p.logStartOffset), 0),
              ]),
            ),
      );
      return 0;
    }
    if (action === "create") {
      const name = need(parsed, 2, "topic name");
      await client.createTopic(name, config);
      print(parsed, { created: name }, () => `created topic ${name}`);
      return 0;
    }
    if (action === "delete") {
      const name = need(parsed, 2, "topic name");
      await client.deleteTopic(name);
      print(parsed, { deleted: name }, () => `deleted topic ${name}`);
      return 0;
    }
    if (action === "describe") {
      const name = need(parsed, 2, "topic name");
      const topic = (await client.metadata([name])).topics[0]!;
      print(parsed, topic, () =>
        [
          `topic ${topic.name}`,
          ...Object.entries(topic.config).map(
            ([key, value]) => `  ${key}: ${value === null ? "none" : String(value)}`,
          ),
          "",
          table(
            ["partition", "earliest", "next", "records"],
            topic.partitions.map((p) => [
              p.partition,
              p.logStartOffset,
              p.nextOffset,
              p.nextOffset - p.logStartOffset,
            ]),
          ),
        ].join("\n"),
      );
      return 0;
    }
    throw new UsageError(`unknown topics action ${action} (list, create, delete, describe)`);
  } finally {
    client.close();
  }
}

/** The settings of `topics create` (the broker checks them against each other and its limits). */
function topicConfig(parsed: Parsed): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) config[key] = value;
  };
  set("partitions", integerFlag(parsed, "partitions", 1, PARTITIONS_MAX));
  set("durability", parsed.flags.get("durability"));
  set("writeMode", parsed.flags.get("write-mode"));
  set("segmentBytes", flagValue(parsed, "segment-size", parseBytes));
  set("maxRecordBytes", flagValue(parsed, "max-record-size", parseBytes));
  set("retentionBytes", flagValue(parsed, "retention-size", parseBytes));
  set("retentionMs", flagValue(parsed, "retention-time", parseDurationMs));
  return config;
}

async function offsets(parsed: Parsed): Promise<number> {
  allowOnly(parsed, []);
  const name = need(parsed, 1, "topic");
  const client = await connect(parsed);
  try {
    const topic = (await client.metadata([name])).topics[0]!;
    print(parsed, topic.partitions, () =>
      table(
        ["partition", "earliest", "next"],
        topic.partitions.map((p) => [p.partition, p.logStartOffset, p.nextOffset]),
      ),
    );
    return 0;
  } finally {
    client.close();
  }
}

async function* lines(source: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of source) {
    rest += decoder.decode(chunk, { stream: true });
    let newline = rest.indexOf("\n");
    while (newline >= 0) {
      yield rest.slice(0, newline).replace(/\r$/, "");
      rest = rest.slice(newline + 1);
      newline = rest.indexOf("\n");
    }
  }
  rest += decoder.decode();
  if (rest !== "") yield rest;
}

async function produce(parsed: Parsed): Promise<number> {
  allowOnly(parsed, ["partition", "key", "file"]);
  const topic = need(parsed, 1, "topic");
  const partition = integerFlag(parsed, "partition", 0, PARTITION_MAX);
  const key = parsed.flags.get("key");
  if (partition !== undefined && key !== undefined)
    throw new UsageError("give --partition or --key, not both");
  const file = parsed.flags.get("file");
  const client = await connect(parsed);
  const producer = new Producer(client, { retryOnConnectionFailure: false });
  const total = file === undefined ? 0 : fs.statSync(file).size;
  const progress = new Progress(`producing to ${topic}`, total, parsed.flags.has("progress"));
  const source = file === undefined ? Bun.stdin.stream() : Bun.file(file).stream();
  let count = 0;
  let skipped = 0;
  let first: number | undefined;
  let last: number | undefined;
  try {
    for await (const line of lines(source)) {
      progress.add(Buffer.byteLength(line) + 1);
      if (line === "") {
        skipped++; // an empty record cannot exist: a zero length marks the end of a log
        continue;
      }
      const options = partition !== undefined ? { partition } : key !== undefined ? { key } : {};
      const { acknowledged } = await producer.accept(topic, line, options);
      acknowledged.then(
        (result) => {
          first = first === undefined ? result.offset : Math.min(first, result.offset);
          last = last === undefined ? result.offset : Math.max(last, result.offset);
        },
        () => undefined,
      );
      count++;
    }
    await producer.close();
    progress.finish();
  } finally {
    client.close();
  }
  print(
    parsed,
    { produced: count, skippedEmptyLines: skipped, firstOffset: first, lastOffset: last },
    () =>
      `produced ${count} records to ${topic}${first === undefined ? "" : ` (offsets ${first}..${last})`}${skipped > 0 ? `; skipped ${skipped} empty lines` : ""}`,
  );
  return 0;
}

async function consume(parsed: Parsed): Promise<number> {
  allowOnly(parsed, ["partition", "from", "follow", "max", "format"]);
  const topic = need(parsed, 1, "topic");
  const partition = integerFlag(parsed, "partition", 0, PARTITION_MAX) ?? 0;
  const fromText = parsed.flags.get("from") ?? "earliest";
  let from: StartPosition;
  if (fromText === "earliest" || fromText === "latest") from = fromText;
  else if (/^\s*\d+\s*$/.test(fromText))
    from = asUsage(() => parseInteger("--from", fromText, 0, OFFSET_MAX));
  else throw new UsageError(`--from must be earliest, latest or an offset, got ${JSON.stringify(fromText)}`);
  const max = integerFlag(parsed, "max", 0, OFFSET_MAX);
  const format = parsed.flags.get("format") ?? (parsed.flags.has("json") ? "json" : "raw");
  if (format !== "raw" && format !== "json")
    throw new UsageError(`--format must be raw or json, got ${format}`);
  const client = await connect(parsed);
  const consumer = new Consumer(client, { topic, partition, from, stopAtEnd: !parsed.flags.has("follow") });
  const decoder = new TextDecoder();
  const out = Bun.stdout.writer();
  let count = 0;
  try {
    if (max === 0) return 0;
    for await (const record of consumer) {
      const text = decoder.decode(record.value);
      out.write(
        format === "json" ? `${JSON.stringify({ offset: record.offset, value: text })}\n` : `${text}\n`,
      );
      if (++count === max) break;
    }
  } finally {
    await out.flush();
    client.close();
  }
  return 0;
}

function segmentFiles(target: string): { partitions: string[]; files: string[] } {
  const stat = fs.statSync(target);
  if (stat.isFile()) return { partitions: [], files: [target] };
  const names = fs.readdirSync(target);
  if (names.some((name) => name.endsWith(".log"))) return { partitions: [target], files: [] };
  const partitions = names
    .map((name) => path.join(target, name))
    .filter((entry) => /-\d+$/.test(entry) && fs.statSync(entry).isDirectory())
    .sort();
  return { partitions, files: [] };
}

function directorySize(directory: string): number {
  return fs
    .readdirSync(directory)
    .filter((name) => name.endsWith(".log"))
    .reduce((sum, name) => sum + fs.statSync(path.join(directory, name)).size, 0);
}

async function segment(parsed: Parsed): Promise<number> {
  const action = need(parsed, 1, "segment action: dump or verify");
  const target = need(parsed, 2, action === "dump" ? "segment file" : "path to verify");
  if (!fs.existsSync(target)) throw new BooblikError("INVALID_ARGUMENT", `${target} does not exist`);
  if (action === "dump") {
    allowOnly(parsed, ["max"]);
    const max = integerFlag(parsed, "max", 0, OFFSET_MAX) ?? Number.POSITIVE_INFINITY;
    const decoder = new TextDecoder();
    const rows: (string | number)[][] = [];
    const records: { offset: number; position: number; length: number; value: string }[] = [];
    const walk = walkSegmentFile(target, (record) => {
      if (records.length >= max) return;
      const text = decoder.decode(record.payload);
      records.push({
        offset: record.offset,
        position: record.position,
        length: record.payload.length,
        value: text,
      });
      const preview = JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
      rows.push([record.offset, record.position, record.payload.length, preview]);
    });
    print(parsed, { file: target, baseOffset: walk.baseOffset, records, end: walk.end }, () =>
      [
        `segment ${target}: base offset ${walk.baseOffset}, ${walk.recordCount} records, ${formatBytes(walk.validEndBytes)} of ${formatBytes(walk.sizeBytes)}`,
        rows.length > 0 ? table(["offset", "position", "bytes", "payload"], rows) : "(no records)",
        walk.end.kind === "clean"
          ? "end of log"
          : `stops at byte ${walk.end.position} (offset ${walk.end.offset}): ${walk.end.reason}; ${walk.end.bytesAfter} bytes follow`,
      ].join("\n"),
    );
    return 0;
  }
  if (action === "verify") {
    allowOnly(parsed, []);
    const { partitions, files } = segmentFiles(target);
    const results: PartitionVerification[] = [];
    const total =
      partitions.reduce((sum, directory) => sum + directorySize(directory), 0) +
      files.reduce((sum, f) => sum + fs.statSync(f).size, 0);
    const progress = new Progress("verifying", total, parsed.flags.has("progress"));
    for (const directory of partitions)
      results.push(verifyPartitionDirectory(directory, (bytes) => progress.add(bytes)));
    for (const file of files) {
      const walk = walkSegmentFile(file, undefined, (bytes) => progress.add(bytes));
      results.push({
        directory: file,
        segments: 1,
        records: walk.recordCount,
        bytes: walk.validEndBytes,
        damage:
          walk.end.kind === "invalid"
            ? { file, position: walk.end.position, offset: walk.end.offset, reason: walk.end.reason }
            : undefined,
        unverifiedTail: undefined,
        crashLeftover: undefined,
      });
    }
    progress.finish();
    // "no damage" about zero segments would pass a typo'd path or an empty mount as healthy.
    if (results.every((result) => result.segments === 0)) {
      throw new BooblikError(
        "INVALID_ARGUMENT",
        `nothing to verify: ${target} holds no segment files (expected a data directory, a partition directory or a segment file)`,
      );
    }
    const damaged = results.filter((result) => result.damage !== undefined);
    print(parsed, { ok: damaged.length === 0, partitions: results }, () => {
      const out = [
        table(
          ["partition", "segments", "records", "bytes", "status"],
          results.map((result) => [
            path.basename(result.directory),
            result.segments,
            result.records,
            formatBytes(result.bytes),
            result.damage !== undefined
              ? "DAMAGED"
              : result.crashLeftover !== undefined
                ? "ok (crash leftover)"
                : result.unverifiedTail !== undefined
                  ? "ok (unverified tail)"
                  : "ok",
          ]),
        ),
      ];
      for (const result of results) {
        if (result.damage !== undefined) {
          out.push(
            `damage: ${result.damage.file} at byte ${result.damage.position} (offset ${result.damage.offset}): ${result.damage.reason}`,
          );
        }
        if (result.crashLeftover !== undefined) {
          const { file, bytes } = result.crashLeftover;
          const what =
            bytes === 0
              ? "is empty (0 bytes, no header)"
              : bytes < SEGMENT_HEADER_BYTES
                ? `is shorter than a header (${bytes} bytes)`
                : `has zeros where its header belongs (${bytes} bytes)`;
          out.push(
            `note: ${file} ${what}: a crash right after a roll left it, with no record in it; recovery removes it`,
          );
        }
        if (result.unverifiedTail !== undefined) {
          out.push(
            `note: ${result.unverifiedTail.file} ends with ${result.unverifiedTail.bytes} bytes after its last whole record ` +
              `(at byte ${result.unverifiedTail.position}: ${result.unverifiedTail.reason}): a write in progress, or a torn tail that recovery cuts`,
          );
        }
      }
      out.push(
        damaged.length === 0
          ? `verified ${results.length} partitions: no damage`
          : `${damaged.length} damaged`,
      );
      return out.join("\n");
    });
    return damaged.length === 0 ? 0 : EXIT_DAMAGE;
  }
  throw new UsageError(`unknown segment action ${action} (dump, verify)`);
}

// --- Entry ------------------------------------------------------------------------------------------

async function run(argv: string[]): Promise<number> {
  const parsed = parseArgs(argv);
  const command = parsed.positional[0];
  if (command === undefined || parsed.flags.has("help") || command === "help") {
    console.log(HELP);
    return command === undefined && !parsed.flags.has("help") ? EXIT_USAGE : 0;
  }
  switch (command) {
    case "health":
      return health(parsed);
    case "topics":
      return topics(parsed);
    case "produce":
      return produce(parsed);
    case "consume":
      return consume(parsed);
    case "offsets":
      return offsets(parsed);
    case "segment":
      return segment(parsed);
    default:
      throw new UsageError(`unknown command ${command} (see --help)`);
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`booblik-cli: ${error.message}`);
      process.exit(EXIT_USAGE);
    }
    if (error instanceof BooblikError) {
      console.error(`booblik-cli: ${error.message}`);
      process.exit(EXIT_FAILED);
    }
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (typeof code === "string") {
      console.error(`booblik-cli: ${(error as Error).message}`);
      process.exit(EXIT_FAILED);
    }
    console.error(`booblik-cli: unexpected error: ${error instanceof Error ? error.message : String(error)}`);
    if (process.env.BOOBLIK_DEBUG) console.error(error);
    process.exit(EXIT_FAILED);
  },
);
