// Run by test/node/node-client.test.ts under Node.js, from a project that installed the packed
// package: `node node-tls.mjs <port> <dir>` against a broker with --tls-cert and --tls-ca, with the
// certificates of test/helpers/tls-certs.ts in <dir>. The client's TLS under Node is node:tls
// (src/client/transport.ts). Prints one JSON object; the test asserts on it.
import fs from "node:fs";
import path from "node:path";
import { BooblikClient, Consumer, Producer, textOf } from "booblik/client";

const port = Number(process.argv[2]);
const dir = process.argv[3];
const read = (name) => fs.readFileSync(path.join(dir, name), "utf8");
const out = { node: process.versions.node, bun: process.versions.bun ?? null };

// With the CA and a client certificate the CA signed: produce and consume.
const client = await BooblikClient.connect({
  host: "127.0.0.1",
  port,
  retries: 0,
  tls: { ca: read("ca.pem"), cert: read("client.pem"), key: read("client.key") },
});
await client.createTopic("node-tls", { partitions: 1 });
const producer = new Producer(client, { lingerMs: 1 });
await Promise.all(Array.from({ length: 500 }, (_, i) => producer.send("node-tls", { value: `secret ${i}` })));
await producer.close();
const received = [];
const consumer = new Consumer(client, { topic: "node-tls", partition: 0, from: "earliest", stopAtEnd: true });
for await (const record of consumer) received.push(textOf(record));
out.received = received.length;
out.last = received.at(-1);
client.close();

async function failure(tls) {
  try {
    const c = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0, tls });
    try {
      await c.metadata();
      return "served";
    } finally {
      c.close();
    }
  } catch (error) {
    return `${error.name}: ${error.message}`;
  }
}
// Without a client certificate; trusting another CA.
out.withoutCertificate = await failure({ ca: read("ca.pem") });
out.otherCa = await failure({ ca: read("other-ca.pem"), cert: read("client.pem"), key: read("client.key") });
console.log(JSON.stringify(out));
