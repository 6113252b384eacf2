/**
 * The admin request rate (src/server/admin-rate.ts) through a real broker process and raw sockets:
 * pipelined CREATE_TOPIC and DELETE_TOPIC beyond an address's burst are refused with a retriable
 * LIMIT_EXCEEDED that names the limit and when to retry, whatever they asked (even a create of an
 * existing topic counts: the broker answered it); the allowance is the address's, not the
 * connection's; another address has its own; other requests are not limited; once the allowance
 * refills a request succeeds again; a bad value of the flag stops the start.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import net from "node:net";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import {
  encodeCreateTopicRequest,
  encodeDeleteTopicRequest,
  encodeListOffsetsRequest,
} from "../../src/protocol/messages.ts";
import { runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { frame, rawConnect, responses, waitForResponses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

const { NONE, TOPIC_EXISTS, LIMIT_EXCEEDED, UNKNOWN_TOPIC_OR_PARTITION } = WIRE_ERROR_CODES;

const create = (id: number, name: string) =>
  frame((w) => encodeCreateTopicRequest(w, id, { name, configJson: "{}" }));
const remove = (id: number, name: string) => frame((w) => encodeDeleteTopicRequest(w, id, { name }));

/** One request from another loopback address (127.0.0.2), through node:net, which can bind one. */
async function fromOtherAddress(port: number, request: Uint8Array): Promise<number> {
  const socket = net.connect({ host: "127.0.0.1", port, localAddress: "127.0.0.2" });
  try {
    const chunks: Buffer[] = [];
    socket.write(request);
    return await new Promise<number>((resolve, reject) => {
      socket.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        const [answer] = responses(new Uint8Array(Buffer.concat(chunks)));
        if (answer !== undefined) resolve(answer.errorCode);
      });
      socket.on("error", reject);
      socket.on("close", () => reject(new Error("closed before an answer")));
    });
  } finally {
    socket.destroy();
  }
}

test("admin requests beyond an address's burst get a retriable LIMIT_EXCEEDED; the allowance refills", async () => {
  using dir = tempDir();
  // 2 a second: a burst of 20 (10 seconds' worth).
  await using broker = await startBroker(dir.file("data"), ["--max-admin-requests-per-second", "2"]);
  expect(broker.startLine).toContain("listening on");
  const first = await rawConnect(broker.port);
  // 21 creates of one name, pipelined in one write: one creates it, 19 find it exists, one is refused.
  const burst = new Uint8Array(21 * create(0, "t").length);
  for (let i = 0; i < 21; i++) burst.set(create(i + 1, "t"), i * create(0, "t").length);
  first.write(burst);
  const answers = await waitForResponses(first, 21);
  expect(answers.map((a) => a.correlationId)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  expect(answers[0]!.errorCode).toBe(NONE);
  for (const answer of answers.slice(1, 20)) expect(answer.errorCode).toBe(TOPIC_EXISTS);
  const refused = answers[20]!;
  expect(refused.errorCode).toBe(LIMIT_EXCEEDED);
  expect(refused.message).toMatch(
    /^too many admin requests \(CREATE_TOPIC, DELETE_TOPIC, ALTER_TOPIC, ADD_PARTITIONS, PURGE, CREATE_ACLS, DELETE_ACLS\) from 127\.0\.0\.1: the limit is 2 a second after a burst of 20 \(--max-admin-requests-per-second\); retry in \d+ ms$/,
  );
  // The retriable flag is bit 0 of the error body's first byte.
  expect(refused.body.u8("flags") & 1).toBe(1);

  // The allowance is the address's: a new connection from it is refused too, for a delete as well,
  // while other requests go on.
  const second = await rawConnect(broker.port);
  second.write(remove(1, "t"));
  second.write(frame((w) => encodeListOffsetsRequest(w, 2, { topic: "t", partition: 0 })));
  const [deleteRefused, listed] = await waitForResponses(second, 2);
  expect(deleteRefused!.errorCode).toBe(LIMIT_EXCEEDED);
  expect(listed!.errorCode).toBe(NONE);
  // Another address has an allowance of its own.
  expect(await fromOtherAddress(broker.port, remove(1, "missing"))).toBe(UNKNOWN_TOPIC_OR_PARTITION);

  // Refused requests took nothing: once half a second has given a token back, a delete succeeds.
  let id = 10;
  let received = second.received().length;
  await waitUntil(
    async () => {
      second.write(remove(++id, "t"));
      const [answer] = await waitForResponses(second, 1, received);
      received = second.received().length;
      if (answer!.errorCode === LIMIT_EXCEEDED) return false;
      expect(answer!.errorCode).toBe(NONE);
      return true;
    },
    "the allowance to refill",
    5_000,
    50,
  );
  first.close();
  second.close();
});

test("a bad --max-admin-requests-per-second stops the start", async () => {
  using dir = tempDir();
  const started = await runBrokerExpectingFailure([
    "--data-dir",
    dir.file("data"),
    "--port",
    "0",
    "--max-admin-requests-per-second",
    "0",
  ]);
  expect(started.exitCode).toBe(1);
  expect(started.stderr).toContain('max admin requests per second must be an integer ≥ 1, got "0"');
});
