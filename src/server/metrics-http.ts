/**
 * The opt-in HTTP listener (`--metrics-port`): Prometheus metrics at /metrics and readiness at
 * /ready. It starts before the data directory is opened, so that /ready can say "not yet" (503, with
 * the recovery progress) while a large directory recovers, instead of the port being silent.
 *
 * Owns: the Bun.serve listener and the metric families. Reads the broker and the TCP server when
 * they exist; before that, only the process and recovery series have values.
 */
import type { Server } from "bun";
import { bunTlsOptions, type TlsFiles } from "../auth/tls.ts";
import type { Broker, TopicDescription } from "../broker/broker.ts";
import type { GroupDescription } from "../broker/groups.ts";
import { type Histogram, MetricsRegistry } from "../broker/metrics.ts";
import type { ConsoleAuth } from "../console/console-auth.ts";
import { createConsole } from "../console/console-http.ts";
import type { ConsoleGroupsView } from "../console/groups.ts";
import type { BrokerServer } from "./server.ts";

export interface MetricsTargets {
  broker: Broker | undefined;
  server: BrokerServer | undefined;
  /** True once the broker opened its data directory and listens. */
  ready: boolean;
  /** The Kafka listener's group coordinator, for the console's groups page (when it runs). */
  groups?: ConsoleGroupsView | undefined;
  /** The Kafka listener's counters, when it runs. */
  kafka?: {
    authenticationFailures(): number;
    adminRefusals(): number;
    /** Undefined until the listener exists (main.ts sets the targets first). */
    listener(): KafkaListenerMetrics | undefined;
  };
  /** The console's logins, when the broker has users (src/console/console-auth.ts). */
  console?: { authenticationFailures(): number };
}

/** What /metrics reads of the Kafka listener (kafka/listener.ts KafkaListener). */
export interface KafkaListenerMetrics {
  readonly connectionCount: number;
  readonly counters: {
    readonly connectionsRefused: number;
    readonly requests: number;
    readonly closedForRequest: number;
    readonly sendfileBytes: number;
  };
  readonly requestLatency: ReadonlyMap<string, Histogram>;
  readonly responseErrors: ReadonlyMap<string, ReadonlyMap<string, number>>;
  readonly traffic: {
    readonly produceRecords: number;
    readonly produceBytes: number;
    readonly fetchBytes: number;
  };
  /** Fetch answers held for connections that have not read them yet (kafka/fetch-buffers.ts). */
  readonly fetchHeld: {
    readonly heldBytes: number;
    readonly heldPeakBytes: number;
    readonly roundsWithoutRoom: number;
  };
}

export function buildRegistry(targets: MetricsTargets): MetricsRegistry {
  const registry = new MetricsRegistry();
  const counter = (name: string, help: string, read: (server: BrokerServer) => number) =>
    registry.register(name, "counter", help, () =>
      targets.server === undefined ? [] : [[{}, read(targets.server)]],
    );
  // Security (docs/security.md): failed logins (wrong password, unknown user, a request before the
  // login) and admin requests refused by --max-admin-requests-per-second, per listener.
  const perListener =
    (native: (server: BrokerServer) => number, kafka: (k: NonNullable<MetricsTargets["kafka"]>) => number) =>
    (): [Record<string, string>, number][] => [
      ...(targets.server === undefined
        ? []
        : [[{ listener: "native" }, native(targets.server)] as [Record<string, string>, number]]),
      ...(targets.kafka === undefined
        ? []
        : [[{ listener: "kafka" }, kafka(targets.kafka)] as [Record<string, string>, number]]),
    ];
  registry.register(
    "booblik_authentication_failures_total",
    "counter",
    "Failed logins: wrong password, unknown user, malformed exchange, or a request before the login.",
    () => [
      ...perListener(
        (server) => server.counters.authenticationFailures,
        (kafka) => kafka.authenticationFailures(),
      )(),
      ...(targets.console === undefined
        ? []
        : [
            [{ listener: "console" }, targets.console.authenticationFailures()] as [
              Record<string, string>,
              number,
            ],
          ]),
    ],
  );
  registry.register(
    "booblik_admin_requests_refused_total",
    "counter",
    "Admin requests (topic create, delete, alter, partition additions, purges, ACL changes) refused by the per-address rate limit.",
    perListener(
      (server) => server.adminRefusals,
      (kafka) => kafka.adminRefusals(),
    ),
  );
  // ACL denials (src/broker/acl-store.ts): a request, or a topic or group within one, refused.
  const aclStore = () => {
    try {
      return targets.broker?.acls;
    } catch {
      return undefined; // still opening
    }
  };
  registry.register(
    "booblik_authorization_denials_total",
    "counter",
    "Requests (or topics and groups within one) refused by an ACL (--authorizer acl).",
    () => {
      const acls = aclStore();
      if (acls === undefined) return [];
      return [
        [{ listener: "native" }, acls.denials.native],
        ...(targets.kafka === undefined
          ? []
          : [[{ listener: "kafka" }, acls.denials.kafka] as [Record<string, string>, number]]),
        [{ listener: "console" }, acls.denials.console],
      ];
    },
  );
  registry.register("booblik_acls", "gauge", "ACLs stored (acls.json in the data directory).", () => {
    const acls = aclStore();
    return acls === undefined ? [] : [[{}, acls.size]];
  });
  registry.register(
    "booblik_failed_partitions",
    "gauge",
    "Partitions stopped by a failed write or fdatasync: they refuse appends until a restart; reads work.",
    () => (targets.broker === undefined ? [] : [[{}, targets.broker.failedPartitionCount()]]),
  );
  registry.register(
    "booblik_producer_ids",
    "gauge",
    "Idempotent producer ids all partitions remember together (at most --max-producer-ids).",
    () => (targets.broker === undefined ? [] : [[{}, targets.broker.producerIdBudget.count]]),
  );
  registry.register(
    "booblik_ready",
    "gauge",
    "1 once the data directory is open and the broker listens.",
    () => [[{}, targets.ready ? 1 : 0]],
  );
  registry.register(
    "booblik_recovery_partitions",
    "gauge",
    "Partitions to open at start-up, and opened so far.",
    () => {
      const progress = targets.broker?.recoveryProgress;
      return progress === undefined
        ? []
        : [
            [{ state: "total" }, progress.partitionsTotal],
            [{ state: "opened" }, progress.partitionsOpened],
          ];
    },
  );
  registry.register(
    "booblik_recovery_scanned_bytes",
    "gauge",
    "Bytes recovery scanned at the last start-up.",
    () => (targets.broker?.recoveryProgress.done ? [[{}, targets.broker.openReport.bytesScanned]] : []),
  );
  registry.register(
    "booblik_recovery_duration_seconds",
    "gauge",
    "How long opening the data directory took.",
    () => (targets.broker?.recoveryProgress.done ? [[{}, targets.broker.openReport.durationMs / 1000]] : []),
  );
  registry.register(
    "booblik_read_only_partitions",
    "gauge",
    "Partitions that take no writes because the disk was full when they opened (reads work).",
    () => (targets.broker === undefined ? [] : [[{}, targets.broker.readOnlyPartitionCount()]]),
  );
  registry.register("booblik_connections", "gauge", "Open client connections of the native listener.", () =>
    targets.server === undefined ? [] : [[{}, targets.server.connectionCount]],
  );
  registry.register(
    "booblik_inbound_budget_bytes",
    "gauge",
    "Memory for requests still arriving, beyond each connection's free allowance: used now, and the bound (--max-inbound-memory).",
    () => {
      const budget = targets.server?.inboundBudget;
      return budget === undefined
        ? []
        : [
            [{ state: "used" }, budget.usedBytes],
            [{ state: "limit" }, budget.limitBytes],
          ];
    },
  );
  registry.register(
    "booblik_segment_read_descriptors",
    "gauge",
    "Read descriptors of sealed segments: open now, and the bound (--max-open-segment-files).",
    () => {
      const descriptors = targets.broker?.readDescriptors;
      return descriptors === undefined
        ? []
        : [
            [{ state: "open" }, descriptors.openCount],
            [{ state: "limit" }, descriptors.limit],
          ];
    },
  );
  registry.register(
    "booblik_segment_read_descriptors_closed_total",
    "counter",
    "Idle read descriptors of sealed segments closed to stay within the bound.",
    () => {
      const descriptors = targets.broker?.readDescriptors;
      return descriptors === undefined ? [] : [[{}, descriptors.closedByLimitCount]];
    },
  );
  counter("booblik_requests_total", "Requests received by the native listener.", (s) => s.counters.requests);
  counter("booblik_request_errors_total", "Requests answered with an error.", (s) => s.counters.errors);
  counter(
    "booblik_produce_records_total",
    "Records appended through PRODUCE.",
    (s) => s.counters.produceRecords,
  );
  counter(
    "booblik_produce_bytes_total",
    "Record bytes appended through PRODUCE.",
    (s) => s.counters.produceBytes,
  );
  counter("booblik_fetch_records_total", "Records sent by FETCH.", (s) => s.counters.fetchRecords);
  counter("booblik_fetch_bytes_total", "Record bytes sent by FETCH.", (s) => s.counters.fetchBytes);
  counter(
    "booblik_fetch_sendfile_bytes_total",
    "Bytes sent with sendfile (zero copy).",
    (s) => s.counters.sendfileBytes,
  );
  counter(
    "booblik_fetch_copied_bytes_total",
    "Record bytes sent by the copying fetch path.",
    (s) => s.counters.copiedFetchBytes,
  );
  counter(
    "booblik_connections_refused_total",
    "Connections refused (limit or shutdown).",
    (s) => s.counters.connectionsRefused,
  );
  counter(
    "booblik_protocol_violations_total",
    "Connections ended for an impossible frame or a request not received whole in time.",
    (s) => s.counters.protocolViolations,
  );
  counter(
    "booblik_request_timeouts_total",
    "Connections ended because a request was not received whole within the request timeout.",
    (s) => s.counters.requestTimeouts,
  );
  counter(
    "booblik_inbound_budget_waits_total",
    "Times a connection stopped reading until the inbound budget had room for its request.",
    (s) => s.inboundBudget.waits,
  );
  registry.registerHistograms(
    "booblik_request_duration_seconds",
    "Time from a request's arrival to its response.",
    () =>
      targets.server === undefined
        ? []
        : [...targets.server.requestLatency.entries()]
            .filter(([, histogram]) => histogram.observations > 0)
            .map(([api, histogram]) => [{ api }, histogram]),
  );
  // The Kafka listener (both its ports), beside the native families above, which count only the
  // native listener.
  const kafkaListener = () => targets.kafka?.listener();
  const kafkaSeries = (read: (listener: KafkaListenerMetrics) => number) => () => {
    const listener = kafkaListener();
    return listener === undefined ? [] : [[{}, read(listener)] as [Record<string, string>, number]];
  };
  registry.register(
    "booblik_kafka_connections",
    "gauge",
    "Open Kafka-protocol client connections.",
    kafkaSeries((listener) => listener.connectionCount),
  );
  registry.register(
    "booblik_kafka_requests_total",
    "counter",
    "Kafka-protocol requests received.",
    kafkaSeries((listener) => listener.counters.requests),
  );
  registry.register(
    "booblik_kafka_connections_refused_total",
    "counter",
    "Kafka-protocol connections refused (limit or shutdown).",
    kafkaSeries((listener) => listener.counters.connectionsRefused),
  );
  registry.register(
    "booblik_kafka_connections_closed_for_request_total",
    "counter",
    "Kafka-protocol connections closed for a request booblik cannot answer (an API or version it does not serve, a malformed request).",
    kafkaSeries((listener) => listener.counters.closedForRequest),
  );
  registry.register(
    "booblik_kafka_response_errors_total",
    "counter",
    "Error codes in Kafka-protocol answers, by API and Kafka's error name: one per partition, topic, group or member that carries one (as Kafka's ErrorsPerSec counts them), NONE left out.",
    () =>
      [...(kafkaListener()?.responseErrors.entries() ?? [])].flatMap(([api, byError]) =>
        [...byError.entries()].map(
          ([error, count]) => [{ api, error }, count] as [Record<string, string>, number],
        ),
      ),
  );
  registry.register(
    "booblik_kafka_produce_records_total",
    "counter",
    "Records appended through Kafka Produce.",
    kafkaSeries((listener) => listener.traffic.produceRecords),
  );
  registry.register(
    "booblik_kafka_produce_bytes_total",
    "counter",
    "Record-set bytes appended through Kafka Produce.",
    kafkaSeries((listener) => listener.traffic.produceBytes),
  );
  registry.register(
    "booblik_kafka_fetch_bytes_total",
    "counter",
    "Record bytes in Kafka Fetch answers (copied or sent with sendfile).",
    kafkaSeries((listener) => listener.traffic.fetchBytes),
  );
  registry.register(
    "booblik_kafka_fetch_sendfile_bytes_total",
    "counter",
    "Record bytes Kafka Fetch sent from segment files with sendfile (--kafka-fetch-path sendfile).",
    kafkaSeries((listener) => listener.counters.sendfileBytes),
  );
  registry.register(
    "booblik_kafka_fetch_held_bytes",
    "gauge",
    "Kafka Fetch answer bytes encoded and not yet written to their connections (slow or stalled readers); at most --max-inbound-memory plus 256 KiB per connection.",
    kafkaSeries((listener) => listener.fetchHeld.heldBytes),
  );
  registry.register(
    "booblik_kafka_fetch_held_peak_bytes",
    "gauge",
    "Highest booblik_kafka_fetch_held_bytes since the start.",
    kafkaSeries((listener) => listener.fetchHeld.heldPeakBytes),
  );
  registry.register(
    "booblik_kafka_fetch_rounds_without_room_total",
    "counter",
    "Kafka Fetch rounds held to 256 KiB because the answers held for slow readers had reached --max-inbound-memory.",
    kafkaSeries((listener) => listener.fetchHeld.roundsWithoutRoom),
  );
  registry.registerHistograms(
    "booblik_kafka_request_duration_seconds",
    "Time to answer a Kafka-protocol request, from the start of its answer (one at a time per connection) to the answer ready for the socket; a long-poll Fetch counts its wait.",
    () =>
      [...(kafkaListener()?.requestLatency.entries() ?? [])].map(([api, histogram]) => [{ api }, histogram]),
  );
  registry.registerHistograms(
    "booblik_force_duration_seconds",
    "Duration of each force (fdatasync of a partition).",
    () => (targets.broker === undefined ? [] : [[{}, targets.broker.forceLatency]]),
  );
  // The partition families share one listing per scrape (listing describes every partition; three
  // families used to list three times).
  let topics: TopicDescription[] = [];
  registry.onScrape(() => {
    const broker = targets.broker;
    topics =
      broker === undefined || broker.isClosed || !broker.recoveryProgress.done ? [] : broker.listTopics();
  });
  const partitionGauge = (
    name: string,
    help: string,
    read: (p: { sizeBytes: number; logStartOffset: number; nextOffset: number }) => number,
  ) =>
    registry.register(name, "gauge", help, () =>
      topics.flatMap((topic) =>
        topic.partitions.map((partition): [Record<string, string>, number] => [
          { topic: topic.name, partition: String(partition.partition) },
          read(partition),
        ]),
      ),
    );
  partitionGauge("booblik_partition_size_bytes", "Bytes on disk per partition.", (p) => p.sizeBytes);
  partitionGauge(
    "booblik_partition_log_start_offset",
    "Oldest offset still stored.",
    (p) => p.logStartOffset,
  );
  partitionGauge("booblik_partition_next_offset", "Next offset a consumer can read.", (p) => p.nextOffset);
  // Consumer groups' committed offsets (broker/offsets-store.ts) against the partitions' visible ends:
  // one series per group and committed partition of a topic that still exists.
  const groupGauge = (name: string, help: string, read: (committed: number, nextOffset: number) => number) =>
    registry.register(name, "gauge", help, () => {
      const broker = targets.broker;
      if (broker === undefined || topics.length === 0) return [];
      const nextOffsets = new Map<string, number>();
      for (const topic of topics)
        for (const partition of topic.partitions)
          nextOffsets.set(`${topic.name}/${partition.partition}`, partition.nextOffset);
      const series: [Record<string, string>, number][] = [];
      for (const group of broker.offsets.groupIds()) {
        for (const { topic, partition, committed } of broker.offsets.committedOf(group)) {
          const nextOffset = nextOffsets.get(`${topic}/${partition}`);
          if (nextOffset === undefined) continue;
          series.push([{ group, topic, partition: String(partition) }, read(committed.offset, nextOffset)]);
        }
      }
      return series;
    });
  groupGauge(
    "booblik_group_committed_offset",
    "A consumer group's committed offset per partition.",
    (c) => c,
  );
  groupGauge(
    "booblik_group_lag",
    "Records a consumer group has not committed yet: the partition's next offset minus the committed offset (0 when the commit is beyond it).",
    (committed, nextOffset) => Math.max(0, nextOffset - committed),
  );
  // Live consumer groups of the Kafka listener (broker/groups.ts; restored at start): a generation that keeps
  // growing is a group that keeps rebalancing.
  const liveGroupGauge = (name: string, help: string, read: (group: GroupDescription) => number) =>
    registry.register(name, "gauge", help, () => {
      const coordinator = targets.groups;
      if (coordinator === undefined) return [];
      const series: [Record<string, string>, number][] = [];
      for (const { groupId } of coordinator.list()) {
        const group = coordinator.describe(groupId);
        if (group !== undefined) series.push([{ group: groupId }, read(group)]);
      }
      return series;
    });
  liveGroupGauge(
    "booblik_group_members",
    "Members of a consumer group with members (Kafka listener).",
    (group) => group.members.length,
  );
  liveGroupGauge(
    "booblik_group_generation",
    "Generation of a consumer group with members (Kafka listener): one more per completed rebalance.",
    (group) => group.generationId,
  );
  // What the last open found damaged (issue 15; the start line names the ranges and files).
  const openGauge = (name: string, help: string, read: (report: Broker["openReport"]) => number) =>
    registry.register(name, "gauge", help, () =>
      targets.broker === undefined || !targets.ready ? [] : [[{}, read(targets.broker.openReport)]],
    );
  openGauge(
    "booblik_open_offsets_unreadable",
    "Offsets in damaged ranges the last open found in the middle of logs and kept in place (reads of them fail naming the range).",
    (report) => report.offsetsLost,
  );
  openGauge(
    "booblik_open_damaged_ranges",
    "Damaged ranges the last open found in the middle of logs.",
    (report) => report.damagedRanges.length,
  );
  openGauge(
    "booblik_open_quarantined_files",
    "Quarantine files the last open wrote: cut bytes that held valid entries, copied next to their segment.",
    (report) => report.quarantined.length,
  );
  // Quarantine files on disk now (not only the last open's): they leave with their segments.
  const quarantineGauge = (
    name: string,
    help: string,
    read: (t: { files: number; bytes: number }) => number,
  ) =>
    registry.register(name, "gauge", help, () => {
      const broker = targets.broker;
      if (broker === undefined || broker.isClosed || !targets.ready) return [];
      return [[{}, read(broker.quarantineTotals())]];
    });
  quarantineGauge(
    "booblik_quarantine_files",
    "Quarantine files on disk (cut bytes that held valid entries, by this open or earlier ones); removed with their segments by retention, purges and topic deletion, and at a start when their segment is gone.",
    (t) => t.files,
  );
  quarantineGauge("booblik_quarantine_bytes", "Bytes in quarantine files on disk.", (t) => t.bytes);
  openGauge(
    "booblik_open_durable_bytes_lost",
    "Bytes before a recovery point (forced) that were missing or failed their checks at the last open.",
    (report) => report.durableBytesLost,
  );
  registry.register(
    "process_resident_memory_bytes",
    "gauge",
    "Resident memory of the broker process.",
    () => [[{}, process.memoryUsage().rss]],
  );
  return registry;
}

export function startMetricsServer(
  hostname: string,
  port: number,
  targets: MetricsTargets,
  options: { console: boolean; tls?: TlsFiles; consoleAuth?: ConsoleAuth } = { console: false },
): Server<undefined> {
  const registry = buildRegistry(targets);
  // The web console (src/console): its page and assets as routes, its data API in fetch below.
  const webConsole = options.console
    ? createConsole(targets, {
        tls: options.tls !== undefined,
        ...(options.consoleAuth === undefined ? {} : { auth: options.consoleAuth }),
      })
    : undefined;
  const server = Bun.serve({
    hostname,
    port,
    // Off, said out loud: Bun 1.4.4 sets SO_REUSEPORT when `development: false` is given (two
    // processes with only that option both listened on one port; without it the second failed), and
    // a second broker started with the same --metrics-port shared it silently, /metrics, /ready and
    // the console answering for either broker in turn (a README check, 2026-12-03;
    // test/server/e2e.test.ts, "a port in use …").
    reusePort: false,
    ...(options.tls === undefined ? {} : { tls: bunTlsOptions(options.tls) }),
    development: false,
    routes: webConsole?.routes ?? {},
    fetch(request, server) {
      const consoleAnswer = webConsole?.handle(request, server);
      if (consoleAnswer !== undefined) return consoleAnswer;
      const { pathname } = new URL(request.url);
      if (pathname === "/metrics") {
        return new Response(registry.render(), {
          headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
        });
      }
      if (pathname === "/ready") {
        if (targets.ready) {
          // Reads work on a full disk, so the broker stays ready; it says what it cannot do.
          const readOnly = targets.broker?.readOnlyPartitionCount() ?? 0;
          return new Response(
            readOnly === 0
              ? "ready\n"
              : `ready, read-only: the disk is full; ${readOnly} partitions take no writes until space is freed (reads work)\n`,
          );
        }
        const progress = targets.broker?.recoveryProgress;
        const detail =
          progress === undefined
            ? "starting"
            : `opening partitions: ${progress.partitionsOpened} of ${progress.partitionsTotal}`;
        return new Response(`not ready: ${detail}\n`, { status: 503 });
      }
      const consoleNote =
        webConsole === undefined
          ? ""
          : options.tls !== undefined && options.consoleAuth !== undefined
            ? ", /console/ (web console, after a login)"
            : `, /console/ (web console, this machine only${options.consoleAuth === undefined ? "" : ", after a login"})`;
      return new Response(`booblik metrics: /metrics (Prometheus), /ready (readiness)${consoleNote}\n`, {
        status: pathname === "/" ? 200 : 404,
      });
    },
  });
  if (webConsole !== undefined) {
    const stop = server.stop.bind(server);
    server.stop = (closeActiveConnections?: boolean) => {
      webConsole.stop();
      return stop(closeActiveConnections);
    };
  }
  return server;
}
