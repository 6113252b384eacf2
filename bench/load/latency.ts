/**
 * End-to-end latency at a fixed rate: one connection produces `rate` records/s as a batch of
 * `rate / 1000` records due every millisecond (each record carries its batch's due time, so a
 * stalled sender does not hide latency: no coordinated omission; overdue batches go out together); another connection, in a child process of its own, long-polls
 * FETCH and records, per record, the time from its intended send to its arrival at the consumer.
 * Same machine; times are wall clock at process start plus monotonic time since (see `nowUs`).
 * Each record also carries the time its batch was encoded and handed to the connection (`sent`), so
 * the latency splits into the generator's part (due → sent: the lateness of its timer) and the rest
 * (sent → fetched: the broker, loopback, the consumer).
 * The consumer has its own process because, sharing one with the producer, a pause of either (its
 * collector, a late timer) could delay the other's time stamps.
 * Usage: bun latency.ts <port> <topic> <rate> <seconds> <recordBytes>
 * Prints one JSON line: p50/p99/p999/max in milliseconds from due (`p50Ms`…), the same from sent
 * (`sentP50Ms`…), and the achieved rate.
 */
import { BrokerConnection } from "../../src/client/connection.ts";
import { checkFetchedEntries, forEachFetchedRecord } from "../../src/client/fetched.ts";
import {
  decodeFetchResponse,
  decodeProduceResponse,
  encodeFetchRequest,
  encodeProduceRequest,
} from "../../src/protocol/messages.ts";
import { RecordBatchReader, RecordBatchWriter } from "../../src/record/batch.ts";

const consumerRole = process.argv[2] === "--consume";
const [portText, topic, rateText, secondsText, recordBytesText] = process.argv.slice(consumerRole ? 3 : 2);
const port = Number(portText);
const rate = Number(rateText);
const seconds = Number(secondsText);
const recordBytes = Math.max(16, Number(recordBytesText ?? 100));
const total = rate * seconds;
/**
 * Microseconds on a clock both processes share: the wall clock at each process's start plus the
 * monotonic time since (Bun's process.hrtime counts from its own process's start, so it cannot
 * compare two processes' times).
 */
const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;

interface ConsumerResult {
  records: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** The smallest from due: a negative one would mean the two processes' clocks disagree. */
  minMs: number;
  sentP50Ms: number;
  sentP99Ms: number;
  sentP999Ms: number;
  sentMaxMs: number;
}

async function consume(): Promise<void> {
  const consumer = await BrokerConnection.connect({ host: "127.0.0.1", port });
  // Preallocated: no array growth (and its copies) while measuring.
  const latenciesUs = new Float64Array(total);
  const sentLatenciesUs = new Float64Array(total);
  const reader = new RecordBatchReader();
  let consumed = 0;
  let offset = 0;
  console.log("ready");
  while (consumed < total) {
    const response = await consumer.send(
      (writer, id) =>
        encodeFetchRequest(writer, id, {
          topic: topic!,
          partition: 0,
          offset,
          maxBytes: 1024 * 1024,
          maxWaitMs: 1000,
        }),
      (reader) => decodeFetchResponse(reader),
    );
    const arrivedUs = nowUs();
    const checked = checkFetchedEntries(response.records, offset);
    forEachFetchedRecord(response.records, checked.batchBounds, offset, reader, (record) => {
      if (consumed >= total) return;
      const times = new DataView(record.bytes.buffer, record.bytes.byteOffset + record.valueStart, 16);
      latenciesUs[consumed] = arrivedUs - times.getFloat64(0, false);
      sentLatenciesUs[consumed] = arrivedUs - times.getFloat64(8, false);
      consumed++;
    });
    offset = checked.nextFetchOffset;
  }
  latenciesUs.sort();
  sentLatenciesUs.sort();
  const at = (values: Float64Array, q: number) =>
    values[Math.min(values.length - 1, Math.floor(q * values.length))]! / 1000;
  const result: ConsumerResult = {
    records: consumed,
    p50Ms: at(latenciesUs, 0.5),
    p99Ms: at(latenciesUs, 0.99),
    p999Ms: at(latenciesUs, 0.999),
    maxMs: latenciesUs[total - 1]! / 1000,
    minMs: latenciesUs[0]! / 1000,
    sentP50Ms: at(sentLatenciesUs, 0.5),
    sentP99Ms: at(sentLatenciesUs, 0.99),
    sentP999Ms: at(sentLatenciesUs, 0.999),
    sentMaxMs: sentLatenciesUs[total - 1]! / 1000,
  };
  console.log(JSON.stringify(result));
  consumer.close();
  process.exit(0);
}

async function produce(): Promise<void> {
  const child = Bun.spawn([process.execPath, import.meta.path, "--consume", ...process.argv.slice(2)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const output = child.stdout.getReader();
  let text = "";
  while (!text.includes("ready\n")) {
    const { value, done } = await output.read();
    if (done) throw new Error(`the consumer exited before it was ready: ${text}`);
    text += new TextDecoder().decode(value);
  }
  // The rest of the consumer's output (its result line), read while producing.
  const consumerOutput = (async () => {
    for (;;) {
      const { value, done } = await output.read();
      if (done) return text;
      text += new TextDecoder().decode(value);
    }
  })();

  /** Half a MiB of records: well below the default batch limit of 1 MiB. */
  const MAX_BATCH_RECORDS = Math.max(1, Math.floor((512 * 1024) / (recordBytes + 16)));
  const producer = await BrokerConnection.connect({ host: "127.0.0.1", port, maxInFlight: 4096 });
  const perMs = rate / 1000;
  const writer = new RecordBatchWriter(1024 * 1024);
  const payload = new Uint8Array(recordBytes);
  const view = new DataView(payload.buffer);
  const startUs = nowUs();
  /**
   * Record `index` is due with its millisecond's batch: the workload is `rate / 1000` records every
   * millisecond. (Spreading due times evenly over the millisecond would count up to 1 ms of the
   * generator's own batching as latency, so a p99 under 1 ms could not be measured at all.)
   */
  const dueOf = (index: number) => startUs + Math.floor(index / perMs) * 1000;
  let sent = 0;
  let acked = 0;
  let failure: unknown;
  while (sent < total) {
    const dueUs = dueOf(sent);
    const now = nowUs();
    if (now < dueUs) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.floor((dueUs - now) / 1000))));
      continue;
    }
    // Everything due by now goes in one batch (at most MAX_BATCH_RECORDS, so that a stalled sender's
    // backlog stays within the topic's 1 MiB batch limit); each record carries the time it was due.
    writer.begin();
    const timestamp = Date.now();
    let inBatch = 0;
    view.setFloat64(8, now, false);
    while (sent < total && dueOf(sent) <= now && inBatch++ < MAX_BATCH_RECORDS) {
      view.setFloat64(0, dueOf(sent), false);
      writer.add({ key: null, value: payload, timestamp });
      sent++;
    }
    const batch = writer.finish().slice();
    producer
      .send(
        (writer, id) => encodeProduceRequest(writer, id, { topic: topic!, partition: 0, records: batch }),
        decodeProduceResponse,
      )
      .then(
        () => acked++,
        (error: unknown) => (failure ??= error),
      );
  }
  const elapsedS = (nowUs() - startUs) / 1e6;
  const code = await child.exited;
  if (failure !== undefined) throw failure;
  if (code !== 0) throw new Error(`the consumer exited with ${code}`);
  const result = JSON.parse((await consumerOutput).trim().split("\n").at(-1)!) as ConsumerResult;
  const cpu = process.cpuUsage();
  console.log(
    JSON.stringify({
      achievedRate: total / elapsedS,
      // The producer's own CPU share: a generator that spins for its timer takes a core from the broker.
      producerCpuShare: (cpu.user + cpu.system) / 1e6 / elapsedS,
      ...result,
    }),
  );
  producer.close();
  process.exit(0);
}

if (consumerRole) await consume();
else await produce();
