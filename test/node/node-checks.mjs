// Run by test/node/node-client.test.ts under Node.js, from a project that installed the packed
// package: `node node-checks.mjs <port> <zstd topic>`. Prints one JSON object; the test asserts on it.
import {
  BooblikClient,
  BooblikError,
  ConnectionError,
  Consumer,
  CorruptRecordError,
  checkFetchedEntries,
  crc32c,
  crc32cImplementation,
  OffsetOutOfRangeError,
  Producer,
  textOf,
  ZSTD_AVAILABLE,
} from "booblik/client";

const port = Number(process.argv[2]);
const zstdTopic = process.argv[3];
const out = { node: process.versions.node, bun: process.versions.bun ?? null, crc32cImplementation };

// The same bytes the test hashes under Bun: sizes across the 16-byte blocks of slicing-by-16.
out.crcs = [0, 1, 15, 16, 17, 255, 4096, 65_537].map((size) => {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return crc32c(bytes, 0, size);
});

const client = await BooblikClient.connect({ host: "127.0.0.1", port });

// Produce gzip-compressed keyed records to two partitions, consume them back (CRCs checked).
await client.createTopic("node-gzip", { partitions: 2 });
const producer = new Producer(client, { compression: "gzip", lingerMs: 1 });
const sent = Array.from({ length: 2000 }, (_, i) => ({ key: `k${i % 7}`, value: `value ${i}` }));
await Promise.all(sent.map((record) => producer.send("node-gzip", record)));
await producer.close();
const received = [];
for (const partition of [0, 1]) {
  const consumer = new Consumer(client, { topic: "node-gzip", partition, from: "earliest", stopAtEnd: true });
  for await (const record of consumer) received.push(textOf(record));
  await consumer.close();
}
out.consumed = received.length;
out.consumedSet = new Set(received).size;

// Groups: commit through a consumer, read back.
const group = "node-group";
const first = new Consumer(client, { topic: "node-gzip", partition: 0, group, from: "earliest" });
let handed = 0;
for await (const _record of first) if (++handed === 10) break;
await first.close();
out.committed = first.committed;
out.fetchedOffsets = (await client.fetchOffsets(group, [{ topic: "node-gzip" }])).map((o) => [
  o.partition,
  o.offset,
]);

// A flipped byte inside a fetched batch is refused by its CRC, naming the offset.
const fetched = await client.fetch("node-gzip", 0, 0);
const damaged = fetched.records.slice();
damaged[damaged.length - 3] ^= 0xff;
try {
  checkFetchedEntries(damaged, 0);
  out.damaged = "accepted";
} catch (error) {
  out.damaged = error instanceof CorruptRecordError ? `${error.code}: ${error.message}` : String(error);
}

// Errors keep their classes and codes.
try {
  await client.fetch("no-such-topic", 0, 0);
} catch (error) {
  out.unknownTopic = error instanceof BooblikError ? [error.code, error.retriable] : String(error);
}
try {
  await client.fetch("node-gzip", 0, 1_000_000);
} catch (error) {
  out.outOfRange =
    error instanceof OffsetOutOfRangeError ? [error.code, error.nextOffset > 0] : String(error);
}
try {
  await BooblikClient.connect({ host: "127.0.0.1", port: 1, retries: 0 });
} catch (error) {
  out.refused = error instanceof ConnectionError ? [error.code, error.message] : String(error);
}

// zstd: works where node:zlib has it (Node ≥ 22.15 / 23.8), a clear error naming it elsewhere.
out.zstdAvailable = ZSTD_AVAILABLE;
try {
  const zstd = new Producer(client, { compression: "zstd" });
  await zstd.send("node-gzip", "zstd from node");
  await zstd.close();
  out.zstdProduce = "ok";
} catch (error) {
  out.zstdProduce = error instanceof BooblikError ? `${error.code}: ${error.message}` : String(error);
}
try {
  const consumer = new Consumer(client, {
    topic: zstdTopic,
    partition: 0,
    from: "earliest",
    stopAtEnd: true,
  });
  const values = [];
  for await (const record of consumer) values.push(textOf(record));
  await consumer.close();
  out.zstdConsume = values;
} catch (error) {
  out.zstdConsume = error instanceof BooblikError ? `${error.code}: ${error.message}` : String(error);
}

client.close();
console.log(JSON.stringify(out));
// Ends by itself: a socket or timer left open would keep Node running and the test would time out.
