/**
 * Unmodified Kafka clients with idempotence on, against a broker child process (`--kafka-port 0`):
 * kafkajs 2.2.4 (`idempotent: true`, InitProducerId v1), Debian's kcat (librdkafka 2.0.2,
 * `enable.idempotence=true`, InitProducerId v4, flexible) and @platformatic/kafka 2.12.1
 * (`idempotent: true`). Afterwards the data directory is opened in this process and every stored
 * batch is read: each record once, each batch stamped with the producer id InitProducerId handed
 * out and consecutive sequences.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Admin, Producer, stringSerializers } from "@platformatic/kafka";
import { Kafka, logLevel } from "kafkajs";
import { Broker } from "../../src/broker/broker.ts";
import { newEntryScanResult, scanEntries, valuesOfEntries } from "../../src/record/entries.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";

const KCAT = Bun.which("kcat");
if (KCAT === null)
  console.log(
    "kafka/idempotent-clients.test.ts: kcat test skipped: kcat is not installed (apt-get install -y kcat)",
  );

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function brokerWithKafka(dir: TempDir): Promise<{ broker: BrokerProcess; kafkaPort: number }> {
  const broker = await startBroker(dir.path, ["--kafka-port", "0"]);
  cleanups.push(async () => {
    await broker.stop();
  });
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  const kafkaPort = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
  return { broker, kafkaPort };
}

interface StoredBatch {
  baseOffset: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

/** Every stored batch header and record value of t/partition, read from the data directory. */
function stored(dataDir: string, topic: string, partition = 0): { batches: StoredBatch[]; values: string[] } {
  const broker = Broker.open({ dataDir });
  try {
    const read = broker.partition(topic, partition).read(0, 64 << 20);
    const batches: StoredBatch[] = [];
    scanEntries(
      read.records,
      0,
      read.records.length,
      { framing: "framed", verifyCrc: true },
      newEntryScanResult(),
      (_e, _s, _b, h) => {
        batches.push({
          baseOffset: h.baseOffset,
          producerId: h.producerId,
          producerEpoch: h.producerEpoch,
          baseSequence: h.baseSequence,
          recordCount: h.recordCount,
        });
      },
    );
    const values = valuesOfEntries(read.records, "framed").map((v) =>
      new TextDecoder().decode(v ?? undefined),
    );
    return { batches, values };
  } finally {
    broker.close();
  }
}

/** Each batch continues the previous one's sequence, from 0, under one producer id ≥ 0. */
function expectOneProducerInSequence(batches: StoredBatch[]): void {
  expect(batches.length).toBeGreaterThan(0);
  const producerId = batches[0]!.producerId;
  expect(producerId).toBeGreaterThanOrEqual(0);
  let sequence = 0;
  for (const batch of batches) {
    expect([batch.producerId, batch.producerEpoch, batch.baseSequence]).toEqual([producerId, 0, sequence]);
    sequence += batch.recordCount;
  }
}

describe("idempotent Kafka producers against a broker process", () => {
  test("kafkajs idempotent: true: every record stored once, stamped with its producer id and sequences", async () => {
    const dir = tempDir("kafka-idempotent");
    cleanups.push(() => dir[Symbol.dispose]());
    const { broker, kafkaPort } = await brokerWithKafka(dir);
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${kafkaPort}`],
      clientId: "idem",
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "idem", numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: string[] = [];
    for (let send = 0; send < 10; send++) {
      const values = [0, 1, 2].map((i) => `m${send}-${i}`);
      sent.push(...values);
      await producer.send({ topic: "idem", acks: -1, messages: values.map((value) => ({ value })) });
    }
    await producer.disconnect();
    expect(await broker.stop()).toBe(0);
    const { batches, values } = stored(dir.path, "idem");
    expect(values).toEqual(sent);
    expect(batches.length).toBe(10);
    expectOneProducerInSequence(batches);
  });

  test.skipIf(KCAT === null)(
    "kcat -X enable.idempotence=true (InitProducerId v4, flexible): stored once, in sequence",
    async () => {
      const dir = tempDir("kafka-idempotent");
      cleanups.push(() => dir[Symbol.dispose]());
      const { broker, kafkaPort } = await brokerWithKafka(dir);
      const kafka = new Kafka({
        brokers: [`127.0.0.1:${kafkaPort}`],
        clientId: "idem",
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: "kc", numPartitions: 1 }] });
      await admin.disconnect();
      const lines = Array.from({ length: 200 }, (_, i) => `line-${i}`);
      const child = Bun.spawn(
        [
          KCAT!,
          "-b",
          `127.0.0.1:${kafkaPort}`,
          "-P",
          "-t",
          "kc",
          "-p",
          "0",
          "-X",
          "enable.idempotence=true",
          "-X",
          "debug=eos,protocol",
        ],
        { stdin: new TextEncoder().encode(`${lines.join("\n")}\n`), stdout: "pipe", stderr: "pipe" },
      );
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]).finally(
        () => clearTimeout(timer),
      );
      expect(exitCode).toBe(0);
      // librdkafka logs the id it was given (debug=eos): the one InitProducerId answered.
      const acquired = /Acquired PID\{Id:(\d+),Epoch:(\d+)\}/.exec(stderr);
      expect(acquired).not.toBeNull();
      // debug=protocol names the version sent: librdkafka picks the highest advertised (v4, flexible).
      expect(/Sent InitProducerIdRequest \(v(\d+)/.exec(stderr)?.[1]).toBe("4");
      expect(await broker.stop()).toBe(0);
      const { batches, values } = stored(dir.path, "kc");
      expect(values).toEqual(lines);
      expectOneProducerInSequence(batches);
      expect(batches[0]!.producerId).toBe(Number(acquired![1]));
    },
  );

  test("@platformatic/kafka idempotent: true: stored once, in sequence, under the id it was given", async () => {
    const dir = tempDir("kafka-idempotent");
    cleanups.push(() => dir[Symbol.dispose]());
    const { broker, kafkaPort } = await brokerWithKafka(dir);
    const bootstrapBrokers = [`127.0.0.1:${kafkaPort}`];
    const admin = new Admin({ clientId: "idem", bootstrapBrokers });
    await admin.createTopics({ topics: ["plt"], partitions: 1, replicas: 1 });
    await admin.close();
    const producer = new Producer({
      clientId: "idem",
      bootstrapBrokers,
      serializers: stringSerializers,
      idempotent: true,
    });
    const sent: string[] = [];
    try {
      for (let send = 0; send < 10; send++) {
        const values = [0, 1, 2].map((i) => `p${send}-${i}`);
        sent.push(...values);
        await producer.send({ messages: values.map((value) => ({ topic: "plt", partition: 0, value })) });
      }
      // The id and epoch InitProducerId handed out, as the client holds them.
      expect(producer.producerId).toBeDefined();
    } finally {
      await producer.close();
    }
    expect(await broker.stop()).toBe(0);
    const { batches, values } = stored(dir.path, "plt");
    expect(values).toEqual(sent);
    expect(batches.length).toBe(10);
    expectOneProducerInSequence(batches);
    expect(BigInt(batches[0]!.producerId)).toBe(producer.producerId!);
  });
});
