/**
 * The Kafka listener's fuzzer, shared by the gate (fuzz.test.ts, a bounded run) and the longer run
 * (`bun run fuzz:kafka`, fuzz.ts). Against a broker child process it opens hostile connections that
 * send mutated frames of every Kafka API and version booblik serves, starting from valid frames
 * (fuzz-templates.ts: kafkajs's and hand-built ones of capture-fuzz-templates.ts; the Java client's,
 * re-encoded and hand-built ones of every advertised version, capture-client-templates.ts; kcat's),
 * plus random bytes; meanwhile a well-behaved kafkajs producer appends one record per round to its
 * own topic and must see every acknowledgement in order. Everything random comes from one seed, so a seed replays the same frames in the same order
 * (the broker's answers and timings may differ; the frames sent do not).
 */
import net from "node:net";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { startBroker } from "../helpers/broker-process.ts";
import { readValuesWithKafkajs } from "../helpers/kafkajs-read.ts";
import { Random } from "../helpers/random.ts";
import { readTemplates } from "./fuzz-templates.ts";

/** Template frame bodies (without the int32 size prefix): every fixture of fuzz-templates.ts. */
export async function loadTemplates(): Promise<Uint8Array[]> {
  return readTemplates().map((template) => Uint8Array.from(Buffer.from(template.hex, "hex")));
}

/** Values that make length and count fields interesting: −1 (null), 0, huge, negative. */
const INTERESTING: number[][] = [
  [0xff, 0xff, 0xff, 0xff],
  [0x7f, 0xff, 0xff, 0xff],
  [0x80, 0x00, 0x00, 0x00],
  [0x00, 0x00, 0x00, 0x00],
  [0xff, 0xff],
  [0x7f, 0xff],
  [0x00, 0x00],
  [0xff, 0xff, 0xff, 0xff, 0x0f],
];

/** One hostile frame (with its size prefix, usually the true one) from `random`. */
export function hostileFrame(random: Random, templates: Uint8Array[]): Uint8Array {
  const kind = random.next();
  let body: Uint8Array;
  if (kind < 0.1) {
    body = random.bytes(random.int(0, 200));
  } else {
    const template = templates[random.int(0, templates.length - 1)]!;
    body = template.slice();
    // Mostly past the request header's api key and version, so the damage reaches the decoders of
    // each API rather than stopping at "unsupported version".
    const from = random.next() < 0.8 ? Math.min(4, body.length - 1) : 0;
    const mutations = random.int(1, 4);
    for (let m = 0; m < mutations; m++) {
      const at = random.int(from, body.length - 1);
      const how = random.next();
      if (how < 0.4) body[at] = body[at]! ^ (1 << random.int(0, 7));
      else if (how < 0.7) body[at] = random.int(0, 255);
      else {
        const value = INTERESTING[random.int(0, INTERESTING.length - 1)]!;
        for (let i = 0; i < value.length && at + i < body.length; i++) body[at + i] = value[i]!;
      }
    }
    const shape = random.next();
    if (shape < 0.15) body = body.subarray(0, random.int(0, body.length));
    else if (shape < 0.25) body = Uint8Array.from([...body, ...random.bytes(random.int(1, 16))]);
  }
  const frame = new Uint8Array(4 + body.length);
  const size = random.next() < 0.05 ? random.int(0, 2 ** 31 - 1) : body.length;
  new DataView(frame.buffer).setInt32(0, size);
  frame.set(body, 4);
  return frame;
}

/** Writes `frames` on a new connection, then closes or half-closes it (never waits for answers). */
async function hostileConnection(port: number, frames: Uint8Array[], destroy: boolean): Promise<void> {
  await new Promise<void>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => resolve()); // the broker may close first: that is its right
    socket.on("close", () => resolve());
    socket.on("data", () => undefined);
    socket.once("connect", () => {
      for (const frame of frames) socket.write(frame);
      if (destroy) socket.destroy();
      else socket.end(() => setTimeout(() => socket.destroy(), 20).unref());
    });
  });
}

/**
 * Writes one frame on a new connection and keeps it open until the broker answers (any bytes) or
 * closes it, at most `deadlineMs`: "silent" is neither, a hang unless the frame is one Kafka does
 * not answer (Produce acks=0) or may hold (a Fetch long poll, a JoinGroup waiting for a rebalance).
 */
async function watchedConnection(
  port: number,
  frame: Uint8Array,
  deadlineMs: number,
): Promise<"answered" | "closed" | "silent"> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const timer = setTimeout(() => {
      socket.destroy();
      resolve("silent");
    }, deadlineMs);
    const done = (outcome: "answered" | "closed") => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    socket.on("data", () => done("answered"));
    socket.on("error", () => done("closed"));
    socket.on("close", () => done("closed"));
    socket.once("connect", () => socket.write(frame));
  });
}

export interface FuzzResult {
  frames: number;
  acknowledged: number;
  /** Watched frames (options.watch) by outcome; the silent ones themselves. */
  watched?: { answered: number; closed: number; silent: Uint8Array[] };
}

/**
 * `rounds` rounds: a hostile connection writes `framesPerRound` frames, then the good producer sends
 * one record to `goodTopic` (which must exist with one partition) and its offset must be the round
 * number. Throws, naming the seed and round, on the first wrong acknowledgement.
 */
export async function fuzzKafka(options: {
  port: number;
  seed: number;
  rounds: number;
  framesPerRound: number;
  goodTopic: string;
  onRound?: (round: number) => void;
  /**
   * Hang watch: this fraction of the frames (chosen by a second generator, so the frames a seed
   * sends stay the same) also go on a connection of their own that waits for an answer or a close.
   */
  watch?: { fraction: number; deadlineMs: number };
}): Promise<FuzzResult> {
  const random = new Random(options.seed);
  const watchRandom = new Random((options.seed ^ 0x5eed) >>> 0);
  const watching: Promise<void>[] = [];
  const watched = { answered: 0, closed: 0, silent: [] as Uint8Array[] };
  const templates = await loadTemplates();
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${options.port}`],
    clientId: "fuzz-good",
    logLevel: logLevel.NOTHING,
  });
  const producer: Producer = kafka.producer(
    process.env.FUZZ_PLAIN ? {} : { idempotent: true, maxInFlightRequests: 1 },
  );
  await producer.connect();
  let frames = 0;
  try {
    for (let round = 0; round < options.rounds; round++) {
      const batch: Uint8Array[] = [];
      for (let i = 0; i < options.framesPerRound; i++) batch.push(hostileFrame(random, templates));
      frames += batch.length;
      const watch = options.watch;
      if (watch !== undefined)
        for (const frame of batch)
          if (watchRandom.next() < watch.fraction)
            watching.push(
              watchedConnection(options.port, frame, watch.deadlineMs).then((outcome) => {
                if (outcome === "silent") watched.silent.push(frame);
                else watched[outcome]++;
              }),
            );
      // A malformed frame closes its connection (the rest of what it sent is never read), so each
      // frame gets a connection of its own, and an unmutated one a second frame after it.
      const connections: Promise<void>[] = [];
      for (let i = 0; i < batch.length; ) {
        const take = random.next() < 0.3 ? 2 : 1;
        connections.push(hostileConnection(options.port, batch.slice(i, i + take), random.next() < 0.5));
        i += take;
      }
      // The good producer's send overlaps the hostile connections' frames.

      const [, sent] = await Promise.all([
        Promise.all(connections),
        producer.send({ topic: options.goodTopic, messages: [{ key: `k${round}`, value: `good ${round}` }] }),
      ]);
      const offset = sent[0]?.baseOffset;
      if (sent[0]?.errorCode !== 0 || offset !== String(round))
        throw new Error(
          `seed ${options.seed}, round ${round}: the good producer got ${JSON.stringify(sent)}, expected offset ${round}`,
        );
      options.onRound?.(round);
    }
  } finally {
    await producer.disconnect();
    await Promise.all(watching);
  }
  return options.watch === undefined
    ? { frames, acknowledged: options.rounds }
    : { frames, acknowledged: options.rounds, watched };
}

/** Every value of partition 0 of `topic`, read with a kafkajs consumer group from the beginning. */
export function readAllValues(port: number, topic: string, count: number): Promise<string[]> {
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: "fuzz-reader",
    logLevel: logLevel.NOTHING,
  });
  return readValuesWithKafkajs(kafka, `fuzz-reader-${process.pid}`, topic, count);
}

/**
 * A broker child process with its Kafka listener on a free port and the fuzzer's good topic created
 * (through kafkajs). Its log is read as it comes (`logLines`, resolved when it exits): it writes one
 * line per connection it closes, and a broker whose stdout pipe is full blocks in write(2)
 * (console.log is synchronous), which is what the first version of this fuzzer measured instead of
 * the broker.
 */
export async function startFuzzBroker(dataDir: string, goodTopic: string) {
  // ACLs enforced, the anonymous fuzzer a super user: every request passes the checks, and the ACL
  // APIs (whose templates are in the fixture) store, list and delete ACLs for real.
  const broker = await startBroker(dataDir, [
    "--kafka-port",
    "0",
    "--max-frame-size",
    "256KiB",
    "--authorizer",
    "acl",
    "--super-users",
    "User:ANONYMOUS",
  ]);
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  const port = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
  const logLines = broker.lines.rest();
  const admin = new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: "fuzz",
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: goodTopic, numPartitions: 1 }] });
  await admin.disconnect();
  return { broker, port, logLines };
}
