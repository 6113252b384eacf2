/**
 * Consumer groups and committed offsets with unmodified clients against a broker child process:
 * kcat (`-G`, librdkafka 2.0.2 from Debian) consuming, committing and resuming from its commit,
 * across a restart of the consumer and a SIGKILL of the broker; a two-member kafkajs 2.2.4 group
 * splitting the partitions, rebalancing when a member leaves, and resuming from the commits; a static
 * kcat member (group.instance.id) restarted without a rebalance; two kcat members sharing the first
 * generation under --group-initial-rebalance-delay; and the
 * group admin calls (ListGroups, DescribeGroups, OffsetFetch) through kafkajs's admin. kcat tests are
 * skipped, with the reason printed, where kcat is not installed.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { AssignerProtocol, type Consumer, type EachMessagePayload, Kafka, logLevel } from "kafkajs";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { type BrokerProcess, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { KCAT, kcat } from "../helpers/kcat.ts";
import { metricValue } from "../helpers/metrics.ts";
import { LineReader } from "../helpers/process.ts";
import { type RawSocket, rawConnect } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "./bytes.ts";

// Rebalances take a few heartbeats, and the clients are child processes on a busy 2-core machine.
setDefaultTimeout(90_000);

if (KCAT === null)
  console.log("kafka/groups.test.ts: kcat tests skipped: kcat is not installed (apt-get install -y kcat)");

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDir(): TempDir {
  const dir = tempDir("kafka-groups");
  cleanups.push(() => dir[Symbol.dispose]());
  return dir;
}

async function brokerProcess(
  dir: string,
  extra: string[] = [],
): Promise<{ broker: BrokerProcess; kafkaPort: number; kafkaLine: string }> {
  const broker = await startBroker(dir, ["--kafka-port", "0", ...extra]);
  cleanups.push(() => broker.stop("SIGKILL"));
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  return {
    broker,
    kafkaPort: Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]),
    kafkaLine: line,
  };
}

/** `kcat -G group topic -e`: consumes what the group has not committed yet, commits, leaves at EOF. */
async function kcatGroup(port: number, group: string, topic: string): Promise<string[]> {
  const result = await kcat(
    port,
    ["-G", group, topic, "-X", "auto.offset.reset=earliest", "-e", "-q", "-u", "-f", "%p:%o:%s\n"],
    undefined,
    60_000,
  ); // 60 s, as this file gave kcat before the shared helper
  expect(result.exitCode, result.stderr).toBe(0);
  return result.stdout
    .split("\n")
    .filter((line) => line !== "")
    .sort();
}

async function createTopic(port: number, topic: string, partitions: number): Promise<void> {
  const admin = new Kafka({ brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] });
  await admin.disconnect();
}

describe.skipIf(KCAT === null)("kcat -G", () => {
  test("consumes a topic as a group, commits, and resumes from the commit after its restart and after a SIGKILL of the broker", async () => {
    const dir = dataDir();
    let { broker, kafkaPort } = await brokerProcess(dir.path);
    await createTopic(kafkaPort, "events", 2);
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "0"], "a\nb\nc\n");
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "1"], "d\n");
    expect(await kcatGroup(kafkaPort, "readers", "events")).toEqual(["0:0:a", "0:1:b", "0:2:c", "1:0:d"]);
    // The consumer's restart: only what came after its commit.
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "1"], "e\n");
    expect(await kcatGroup(kafkaPort, "readers", "events")).toEqual(["1:1:e"]);
    // The broker is killed; the commits were acknowledged, so they are there after its restart.
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "0"], "f\n");
    expect(await kcatGroup(kafkaPort, "readers", "events")).toEqual(["0:3:f"]);
    expect(await broker.stop("SIGKILL")).not.toBe(0);
    ({ broker, kafkaPort } = await brokerProcess(dir.path));
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "1"], "g\n");
    expect(await kcatGroup(kafkaPort, "readers", "events")).toEqual(["1:2:g"]);
    // Another group starts from the beginning; the internal topic is listed, as Kafka lists its own
    // (flagged is_internal in Metadata; handler.test.ts checks the flag).
    expect(await kcatGroup(kafkaPort, "others", "events")).toHaveLength(7);
    const listing = await kcat(kafkaPort, ["-L", "-J"]);
    expect(
      (JSON.parse(listing.stdout) as { topics: { topic: string }[] }).topics.map((t) => t.topic),
    ).toEqual(["__consumer_offsets", "events"]);
  });
});

/** A `kcat -G workers jobs` member that runs until the test ends; its stderr is read line by line. */
function kcatMember(port: number, settings: string[]) {
  const child = Bun.spawn(
    [
      KCAT!,
      ...["-b", `127.0.0.1:${port}`, "-G", "workers", "jobs"],
      ...settings.flatMap((setting) => ["-X", setting]),
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "pipe" },
  );
  cleanups.push(async () => {
    child.kill("SIGKILL");
    await child.exited;
  });
  return { child, lines: new LineReader(child.stderr) };
}

/** The value of `name`{group="workers"} in the broker's /metrics (started with --metrics-port). */
async function workersMetric(broker: BrokerProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)).text();
  return metricValue(text, `${name}{group="workers"}`);
}

/** kcat prints "% Group workers rebalanced (memberid …): assigned: jobs [0], jobs [1]". */
const assigned = (line: string) => /rebalanced.*assigned: (.*)$/.exec(line)?.[1] ?? "";

describe.skipIf(KCAT === null)("kcat -G, two members", () => {
  test("a member killed with SIGKILL is removed when its session ends, and the other one gets its partitions", async () => {
    const { kafkaPort } = await brokerProcess(dataDir().path);
    await createTopic(kafkaPort, "jobs", 2);
    const member = () => kcatMember(kafkaPort, ["session.timeout.ms=6000", "heartbeat.interval.ms=200"]);
    const one = member();
    expect(assigned(await one.lines.waitFor((l) => assigned(l) !== "", "one's first assignment"))).toBe(
      "jobs [0], jobs [1]",
    );
    const two = member();
    const twoGets = assigned(await two.lines.waitFor((l) => assigned(l) !== "", "two's assignment"));
    const oneGets = assigned(
      await one.lines.waitFor(
        (l) => assigned(l) !== "" && assigned(l) !== "jobs [0], jobs [1]",
        "one's share",
      ),
    );
    expect([oneGets, twoGets].sort()).toEqual(["jobs [0]", "jobs [1]"]);
    two.child.kill("SIGKILL");
    await two.child.exited;
    // No LeaveGroup: the coordinator notices when two's 6 s session ends.
    const alone = await one.lines
      .waitFor((l) => assigned(l) === "jobs [0], jobs [1]", "one alone again")
      .catch(async (error: Error) => {
        // kcat itself ended (seen twice in full runs on a busy machine, never alone): say how.
        await one.child.exited;
        throw new Error(`${error.message}: kcat exit ${one.child.exitCode}, signal ${one.child.signalCode}`);
      });
    expect(assigned(alone)).toBe("jobs [0], jobs [1]");
  });
});

/**
 * One request on a raw connection (JoinGroup, SyncGroup, Heartbeat, OffsetCommit, non-flexible
 * versions), its answer's body after the correlation id. kcat cannot be used here: it exits when all
 * its broker connections are down at once, as a single broker's restart makes them.
 */
async function ask(socket: RawSocket, apiKey: number, version: number, body: (e: Expect) => void) {
  const request = new Expect().i16(apiKey).i16(version).i32(apiKey).str("raw-member");
  body(request);
  const before = socket.received().length;
  socket.write(request.frame());
  const size = new DataView((await socket.waitForBytes(before + 4)).buffer).getInt32(before, false);
  const bytes = await socket.waitForBytes(before + 4 + size);
  const reader = new KafkaReader(bytes.slice(before + 4, before + 4 + size));
  expect(reader.int32("correlation_id")).toBe(apiKey);
  return reader;
}

describe("a group across a SIGKILL of the broker", () => {
  test("its member carries on with its id, generation and assignment: heartbeats, SyncGroup and commits are accepted, no rejoin", async () => {
    const dir = dataDir();
    let { broker, kafkaPort } = await brokerProcess(dir.path);
    await createTopic(kafkaPort, "jobs", 1);
    let socket = await rawConnect(kafkaPort);
    const metadata = new Expect().i16(0).i32(1).str("jobs").i32(-1).body();
    const joined = await ask(socket, 11, 0, (e) =>
      e
        .str("survivors")
        .i32(30_000)
        .str("")
        .str("consumer")
        .i32(1)
        .str("range")
        .i32(metadata.length)
        .raw(metadata),
    );
    expect(joined.int16("error_code")).toBe(0);
    const generation = joined.int32("generation_id");
    joined.string("protocol_name");
    joined.string("leader");
    const memberId = joined.string("member_id");
    const assignment = new Expect().i16(0).i32(1).str("jobs").i32(1).i32(0).i32(-1).body();
    const synced = await ask(socket, 14, 0, (e) =>
      e
        .str("survivors")
        .i32(generation)
        .str(memberId)
        .i32(1)
        .str(memberId)
        .i32(assignment.length)
        .raw(assignment),
    );
    expect(synced.int16("error_code")).toBe(0);
    socket.close();

    await broker.stop("SIGKILL");
    const restarted = await brokerProcess(dir.path);
    ({ broker, kafkaPort } = restarted);
    expect(restarted.kafkaLine).toContain("; 1 consumer group with members restored from __consumer_offsets");
    socket = await rawConnect(kafkaPort);
    cleanups.push(() => socket.close());
    // Before the group was stored, the restarted broker knew no such member: UNKNOWN_MEMBER_ID (25)
    // to each of these, and the member had to rejoin into a new group from generation 1.
    const heartbeat = await ask(socket, 12, 0, (e) => e.str("survivors").i32(generation).str(memberId));
    expect(heartbeat.int16("error_code")).toBe(0);
    const again = await ask(socket, 14, 0, (e) => e.str("survivors").i32(generation).str(memberId).i32(0));
    expect(again.int16("error_code")).toBe(0);
    expect([...(again.nullableBytes("assignment") ?? [])]).toEqual([...assignment]);
    const commit = await ask(socket, 8, 2, (e) =>
      e
        .str("survivors")
        .i32(generation)
        .str(memberId)
        .i64(-1)
        .i32(1)
        .str("jobs")
        .i32(1)
        .i32(0)
        .i64(0)
        .str(null),
    );
    expect([commit.int32("topics"), commit.string("name"), commit.int32("partitions")]).toEqual([
      1,
      "jobs",
      1,
    ]);
    expect([commit.int32("partition_index"), commit.int16("error_code")]).toEqual([0, 0]);
  });
});

describe.skipIf(KCAT === null)("kcat -G, static members (group.instance.id)", () => {
  test("a member killed with SIGKILL and started again under its instance id gets its partitions back without a rebalance", async () => {
    const { broker, kafkaPort } = await brokerProcess(dataDir().path, ["--metrics-port", "0"]);
    const metrics = (name: string) => workersMetric(broker, name);
    await createTopic(kafkaPort, "jobs", 2);
    const member = (instance: string) =>
      kcatMember(kafkaPort, [
        `group.instance.id=${instance}`,
        "session.timeout.ms=60000",
        "heartbeat.interval.ms=200",
      ]);
    const one = member("one");
    await one.lines.waitFor((l) => assigned(l) === "jobs [0], jobs [1]", "one's first assignment");
    const two = member("two");
    const twoGets = assigned(await two.lines.waitFor((l) => assigned(l) !== "", "two's assignment"));
    await one.lines.waitFor((l) => assigned(l) !== "" && assigned(l) !== "jobs [0], jobs [1]", "one's share");
    const generation = await metrics("booblik_group_generation");
    two.child.kill("SIGKILL");
    await two.child.exited;
    // Well within two's 60 s session: the coordinator hands the new incarnation two's place and
    // assignment (a dynamic member would wait for that session to end, then rebalance).
    const again = member("two");
    expect(assigned(await again.lines.waitFor((l) => assigned(l) !== "", "two's assignment again"))).toBe(
      twoGets,
    );
    expect(await metrics("booblik_group_generation")).toBe(generation);
    expect(await metrics("booblik_group_members")).toBe(2);
  });
});

describe.skipIf(KCAT === null)("kcat -G, --group-initial-rebalance-delay", () => {
  test("a member that joins while the group's first rebalance waits shares its first generation: each is assigned its share once", async () => {
    const { broker, kafkaPort } = await brokerProcess(dataDir().path, [
      "--metrics-port",
      "0",
      "--group-initial-rebalance-delay",
      "3s",
    ]);
    const metrics = (name: string) => workersMetric(broker, name);
    await createTopic(kafkaPort, "jobs", 2);
    const settings = ["session.timeout.ms=6000", "heartbeat.interval.ms=200"];
    const one = kcatMember(kafkaPort, settings);
    // The second starts only once the first is a member. Without the delay, the first would be
    // assigned both partitions alone in generation 1 by then, and both get their shares in 2.
    await waitUntil(
      async () => (await metrics("booblik_group_members").catch(() => 0)) === 1,
      "the first member",
    );
    const two = kcatMember(kafkaPort, settings);
    const firsts = await Promise.all(
      [one, two].map(async (member) =>
        assigned(await member.lines.waitFor((l) => assigned(l) !== "", "an assignment")),
      ),
    );
    expect(firsts.sort()).toEqual(["jobs [0]", "jobs [1]"]);
    expect(await metrics("booblik_group_generation")).toBe(1);
  });
});

describe.skipIf(KCAT === null)("kcat -G, a group that empties", () => {
  test("with committed offsets it keeps counting generations, as Kafka keeps such a group", async () => {
    const { broker, kafkaPort } = await brokerProcess(dataDir().path, ["--metrics-port", "0"]);
    const metrics = (name: string) => workersMetric(broker, name);
    await createTopic(kafkaPort, "jobs", 1);
    await kcat(kafkaPort, ["-P", "-t", "jobs", "-p", "0"], "a\nb\n");
    // A member that reads, commits (kcat commits as it closes) and leaves, three times: each run
    // joins a group that emptied. Kafka's generation goes 1, 3, 5 (the rebalance that empties the
    // group counts one); booblik's went 1, 1, 1, as it forgot an emptied group with its count.
    const seen: number[] = [];
    for (let run = 0; run < 3; run++) {
      const member = kcatMember(kafkaPort, [
        ...["session.timeout.ms=6000", "heartbeat.interval.ms=200", "auto.offset.reset=earliest"],
        "auto.commit.interval.ms=100",
      ]);
      await member.lines.waitFor((l) => assigned(l) !== "", "an assignment");
      seen.push(await metrics("booblik_group_generation"));
      const committed = async () => {
        const text = await (
          await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)
        ).text();
        return metricValue(
          text,
          'booblik_group_committed_offset{group="workers",topic="jobs",partition="0"}',
        );
      };
      await waitUntil(async () => (await committed().catch(() => -1)) === 2, "the member's commit");
      member.child.kill("SIGTERM");
      await member.child.exited;
      await waitUntil(
        async () => (await metrics("booblik_group_members").catch(() => 0)) === 0,
        "the member gone",
      );
    }
    expect(seen).toEqual([1, 3, 5]);
  });
});

describe.skipIf(KCAT === null)("lag in /metrics", () => {
  test("each group's committed offset and lag per partition", async () => {
    const { broker, kafkaPort } = await brokerProcess(dataDir().path, ["--metrics-port", "0"]);
    const metricsPort = metricsPortOf(broker.startLine);
    await createTopic(kafkaPort, "events", 2);
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "0"], "a\nb\nc\n");
    expect(await kcatGroup(kafkaPort, "readers", "events")).toHaveLength(3);
    await kcat(kafkaPort, ["-P", "-t", "events", "-p", "0"], "d\ne\n");
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(
      metricValue(text, 'booblik_group_committed_offset{group="readers",topic="events",partition="0"}'),
    ).toBe(3);
    expect(metricValue(text, 'booblik_group_lag{group="readers",topic="events",partition="0"}')).toBe(2);
    expect(text).not.toContain("__consumer_offsets");
  });
});

describe("kafkajs consumer group", () => {
  test("two members split the partitions, the group rebalances when one leaves, and a new member resumes from the commits", async () => {
    const dir = dataDir();
    const { kafkaPort } = await brokerProcess(dir.path);
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${kafkaPort}`],
      logLevel: logLevel.NOTHING,
      clientId: "t",
    });
    await createTopic(kafkaPort, "orders", 3);
    const producer = kafka.producer();
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const send = (values: string[]) =>
      producer.send({
        topic: "orders",
        messages: values.map((value, i) => ({ value, partition: i % 3 })),
      });
    const first = Array.from({ length: 30 }, (_, i) => `v${i}`);
    for (let i = 0; i < 30; i += 5) await send(first.slice(i, i + 5));

    const received: { member: string; value: string }[] = [];
    const assignments = new Map<string, number[]>();
    const member = async (name: string): Promise<Consumer> => {
      const consumer = kafka.consumer({
        groupId: "billing",
        sessionTimeout: 10_000,
        rebalanceTimeout: 10_000,
        heartbeatInterval: 300,
        maxWaitTimeInMs: 200,
      });
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        assignments.set(name, event.payload.memberAssignment.orders ?? []);
      });
      await consumer.connect();
      cleanups.push(() => consumer.disconnect());
      await consumer.subscribe({ topic: "orders", fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }: EachMessagePayload) => {
          received.push({ member: name, value: message.value!.toString() });
        },
      });
      return consumer;
    };
    const one = await member("one");
    const two = await member("two");
    // Both members in one generation, the three partitions split between them.
    await waitUntil(
      () => {
        const a = assignments.get("one") ?? [];
        const b = assignments.get("two") ?? [];
        return a.length > 0 && b.length > 0 && [...a, ...b].sort().join() === "0,1,2";
      },
      "a generation with both members and every partition assigned once",
      60_000,
    );
    await waitUntil(() => new Set(received.map((r) => r.value)).size === 30, "the 30 records", 60_000);

    // Member two leaves (LeaveGroup): one gets every partition, and continues where two committed.
    await two.disconnect();
    await waitUntil(
      () => (assignments.get("one") ?? []).slice().sort().join() === "0,1,2",
      "member one alone with every partition",
      60_000,
    );
    const countBefore = received.length;
    await send(["w0", "w1", "w2"]);
    await waitUntil(
      () => ["w0", "w1", "w2"].every((v) => received.some((r) => r.value === v)),
      "the 3 new records",
      60_000,
    );
    expect(received.slice(countBefore).map((r) => [r.member, r.value])).toEqual(
      expect.arrayContaining([
        ["one", "w0"],
        ["one", "w1"],
        ["one", "w2"],
      ]),
    );
    // Nothing was delivered twice: the rebalance resumed every partition at its committed offset.
    const values = received.map((r) => r.value);
    expect(values.length).toBe(new Set(values).size);

    // The group's commits, as the admin API sees them; then a fresh member resumes from them.
    await one.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    const committed = await admin.fetchOffsets({ groupId: "billing", topics: ["orders"] });
    // Six sends of five to partitions 0,1,2,0,1, then one each: 13, 13 and 7 records.
    expect(committed[0]!.partitions.map((p) => [p.partition, p.offset]).sort()).toEqual([
      [0, "13"],
      [1, "13"],
      [2, "7"],
    ]);
    // Empty, the group keeps its members' protocol type, as Kafka's does ("" made the Java admin
    // client call every idle consumer group one of manual assignment, `isSimpleConsumerGroup()`).
    const groups = await admin.listGroups();
    expect(groups.groups.filter((g) => g.groupId === "billing")).toEqual([
      { groupId: "billing", protocolType: "consumer" },
    ]);
    const described = await admin.describeGroups(["billing"]);
    expect(described.groups[0]!.state).toBe("Empty");
    expect(described.groups[0]!.protocolType).toBe("consumer");
    await send(["x0"]);
    received.length = 0;
    const three = await member("three");
    await waitUntil(() => received.length >= 1, "the record after the commits", 60_000);
    const describedLive = await admin.describeGroups(["billing"]);
    expect(describedLive.groups[0]!.members).toHaveLength(1);
    // The member's subscription as it sent it in its JoinGroup. The coordinator kept a view into
    // the connection's reused inbound buffer, and the member's next request (its SyncGroup, its
    // heartbeats) wrote over it (a reviewer's run, 2026-12-02): DescribeGroups answered garbage, a
    // rejoin with unchanged metadata rebalanced, and OffsetDelete read the subscription wrong.
    const subscription = AssignerProtocol.MemberMetadata.decode(
      describedLive.groups[0]!.members[0]!.memberMetadata,
    );
    expect(subscription?.topics).toEqual(["orders"]);
    await three.disconnect();
    expect(received.map((r) => r.value)).toEqual(["x0"]);
  });
});
