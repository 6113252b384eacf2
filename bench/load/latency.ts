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
 *
 * Pacing: Bun's timers have millisecond resolution, so a `setTimeout` generator sends each batch up
 * to a millisecond after it is due (measured: due → sent 0.55-0.6 ms at the median, 2026-12-01), and
 * a p99 under 1 ms from the due time could not be measured whatever the broker did. The generator
 * therefore sleeps with `setTimeout` only while the next batch is more than PRECISE_BELOW_US away and
 * waits the rest with `Atomics.wait` (a futex sleep with a timeout: no spinning, so it takes no core
 * from the broker; measured 0.06 ms late at the median at load average 4). It yields to the event
 * loop once after every batch, so acknowledgements are read between batches.
 *
 * Warm-up: the first `warmupSeconds` of records are produced and consumed at the same rate but left
 * out of the percentiles (their own p99 is reported as `warmupP99Ms`): a fresh broker compiles its hot
 * paths during the first few hundred milliseconds (2026-12-01: a third of the responses over 1 ms in a
 * 5 s run came in its first 250 ms, docs/benchmarks.md), and the target is about the running broker.
 *
 * Usage: bun latency.ts <port> <topic> <rate> <seconds> <recordBytes> [warmupSeconds=0] [trace file]
 * Prints one JSON line: p50/p99/p999/max in milliseconds from due (`p50Ms`…), the same from sent
 * (`sentP50Ms`…), and the achieved rate. With a trace file, the consumer writes one line per FETCH
 * response after the warm-up: arrival time (µs, the shared clock), records in it, and their largest
 * latency from sent (µs); bench/latency-attribution.ts lines these up with the collectors' pauses.
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
const [portText, topic, rateText, secondsText, recordBytesText, warmupText, traceFile] = process.argv.slice(
  consumerRole ? 3 : 2,
);
const port = Number(portText);
const rate = Number(rateText);
const seconds = Number(secondsText);
const recordBytes = Math.max(16, Number(recordBytesText ?? 100));
const warmupSeconds = Number(warmupText ?? 0);
/** Records produced in the warm-up, left out of the percentiles. */
const warmupRecords = rate * warmupSeconds;
/** Records measured. */
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
  warmupSeconds: number;
  /** The warm-up's own p99 from due (0 without a warm-up). */
  warmupP99Ms: number;
}

async function consume(): Promise<void> {
  const consumer = await BrokerConnection.connect({ host: "127.0.0.1", port });
  // Preallocated: no array growth (and its copies) while measuring.
  const latenciesUs = new Float64Array(total);
  const sentLatenciesUs = new Float64Array(total);
  const warmupLatenciesUs = new Float64Array(warmupRecords);
  const reader = new RecordBatchReader();
  /** Records consumed, the warm-up's included; record `consumed - warmupRecords` is the next measured. */
  let consumed = 0;
  let offset = 0;
  const trace: string[] = [];
  // One DataView per response buffer, not one per record (the consumer's own garbage is collected
  // on a CPU the broker shares).
  let times: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(16));
  let arrivedUs = 0;
  const onRecord = (record: { bytes: Uint8Array; valueStart: number }) => {
    if (consumed >= warmupRecords + total) return;
    if (times.buffer !== record.bytes.buffer) times = new DataView(record.bytes.buffer);
    const at = record.bytes.byteOffset + record.valueStart;
    const fromDueUs = arrivedUs - times.getFloat64(at, false);
    if (consumed < warmupRecords) warmupLatenciesUs[consumed] = fromDueUs;
    else {
      latenciesUs[consumed - warmupRecords] = fromDueUs;
      sentLatenciesUs[consumed - warmupRecords] = arrivedUs - times.getFloat64(at + 8, false);
    }
    consumed++;
  };
  console.log("ready");
  while (consumed < warmupRecords + total) {
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
    arrivedUs = nowUs();
    const checked = checkFetchedEntries(response.records, offset);
    const first = consumed;
    forEachFetchedRecord(response.records, checked.batchBounds, offset, reader, onRecord);
    offset = checked.nextFetchOffset;
    if (traceFile !== undefined && first >= warmupRecords) {
      let worstUs = 0;
      for (let i = first - warmupRecords; i < consumed - warmupRecords; i++)
        worstUs = Math.max(worstUs, sentLatenciesUs[i]!);
      trace.push(`${arrivedUs.toFixed(0)} ${consumed - first} ${worstUs.toFixed(0)}`);
    }
  }
  if (traceFile !== undefined) await Bun.write(traceFile, `${trace.join("\n")}\n`);
  warmupLatenciesUs.sort();
  latenciesUs.sort();
  sentLatenciesUs.sort();
  const at = (values: Float64Array, q: number) =>
    values[Math.min(values.length - 1, Math.floor(q * values.length))]! / 1000;
  const result: ConsumerResult = {
    records: consumed - warmupRecords,
    p50Ms: at(latenciesUs, 0.5),
    p99Ms: at(latenciesUs, 0.99),
    p999Ms: at(latenciesUs, 0.999),
    maxMs: latenciesUs[total - 1]! / 1000,
    minMs: latenciesUs[0]! / 1000,
    sentP50Ms: at(sentLatenciesUs, 0.5),
    sentP99Ms: at(sentLatenciesUs, 0.99),
    sentP999Ms: at(sentLatenciesUs, 0.999),
    sentMaxMs: sentLatenciesUs[total - 1]! / 1000,
    warmupSeconds,
    warmupP99Ms: warmupRecords > 0 ? at(warmupLatenciesUs, 0.99) : 0,
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
  /** Below this the generator waits with Atomics.wait (sub-millisecond), above it with setTimeout. */
  const PRECISE_BELOW_US = 1500;
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
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
  const produceTotal = warmupRecords + total;
  let sent = 0;
  let acked = 0;
  let failure: unknown;
  while (sent < produceTotal) {
    const dueUs = dueOf(sent);
    const now = nowUs();
    if (now < dueUs) {
      const waitUs = dueUs - now;
      if (waitUs > PRECISE_BELOW_US) {
        // Wakes at least a millisecond early (Bun's timers round to milliseconds and run late).
        await new Promise((resolve) => setTimeout(resolve, Math.floor((waitUs - PRECISE_BELOW_US) / 1000)));
      } else {
        Atomics.wait(sleeper, 0, 0, waitUs / 1000);
      }
      continue;
    }
    // Everything due by now goes in one batch (at most MAX_BATCH_RECORDS, so that a stalled sender's
    // backlog stays within the topic's 1 MiB batch limit); each record carries the time it was due.
    writer.begin();
    const timestamp = Date.now();
    let inBatch = 0;
    view.setFloat64(8, now, false);
    while (sent < produceTotal && dueOf(sent) <= now && inBatch++ < MAX_BATCH_RECORDS) {
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
    // Let the event loop read acknowledgements before the next (futex) wait.
    await new Promise((resolve) => setImmediate(resolve));
  }
  const elapsedS = (nowUs() - startUs) / 1e6;
  const achievedRate = produceTotal / elapsedS;
  const code = await child.exited;
  if (failure !== undefined) throw failure;
  if (code !== 0) throw new Error(`the consumer exited with ${code}`);
  const result = JSON.parse((await consumerOutput).trim().split("\n").at(-1)!) as ConsumerResult;
  const cpu = process.cpuUsage();
  console.log(
    JSON.stringify({
      achievedRate,
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
