/**
 * @platformatic/kafka 2.12.1 (npm, a dev dependency), unmodified, against a broker child process
 * started with `--kafka-port 0`. For each API this client takes the highest version it implements
 * inside the broker's advertised range (kafka-wire.md §1.1), so it runs booblik's newest version of
 * every API it uses: admin (topics, metadata, configs, listed offsets, group offsets, groups,
 * DeleteRecords, log directories); a batch of each codec with keys, headers and timestamps, consumed from the
 * beginning, from inside a batch, from the end and by timestamp; and a two-member group that splits
 * the partitions, rebalances when a member leaves, and resumes from its commits. Its idempotent
 * producer is in idempotent-clients.test.ts, next to the other clients'.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import {
  Admin,
  Consumer,
  type Message,
  type MessagesStream,
  Producer,
  stringDeserializers,
  stringSerializers,
} from "@platformatic/kafka";
import { type BrokerProcess, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

// Rebalances take a few heartbeats, on a busy 2-core machine.
setDefaultTimeout(90_000);

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDir(): TempDir {
  const dir = tempDir("kafka-platformatic");
  cleanups.push(() => dir[Symbol.dispose]());
  return dir;
}

async function brokerWithKafka(
  extra: string[] = [],
  dir: string = dataDir().path,
): Promise<{ broker: BrokerProcess; bootstrapBrokers: string[] }> {
  const broker = await startBroker(dir, ["--kafka-port", "0", ...extra]);
  cleanups.push(() => broker.stop("SIGKILL"));
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  const port = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
  return { broker, bootstrapBrokers: [`127.0.0.1:${port}`] };
}

function admin(bootstrapBrokers: string[]): Admin {
  const client = new Admin({ clientId: "test-admin", bootstrapBrokers });
  cleanups.push(() => client.close());
  return client;
}

function producer(bootstrapBrokers: string[], options: { idempotent?: boolean } = {}) {
  const client = new Producer({
    clientId: "test-producer",
    bootstrapBrokers,
    serializers: stringSerializers,
    ...options,
  });
  cleanups.push(() => client.close());
  return client;
}

function consumer(bootstrapBrokers: string[], groupId: string) {
  const client = new Consumer({
    clientId: `test-${groupId}`,
    groupId,
    bootstrapBrokers,
    deserializers: stringDeserializers,
    maxWaitTime: 200,
    sessionTimeout: 10_000,
    rebalanceTimeout: 10_000,
    heartbeatInterval: 300,
  });
  // close(true) leaves the group without waiting for streams still open.
  cleanups.push(() => client.close(true));
  return client;
}

type Received = Message<string, string, string, string>;

/** The first `count` messages of `stream` (then closes it). */
async function take(
  stream: MessagesStream<string, string, string, string>,
  count: number,
): Promise<Received[]> {
  const got: Received[] = [];
  for await (const message of stream) {
    got.push(message);
    if (got.length === count) break;
  }
  await stream.close();
  return got;
}

/** "offset key value timestamp header" of a received message, for comparing whole lists. */
function summary(message: Received): string {
  const headers = [...message.headers].map(([k, v]) => `${k}=${v}`).join(",");
  return `${message.offset} ${message.key} ${message.value} ${message.timestamp} ${headers}`;
}

/** The Kafka errors a rejected call ended in, by name (the client nests them per request). */
function protocolErrors(error: unknown): string[] {
  const names: string[] = [];
  const visit = (value: unknown) => {
    if (typeof value !== "object" || value === null) return;
    // AggregateError's `errors` is not enumerable: read it by name.
    const { apiId, errors } = value as { apiId?: unknown; errors?: unknown };
    if (typeof apiId === "string") names.push(apiId);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner);
  };
  visit(error);
  return names;
}

const T0 = 1_700_000_000_000n;
const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const;

describe("@platformatic/kafka 2.12.1 against a broker process", () => {
  test("admin: create, list, describe and delete topics; metadata; configs; an existing topic is refused", async () => {
    const { bootstrapBrokers } = await brokerWithKafka();
    const client = admin(bootstrapBrokers);
    const created = await client.createTopics({
      topics: ["orders", "audit"],
      partitions: 3,
      replicas: 1,
      configs: [{ name: "retention.ms", value: "86400000" }],
    });
    expect(created.map((t) => t.name).sort()).toEqual(["audit", "orders"]);
    expect((await client.listTopics()).sort()).toEqual(["audit", "orders"]);
    const metadata = await client.metadata({ topics: ["orders"] });
    const orders = metadata.topics.get("orders")!;
    expect(orders.partitionsCount).toBe(3);
    expect(orders.partitions.map((p) => [p.leader, p.replicas, p.isr])).toEqual([
      [1, [1], [1]],
      [1, [1], [1]],
      [1, [1], [1]],
    ]);
    expect([...metadata.brokers.values()]).toEqual([expect.objectContaining({ host: "127.0.0.1" })]);
    const [described] = await client.describeConfigs({
      resources: [{ resourceType: 2, resourceName: "orders", configurationKeys: ["retention.ms"] }],
    });
    expect(described!.configs.map((c) => [c.name, c.value])).toEqual([["retention.ms", "86400000"]]);
    const again = await client
      .createTopics({ topics: ["orders"], partitions: 1, replicas: 1 })
      .catch((e) => e);
    expect(protocolErrors(again)).toEqual(["TOPIC_ALREADY_EXISTS"]);
    await client.deleteTopics({ topics: ["orders"] });
    expect(await client.listTopics()).toEqual(["audit"]);
  });

  test("admin: describeLogDirs (DescribeLogDirs v4) names the data directory, each partition's size as /metrics has it, and the volume's sizes; unknown topics and partitions are left out", async () => {
    const dir = dataDir().path;
    const { broker, bootstrapBrokers } = await brokerWithKafka(["--metrics-port", "0"], dir);
    const client = admin(bootstrapBrokers);
    await client.createTopics({ topics: ["orders"], partitions: 2, replicas: 1 });
    await producer(bootstrapBrokers).send({
      messages: [0, 1, 2].map((i) => ({
        topic: "orders",
        partition: 0,
        key: `k${i}`,
        value: "v".repeat(100),
      })),
      acks: -1,
    });
    const [described] = await client.describeLogDirs({
      topics: [
        { name: "orders", partitions: [0, 1, 7] },
        { name: "nowhere", partitions: [0] },
      ],
    });
    const [logDir] = described!.results;
    expect(described!.results).toHaveLength(1);
    expect(logDir!.logDir).toBe(fs.realpathSync(dir));
    expect(logDir!.totalBytes).toBeGreaterThanOrEqual(logDir!.usableBytes);
    expect(logDir!.usableBytes).toBeGreaterThan(0n);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)).text();
    const size = (partition: number) =>
      BigInt(metricValue(metrics, `booblik_partition_size_bytes{topic="orders",partition="${partition}"}`));
    expect(
      logDir!.topics.map((t) => [
        t.name,
        t.partitions.map((p) => [p.partitionIndex, p.partitionSize, p.offsetLag]),
      ]),
    ).toEqual([
      [
        "orders",
        [
          [0, size(0), 0n],
          [1, size(1), 0n],
        ],
      ],
    ]);
    expect(size(0)).toBeGreaterThan(300n);
  });

  test("every codec with keys, headers and timestamps; consumed from the beginning, inside a batch, at the end and by timestamp", async () => {
    const { bootstrapBrokers } = await brokerWithKafka();
    await admin(bootstrapBrokers).createTopics({ topics: ["codecs"], partitions: 1, replicas: 1 });
    const sent: string[] = [];
    for (const [c, compression] of CODECS.entries()) {
      const client = producer(bootstrapBrokers);
      const messages = [0, 1, 2].map((i) => ({
        topic: "codecs",
        partition: 0,
        key: `k${c}-${i}`,
        value: `${compression}-${i}`,
        headers: { source: `h${i}` },
        timestamp: T0 + BigInt(10 * c + i),
      }));
      // One send, one batch: its three records take three offsets.
      const result = await client.send({ messages, compression, acks: -1 });
      expect(result.offsets).toEqual([{ topic: "codecs", partition: 0, offset: BigInt(3 * c) }]);
      for (const [i, m] of messages.entries())
        sent.push(`${3 * c + i} ${m.key} ${m.value} ${m.timestamp} source=${m.headers.source}`);
    }
    const reader = consumer(bootstrapBrokers, "readers");
    const fromStart = await take(
      await reader.consume({ topics: ["codecs"], mode: "earliest", autocommit: false }),
      15,
    );
    expect(fromStart.map(summary)).toEqual(sent);
    // Offset 4 is the middle record of the gzip batch: the broker sends the whole batch, the client
    // drops offset 3.
    const inside = await take(
      await reader.consume({
        topics: ["codecs"],
        mode: "manual",
        offsets: [{ topic: "codecs", partition: 0, offset: 4n }],
        autocommit: false,
      }),
      11,
    );
    expect(inside.map(summary)).toEqual(sent.slice(4));
    // By timestamp: the first record with a timestamp at or after the one asked for.
    const byTime = await reader.listOffsetsWithTimestamps({ topics: ["codecs"], timestamp: T0 + 11n });
    expect(byTime.get("codecs")?.get(0)).toEqual({ offset: 4n, timestamp: T0 + 11n });
    const uncompressed = await reader.listOffsetsWithTimestamps({ topics: ["codecs"], timestamp: T0 + 1n });
    expect(uncompressed.get("codecs")?.get(0)).toEqual({ offset: 1n, timestamp: T0 + 1n });
    // From the end: nothing until a new record comes, then exactly it.
    const atEnd = await reader.consume({
      topics: ["codecs"],
      mode: "manual",
      offsets: [{ topic: "codecs", partition: 0, offset: 15n }],
      autocommit: false,
    });
    const next = take(atEnd, 1);
    await producer(bootstrapBrokers).send({
      messages: [{ topic: "codecs", partition: 0, key: "late", value: "after" }],
    });
    expect((await next).map((m) => [m.offset, m.key, m.value])).toEqual([[15n, "late", "after"]]);
  });

  test("admin offsets: listed (earliest, latest, by time); group offsets set, listed, deleted; groups listed, described, deleted; DeleteRecords", async () => {
    const { bootstrapBrokers } = await brokerWithKafka();
    const client = admin(bootstrapBrokers);
    await client.createTopics({ topics: ["ledger"], partitions: 1, replicas: 1 });
    await producer(bootstrapBrokers).send({
      messages: Array.from({ length: 20 }, (_, i) => ({
        topic: "ledger",
        partition: 0,
        value: `e${i}`,
        timestamp: T0 + BigInt(i),
      })),
    });
    const listed = async (timestamp: bigint) =>
      (
        await client.listOffsets({
          topics: [{ name: "ledger", partitions: [{ partitionIndex: 0, timestamp }] }],
        })
      )[0]!.partitions[0]!.offset;
    // Kafka's special timestamps: -2 earliest, -1 latest.
    expect([await listed(-2n), await listed(-1n), await listed(T0 + 7n)]).toEqual([0n, 20n, 7n]);

    await client.alterConsumerGroupOffsets({
      groupId: "audit",
      topics: [{ name: "ledger", partitionOffsets: [{ partition: 0, offset: 12n }] }],
    });
    const offsets = await client.listConsumerGroupOffsets({ groups: ["audit"] });
    expect(
      offsets.map((g) => [
        g.groupId,
        g.topics.map((t) => [t.name, t.partitions.map((p) => p.committedOffset)]),
      ]),
    ).toEqual([["audit", [["ledger", [12n]]]]]);
    expect([...(await client.listGroups()).keys()]).toEqual(["audit"]);
    const described = await client.describeGroups({ groups: ["audit"] });
    expect(described.get("audit")).toMatchObject({ id: "audit", state: "Empty" });
    await client.deleteConsumerGroupOffsets({
      groupId: "audit",
      topics: [{ name: "ledger", partitionIndexes: [0] }],
    });
    expect((await client.listConsumerGroupOffsets({ groups: ["audit"] }))[0]!.topics).toEqual([]);
    // A group with neither members nor offsets does not exist: GROUP_ID_NOT_FOUND (69), as on Kafka.
    expect(protocolErrors(await client.deleteGroups({ groups: ["audit"] }).catch((e) => e))).toEqual([
      "GROUP_ID_NOT_FOUND",
    ]);
    await client.alterConsumerGroupOffsets({
      groupId: "billing",
      topics: [{ name: "ledger", partitionOffsets: [{ partition: 0, offset: 3n }] }],
    });
    await client.deleteGroups({ groups: ["billing"] });
    expect((await client.listGroups()).size).toBe(0);

    const [deleted] = await client.deleteRecords({
      topics: [{ name: "ledger", partitions: [{ partition: 0, offset: 10n }] }],
    });
    expect(deleted!.partitions).toEqual([{ partition: 0, lowWatermark: 10n }]);
    expect(await listed(-2n)).toBe(10n);
  });

  test("two members split the partitions, the group rebalances when one leaves, and a new member resumes from the commits", async () => {
    const { bootstrapBrokers } = await brokerWithKafka();
    await admin(bootstrapBrokers).createTopics({ topics: ["orders"], partitions: 3, replicas: 1 });
    const send = (values: string[]) =>
      producer(bootstrapBrokers).send({
        messages: values.map((value, i) => ({ topic: "orders", partition: i % 3, value })),
      });
    await send(Array.from({ length: 30 }, (_, i) => `v${i}`));

    const received: { member: string; value: string }[] = [];
    const members = new Map<string, Consumer<string, string, string, string>>();
    const join = async (name: string) => {
      const member = consumer(bootstrapBrokers, "billing");
      members.set(name, member);
      const stream = await member.consume({
        topics: ["orders"],
        mode: "committed",
        fallbackMode: "earliest",
        autocommit: 100,
      });
      stream.on("data", (message: Received) => received.push({ member: name, value: message.value }));
      return stream;
    };
    const assigned = (name: string) =>
      (members.get(name)?.assignments ?? [])
        .flatMap((a) => a.partitions)
        .sort()
        .join();
    await join("one");
    await join("two");
    await waitUntil(
      () =>
        assigned("one") !== "" &&
        assigned("two") !== "" &&
        [assigned("one"), assigned("two")].join().split(",").sort().join() === "0,1,2",
      "a generation with both members and every partition assigned once",
      60_000,
    );
    await waitUntil(() => new Set(received.map((r) => r.value)).size === 30, "the 30 records", 60_000);

    // Member two leaves: one takes every partition and goes on from two's commits.
    await members.get("two")!.close(true);
    await waitUntil(() => assigned("one") === "0,1,2", "member one alone with every partition", 60_000);
    const before = received.length;
    await send(["w0", "w1", "w2"]);
    await waitUntil(() => received.length >= before + 3, "the 3 new records", 60_000);
    expect(
      received
        .slice(before)
        .map((r) => [r.member, r.value])
        .sort(),
    ).toEqual([
      ["one", "w0"],
      ["one", "w1"],
      ["one", "w2"],
    ]);
    // Every record once so far: nothing read twice across the rebalance.
    expect(received.length).toBe(33);

    // Wait for the commits to cover everything, then a new member resumes after them.
    const groupAdmin = admin(bootstrapBrokers);
    await waitUntil(
      async () => {
        const [group] = await groupAdmin.listConsumerGroupOffsets({ groups: ["billing"] });
        const committed = group?.topics[0]?.partitions.map((p) => p.committedOffset) ?? [];
        return committed.length === 3 && committed.every((offset) => offset === 11n);
      },
      "commits of 11 records on each partition",
      60_000,
      100,
    );
    await members.get("one")!.close(true);
    await join("three");
    await send(["x0"]);
    await waitUntil(
      () => received.some((r) => r.value === "x0"),
      "the record sent after the restart",
      60_000,
    );
    expect(received.slice(33).map((r) => [r.member, r.value])).toEqual([["three", "x0"]]);
  });
});
