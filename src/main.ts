#!/usr/bin/env bun
/**
 * `bun run broker`: the broker process. Parses flags and BOOBLIK_* environment variables, opens the
 * data directory, starts the TCP server, prints one line saying what it did, and shuts down cleanly
 * on SIGTERM/SIGINT. A port in use, an address that cannot be bound, or a locked data directory is
 * a one-line message and exit code 1, never a half-started broker. Every option is read and checked
 * before anything starts: a bad value found after the data directory opened would exit without the
 * clean-shutdown mark, and the next start would scan the whole log as after a crash.
 */
// First, and as a bare import (which the import sorter leaves where it is): evaluated before any
// module that reads a setting while it loads (src/start-guard.ts).
import "./broker-guard.ts";
import fs from "node:fs";
import path from "node:path";
import { crc32cImplementation } from "../ffi/crc32c.ts";
import { LoginDelays } from "./auth/login-delays.ts";
import {
  CLIENT_PRINCIPAL_RULES,
  type ClientPrincipalRule,
  checkTlsContext,
  readTlsFiles,
  type TlsFiles,
} from "./auth/tls.ts";
import { Broker } from "./broker/broker.ts";
import { DURABILITY_POLICIES, type DurabilityPolicy } from "./broker/topic-config.ts";
import { readUsersFile } from "./broker/users-file.ts";
import { startGuard } from "./broker-guard.ts";
import { ConsoleAuth } from "./console/console-auth.ts";
import { BooblikError, IoError } from "./domain/errors.ts";
import {
  ADMIN_REQUEST_BURST_SECONDS,
  ADMIN_REQUESTS_PER_SECOND_DEFAULT,
  BROKER_PARTITIONS_DEFAULT_MAX,
  BROKER_PORT_DEFAULT,
  BROKER_TOPICS_DEFAULT_MAX,
  CONNECTIONS_PER_ADDRESS_DEFAULT,
  FETCH_RESPONSE_BYTES_MAX,
  FRAME_BYTES_DEFAULT_MAX,
  GROUP_INITIAL_REBALANCE_DELAY_MS_MAX,
  INBOUND_BUDGET_BYTES_DEFAULT,
  INBOUND_FREE_BYTES,
  KAFKA_PORT_DEFAULT,
  KAFKA_SENDFILE_BATCH_BYTES_MIN,
  MAPPED_ADDRESS_SPACE_BYTES_DEFAULT_MAX,
  OFFSETS_TOPIC_NAME,
  PARTITIONS_MAX,
  PRODUCER_IDS_BROKER_DEFAULT_MAX,
  PRODUCER_IDS_PER_PARTITION_MAX,
  REQUEST_MIN_BYTES_PER_SECOND,
  REQUEST_TIMEOUT_MS_DEFAULT,
  SEALED_READ_DESCRIPTORS_MIN,
} from "./domain/limits.ts";
import { parseBytes, parseDurationMs, parseInteger } from "./domain/units.ts";
import { KafkaListener } from "./kafka/listener.ts";
import { KafkaSasl } from "./kafka/sasl.ts";
import { largestProducibleBatchBytes } from "./protocol/messages.ts";
import { AdminRateLimiter, KAFKA_ADMIN_REQUESTS } from "./server/admin-rate.ts";
import { COMPILER_PRIORITIES, CompilerThreadPriority } from "./server/compiler-threads.ts";
import { type MetricsTargets, startMetricsServer } from "./server/metrics-http.ts";
import { BROKER_VERSION, BrokerServer, type FetchPath } from "./server/server.ts";
import { sealedReadDescriptors } from "./storage/read-descriptors.ts";
import { WRITE_MODES, type WriteMode } from "./storage/segment-writer.ts";

interface OptionSpec {
  flag: string;
  env: string;
  fallback: string;
  help: string;
}

const OPTIONS = {
  dataDir: { flag: "--data-dir", env: "BOOBLIK_DATA_DIR", fallback: "./data", help: "data directory" },
  host: {
    flag: "--host",
    env: "BOOBLIK_HOST",
    fallback: "127.0.0.1",
    help: "address to bind (loopback by default; another address needs --allow-anonymous yes)",
  },
  usersFile: {
    flag: "--users-file",
    env: "BOOBLIK_USERS_FILE",
    fallback: "none",
    help: "SCRAM users (made with booblik-cli users add): every client must log in; reread on SIGHUP",
  },
  authorizer: {
    flag: "--authorizer",
    env: "BOOBLIK_AUTHORIZER",
    fallback: "none",
    help: "acl: enforce the ACLs of <data-dir>/acls.json on both listeners (deny unless an ACL allows; docs/security.md); none: everyone may do everything",
  },
  superUsers: {
    flag: "--super-users",
    env: "BOOBLIK_SUPER_USERS",
    fallback: "none",
    help: "with --authorizer acl: principals allowed everything, comma-separated (User:admin,User:ops)",
  },
  allowAnonymous: {
    flag: "--allow-anonymous",
    env: "BOOBLIK_ALLOW_ANONYMOUS",
    fallback: "no",
    help: "yes: serve a non-loopback address without authentication (anyone who reaches the port can read, write and delete every topic)",
  },
  port: {
    flag: "--port",
    env: "BOOBLIK_PORT",
    fallback: String(BROKER_PORT_DEFAULT),
    help: "TCP port (0 picks a free one)",
  },
  durability: {
    flag: "--durability",
    env: "BOOBLIK_DURABILITY",
    fallback: "force",
    help: `default durability of new topics: ${DURABILITY_POLICIES.join(" | ")}`,
  },
  flushInterval: {
    flag: "--flush-interval",
    env: "BOOBLIK_FLUSH_INTERVAL",
    fallback: "1s",
    help: "force interval of the `interval` durability",
  },
  writeMode: {
    flag: "--write-mode",
    env: "BOOBLIK_WRITE_MODE",
    fallback: "file",
    help: `default write path of new topics: ${WRITE_MODES.join(" | ")}`,
  },
  segmentBytes: {
    flag: "--segment-size",
    env: "BOOBLIK_SEGMENT_SIZE",
    fallback: "128MiB",
    help: "default segment size of new topics",
  },
  retentionBytes: {
    flag: "--retention-size",
    env: "BOOBLIK_RETENTION_SIZE",
    fallback: "none",
    help: "default retention per partition by size (e.g. 10GiB), or none",
  },
  retentionMs: {
    flag: "--retention-time",
    env: "BOOBLIK_RETENTION_TIME",
    fallback: "none",
    help: "default retention by age (e.g. 7d, 12h), or none",
  },
  maxRecordBytes: {
    flag: "--max-record-size",
    env: "BOOBLIK_MAX_RECORD_SIZE",
    fallback: "1MiB",
    help: "default largest record batch of new topics, whole (a record's value plus its batch's headers; at most what fits a segment)",
  },
  maxFrameBytes: {
    flag: "--max-frame-size",
    env: "BOOBLIK_MAX_FRAME_SIZE",
    fallback: `${FRAME_BYTES_DEFAULT_MAX / 2 ** 20}MiB`,
    help: "largest request frame accepted",
  },
  maxConnections: {
    flag: "--max-connections",
    env: "BOOBLIK_MAX_CONNECTIONS",
    fallback: "1024",
    help: "connections beyond this are refused",
  },
  maxConnectionsPerAddress: {
    flag: "--max-connections-per-address",
    env: "BOOBLIK_MAX_CONNECTIONS_PER_ADDRESS",
    fallback: String(CONNECTIONS_PER_ADDRESS_DEFAULT),
    help: "connections one client address may hold",
  },
  maxAdminRequestsPerSecond: {
    flag: "--max-admin-requests-per-second",
    env: "BOOBLIK_MAX_ADMIN_REQUESTS_PER_SECOND",
    fallback: String(ADMIN_REQUESTS_PER_SECOND_DEFAULT),
    help: `admin requests (topic creates, deletes, alters, partition additions, purges, ACL changes) one client address may make per second, after a burst of ${ADMIN_REQUEST_BURST_SECONDS} seconds' worth`,
  },
  requestTimeoutMs: {
    flag: "--request-timeout",
    env: "BOOBLIK_REQUEST_TIMEOUT",
    fallback: `${REQUEST_TIMEOUT_MS_DEFAULT / 1000}s`,
    help: `a request must arrive whole within this, plus 1 s per ${REQUEST_MIN_BYTES_PER_SECOND / 2 ** 20} MiB of its size`,
  },
  maxInboundBytes: {
    flag: "--max-inbound-memory",
    env: "BOOBLIK_MAX_INBOUND_MEMORY",
    fallback: `${INBOUND_BUDGET_BYTES_DEFAULT / 2 ** 20}MiB`,
    help: `memory for requests still arriving, all connections together (beyond ${INBOUND_FREE_BYTES / 1024} KiB each); at least the max frame size`,
  },
  maxTopics: {
    flag: "--max-topics",
    env: "BOOBLIK_MAX_TOPICS",
    fallback: String(BROKER_TOPICS_DEFAULT_MAX),
    help: "topics the broker takes; a create beyond is refused with LIMIT_EXCEEDED",
  },
  maxPartitions: {
    flag: "--max-partitions",
    env: "BOOBLIK_MAX_PARTITIONS",
    fallback: String(BROKER_PARTITIONS_DEFAULT_MAX),
    help: "partitions of all topics together; a create beyond is refused with LIMIT_EXCEEDED",
  },
  maxProducerIds: {
    flag: "--max-producer-ids",
    env: "BOOBLIK_MAX_PRODUCER_IDS",
    fallback: String(PRODUCER_IDS_BROKER_DEFAULT_MAX),
    help: `idempotent producer ids all partitions remember together (each also at most ${PRODUCER_IDS_PER_PARTITION_MAX}); beyond, a partition meeting a new producer forgets its own idle longest`,
  },
  maxMappedBytes: {
    flag: "--max-mapped-memory",
    env: "BOOBLIK_MAX_MAPPED_MEMORY",
    fallback: `${MAPPED_ADDRESS_SPACE_BYTES_DEFAULT_MAX / 2 ** 30}GiB`,
    help: "address space of mapped partitions together (partitions × segment size); a create beyond is refused",
  },
  maxOpenSegmentFiles: {
    flag: "--max-open-segment-files",
    env: "BOOBLIK_MAX_OPEN_SEGMENT_FILES",
    fallback: "auto",
    help: "idle read descriptors of old segments beyond this are closed (auto: a quarter of the open-files limit, at most 4096)",
  },
  idleTimeoutMs: {
    flag: "--idle-timeout",
    env: "BOOBLIK_IDLE_TIMEOUT",
    fallback: "10m",
    help: "close connections idle this long",
  },
  metricsPort: {
    flag: "--metrics-port",
    env: "BOOBLIK_METRICS_PORT",
    fallback: "off",
    help: "serve Prometheus /metrics and /ready over HTTP on this port (off by default)",
  },
  metricsHost: {
    flag: "--metrics-host",
    env: "BOOBLIK_METRICS_HOST",
    fallback: "same as --host",
    help: "address the metrics listener binds",
  },
  kafkaPort: {
    flag: "--kafka-port",
    env: "BOOBLIK_KAFKA_PORT",
    fallback: String(KAFKA_PORT_DEFAULT),
    help: "serve the Kafka wire protocol on this port (off disables it; 0 picks a free one; with --users-file its clients log in with SASL; see docs/kafka.md)",
  },
  kafkaAutoCreateTopics: {
    flag: "--kafka-auto-create-topics",
    env: "BOOBLIK_KAFKA_AUTO_CREATE_TOPICS",
    fallback: "off",
    help: "on: a Kafka Metadata request naming an unknown topic creates it (Kafka's auto.create.topics.enable): on | off",
  },
  kafkaAutoCreatePartitions: {
    flag: "--kafka-auto-create-partitions",
    env: "BOOBLIK_KAFKA_AUTO_CREATE_PARTITIONS",
    fallback: "1",
    help: "partitions of a topic auto-created by a Kafka client (Kafka's num.partitions)",
  },
  groupInitialRebalanceDelay: {
    flag: "--group-initial-rebalance-delay",
    env: "BOOBLIK_GROUP_INITIAL_REBALANCE_DELAY",
    fallback: "0",
    help: "the first rebalance of a consumer group with no members waits this long for more members, and as long again while more arrive (Kafka's group.initial.rebalance.delay.ms; e.g. 3s), at most 5m",
  },
  kafkaAdvertisedListener: {
    flag: "--kafka-advertised-listener",
    env: "BOOBLIK_KAFKA_ADVERTISED_LISTENER",
    fallback: "the bound address",
    help: "host:port that Kafka METADATA tells clients to connect to",
  },
  console: {
    flag: "--console",
    env: "BOOBLIK_CONSOLE",
    fallback: "on",
    help: "serve the web console at /console/ on the metrics listener, to this machine only: on | off",
  },
  fetchPath: {
    flag: "--fetch-path",
    env: "BOOBLIK_FETCH_PATH",
    fallback: "sendfile",
    help: "how FETCH sends records on plain connections: sendfile (zero-copy) | copy (TLS connections always copy)",
  },
  kafkaFetchPath: {
    flag: "--kafka-fetch-path",
    env: "BOOBLIK_KAFKA_FETCH_PATH",
    fallback: "copy",
    help: `how Kafka Fetch sends records on plain connections: copy (every batch read and CRC-checked) | sendfile (batches of ${KAFKA_SENDFILE_BATCH_BYTES_MIN / 1024} KiB and more zero-copy, unchecked: for consumers that check CRCs)`,
  },
  compilerPriority: {
    flag: "--compiler-priority",
    env: "BOOBLIK_COMPILER_PRIORITY",
    fallback: "normal",
    help: "CPU priority of JavaScriptCore's compiler threads: normal | idle (SCHED_IDLE: a request's wake-up preempts a compilation, halving the latency tail on an idle machine; but when every core is busy a collection waits for a compiler thread that gets no CPU: stalls of 0.9-1.9 s measured)",
  },
  tlsCert: {
    flag: "--tls-cert",
    env: "BOOBLIK_TLS_CERT",
    fallback: "none",
    help: "PEM certificate: without --tls-port/--kafka-tls-port every listener (native, Kafka, metrics) speaks TLS only; with them --port and --kafka-port stay plain; needs --tls-key; reread on SIGHUP",
  },
  tlsKey: {
    flag: "--tls-key",
    env: "BOOBLIK_TLS_KEY",
    fallback: "none",
    help: "PEM private key of --tls-cert",
  },
  saslPlainWithoutTls: {
    flag: "--sasl-plain-without-tls",
    env: "BOOBLIK_SASL_PLAIN_WITHOUT_TLS",
    fallback: "no",
    help: "offer SASL PLAIN (the password itself on the wire) on a Kafka listener without TLS: yes | no",
  },
  tlsCa: {
    flag: "--tls-ca",
    env: "BOOBLIK_TLS_CA",
    fallback: "none",
    help: "PEM CA: clients on TLS listeners must present a certificate it signed (mutual TLS); without --users-file its subject is the principal; needs --tls-cert",
  },
  tlsPort: {
    flag: "--tls-port",
    env: "BOOBLIK_TLS_PORT",
    fallback: "none",
    help: "also serve the native protocol over TLS on this port, beside the plain --port (0 picks a free one); needs --tls-cert",
  },
  kafkaTlsPort: {
    flag: "--kafka-tls-port",
    env: "BOOBLIK_KAFKA_TLS_PORT",
    fallback: "none",
    help: "also serve the Kafka protocol over TLS (SSL, SASL_SSL) on this port, beside the plain --kafka-port; needs --tls-cert",
  },
  tlsHost: {
    flag: "--tls-host",
    env: "BOOBLIK_TLS_HOST",
    fallback: "same as --host",
    help: "address the TLS ports (--tls-port, --kafka-tls-port) bind; e.g. --host 127.0.0.1 --tls-host 0.0.0.0",
  },
  kafkaTlsAdvertisedListener: {
    flag: "--kafka-tls-advertised-listener",
    env: "BOOBLIK_KAFKA_TLS_ADVERTISED_LISTENER",
    fallback: "the bound TLS address",
    help: "host:port that Kafka METADATA on the --kafka-tls-port tells clients to connect to",
  },
  tlsClientPrincipal: {
    flag: "--tls-client-principal",
    env: "BOOBLIK_TLS_CLIENT_PRINCIPAL",
    fallback: "dn",
    help: "with --tls-ca and no --users-file, a client certificate's principal: dn (the subject, RFC 2253: CN=alice,O=Example) | cn (its CN: alice)",
  },
} satisfies Record<string, OptionSpec>;

type OptionName = keyof typeof OPTIONS;

class UsageError extends Error {}

/**
 * How this broker was started, for its usage line: the compiled executable by the name it was run
 * as (its `--help` once said `bun run broker`, which does not exist where only the binary was
 * copied), the package script as `bun run broker` (Bun sets npm_lifecycle_event for scripts), and
 * anything else as `bun <script>`.
 */
function invokedAs(): string {
  const script = process.argv[1] ?? "";
  // A compiled executable runs its entry point from Bun's embedded file system.
  if (script.startsWith("/$bunfs/") || script.startsWith("B:/~BUN/")) return path.basename(process.argv0);
  if (process.env.npm_lifecycle_event === "broker") return "bun run broker";
  return `bun ${path.relative(process.cwd(), script) || script}`;
}

function usage(): string {
  const lines = [
    `booblik ${BROKER_VERSION}: a Kafka-style message broker in one Bun process.`,
    "",
    `usage: ${invokedAs()} [options]`,
    "",
    "Every option can also come from its environment variable; a flag wins over the variable.",
    "",
  ];
  for (const spec of Object.values(OPTIONS)) {
    lines.push(`  ${`${spec.flag} <value>`.padEnd(28)} ${spec.help} (default ${spec.fallback}; ${spec.env})`);
  }
  lines.push(`  ${"--help".padEnd(28)} this text`);
  lines.push(`  ${"--version".padEnd(28)} the version`);
  return lines.join("\n");
}

/** Options the user gave (flag or environment), as opposed to defaults. */
const explicit = new Set<OptionName>();

function parseArguments(argv: string[]): Record<OptionName, string> {
  const values = {} as Record<OptionName, string>;
  const byFlag = new Map(Object.entries(OPTIONS).map(([name, spec]) => [spec.flag, name as OptionName]));
  for (const [name, spec] of Object.entries(OPTIONS) as [OptionName, OptionSpec][]) {
    const fromEnvironment = process.env[spec.env];
    values[name] = fromEnvironment ?? spec.fallback;
    if (fromEnvironment !== undefined) explicit.add(name);
  }
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i]!;
    const [flag, inline] = argument.includes("=")
      ? [argument.slice(0, argument.indexOf("=")), argument.slice(argument.indexOf("=") + 1)]
      : [argument, undefined];
    const name = byFlag.get(flag);
    if (name === undefined) throw new UsageError(`unknown option ${flag} (see --help)`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    // `--port --kafka-port off` took "--kafka-port" as the port, then refused "off" as an unknown
    // option (a README check, 2026-12-03): a value that is one of the options is a missing value.
    if (inline === undefined && byFlag.has(value.split("=")[0]!))
      throw new UsageError(`${flag} needs a value, not the option ${value}`);
    values[name] = value;
    explicit.add(name);
  }
  // No option means anything when empty: `--port=` or BOOBLIK_PORT="" must not become port 0.
  for (const [name, spec] of Object.entries(OPTIONS) as [OptionName, OptionSpec][]) {
    if (values[name].trim() === "") throw new UsageError(`${spec.flag} (${spec.env}) must not be empty`);
  }
  return values;
}

const optionalLimit = (text: string, parse: (t: string) => number) => (text === "none" ? null : parse(text));

function choice<T extends string>(what: string, text: string, allowed: readonly T[]): T {
  if (!allowed.includes(text as T))
    throw new UsageError(`${what} must be one of ${allowed.join(", ")}, got ${JSON.stringify(text)}`);
  return text as T;
}

/** 127.0.0.0/8, ::1 and `localhost`: addresses only this machine can reach. */
function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** `host:port` (an IPv6 host in brackets) for --kafka-advertised-listener. */
function parseHostPort(what: string, text: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d+)$/.exec(text);
  if (match === null) throw new UsageError(`${what} must be host:port, got ${JSON.stringify(text)}`);
  // An IPv6 host is written in brackets, and sent without them (as Kafka registers `[::1]:9092`).
  const host = match[1]!.startsWith("[") ? match[1]!.slice(1, -1) : match[1]!;
  return { host, port: parseInteger(what, match[2]!, 1, 65535) };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function describeOpen(report: Broker["openReport"]): string {
  const scanned =
    report.segmentsScanned === 0
      ? "nothing scanned"
      : `${plural(report.segmentsScanned, "segment")} scanned (${(report.bytesScanned / 2 ** 20).toFixed(1)} MiB)`;
  const shutdown =
    report.partitions === 0 ? "new" : report.cleanShutdown ? "clean shutdown" : "recovered after a crash";
  const cut = report.bytesCut > 0 ? `, ${report.bytesCut} torn bytes cut` : "";
  const lost =
    report.partitionsWithDurableLoss.length > 0
      ? `; DATA LOSS: ${report.durableBytesLost} bytes that had been forced are missing or failed their checks (cut, or kept in place as damaged ranges) in ${report.partitionsWithDurableLoss.join(", ")}`
      : "";
  const damaged =
    report.damagedRanges.length > 0
      ? `; DAMAGE: ${report.offsetsLost} offsets unreadable in ${plural(report.damagedRanges.length, "damaged range")}, kept in place (later segments kept): ${report.damagedRanges.join("; ")}`
      : "";
  const quarantined = report.quarantined.length > 0 ? `; QUARANTINED: ${report.quarantined.join("; ")}` : "";
  const rewritten =
    report.headersRewritten.length > 0 ? `; HEADER REWRITTEN: ${report.headersRewritten.join("; ")}` : "";
  const missing =
    report.partitionDirectoriesMissing.length > 0
      ? `; PARTITION DIRECTORY MISSING: ${report.partitionDirectoriesMissing.join(", ")} (created again, empty: a crash while it was being created, or removed by hand, its records then gone)`
      : "";
  const quarantineKept =
    report.quarantineFiles > 0 || report.quarantineFilesRemoved > 0
      ? `; ${plural(report.quarantineFiles, "quarantine file")} on disk (${report.quarantineBytes} bytes; removed with their segments; booblik-cli segment verify lists them)` +
        (report.quarantineFilesRemoved > 0
          ? `, ${plural(report.quarantineFilesRemoved, "quarantine file")} of deleted segments removed`
          : "")
      : "";
  const dropped =
    report.segmentsDropped > 0
      ? `, ${plural(report.segmentsDropped, "segment file")} left by a crash removed (empty, or a header that never reached the disk)`
      : "";
  const readOnly =
    report.readOnlyPartitions > 0
      ? `; DISK FULL: ${plural(report.readOnlyPartitions, "partition")} read-only until space is freed (reads work)`
      : "";
  const logStart =
    report.logStartProblems.length > 0 ? `; LOG START LOST: ${report.logStartProblems.join("; ")}` : "";
  return `${plural(report.topics, "topic")}, ${plural(report.partitions, "partition")}, ${plural(report.segments, "segment")} (${shutdown}, ${scanned}${cut}${dropped}) in ${report.durationMs.toFixed(1)} ms${readOnly}${lost}${damaged}${quarantined}${rewritten}${missing}${quarantineKept}${logStart}`;
}

/** --tls-cert, --tls-key and --tls-ca, read and checked; undefined without --tls-cert. */
function tlsPaths(values: Record<OptionName, string>): {
  cert: string | undefined;
  key: string | undefined;
  ca: string | undefined;
} {
  return {
    cert: values.tlsCert === "none" ? undefined : path.resolve(values.tlsCert),
    key: values.tlsKey === "none" ? undefined : path.resolve(values.tlsKey),
    ca: values.tlsCa === "none" ? undefined : path.resolve(values.tlsCa),
  };
}

function readTls(values: Record<OptionName, string>): TlsFiles | undefined {
  const { cert, key, ca } = tlsPaths(values);
  if (cert === undefined && key === undefined && ca === undefined) return undefined;
  if (cert === undefined || key === undefined) {
    throw new UsageError(
      "TLS needs both --tls-cert and --tls-key (--tls-ca is optional: it asks clients for certificates)",
    );
  }
  try {
    return readTlsFiles(cert, key, ca);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

async function main(): Promise<number> {
  if (process.argv.includes("--help") || process.argv.includes("-h")) {
    console.log(usage());
    return 0;
  }
  if (process.argv.includes("--version")) {
    console.log(`booblik ${BROKER_VERSION}`);
    return 0;
  }
  const values = parseArguments(process.argv.slice(2));
  // Every option, before anything starts (see the header).
  const port = parseInteger("port", values.port, 0, 65535);
  const durability: DurabilityPolicy = choice("durability", values.durability, DURABILITY_POLICIES);
  const writeMode: WriteMode = choice("write mode", values.writeMode, WRITE_MODES);
  const requestedFetchPath: FetchPath = choice("fetch path", values.fetchPath, ["sendfile", "copy"] as const);
  const tls = readTls(values);
  const tlsPort = values.tlsPort === "none" ? undefined : parseInteger("TLS port", values.tlsPort, 0, 65535);
  const kafkaTlsPort =
    values.kafkaTlsPort === "none"
      ? undefined
      : parseInteger("Kafka TLS port", values.kafkaTlsPort, 0, 65535);
  // Plain and TLS side by side (TLS ports named), or TLS only (a certificate and no TLS port).
  const sideBySide = tlsPort !== undefined || kafkaTlsPort !== undefined;
  if (sideBySide && tls === undefined) {
    throw new UsageError("--tls-port and --kafka-tls-port need a certificate: --tls-cert and --tls-key");
  }
  if (!sideBySide && (explicit.has("tlsHost") || explicit.has("kafkaTlsAdvertisedListener"))) {
    throw new UsageError(
      "--tls-host and --kafka-tls-advertised-listener apply to the TLS ports: give --tls-port or --kafka-tls-port (without them --tls-cert makes every listener TLS at --host)",
    );
  }
  if (explicit.has("tlsClientPrincipal") && tls?.ca === undefined) {
    throw new UsageError("--tls-client-principal needs client certificates: --tls-ca");
  }
  const clientPrincipalRule: ClientPrincipalRule = choice(
    "--tls-client-principal",
    values.tlsClientPrincipal,
    CLIENT_PRINCIPAL_RULES,
  );
  const tlsHost = values.tlsHost === "same as --host" ? values.host : values.tlsHost;
  /** The listeners at --host speak TLS (TLS-only mode). */
  const primaryTls = tls !== undefined && !sideBySide;
  if (primaryTls && explicit.has("fetchPath") && requestedFetchPath === "sendfile") {
    throw new UsageError(
      "--fetch-path sendfile cannot be combined with TLS only: sendfile would send records in clear text around the encryption; under TLS FETCH copies (with --tls-port the plain port keeps sendfile)",
    );
  }
  // sendfile bypasses the TLS stream (src/auth/tls.ts): records are copied through it instead; on
  // a TLS port beside a plain one the server decides per connection.
  const fetchPath: FetchPath = primaryTls ? "copy" : requestedFetchPath;
  const kafkaFetchPath: FetchPath = choice("--kafka-fetch-path", values.kafkaFetchPath, [
    "copy",
    "sendfile",
  ] as const);
  if (primaryTls && kafkaFetchPath === "sendfile") {
    throw new UsageError(
      "--kafka-fetch-path sendfile cannot be combined with TLS only: sendfile would send records in clear text around the encryption (with --kafka-tls-port the plain --kafka-port can use it)",
    );
  }
  const compilerPriority = choice("--compiler-priority", values.compilerPriority, COMPILER_PRIORITIES);
  const maxConnections = parseInteger("max connections", values.maxConnections, 1);
  const maxOpenSegmentFiles =
    values.maxOpenSegmentFiles === "auto"
      ? undefined
      : parseInteger("max open segment files", values.maxOpenSegmentFiles, SEALED_READ_DESCRIPTORS_MIN);
  const topicDefaults = {
    durability,
    writeMode,
    flushIntervalMs: parseDurationMs("flush interval", values.flushInterval),
    segmentBytes: parseBytes("segment size", values.segmentBytes),
    // Only when given: otherwise the record limit follows the segment size (a record must fit one).
    ...(explicit.has("maxRecordBytes")
      ? { maxRecordBytes: parseBytes("max record size", values.maxRecordBytes) }
      : {}),
    retentionBytes: optionalLimit(values.retentionBytes, (t) => parseBytes("retention size", t)),
    retentionMs: optionalLimit(values.retentionMs, (t) => parseDurationMs("retention time", t)),
  };
  const maxFrameBytes = parseBytes("max frame size", values.maxFrameBytes);
  // A default batch limit that no PRODUCE could carry, even to a one-character topic, is a
  // contradiction between two options: refuse it now rather than lower it at every CREATE_TOPIC.
  const largestRecordBytes = largestProducibleBatchBytes(maxFrameBytes, "t");
  if (topicDefaults.maxRecordBytes !== undefined && topicDefaults.maxRecordBytes > largestRecordBytes) {
    throw new UsageError(
      `--max-record-size ${topicDefaults.maxRecordBytes} does not fit a --max-frame-size of ${maxFrameBytes} ` +
        `bytes: a PRODUCE carries a record batch of at most ${largestRecordBytes} bytes`,
    );
  }
  const idleTimeoutMs = parseDurationMs("idle timeout", values.idleTimeoutMs);
  const groupInitialRebalanceDelayMs = parseDurationMs(
    "group initial rebalance delay",
    values.groupInitialRebalanceDelay,
  );
  if (groupInitialRebalanceDelayMs > GROUP_INITIAL_REBALANCE_DELAY_MS_MAX)
    throw new UsageError(
      `--group-initial-rebalance-delay must be at most ${GROUP_INITIAL_REBALANCE_DELAY_MS_MAX / 60_000}m, got ${JSON.stringify(values.groupInitialRebalanceDelay)}`,
    );
  const maxConnectionsPerAddress = parseInteger(
    "max connections per address",
    values.maxConnectionsPerAddress,
    1,
  );
  const maxAdminRequestsPerSecond = parseInteger(
    "max admin requests per second",
    values.maxAdminRequestsPerSecond,
    1,
  );
  const requestTimeoutMs = parseDurationMs("request timeout", values.requestTimeoutMs);
  const limits = {
    maxTopics: parseInteger("max topics", values.maxTopics, 1),
    maxPartitions: parseInteger("max partitions", values.maxPartitions, 1),
    maxMappedBytes: parseBytes("max mapped memory", values.maxMappedBytes),
    maxProducerIds: parseInteger("max producer ids", values.maxProducerIds, 1),
  };
  const allowAnonymous = choice("--allow-anonymous", values.allowAnonymous, ["yes", "no"] as const) === "yes";
  const authorizer = choice("--authorizer", values.authorizer, ["none", "acl"] as const);
  const superUsers =
    values.superUsers === "none"
      ? []
      : values.superUsers
          .split(",")
          .map((principal) => principal.trim())
          .filter((principal) => principal !== "");
  if (authorizer === "none" && superUsers.length > 0)
    throw new UsageError("--super-users needs --authorizer acl (without it everyone may do everything)");
  for (const principal of superUsers)
    if (!/^User:.+/.test(principal))
      throw new UsageError(`--super-users: ${JSON.stringify(principal)} is not of the form User:<name>`);
  const usersFile = values.usersFile === "none" ? undefined : path.resolve(values.usersFile);
  const users = usersFile === undefined ? undefined : readUsersFile(usersFile);
  if (users !== undefined && users.size === 0) {
    throw new UsageError(`users file ${usersFile} has no users: add one with booblik-cli users add`);
  }
  // Safe by default (Redis's protected mode): serving an address other machines can reach without
  // authentication must be asked for in words. Per listener: users authenticate on every one; on a
  // TLS listener with --tls-ca, the client certificate does.
  const authenticated = (speaksTls: boolean) => users !== undefined || (speaksTls && tls?.ca !== undefined);
  const anonymousReach = [
    ...(!isLoopback(values.host) && !authenticated(primaryTls) ? [values.host] : []),
    ...(sideBySide && !isLoopback(tlsHost) && !authenticated(true) && tlsHost !== values.host
      ? [tlsHost]
      : []),
  ];
  if (anonymousReach.length > 0 && !allowAnonymous) {
    throw new UsageError(
      `refusing to listen on ${anonymousReach.join(" and ")} without authentication: anyone who reaches it could create, read, write and delete every topic. ` +
        "Configure users (--users-file, made with booblik-cli users add), require client certificates on a TLS listener (--tls-ca), " +
        "bind a loopback address (the default, 127.0.0.1), " +
        "or accept that with --allow-anonymous yes (BOOBLIK_ALLOW_ANONYMOUS=yes).",
    );
  }
  const maxInboundBytes = parseBytes("max inbound memory", values.maxInboundBytes);
  // A frame the broker accepts must be able to get the budget it needs, or its connection would
  // wait forever.
  if (maxInboundBytes + INBOUND_FREE_BYTES < maxFrameBytes + 4) {
    throw new UsageError(
      `--max-inbound-memory (${maxInboundBytes} bytes) must be at least --max-frame-size (${maxFrameBytes} bytes)`,
    );
  }
  const metricsPort =
    values.metricsPort === "off" ? undefined : parseInteger("metrics port", values.metricsPort, 0, 65535);
  const metricsHost = values.metricsHost === "same as --host" ? values.host : values.metricsHost;
  // Kafka's port by default, so that a Kafka client works without asking (with a users file its
  // clients log in with SASL, as the native ones do).
  const kafkaPort =
    values.kafkaPort === "off" ? undefined : parseInteger("kafka port", values.kafkaPort, 0, 65535);
  const kafkaAdvertised =
    values.kafkaAdvertisedListener === "the bound address"
      ? undefined
      : parseHostPort("--kafka-advertised-listener", values.kafkaAdvertisedListener);
  const kafkaTlsAdvertised =
    values.kafkaTlsAdvertisedListener === "the bound TLS address"
      ? undefined
      : parseHostPort("--kafka-tls-advertised-listener", values.kafkaTlsAdvertisedListener);
  if (kafkaTlsPort !== undefined && kafkaPort === undefined) {
    throw new UsageError(
      "--kafka-tls-port serves beside the plain Kafka port, which --kafka-port off turns off; for a Kafka listener that speaks TLS only, use --tls-cert without --tls-port/--kafka-tls-port",
    );
  }
  if (kafkaTlsAdvertised !== undefined && kafkaTlsPort === undefined) {
    throw new UsageError("--kafka-tls-advertised-listener needs --kafka-tls-port");
  }
  const saslPlainWithoutTls =
    choice("--sasl-plain-without-tls", values.saslPlainWithoutTls, ["yes", "no"] as const) === "yes";
  const kafkaAutoCreate = choice("--kafka-auto-create-topics", values.kafkaAutoCreateTopics, [
    "on",
    "off",
  ] as const);
  const kafkaAutoCreatePartitions = parseInteger(
    "kafka auto-create partitions",
    values.kafkaAutoCreatePartitions,
    1,
    PARTITIONS_MAX,
  );
  const webConsole = choice("--console", values.console, ["on", "off"] as const) === "on";
  const dataDir = path.resolve(values.dataDir);

  if (maxOpenSegmentFiles !== undefined) sealedReadDescriptors.setLimit(maxOpenSegmentFiles);
  // Metrics first (when asked for), so /ready answers "not yet" while the data directory opens.
  const targets: MetricsTargets = { broker: undefined, server: undefined, ready: false };
  const loginDelays = new LoginDelays();
  let currentUsers = users;
  // The console's logins (with users): the same users, the same per-address delays.
  const consoleAuth =
    users === undefined || !webConsole
      ? undefined
      : new ConsoleAuth({
          users: () => currentUsers ?? new Map(),
          loginDelays,
          audit: (line) => console.log(line),
          secure: tls !== undefined,
        });
  if (consoleAuth !== undefined) targets.console = { authenticationFailures: () => consoleAuth.failures };
  let metrics: ReturnType<typeof startMetricsServer> | undefined;
  const metricsOptions = (files: TlsFiles | undefined) => ({
    console: webConsole,
    ...(files === undefined ? {} : { tls: files }),
    ...(consoleAuth === undefined ? {} : { consoleAuth }),
  });
  let metricsTls = tls;
  /**
   * The metrics port with new TLS files (SIGHUP): Bun.serve's reload ignores `tls` in Bun 1.4.4
   * (measured; oven-sh/bun#43815), so the server is started again on its port; requests in flight
   * finish on the old one. Returns 1 when it was rebound.
   */
  const reloadMetrics = (files: TlsFiles): number => {
    if (metrics === undefined || metricsTls === undefined) return 0;
    const boundPort = metrics.port ?? 0;
    metrics.stop(false);
    try {
      metrics = startMetricsServer(metricsHost, boundPort, targets, metricsOptions(files));
    } catch (error) {
      metrics = startMetricsServer(metricsHost, boundPort, targets, metricsOptions(metricsTls));
      throw error;
    }
    metricsTls = files;
    return 1;
  };
  // Signals that arrive while the data directory opens (a recovery can take minutes: the mapped
  // starts in operations.md): without a handler, SIGTERM, SIGINT and SIGHUP ended the process on the
  // spot and silently (exit 143, 130 and 129 in an operator's run, 2026-12-02, 2 s into a 5 s
  // start). They are remembered and acted on once the broker serves: SIGHUP rereads, SIGTERM or
  // SIGINT stops it cleanly.
  const startSignals: NodeJS.Signals[] = [];
  const startHandlers = (["SIGTERM", "SIGINT", "SIGHUP"] as const).map((signal) => {
    const handler = () => {
      if (startSignals.includes(signal)) return;
      startSignals.push(signal);
      console.log(
        `booblik: ${signal} during the start: ${signal === "SIGHUP" ? "rereading" : "stopping"} once the data directory is open and the listeners serve`,
      );
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  if (metricsPort !== undefined) {
    try {
      metrics = startMetricsServer(metricsHost, metricsPort, targets, metricsOptions(tls));
    } catch (error) {
      // Bun's error here carries no code, only "Failed to start server. Is port N in use?".
      const message = (error as Error).message;
      throw new UsageError(
        `cannot serve metrics on ${metricsHost}:${metricsPort}: ${/in use/.test(message) ? "address already in use (choose another --metrics-port, or --metrics-port off)" : message}`,
      );
    }
  }
  const authorization = authorizer === "acl" ? { superUsers } : undefined;
  // A first start that fails at a listener (a port in use) left the data directory it had just made
  // (its lock and an empty topics/; a README check, 2026-12-03): removed again, but only while it
  // holds nothing but that skeleton, so a topic a client made in the moment between listeners stays.
  const dataDirMadeNow = !fs.existsSync(dataDir);
  const removeUnusedDataDir = (): void => {
    if (!dataDirMadeNow) return;
    try {
      const entries = fs.readdirSync(dataDir);
      if (entries.some((entry) => entry !== ".lock" && entry !== "topics")) return;
      if (entries.includes("topics") && fs.readdirSync(path.join(dataDir, "topics")).length > 0) return;
      fs.rmSync(dataDir, { recursive: true });
    } catch {
      // Left as it is: the next start takes it like any data directory.
    }
  };
  const broker = await Broker.openAsync({ dataDir, topicDefaults, limits, authorization }, (opening) => {
    targets.broker = opening;
  }).catch((error: unknown) => {
    metrics?.stop(true);
    // A data directory this user cannot write (a read-only mount, an immutable or foreign-owned
    // directory) said only "mkdir failed: EROFS on …/topics" (a README check, 2026-12-03).
    if (error instanceof IoError && ["EROFS", "EACCES", "EPERM"].includes(error.errnoName))
      throw new UsageError(
        `cannot open the data directory ${dataDir}: ${error.message} (the broker must be able to write there: check its permissions and mount, or choose another --data-dir)`,
      );
    throw error;
  });
  const sasl =
    users === undefined
      ? undefined
      : new KafkaSasl({
          users: () => currentUsers ?? new Map(),
          // PLAIN sends the password itself: only inside TLS (per connection, sasl.ts) unless
          // asked for in words.
          plain: primaryTls || saslPlainWithoutTls,
          loginDelays,
          decoySecret: crypto.getRandomValues(new Uint8Array(32)),
          audit: (line) => console.log(line),
          counters: { authenticationFailures: 0 },
        });
  const server = new BrokerServer(broker, {
    loginDelays,
    hostname: values.host,
    port,
    maxFrameBytes,
    maxConnections,
    maxConnectionsPerAddress,
    maxAdminRequestsPerSecond,
    idleTimeoutMs,
    requestTimeoutMs,
    maxInboundBytes,
    fetchPath,
    maxFetchBytes: FETCH_RESPONSE_BYTES_MAX,
    auditLog: (line) => console.log(line),
    ...(users === undefined ? {} : { users }),
    ...(primaryTls ? { tls } : {}),
    ...(tls !== undefined && tlsPort !== undefined
      ? { tlsListener: { hostname: tlsHost, port: tlsPort, tls } }
      : {}),
    clientPrincipal: clientPrincipalRule,
  });
  let address: { hostname: string; port: number };
  try {
    address = server.listen();
  } catch (error) {
    await broker.close();
    removeUnusedDataDir();
    metrics?.stop(true);
    const code = (error as { code?: string }).code;
    const reason =
      code === "EADDRINUSE"
        ? "address already in use (is another broker running? choose another --port)"
        : code === "EADDRNOTAVAIL"
          ? "this machine has no such address (check --host)"
          : code === "EACCES"
            ? "permission denied (ports below 1024 need privileges)"
            : (error as Error).message;
    throw new UsageError(
      `cannot listen on ${values.host}:${port}: ${reason}${code === undefined ? "" : ` [${code}]`}`,
    );
  }
  let tlsAddress: { hostname: string; port: number } | undefined;
  if (tlsPort !== undefined) {
    try {
      tlsAddress = server.listenTls();
    } catch (error) {
      await server.stop();
      await broker.close();
      removeUnusedDataDir();
      metrics?.stop(true);
      const code = (error as { code?: string }).code;
      throw new UsageError(
        `cannot listen on ${tlsHost}:${tlsPort} (--tls-port): ${code === "EADDRINUSE" ? "address already in use (choose another --tls-port)" : (error as Error).message}`,
      );
    }
  }
  let kafka: KafkaListener | undefined;
  let kafkaAddress: ReturnType<KafkaListener["listen"]> | undefined;
  let restoredGroups = 0;
  let kafkaTlsAddress: ReturnType<KafkaListener["listen"]> | undefined;
  const kafkaAdminRate = new AdminRateLimiter(
    maxAdminRequestsPerSecond,
    undefined,
    (address, message) =>
      console.log(`booblik: audit: from ${address} (kafka): admin request refused: ${message}`),
    KAFKA_ADMIN_REQUESTS,
  );
  if (kafkaPort !== undefined) {
    targets.kafka = {
      authenticationFailures: () => sasl?.options.counters.authenticationFailures ?? 0,
      adminRefusals: () => kafkaAdminRate.refusals,
      listener: () => kafka,
    };
    kafka = new KafkaListener(broker, {
      hostname: values.host,
      port: kafkaPort,
      ...(kafkaAdvertised === undefined
        ? {}
        : { advertisedHost: kafkaAdvertised.host, advertisedPort: kafkaAdvertised.port }),
      maxFrameBytes,
      maxConnections,
      maxConnectionsPerAddress,
      idleTimeoutMs,
      requestTimeoutMs,
      inboundBudget: server.inboundBudget,
      // Its own allowance per address, next to the native listener's (which the server keeps private).
      adminRate: kafkaAdminRate,
      ...(kafkaAutoCreate === "on" ? { autoCreateTopics: { partitions: kafkaAutoCreatePartitions } } : {}),
      fetchPath: kafkaFetchPath,
      groups: { initialRebalanceDelayMs: groupInitialRebalanceDelayMs },
      log: (line) => console.log(`booblik: ${line}`),
      audit: (line) => console.log(line),
      ...(primaryTls ? { tls } : {}),
      ...(tls !== undefined && kafkaTlsPort !== undefined
        ? {
            tlsListener: {
              hostname: tlsHost,
              port: kafkaTlsPort,
              tls,
              ...(kafkaTlsAdvertised === undefined
                ? {}
                : { advertisedHost: kafkaTlsAdvertised.host, advertisedPort: kafkaTlsAdvertised.port }),
            },
          }
        : {}),
      clientPrincipal: clientPrincipalRule,
      ...(sasl === undefined ? {} : { sasl }),
    });
    try {
      kafkaAddress = kafka.listen();
      if (kafkaTlsPort !== undefined) kafkaTlsAddress = kafka.listenTls();
      const groups = kafka.handler.groups;
      restoredGroups = groups.restoredGroups;
      targets.groups = groups;
      server.kafkaGroups = {
        members: (group) => groups.describe(group)?.members.length ?? 0,
        groupIds: () => groups.list().map((summary) => summary.groupId),
      };
    } catch (error) {
      if (kafkaAddress !== undefined) await kafka.stop();
      await server.stop();
      await broker.close();
      removeUnusedDataDir();
      metrics?.stop(true);
      const code = (error as { code?: string }).code;
      throw new UsageError(
        kafkaAddress === undefined
          ? `cannot serve the Kafka protocol on ${values.host}:${kafkaPort}: ${code === "EADDRINUSE" ? "address already in use (choose another --kafka-port, or --kafka-port off)" : (error as Error).message}`
          : `cannot serve the Kafka protocol over TLS on ${tlsHost}:${kafkaTlsPort} (--kafka-tls-port): ${code === "EADDRINUSE" ? "address already in use (choose another --kafka-tls-port)" : (error as Error).message}`,
      );
    }
  }
  // Its first sweep only notes the compiler threads there are; the next one changes them.
  const compilerThreads =
    compilerPriority === "idle"
      ? CompilerThreadPriority.start((message) =>
          console.error(
            `booblik: compiler threads stay at normal priority (--compiler-priority idle could not be applied): ${message}`,
          ),
        )
      : undefined;
  targets.server = server;
  targets.ready = true;
  // Before the start line: a supervisor (or a test) may send SIGTERM as soon as it reads it.
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(
      `booblik: ${signal}: stopping (finishing in-flight requests, forcing, marking the shutdown clean)`,
    );
    const startMs = performance.now();
    try {
      targets.ready = false;
      compilerThreads?.stop();
      await kafka?.stop();
      await server.stop();
      await broker.close();
      metrics?.stop(true);
      if (broker.cleanMarksSkipped > 0) {
        console.log(
          `booblik: the disk is full: ${plural(broker.cleanMarksSkipped, "partition")} could not write the clean-shutdown mark; everything is forced and nothing is lost, the next start scans the unforced tail`,
        );
      }
      console.log(`booblik: stopped cleanly in ${(performance.now() - startMs).toFixed(0)} ms`);
      process.exit(0);
    } catch (error) {
      console.error(`booblik: shutdown failed: ${(error as Error).message}`);
      process.exit(1);
    }
  };
  const onHangUp = () => {
    if (usersFile !== undefined) {
      try {
        const reloaded = readUsersFile(usersFile);
        server.setUsers(reloaded);
        currentUsers = reloaded;
        console.log(`booblik: SIGHUP: reread ${usersFile}: ${plural(reloaded.size, "user")}`);
      } catch (error) {
        console.error(`booblik: SIGHUP: kept the users as they were: ${(error as Error).message}`);
      }
    }
    // Not while stopping: the listeners it would bind again are closing.
    if (tls !== undefined && !stopping) reloadTls();
  };
  process.on("SIGHUP", onHangUp);
  /**
   * SIGHUP: the certificate, key and CA read again and checked as at start (readTlsFiles) and by
   * Bun (checkTlsContext); then every TLS listener is bound again with them (the native and Kafka
   * ones by auth/tls-ports.ts ListeningPorts.reloadTls, the metrics port by reloadMetrics).
   * A file that fails any check keeps the old certificate on every listener, said on stderr.
   */
  let servedTls = tls;
  const reloadTls = () => {
    const paths = tlsPaths(values);
    let files: TlsFiles;
    try {
      files = readTlsFiles(paths.cert!, paths.key!, paths.ca);
      // The same files (a SIGHUP for the users file): nothing to rebind, so no connection attempt
      // is refused for it (auth/tls-ports.ts ListeningPorts.reloadTls).
      if (files.cert === servedTls?.cert && files.key === servedTls.key && files.ca === servedTls.ca) {
        console.log(`booblik: SIGHUP: the TLS certificate ${paths.cert} is unchanged`);
        return;
      }
      if ((files.ca === undefined) !== (tls?.ca === undefined)) {
        throw new Error(
          files.ca === undefined
            ? "the CA file (--tls-ca) is gone: client certificates cannot be turned off by a reload"
            : "client certificates cannot be turned on by a reload",
        );
      }
      checkTlsContext(files);
    } catch (error) {
      console.error(`booblik: SIGHUP: kept the TLS certificate as it was: ${(error as Error).message}`);
      return;
    }
    try {
      const rebound = server.reloadTls(files) + (kafka?.reloadTls(files) ?? 0) + reloadMetrics(files);
      servedTls = files;
      console.log(
        `booblik: SIGHUP: reread the TLS certificate ${paths.cert}${files.ca === undefined ? "" : ` and CA ${paths.ca}`}: ${plural(rebound, "listener")} serve it to new connections (open ones continue)`,
      );
    } catch (error) {
      console.error(
        `booblik: SIGHUP: a TLS listener could not be bound again with the new certificate and kept the old one: ${(error as Error).message}`,
      );
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  for (const [signal, handler] of startHandlers) process.off(signal, handler);
  const metricsNote =
    metrics === undefined
      ? ""
      : `, metrics on ${metrics.hostname}:${metrics.port}${webConsole ? " (console at /console/)" : ""}`;
  const clientCertificates =
    tls?.ca === undefined
      ? ""
      : `, client certificates required${users === undefined ? `; principal: the subject ${clientPrincipalRule === "dn" ? "DN" : "CN"}` : ""}`;
  const fetchNote =
    tls === undefined
      ? ""
      : primaryTls
        ? ` (TLS${clientCertificates})`
        : ` on plain connections, copy on TLS ones (TLS${clientCertificates})`;
  console.log(
    `booblik ${BROKER_VERSION} listening on ${address.hostname}:${address.port}${tlsAddress === undefined ? "" : ` and over TLS on ${tlsAddress.hostname}:${tlsAddress.port}`}${metricsNote}, data ${dataDir}, ` +
      `durability ${durability}, write path ${writeMode}, fetch ${fetchPath}${fetchNote}, CRC32C ${crc32cImplementation}; ` +
      `opened ${describeOpen(broker.openReport)}` +
      (users === undefined ? "" : `; SCRAM login required (${plural(users.size, "user")})`) +
      (authorization === undefined
        ? ""
        : `; ACLs enforced (${plural(broker.acls.size, "ACL")}, super users: ${superUsers.length === 0 ? "none" : superUsers.join(", ")})`),
  );
  if (kafkaAddress !== undefined) {
    console.log(
      `booblik: Kafka protocol on ${kafkaAddress.hostname}:${kafkaAddress.port}, advertised to clients as ${kafkaAddress.advertisedHost.includes(":") ? `[${kafkaAddress.advertisedHost}]` : kafkaAddress.advertisedHost}:${kafkaAddress.advertisedPort}` +
        (kafkaFetchPath === "sendfile"
          ? `; Fetch sends batches of ${KAFKA_SENDFILE_BATCH_BYTES_MIN / 1024} KiB and more with sendfile, unchecked (--kafka-fetch-path)`
          : "") +
        (restoredGroups > 0
          ? `; ${plural(restoredGroups, "consumer group")} with members restored from ${OFFSETS_TOPIC_NAME}`
          : ""),
    );
    const bracketed = (host: string) => (host.includes(":") ? `[${host}]` : host);
    if (kafkaTlsAddress !== undefined) {
      console.log(
        `booblik: Kafka protocol over TLS on ${kafkaTlsAddress.hostname}:${kafkaTlsAddress.port}, advertised to its clients as ${bracketed(kafkaTlsAddress.advertisedHost)}:${kafkaTlsAddress.advertisedPort}`,
      );
    }
    const tlsProtocol = sasl === undefined ? "SSL" : "SASL_SSL";
    const tlsMechanisms =
      sasl === undefined
        ? ""
        : ` with sasl.mechanism ${[...sasl.mechanisms, ...(sasl.mechanisms.includes("PLAIN") ? [] : ["PLAIN"])].join(", ")}`;
    if (primaryTls) {
      console.log(`booblik: Kafka clients must use security.protocol=${tlsProtocol}${tlsMechanisms}`);
    } else if (kafkaTlsAddress !== undefined) {
      console.log(
        `booblik: Kafka clients must use security.protocol=${sasl === undefined ? "PLAINTEXT" : `SASL_PLAINTEXT with sasl.mechanism ${sasl.mechanisms.join(", ")}`} on port ${kafkaAddress.port}, ` +
          `${tlsProtocol}${tlsMechanisms} on port ${kafkaTlsAddress.port}`,
      );
    } else if (sasl !== undefined) {
      console.log(
        `booblik: Kafka clients must use security.protocol=SASL_PLAINTEXT with sasl.mechanism ${sasl.mechanisms.join(", ")}`,
      );
    }
    if (kafkaAdvertised === undefined && ["0.0.0.0", "::", "[::]"].includes(kafkaAddress.advertisedHost)) {
      console.log(
        `booblik: WARNING: Kafka clients are told to connect to ${kafkaAddress.advertisedHost}, which they cannot reach; set --kafka-advertised-listener host:port`,
      );
    }
  }
  if (anonymousReach.length > 0) {
    const reachable = [
      ...(anonymousReach.includes(values.host) ? [`${address.hostname}:${address.port}`] : []),
      ...(tlsAddress !== undefined && anonymousReach.includes(tlsHost)
        ? [`${tlsAddress.hostname}:${tlsAddress.port}`]
        : []),
    ];
    console.log(
      `booblik: WARNING: no authentication (--allow-anonymous yes): anyone who can reach ${reachable.length > 0 ? reachable.join(" or ") : anonymousReach.join(" or ")} can create, read, write and delete every topic`,
    );
  }
  // What the start signals asked for, now that the broker serves.
  if (startSignals.includes("SIGHUP")) onHangUp();
  const stopSignal = startSignals.find((signal) => signal !== "SIGHUP");
  if (stopSignal !== undefined) void shutdown(stopSignal);
  return -1; // keep running
}

startGuard.done();
main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof BooblikError) {
      console.error(`booblik: ${error.message}`);
    } else {
      console.error("booblik: failed to start:", error);
    }
    process.exit(1);
  },
);
