/**
 * The smallest reproduction of what kafka-torture.ts found with `--kafkajs-in-flight 3`: a kafkajs
 * 2.2.4 idempotent producer with two `send` calls in flight loses one acknowledged record and
 * stores the other twice when one Produce answer is lost. A client bug, not the broker's: booblik
 * answers exactly as Kafka's own rules say (a batch with the producer id, epoch and sequences of a
 * stored batch is a duplicate, answered with the stored batch's offset).
 *
 * Owns: a broker child process (`--kafka-port` behind the tracing proxy of kafka-torture.ts,
 * `force` durability), one topic of one partition, one kafkajs producer. Why a script: the outcome
 * depends on kafkajs's sequence bookkeeping (src/producer/sendMessages.js): the sequence is taken
 * and advanced under the broker lock, and given back (`updateSequence(-n)`) when the request fails,
 * whatever the broker did with it. So:
 * 1. the first send (X) takes sequence 0, the broker appends it at offset 0, the proxy drops the
 *    answer and closes the connection; kafkajs gives sequence 0 back and waits to retry;
 * 2. the other send (Y), waiting for the lock, takes sequence 0 for its own record; the broker sees
 *    producer P's sequences 0-0 again and answers offset 0 (a duplicate): Y resolves "at offset 0",
 *    its record never stored;
 * 3. X's retry takes sequence 1 and is appended at offset 1: X is stored twice.
 * Which of the two sends kafkajs puts on the wire first is its choice (in the runs here: B).
 *
 * `bun test/torture/kafkajs-concurrent-sends.ts [--work-dir DIR]` prints what each send was told
 * and what the partition holds; it exits 1 when the loss and the duplicate happened (the expected
 * outcome with kafkajs 2.2.4), 0 when they did not.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { startBroker } from "../helpers/broker-process.ts";
import { freePort } from "../helpers/free-port.ts";
import { TracingProxy } from "./kafka-torture.ts";

const TOPIC = "concurrent";

async function main(args: string[]): Promise<number> {
  const index = args.indexOf("--work-dir");
  const parent = index >= 0 ? args[index + 1]! : (process.env.BOOBLIK_BENCH_DIR ?? os.tmpdir());
  const workDir = fs.mkdtempSync(path.join(parent, "booblik-kafkajs-concurrent-"));
  const traceFd = fs.openSync(path.join(workDir, "produce-trace.log"), "a");
  const kafkaPort = await freePort();
  const proxy = new TracingProxy(kafkaPort, traceFd);
  const bootstrap = `127.0.0.1:${await proxy.listen()}`;
  const broker = await startBroker(path.join(workDir, "data"), [
    "--kafka-port",
    String(kafkaPort),
    "--durability",
    "force",
    "--kafka-advertised-listener",
    bootstrap,
  ]);
  try {
    await broker.lines.waitFor((line) => line.includes("Kafka protocol on"), "the Kafka listener line");
    const kafka = new Kafka({ clientId: "concurrent", brokers: [bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    proxy.arm("response"); // the answer to the first Produce is lost
    const send = (value: string) =>
      producer.send({ topic: TOPIC, acks: -1, messages: [{ value }] }).then(
        (answers) => `acknowledged at offset ${answers[0]?.baseOffset}`,
        (error: Error) => `failed: ${error.message}`,
      );
    const outcomes = await Promise.all([send("A"), send("B")]);
    console.log(`send A: ${outcomes[0]}\nsend B: ${outcomes[1]}`);
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: "concurrent-check" });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    const stored: string[] = [];
    const admin2 = kafka.admin();
    await admin2.connect();
    const high = Number((await admin2.fetchTopicOffsets(TOPIC))[0]?.high);
    await admin2.disconnect();
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          stored.push(`${message.offset}:${message.value?.toString()}`);
          if (stored.length >= high) resolve();
        },
      });
    });
    await consumer.disconnect();
    console.log(`partition 0 holds: ${stored.join(", ")}`);
    console.log(fs.readFileSync(path.join(workDir, "produce-trace.log"), "utf8").trim());
    const findings: string[] = [];
    for (const [i, value] of ["A", "B"].entries()) {
      const offset = /acknowledged at offset (\d+)/.exec(outcomes[i]!)?.[1];
      const at = stored.filter((entry) => entry.endsWith(`:${value}`)).map((entry) => entry.split(":")[0]);
      if (offset !== undefined && !at.includes(offset))
        findings.push(
          `${value} acknowledged at offset ${offset}, which holds ${stored.find((e) => e.startsWith(`${offset}:`))}`,
        );
      if (at.length > 1) findings.push(`${value} stored ${at.length} times (offsets ${at.join(", ")})`);
    }
    console.log(findings.length > 0 ? `reproduced: ${findings.join("; ")}` : "not reproduced");
    return findings.length > 0 ? 1 : 0;
  } finally {
    await broker.stop("SIGKILL");
    await proxy.close_();
    fs.closeSync(traceFd);
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
