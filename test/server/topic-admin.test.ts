/**
 * ALTER_TOPIC (12) and ADD_PARTITIONS (13) through a real broker process: raw sockets for the bytes
 * and every error (bad key, bad value, a setting that cannot change, fewer partitions, an unknown
 * topic, the partition limit, a payload that does not decode, another version), the audit lines,
 * the admin rate limit counting them, and the client's alterTopic / addPartitions.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API } from "../../src/protocol/frame.ts";
import { beginRequest, encodeCreateTopicRequest, endFrame } from "../../src/protocol/messages.ts";
import {
  decodeAlterTopicResponse,
  encodeAddPartitionsRequest,
  encodeAlterTopicRequest,
} from "../../src/protocol/topic-admin.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { frame, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const {
  NONE,
  INVALID_CONFIG,
  UNKNOWN_TOPIC_OR_PARTITION,
  LIMIT_EXCEEDED,
  INVALID_REQUEST,
  UNSUPPORTED_VERSION,
} = WIRE_ERROR_CODES;

const alter = (id: number, name: string, changesJson: string) =>
  frame((w) => encodeAlterTopicRequest(w, id, { name, changesJson }));
const add = (id: number, name: string, partitions: number) =>
  frame((w) => encodeAddPartitionsRequest(w, id, { name, partitions }));

test("ALTER_TOPIC: the bytes, the new settings in the answer, and every refusal", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"));
  const socket = await rawConnect(broker.port);
  socket.write(
    frame((w) => encodeCreateTopicRequest(w, 1, { name: "t", configJson: '{"segmentBytes":4096}' })),
  );
  // The request byte by byte as docs/protocol.md gives it: size, apiKey 12, version 0, id, name, changes.
  const changes = '{"retentionMs":60000}';
  const bytes = alter(2, "t", changes);
  expect([...bytes.subarray(0, 15)]).toEqual([
    0,
    0,
    0,
    8 + 3 + 2 + changes.length,
    0,
    12,
    0,
    0,
    0,
    0,
    0,
    2,
    0,
    1,
    "t".charCodeAt(0),
  ]);
  socket.write(bytes);
  socket.write(alter(3, "t", '{"colour":"blue"}'));
  socket.write(alter(4, "t", '{"durability":"sometimes"}'));
  socket.write(alter(5, "t", '{"segmentBytes":8192}'));
  socket.write(alter(6, "t", '{"maxRecordBytes":100000}'));
  socket.write(alter(7, "nope", '{"retentionMs":1}'));
  socket.write(alter(8, "t", "[1]"));
  socket.write(alter(9, "t", "{not json"));
  const answers = await waitForResponses(socket, 9);
  expect(answers.map((a) => [a.correlationId, a.errorCode])).toEqual([
    [1, NONE],
    [2, NONE],
    [3, INVALID_CONFIG],
    [4, INVALID_CONFIG],
    [5, INVALID_CONFIG],
    [6, INVALID_CONFIG],
    [7, UNKNOWN_TOPIC_OR_PARTITION],
    [8, INVALID_CONFIG],
    [9, INVALID_CONFIG],
  ]);
  const config = JSON.parse(decodeAlterTopicResponse(answers[1]!.body)) as Record<string, unknown>;
  expect(config).toMatchObject({ retentionMs: 60_000, segmentBytes: 4096, partitions: 1 });
  expect(answers[2]!.message).toMatch(/unknown topic setting "colour"/);
  expect(answers[3]!.message).toMatch(/durability must be one of append, force, interval, got "sometimes"/);
  expect(answers[4]!.message).toMatch(/segmentBytes cannot change on an existing topic/);
  expect(answers[5]!.message).toMatch(/maxRecordBytes must be an integer in \[\d+, 4056\]/);
  expect(answers[7]!.message).toBe("topic changes must be a JSON object");
  expect(answers[8]!.message).toMatch(/^topic changes are not JSON/);
  await broker.lines.waitFor((line) => line.includes('altered topic "t": {"retentionMs":60000}'), "audit");
  await broker.lines.waitFor(
    (line) => line.includes('alter topic "t" refused: segmentBytes cannot change'),
    "refusal audit",
  );

  // A payload that does not decode, and a version the broker does not speak; the connection stays.
  const truncated = frame((w) => {
    const start = beginRequest(w, API.ALTER_TOPIC, 10);
    w.string("t");
    endFrame(w, start);
  });
  socket.write(truncated);
  socket.write(
    frame((w) => {
      const start = beginRequest(w, API.ALTER_TOPIC, 11, 1);
      w.string("t").string("{}");
      endFrame(w, start);
    }),
  );
  socket.write(alter(12, "t", '{"retentionMs":null}'));
  const later = await waitForResponses(socket, 12);
  expect(later.slice(9).map((a) => [a.correlationId, a.errorCode])).toEqual([
    [10, INVALID_REQUEST],
    [11, UNSUPPORTED_VERSION],
    [12, NONE],
  ]);
  expect(later[10]!.message).toBe("ALTER_TOPIC version 1 is not supported (this broker speaks version 0)");
  socket.close();
});

test("ADD_PARTITIONS: the bytes, fewer partitions, an unknown topic, the partition limit", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"), ["--max-partitions", "4"]);
  const socket = await rawConnect(broker.port);
  socket.write(frame((w) => encodeCreateTopicRequest(w, 1, { name: "p", configJson: '{"partitions":2}' })));
  const bytes = add(2, "p", 3);
  expect([...bytes]).toEqual([0, 0, 0, 15, 0, 13, 0, 0, 0, 0, 0, 2, 0, 1, "p".charCodeAt(0), 0, 0, 0, 3]);
  socket.write(bytes);
  socket.write(add(3, "p", 3));
  socket.write(add(4, "p", 1));
  socket.write(add(5, "missing", 9));
  socket.write(add(6, "p", 5));
  const answers = await waitForResponses(socket, 6);
  expect(answers.map((a) => [a.correlationId, a.errorCode])).toEqual([
    [1, NONE],
    [2, NONE],
    [3, INVALID_CONFIG],
    [4, INVALID_CONFIG],
    [5, UNKNOWN_TOPIC_OR_PARTITION],
    [6, LIMIT_EXCEEDED],
  ]);
  expect(answers[2]!.message).toBe('partitions can only increase: topic "p" has 3, got 3');
  expect(answers[5]!.message).toBe(
    'cannot add partitions to topic "p": 2 more partitions would make 5, above the limit of 4 (--max-partitions)',
  );
  // Not retriable: only the rate refusal is.
  expect(answers[5]!.body.u8("flags") & 1).toBe(0);
  await broker.lines.waitFor((line) => line.includes('added partitions to topic "p": 2 → 3'), "audit");
  socket.close();

  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.addPartitions("p", 4);
    const metadata = await client.metadata(["p"]);
    expect(metadata.topics[0]!.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3]);
    const config = await client.alterTopic("p", { durability: "append", retentionBytes: 1_000_000 });
    expect(config).toMatchObject({ durability: "append", retentionBytes: 1_000_000, partitions: 4 });
    await expect(client.alterTopic("p", { writeMode: "mapped" })).rejects.toThrow(/writeMode cannot change/);
  } finally {
    client.close();
  }
});

test("ALTER_TOPIC and ADD_PARTITIONS count against the admin request rate", async () => {
  using dir = tempDir();
  // 1 a second: a burst of 10, spent by the create, 5 alters and 4 adds. The 10 alters after them
  // may only get the tokens that refilled meanwhile (one a second: more than one on a loaded
  // machine, where an exact "the 11th is refused" failed), so at least one of them is refused.
  await using broker = await startBroker(dir.file("data"), ["--max-admin-requests-per-second", "1"]);
  const socket = await rawConnect(broker.port);
  const startedMs = performance.now();
  socket.write(frame((w) => encodeCreateTopicRequest(w, 1, { name: "r", configJson: "{}" })));
  for (let i = 0; i < 5; i++) socket.write(alter(2 + i, "r", '{"retentionMs":1000}'));
  for (let i = 0; i < 4; i++) socket.write(add(7 + i, "r", 2 + i));
  for (let i = 0; i < 10; i++) socket.write(alter(11 + i, "r", '{"retentionMs":2000}'));
  const answers = await waitForResponses(socket, 20);
  const elapsedSeconds = (performance.now() - startedMs) / 1000;
  expect(answers.slice(0, 10).every((a) => a.errorCode === NONE)).toBe(true);
  const later = answers.slice(10);
  const refused = later.filter((a) => a.errorCode === LIMIT_EXCEEDED);
  expect(refused.length).toBeGreaterThan(0);
  expect(later.length - refused.length).toBeLessThanOrEqual(Math.ceil(elapsedSeconds));
  for (const answer of refused)
    expect(answer.message).toMatch(
      /^too many admin requests \(CREATE_TOPIC, DELETE_TOPIC, ALTER_TOPIC, ADD_PARTITIONS, PURGE, CREATE_ACLS, DELETE_ACLS\)/,
    );
  socket.close();
});
