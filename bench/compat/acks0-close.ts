/**
 * `bun bench/compat/acks0-close.ts`: the booblik behaviour `bun run compat:go` found with Sarama's
 * SyncProducer and RequiredAcks=NoResponse (acks 0): a client that writes several acks=0 Produce
 * requests and closes its connection right away (Sarama's Close after SendMessages returned) loses
 * every request booblik had not started when the close arrived. Kafka processes every request it
 * received before the close (its Selector keeps "closingChannels" for exactly this case: "when
 * producer with acks=0 sends some records and closes its connections"), and the same Sarama
 * scenario stores all its records there.
 *
 * An in-process broker (default durability, `force`) and listener; 10 Produce v8 requests with
 * acks 0, one record each, written back to back, then the client's FIN. Prints how many records
 * were stored and exits 1 when fewer than 10 were.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import { Expect } from "../../test/kafka/bytes.ts";

const SENT = 10;
const dir = mkdtempSync(join(tmpdir(), "booblik-acks0-"));
const broker = Broker.open({ dataDir: dir });
broker.createTopic("quiet");
const listener = new KafkaListener(broker, {
  hostname: "127.0.0.1",
  port: 0,
  maxFrameBytes: 4 << 20,
  maxConnections: 16,
  maxConnectionsPerAddress: 16,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 30_000,
  inboundBudget: new InboundBudget(1 << 26),
  fetchPath: "copy",
});
const { port } = listener.listen();
const socket = connect(port, "127.0.0.1");
await new Promise((resolve) => socket.once("connect", resolve));
for (let i = 0; i < SENT; i++) {
  const batch = encodeBatch([
    { key: null, value: new TextEncoder().encode(`record ${i}`), timestamp: 1_700_000_000_000 + i },
  ]);
  // Produce v8: transactional_id null, acks 0, timeout, one topic with one partition.
  socket.write(
    new Expect()
      .i16(0)
      .i16(8)
      .i32(i + 1)
      .str("acks0-close")
      .str(null)
      .i16(0)
      .i32(30_000)
      .i32(1)
      .str("quiet")
      .i32(1)
      .i32(0)
      .i32(batch.length)
      .raw(batch)
      .frame(),
  );
}
socket.end(); // the client closes right after its acks=0 requests, as Sarama's Close does
await Bun.sleep(1_000);
const stored = broker.describeTopic("quiet").partitions[0]!.nextOffset;
console.log(`${SENT} acks=0 Produce requests written, then the connection closed: ${stored} records stored`);
await listener.stop();
await broker.close();
rmSync(dir, { recursive: true, force: true });
process.exit(stored === SENT ? 0 : 1);
