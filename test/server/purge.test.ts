/**
 * PURGE (14) through a real broker process: the bytes of docs/protocol.md on a raw socket, every
 * refusal (beyond the visible end, an unknown partition, a partition named twice, no partition, the
 * internal topic), nothing moved by a request that is refused, the audit line, the admin rate, the
 * client's `purge`, and a kill -9 right after a purge was acknowledged: the start does not go back.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { encodeCreateTopicRequest } from "../../src/protocol/messages.ts";
import {
  decodePurgeResponse,
  encodePurgeRequest,
  type PurgePartition,
} from "../../src/protocol/topic-admin.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { frame, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const {
  NONE,
  OFFSET_OUT_OF_RANGE,
  UNKNOWN_TOPIC_OR_PARTITION,
  INVALID_REQUEST,
  INVALID_CONFIG,
  LIMIT_EXCEEDED,
} = WIRE_ERROR_CODES;

const purge = (id: number, name: string, partitions: PurgePartition[]) =>
  frame((w) => encodePurgeRequest(w, id, { name, partitions }));

/** `count` records in batches of 5 to partition `partition` of `topic`. */
async function fill(client: BooblikClient, topic: string, partition: number, count: number): Promise<void> {
  for (let i = 0; i < count; i += 5) {
    const values = Array.from({ length: 5 }, (_, j) => ({
      key: null,
      value: new TextEncoder().encode(`${i + j}`.padEnd(80)),
      timestamp: 1_000 + i + j,
    }));
    await client.produce(topic, partition, encodeBatch(values));
  }
}

test("PURGE: the bytes, the answer, every refusal, nothing moved by a refused request, the audit", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("t", { partitions: 2, segmentBytes: 1024, durability: "append" });
    await fill(client, "t", 0, 40);
    await fill(client, "t", 1, 10);
    await client.commitOffsets("g", [{ topic: "t", partition: 0, offset: 1 }]); // creates the internal topic
    const socket = await rawConnect(broker.port);
    // The request byte by byte as docs/protocol.md gives it.
    const bytes = purge(2, "t", [
      { partition: 0, beforeOffset: 17 },
      { partition: 1, beforeOffset: -1 },
    ]);
    expect(Buffer.from(bytes).toString("hex")).toBe(
      "00000027" +
        "000e" +
        "0000" +
        "00000002" +
        "000174" +
        "00000002" +
        "00000000" +
        "0000000000000011" +
        "00000001" +
        "ffffffffffffffff",
    );
    socket.write(bytes);
    socket.write(purge(3, "t", [{ partition: 0, beforeOffset: 41 }])); // beyond the end
    socket.write(
      purge(4, "t", [
        { partition: 0, beforeOffset: 30 },
        { partition: 5, beforeOffset: 0 },
      ]),
    );
    socket.write(purge(5, "missing", [{ partition: 0, beforeOffset: 0 }]));
    socket.write(
      purge(6, "t", [
        { partition: 0, beforeOffset: 20 },
        { partition: 0, beforeOffset: 30 },
      ]),
    );
    socket.write(purge(7, "t", []));
    socket.write(purge(8, "__consumer_offsets", [{ partition: 0, beforeOffset: 0 }]));
    const answers = await waitForResponses(socket, 7);
    expect(answers.map((a) => [a.correlationId, a.errorCode])).toEqual([
      [2, NONE],
      [3, OFFSET_OUT_OF_RANGE],
      [4, UNKNOWN_TOPIC_OR_PARTITION],
      [5, UNKNOWN_TOPIC_OR_PARTITION],
      [6, INVALID_REQUEST],
      [7, INVALID_REQUEST],
      [8, INVALID_CONFIG],
    ]);
    expect(decodePurgeResponse(answers[0]!.body)).toEqual([
      { partition: 0, logStartOffset: 17 },
      { partition: 1, logStartOffset: 10 },
    ]);
    expect(answers[1]!.message).toBe("cannot purge t/0: offset 41 is out of range: the log holds [17, 40)");
    expect(answers[4]!.message).toMatch(/PURGE names partition 0 twice/);
    expect(answers[5]!.message).toMatch(/PURGE request names no partition/);
    expect(answers[6]!.message).toBe(
      'topic "__consumer_offsets" is internal to the broker and cannot be purged',
    );
    socket.close();
    // Request 4 named a partition that does not exist after one that does: nothing moved.
    expect(await client.listOffsets("t", 0)).toEqual({ logStartOffset: 17, nextOffset: 40 });
    // Reads below the start answer OFFSET_OUT_OF_RANGE, with the new start in the error.
    await expect(client.fetch("t", 0, 16)).rejects.toMatchObject({ code: "OFFSET_OUT_OF_RANGE" });
    // Both audit lines, in whichever order they were printed (the refusal needs no disk).
    const expected = [
      'audit: anonymous from 127.0.0.1: purged topic "t": partitions 0 before 17, 1 before -1; they now start: 0 from 17, 1 from 10',
      'audit: anonymous from 127.0.0.1: purge topic "t" partitions 0 before 41 refused: cannot purge t/0: offset 41 is out of range',
    ];
    const seen = new Set<string>();
    await broker.lines.waitFor((line) => {
      for (const text of expected) if (line.includes(text)) seen.add(text);
      return seen.size === expected.length;
    }, "the audit lines");
    // The client method: a later point, and one at or below the start changes nothing.
    expect(
      await client.purge("t", [
        { partition: 0, beforeOffset: 25 },
        { partition: 1, beforeOffset: 3 },
      ]),
    ).toEqual([
      { partition: 0, logStartOffset: 25 },
      { partition: 1, logStartOffset: 10 },
    ]);
  } finally {
    client.close();
  }
});

test("PURGE counts against the admin request rate", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"), ["--max-admin-requests-per-second", "1"]);
  const socket = await rawConnect(broker.port);
  socket.write(frame((w) => encodeCreateTopicRequest(w, 1, { name: "t", configJson: "{}" })));
  // The burst is 10 seconds' worth: 9 more admin requests pass, the 11th is refused.
  for (let id = 2; id <= 11; id++) socket.write(purge(id, "t", [{ partition: 0, beforeOffset: 0 }]));
  const answers = await waitForResponses(socket, 11);
  expect(answers.slice(0, 10).every((a) => a.errorCode === NONE)).toBe(true);
  expect(answers[10]!.errorCode).toBe(LIMIT_EXCEEDED);
  expect(answers[10]!.message).toMatch(/^too many admin requests \(.*PURGE.*\) from 127\.0\.0\.1/);
  socket.close();
});

test("kill -9 right after a purge was acknowledged: the start does not go back", async () => {
  using dir = tempDir();
  for (const durability of ["append", "force"]) {
    const data = dir.file(`data-${durability}`);
    let broker = await startBroker(data);
    let client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await client.createTopic("t", { segmentBytes: 1024, durability });
    await fill(client, "t", 0, 60);
    const [purged] = await client.purge("t", [{ partition: 0, beforeOffset: 33 }]);
    expect(purged!.logStartOffset).toBe(33);
    // The acknowledgement arrived: kill at once, no clean shutdown.
    broker.process.kill("SIGKILL");
    await broker.process.exited;
    client.close();
    broker = await startBroker(data);
    try {
      client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      expect(await client.listOffsets("t", 0)).toEqual({ logStartOffset: 33, nextOffset: 60 });
      await expect(client.fetch("t", 0, 32)).rejects.toMatchObject({ code: "OFFSET_OUT_OF_RANGE" });
      client.close();
    } finally {
      await broker.stop("SIGKILL");
    }
  }
});
