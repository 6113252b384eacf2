/**
 * `--kafka-auto-create-topics` (off by default) against a broker child process: kcat (librdkafka
 * 2.0.2, whose producer asks Metadata with `allow.auto.create.topics` true) and kafkajs 2.2.4 (its
 * producer's `allowAutoTopicCreation`, default true). Kafka creates topics only through Metadata, and
 * so does booblik: a producer's Metadata for the topic creates it, then its Produce lands.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { KCAT, kcat } from "../helpers/kcat.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";

if (KCAT === null)
  console.log(
    "kafka/auto-create.test.ts: kcat tests skipped: kcat is not installed (apt-get install -y kcat)",
  );

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDir(): TempDir {
  const dir = tempDir("kafka-auto-create");
  cleanups.push(() => dir[Symbol.dispose]());
  return dir;
}

async function brokerWithKafka(extra: string[] = []): Promise<{ broker: BrokerProcess; kafkaPort: number }> {
  const broker = await startBroker(dataDir().path, ["--kafka-port", "0", ...extra]);
  cleanups.push(async () => {
    await broker.stop();
  });
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  return { broker, kafkaPort: Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]) };
}

function kafka(port: number): Kafka {
  return new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: "auto-create",
    logLevel: logLevel.NOTHING,
    retry: { retries: 2 },
  });
}

async function topicsOf(port: number): Promise<Map<string, number>> {
  const admin = kafka(port).admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata();
    return new Map(topics.map((topic) => [topic.name, topic.partitions.length]));
  } finally {
    await admin.disconnect();
  }
}

describe.skipIf(KCAT === null)("kcat", () => {
  test("on: producing to an unknown topic creates it with --kafka-auto-create-partitions partitions", async () => {
    const { kafkaPort } = await brokerWithKafka([
      "--kafka-auto-create-topics",
      "on",
      "--kafka-auto-create-partitions",
      "3",
    ]);
    const produced = await kcat(kafkaPort, ["-P", "-t", "fresh", "-K:"], "k1:a\nk2:b\nk3:c\n");
    expect([produced.exitCode, produced.stderr]).toEqual([0, ""]);
    expect((await topicsOf(kafkaPort)).get("fresh")).toBe(3);
    const consumed = await kcat(kafkaPort, ["-C", "-t", "fresh", "-o", "beginning", "-e", "-f", "%k:%s\n"]);
    expect(consumed.stdout.trim().split("\n").sort()).toEqual(["k1:a", "k2:b", "k3:c"]);
  });

  test("off (the default): producing to an unknown topic fails and creates nothing", async () => {
    const { kafkaPort } = await brokerWithKafka();
    const produced = await kcat(kafkaPort, ["-P", "-t", "absent", "-X", "message.timeout.ms=3000"], "a\n");
    expect(produced.exitCode).not.toBe(0);
    // librdkafka waits for the topic to appear in Metadata until the message times out.
    expect(produced.stderr).toContain("Delivery failed for message: Local: Message timed out");
    expect((await topicsOf(kafkaPort)).has("absent")).toBe(false);
  });
});

describe("kafkajs", () => {
  test("on: a producer's send creates the topic (1 partition by default); allowAutoTopicCreation false does not", async () => {
    const { kafkaPort } = await brokerWithKafka(["--kafka-auto-create-topics", "on"]);
    const creating = kafka(kafkaPort).producer();
    await creating.connect();
    cleanups.push(() => creating.disconnect());
    const [sent] = await creating.send({ topic: "made", messages: [{ key: "k", value: "v" }] });
    expect([sent?.topicName, sent?.partition, sent?.errorCode, sent?.baseOffset]).toEqual([
      "made",
      0,
      0,
      "0",
    ]);
    expect((await topicsOf(kafkaPort)).get("made")).toBe(1);

    const polite = kafka(kafkaPort).producer({ allowAutoTopicCreation: false });
    await polite.connect();
    cleanups.push(() => polite.disconnect());
    await expect(polite.send({ topic: "not-made", messages: [{ value: "v" }] })).rejects.toThrow(
      /This server does not host this topic-partition/,
    );
    expect((await topicsOf(kafkaPort)).has("not-made")).toBe(false);
  });
});
