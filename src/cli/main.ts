#!/usr/bin/env bun
/**
 * booblik-cli: the operator's command line. `bunx booblik-cli --help` for the commands.
 *
 * Exit codes: 0 success; 1 the operation failed (broker down, unknown topic, refused, nothing to
 * verify); 2 the command line is wrong (every flag is read before connecting, so a bad value never
 * half-runs a command); 3 `segment verify` found damage. Expected failures print one line, no stack
 * trace (one JSON object with `--json`). A closed stdout (`| head`) ends any command quietly, exit 0.
 */
// First, and as a bare import (which the import sorter leaves where it is): evaluated before any
// module that reads a setting while it loads (src/start-guard.ts).
import "./guard.ts";
import fs from "node:fs";
import path from "node:path";
import { DataDirLock } from "../broker/data-dir-lock.ts";
import { CLEANUP_POLICIES, DURABILITY_POLICIES, TIMESTAMP_TYPES } from "../broker/topic-config.ts";
import { BooblikClient } from "../client/client.ts";
import {
  type ConsumedRecord,
  Consumer,
  forEachConsumedRecord,
  type StartPosition,
} from "../client/consumer.ts";
import { Producer } from "../client/producer.ts";
import { BooblikError, DataDirLockedError, InvalidArgumentError } from "../domain/errors.ts";
import {
  BROKER_PORT_DEFAULT,
  CLI_CLOSED_PIPE_CHECK_MS,
  CLI_DUMP_READ_BYTES,
  CLI_INVALID_LINES_LISTED,
  CLI_RECONNECT_BACKOFF_MS_MAX,
  CLI_RECONNECT_BACKOFF_MS_MIN,
  PARTITIONS_MAX,
  RECORD_BATCH_BYTES_LIMIT,
  RECORD_PAYLOAD_BYTES_LIMIT,
  RECORD_V2_BYTES_MIN,
  SEGMENT_HEADER_BYTES,
} from "../domain/limits.ts";
import { formatBytes, parseBytes, parseDurationMs, parseHostPort, parseInteger } from "../domain/units.ts";
import { BOOBLIK_VERSION } from "../domain/version.ts";
import {
  computeBatchCrc,
  RECORDS_OFFSET,
  RecordBatchReader,
  type RecordInput,
  recordHeaders,
  utf8Length,
} from "../record/batch.ts";
import { sizeOfVarint } from "../record/varint.ts";
import {
  type InspectedEntry,
  type InspectedRecord,
  type PartitionVerification,
  verifyPartitionDirectory,
  walkSegmentChunks,
  walkSegmentFile,
} from "../storage/inspect.ts";
import { findFormat1Segment, MigrationDamageError, migrateFormat1 } from "../storage/migrate-format1.ts";
import { WRITE_MODES } from "../storage/segment-writer.ts";
import { ACL_HELP, aclCommand } from "./acl.ts";
import { GROUPS_HELP, groupsCommand } from "./groups.ts";
import { startGuard } from "./guard.ts";
import { isClosedPipe, Output, Progress, table, watchStdoutReader } from "./output.ts";
import { type RecordPrinter, recordPrinter } from "./record-format.ts";
import { repairDataDirectory } from "./repair.ts";
import { parseTimeArgument } from "./time-argument.ts";
import { LOGIN_FLAGS, LOGIN_HELP, loginOptions, USERS_HELP, usersCommand } from "./users.ts";

const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_DAMAGE = 3;
/** Partitions are u32 on the wire; offsets are JS numbers, exact up to 2^53 - 1. */
const PARTITION_MAX = 2 ** 32 - 1;
const OFFSET_MAX = Number.MAX_SAFE_INTEGER;

class UsageError extends Error {}

const HELP = `booblik-cli ${BOOBLIK_VERSION}: operate a booblik broker.

usage: booblik-cli [--broker host:port | --local] [--json] [--timeout 5s] <command>

  health                                exit 0 when the broker answers METADATA in time
  topics list                           topics with partitions and offsets
  topics create <name> [--partitions N] [--durability append|force|interval] [--flush-interval 1s]
                [--if-not-exists]
                [--write-mode file|mapped] [--segment-size 128MiB] [--retention-size 10GiB]
                [--retention-time 7d] [--max-record-size 1MiB]
                [--timestamp-type CreateTime|LogAppendTime]
                [--cleanup-policy delete|compact|compact,delete]
  topics delete <name>
  topics describe <name>                its settings (timestamp type included) and partitions
  topics alter <name> [--durability append|force|interval] [--flush-interval 1s]
                [--retention-size 10GiB|none] [--retention-time 7d|none]
                [--max-record-size 2MiB] [--timestamp-type CreateTime|LogAppendTime]
                [--cleanup-policy delete|compact|compact,delete]
                                        change settings of a live topic (write mode and segment
                                        size cannot change; the record size only grows)
  topics add-partitions <name> --partitions N
                                        raise the partition count (keys then map to other
                                        partitions); already N: nothing to do, exit 0
  topics purge <name> --before <offset|end|T> [--partition N]
                                        records below the offset (end: all; T: records older
                                        than T, per partition) stop being readable, durably;
                                        whole segments below are deleted. Every partition, or one
  produce <topic> [--partition N] [--key K | --key-separator S] [--header k=v]...
                [--timestamp T] [--empty-as-null] [--file F] [--skip-invalid]
                                        one record per line, from the file or stdin (with
                                        --key-separator each line is key<S>value); says which
                                        partitions and offsets it wrote. A line too large for the
                                        topic (or without the separator) stops it (exit 1, after
                                        saying what was written), or with --skip-invalid is skipped
                                        and counted. A batch the broker refuses stops it (exit 1),
                                        naming the lines stored and the lines refused (batches are
                                        pipelined: later lines may be stored). --empty-as-null sends
                                        an empty value (or key) as null
  consume <topic> [--partition N] [--from earliest|latest|<offset> | --from-time T] [--follow]
                [--max N] [--format F]  records of every partition (or one) to stdout; --follow
                                        waits for more and reconnects when the broker restarts
  offsets <topic> [--at T]              earliest and next offset of every partition; with --at,
                                        the first offset whose timestamp is at or after T
  segment dump <file> [--max N] [--format F]
                                        the batches and records of a segment file (offline,
                                        streamed)
  segment verify <path>                 check every record of a data directory, partition
                                        directory or segment file (offline, read-only, safe while a
                                        broker runs); exit 3 on damage, 1 when it
                                        holds no segment at all; an empty newest
                                        segment (a kill right after a roll) is a
                                        crash leftover that recovery removes: exit 0
  segment repair <data dir>             offline (stop the broker first: refused while its lock
                                        is held): recover every partition checking every entry,
                                        keep damaged ranges in place, quarantine cut bytes that
                                        hold valid entries; prints what was cut and kept
  migrate <data dir> [--drop-damaged-tail]
                                        convert a format-1 data directory to format 2 (offline:
                                        stop the broker first). Keeps every offset and payload;
                                        the original stays at <data dir>.format1-backup. Safe to
                                        kill at any moment and to run again; exit 3 on damage
                                        (--drop-damaged-tail: drop a damaged end of a newest
                                        segment after its recovery point, as recovery did)
${GROUPS_HELP}
${ACL_HELP}
${USERS_HELP}

  T (a time)   ms since the epoch, an ISO 8601 time with a zone (2024-05-01T12:00:00Z), a date
               (2024-05-01, UTC), now, or a duration before now (-1h, -30m, -7d)
  --format F   raw (the value bytes and a newline; the default for one partition),
               json (one object a line: topic, partition, offset, timestamp, key, value,
               headers; key and values as UTF-8 text, null as null),
               json-base64 | json-hex (the same, key and values encoded: safe for any bytes), or a
               format string (kcat's tokens): %t topic, %p partition, %o offset, %T timestamp (ms),
               %k key, %K key bytes, %s value, %S value bytes (-1 for null), %h headers (k=v,k=v),
               and booblik's %I timestamp as ISO 8601, %x/%b value in hex/base64, %X/%B key in
               hex/base64; %% a percent sign; \\n \\t \\r \\\\ escapes.
               Several partitions without --format: "%p\\t%o\\t%s\\n" (partition, offset, value)

  --broker host:port   the broker (default 127.0.0.1:${BROKER_PORT_DEFAULT}; BOOBLIK_BROKER)
${LOGIN_HELP}
  --local              the broker of this machine or container, from its own settings
                       (BOOBLIK_HOST, a wildcard meaning loopback; BOOBLIK_PORT); the Docker health check
  --timeout D          how long to wait for the broker to accept the connection and for each
                       answer (default 5s; 500ms, 30s, 2m)
  --json               machine-readable output, and errors as one JSON object on stderr
  --progress           draw progress even when stderr is not a terminal
  --version            print the version`;

interface Parsed {
  positional: string[];
  /** The last value of each flag. */
  flags: Map<string, string>;
  /** Every value of a repeatable flag (`--header a=1 --header b=2`), in order. */
  repeated: Map<string, string[]>;
}

/** Flags that may be given more than once; every other flag keeps its last value. */
const REPEATABLE_FLAGS = new Set(["header"]);

const BOOLEAN_FLAGS = new Set([
  "empty-as-null",
  "json",
  "follow",
  "progress",
  "help",
  "version",
  "skip-invalid",
  "if-not-exists",
  "local",
  "drop-damaged-tail",
  "to-earliest",
  "to-latest",
  "cluster",
  "prefixed",
  "match",
  "deny",
  "allow",
]);

function parseArgs(argv: string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  const repeated = new Map<string, string[]>();
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
      // The next option taken as this one's value (`--partitions --durability force`) is a missing
      // value; a value that really starts with -- goes after an = sign.
      if (eq < 0 && value.startsWith("--") && value.length > 2)
        throw new UsageError(
          `--${name} needs a value, not the option ${value} (write --${name}=<value> for a value that starts with --)`,
        );
      flags.set(name, value);
      if (REPEATABLE_FLAGS.has(name)) repeated.set(name, [...(repeated.get(name) ?? []), value]);
    } else {
      positional.push(argument);
    }
  }
  return { positional, flags, repeated };
}

function allowOnly(parsed: Parsed, allowed: string[]): void {
  const global = [
    "broker",
    "local",
    "json",
    "timeout",
    "progress",
    "help",
    "version",
    "tls-ca",
    "tls-servername",
    ...LOGIN_FLAGS,
  ];
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

function choiceFlag(parsed: Parsed, name: string, allowed: readonly string[]): string | undefined {
  const text = parsed.flags.get(name);
  if (text !== undefined && !allowed.includes(text))
    throw new UsageError(`--${name} must be one of ${allowed.join(", ")}, got ${JSON.stringify(text)}`);
  return text;
}

function need(parsed: Parsed, index: number, what: string): string {
  const value = parsed.positional[index];
  if (value === undefined) throw new UsageError(`missing ${what} (see --help)`);
  return value;
}

/**
 * `--local`: the address the broker of this machine (or container) listens on, from the settings
 * the broker itself reads (src/main.ts): BOOBLIK_PORT, and BOOBLIK_HOST, where a wildcard (the
 * broker's default 0.0.0.0, or ::) is reached through loopback. The Docker health check uses it, so
 * that `docker run -e BOOBLIK_PORT=9000` is checked on 9000 (it once stayed unhealthy, asking 7979).
 */
function localBroker(): string {
  const port = process.env.BOOBLIK_PORT || String(BROKER_PORT_DEFAULT);
  const host = process.env.BOOBLIK_HOST || "0.0.0.0";
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" || host === "[::]" ? "::1" : host;
  return reachable.includes(":") && !reachable.startsWith("[")
    ? `[${reachable}]:${port}`
    : `${reachable}:${port}`;
}

/**
 * `--tls-ca FILE` (BOOBLIK_TLS_CA): speak TLS to a broker started with --tls-cert, trusting the CA
 * in FILE; `--tls-servername NAME` when the certificate names the broker otherwise than --broker.
 */
function tlsOptions(parsed: Parsed): { ca: string; serverName?: string } | undefined {
  const file = parsed.flags.get("tls-ca") ?? (process.env.BOOBLIK_TLS_CA || undefined);
  const serverName = parsed.flags.get("tls-servername");
  if (file === undefined) {
    if (serverName !== undefined) throw new UsageError("--tls-servername needs --tls-ca (or BOOBLIK_TLS_CA)");
    return undefined;
  }
  let ca: string;
  try {
    ca = fs.readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(
      `--tls-ca ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  return serverName === undefined ? { ca } : { ca, serverName };
}

async function connect(parsed: Parsed): Promise<BooblikClient> {
  if (parsed.flags.has("local") && parsed.flags.has("broker"))
    throw new UsageError("give --broker or --local, not both");
  // An empty --broker is a mistake; an empty BOOBLIK_BROKER counts as unset (the way to clear it).
  const broker = parsed.flags.has("local")
    ? localBroker()
    : (parsed.flags.get("broker") ?? (process.env.BOOBLIK_BROKER || `127.0.0.1:${BROKER_PORT_DEFAULT}`));
  const { host, port } = asUsage(() =>
    parseHostPort(parsed.flags.has("local") ? "--local (BOOBLIK_HOST, BOOBLIK_PORT)" : "--broker", broker),
  );
  const timeoutMs = flagValue(parsed, "timeout", parseDurationMs) ?? 5000;
  // 0 made every command fail at once with a timeout that read like the broker's fault.
  if (timeoutMs <= 0)
    throw new UsageError(`--timeout must be more than 0, got ${parsed.flags.get("timeout")}`);
  const login = loginOptions(parsed, (message) => new UsageError(message));
  const tls = tlsOptions(parsed);
  return BooblikClient.connect({
    ...login,
    ...(tls === undefined ? {} : { tls }),
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

const TOPICS_ACTIONS = ["list", "create", "delete", "describe", "alter", "add-partitions", "purge"];

async function topics(parsed: Parsed): Promise<number> {
  const action = need(parsed, 1, `topics action: ${TOPICS_ACTIONS.join(", ")}`);
  if (!TOPICS_ACTIONS.includes(action)) {
    throw new UsageError(`unknown topics action ${action} (${TOPICS_ACTIONS.join(", ")})`);
  }
  if (action !== "list") need(parsed, 2, "topic name");
  if (action === "alter" || action === "add-partitions") return changeTopic(parsed, action);
  if (action === "purge") return purgeTopic(parsed);
  allowOnly(
    parsed,
    action === "create"
      ? [
          "partitions",
          "durability",
          "flush-interval",
          "write-mode",
          "segment-size",
          "retention-size",
          "retention-time",
          "max-record-size",
          "timestamp-type",
          "cleanup-policy",
          "if-not-exists",
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
              ["topic", "partitions", "durability", "timestamps", "records"],
              metadata.topics.map((topic) => [
                topic.name,
                topic.partitions.length,
                String(topic.config.durability),
                topic.timestampType,
                topic.partitions.reduce((sum, p) => sum + (p.nextOffset - p.logStartOffset), 0),
              ]),
            ),
      );
      return 0;
    }
    if (action === "create") {
      const name = need(parsed, 2, "topic name");
      try {
        await client.createTopic(name, config);
      } catch (error) {
        // --if-not-exists (Kafka's kafka-topics flag): a script or walkthrough that runs twice goes
        // on; the existing topic is kept as it is, whatever settings were given.
        if (
          !(
            parsed.flags.has("if-not-exists") &&
            error instanceof BooblikError &&
            error.code === "TOPIC_EXISTS"
          )
        )
          throw error;
        print(parsed, { created: null, exists: name }, () => `topic ${name} exists already; kept as it is`);
        return 0;
      }
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
          // METADATA carries the timestamp type on its own; the config object has it too.
          ...Object.entries({ ...topic.config, timestampType: topic.timestampType }).map(
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
    throw new UsageError(`unknown topics action ${action} (${TOPICS_ACTIONS.join(", ")})`);
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
  // Checked here like every other value: a bad one is the command line's fault (exit 2), not a
  // refusal by the broker (it was exit 1 while only the broker checked it).
  set("durability", choiceFlag(parsed, "durability", DURABILITY_POLICIES));
  set("flushIntervalMs", flagValue(parsed, "flush-interval", parseDurationMs));
  set("writeMode", choiceFlag(parsed, "write-mode", WRITE_MODES));
  set("segmentBytes", flagValue(parsed, "segment-size", parseBytes));
  set("maxRecordBytes", flagValue(parsed, "max-record-size", parseBytes));
  set("retentionBytes", flagValue(parsed, "retention-size", parseBytes));
  set("retentionMs", flagValue(parsed, "retention-time", parseDurationMs));
  set("timestampType", choiceFlag(parsed, "timestamp-type", TIMESTAMP_TYPES));
  set("cleanupPolicy", choiceFlag(parsed, "cleanup-policy", CLEANUP_POLICIES));
  return config;
}

// --- topics alter, topics add-partitions ----------------------------------------------------------

const ALTER_FLAGS = [
  "durability",
  "flush-interval",
  "retention-size",
  "retention-time",
  "max-record-size",
  "timestamp-type",
  "cleanup-policy",
];

/** `none` (no retention) or a value of `parse`. */
function orNone<T>(parse: (what: string, text: string) => T): (what: string, text: string) => T | null {
  return (what, text) => (text === "none" ? null : parse(what, text));
}

/** `topics alter` (ALTER_TOPIC) and `topics add-partitions` (ADD_PARTITIONS). */
async function changeTopic(parsed: Parsed, action: "alter" | "add-partitions"): Promise<number> {
  const name = need(parsed, 2, "topic name");
  // Read before connecting: a bad value is a usage error, whatever the broker's state.
  if (action === "add-partitions") {
    allowOnly(parsed, ["partitions"]);
    const partitions = integerFlag(parsed, "partitions", 1, PARTITIONS_MAX);
    if (partitions === undefined) throw new UsageError("missing --partitions N: the new partition count");
    const client = await connect(parsed);
    try {
      // "Raise to N" when the topic has N already is done: exit 0, so that running a walkthrough
      // (README) or a provisioning script twice works. Fewer than now stays an error (the broker's).
      const current = (await client.metadata([name])).topics[0]!.partitions.length;
      if (current === partitions) {
        print(
          parsed,
          { topic: name, partitions, changed: false },
          () => `topic ${name} has ${partitions} partitions already`,
        );
        return 0;
      }
      await client.addPartitions(name, partitions);
      print(parsed, { topic: name, partitions }, () => `topic ${name} now has ${partitions} partitions`);
      return 0;
    } finally {
      client.close();
    }
  }
  if (parsed.flags.has("write-mode") || parsed.flags.has("segment-size") || parsed.flags.has("partitions")) {
    throw new UsageError(
      "--write-mode and --segment-size cannot change on an existing topic; use topics add-partitions for --partitions",
    );
  }
  allowOnly(parsed, ALTER_FLAGS);
  const changes: Record<string, unknown> = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) changes[key] = value;
  };
  set("durability", choiceFlag(parsed, "durability", DURABILITY_POLICIES));
  set("flushIntervalMs", flagValue(parsed, "flush-interval", parseDurationMs));
  set("retentionBytes", flagValue(parsed, "retention-size", orNone(parseBytes)));
  set("retentionMs", flagValue(parsed, "retention-time", orNone(parseDurationMs)));
  set("maxRecordBytes", flagValue(parsed, "max-record-size", parseBytes));
  set("timestampType", choiceFlag(parsed, "timestamp-type", TIMESTAMP_TYPES));
  set("cleanupPolicy", choiceFlag(parsed, "cleanup-policy", CLEANUP_POLICIES));
  if (Object.keys(changes).length === 0) {
    throw new UsageError(
      `nothing to change: give at least one of ${ALTER_FLAGS.map((f) => `--${f}`).join(", ")}`,
    );
  }
  const client = await connect(parsed);
  try {
    const config = await client.alterTopic(name, changes);
    print(parsed, { topic: name, config }, () =>
      [
        `altered topic ${name}`,
        ...Object.keys(changes).map((key) => {
          const value = config[key];
          return `  ${key}: ${value === null ? "none" : String(value)}`;
        }),
      ].join("\n"),
    );
    return 0;
  } finally {
    client.close();
  }
}

// --- topics purge ---------------------------------------------------------------------------------

/** Where `--before` points: an offset (digits), the visible end (`end`), or a time (T). */
type PurgePoint =
  | { kind: "offset"; offset: number }
  | { kind: "end" }
  | { kind: "time"; timestampMs: number };

function parsePurgePoint(what: string, text: string): PurgePoint {
  const trimmed = text.trim();
  // Digits are an offset here (not milliseconds, as T reads them elsewhere): a purge is by offset
  // first, as Kafka's DeleteRecords is; a time needs a unit or a date.
  if (/^\d+$/.test(trimmed)) {
    const offset = Number(trimmed);
    if (!Number.isSafeInteger(offset)) throw new InvalidArgumentError(`${what}: ${trimmed} is beyond 2^53`);
    return { kind: "offset", offset };
  }
  if (trimmed === "end") return { kind: "end" };
  return { kind: "time", timestampMs: parseTimeArgument(what, trimmed, Date.now()) };
}

/**
 * `topics purge` (PURGE). A time becomes an offset per partition first (LIST_OFFSETS by time: the
 * first record at or after it; none means every record is older, so the point is the end the
 * lookup saw, and records produced after it stay). One PURGE for every partition: the broker checks
 * them all before any moves.
 */
async function purgeTopic(parsed: Parsed): Promise<number> {
  allowOnly(parsed, ["before", "partition"]);
  const name = need(parsed, 2, "topic name");
  const point = flagValue(parsed, "before", parsePurgePoint);
  if (point === undefined)
    throw new UsageError("missing --before <offset|end|T>: records below it stop being readable");
  const only = integerFlag(parsed, "partition", 0, PARTITIONS_MAX - 1);
  const client = await connect(parsed);
  try {
    const topic = (await client.metadata([name])).topics[0]!;
    const chosen = topic.partitions.filter((p) => only === undefined || p.partition === only);
    if (chosen.length === 0)
      throw new InvalidArgumentError(
        `topic ${name} has no partition ${only} (it has ${topic.partitions.length})`,
      );
    const requests = await Promise.all(
      chosen.map(async (p) => {
        if (point.kind === "offset") return { partition: p.partition, beforeOffset: point.offset };
        if (point.kind === "end") return { partition: p.partition, beforeOffset: -1 };
        const found = await client.offsetForTime(name, p.partition, point.timestampMs);
        return { partition: p.partition, beforeOffset: found.offset < 0 ? found.nextOffset : found.offset };
      }),
    );
    const purged = await client.purge(name, requests);
    const rows = purged.map((entry, i) => ({
      partition: entry.partition,
      before: requests[i]!.beforeOffset,
      logStartOffset: entry.logStartOffset,
    }));
    print(parsed, { topic: name, partitions: rows }, () =>
      [
        `purged topic ${name}${point.kind === "time" ? ` (records older than ${new Date(point.timestampMs).toISOString()})` : ""}`,
        table(
          ["partition", "before", "earliest now"],
          rows.map((row) => [row.partition, row.before < 0 ? "end" : row.before, row.logStartOffset]),
        ),
      ].join("\n"),
    );
    return 0;
  } finally {
    client.close();
  }
}

async function offsets(parsed: Parsed): Promise<number> {
  allowOnly(parsed, ["at"]);
  const name = need(parsed, 1, "topic");
  const at = flagValue(parsed, "at", (what, text) => parseTimeArgument(what, text, Date.now()));
  const client = await connect(parsed);
  try {
    const topic = (await client.metadata([name])).topics[0]!;
    if (at === undefined) {
      print(parsed, topic.partitions, () =>
        table(
          ["partition", "earliest", "next"],
          topic.partitions.map((p) => [p.partition, p.logStartOffset, p.nextOffset]),
        ),
      );
      return 0;
    }
    // Kafka's ListOffsets by time: the first offset whose record timestamp is ≥ the time asked.
    const found = await Promise.all(
      topic.partitions.map(async (p) => ({
        partition: p.partition,
        ...(await client.offsetForTime(name, p.partition, at)),
      })),
    );
    print(
      parsed,
      found.map((f) => ({
        partition: f.partition,
        offset: f.offset,
        timestamp: f.timestampMs,
        nextOffset: f.nextOffset,
      })),
      () =>
        `first offset with a timestamp at or after ${new Date(at).toISOString()} (${at}):\n` +
        table(
          ["partition", "offset", "timestamp", "next"],
          found.map((f) =>
            f.offset < 0
              ? [f.partition, "none", "-", f.nextOffset]
              : [f.partition, f.offset, new Date(f.timestampMs).toISOString(), f.nextOffset],
          ),
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

/** What one run wrote to one partition. */
interface PartitionWritten {
  partition: number;
  records: number;
  firstOffset: number;
  lastOffset: number;
}

function describeWritten(written: PartitionWritten[]): string {
  if (written.length === 0) return "nothing";
  return written
    .map((w) =>
      w.records === 1
        ? `partition ${w.partition} offset ${w.firstOffset}`
        : `partition ${w.partition} offsets ${w.firstOffset}..${w.lastOffset} (${w.records} records)`,
    )
    .join(", ");
}

/**
 * Line numbers (ascending, distinct) as ranges, "1-17, 25, 30-31"; beyond `maxRanges` ranges the
 * rest is counted, not listed (a refusal report must stay one readable line).
 */
function lineRanges(lines: readonly number[], maxRanges = 20): string {
  const ranges: string[] = [];
  let index = 0;
  let rangeCount = 0;
  while (index < lines.length) {
    const first = lines[index]!;
    let last = first;
    while (index + 1 < lines.length && lines[index + 1] === last + 1) last = lines[++index]!;
    index++;
    rangeCount++;
    if (ranges.length < maxRanges) ranges.push(first === last ? `${first}` : `${first}-${last}`);
  }
  if (rangeCount > ranges.length) ranges.push(`and ${rangeCount - ranges.length} more ranges`);
  return ranges.join(", ");
}

/** Lines 1..`lastLine` that are not in `excluded` (ascending, distinct), as ranges. */
function complementRanges(lastLine: number, excluded: readonly number[]): number[] {
  // Only built after a refusal, when the caller reports exactly which lines went in.
  const kept: number[] = [];
  let next = 0;
  for (let line = 1; line <= lastLine; line++) {
    if (next < excluded.length && excluded[next] === line) {
      next++;
      continue;
    }
    kept.push(line);
  }
  return kept;
}

const ENCODER = new TextEncoder();

/** `--header k=v` values: UTF-8 key, UTF-8 value (`k=` is an empty value), in the order given. */
function headerFlags(parsed: Parsed): { key: string; value: Uint8Array }[] {
  return (parsed.repeated.get("header") ?? []).map((text) => {
    const equals = text.indexOf("=");
    if (equals <= 0)
      throw new UsageError(`--header must be key=value (a non-empty key), got ${JSON.stringify(text)}`);
    return { key: text.slice(0, equals), value: ENCODER.encode(text.slice(equals + 1)) };
  });
}

/**
 * The exact size of `record` alone in a batch (what the producer checks against the topic's
 * maxRecordBytes, its largest batch): the batch header and the record with timestamp and offset
 * deltas of 0 (one byte each).
 */
function oneRecordBatchBytes(record: RecordInput): number {
  const field = (bytes: Uint8Array | null) =>
    bytes === null ? 1 : sizeOfVarint(bytes.length) + bytes.length;
  const headers = record.headers ?? [];
  let body = 1 + 1 + 1 + field(record.key) + field(record.value) + sizeOfVarint(headers.length);
  for (const header of headers) {
    const keyBytes = utf8Length(header.key);
    body += sizeOfVarint(keyBytes) + keyBytes + field(header.value);
  }
  return RECORDS_OFFSET + sizeOfVarint(body) + body;
}

async function produce(parsed: Parsed): Promise<number> {
  allowOnly(parsed, [
    "partition",
    "key",
    "key-separator",
    "header",
    "timestamp",
    "empty-as-null",
    "file",
    "skip-invalid",
  ]);
  const topic = need(parsed, 1, "topic");
  const partition = integerFlag(parsed, "partition", 0, PARTITION_MAX);
  const fixedKey = parsed.flags.get("key");
  const separator = parsed.flags.get("key-separator");
  if (fixedKey !== undefined && separator !== undefined)
    throw new UsageError(
      "give --key (one key for every line) or --key-separator (a key on each line), not both",
    );
  if (separator === "") throw new UsageError("--key-separator must not be empty");
  const headers = headerFlags(parsed);
  const timestamp = flagValue(parsed, "timestamp", (what, text) => parseTimeArgument(what, text, Date.now()));
  const emptyAsNull = parsed.flags.has("empty-as-null");
  const file = parsed.flags.get("file");
  const skipInvalid = parsed.flags.has("skip-invalid");
  const where = file === undefined ? "stdin" : file;
  const client = await connect(parsed);
  const byPartition = new Map<number, PartitionWritten>();
  const written = () => [...byPartition.values()].sort((a, b) => a.partition - b.partition);
  let count = 0;
  try {
    // The topic's largest batch, so that a line too large for it is found here, with its line
    // number, before the producer would refuse it (and fail the whole run at close).
    const found = (await client.metadata([topic])).topics[0]!;
    const maxRecordBytes =
      typeof found.config.maxRecordBytes === "number"
        ? Math.min(found.config.maxRecordBytes, RECORD_BATCH_BYTES_LIMIT)
        : RECORD_BATCH_BYTES_LIMIT;
    const producer = new Producer(client, { retryOnConnectionFailure: false });
    const total = file === undefined ? 0 : fs.statSync(file).size;
    const progress = new Progress(`producing to ${topic}`, total, parsed.flags.has("progress"));
    const source = file === undefined ? Bun.stdin.stream() : Bun.file(file).stream();
    const options = partition === undefined ? {} : { partition };
    const keyBytes: Uint8Array | null = fixedKey === undefined ? null : ENCODER.encode(fixedKey);
    const nullable = (bytes: Uint8Array): Uint8Array | null =>
      emptyAsNull && bytes.length === 0 ? null : bytes;
    let lineNumber = 0;
    const invalidLines: number[] = [];
    /** Every skipped line's number: with a refusal, the report says exactly which lines went in. */
    const skippedLines: number[] = [];
    let invalidCount = 0;
    let stoppedAt: { line: number; reason: string } | undefined;
    let failure: unknown;
    // Batches are pipelined: a batch sent after a refused one can still be stored. So every line's
    // outcome is kept, reading stops at the first refusal, and the report names the lines that
    // were stored and those that were not (issue 15: lines 1-17 refused, 18-20 stored, and the
    // old report only said "3 records were written").
    const refusedLines: number[] = [];
    let firstRefusal: { line: number; error: unknown } | undefined;
    let lastAcceptedLine = 0;
    try {
      for await (const line of lines(source)) {
        if (firstRefusal !== undefined) break;
        lineNumber++;
        progress.add(utf8Length(line) + 1, 1);
        let key: Uint8Array | null = keyBytes;
        let value: Uint8Array | null;
        let invalid: string | undefined;
        if (separator === undefined) value = nullable(ENCODER.encode(line));
        else {
          const at = line.indexOf(separator);
          if (at < 0) {
            invalid = `has no key separator ${JSON.stringify(separator)}`;
            value = null;
          } else {
            key = nullable(ENCODER.encode(line.slice(0, at)));
            value = nullable(ENCODER.encode(line.slice(at + separator.length)));
          }
        }
        const record: RecordInput = {
          key,
          value,
          timestamp: timestamp ?? Date.now(),
          ...(headers.length === 0 ? {} : { headers }),
        };
        if (invalid === undefined) {
          const batchBytes = oneRecordBatchBytes(record);
          if (batchBytes > maxRecordBytes)
            invalid = `is ${batchBytes} bytes as a batch of its own, more than the topic's maxRecordBytes (${maxRecordBytes}, its largest batch)`;
        }
        if (invalid !== undefined) {
          if (!skipInvalid) {
            stoppedAt = { line: lineNumber, reason: invalid };
            break;
          }
          invalidCount++;
          if (invalidLines.length < CLI_INVALID_LINES_LISTED) invalidLines.push(lineNumber);
          skippedLines.push(lineNumber);
          continue;
        }
        const thisLine = lineNumber;
        const { acknowledged } = await producer.accept(topic, record, options);
        lastAcceptedLine = thisLine;
        acknowledged.then(
          (result) => {
            const entry = byPartition.get(result.partition);
            if (entry === undefined) {
              byPartition.set(result.partition, {
                partition: result.partition,
                records: 1,
                firstOffset: result.offset,
                lastOffset: result.offset,
              });
            } else {
              entry.records++;
              entry.firstOffset = Math.min(entry.firstOffset, result.offset);
              entry.lastOffset = Math.max(entry.lastOffset, result.offset);
            }
          },
          (error: unknown) => {
            refusedLines.push(thisLine);
            if (firstRefusal === undefined || thisLine < firstRefusal.line)
              firstRefusal = { line: thisLine, error };
          },
        );
        count++;
      }
    } catch (error) {
      failure = error;
    }
    // Whatever stopped the run, what was accepted is finished first, so that the report is true.
    try {
      await producer.close();
    } catch (error) {
      failure ??= error;
    }
    progress.finish();
    const acknowledged = written().reduce((sum, w) => sum + w.records, 0);
    if (firstRefusal !== undefined) {
      const refused = refusedLines.sort((a, b) => a - b);
      const notStored = [...refused, ...skippedLines].sort((a, b) => a - b);
      const stored = complementRanges(lastAcceptedLine, notStored);
      const cause = (firstRefusal.error as Error).message;
      const reason =
        `line${refused.length === 1 ? "" : "s"} ${lineRanges(refused)} of ${where} ${refused.length === 1 ? "was" : "were"} refused ` +
        `(line ${firstRefusal.line}: ${cause}); stopped reading after line ${lineNumber}`;
      const report =
        stored.length === 0
          ? "no line was stored"
          : `line${stored.length === 1 ? "" : "s"} ${lineRanges(stored)} ${stored.length === 1 ? "was" : "were"} stored (${acknowledged} record${acknowledged === 1 ? "" : "s"}): ${describeWritten(written())}`;
      if (parsed.flags.has("json")) {
        throw new ReportedFailure(
          reason,
          {
            produced: acknowledged,
            partitions: written(),
            refusedLines: lineRanges(refused, Number.MAX_SAFE_INTEGER),
            storedLines: lineRanges(stored, Number.MAX_SAFE_INTEGER),
            linesRead: lineNumber,
          },
          firstRefusal.error,
        );
      }
      console.error(`booblik-cli: ${reason}`);
      console.error(`booblik-cli: ${report}`);
      if (stoppedAt !== undefined)
        console.error(`booblik-cli: line ${stoppedAt.line} of ${where} ${stoppedAt.reason} (not sent)`);
      if (skippedLines.length > 0)
        console.error(
          `booblik-cli: skipped ${skippedLines.length} invalid lines: ${lineRanges(skippedLines)}`,
        );
      return EXIT_FAILED;
    }
    if (failure !== undefined || stoppedAt !== undefined) {
      const reason =
        stoppedAt !== undefined
          ? `line ${stoppedAt.line} of ${where} ${stoppedAt.reason}; stopped there (--skip-invalid skips such lines)`
          : `failed after line ${lineNumber} of ${where}: ${(failure as Error).message}`;
      const report =
        acknowledged === 0
          ? "nothing was written"
          : `${acknowledged} of the records before it were written: ${describeWritten(written())}`;
      if (parsed.flags.has("json")) {
        throw new ReportedFailure(reason, { produced: acknowledged, partitions: written() }, failure);
      }
      console.error(`booblik-cli: ${reason}`);
      console.error(`booblik-cli: ${report}`);
      return EXIT_FAILED;
    }
    if (invalidCount > 0) {
      console.error(
        `booblik-cli: skipped ${invalidCount} invalid lines (too large for the topic's maxRecordBytes of ${maxRecordBytes}${separator === undefined ? "" : ", or without a key separator"}): ` +
          `line${invalidCount === 1 ? "" : "s"} ${invalidLines.join(", ")}${invalidCount > invalidLines.length ? ", …" : ""}`,
      );
    }
    print(
      parsed,
      { produced: count, skippedInvalidLines: invalidCount, partitions: written() },
      () => `produced ${count} record${count === 1 ? "" : "s"} to ${topic}: ${describeWritten(written())}`,
    );
    return 0;
  } finally {
    client.close();
  }
}

/** A failure whose report (what was done before it) goes into the `--json` error object. */
class ReportedFailure extends Error {
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown>, cause: unknown) {
    super(message, { cause });
    this.details = details;
  }
}

/** Errors a follower outlives: the broker went away (restart, network) and may come back. */
function brokerLost(error: unknown): boolean {
  return (
    error instanceof BooblikError &&
    (error.code === "CONNECTION_ERROR" ||
      error.code === "TIMEOUT" ||
      error.code === "CLOSED" ||
      error.code === "TOO_MANY_CONNECTIONS")
  );
}

/**
 * `consume --follow` after losing the broker: one reconnect loop for all partitions (the first
 * partition to notice starts it, the others wait for it), with backoff, saying on stderr what it
 * does; each partition then resumes at its next offset.
 */
class Reconnector {
  private running: Promise<void> | undefined;
  private readonly client: BooblikClient;
  private readonly topic: string;

  constructor(client: BooblikClient, topic: string) {
    this.client = client;
    this.topic = topic;
  }

  after(error: unknown): Promise<void> {
    this.running ??= this.reconnect(error).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async reconnect(first: unknown): Promise<void> {
    const { host, port } = this.client.options;
    let reason = (first as Error).message;
    let backoffMs = CLI_RECONNECT_BACKOFF_MS_MIN;
    for (let attempt = 1; ; attempt++) {
      console.error(
        `booblik-cli: lost the broker ${host}:${port} (${reason}); reconnecting in ${backoffMs} ms (attempt ${attempt})`,
      );
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
      try {
        await this.client.metadata([this.topic]);
        console.error(`booblik-cli: reconnected to ${host}:${port}`);
        return;
      } catch (error) {
        if (!brokerLost(error)) throw error;
        reason = (error as Error).message;
        backoffMs = Math.min(backoffMs * 2, CLI_RECONNECT_BACKOFF_MS_MAX);
      }
    }
  }
}

async function consume(parsed: Parsed): Promise<number> {
  allowOnly(parsed, ["partition", "from", "from-time", "follow", "max", "format"]);
  const topic = need(parsed, 1, "topic");
  const onlyPartition = integerFlag(parsed, "partition", 0, PARTITION_MAX);
  const fromText = parsed.flags.get("from") ?? "earliest";
  const fromTime = flagValue(parsed, "from-time", (what, text) => parseTimeArgument(what, text, Date.now()));
  if (fromTime !== undefined && parsed.flags.has("from"))
    throw new UsageError("give --from (an offset) or --from-time (a time), not both");
  let from: StartPosition;
  if (fromTime !== undefined) from = { timestampMs: fromTime };
  else if (fromText === "earliest" || fromText === "latest") from = fromText;
  else if (/^\s*\d+\s*$/.test(fromText))
    from = asUsage(() => parseInteger("--from", fromText, 0, OFFSET_MAX));
  else throw new UsageError(`--from must be earliest, latest or an offset, got ${JSON.stringify(fromText)}`);
  const max = integerFlag(parsed, "max", 0, OFFSET_MAX);
  const formatText = parsed.flags.get("format") ?? (parsed.flags.has("json") ? "json" : undefined);
  const chosen = formatText === undefined ? undefined : asUsage(() => recordPrinter(formatText));
  const follow = parsed.flags.has("follow");
  const client = await connect(parsed);
  // A follower waiting for records writes nothing, so only this notices `| head` has exited.
  const stopWatching = follow
    ? watchStdoutReader(CLI_CLOSED_PIPE_CHECK_MS, () => process.exit(0))
    : () => undefined;
  const out = new Output();
  // Set just before this command closes its client. The fetches still waiting then fail with CLOSED,
  // which brokerLost() counts as a lost broker; without this flag, they started a reconnect and
  // printed "lost the broker … (connection closed by the client)" while the command was ending (seen
  // on every `consume <topic> --follow --max 3` to a file once the closing drain() waited for the
  // write it started, which lets those failures run before the exit).
  let closing = false;
  try {
    if (max === 0) return 0;
    const partitionCount = (await client.metadata([topic])).topics[0]!.partitions.length;
    const partitions =
      onlyPartition !== undefined ? [onlyPartition] : Array.from({ length: partitionCount }, (_, i) => i);
    // Raw output cannot say which partition a record came from; with several, the default says it.
    const printRecord: RecordPrinter =
      chosen ?? recordPrinter(partitions.length === 1 ? "raw" : "%p\t%o\t%s\n");
    const reconnector = new Reconnector(client, topic);
    const reader = new RecordBatchReader();
    let count = 0;
    let done = false;
    // Resolved once --max records were printed: partitions still waiting in a long poll for records
    // that may never come must not keep the command running.
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const readPartition = async (partition: number): Promise<void> => {
      let start: StartPosition = from;
      for (;;) {
        const consumer = new Consumer(client, { topic, partition, from: start, stopAtEnd: !follow });
        try {
          // Fetch by fetch (no promise per record); the output is handed to stdout after each one.
          for await (const batch of consumer.batches()) {
            // The records of this fetch (views into it), then printed with a pause for the pipe.
            const consumed: ConsumedRecord[] = [];
            forEachConsumedRecord(topic, partition, batch, (record) => consumed.push(record), reader);
            for (const record of consumed) {
              if (done) return;
              printRecord(record, out);
              start = record.offset + 1;
              if (++count === max) {
                done = true;
                finish();
              }
              if (out.full) await out.drain();
            }
            await out.drain();
            if (done) return;
          }
          return;
        } catch (error) {
          if (!follow || closing || !brokerLost(error)) throw error;
          // The offset --from earliest|latest stood for, once resolved: resolving "latest" again
          // after the restart would skip what was produced in between.
          const resolved = consumer.position;
          if (resolved !== undefined && (typeof start !== "number" || resolved > start)) start = resolved;
          await reconnector.after(error);
          console.error(
            `booblik-cli: resuming partition ${partition} ${typeof start === "number" ? `at offset ${start}` : typeof start === "object" ? `from time ${new Date(start.timestampMs).toISOString()}` : `from ${start}`}`,
          );
        }
      }
    };
    if (follow) {
      const all = Promise.all(partitions.map(readPartition));
      // Once finished, the waiting fetches fail when the client closes: nobody needs that answer.
      all.catch(() => undefined);
      await Promise.race([all, finished]);
    } else for (const partition of partitions) await readPartition(partition);
  } finally {
    stopWatching();
    closing = true;
    client.close();
    await out.drain();
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
  const action = need(parsed, 1, "segment action: dump, verify or repair");
  const target = need(parsed, 2, action === "dump" ? "segment file" : "path to verify");
  if (action === "dump") allowOnly(parsed, ["max", "format"]);
  if (action === "verify" || action === "repair") allowOnly(parsed, []);
  if (!fs.existsSync(target)) throw new BooblikError("INVALID_ARGUMENT", `${target} does not exist`);
  // Format-1 segments are not damaged, only old: say what converts them.
  const old = findFormat1Segment(target);
  if (old !== undefined)
    throw new BooblikError(
      "BAD_SEGMENT_FILE",
      `${old} is a segment of storage format 1; this build reads format 2. Convert the data directory offline with booblik-cli migrate <data dir>`,
    );
  if (action === "dump") return dumpSegment(parsed, target);
  if (action === "repair") {
    const repairs = repairDataDirectory(target);
    if (repairs.length === 0)
      throw new BooblikError(
        "INVALID_ARGUMENT",
        `nothing to repair: ${target} holds no partition directories`,
      );
    print(parsed, { partitions: repairs }, () => {
      const out: string[] = [];
      for (const r of repairs) {
        out.push(
          `${path.basename(r.directory)}: kept ${r.segments} segments, ${r.nextOffset > r.logStartOffset ? `offsets ${r.logStartOffset}..${r.nextOffset - 1}` : `no records (next offset ${r.nextOffset})`}` +
            `${r.offsetsUnreadable > 0 ? ` (${r.offsetsUnreadable} of them unreadable, kept in place)` : ""}; ` +
            `cut ${r.bytesCut} bytes${r.segmentsDropped > 0 ? `, removed ${r.segmentsDropped} segment files left by a crash (empty, or a header that never reached the disk)` : ""}` +
            `${r.quarantineFilesRemoved > 0 ? `, removed ${r.quarantineFilesRemoved} quarantine files of deleted segments` : ""}`,
        );
        for (const range of r.damagedRanges) out.push(`  damaged, kept: ${range}`);
        for (const q of r.quarantined) out.push(`  quarantined: ${q}`);
        for (const h of r.headersRewritten) out.push(`  header rewritten: ${h}`);
      }
      return out.join("\n");
    });
    return 0;
  }
  if (action === "verify") {
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
        ...(walk.end.kind === "invalid"
          ? (() => {
              const damage = {
                file,
                position: walk.end.position,
                offset: walk.end.offset,
                reason: walk.end.reason,
                readableFromOffset: undefined,
              };
              return { damage, damages: [damage] };
            })()
          : { damage: undefined, damages: [] }),
        unverifiedTail: undefined,
        crashLeftover: undefined,
        leftovers: [],
        quarantine: [],
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
              : result.crashLeftover !== undefined || result.leftovers.length > 0
                ? "ok (crash leftover)"
                : result.unverifiedTail !== undefined
                  ? "ok (unverified tail)"
                  : "ok",
          ]),
        ),
      ];
      for (const result of results) {
        for (const damage of result.damages) {
          const readable =
            damage.readableFromOffset === undefined
              ? ""
              : `; readable again from offset ${damage.readableFromOffset}`;
          out.push(
            `damage: ${damage.file} at file position ${damage.position} (offset ${damage.offset}): ${damage.reason}${readable}`,
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
        for (const { file, bytes } of result.leftovers)
          out.push(
            `note: ${file} holds no record (${bytes} bytes) and the segment before it already holds offsets past its base: the leftover of a failed roll; recovery removes it`,
          );
        for (const q of result.quarantine) {
          out.push(
            q.segmentExists
              ? `quarantine: ${q.file} (${q.bytes} bytes cut from ${path.basename(q.segment)} at file position ${q.position}; never read by the broker, removed with its segment; delete it once inspected)`
              : `quarantine: ${q.file} (${q.bytes} bytes; its segment ${path.basename(q.segment)} is gone: the broker's next start removes it)`,
          );
        }
        if (result.unverifiedTail !== undefined) {
          out.push(
            `note: ${result.unverifiedTail.file} ends with ${result.unverifiedTail.bytes} bytes after its last whole record ` +
              `(at byte ${result.unverifiedTail.position}: ${result.unverifiedTail.reason}): a write in progress, or a torn tail that recovery cuts`,
          );
        }
      }
      const quarantineFiles = results.reduce((sum, result) => sum + result.quarantine.length, 0);
      const quarantineNote =
        quarantineFiles === 0
          ? ""
          : ` (${quarantineFiles} quarantine file${quarantineFiles === 1 ? "" : "s"}, ${formatBytes(results.reduce((sum, result) => sum + result.quarantine.reduce((b, q) => b + q.bytes, 0), 0))})`;
      out.push(
        damaged.length === 0
          ? `verified ${results.length} partitions: no damage${quarantineNote}`
          : `${damaged.length} damaged${quarantineNote}`,
      );
      return out.join("\n");
    });
    return damaged.length === 0 ? 0 : EXIT_DAMAGE;
  }
  throw new UsageError(`unknown segment action ${action} (dump, verify, repair)`);
}

const CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"];

/** A short, quoted preview of bytes as UTF-8 text for the human dump; `null` for null. */
function preview(bytes: Uint8Array | null, decoder: TextDecoder, maxChars: number): string {
  if (bytes === null) return "null";
  const text = decoder.decode(bytes.length > maxChars * 4 ? bytes.subarray(0, maxChars * 4) : bytes);
  return JSON.stringify(text.length > maxChars ? `${text.slice(0, maxChars)}…` : text);
}

let lastIsoMs = Number.NaN;
let lastIso = "";

/** ISO 8601 of a timestamp; the last one is kept, as the records of a batch mostly share theirs. */
function isoTimestamp(timestampMs: number): string {
  if (timestampMs === lastIsoMs) return lastIso;
  const date = new Date(timestampMs);
  lastIsoMs = timestampMs;
  lastIso = timestampMs < 0 || Number.isNaN(date.getTime()) ? String(timestampMs) : date.toISOString();
  return lastIso;
}

/**
 * `segment dump`, streamed: each batch and its records are printed as the walk reaches them and
 * handed to stdout a chunk at a time (src/storage/inspect.ts, walkSegmentChunks), waiting for the
 * pipe in between, so memory stays constant and the first line comes at once. A dump of 2 M
 * records once collected them all first (950 MB) and overflowed the stack in the table; `| head -3`
 * printed nothing. Per batch: where it is, its offsets, size, codec, timestamp type and range, and
 * whether its batch CRC holds (the frame CRC is checked by the walk: a mismatch ends it); then its
 * records (offset, timestamp, key, value, headers).
 */
async function dumpSegment(parsed: Parsed, file: string): Promise<number> {
  const max = integerFlag(parsed, "max", 0, OFFSET_MAX) ?? Number.POSITIVE_INFINITY;
  const formatText = parsed.flags.get("format");
  const printRecord = formatText === undefined ? undefined : asUsage(() => recordPrinter(formatText));
  const json = parsed.flags.has("json") && printRecord === undefined;
  // %t and %p come from the partition directory's name, <topic>-<partition>.
  const owner = /^(.*)-(\d+)$/.exec(path.basename(path.dirname(path.resolve(file))));
  const topic = owner?.[1] ?? "";
  const partition = owner === null ? 0 : Number(owner[2]);
  const decoder = new TextDecoder();
  const out = new Output();
  let printed = 0;
  let batchesPrinted = 0;
  /** JSON: a batch object is open (its records array not yet closed). */
  let batchOpen = false;
  let recordsInBatch = 0;
  let offsetWidth = 6;
  const text = (bytes: Uint8Array | null) => (bytes === null ? null : decoder.decode(bytes));
  const onEntry = (entry: InspectedEntry) => {
    if (printed >= max || printRecord !== undefined) return;
    const header = entry.header;
    const crcOk = computeBatchCrc(entry.batch, 0, entry.batch.length) === header.crc;
    const lastOffset = header.baseOffset + header.lastOffsetDelta;
    const codec = CODEC_NAMES[header.codecId] ?? `codec ${header.codecId}`;
    const timestampType = header.logAppendTime ? "LogAppendTime" : "CreateTime";
    if (json) {
      if (batchOpen) out.text("]}");
      out.text(
        `${batchesPrinted === 0 ? "" : ",\n"}${JSON.stringify({
          position: entry.position,
          baseOffset: header.baseOffset,
          lastOffset,
          recordCount: header.recordCount,
          bytes: header.sizeBytes,
          codec,
          timestampType,
          baseTimestamp: header.baseTimestamp,
          maxTimestamp: header.maxTimestamp,
          crcOk,
        }).slice(0, -1)},"records":[`,
      );
      batchOpen = true;
      recordsInBatch = 0;
    } else {
      out.text(
        `batch at byte ${entry.position}: offsets ${header.baseOffset}..${lastOffset} (${header.recordCount} records), ` +
          `${header.sizeBytes} bytes, codec ${codec}, ${timestampType} ${isoTimestamp(header.baseTimestamp)}` +
          `${header.maxTimestamp === header.baseTimestamp ? "" : `..${isoTimestamp(header.maxTimestamp)}`}, ` +
          `batch CRC ${crcOk ? "ok" : `MISMATCH (stored 0x${header.crc.toString(16)})`}` +
          `${header.codecId === 2 || header.codecId === 3 ? " (records not shown: this build does not decode its codec)" : ""}\n`,
      );
    }
    batchesPrinted++;
  };
  const onRecord = (record: InspectedRecord) => {
    if (printed >= max) return;
    const headers = record.record.headerCount === 0 ? [] : recordHeaders(record.record);
    if (printRecord !== undefined) {
      printRecord(
        {
          topic,
          partition,
          offset: record.offset,
          timestamp: record.timestamp,
          key: record.key,
          value: record.value,
          headers,
        },
        out,
      );
    } else if (json) {
      out.text(
        `${recordsInBatch === 0 ? "" : ","}${JSON.stringify({
          offset: record.offset,
          timestamp: record.timestamp,
          key: text(record.key),
          value: text(record.value),
          headers: headers.map((h) => ({ key: h.key, value: text(h.value) })),
        })}`,
      );
      recordsInBatch++;
    } else {
      const shownHeaders =
        headers.length === 0
          ? ""
          : `  headers ${headers.map((h) => `${h.key}=${preview(h.value, decoder, 20)}`).join(",")}`;
      out.text(
        `  ${String(record.offset).padEnd(offsetWidth)}  ${isoTimestamp(record.timestamp)}  ` +
          `key ${preview(record.key, decoder, 20)}  value ${preview(record.value, decoder, 60)}${shownHeaders}\n`,
      );
    }
    printed++;
  };
  const walk = walkSegmentChunks(
    file,
    onRecord,
    undefined,
    RECORD_PAYLOAD_BYTES_LIMIT,
    CLI_DUMP_READ_BYTES,
    onEntry,
  );
  let step = walk.next();
  if (!step.done) {
    const { baseOffset, sizeBytes } = step.value;
    // The offset column fits the largest offset the file can hold (rows come before the last is known).
    offsetWidth = Math.max(6, String(baseOffset + Math.floor(sizeBytes / RECORD_V2_BYTES_MIN)).length);
    if (json) out.text(`{"file":${JSON.stringify(file)},"baseOffset":${baseOffset},"batches":[\n`);
    else if (printRecord === undefined) {
      out.text(`segment ${file}: base offset ${baseOffset}, ${formatBytes(sizeBytes)}\n`);
    }
    try {
      for (step = walk.next(); !step.done; step = walk.next()) {
        if (out.full) await out.drain();
      }
    } finally {
      // Stopped by an error (a closed stdout): end the walk, which closes the segment file.
      if (!step.done) walk.next(true);
    }
  }
  const result = step.value;
  if (json) {
    out.text(
      `${batchOpen ? "]}" : ""}\n],"recordCount":${result.recordCount},"entryCount":${result.entryCount},"validEndBytes":${result.validEndBytes},"sizeBytes":${result.sizeBytes},"end":${JSON.stringify(result.end)}}\n`,
    );
  } else if (printRecord === undefined) {
    if (result.recordCount === 0) out.text("(no records)\n");
    out.text(
      result.end.kind === "clean"
        ? `end of log: ${result.entryCount} batches, ${result.recordCount} records, ${formatBytes(result.validEndBytes)} of ${formatBytes(result.sizeBytes)}\n`
        : `stops at byte ${result.end.position} (offset ${result.end.offset}): ${result.end.reason}; ${result.end.bytesAfter} bytes follow; ${result.recordCount} records in ${result.entryCount} batches before it\n`,
    );
  }
  await out.drain();
  return 0;
}

/**
 * `migrate <dir>`: the offline conversion of a format-1 data directory (src/storage/migrate-format1.ts
 * has the rules and the crash-safety steps). Exit 0 when the directory is in format 2 afterwards
 * (converted now, finished after an interrupted run, or nothing to do), 3 when the source holds
 * damage (nothing changed), 1 for any other refusal.
 */
async function migrate(parsed: Parsed): Promise<number> {
  allowOnly(parsed, ["drop-damaged-tail"]);
  const dataDir = need(parsed, 1, "data directory");
  if (parsed.positional.length > 2) throw new UsageError("migrate takes one data directory");
  if (!fs.existsSync(dataDir)) throw new BooblikError("INVALID_ARGUMENT", `${dataDir} does not exist`);
  const startedMs = performance.now();
  let progress: Progress | undefined;
  let reported = 0;
  let report: ReturnType<typeof migrateFormat1>;
  try {
    report = migrateFormat1(dataDir, {
      dropDamagedTail: parsed.flags.has("drop-damaged-tail"),
      lockDirectory: (directory) => {
        try {
          return DataDirLock.acquire(directory);
        } catch (error) {
          if (error instanceof DataDirLockedError)
            throw new BooblikError("DATA_DIR_LOCKED", `${error.message}: stop the broker before migrating`);
          throw error;
        }
      },
      onProgress: (bytesRead, bytesTotal) => {
        progress ??= new Progress("migrating", bytesTotal, parsed.flags.has("progress"));
        progress.add(bytesRead - reported);
        reported = bytesRead;
      },
    });
  } catch (error) {
    progress?.finish();
    if (!(error instanceof MigrationDamageError)) throw error;
    if (parsed.flags.has("json"))
      console.error(
        JSON.stringify({
          error: { code: error.code, message: error.message, exitCode: EXIT_DAMAGE, damage: error.damage },
        }),
      );
    else console.error(`booblik-cli: ${error.message}`);
    return EXIT_DAMAGE;
  }
  progress?.finish();
  const seconds = (performance.now() - startedMs) / 1000;
  print(parsed, { ...report, seconds }, () => {
    const lines: string[] = [];
    if (report.outcome === "nothing-to-do") lines.push(`nothing to do: ${report.notes.join("; ")}`);
    else {
      if (report.outcome === "migrated")
        lines.push(
          `migrated ${report.dataDir} to format 2: ${report.partitions} partitions, ${report.segments} segments, ` +
            `${report.records} records in ${report.batches} batches (${formatBytes(report.bytesRead)} read, ` +
            `${formatBytes(report.bytesWritten)} written) in ${seconds.toFixed(1)} s`,
        );
      else lines.push(`finished the migration of ${report.dataDir} to format 2`);
      lines.push(
        `the format-1 original is kept at ${report.backupDir}; remove it once the broker runs well on the new directory`,
      );
      for (const note of report.notes) lines.push(`note: ${note}`);
    }
    return lines.join("\n");
  });
  return 0;
}

// --- Entry ------------------------------------------------------------------------------------------

async function run(parsed: Parsed): Promise<number> {
  const command = parsed.positional[0];
  if (parsed.flags.has("version")) {
    console.log(
      parsed.flags.has("json")
        ? JSON.stringify({ version: BOOBLIK_VERSION })
        : `booblik-cli ${BOOBLIK_VERSION}`,
    );
    return 0;
  }
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
    case "migrate":
      return migrate(parsed);
    case "users":
      return usersCommand(parsed, (message) => new UsageError(message));
    case "groups":
      return groupsCommand({
        positional: parsed.positional,
        flags: parsed.flags,
        usage: (message) => new UsageError(message),
        allowOnly: (allowed) => allowOnly(parsed, allowed),
        connect: () => connect(parsed),
        print: (json, human) => print(parsed, json, human),
        offsetFlag: (name) => integerFlag(parsed, name, 0, OFFSET_MAX),
        timeFlag: (name) =>
          flagValue(parsed, name, (what, text) => parseTimeArgument(what, text, Date.now())),
      });
    case "acl":
      return aclCommand({
        positional: parsed.positional,
        flags: parsed.flags,
        usage: (message) => new UsageError(message),
        allowOnly: (allowed) => allowOnly(parsed, allowed),
        connect: () => connect(parsed),
        print: (json, human) => print(parsed, json, human),
      });
    default:
      throw new UsageError(`unknown command ${command} (see --help)`);
  }
}

/** One line on stderr, or with --json one object: {"error":{"code","message","exitCode",…}}. */
function fail(
  json: boolean,
  exitCode: number,
  code: string,
  message: string,
  details?: Record<string, unknown>,
): never {
  if (json) console.error(JSON.stringify({ error: { code, message, exitCode, ...details } }));
  else console.error(`booblik-cli: ${message}`);
  process.exit(exitCode);
}

startGuard.done();
const argv = process.argv.slice(2);
// Known before parsing, so that a command line that does not parse is reported as JSON too.
const jsonErrors = argv.includes("--json");
let parsedArgs: Parsed | undefined;
try {
  parsedArgs = parseArgs(argv);
} catch (error) {
  fail(jsonErrors, EXIT_USAGE, "USAGE", (error as Error).message);
}
run(parsedArgs).then(
  (code) => process.exit(code),
  (error: unknown) => {
    // The reader of stdout has gone (`| head`): what it wanted, it got. Quietly, like cat.
    if (isClosedPipe(error)) process.exit(0);
    if (error instanceof UsageError) fail(jsonErrors, EXIT_USAGE, "USAGE", error.message);
    if (error instanceof ReportedFailure) {
      const cause = error.cause;
      fail(
        jsonErrors,
        EXIT_FAILED,
        cause instanceof BooblikError ? cause.code : "FAILED",
        error.message,
        error.details,
      );
    }
    if (error instanceof BooblikError) fail(jsonErrors, EXIT_FAILED, error.code, error.message);
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (typeof code === "string") fail(jsonErrors, EXIT_FAILED, code, (error as Error).message);
    if (process.env.BOOBLIK_DEBUG) console.error(error);
    fail(
      jsonErrors,
      EXIT_FAILED,
      "UNEXPECTED",
      `unexpected error: ${error instanceof Error ? error.message : String(error)}`,
    );
  },
);
