/**
 * Connection and topic lifecycle on the TCP server, against a real broker process: a client that pipelines FETCHes
 * and never reads is closed after the idle timeout (it used to pin its segments and queue forever),
 * a FETCH with a maxWaitMs beyond setTimeout's range still waits, and a DELETE_TOPIC pipelined with a
 * CREATE_TOPIC of the same name leaves the new topic intact. Plus /metrics listing topics once.
 */
import { expect, setDefaultTimeout, spyOn, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { ByteReader, ByteWriter } from "../../src/protocol/buffer.ts";
import { RESPONSE_HEADER_BYTES, readResponseHeader } from "../../src/protocol/frame.ts";
import {
  decodeFetchResponse,
  encodeCreateTopicRequest,
  encodeDeleteTopicRequest,
  encodeFetchRequest,
} from "../../src/protocol/messages.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { buildRegistry } from "../../src/server/metrics-http.ts";
import { metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { frame, rawConnect, repeated } from "../helpers/raw-socket.ts";
import { valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

test("a client that pipelines fetches and never reads is closed after the idle timeout", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path, ["--idle-timeout", "300ms", "--metrics-port", "0"]);
  const metricsPort = metricsPortOf(broker.startLine);
  const connections = async () =>
    metricValue(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(), "booblik_connections");
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    // Batches of 16 values of 64 KiB: above the default 1 MiB batch limit, so raise it.
    await admin.createTopic("big", { durability: "append", maxRecordBytes: 2 * 1024 * 1024 });
    const payload = new Uint8Array(64 * 1024).fill(7);
    for (let i = 0; i < 32; i++)
      await admin.produce("big", 0, batchOfValues(Array.from({ length: 16 }, () => payload))); // 32 MiB
  } finally {
    admin.close();
  }
  await waitUntil(async () => (await connections()) === 0, "the admin connection to close");
  const slow = await rawConnect(broker.port, { readPaused: true });
  try {
    const request = frame((w) =>
      encodeFetchRequest(w, 1, {
        topic: "big",
        partition: 0,
        offset: 0,
        maxBytes: 1024 * 1024,
        maxWaitMs: 0,
      }),
    );
    const startMs = performance.now();
    slow.write(repeated(request, 200));
    await waitUntil(async () => (await connections()) === 1, "the slow connection to be counted");
    // Its responses are queued (and its segment held) but never read: no progress, so it is swept.
    // The deadline only turns a hang into a readable failure; the sweep takes about 300-375 ms.
    await waitUntil(
      async () => (await connections()) === 0,
      "the stalled connection to be closed",
      10_000,
      20,
    );
    expect(performance.now() - startMs).toBeGreaterThanOrEqual(250);
  } finally {
    slow.close();
  }
  // The broker serves others as before, and holds nothing for the closed connection.
  const after = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
  try {
    expect((await after.listOffsets("big", 0)).nextOffset).toBe(512);
    const stats = await after.stats();
    expect(stats.connectionsActive).toBe(1);
    expect(stats.connectionsPaused).toBe(0);
  } finally {
    after.close();
  }
});

test("a FETCH whose maxWaitMs is beyond setTimeout's range waits for a record instead of 1 ms", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  const socket = await rawConnect(broker.port);
  try {
    await admin.createTopic("w", { durability: "append" });
    socket.write(
      frame((w) =>
        encodeFetchRequest(w, 5, {
          topic: "w",
          partition: 0,
          offset: 0,
          maxBytes: 4096,
          maxWaitMs: 0xffffffff,
        }),
      ),
    );
    // The fetch reached the broker and is waiting (or, with the bug, was answered after 1 ms).
    await waitUntil(async () => Number((await admin.stats()).fetchWaits) >= 1, "the FETCH to wait");
    await admin.produce("w", 0, batchOfValues(["late"]));
    const bytes = await socket.waitForBytes(RESPONSE_HEADER_BYTES);
    const size = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, false);
    const full = await socket.waitForBytes(4 + size);
    expect(readResponseHeader(full, 0, { correlationId: 0, errorCode: 0 })).toEqual({
      correlationId: 5,
      errorCode: 0,
    });
    const response = decodeFetchResponse(new ByteReader(full, RESPONSE_HEADER_BYTES, 4 + size));
    expect(valuesOf(response.records).map((p) => new TextDecoder().decode(p))).toEqual(["late"]);
  } finally {
    socket.close();
    admin.close();
  }
});

test("DELETE_TOPIC pipelined with CREATE_TOPIC of the same name: the new topic keeps its records", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("r", { partitions: 2, durability: "append" });
    await client.produce("r", 1, batchOfValues(["old"]));
    // Both requests in one write: the broker reads the CREATE while the DELETE still closes the old
    // partitions, and must apply them in order anyway.
    const socket = await rawConnect(broker.port);
    try {
      const writer = new ByteWriter();
      encodeDeleteTopicRequest(writer, 1, { name: "r" });
      encodeCreateTopicRequest(writer, 2, { name: "r", configJson: '{"partitions":2}' });
      socket.write(writer.written().slice());
      const bytes = await socket.waitForBytes(2 * RESPONSE_HEADER_BYTES);
      expect(readResponseHeader(bytes, 0, { correlationId: 0, errorCode: 0 })).toEqual({
        correlationId: 1,
        errorCode: 0,
      });
      expect(readResponseHeader(bytes, RESPONSE_HEADER_BYTES, { correlationId: 0, errorCode: 0 })).toEqual({
        correlationId: 2,
        errorCode: 0,
      });
    } finally {
      socket.close();
    }
    await client.produce("r", 1, batchOfValues(["new"]));
  } finally {
    client.close();
  }
  expect(await broker.stop("SIGTERM")).toBe(0);
  // Reopened: the new topic's directory survived the delete that ran before it.
  const reopened = Broker.open({ dataDir: dir.path });
  try {
    const records = reopened.read("r", 1, 0).records;
    expect(valuesOf(records).map((p) => new TextDecoder().decode(p))).toEqual(["new"]);
  } finally {
    await reopened.close();
  }
});

test("/metrics lists the topics once per scrape, not once per partition family", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  try {
    broker.createTopic("a", { partitions: 2 });
    await broker.append("a", 1, batchOfValues(["x"]));
    const registry = buildRegistry({ broker, server: undefined, ready: true });
    const listTopics = spyOn(broker, "listTopics");
    const text = registry.render();
    expect(listTopics).toHaveBeenCalledTimes(1);
    expect(metricValue(text, 'booblik_partition_next_offset{topic="a",partition="1"}')).toBe(1);
    expect(metricValue(text, 'booblik_partition_log_start_offset{topic="a",partition="0"}')).toBe(0);
    expect(metricValue(text, 'booblik_partition_size_bytes{topic="a",partition="1"}')).toBeGreaterThan(0);
    registry.render();
    expect(listTopics).toHaveBeenCalledTimes(2);
    listTopics.mockRestore();
  } finally {
    await broker.close();
  }
});
