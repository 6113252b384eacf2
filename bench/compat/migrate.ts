/**
 * `bun bench/compat/migrate.ts`: moving a booblik topic and a consumer group to Apache Kafka, as
 * docs/kafka.md ("Moving to a Kafka cluster") describes. Starts a booblik broker child process and a
 * local Kafka node (kafka-node.ts, 4.1.1 in KRaft), then:
 *
 * 1. on booblik: topic `orders` (3 partitions), 300 keyed records from kafkajs (its default
 *    partitioner is Java's murmur2), group `billing` committed at offsets 40 / 50 / 60;
 * 2. creates `orders` on Kafka with the same partition count, and copies each partition with kcat
 *    piping (`kcat -C -p N … | kcat -P -p N …`): partition N to partition N, in order, into an empty
 *    partition, so every record keeps its partition and its offset;
 * 3. checks every record (partition, offset, key, value) on Kafka against booblik;
 * 4. translates the group's committed offsets (the same numbers, since offsets were kept; the rule
 *    for a source whose log start is above 0 is printed) and writes them on Kafka with kafkajs
 *    admin.setOffsets, then a kafkajs consumer of group `billing` on Kafka must start each partition at
 *    the committed offset with the record booblik has there;
 * 5. new keyed records from a kafkajs producer land on the same partitions on both.
 *
 * Prints each step and a final PASS or FAIL line; exit code 1 on a failure.
 *
 * `--with mirror-maker`: the same move with MirrorMaker 2 instead of the kcat pipe (records with
 * headers, timestamps and any bytes; group offsets translated by MirrorMaker): runs
 * bench/compat/migrate-mirror-maker.ts, which says what it checks (and takes
 * `--offset-syncs-location source|target`).
 */
import { parseArgs } from "node:util";
import { Kafka, logLevel } from "kafkajs";
import { startBooblik } from "./booblik.ts";
import { serverJars, startKafka } from "./kafka-node.ts";

const { values: options } = parseArgs({
  options: {
    with: { type: "string", default: "kcat" },
    // migrate-mirror-maker.ts's own option, read there.
    "offset-syncs-location": { type: "string" },
  },
});
if (options.with === "mirror-maker") {
  // That script runs on import and ends the process with its own exit code.
  await import("./migrate-mirror-maker.ts");
} else if (options.with !== "kcat") {
  throw new Error(`--with takes kcat (the default) or mirror-maker, got ${JSON.stringify(options.with)}`);
} else if (options["offset-syncs-location"] !== undefined) {
  throw new Error("--offset-syncs-location is MirrorMaker's: it goes with --with mirror-maker");
}

const KAFKA_VERSION = "4.1.1";
const TOPIC = "orders";
const PARTITIONS = 3;
const RECORDS = 300;
const COMMITTED = [40, 50, 60];

interface Stored {
  partition: number;
  offset: string;
  key: string;
  value: string;
}

function client(bootstrap: string, id: string): Kafka {
  return new Kafka({ brokers: [bootstrap], clientId: id, logLevel: logLevel.NOTHING });
}

/** Every record of every partition, read with kcat (-e: until the end). */
async function readAll(bootstrap: string): Promise<Stored[]> {
  const child = Bun.spawn(
    ["kcat", "-b", bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q", "-f", "%p\t%o\t%k\t%s\n"],
    { stdout: "pipe", stderr: "pipe" },
  );
  const text = await new Response(child.stdout).text();
  await child.exited;
  return text
    .trim()
    .split("\n")
    .map((line) => {
      const [partition, offset, key, value] = line.split("\t");
      return { partition: Number(partition), offset: offset!, key: key!, value: value! };
    })
    .sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

const failures: string[] = [];
function check(what: string, ok: boolean, detail = ""): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail === "" ? "" : `: ${detail}`}`);
  if (!ok) failures.push(what);
}

const booblik = await startBooblik();
const lib = await serverJars(KAFKA_VERSION);
const kafka = await startKafka(lib, KAFKA_VERSION);
try {
  // 1. The source.
  const source = client(booblik.bootstrap, "migrate-source");
  const sourceAdmin = source.admin();
  await sourceAdmin.connect();
  await sourceAdmin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
  const producer = source.producer();
  await producer.connect();
  await producer.send({
    topic: TOPIC,
    messages: Array.from({ length: RECORDS }, (_, i) => ({ key: `customer-${i % 37}`, value: `order ${i}` })),
  });
  await producer.disconnect();
  await sourceAdmin.setOffsets({
    groupId: "billing",
    topic: TOPIC,
    partitions: COMMITTED.map((offset, partition) => ({ partition, offset: String(offset) })),
  });
  const before = await readAll(booblik.bootstrap);
  const perPartition = Array.from(
    { length: PARTITIONS },
    (_, p) => before.filter((r) => r.partition === p).length,
  );
  console.log(`booblik: ${before.length} records in ${TOPIC}, per partition ${perPartition.join(" / ")}`);

  // 2. The copy: the same partition count on Kafka, then each partition piped in order.
  const target = client(kafka.bootstrap, "migrate-target");
  const targetAdmin = target.admin();
  await targetAdmin.connect();
  await targetAdmin.createTopics({
    topics: [{ topic: TOPIC, numPartitions: PARTITIONS }],
    waitForLeaders: true,
  });
  for (let partition = 0; partition < PARTITIONS; partition++) {
    // Key and value separated by a tab (-K '\t'): fine for these records, which hold no tab or
    // newline; records with such bytes need MirrorMaker 2 (docs/kafka.md).
    const pipe = Bun.spawn(
      [
        "bash",
        "-o",
        "pipefail",
        "-c",
        `kcat -b ${booblik.bootstrap} -C -t ${TOPIC} -p ${partition} -o beginning -e -q -f '%k\\t%s\\n' | ` +
          `kcat -b ${kafka.bootstrap} -P -t ${TOPIC} -p ${partition} -K '\\t' -X enable.idempotence=true`,
      ],
      { stdout: "inherit", stderr: "inherit" },
    );
    check(`kcat pipe of partition ${partition} exits 0`, (await pipe.exited) === 0);
  }

  // 3. Every record at the same partition and offset, with the same key and value.
  const after = await readAll(kafka.bootstrap);
  check(
    `all ${before.length} records on Kafka at the same partition and offset with the same key and value`,
    JSON.stringify(after) === JSON.stringify(before),
    `${after.length} records read back`,
  );

  // 4. The group: translate (offset − source log start + target log start; here 0 and 0, so the
  // same numbers) and write, then resume there.
  const committed = await sourceAdmin.fetchOffsets({ groupId: "billing", topics: [TOPIC] });
  const sourceStarts = await sourceAdmin.fetchTopicOffsets(TOPIC);
  const translated = committed[0]!.partitions.map(({ partition, offset }) => {
    const logStart = Number(sourceStarts.find((p) => p.partition === partition)!.low);
    return { partition, offset: String(Number(offset) - logStart) };
  });
  console.log(
    `billing on booblik: ${committed[0]!.partitions.map((p) => `${p.partition}:${p.offset}`).join(" ")}; ` +
      `log starts ${sourceStarts.map((p) => p.low).join(" ")}; written on Kafka: ${translated.map((p) => `${p.partition}:${p.offset}`).join(" ")}`,
  );
  await targetAdmin.setOffsets({ groupId: "billing", topic: TOPIC, partitions: translated });
  const consumer = target.consumer({ groupId: "billing", sessionTimeout: 10_000 });
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC] });
  const firstSeen = new Map<number, { offset: string; value: string }>();
  await new Promise<void>((resolve) => {
    void consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (!firstSeen.has(partition))
          firstSeen.set(partition, { offset: message.offset, value: message.value!.toString() });
        if (firstSeen.size === PARTITIONS) resolve();
      },
    });
  });
  await consumer.disconnect();
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const seen = firstSeen.get(partition)!;
    const expected = before.find(
      (r) => r.partition === partition && r.offset === String(COMMITTED[partition]),
    )!;
    check(
      `group billing on Kafka resumes partition ${partition} at ${COMMITTED[partition]} with booblik's record there`,
      seen.offset === String(COMMITTED[partition]) && seen.value === expected.value,
      `first record ${seen.offset} "${seen.value}", booblik has "${expected.value}"`,
    );
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
  await sourceAdmin.disconnect();
  await targetAdmin.disconnect();
} catch (error) {
  failures.push((error as Error).message);
  console.log(`FAIL ${(error as Error).stack}`);
} finally {
  await kafka.stop();
  await booblik.stop();
}
console.log(failures.length === 0 ? "PASS: migration to Kafka" : `FAIL: ${failures.length} check(s) failed`);
process.exit(failures.length === 0 ? 0 : 1);
