/**
 * Unmodified Kafka clients against booblik's Kafka listener: Debian's kcat (librdkafka 2.0.2) and
 * kafkajs 2.2.4 (admin), against a broker child process started with `--kafka-port 0`, and against
 * an in-process listener where the test needs records in the log (appended through the Broker, since
 * Produce over Kafka waits for the format-2 storage). kcat tests are skipped, with the reason
 * printed, where kcat is not installed.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { Broker } from "../../src/broker/broker.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import {
  type BrokerProcess,
  metricsPortOf,
  runBrokerExpectingFailure,
  startBroker,
} from "../helpers/broker-process.ts";
import { KCAT, kcat } from "../helpers/kcat.ts";
import { metricValue } from "../helpers/metrics.ts";
import { rawConnect } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "./bytes.ts";

if (KCAT === null)
  console.log("kafka/clients.test.ts: kcat tests skipped: kcat is not installed (apt-get install -y kcat)");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDir(): TempDir {
  const dir = tempDir("kafka-clients");
  cleanups.push(() => dir[Symbol.dispose]());
  return dir;
}

async function brokerWithKafka(
  extra: string[] = [],
): Promise<{ broker: BrokerProcess; kafkaPort: number; line: string }> {
  const broker = await startBroker(dataDir().path, ["--kafka-port", "0", ...extra]);
  cleanups.push(async () => {
    await broker.stop();
  });
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  const kafkaPort = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
  return { broker, kafkaPort, line };
}

function kafkajsAdmin(port: number) {
  const admin = new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: "test",
    logLevel: logLevel.NOTHING,
  }).admin();
  cleanups.push(() => admin.disconnect());
  return admin;
}

describe("a broker process with --kafka-port", () => {
  test("kafkajs admin: create topics, list them, their metadata and offsets, delete them", async () => {
    const { broker, kafkaPort } = await brokerWithKafka();
    const admin = kafkajsAdmin(kafkaPort);
    await admin.connect();
    expect(
      await admin.createTopics({
        topics: [
          { topic: "orders", numPartitions: 3, configEntries: [{ name: "retention.ms", value: "86400000" }] },
          { topic: "audit" },
        ],
      }),
    ).toBe(true);
    expect((await admin.listTopics()).sort()).toEqual(["audit", "orders"]);
    const metadata = await admin.fetchTopicMetadata({ topics: ["orders"] });
    expect(metadata.topics[0]!.partitions.map((p) => [p.partitionId, p.leader, p.replicas, p.isr])).toEqual([
      [0, 1, [1], [1]],
      [1, 1, [1], [1]],
      [2, 1, [1], [1]],
    ]);
    expect(await admin.fetchTopicOffsets("orders")).toEqual(
      [0, 1, 2].map((partition) => ({ partition, offset: "0", high: "0", low: "0" })),
    );
    // kafkajs reports an existing topic as "nothing created", and a refused setting as an error.
    expect(await admin.createTopics({ topics: [{ topic: "orders" }] })).toBe(false);
    // kafkajs drops CreateTopics' error_message and keeps the code's name.
    const refused = await admin
      .createTopics({ topics: [{ topic: "r3", replicationFactor: 3 }] })
      .catch((e) => e);
    expect(
      (refused as { errors: { type: string; topic: string }[] }).errors.map((e) => [e.topic, e.type]),
    ).toEqual([["r3", "INVALID_REPLICATION_FACTOR"]]);
    await admin.deleteTopics({ topics: ["orders"] });
    expect(await admin.listTopics()).toEqual(["audit"]);
    // SIGTERM with the Kafka connection still open: a clean stop.
    expect(await broker.stop()).toBe(0);
  });

  test("/metrics counts the Kafka listener's connections, requests and refusals, and times its requests by API", async () => {
    const { broker, kafkaPort } = await brokerWithKafka(["--metrics-port", "0"]);
    const scrape = async () =>
      await (await fetch(`http://127.0.0.1:${metricsPortOf(broker.startLine)}/metrics`)).text();
    const before = await scrape();
    expect(metricValue(before, "booblik_kafka_connections")).toBe(0);
    expect(metricValue(before, "booblik_kafka_requests_total")).toBe(0);
    const admin = kafkajsAdmin(kafkaPort);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "counted" }] });
    await admin.fetchTopicOffsets("counted");
    expect(before).not.toContain("booblik_kafka_response_errors_total{");
    // An answer's error codes are counted by API and name: kafkajs reports an existing topic as
    // "nothing created" (TOPIC_ALREADY_EXISTS in the answer).
    expect(await admin.createTopics({ topics: [{ topic: "counted" }] })).toBe(false);
    const during = await scrape();
    expect(
      metricValue(
        during,
        'booblik_kafka_response_errors_total{api="CREATE_TOPICS",error="TOPIC_ALREADY_EXISTS"}',
      ),
    ).toBe(1);
    expect(metricValue(during, "booblik_kafka_connections")).toBeGreaterThanOrEqual(1);
    const requests = metricValue(during, "booblik_kafka_requests_total");
    // ApiVersions, Metadata, CreateTopics, ListOffsets at least; kafkajs adds Metadata refreshes.
    expect(requests).toBeGreaterThanOrEqual(4);
    const count = (api: string) =>
      metricValue(during, `booblik_kafka_request_duration_seconds_count{api="${api}"}`);
    expect([count("API_VERSIONS"), count("CREATE_TOPICS"), count("LIST_OFFSETS")].every((n) => n >= 1)).toBe(
      true,
    );
    // Every request answered is timed once: the histograms' counts add up to the requests.
    const timed = [
      ...during.matchAll(/^booblik_kafka_request_duration_seconds_count\{api="[A-Z_]+"\} (\d+)$/gm),
    ]
      .map((m) => Number(m[1]))
      .reduce((a, b) => a + b, 0);
    expect(timed).toBe(requests);
    // The native listener's families still count only native requests.
    expect(metricValue(during, "booblik_requests_total")).toBe(0);
    // A request for an API booblik does not serve closes the connection, and is counted.
    const socket = await rawConnect(kafkaPort);
    cleanups.push(() => socket.close());
    socket.write(new Expect().i16(77).i16(0).i32(1).str("t").frame());
    await socket.closed;
    await waitUntil(
      async () => metricValue(await scrape(), "booblik_kafka_connections_closed_for_request_total") === 1,
      "the closed connection counted",
      10_000,
      50,
    );
    expect(metricValue(await scrape(), 'booblik_kafka_request_duration_seconds_count{api="UNKNOWN"}')).toBe(
      1,
    );
  });

  test.skipIf(KCAT === null)(
    "kcat -L lists this node at the advertised listener, and the topics",
    async () => {
      const { kafkaPort, line } = await brokerWithKafka();
      expect(line).toBe(
        `booblik: Kafka protocol on 127.0.0.1:${kafkaPort}, advertised to clients as 127.0.0.1:${kafkaPort}`,
      );
      const admin = kafkajsAdmin(kafkaPort);
      await admin.createTopics({ topics: [{ topic: "listed", numPartitions: 2 }] });
      const { stdout, exitCode, stderr } = await kcat(kafkaPort, ["-L", "-J"]);
      expect([exitCode, stderr]).toEqual([0, ""]);
      const listing = JSON.parse(stdout) as {
        brokers: { id: number; name: string }[];
        topics: { topic: string; partitions: { partition: number; leader: number }[] }[];
      };
      expect(listing.brokers).toEqual([{ id: 1, name: `127.0.0.1:${kafkaPort}` }]);
      expect(listing.topics.map((t) => [t.topic, t.partitions.map((p) => [p.partition, p.leader])])).toEqual([
        [
          "listed",
          [
            [0, 1],
            [1, 1],
          ],
        ],
      ]);
    },
  );

  test.skipIf(KCAT === null)("--kafka-advertised-listener is what Metadata tells clients", async () => {
    const { kafkaPort, line } = await brokerWithKafka(["--kafka-advertised-listener", "kafka.example:19092"]);
    expect(line).toEndWith("advertised to clients as kafka.example:19092");
    const { stdout } = await kcat(kafkaPort, ["-L", "-J"]);
    expect((JSON.parse(stdout) as { brokers: unknown[] }).brokers).toEqual([
      { id: 1, name: "kafka.example:19092" },
    ]);
  });

  test("BOOBLIK_KAFKA_PORT and BOOBLIK_KAFKA_ADVERTISED_LISTENER work like the flags", async () => {
    const broker = await startBroker(dataDir().path, [], {
      BOOBLIK_KAFKA_PORT: "0",
      BOOBLIK_KAFKA_ADVERTISED_LISTENER: "[::1]:9999",
    });
    cleanups.push(async () => {
      await broker.stop();
    });
    const line = await broker.lines.waitFor(
      (l) => l.includes("Kafka protocol on"),
      "the Kafka listener line",
    );
    expect(line).toMatch(
      /^booblik: Kafka protocol on 127\.0\.0\.1:\d+, advertised to clients as \[::1\]:9999$/,
    );
    // Metadata v1 names the host without the brackets, as Kafka does.
    const socket = await rawConnect(Number(/on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]));
    cleanups.push(() => socket.close());
    socket.write(new Expect().i16(3).i16(1).i32(1).str("t").i32(-1).frame());
    const bytes = await socket.waitForBytes(4 + 4 + 4 + 4 + 2 + 3 + 4);
    const reader = new KafkaReader(bytes, 8);
    expect([
      reader.int32("brokers"),
      reader.int32("node"),
      reader.string("host"),
      reader.int32("port"),
    ]).toEqual([1, 1, "::1", 9999]);
  });

  test("by default the Kafka listener takes 9092 (a taken 9092 is named in the refusal); `off` disables it", async () => {
    // Hold 9092 ourselves so the broker's bind fails whatever else this machine runs: if another
    // process holds it already, the broker's bind fails the same way.
    let held: { stop(closeActive?: boolean): void } | undefined;
    try {
      held = Bun.listen({ hostname: "127.0.0.1", port: 9092, socket: { data() {} } });
    } catch (error) {
      if ((error as { code?: string }).code !== "EADDRINUSE") throw error;
    }
    cleanups.push(() => held?.stop(true));
    const withDefault = await runBrokerExpectingFailure(["--data-dir", dataDir().path, "--port", "0"], {
      BOOBLIK_KAFKA_PORT: undefined,
    });
    expect([withDefault.exitCode, withDefault.stderr.trim()]).toEqual([
      1,
      "booblik: cannot serve the Kafka protocol on 127.0.0.1:9092: address already in use (choose another --kafka-port, or --kafka-port off)",
    ]);
    const off = await startBroker(dataDir().path, ["--kafka-port", "off"], { BOOBLIK_KAFKA_PORT: undefined });
    cleanups.push(async () => {
      await off.stop();
    });
    expect(await off.stop()).toBe(0);
    expect((await off.lines.rest()).filter((l) => l.includes("Kafka protocol"))).toEqual([]);
  });

  test("a wildcard bind address with nothing advertised gets a start-up warning", async () => {
    const { broker, line } = await brokerWithKafka(["--host", "0.0.0.0", "--allow-anonymous", "yes"]);
    expect(line).toMatch(
      /^booblik: Kafka protocol on 0\.0\.0\.0:\d+, advertised to clients as 0\.0\.0\.0:\d+$/,
    );
    await broker.lines.waitFor(
      (l) =>
        l ===
        "booblik: WARNING: Kafka clients are told to connect to 0.0.0.0, which they cannot reach; set --kafka-advertised-listener host:port",
      "the wildcard warning",
    );
  });

  test("a Kafka port in use is a one-line refusal and exit code 1", async () => {
    const taken = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    cleanups.push(() => taken.stop(true));
    const result = await runBrokerExpectingFailure([
      "--data-dir",
      dataDir().path,
      "--port",
      "0",
      "--kafka-port",
      String(taken.port),
    ]);
    expect([result.exitCode, result.stderr.trim()]).toEqual([
      1,
      `booblik: cannot serve the Kafka protocol on 127.0.0.1:${taken.port}: address already in use (choose another --kafka-port, or --kafka-port off)`,
    ]);
  });

  test("refused: a malformed advertised listener", async () => {
    const dir = dataDir();
    const bad = await runBrokerExpectingFailure([
      "--data-dir",
      dir.path,
      "--port",
      "0",
      "--kafka-port",
      "0",
      "--kafka-advertised-listener",
      "no-port",
    ]);
    expect([bad.exitCode, bad.stderr.trim()]).toEqual([
      1,
      'booblik: --kafka-advertised-listener must be host:port, got "no-port"',
    ]);
    // --kafka-port with --users-file is served with SASL now (test/kafka/sasl.test.ts).
  });
});

describe.skipIf(KCAT === null)("kcat -Q against records in the log", () => {
  test("ListOffsets latest (−1) and earliest (−2) per partition", async () => {
    const dir = dataDir();
    const broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
    cleanups.push(() => broker.close());
    broker.createTopic("q", { partitions: 2 });
    await broker.append("q", 0, ["a", "b", "c"]);
    await broker.append("q", 1, ["d"]);
    const listener = new KafkaListener(broker, {
      hostname: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1 << 20,
      maxConnections: 8,
      maxConnectionsPerAddress: 8,
      idleTimeoutMs: 60_000,
      requestTimeoutMs: 30_000,
      inboundBudget: new InboundBudget(1 << 20),
    });
    const { port } = listener.listen();
    cleanups.push(() => listener.stop());
    // kcat prints one line per asked partition: "<topic> [<partition>] offset <offset>".
    const latest = await kcat(port, ["-Q", "-t", "q:0:-1", "-t", "q:1:-1"]);
    expect([latest.exitCode, latest.stdout.trim().split("\n").sort()]).toEqual([
      0,
      ["q [0] offset 3", "q [1] offset 1"],
    ]);
    const earliest = await kcat(port, ["-Q", "-t", "q:0:-2"]);
    expect([earliest.exitCode, earliest.stdout.trim()]).toEqual([0, "q [0] offset 0"]);
  });
});
