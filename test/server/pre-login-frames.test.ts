/**
 * On a broker with users, a connection that has not logged in may send frames of at most
 * PRE_LOGIN_FRAME_BYTES_MAX (64 KiB) on both listeners: a larger announced size closes it at once
 * with the reason, before any of the frame is buffered, so connections that never log in take
 * nothing of the shared inbound budget. Before, 17 of them announcing 16 MiB frames reserved the
 * whole 256 MiB budget and a logged-in user's 900 KB produce waited 42 s (a security helper's run,
 * 2026-12-03). Logged in, the usual maximum frame applies. Broker child process, real sockets.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { PRE_LOGIN_FRAME_BYTES_MAX } from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { rawConnect, responses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

/** The first bytes of a frame announcing `size` bytes: the size and a few bytes of header. */
function announced(size: number): Uint8Array {
  const bytes = new Uint8Array(16);
  new DataView(bytes.buffer).setInt32(0, size, false);
  return bytes;
}

test("before a login, a frame above 64 KiB closes the connection on both listeners; after it, 300 KB requests are served", async () => {
  using dir = tempDir();
  const usersFile = dir.file("users.json");
  const users = readUsersFileOrEmpty(usersFile);
  setUser(users, "alice", "alice secret");
  writeUsersFile(usersFile, users);
  await using broker = await startBroker(dir.file("data"), ["--users-file", usersFile, "--kafka-port", "0"]);
  const kafkaPort = await kafkaPortOf(broker);
  const size = PRE_LOGIN_FRAME_BYTES_MAX + 1;

  const native = await rawConnect(broker.port);
  native.write(announced(size));
  await native.closed;
  const [refusal] = responses(native.received());
  expect(refusal?.message).toBe(
    `frame size ${size} exceeds the ${PRE_LOGIN_FRAME_BYTES_MAX} bytes allowed before a login`,
  );

  const kafka = await rawConnect(kafkaPort);
  kafka.write(announced(size));
  await kafka.closed;
  await broker.lines.waitFor(
    (line) =>
      line.includes(
        `request frame of ${size} bytes is larger than the ${PRE_LOGIN_FRAME_BYTES_MAX} bytes allowed before a SASL login`,
      ),
    "the Kafka listener's reason",
  );

  // Logged in: a 300 KB value on each protocol.
  const value = "v".repeat(300_000);
  const client = await BooblikClient.connect({
    host: "127.0.0.1",
    port: broker.port,
    retries: 0,
    user: "alice",
    password: "alice secret",
  });
  try {
    await client.createTopic("big");
    await client.produce("big", 0, batchOfValues([value]));
  } finally {
    client.close();
  }
  const producer = new Kafka({
    brokers: [`127.0.0.1:${kafkaPort}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    sasl: { mechanism: "scram-sha-256", username: "alice", password: "alice secret" },
  }).producer();
  await producer.connect();
  try {
    const [sent] = await producer.send({ topic: "big", messages: [{ value }] });
    expect(sent?.baseOffset).toBe("1");
  } finally {
    await producer.disconnect();
  }
});
