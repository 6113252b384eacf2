/**
 * Kafka crash torture: can an unmodified Kafka client lose an acknowledged record, or get one stored
 * twice, when the broker is killed with SIGKILL while it produces, or when its connection is cut?
 *
 * Owns: the broker child process (`bun src/main.ts --kafka-port <fixed> --durability force`, its
 * data directory on disk), the topic (3 partitions, `booblik.durability=force`, small segments so
 * that rolls and their producer-state snapshots happen during the run), two producer child processes
 * that run for the whole run and write what was acknowledged to log files, a cutting TCP proxy for
 * the `cut` mode, the kill or cut cycles, and the final check. Why a script of its own: the native
 * torture (torture.ts) drives booblik's own client; this one asks the question of the Kafka clients,
 * whose idempotence (retries with the same producer id and sequences) is what must hold across a
 * crash or a lost answer.
 *
 * Producers (each `bun test/torture/kafka-torture.ts --role …`, a child of the harness):
 * - kafkajs 2.2.4, `idempotent: true`, acks −1, one `send` in flight, 1-8 keyed records per send.
 *   `--kafkajs-in-flight K` runs K sends at once on the one producer: then kafkajs itself loses
 *   acknowledged records and stores others twice after a lost answer (it gives a failed request's
 *   sequences back to the next send; kafkajs-concurrent-sends.ts reproduces it in one step), so the
 *   default is 1, the way an idempotent kafkajs producer is safe to use. A resolved send is an acknowledgement: each id is logged with the
 *   partition and offset the broker answered. A rejected send (kafkajs gave up) is logged as failed
 *   and the producer instance is replaced (a new producer id), never resent.
 * - kcat (librdkafka 2.0.2), `-X enable.idempotence=true -X acks=all`, one kcat process per group
 *   of 20-300 keyed lines (kcat serves delivery reports only while it is not blocked reading stdin, so
 *   a group is written whole and stdin closed). `-v -v` prints "Message delivered to partition P
 *   (offset O)" per success: when every line of a group got one, every id of the group is
 *   acknowledged; otherwise each reported (partition, offset) still must hold a record of the group.
 *
 * Modes: `kill` SIGKILLs the broker once the producers got a random (seeded) number of further
 * acknowledgements, then restarts it on the same directory and port; `cut` leaves the broker up and
 * has the proxy (which Metadata advertises, so every connection goes through it) drop the next
 * Produce response (a lost answer), the next Produce request, half a Produce response, or every
 * connection at once.
 *
 * At the end, with both producers stopped: kcat consumes every partition from the beginning with
 * `check.crcs=true`; the offsets must run from 0 to the high watermark without a hole; no id may
 * appear twice; every acknowledged id must be there (kafkajs ones at the offset the broker
 * answered); then the broker is stopped cleanly and the stored batch headers are read from the data
 * directory: per producer id, each batch's sequences must follow the previous batch's.
 *
 * A duplicate the harness reports is not always the broker's: with `--segment-bytes` below kcat's
 * batches, the broker refuses some with MESSAGE_TOO_LARGE, librdkafka 2.0.2 then bumps its epoch
 * locally after draining its in-flight requests, and a kill during that drain makes it send the
 * possibly stored batch again under the new epoch at sequence 0, which Kafka's rules (and booblik's)
 * append: the two copies carry the same producer id and consecutive epochs (seed 5005 with
 * `--segment-bytes 4096` showed it). The default segment size keeps kcat's batches below it.
 *
 * `bun test/torture/kafka-torture.ts --cycles N --seed S [--mode kill|cut] [--work-dir DIR]
 *   [--segment-bytes B] [--write-mode file|mapped] [--kafkajs-in-flight K] [--keep]`
 * The work directory must be on a disk (not tmpfs: a kill keeps the page cache, tmpfs is only that);
 * it defaults to BOOBLIK_BENCH_DIR or the system temporary directory and is removed at the end,
 * failed or not, unless --keep.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import { parseBenchArgs } from "../../bench/lib/args.ts";
import { Broker } from "../../src/broker/broker.ts";
import { readRequestHeader } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { decodeProduceRequest } from "../../src/kafka/messages.ts";
import { newEntryScanResult, scanEntries } from "../../src/record/entries.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { freePort } from "../helpers/free-port.ts";
import { LineReader } from "../helpers/process.ts";
import { Random } from "../helpers/random.ts";
import { waitUntil } from "../helpers/wait.ts";

const TOPIC = "ktorture";
const PARTITIONS = 3;
const KCAT = Bun.which("kcat");
/** A stall detector, not a pace: the producers normally make the acknowledgements a cycle waits for in about a second. */
const STALL_TIMEOUT_MS = 90_000;
const TMPFS_MAGIC = 0x01021994;
/** What every record value starts with: its id, then `|` and padding. */
const ID = /^(kj-\d+-\d+|kc-\d+-\d+)\|/;

// ------------------------------------------------------------------------------------------------
// Arguments

function flagOf(args: string[], name: string): string | undefined {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? args[index + 1] : undefined;
}

function appendLine(fd: number, line: string): void {
  fs.writeSync(fd, `${line}\n`);
}

function recordValue(id: string, random: Random): string {
  return `${id}|${"x".repeat(random.int(0, 200))}`;
}

// ------------------------------------------------------------------------------------------------
// Producer roles (child processes)

/**
 * The kafkajs producer: sends until SIGTERM, one send at a time per slot. Log lines: `ack <id>
 * <partition> <offset> <instance>` per acknowledged id, `fail <instance> <ids,…> <error>` per send
 * kafkajs gave up on. Stdout: `acked <n>` per acknowledged send (the harness counts them).
 */
async function kafkajsRole(args: string[]): Promise<void> {
  const bootstrap = flagOf(args, "bootstrap")!;
  const logFd = fs.openSync(flagOf(args, "log")!, "a");
  const random = new Random(Number(flagOf(args, "seed")));
  const inFlight = Number(flagOf(args, "in-flight") ?? 1);
  let stopping = false;
  process.on("SIGTERM", () => {
    stopping = true;
  });
  const kafka = new Kafka({
    clientId: "ktorture-kafkajs",
    brokers: [bootstrap],
    logLevel: logLevel.WARN,
    connectionTimeout: 3000,
    requestTimeout: 15_000,
  });
  // The partitioner kafkajs uses for keyed records (murmur2), with the topic's metadata: the partition
  // each message goes to, hence the offset the broker's answer gives it.
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: PARTITIONS }, (_, partitionId) => ({
    partitionId,
    leader: 1,
    replicas: [1],
    isr: [1],
    offlineReplicas: [],
    partitionErrorCode: 0,
  }));
  let instance = 0;
  let nextId = 0;
  while (!stopping) {
    instance++;
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: inFlight,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    try {
      await producer.connect();
    } catch (error) {
      appendLine(logFd, `connect-failed ${instance} ${String(error)}`);
      await Bun.sleep(200); // the broker is restarting: kafkajs's own retries ended; try again soon
      continue;
    }
    let failed = false;
    const slot = async () => {
      while (!stopping && !failed) {
        const count = random.int(1, 8);
        const messages = Array.from({ length: count }, () => {
          const id = `kj-${instance}-${nextId++}`;
          return { key: `key-${random.int(0, 99)}`, value: recordValue(id, random), id };
        });
        try {
          const answers = await producer.send({
            topic: TOPIC,
            acks: -1,
            messages: messages.map(({ key, value }) => ({ key, value })),
          });
          const baseOf = new Map(answers.map((answer) => [answer.partition, Number(answer.baseOffset)]));
          const indexIn = new Map<number, number>();
          for (const message of messages) {
            const partition = partitioner({ topic: TOPIC, partitionMetadata, message });
            const index = indexIn.get(partition) ?? 0;
            indexIn.set(partition, index + 1);
            const base = baseOf.get(partition);
            appendLine(
              logFd,
              `ack ${message.id} ${partition} ${base === undefined ? -1 : base + index} ${instance}`,
            );
          }
          process.stdout.write(`acked ${count}\n`);
        } catch (error) {
          failed = true;
          appendLine(
            logFd,
            `fail ${instance} ${messages.map((m) => m.id).join(",")} ${(error as Error).name}: ${(error as Error).message}`,
          );
          process.stdout.write(`failed ${count}\n`);
        }
      }
    };
    await Promise.all(Array.from({ length: inFlight }, slot));
    await producer.disconnect().catch(() => {});
  }
  fs.closeSync(logFd);
  process.exit(0);
}

/**
 * The kcat driver: one `kcat -P` per group until SIGTERM. Log lines: `group <g> <lines> <delivered>
 * <failed> <exit code>`, `dr <g> <partition> <offset>` per delivery report, `ack <id>` for every id
 * of a group whose every line was reported delivered, `kcat <g> <line>` for kcat's other output.
 */
async function kcatRole(args: string[]): Promise<void> {
  const bootstrap = flagOf(args, "bootstrap")!;
  const logFd = fs.openSync(flagOf(args, "log")!, "a");
  const random = new Random(Number(flagOf(args, "seed")));
  let stopping = false;
  process.on("SIGTERM", () => {
    stopping = true;
  });
  let group = 0;
  while (!stopping) {
    group++;
    const size = random.int(20, 300);
    const ids = Array.from({ length: size }, (_, i) => `kc-${group}-${i}`);
    const input = ids.map((id) => `key-${random.int(0, 99)}:${recordValue(id, random)}\n`).join("");
    const child = Bun.spawn(
      [
        KCAT!,
        "-b",
        bootstrap,
        "-P",
        "-t",
        TOPIC,
        "-K",
        ":",
        "-X",
        "enable.idempotence=true",
        "-X",
        "acks=all",
        "-X",
        `linger.ms=${random.int(0, 20)}`,
        "-X",
        `batch.num.messages=${random.int(1, 50)}`,
        "-X",
        "message.timeout.ms=120000",
        // Keep going while the broker restarts (kcat otherwise exits at "All broker connections are down").
        "-E",
        "-v",
        "-v",
      ],
      { stdin: new TextEncoder().encode(input), stdout: "ignore", stderr: "pipe" },
    );
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    clearTimeout(timer);
    let delivered = 0;
    let failedReports = 0;
    for (const line of stderr.split("\n")) {
      const report = /Message delivered to partition (\d+) \(offset (-?\d+)\)/.exec(line);
      if (report !== null) {
        delivered++;
        appendLine(logFd, `dr ${group} ${report[1]} ${report[2]}`);
      } else if (line.includes("Delivery failed")) {
        failedReports++;
        appendLine(logFd, `kcat ${group} ${line}`);
      } else if (
        line.trim() !== "" &&
        !line.includes("Setting producer input buffer") &&
        !line.includes("Enable message offset reporting")
      )
        appendLine(logFd, `kcat ${group} ${line}`);
    }
    appendLine(logFd, `group ${group} ${size} ${delivered} ${failedReports} ${exitCode}`);
    if (delivered === size) for (const id of ids) appendLine(logFd, `ack ${id}`);
    process.stdout.write(`acked ${delivered}\n`);
    if (delivered !== size) process.stdout.write(`failed ${size - delivered}\n`);
  }
  fs.closeSync(logFd);
  process.exit(0);
}

// ------------------------------------------------------------------------------------------------
// The proxy: tracing every Produce, and cutting connections

type CutKind = "response" | "request" | "half-response" | "all";

/** One idempotent batch of a Produce request, as the proxy saw it go by. */
interface TracedBatch {
  partition: number;
  producerId: bigint;
  epoch: number;
  baseSequence: number;
  recordCount: number;
  /** Sent before with the same producer id, epoch, partition and sequences. */
  resend: boolean;
}

/**
 * A TCP proxy between the Kafka clients and the broker (Metadata advertises it, so every connection
 * goes through it). It splits both directions into Kafka frames and decodes each Produce request
 * (producer id, epoch, sequences per partition) and its response (error code and base offset per
 * partition) into a trace file, and checks what the broker answered: a batch sent again (same
 * producer id, epoch, partition and sequences: a resend) must get the same base offset as before.
 * When armed it cuts once: drops the next Produce response (the broker appended, the client never
 * hears it), drops the next Produce request (it never reaches the broker), sends half of the next
 * Produce response, or closes every connection at once.
 */
export class TracingProxy {
  private readonly server: net.Server;
  private readonly connections = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private armed: CutKind | undefined;
  /** Called once the next Produce request has been passed on to the broker (a kill point). */
  onNextProduce: (() => void) | undefined;
  private nextConnection = 0;
  /** batch key → the base offset of the first successful answer. */
  private readonly answered = new Map<string, number>();
  private readonly sent = new Set<string>();
  cuts = 0;
  produceRequests = 0;
  /** Batches sent again with the same producer id, epoch, partition and sequences. */
  resends = 0;
  /** Answers to resends, by error code. */
  readonly resendAnswers = new Map<number, number>();
  /** Every partition error code the broker answered a Produce with, by code. */
  readonly errorAnswers = new Map<number, number>();
  readonly problems: string[] = [];
  port = 0;

  constructor(
    private readonly upstreamPort: number,
    private readonly traceFd: number,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve());
    });
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  trace(line: string): void {
    appendLine(this.traceFd, line);
  }

  arm(kind: CutKind): void {
    this.trace(`arm ${kind}`);
    if (kind === "all") {
      for (const connection of this.connections) this.close(connection);
      this.cuts++;
      return;
    }
    this.armed = kind;
  }

  private close(connection: { client: net.Socket; upstream: net.Socket }): void {
    connection.client.destroy();
    connection.upstream.destroy();
    this.connections.delete(connection);
  }

  private accept(client: net.Socket): void {
    const id = ++this.nextConnection;
    const upstream = net.connect(this.upstreamPort, "127.0.0.1");
    const connection = { client, upstream };
    this.connections.add(connection);
    const inFlight = new Map<number, { apiKey: number; version: number; batches: TracedBatch[] }>();
    const requests = new FrameSplitter();
    const responses = new FrameSplitter();
    client.on("data", (chunk: Buffer) => {
      for (const frame of requests.push(chunk)) {
        const apiKey = frame.readInt16BE(4);
        const version = frame.readInt16BE(6);
        const correlationId = frame.readInt32BE(8);
        const batches = apiKey === 0 ? this.produceRequest(id, frame) : [];
        inFlight.set(correlationId, { apiKey, version, batches });
        if (apiKey === 0) {
          this.produceRequests++;
          if (this.armed === "request") {
            this.armed = undefined;
            this.cuts++;
            this.trace(`cut request c${id} #${correlationId}`);
            this.close(connection);
            return;
          }
        }
        upstream.write(frame);
        if (apiKey === 0 && this.onNextProduce !== undefined) {
          const callback = this.onNextProduce;
          this.onNextProduce = undefined;
          callback();
        }
      }
    });
    upstream.on("data", (chunk: Buffer) => {
      for (const frame of responses.push(chunk)) {
        const correlationId = frame.readInt32BE(4);
        const request = inFlight.get(correlationId);
        inFlight.delete(correlationId);
        if (request?.apiKey === 0) {
          const cut = this.armed === "response" || this.armed === "half-response" ? this.armed : undefined;
          this.produceResponse(id, correlationId, frame, request.version, request.batches, cut !== undefined);
          if (cut !== undefined) {
            if (cut === "half-response") client.write(frame.subarray(0, frame.length >> 1));
            this.armed = undefined;
            this.cuts++;
            this.trace(`cut ${cut} c${id} #${correlationId}`);
            // end() after the half, so that those bytes leave before the close.
            client.end();
            upstream.destroy();
            this.connections.delete(connection);
            return;
          }
        }
        client.write(frame);
      }
    });
    const end = () => this.close(connection);
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  }

  private produceRequest(connection: number, frame: Buffer): TracedBatch[] {
    const reader = new KafkaReader(frame, 4);
    const header = readRequestHeader(reader, 1);
    const request = decodeProduceRequest(reader, header.apiVersion);
    const batches: TracedBatch[] = [];
    for (const topic of request.topics)
      for (const partition of topic.partitions) {
        const records = partition.records;
        if (records === null || records.length < 61) continue;
        const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
        const batch: TracedBatch = {
          partition: partition.index,
          producerId: view.getBigInt64(43),
          epoch: view.getInt16(51),
          baseSequence: view.getInt32(53),
          recordCount: view.getInt32(23) + 1,
          resend: false,
        };
        const key = batchKey(batch);
        batch.resend = this.sent.has(key);
        if (batch.resend) this.resends++;
        this.sent.add(key);
        batches.push(batch);
        this.trace(
          `req c${connection} #${header.correlationId} v${header.apiVersion} ${header.clientId} p${batch.partition} pid ${batch.producerId} e${batch.epoch} seq ${batch.baseSequence}+${batch.recordCount}${batch.resend ? ` (sequences sent before${this.answered.has(key) ? ", and answered" : ""})` : ""}`,
        );
      }
    return batches;
  }

  private produceResponse(
    connection: number,
    correlationId: number,
    frame: Buffer,
    version: number,
    batches: TracedBatch[],
    dropped: boolean,
  ): void {
    const reader = new KafkaReader(frame, 8);
    const topics = reader.arrayCount("topics", 6);
    for (let t = 0; t < topics; t++) {
      reader.string("name");
      const partitions = reader.arrayCount("partitions", 14);
      for (let p = 0; p < partitions; p++) {
        const partition = reader.int32("partition");
        const errorCode = reader.int16("error_code");
        const baseOffset = reader.int64("base_offset");
        if (version >= 2) reader.int64("log_append_time_ms");
        if (version >= 5) reader.int64("log_start_offset");
        let message: string | null = null;
        if (version >= 8) {
          const recordErrors = reader.arrayCount("record_errors", 6);
          for (let r = 0; r < recordErrors; r++) {
            reader.int32("batch_index");
            reader.nullableString("message");
          }
          message = reader.nullableString("error_message");
        }
        const batch = batches.find((b) => b.partition === partition);
        this.trace(
          `resp c${connection} #${correlationId} p${partition} error ${errorCode} base ${baseOffset}${dropped ? " DROPPED" : ""}${message === null ? "" : ` ${message}`}`,
        );
        if (errorCode !== 0) this.errorAnswers.set(errorCode, (this.errorAnswers.get(errorCode) ?? 0) + 1);
        if (batch === undefined || batch.producerId < 0n) continue;
        const key = batchKey(batch);
        const first = this.answered.get(key);
        if (batch.resend) this.resendAnswers.set(errorCode, (this.resendAnswers.get(errorCode) ?? 0) + 1);
        if (errorCode !== 0) continue;
        if (first === undefined) this.answered.set(key, baseOffset);
        else if (first !== baseOffset)
          this.problems.push(
            `producer ${batch.producerId} partition ${partition} sequences ${batch.baseSequence}+${batch.recordCount}: answered base offset ${first} first, ${baseOffset} for a resend (c${connection} #${correlationId})`,
          );
      }
    }
  }

  async close_(): Promise<void> {
    for (const connection of this.connections) this.close(connection);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function batchKey(batch: TracedBatch): string {
  return `${batch.producerId}/${batch.epoch}/${batch.partition}/${batch.baseSequence}/${batch.recordCount}`;
}

/** Splits a byte stream into Kafka frames (int32 size, then that many bytes), size included. */
class FrameSplitter {
  private buffered: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: Buffer[] = [];
    while (this.buffered.length >= 4) {
      const size = this.buffered.readInt32BE(0);
      if (this.buffered.length < 4 + size) break;
      frames.push(this.buffered.subarray(0, 4 + size));
      this.buffered = this.buffered.subarray(4 + size);
    }
    return frames;
  }
}

// ------------------------------------------------------------------------------------------------
// The harness

export interface KafkaTortureOptions {
  cycles: number;
  seed: number;
  mode: "kill" | "cut";
  workDir: string;
  segmentBytes: number;
  writeMode: "file" | "mapped";
  kafkajsInFlight: number;
  log: (line: string) => void;
}

export interface KafkaTortureResult {
  cycles: number;
  /** Ids a client was told were stored (kafkajs resolved sends, kcat groups fully reported). */
  acknowledged: number;
  /** Of those, found in the log. */
  found: number;
  missing: string[];
  /** Ids stored more than once, with where. */
  duplicates: string[];
  /** Other failed checks (holes, wrong offsets, sequences, CRC errors). */
  problems: string[];
  /** Notes that are not failures: client give-ups, kcat groups not fully reported, sequence gaps. */
  notes: string[];
  records: number;
  kafkajsFailedSends: number;
  kcatPartialGroups: number;
  kcatDeliveryReports: number;
  /** kcat's lines about broken or refused connections (expected around every kill and cut). */
  kcatConnectionErrors: number;
  /** Produce requests the proxy passed on, and batches among them sent again (same producer id, epoch, partition, sequences). */
  produceRequests: number;
  resends: number;
  /** What the broker answered those resends, by error code (0: the original offsets). */
  resendAnswers: Record<number, number>;
  /** Every partition error the broker answered a Produce with, by code. */
  errorAnswers: Record<number, number>;
}

interface ProducerChild {
  name: string;
  process: ReturnType<typeof Bun.spawn>;
  acked: number;
  failed: number;
  done: Promise<void>;
}

export async function runKafkaTorture(options: KafkaTortureOptions): Promise<KafkaTortureResult> {
  if (KCAT === null) throw new Error("kcat is not installed (apt-get install -y kcat)");
  const { workDir, log } = options;
  const random = new Random(options.seed);
  const dataDir = path.join(workDir, "data");
  const brokerLog = fs.openSync(path.join(workDir, "broker.log"), "a");
  const kafkaPort = await freePort();
  const traceFd = fs.openSync(path.join(workDir, "produce-trace.log"), "a");
  const proxy = new TracingProxy(kafkaPort, traceFd);
  await proxy.listen();
  const bootstrap = `127.0.0.1:${proxy.port}`;
  const brokerArgs = ["--kafka-port", String(kafkaPort), "--durability", "force"];
  brokerArgs.push("--kafka-advertised-listener", bootstrap);
  let broker: BrokerProcess | undefined;
  const children: ProducerChild[] = [];

  const start = async (): Promise<BrokerProcess> => {
    // The same Kafka port every time: the clients know only it. Bound again at once after a kill
    // (the listener sets SO_REUSEADDR); a start that still finds it taken is tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        const started = await startBroker(dataDir, brokerArgs);
        await started.lines.waitFor((line) => line.includes("Kafka protocol on"), "the Kafka listener line");
        appendLine(brokerLog, `--- start: ${started.startLine}`);
        // Drain both pipes for the life of the process (a full pipe would block the broker).
        void started.lines.rest().then((lines) => {
          for (const line of lines) appendLine(brokerLog, line);
        });
        void new Response(started.process.stderr).text().then((text) => {
          if (text.trim() !== "") appendLine(brokerLog, `stderr: ${text.trim()}`);
        });
        return started;
      } catch (error) {
        if (attempt >= 50 || !String(error).includes("in use")) throw error;
        await Bun.sleep(100);
      }
    }
  };

  const spawnProducer = (role: "kafkajs" | "kcat", seed: number): ProducerChild => {
    const child = Bun.spawn(
      [
        process.execPath,
        import.meta.path,
        "--role",
        role,
        "--bootstrap",
        bootstrap,
        "--log",
        path.join(workDir, `${role}.log`),
        "--seed",
        String(seed),
        "--in-flight",
        String(options.kafkajsInFlight),
      ],
      { stdin: "ignore", stdout: "pipe", stderr: Bun.file(path.join(workDir, `${role}.stderr`)) },
    );
    const producer: ProducerChild = {
      name: role,
      process: child,
      acked: 0,
      failed: 0,
      done: Promise.resolve(),
    };
    producer.done = (async () => {
      const lines = new LineReader(child.stdout as ReadableStream<Uint8Array>);
      for (;;) {
        const line = await lines.nextLine();
        if (line === undefined) return;
        const [what, count] = line.split(" ");
        if (what === "acked") producer.acked += Number(count);
        else if (what === "failed") producer.failed += Number(count);
      }
    })();
    return producer;
  };
  const acked = () => children.reduce((sum, child) => sum + child.acked, 0);
  const anyExited = () => children.find((child) => child.process.exitCode !== null);

  try {
    broker = await start();
    const kafka = new Kafka({ clientId: "ktorture-admin", brokers: [bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: TOPIC,
          numPartitions: PARTITIONS,
          configEntries: [
            { name: "booblik.durability", value: "force" },
            { name: "segment.bytes", value: String(options.segmentBytes) },
            { name: "booblik.write.mode", value: options.writeMode },
          ],
        },
      ],
    });
    const described = await admin.describeConfigs({
      resources: [{ type: 2, name: TOPIC, configNames: ["booblik.durability"] }],
      includeSynonyms: false,
    });
    const durability = described.resources[0]?.configEntries.find(
      (e) => e.configName === "booblik.durability",
    );
    if (durability?.configValue !== "force")
      throw new Error(`topic durability is ${durability?.configValue}`);
    await admin.disconnect();

    children.push(
      spawnProducer("kafkajs", random.int(0, 2 ** 31)),
      spawnProducer("kcat", random.int(0, 2 ** 31)),
    );

    for (let cycle = 1; cycle <= options.cycles; cycle++) {
      const target = acked() + random.int(20, 600);
      await waitUntil(
        () => {
          const exited = anyExited();
          if (exited !== undefined)
            throw new Error(
              `the ${exited.name} producer exited (${exited.process.exitCode}); see ${workDir}`,
            );
          return acked() >= target;
        },
        `${target} acknowledgements (cycle ${cycle}; ${acked()} so far)`,
        STALL_TIMEOUT_MS,
        2,
      );
      if (options.mode === "kill") {
        // A random moment inside the stream of appends (seeded): a few milliseconds after that
        // acknowledgement, or a few after the next Produce request reached the broker (so that one
        // is being appended or forced, and its answer is lost).
        const onRequest = random.int(0, 1) === 1;
        const extra = random.int(0, onRequest ? 6 : 25);
        if (onRequest) await new Promise<void>((resolve) => (proxy.onNextProduce = resolve));
        if (extra > 0) await Bun.sleep(extra);
        proxy.trace(`kill (cycle ${cycle})`);
        broker.process.kill("SIGKILL");
        await broker.process.exited;
        broker = await start();
        proxy.trace(`restarted (cycle ${cycle})`);
        log(
          `cycle ${cycle}: killed ${extra} ms after ${onRequest ? "a Produce request" : "an acknowledgement"} (${acked()} acknowledged records), restarted`,
        );
      } else {
        const kinds: CutKind[] = ["response", "response", "half-response", "request", "all"];
        const kind = kinds[random.int(0, kinds.length - 1)]!;
        const before = proxy.cuts;
        proxy.arm(kind);
        await waitUntil(() => proxy.cuts > before, `the ${kind} cut (cycle ${cycle})`, STALL_TIMEOUT_MS, 2);
        log(`cycle ${cycle}: cut (${kind}) after ${acked()} acknowledged records`);
      }
    }
    // Let the producers get past the last kill or cut before stopping them.
    const settle = acked() + 50;
    await waitUntil(() => acked() >= settle, "acknowledgements after the last cycle", STALL_TIMEOUT_MS, 2);
    for (const child of children) child.process.kill("SIGTERM");
    for (const child of children) {
      const timer = setTimeout(() => child.process.kill("SIGKILL"), 200_000);
      const code = await child.process.exited;
      clearTimeout(timer);
      await child.done;
      if (code !== 0) throw new Error(`the ${child.name} producer exited with ${code} when stopped`);
    }
    const result = await verify(workDir, bootstrap);
    result.cycles = options.cycles;
    result.problems.push(...proxy.problems);
    result.produceRequests = proxy.produceRequests;
    result.resends = proxy.resends;
    result.resendAnswers = Object.fromEntries(proxy.resendAnswers);
    result.errorAnswers = Object.fromEntries(proxy.errorAnswers);
    if ((await broker.stop("SIGTERM")) !== 0) result.problems.push("the broker's clean stop did not exit 0");
    checkSequences(dataDir, result);
    return result;
  } finally {
    for (const child of children) if (child.process.exitCode === null) child.process.kill("SIGKILL");
    for (const child of children) await child.process.exited;
    if (broker !== undefined && broker.process.exitCode === null && broker.process.signalCode === null)
      broker.process.kill("SIGKILL");
    await broker?.process.exited;
    await proxy.close_();
    fs.closeSync(brokerLog);
    fs.closeSync(traceFd);
  }
}

interface Stored {
  partition: number;
  offset: number;
}

/** Consumes every partition with kcat (CRCs checked) and checks the producers' logs against it. */
async function verify(workDir: string, bootstrap: string): Promise<KafkaTortureResult> {
  const result: KafkaTortureResult = {
    cycles: 0,
    acknowledged: 0,
    found: 0,
    missing: [],
    duplicates: [],
    problems: [],
    notes: [],
    records: 0,
    kafkajsFailedSends: 0,
    kcatPartialGroups: 0,
    kcatDeliveryReports: 0,
    kcatConnectionErrors: 0,
    produceRequests: 0,
    resends: 0,
    resendAnswers: {},
    errorAnswers: {},
  };
  const kafka = new Kafka({ clientId: "ktorture-verify", brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(TOPIC);
  await admin.disconnect();
  const where = new Map<string, Stored[]>();
  const atOffset = new Map<string, string>(); // "p:o" → id
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const high = Number(ends.find((end) => end.partition === partition)?.high);
    const child = Bun.spawn(
      [
        KCAT!,
        "-b",
        bootstrap,
        "-C",
        "-t",
        TOPIC,
        "-p",
        String(partition),
        "-o",
        "beginning",
        "-e",
        "-q",
        "-X",
        "check.crcs=true",
        "-f",
        "%o\\t%k\\t%s\\n",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [text, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    if (code !== 0 || stderr.trim() !== "")
      result.problems.push(`partition ${partition}: kcat -C exited ${code}: ${stderr.trim().slice(0, 500)}`);
    let expected = 0;
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const [offsetText, , value] = line.split("\t");
      const offset = Number(offsetText);
      if (offset !== expected) {
        result.problems.push(
          `partition ${partition}: offset ${offset} follows ${expected - 1} (a hole or a repeat)`,
        );
        expected = offset;
      }
      expected++;
      result.records++;
      const id = ID.exec(value ?? "")?.[1];
      if (id === undefined) {
        result.problems.push(
          `partition ${partition} offset ${offset}: a record nobody sent: ${line.slice(0, 80)}`,
        );
        continue;
      }
      atOffset.set(`${partition}:${offset}`, id);
      const places = where.get(id) ?? [];
      places.push({ partition, offset });
      where.set(id, places);
    }
    if (expected !== high)
      result.problems.push(
        `partition ${partition}: kcat read up to ${expected}, the high watermark is ${high}`,
      );
  }
  for (const [id, places] of where)
    if (places.length > 1)
      result.duplicates.push(`${id} at ${places.map((p) => `${p.partition}:${p.offset}`).join(", ")}`);

  const acknowledge = (id: string, partition?: number, offset?: number) => {
    result.acknowledged++;
    const places = where.get(id);
    if (places === undefined) {
      result.missing.push(partition === undefined ? id : `${id} (acknowledged at ${partition}:${offset})`);
      return;
    }
    result.found++;
    if (partition !== undefined && !places.some((p) => p.partition === partition && p.offset === offset))
      result.problems.push(
        `${id}: acknowledged at ${partition}:${offset}, stored at ${places.map((p) => `${p.partition}:${p.offset}`).join(", ")} (${partition}:${offset} holds ${atOffset.get(`${partition}:${offset}`)})`,
      );
  };

  // kafkajs: each resolved send's ids at the offsets the broker answered.
  for (const line of fs.readFileSync(path.join(workDir, "kafkajs.log"), "utf8").split("\n")) {
    const fields = line.split(" ");
    if (fields[0] === "ack") acknowledge(fields[1]!, Number(fields[2]), Number(fields[3]));
    else if (fields[0] === "fail") {
      result.kafkajsFailedSends++;
      if (result.notes.length < 50) result.notes.push(`kafkajs gave up: ${line.slice(0, 300)}`);
    } else if (fields[0] === "connect-failed") {
      if (result.notes.length < 50) result.notes.push(`kafkajs: ${line.slice(0, 300)}`);
    }
  }
  // kcat: whole groups, and every delivery report's (partition, offset) holds a record of its group.
  const reports = new Map<number, Stored[]>();
  for (const line of fs.readFileSync(path.join(workDir, "kcat.log"), "utf8").split("\n")) {
    const fields = line.split(" ");
    if (fields[0] === "ack") acknowledge(fields[1]!);
    else if (fields[0] === "dr") {
      const group = Number(fields[1]);
      const list = reports.get(group) ?? [];
      list.push({ partition: Number(fields[2]), offset: Number(fields[3]) });
      reports.set(group, list);
      result.kcatDeliveryReports++;
    } else if (fields[0] === "group") {
      const [, group, size, delivered, failedReports, code] = fields;
      if (size !== delivered || code !== "0") {
        result.kcatPartialGroups++;
        result.notes.push(
          `kcat group ${group}: ${delivered} of ${size} delivered, ${failedReports} failed reports, exit ${code}`,
        );
      }
    } else if (fields[0] === "kcat") {
      if (
        /Connect to|Disconnected|brokers are down|Broker transport failure|Error at error_cb|Connection refused/.test(
          line,
        )
      )
        result.kcatConnectionErrors++;
      else if (result.notes.length < 200) result.notes.push(line.slice(0, 300));
    }
  }
  for (const [group, list] of reports) {
    const seen = new Set<string>();
    for (const { partition, offset } of list) {
      const id = atOffset.get(`${partition}:${offset}`);
      if (id === undefined || !id.startsWith(`kc-${group}-`))
        result.problems.push(
          `kcat group ${group}: delivery report ${partition}:${offset}, which holds ${id ?? "nothing"}`,
        );
      else if (seen.has(id)) result.problems.push(`kcat group ${group}: two delivery reports for ${id}`);
      else seen.add(id);
    }
  }
  return result;
}

/**
 * Reads the stored batch headers from the (cleanly stopped) data directory: per partition and
 * producer id, each batch's first sequence must follow the last one before it. A repeat or an
 * overlap is a duplicate in Kafka's own terms even when the record ids differ.
 */
function checkSequences(dataDir: string, result: KafkaTortureResult): void {
  const broker = Broker.open({ dataDir });
  try {
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const target = broker.partition(TOPIC, partition);
      const last = new Map<number, { epoch: number; sequence: number; offset: number }>();
      let offset = 0;
      for (;;) {
        const read = target.read(offset, 4 << 20);
        if (read.recordCount === 0) break;
        scanEntries(
          read.records,
          0,
          read.records.length,
          { framing: "framed", verifyCrc: true },
          newEntryScanResult(),
          (_e, _s, _b, header) => {
            if (header.producerId < 0) {
              result.problems.push(
                `partition ${partition} offset ${header.baseOffset}: a batch without a producer id`,
              );
              return;
            }
            const previous = last.get(header.producerId);
            const lastSequence = header.baseSequence + header.lastOffsetDelta;
            if (previous !== undefined && previous.epoch === header.producerEpoch) {
              if (header.baseSequence <= previous.sequence)
                result.problems.push(
                  `partition ${partition}: producer ${header.producerId} batch at ${header.baseOffset} has sequences ${header.baseSequence}-${lastSequence}, the one at ${previous.offset} ended at ${previous.sequence} (stored twice)`,
                );
              else if (header.baseSequence !== previous.sequence + 1)
                result.notes.push(
                  `partition ${partition}: producer ${header.producerId} skips from sequence ${previous.sequence} to ${header.baseSequence} at ${header.baseOffset}`,
                );
            }
            last.set(header.producerId, {
              epoch: header.producerEpoch,
              sequence: lastSequence,
              offset: header.baseOffset,
            });
          },
        );
        offset = read.firstOffset + read.recordCount;
      }
    }
  } finally {
    broker.close();
  }
}

// ------------------------------------------------------------------------------------------------

async function main(args: string[]): Promise<void> {
  const role = flagOf(args, "role");
  if (role === "kafkajs") return kafkajsRole(args);
  if (role === "kcat") return kcatRole(args);
  const usage =
    "bun run torture:kafka [--cycles 30] [--seed S] [--mode kill|cut] [--work-dir DIR] [--segment-bytes B] [--write-mode file|mapped] [--kafkajs-in-flight K] [--keep]";
  const parsed = parseBenchArgs(
    {
      usage,
      options: {
        cycles: "30",
        seed: "",
        mode: "kill",
        "work-dir": "",
        "segment-bytes": String(256 * 1024),
        "write-mode": "file",
        "kafkajs-in-flight": "1",
      },
      switches: ["keep"],
    },
    args,
  );
  function refuse(reason: string): never {
    console.error(`${reason}\nusage: ${usage}`);
    process.exit(2);
  }
  const cycles = parsed.integer("cycles", 1)!;
  const seed =
    Number(parsed.integer("seed") ?? process.env.BOOBLIK_SEED ?? (Math.random() * 2 ** 32) >>> 0) >>> 0;
  const mode = parsed.text("mode");
  if (mode !== "kill" && mode !== "cut") refuse(`--mode ${mode}: kill | cut`);
  const writeMode = parsed.text("write-mode");
  if (writeMode !== "file" && writeMode !== "mapped") refuse(`--write-mode ${writeMode}: file | mapped`);
  const keep = parsed.has("keep");
  const parent = parsed.text("work-dir") || (process.env.BOOBLIK_BENCH_DIR ?? os.tmpdir());
  fs.mkdirSync(parent, { recursive: true });
  if (fs.statfsSync(parent).type === TMPFS_MAGIC)
    console.warn(`kafka-torture: ${parent} is tmpfs; give --work-dir on a disk`);
  const workDir = fs.mkdtempSync(path.join(parent, "booblik-ktorture-"));
  const options: KafkaTortureOptions = {
    cycles,
    seed,
    mode,
    workDir,
    segmentBytes: parsed.integer("segment-bytes", 1)!,
    writeMode,
    kafkajsInFlight: parsed.integer("kafkajs-in-flight", 1)!,
    log: (line) => console.log(line),
  };
  console.log(
    `kafka-torture: ${cycles} ${mode} cycles, seed ${seed}, write mode ${writeMode}, in ${workDir}`,
  );
  const started = performance.now();
  let failed = true;
  try {
    const result = await runKafkaTorture(options);
    for (const note of result.notes.slice(0, 60)) console.log(`note: ${note}`);
    for (const problem of result.problems.slice(0, 60)) console.log(`PROBLEM: ${problem}`);
    for (const id of result.missing.slice(0, 60)) console.log(`MISSING: ${id}`);
    for (const duplicate of result.duplicates.slice(0, 60)) console.log(`DUPLICATE: ${duplicate}`);
    failed = result.missing.length + result.duplicates.length + result.problems.length > 0;
    console.log(
      `kafka-torture ${failed ? "FAILED" : "passed"}: mode ${mode}, ${result.cycles} cycles, ` +
        `${result.acknowledged} acknowledged, ${result.found} found, ${result.missing.length} missing, ` +
        `${result.duplicates.length} duplicates, ${result.problems.length} other problems; ${result.records} records stored; ` +
        `kafkajs sends given up ${result.kafkajsFailedSends}, kcat groups not fully delivered ${result.kcatPartialGroups}, ` +
        `kcat delivery reports ${result.kcatDeliveryReports}, kcat connection errors ${result.kcatConnectionErrors}; ` +
        `${result.produceRequests} Produce requests, ${result.resends} batches resent, answered ${JSON.stringify(result.resendAnswers)}, ` +
        `partition errors ${JSON.stringify(result.errorAnswers)}; ${((performance.now() - started) / 1000).toFixed(1)} s; seed ${seed}`,
    );
  } catch (error) {
    console.error(`kafka-torture FAILED (seed ${seed}): ${(error as Error).stack ?? String(error)}`);
  } finally {
    if (keep) console.log(`kafka-torture: data and logs kept in ${workDir}`);
    else {
      fs.rmSync(workDir, { recursive: true, force: true });
      if (failed)
        console.log("kafka-torture: the same --seed with --keep keeps the data and the producers' logs");
    }
  }
  process.exit(failed ? 1 : 0);
}

if (import.meta.main) await main(process.argv.slice(2));
