/**
 * `bun bench/compat/migrate-mirror-maker.ts` (also `bun bench/compat/migrate.ts --with mirror-maker`):
 * moving a booblik topic and its consumer groups to Apache Kafka with MirrorMaker 2, as
 * docs/kafka.md ("Moving to a Kafka cluster") describes. Starts a booblik broker child process, a
 * local Kafka node (kafka-node.ts, 4.1.1 in KRaft) and MirrorMaker 2 from the same release's jars
 * (`org.apache.kafka.connect.mirror.MirrorMaker`, the class behind connect-mirror-maker.sh, in its
 * dedicated mode with `--clusters kafka`), then:
 *
 * 1. on booblik: topic `orders` (3 partitions), 300 keyed records from kafkajs (murmur2
 *    partitioner) whose keys, values and header values hold tabs, newlines and bytes that are not
 *    UTF-8, with headers and CreateTime timestamps an hour in the past (so that a copy that
 *    restamped them would show); group `billing` committed at 40 / 50 / 60 and group `audit` at
 *    the end of each partition (a consumer that caught up before the move);
 * 2. MirrorMaker 2: booblik → kafka, IdentityReplicationPolicy (topic names kept), checkpoints
 *    emitted and group offsets synced every second, its offset-syncs topic where
 *    `--offset-syncs-location source|target` puts it (`offset-syncs.topic.location`; `source`,
 *    MirrorMaker's default, by default: made compacted on booblik), no ACL sync (booblik without an
 *    authorizer answers DescribeAcls SECURITY_DISABLED), booblik's own topic settings not copied
 *    (the configuration is printed, and is the one in docs/kafka.md, which says why);
 * 3. waits until Kafka has every record, then checks each one (partition, offset, key, value,
 *    headers, timestamp) byte for byte against booblik;
 * 4. waits until the groups' offsets appear on Kafka (written there by MirrorMaker's checkpoint
 *    connector), prints them beside booblik's, checks that none is past booblik's (no record
 *    skipped), that `audit` (at the ends) is translated exactly (`billing`, in the middle, is
 *    translated to MirrorMaker's last offset sync at or below it, by MirrorMaker's design: printed,
 *    not checked) and that a kafkajs consumer of each group on Kafka starts every partition at that
 *    offset with booblik's record there, or reads nothing at the end;
 * 5. new keyed records from a kafkajs producer land on the same partitions on both;
 * 6. MirrorMaker's offset-syncs topic exists on the cluster `--offset-syncs-location` names
 *    (`mm2-offset-syncs.kafka.internal` on booblik, `mm2-offset-syncs.booblik.internal` on Kafka),
 *    with cleanup.policy=compact (DescribeConfigs), and the other cluster has none;
 * 7. MirrorMaker's log holds none of the lines of a broken offset-syncs topic or a failed task
 *    (`Unable to create topic`, `Failure sending offset sync`, `Could not look up partition
 *    metadata`, a task's uncaught exception).
 *
 * MirrorMaker's log goes to $BOOBLIK_COMPAT_CACHE/last-mirror-maker-<location>.log; every WARN and
 * ERROR line of it is printed at the end, each distinct message once with its count (BOOBLIK_MM2_DEBUG=logger,…
 * sets those loggers to DEBUG, e.g. org.apache.kafka.clients.NetworkClient for every request and
 * answer). Prints each step and a final PASS or FAIL line; exit code 1 on a failure.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigResourceTypes, type IHeaders, Kafka, logLevel } from "kafkajs";
import { startBooblik } from "./booblik.ts";
import { compatCache, mirrorJars, serverJars, startKafka } from "./kafka-node.ts";

// `--with` is migrate.ts's, which imports this script with its own arguments.
const { values: args } = parseArgs({
  options: {
    "offset-syncs-location": { type: "string", default: "source" },
    with: { type: "string" },
  },
});
const offsetSyncsLocation = args["offset-syncs-location"];
if (offsetSyncsLocation !== "source" && offsetSyncsLocation !== "target")
  throw new Error(
    `--offset-syncs-location takes source or target, got ${JSON.stringify(offsetSyncsLocation)}`,
  );

const KAFKA_VERSION = "4.1.1";
/**
 * MirrorMaker's offset-syncs topic of the flow booblik → kafka: named after the other cluster of the
 * flow than the one holding it (`MirrorSourceConfig.offsetSyncsTopic`).
 */
const OFFSET_SYNCS_TOPIC =
  offsetSyncsLocation === "source" ? "mm2-offset-syncs.kafka.internal" : "mm2-offset-syncs.booblik.internal";
/**
 * MirrorMaker's log lines that mean its offset syncs or one of its tasks broke (each seen in the
 * first run of 2026-12-01, when booblik refused the compacted offset-syncs topic), and must not
 * appear.
 */
const BROKEN = [
  "Unable to create topic",
  "Failure sending offset sync",
  "Could not look up partition metadata",
  "Task threw an uncaught and unrecoverable exception",
  "Task is being killed and will not recover",
] as const;
const TOPIC = "orders";
const PARTITIONS = 3;
const RECORDS = 300;
const BILLING = [40, 50, 60];
/** Bound of each wait on MirrorMaker (its Connect herder alone takes tens of seconds to start). */
const MIRROR_WAIT_MS_MAX = 240_000;
const MIRROR_HEAP = "-Xmx512m";
/**
 * How long a group's offsets on Kafka may take to reach booblik's once they first appear: `audit`
 * (at the ends) waits for the next offset commit of MirrorMaker's worker; `billing` (in the middle)
 * is not expected to get there (see docs/kafka.md), a short look shows that it stays.
 */
const SETTLE_MS_MAX = { audit: 120_000, billing: 15_000 } as const;

interface Stored {
  partition: number;
  offset: string;
  timestamp: string;
  key: string;
  value: string;
  headers: string;
}

function client(bootstrap: string, id: string): Kafka {
  return new Kafka({ brokers: [bootstrap], clientId: id, logLevel: logLevel.NOTHING });
}

const hex = (bytes: Buffer | null | undefined): string => (bytes == null ? "null" : bytes.toString("hex"));

function headersHex(headers: IHeaders | undefined): string {
  return JSON.stringify(
    Object.entries(headers ?? {}).map(([name, value]) => [
      name,
      Array.isArray(value)
        ? value.map((v) => hex(Buffer.from(v)))
        : hex(value === undefined ? null : Buffer.from(value)),
    ]),
  );
}

/**
 * Every record of TOPIC up to the high watermarks, byte for byte, read by a kafkajs consumer of a
 * throwaway group that never commits (so that MirrorMaker, which syncs only `billing` and `audit`,
 * never sees it).
 */
async function readAll(bootstrap: string, label: string): Promise<Stored[]> {
  const kafka = client(bootstrap, `migrate-reader-${label}`);
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(TOPIC);
  await admin.disconnect();
  const total = ends.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  const records: Stored[] = [];
  if (total === 0) return records;
  const consumer = kafka.consumer({ groupId: `migrate-reader-${label}-${crypto.randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  await new Promise<void>((resolve) => {
    void consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        records.push({
          partition,
          offset: message.offset,
          timestamp: message.timestamp,
          key: hex(message.key),
          value: hex(message.value),
          headers: headersHex(message.headers),
        });
        if (records.length >= total) resolve();
      },
    });
  });
  await consumer.disconnect();
  return records.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

/** A group's committed offsets for TOPIC on a cluster, by partition (−1: none). */
async function groupOffsets(admin: ReturnType<Kafka["admin"]>, group: string): Promise<number[]> {
  const [fetched] = await admin.fetchOffsets({ groupId: group, topics: [TOPIC] });
  return fetched!.partitions.sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      console.log(`${what}: after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return value;
    }
    if (Date.now() - started > MIRROR_WAIT_MS_MAX)
      throw new Error(`${what}: not within ${MIRROR_WAIT_MS_MAX} ms`);
    await Bun.sleep(500);
  }
}

const failures: string[] = [];
function check(what: string, ok: boolean, detail = ""): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail === "" ? "" : `: ${detail}`}`);
  if (!ok) failures.push(what);
}

/** The MirrorMaker 2 configuration (dedicated mode), as docs/kafka.md gives it. */
function mirrorConfig(source: string, target: string, location: "source" | "target"): string {
  return [
    "clusters = booblik, kafka",
    `booblik.bootstrap.servers = ${source}`,
    `kafka.bootstrap.servers = ${target}`,
    "booblik->kafka.enabled = true",
    "kafka->booblik.enabled = false",
    `booblik->kafka.topics = ${TOPIC}`,
    "booblik->kafka.groups = billing, audit",
    // Topic names kept: orders on booblik is orders on Kafka (the default policy would make it booblik.orders).
    "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    "emit.checkpoints.enabled = true",
    "emit.checkpoints.interval.seconds = 1",
    "sync.group.offsets.enabled = true",
    "sync.group.offsets.interval.seconds = 1",
    // Where MirrorMaker keeps its offset-syncs topic (compacted): `source`, its default, makes it on
    // booblik (refused before 2026-12-03, when booblik took no cleanup.policy); `target` keeps it on
    // Kafka, so booblik is only read from.
    `offset-syncs.topic.location = ${location}`,
    // booblik without an authorizer answers DescribeAcls SECURITY_DISABLED, as Kafka does: no ACL
    // to copy, and the sync would only log that.
    "sync.topic.acls.enabled = false",
    // booblik's own settings (booblik.durability, …) mean nothing to Kafka, which refuses them and
    // with them the whole config sync of the topic; the rest is MirrorMaker's default exclude list.
    "config.properties.exclude = booblik\\\\..*, follower\\\\.replication\\\\.throttled\\\\.replicas, leader\\\\.replication\\\\.throttled\\\\.replicas, message\\\\.timestamp\\\\.difference\\\\.max\\\\.ms, message\\\\.timestamp\\\\.type, unclean\\\\.leader\\\\.election\\\\.enable, min\\\\.insync\\\\.replicas",
    // MirrorMaker writes an offset sync when a partition's translation would lag by offset.lag.max
    // (100) records, and the latest one of each partition at every offset commit of its worker
    // (offset.flush.interval.ms, 60 s by default; the worker's settings are the target cluster's,
    // MirrorMakerConfig.workerConfig): 5 s, so that a caught-up group is exact within seconds.
    "kafka.offset.flush.interval.ms = 5000",
    "sync.topic.configs.interval.seconds = 5",
    "refresh.topics.interval.seconds = 5",
    "refresh.groups.interval.seconds = 5",
    // One Kafka node: replication factor 1 for the mirrored topic and every internal topic.
    "replication.factor = 1",
    "checkpoints.topic.replication.factor = 1",
    "heartbeats.topic.replication.factor = 1",
    "offset-syncs.topic.replication.factor = 1",
    "offset.storage.replication.factor = 1",
    "status.storage.replication.factor = 1",
    "config.storage.replication.factor = 1",
    "",
  ].join("\n");
}

const booblik = await startBooblik();
const lib = await serverJars(KAFKA_VERSION);
const mirrorLib = await mirrorJars(KAFKA_VERSION);
const kafka = await startKafka(lib, KAFKA_VERSION);
const mirrorDir = mkdtempSync(join(tmpdir(), "booblik-compat-mm2-"));
const mirrorLog = join(compatCache, `last-mirror-maker-${offsetSyncsLocation}.log`);
let mirror: ReturnType<typeof Bun.spawn> | undefined;
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
try {
  // 1. The source.
  const source = client(booblik.bootstrap, "migrate-source");
  const sourceAdmin = source.admin();
  await sourceAdmin.connect();
  await sourceAdmin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
  const producer = source.producer();
  await producer.connect();
  const hourAgoMs = Date.now() - 3_600_000;
  await producer.send({
    topic: TOPIC,
    messages: Array.from({ length: RECORDS }, (_, i) => ({
      key: Buffer.concat([Buffer.from(`customer\t${i % 37}\n`), Buffer.from([0x00, 0xff, 0xfe, i % 256])]),
      value:
        i % 50 === 7
          ? null // a tombstone-shaped record: a null value must stay null
          : Buffer.concat([
              Buffer.from(`order ${i}\twith a tab\nand a newline `),
              Buffer.from([0xc3, 0x28, 0x00, 0x80]),
            ]),
      headers: {
        "trace-id": Buffer.from([0x00, 0x01, 0xff, i % 256]),
        "content-type": "text/plain\tcharset=utf-8",
      },
      timestamp: String(hourAgoMs + i),
    })),
  });
  await producer.disconnect();
  const before = await readAll(booblik.bootstrap, "booblik");
  const ends = await sourceAdmin.fetchTopicOffsets(TOPIC);
  await sourceAdmin.setOffsets({
    groupId: "billing",
    topic: TOPIC,
    partitions: BILLING.map((offset, partition) => ({ partition, offset: String(offset) })),
  });
  await sourceAdmin.setOffsets({
    groupId: "audit",
    topic: TOPIC,
    partitions: ends.map(({ partition, high }) => ({ partition, offset: high })),
  });
  console.log(
    `booblik: ${before.length} records in ${TOPIC}, ends ${ends.map((p) => `${p.partition}:${p.high}`).join(" ")}; ` +
      `billing at ${BILLING.join(" / ")}, audit at the ends`,
  );

  // 2. MirrorMaker 2, dedicated mode, driving only the flows into `kafka`.
  const properties = join(mirrorDir, "mm2.properties");
  writeFileSync(properties, mirrorConfig(booblik.bootstrap, kafka.bootstrap, offsetSyncsLocation));
  // INFO to stdout (the log file), the layout of Kafka's own config/connect-log4j2.yaml.
  const log4j = join(mirrorDir, "log4j2.properties");
  writeFileSync(
    log4j,
    [
      "appender.stdout.type = Console",
      "appender.stdout.name = STDOUT",
      "appender.stdout.layout.type = PatternLayout",
      "appender.stdout.layout.pattern = [%d] %p %m (%c)%n",
      "rootLogger.level = INFO",
      "rootLogger.appenderRef.stdout.ref = STDOUT",
      // BOOBLIK_MM2_DEBUG=logger.name,…: those loggers at DEBUG (e.g. the admin client's calls).
      ...(process.env.BOOBLIK_MM2_DEBUG ?? "")
        .split(",")
        .filter((name) => name !== "")
        .flatMap((name, i) => [`logger.debug${i}.name = ${name}`, `logger.debug${i}.level = DEBUG`]),
      "",
    ].join("\n"),
  );
  console.log(`MirrorMaker 2 configuration (${properties}):\n${readFileSync(properties, "utf8")}`);
  writeFileSync(mirrorLog, ""); // Bun.file as stdout does not truncate: no lines of an older run
  mirror = Bun.spawn(
    [
      "java",
      MIRROR_HEAP,
      `-Dlog4j2.configurationFile=${log4j}`,
      "-cp",
      `${mirrorLib}/*`,
      "org.apache.kafka.connect.mirror.MirrorMaker",
      properties,
      "--clusters",
      "kafka",
    ],
    { stdout: Bun.file(mirrorLog), stderr: "inherit" },
  );

  // 3. Every record, byte for byte.
  const target = client(kafka.bootstrap, "migrate-target");
  const targetAdmin = target.admin();
  await targetAdmin.connect();
  await waitFor(`all ${before.length} records on Kafka`, async () => {
    try {
      const offsets = await targetAdmin.fetchTopicOffsets(TOPIC);
      const total = offsets.reduce((sum, p) => sum + Number(p.high), 0);
      return total >= before.length ? total : undefined;
    } catch {
      return undefined; // the topic is not there yet
    }
  });
  const after = await readAll(kafka.bootstrap, "kafka");
  const diff = before.findIndex((r, i) => JSON.stringify(r) !== JSON.stringify(after[i]));
  check(
    `all ${before.length} records on Kafka at the same partition and offset with the same key, value, headers and timestamp`,
    after.length === before.length && diff === -1,
    diff === -1
      ? `${after.length} records read back`
      : `first difference at ${diff}: booblik ${JSON.stringify(before[diff])}, Kafka ${JSON.stringify(after[diff])}`,
  );

  // 4. The groups: MirrorMaker translates and writes them; consumers there resume at them.
  for (const [group, committed] of [
    ["billing", BILLING],
    ["audit", ends.map((p) => Number(p.high))],
  ] as const) {
    const translated = await waitFor(`group ${group}'s offsets on Kafka`, async () => {
      const offsets = await groupOffsets(targetAdmin, group);
      return offsets.every((o) => o >= 0) ? offsets : undefined;
    });
    // MirrorMaker moves a group forward as later offset syncs arrive: wait for booblik's offsets,
    // and take what stands at the bound.
    const settledMs = Date.now();
    let final = translated;
    while (!final.every((o, p) => o === committed[p]) && Date.now() - settledMs < SETTLE_MS_MAX[group]) {
      await Bun.sleep(1_000);
      final = await groupOffsets(targetAdmin, group);
    }
    console.log(
      `${group}: booblik ${committed.join(" / ")}; on Kafka (MirrorMaker's translation) ${translated.join(" / ")} ` +
        `at first, ${final.join(" / ")} after ${((Date.now() - settledMs) / 1000).toFixed(1)} s more`,
    );
    check(
      `${group}: no offset on Kafka is past booblik's (nothing skipped)`,
      final.every((o, p) => o <= committed[p]!),
    );
    // Exact for a group at the end of every partition (a consumer that caught up before the move);
    // a group in the middle resumes at MirrorMaker's last offset sync at or below its commit + 1,
    // by MirrorMaker's design (docs/kafka.md), so only reported.
    const exact = final.every((o, p) => o === committed[p]!);
    if (group === "audit") check(`${group}: the offsets on Kafka are booblik's exactly`, exact);
    else
      console.log(`info ${group}: exactly booblik's offsets: ${exact ? "yes" : "no (re-reads from there)"}`);
    const consumer = target.consumer({ groupId: group, sessionTimeout: 10_000 });
    await consumer.connect();
    await consumer.subscribe({ topics: [TOPIC] });
    // Partitions whose offset is at the end have nothing to read: those must stay silent.
    const expectRecords = final.map((o, p) => o < Number(ends[p]!.high));
    const firstSeen = new Map<number, Stored>();
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
    });
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          if (!firstSeen.has(partition))
            firstSeen.set(partition, {
              partition,
              offset: message.offset,
              timestamp: message.timestamp,
              key: hex(message.key),
              value: hex(message.value),
              headers: headersHex(message.headers),
            });
          if (expectRecords.every((expected, p) => !expected || firstSeen.has(p))) resolve();
        },
      });
    });
    if (expectRecords.some((e) => e)) await done;
    else {
      await waitFor(`${group} consumer joined on Kafka`, async () => (joined ? true : undefined));
      // Nothing is expected: two fetch rounds of kafkajs (max wait 5 s each) must bring nothing.
      await Bun.sleep(10_000);
    }
    await consumer.disconnect();
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const seen = firstSeen.get(partition);
      if (!expectRecords[partition]) {
        check(
          `${group} on Kafka: partition ${partition} at its end (${final[partition]}) reads nothing`,
          seen === undefined,
          seen === undefined ? "" : `read offset ${seen.offset}`,
        );
        continue;
      }
      const expected = before.find((r) => r.partition === partition && r.offset === String(final[partition]));
      check(
        `${group} on Kafka resumes partition ${partition} at ${final[partition]} with booblik's record there`,
        seen !== undefined && JSON.stringify(seen) === JSON.stringify(expected),
        `first record ${seen?.offset}`,
      );
    }
  }

  // 5. New keyed records from the same client library go to the same partitions on both.
  const keys = Array.from({ length: 20 }, (_, i) => `new-customer-${i}`);
  const landed: number[][] = [];
  for (const bootstrap of [booblik.bootstrap, kafka.bootstrap]) {
    const p = client(bootstrap, "migrate-new").producer();
    await p.connect();
    const partitions: number[] = [];
    for (const key of keys) {
      const [sent] = await p.send({ topic: TOPIC, messages: [{ key, value: "new" }] });
      partitions.push(sent!.partition);
    }
    await p.disconnect();
    landed.push(partitions);
  }
  check(
    "20 new keys produced by kafkajs land on the same partitions on booblik and on Kafka",
    JSON.stringify(landed[0]) === JSON.stringify(landed[1]),
    landed[0]!.join(","),
  );

  // 6. MirrorMaker's offset-syncs topic: on the cluster it was told, compacted, and only there.
  for (const [cluster, admin] of [
    ["source", sourceAdmin],
    ["target", targetAdmin],
  ] as const) {
    const name = cluster === "source" ? "booblik" : "Kafka";
    const topics = await admin.listTopics();
    if (cluster !== offsetSyncsLocation) {
      const found = topics.filter((t) => t.startsWith("mm2-offset-syncs."));
      check(
        `no offset-syncs topic on ${name} (the ${cluster} cluster)`,
        found.length === 0,
        found.join(", "),
      );
      continue;
    }
    const exists = topics.includes(OFFSET_SYNCS_TOPIC);
    if (!exists) {
      check(`${OFFSET_SYNCS_TOPIC} on ${name} (the ${cluster} cluster)`, false, "absent");
      continue;
    }
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: OFFSET_SYNCS_TOPIC, configNames: ["cleanup.policy"] },
      ],
    });
    const [resource] = resources;
    const policy =
      resource === undefined || resource.errorCode !== 0
        ? `error ${resource?.errorCode}`
        : resource.configEntries.find((e) => e.configName === "cleanup.policy")?.configValue;
    const partitions = await admin.fetchTopicOffsets(OFFSET_SYNCS_TOPIC);
    check(
      `${OFFSET_SYNCS_TOPIC} on ${name} (the ${cluster} cluster) with cleanup.policy=compact`,
      policy === "compact",
      `cleanup.policy (DescribeConfigs): ${policy}, ` +
        `end offsets ${partitions.map((p) => `${p.partition}:${p.high}`).join(" ")}`,
    );
  }
  await sourceAdmin.disconnect();
  await targetAdmin.disconnect();
} catch (error) {
  failures.push((error as Error).message);
  console.log(`FAIL ${(error as Error).stack}`);
} finally {
  if (mirror !== undefined) {
    mirror.kill("SIGTERM");
    const timer = setTimeout(() => mirror?.kill("SIGKILL"), 60_000);
    await mirror.exited;
    clearTimeout(timer);
  }
  await kafka.stop();
  await booblik.stop();
  rmSync(mirrorDir, { recursive: true, force: true });
}
// Each distinct WARN or ERROR message once, with its count (time stamps and correlation ids cut).
const complaints = new Map<string, number>();
for (const line of readFileSync(mirrorLog, "utf8").split("\n")) {
  if (!/ (WARN|ERROR) /.test(line)) continue;
  const message = line
    .replace(/^\[[^\]]*\] /, "")
    .replace(/correlation id \d+/, "correlation id N")
    .slice(0, 400);
  complaints.set(message, (complaints.get(message) ?? 0) + 1);
}
console.log(`\nMirrorMaker's WARN and ERROR messages (log: ${mirrorLog}):`);
for (const [message, count] of complaints) console.log(`  ${count} × ${message}`);
// 7. No line of a broken offset-syncs topic or a failed task, at any level.
const logText = readFileSync(mirrorLog, "utf8");
for (const marker of BROKEN) {
  const count = logText.split(marker).length - 1;
  check(`MirrorMaker's log has no "${marker}"`, count === 0, count === 0 ? "" : `${count} lines`);
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(
  failures.length === 0
    ? "PASS: migration to Kafka with MirrorMaker 2"
    : `FAIL: ${failures.length} check(s) failed`,
);
process.exit(failures.length === 0 ? 0 : 1);
