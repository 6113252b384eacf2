/**
 * Captures the request frames real Kafka clients send to booblik's Kafka listener and writes them to
 * fixtures/captured-requests.json: the golden bytes of codec.test.ts. Run by hand when the served
 * APIs change (`bun test/kafka/capture-requests.ts`); needs kcat (Debian's 1.7.1, librdkafka 2.0.2)
 * and the kafkajs dev dependency. Each frame is stored with the client and command that sent it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { Broker } from "../../src/broker/broker.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";

interface Captured {
  client: string;
  command: string;
  hex: string;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "booblik-capture-"));
const broker = Broker.open({ dataDir });
broker.createTopic("golden", { partitions: 2, durability: "append" });
const listener = new KafkaListener(broker, {
  hostname: "127.0.0.1",
  port: 0,
  maxFrameBytes: 1 << 24,
  maxConnections: 64,
  maxConnectionsPerAddress: 64,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 30_000,
  inboundBudget: new InboundBudget(1 << 26),
});
const { port } = listener.listen();
const captured: Captured[] = [];
let current = { client: "", command: "" };
const handle = listener.handler.handle.bind(listener.handler);
listener.handler.handle = (frame) => {
  captured.push({ ...current, hex: Buffer.from(frame).toString("hex") });
  return handle(frame);
};

async function kcat(args: string[], input?: string): Promise<void> {
  current = { client: "kcat 1.7.1 (librdkafka 2.0.2)", command: `kcat ${args.join(" ")}` };
  const child = Bun.spawn(["kcat", "-b", `127.0.0.1:${port}`, ...args], {
    stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  await child.exited;
}

try {
  await kcat(["-L"]);
  await kcat(["-L", "-t", "golden"]);
  await kcat(["-Q", "-t", "golden:0:-1", "-t", "golden:1:-2"]);
  await kcat(["-P", "-t", "golden", "-p", "0", "-K", ":", "-H", "h=v"], "k1:v1\nk2:v2\n");
  await kcat(["-C", "-t", "golden", "-p", "0", "-o", "beginning", "-e", "-q"]);
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: "capture",
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  current = { client: "kafkajs 2.2.4", command: "admin.connect" };
  await admin.connect();
  current = { client: "kafkajs 2.2.4", command: "admin.createTopics" };
  await admin.createTopics({
    topics: [
      {
        topic: "made-by-kafkajs",
        numPartitions: 3,
        configEntries: [{ name: "retention.ms", value: "60000" }],
      },
    ],
  });
  current = { client: "kafkajs 2.2.4", command: "admin.fetchTopicMetadata" };
  await admin.fetchTopicMetadata({ topics: ["made-by-kafkajs"] });
  current = { client: "kafkajs 2.2.4", command: "admin.fetchTopicOffsets" };
  await admin.fetchTopicOffsets("made-by-kafkajs");
  const producer = kafka.producer();
  current = { client: "kafkajs 2.2.4", command: "producer.send" };
  await producer.connect();
  await producer.send({
    topic: "made-by-kafkajs",
    messages: [{ key: "k", value: "v", partition: 2, headers: { h: "x" }, timestamp: "1700000000000" }],
  });
  await producer.disconnect();
  current = { client: "kafkajs 2.2.4", command: "admin.deleteTopics" };
  await admin.deleteTopics({ topics: ["made-by-kafkajs"] });
  await admin.disconnect();
} finally {
  await listener.stop();
  await broker.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
const out = path.join(import.meta.dir, "fixtures", "captured-requests.json");
fs.writeFileSync(out, `${JSON.stringify(captured, null, 2)}\n`);
console.log(`wrote ${captured.length} frames to ${out}`);
