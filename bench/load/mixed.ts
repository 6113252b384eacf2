/**
 * Mixed load for the memory benchmark: producers spread batches over every partition at a steady
 * rate; fast consumers follow a set of partitions with long polls; slow consumers read a little from
 * other partitions once a second (they fall behind: their fetches reach far back into the log).
 * Usage: bun mixed.ts <port> <topic> <partitions> <seconds> <recordsPerSecond>
 * Prints one JSON line with what it did.
 */
import { BrokerConnection } from "../../src/client/connection.ts";
import { checkFetchedEntries } from "../../src/client/fetched.ts";
import { OffsetOutOfRangeError } from "../../src/domain/errors.ts";
import {
  decodeFetchResponse,
  decodeProduceResponse,
  encodeFetchRequest,
  encodeProduceRequest,
} from "../../src/protocol/messages.ts";
import { encodeBatch } from "../../src/record/batch.ts";

const [portText, topic, partitionsText, secondsText, rateText] = process.argv.slice(2);
const port = Number(portText);
const partitions = Number(partitionsText);
const endMs = performance.now() + Number(secondsText) * 1000;
const rate = Number(rateText);
const batchRecords = 100;
const batch = encodeBatch(
  Array.from({ length: batchRecords }, () => ({
    key: null,
    value: crypto.getRandomValues(new Uint8Array(100)),
    timestamp: Date.now(),
  })),
);
const connect = () => BrokerConnection.connect({ host: "127.0.0.1", port, maxInFlight: 64 });

let produced = 0;
let fastConsumed = 0;
let slowConsumed = 0;
let resets = 0;

async function producer(): Promise<void> {
  const connection = await connect();
  const batchesPerSecond = rate / batchRecords / 2; // two producers share the rate
  const started = performance.now();
  let sent = 0;
  const pending: Promise<unknown>[] = [];
  while (performance.now() < endMs) {
    const due = ((performance.now() - started) / 1000) * batchesPerSecond;
    while (sent < due) {
      const partition = sent % partitions;
      pending.push(
        connection.send(
          (w, id) => encodeProduceRequest(w, id, { topic: topic!, partition, records: batch }),
          decodeProduceResponse,
        ),
      );
      sent++;
      produced += batchRecords;
      if (pending.length >= 32) await pending.shift();
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(pending);
  connection.close();
}

async function consumer(partition: number, fast: boolean): Promise<void> {
  const connection = await connect();
  let offset = 0;
  while (performance.now() < endMs) {
    let response: ReturnType<typeof decodeFetchResponse>;
    try {
      response = await connection.send(
        (w, id) =>
          encodeFetchRequest(w, id, {
            topic: topic!,
            partition,
            offset,
            maxBytes: fast ? 1024 * 1024 : 16 * 1024,
            maxWaitMs: fast ? 500 : 0,
          }),
        decodeFetchResponse,
      );
    } catch (error) {
      // A slow consumer that retention overtook starts again at the oldest record, as a real one would.
      if (!(error instanceof OffsetOutOfRangeError)) throw error;
      offset = error.logStartOffset;
      resets++;
      continue;
    }
    const checked = checkFetchedEntries(response.records, offset);
    const count = checked.nextFetchOffset - offset;
    offset = checked.nextFetchOffset;
    if (fast) fastConsumed += count;
    else {
      slowConsumed += count;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  connection.close();
}

const tasks: Promise<void>[] = [producer(), producer()];
for (let p = 0; p < Math.min(10, partitions); p++) tasks.push(consumer(p, true));
for (let p = 10; p < Math.min(20, partitions); p++) tasks.push(consumer(p, false));
await Promise.all(tasks);
console.log(JSON.stringify({ produced, fastConsumed, slowConsumed, resets }));
process.exit(0);
