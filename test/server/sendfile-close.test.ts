/**
 * The native listener's zero-copy FETCH (the default `--fetch-path sendfile`) while the topic it
 * sends from is deleted: the answer goes on from the deleted segment's file, not from whatever file
 * the process opens next. An in-process broker and server, because the bug was a descriptor number
 * reused inside the broker's process: `Segment.close` closed a descriptor a send still held, and the
 * next open took its number (found in review, 2026-12-02; test/kafka/records.test.ts has the Kafka
 * listener's twin).
 */
import { afterEach, expect, test } from "bun:test";
import fs from "node:fs";
import { Broker } from "../../src/broker/broker.ts";
import { FETCH_RESPONSE_BYTES_MAX } from "../../src/domain/limits.ts";
import { decodeFetchResponse, encodeFetchRequest } from "../../src/protocol/messages.ts";
import { BrokerServer } from "../../src/server/server.ts";
import { frame, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

test("a topic deleted while a zero-copy FETCH answer is sent: the answer carries that topic's records, not another file's", async () => {
  const dir = tempDir("sendfile-close");
  cleanups.push(() => dir[Symbol.dispose]());
  const broker = Broker.open({ dataDir: dir.file("data"), topicDefaults: { durability: "append" } });
  cleanups.push(() => broker.close());
  const server = new BrokerServer(broker, {
    hostname: "127.0.0.1",
    port: 0,
    maxFrameBytes: 16 << 20,
    maxConnections: 16,
    maxConnectionsPerAddress: 16,
    idleTimeoutMs: 60_000,
    requestTimeoutMs: 30_000,
    maxInboundBytes: 1 << 26,
    fetchPath: "sendfile",
    maxFetchBytes: FETCH_RESPONSE_BYTES_MAX,
  });
  const { port } = server.listen();
  cleanups.push(() => server.stop(1_000));
  broker.createTopic("doomed", { segmentBytes: 16 << 20 });
  // ~8 MiB in one segment: more than the socket buffers take while the client does not read.
  const values = Array.from({ length: 9 }, (_, i) => new Uint8Array(900_000).fill(97 + i));
  for (const value of values) await broker.produce("doomed", 0, [{ key: null, value, timestamp: 1 }]);
  const socket = await rawConnect(port, { readPaused: true });
  cleanups.push(() => socket.close());
  socket.write(
    frame((w) =>
      encodeFetchRequest(w, 1, {
        topic: "doomed",
        partition: 0,
        offset: 0,
        maxBytes: 16 << 20,
        maxWaitMs: 0,
      }),
    ),
  );
  await waitUntil(() => server.counters.sendfileBytes > 0, "the answer to start");
  await broker.deleteTopic("doomed");
  // Files opened now take the lowest free descriptor numbers: before the fix, the deleted
  // segment's among them, and the rest of the answer came from these files.
  const decoy = dir.file("decoy");
  fs.writeFileSync(decoy, new Uint8Array(1 << 20).fill(0x5a));
  const decoys = Array.from({ length: 8 }, () => fs.openSync(decoy, "r"));
  cleanups.push(() => {
    for (const fd of decoys) fs.closeSync(fd);
  });
  socket.socket.resume();
  const [answer] = await waitForResponses(socket, 1);
  expect(answer!.errorCode).toBe(0);
  // valuesOf checks every entry's CRC32C and every batch's.
  const got = valuesOf(decodeFetchResponse(answer!.body).records);
  expect(got.map((value) => [value.length, value[0]])).toEqual(
    values.map((value) => [value.length, value[0]]),
  );
});
