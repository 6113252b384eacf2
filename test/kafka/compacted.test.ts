/**
 * `cleanup.policy` over the Kafka listener, with the clients that set it (kafkajs 2.2.4 and kcat):
 * a topic made compacted, as Kafka Connect and Kafka Streams make their internal topics, describes
 * its policy; a record without a key is refused with INVALID_RECORD (87), as Kafka refuses it, also
 * inside a compressed batch (kcat's lz4: the broker decompresses to look); keyed records are all
 * kept and read back in order (booblik does not compact); IncrementalAlterConfigs can change it.
 * Before 2026-12-03 CreateTopics refused `cleanup.policy` with INVALID_CONFIG.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { type BrokerProcess, kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { KCAT, kcat } from "../helpers/kcat.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

if (KCAT === null) console.log("kafka/compacted.test.ts: kcat steps skipped: kcat is not installed");

/** A kafkajs admin and producer (no retries: a refusal must reach the test) on the broker's Kafka port. */
async function connectClients(broker: BrokerProcess) {
  const port = await kafkaPortOf(broker);
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: "compacted",
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer({ retry: { retries: 0 } });
  await producer.connect();
  return { port, kafka, admin, producer };
}

test("a compacted topic from Kafka clients: described, keyless records refused, every keyed record kept", async () => {
  using dir = tempDir("kafka-compacted");
  await using broker = await startBroker(dir.path, ["--kafka-port", "0"]);
  const { port, admin, producer } = await connectClients(broker);
  try {
    await admin.createTopics({
      topics: [{ topic: "state", configEntries: [{ name: "cleanup.policy", value: "compact" }] }],
    });
    const policy = async () =>
      (
        await admin.describeConfigs({
          resources: [{ type: 2, name: "state", configNames: ["cleanup.policy"] }],
          includeSynonyms: false,
        })
      ).resources[0]!.configEntries.map((entry) => [entry.configName, entry.configValue, entry.isDefault]);
    expect(await policy()).toEqual([["cleanup.policy", "compact", false]]);

    await producer.send({ topic: "state", messages: [{ key: "a", value: "1" }] });
    await expect(producer.send({ topic: "state", messages: [{ value: "no key" }] })).rejects.toMatchObject({
      type: "INVALID_RECORD",
    });
    if (KCAT !== null) {
      // librdkafka compresses with lz4: the key is checked inside the compressed batch.
      const keyless = await kcat(port, ["-P", "-t", "state", "-z", "lz4"], "x\ny\n");
      expect(keyless.exitCode).not.toBe(0);
      expect(keyless.stderr).toContain(
        "Delivery failed for message: Broker: Broker failed to validate record",
      );
      const keyed = await kcat(port, ["-P", "-t", "state", "-z", "lz4", "-K:"], "a:2\nb:3\n");
      expect(keyed.exitCode).toBe(0);
      // Every record, the superseded a=1 included: nothing is compacted away.
      const read = await kcat(port, ["-C", "-t", "state", "-e", "-q", "-f", "%k=%s\\n"]);
      expect(read.stdout).toBe("a=1\na=2\nb=3\n");
    }

    // kafkajs's alterConfigs sends AlterConfigs (33), the legacy replace-all form: the settings it
    // does not name go back to their defaults, as on Kafka.
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: 2, name: "state", configEntries: [{ name: "cleanup.policy", value: "delete" }] }],
    });
    expect(await policy()).toEqual([["cleanup.policy", "delete", true]]);
    await producer.send({ topic: "state", messages: [{ value: "no key, now accepted" }] });
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
});

// Kafka's Partition.deleteRecordsOnLeader: `if (!leaderLog.config.delete) throw new
// PolicyViolationException("Records of partition ... can not be deleted due to the configured
// policy")`: DeleteRecords on a compact-only topic is POLICY_VIOLATION (44), nothing purged (a purge
// would take away the latest record of keys, the one promise a compacted topic makes its readers);
// `compact,delete` includes delete and is purged as usual.
test("DeleteRecords on a compact-only topic is POLICY_VIOLATION, as Kafka answers; compact,delete is purged", async () => {
  using dir = tempDir("kafka-compacted-purge");
  await using broker = await startBroker(dir.path, ["--kafka-port", "0"]);
  const { admin, producer } = await connectClients(broker);
  try {
    await admin.createTopics({
      topics: [
        { topic: "state", configEntries: [{ name: "cleanup.policy", value: "compact" }] },
        { topic: "both", configEntries: [{ name: "cleanup.policy", value: "compact,delete" }] },
      ],
    });
    for (const topic of ["state", "both"])
      await producer.send({
        topic,
        messages: [
          { key: "a", value: "1" },
          { key: "b", value: "2" },
        ],
      });
    await admin.fetchTopicMetadata({ topics: ["state", "both"] }); // kafkajs finds the leaders there
    type Refusal = { cause?: { partitions?: { partition: number; error: { type: string } }[] } };
    const refused = (await admin
      .deleteTopicRecords({ topic: "state", partitions: [{ partition: 0, offset: "-1" }] })
      .then(
        () => undefined,
        (error: unknown) => error,
      )) as Refusal | undefined;
    expect(refused?.cause?.partitions?.map((p) => [p.partition, p.error.type])).toEqual([
      [0, "POLICY_VIOLATION"],
    ]);
    const low = async (topic: string) => (await admin.fetchTopicOffsets(topic)).map((p) => [p.low, p.high]);
    expect(await low("state")).toEqual([["0", "2"]]);
    await admin.fetchTopicMetadata({ topics: ["both"] });
    await admin.deleteTopicRecords({ topic: "both", partitions: [{ partition: 0, offset: "1" }] });
    expect(await low("both")).toEqual([["1", "2"]]);
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
});
