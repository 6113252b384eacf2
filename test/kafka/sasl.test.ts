/**
 * SASL on the Kafka listener (SaslHandshake 17, SaslAuthenticate 36) through a real broker process
 * with a users file, and real clients: kcat (librdkafka) with SCRAM-SHA-256 and SCRAM-SHA-512 over
 * SASL_PLAINTEXT and PLAIN over SASL_SSL with certificates made by openssl; kafkajs with
 * scram-sha-256 and scram-sha-512. A wrong password and an unknown user are refused with the same
 * reason, and audited; a request before the login closes the connection (audited); PLAIN is not
 * offered without TLS. In raw frames: an unknown mechanism (33 with the list), a request before the
 * login, SaslAuthenticate before the handshake, oversized and truncated messages, and a recorded
 * SCRAM client-final replayed on a new exchange are each refused and end the connection.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ScramClient } from "../../src/auth/scram.ts";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { Random, testSeed } from "../helpers/random.ts";
import { type RawSocket, rawConnect } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates } from "../helpers/tls-certs.ts";
import { Expect } from "./bytes.ts";

setDefaultTimeout(60_000);

function usersFile(file: string): string {
  const users = readUsersFileOrEmpty(file);
  setUser(users, "alice", "correct horse");
  writeUsersFile(file, users);
  return file;
}

async function kafkaPortOf(broker: BrokerProcess): Promise<{ port: number; line: string }> {
  const first = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  const line = await broker.lines.waitFor((l) => l.includes("Kafka clients must use"), "the security line");
  return { port: Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(first)?.[1]), line };
}

async function kcat(port: number, args: string[], input?: string) {
  const child = Bun.spawn(["kcat", "-b", `127.0.0.1:${port}`, ...args], {
    stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, exitCode };
}

const scram = (mechanism: string, user: string, password: string) => [
  "-X",
  "security.protocol=SASL_PLAINTEXT",
  "-X",
  `sasl.mechanisms=${mechanism}`,
  "-X",
  `sasl.username=${user}`,
  "-X",
  `sasl.password=${password}`,
];

describe("SASL on the Kafka listener", () => {
  test("kcat logs in with SCRAM-SHA-256 and -512, produces and consumes; a wrong password and an unknown user get the same refusal, audited", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--kafka-port",
      "0",
    ]);
    const { port, line } = await kafkaPortOf(broker);
    expect(line).toBe(
      "booblik: Kafka clients must use security.protocol=SASL_PLAINTEXT with sasl.mechanism SCRAM-SHA-256, SCRAM-SHA-512",
    );
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${port}`],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism: "scram-sha-256", username: "alice", password: "correct horse" },
    });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "orders", numPartitions: 1 }] });
    await admin.disconnect();
    const produced = await kcat(
      port,
      [...scram("SCRAM-SHA-256", "alice", "correct horse"), "-P", "-t", "orders", "-p", "0"],
      "one\ntwo\n",
    );
    expect(produced.stderr).toBe("");
    expect(produced.exitCode).toBe(0);
    const consumed = await kcat(port, [
      ...scram("SCRAM-SHA-512", "alice", "correct horse"),
      "-C",
      "-t",
      "orders",
      "-p",
      "0",
      "-o",
      "beginning",
      "-e",
      "-q",
    ]);
    expect(consumed.exitCode).toBe(0);
    expect(consumed.stdout).toBe("one\ntwo\n");
    await broker.lines.waitFor(
      (l) => l.includes('audit: user "alice"') && l.includes("logged in (SASL SCRAM-SHA-512)"),
      "the login audit line",
    );

    // kcat retries a failed login until its metadata timeout: one attempt of each is enough here.
    for (const [user, password] of [
      ["alice", "wrong"],
      ["mallory", "anything"],
    ] as const) {
      const refused = await kcat(port, [...scram("SCRAM-SHA-256", user, password), "-L", "-m", "1"]);
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toContain(
        "Authentication failed: authentication failed: unknown user or wrong password",
      );
    }
    const audit = await broker.lines.waitFor(
      (l) => l.includes("(kafka): SASL authentication failed"),
      "a failure audit line",
    );
    expect(audit).toContain("unknown user or wrong password");
  });

  test("kafkajs logs in with scram-sha-256 and scram-sha-512; a wrong password is SASL_AUTHENTICATION_FAILED; a client without SASL gets nothing", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--kafka-port",
      "0",
    ]);
    const { port } = await kafkaPortOf(broker);
    for (const sasl of [
      { mechanism: "scram-sha-256", username: "alice", password: "correct horse" } as const,
      { mechanism: "scram-sha-512", username: "alice", password: "correct horse" } as const,
    ]) {
      const mechanism = sasl.mechanism;
      const kafka = new Kafka({ brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING, sasl });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: `t-${mechanism}`, numPartitions: 1 }] });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: `t-${mechanism}`, messages: [{ value: "hello" }] });
      await producer.disconnect();
      const offsets = await admin.fetchTopicOffsets(`t-${mechanism}`);
      expect(offsets[0]?.high).toBe("1");
      await admin.disconnect();
    }
    const wrong = new Kafka({
      brokers: [`127.0.0.1:${port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      sasl: { mechanism: "scram-sha-256", username: "alice", password: "wrong" },
    }).admin();
    await expect(wrong.connect()).rejects.toThrow(
      /SASL SCRAM SHA256 authentication failed|Authentication failed/,
    );
    const anonymous = new Kafka({
      brokers: [`127.0.0.1:${port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      connectionTimeout: 2000,
      requestTimeout: 2000,
    }).admin();
    await expect(anonymous.connect().then(() => anonymous.listTopics())).rejects.toThrow();
    await anonymous.disconnect();
    await broker.lines.waitFor(
      (l) => l.includes("before SASL authentication refused"),
      "the refusal audit line",
    );
  });

  test("one address's logins are checked one at a time while it is held: parallel kafkajs guesses wait for each other's delays, and so does the right password", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--kafka-port",
      "0",
    ]);
    const { port } = await kafkaPortOf(broker);
    const login = async (password: string) => {
      const admin = new Kafka({
        brokers: [`127.0.0.1:${port}`],
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
        sasl: { mechanism: "scram-sha-256", username: "alice", password },
      }).admin();
      try {
        await admin.connect();
        return "logged in";
      } catch (error) {
        return /SASL SCRAM SHA256 authentication failed|Authentication failed/.test(String(error))
          ? "refused"
          : String(error);
      } finally {
        await admin.disconnect();
      }
    };
    expect(await login("guess 1")).toBe("refused");
    // Checked one after another after delays of 200, 400 and 800 ms: the last answer at least 1,400
    // ms after they began (before 2026-12-03: each after its own delay, all within about 800 ms).
    const began = performance.now();
    const parallel = await Promise.all(
      ["guess 2", "guess 3", "guess 4"].map((password) =>
        login(password).then((outcome) => ({ outcome, ms: performance.now() - began })),
      ),
    );
    expect(parallel.map((p) => p.outcome)).toEqual(["refused", "refused", "refused"]);
    expect(Math.max(...parallel.map((p) => p.ms))).toBeGreaterThanOrEqual(1_390);
    // Failure 5 holds the address for 1,600 ms from its check, which comes after `fifthSent`.
    const fifthSent = performance.now();
    const fifth = login("guess 5");
    let failuresLogged = 0;
    await broker.lines.waitFor((line) => {
      if (line.includes("(kafka): SASL authentication failed")) failuresLogged++; // the audit line
      return failuresLogged >= 5;
    }, "the fifth failure's audit line");
    expect(await login("correct horse")).toBe("logged in");
    expect(performance.now() - fifthSent).toBeGreaterThanOrEqual(1_590);
    expect(await fifth).toBe("refused");
  });

  test("PLAIN over SASL_SSL with kcat; PLAIN is not offered without TLS", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    const file = usersFile(dir.file("users.json"));
    await using tlsBroker = await startBroker(dir.file("data"), [
      "--users-file",
      file,
      "--kafka-port",
      "0",
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
    ]);
    const { port, line } = await kafkaPortOf(tlsBroker);
    expect(line).toBe(
      "booblik: Kafka clients must use security.protocol=SASL_SSL with sasl.mechanism SCRAM-SHA-256, SCRAM-SHA-512, PLAIN",
    );
    const sslArgs = (mechanism: string, password: string) => [
      "-X",
      "security.protocol=SASL_SSL",
      "-X",
      `ssl.ca.location=${certs.caFile}`,
      "-X",
      `sasl.mechanisms=${mechanism}`,
      "-X",
      "sasl.username=alice",
      "-X",
      `sasl.password=${password}`,
    ];
    const listed = await kcat(port, [...sslArgs("PLAIN", "correct horse"), "-L"]);
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout).toContain("1 brokers");
    const scramOverTls = await kcat(port, [...sslArgs("SCRAM-SHA-256", "correct horse"), "-L"]);
    expect(scramOverTls.exitCode).toBe(0);
    const wrong = await kcat(port, [...sslArgs("PLAIN", "wrong"), "-L", "-m", "1"]);
    expect(wrong.exitCode).not.toBe(0);
    expect(wrong.stderr).toContain("Authentication failed");
    await tlsBroker.stop();

    await using plainBroker = await startBroker(dir.file("data"), [
      "--users-file",
      file,
      "--kafka-port",
      "0",
    ]);
    const plainPort = (await kafkaPortOf(plainBroker)).port;
    const refused = await kcat(plainPort, [...scram("PLAIN", "alice", "correct horse"), "-L", "-m", "1"]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(/PLAIN.*not supported|Unsupported SASL mechanism/i);
  });
});

const handshake = (id: number, mechanism: string) =>
  new Expect().i16(17).i16(1).i32(id).str("raw").str(mechanism).frame();
function authenticate(id: number, bytes: Uint8Array | string): Uint8Array {
  const body = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  return new Expect().i16(36).i16(1).i32(id).str("raw").i32(body.length).raw(body).frame();
}

/** Reads the next whole response frame at `from`; returns its body (after the correlation id) and the next position. */
async function nextResponse(
  socket: RawSocket,
  from: number,
): Promise<{ correlationId: number; body: DataView; bytes: Uint8Array; next: number }> {
  const head = await socket.waitForBytes(from + 4);
  const size = new DataView(head.buffer, head.byteOffset).getInt32(from);
  const all = await socket.waitForBytes(from + 4 + size);
  const bytes = all.subarray(from + 8, from + 4 + size);
  const view = new DataView(all.buffer, all.byteOffset + from + 4, size);
  return {
    correlationId: view.getInt32(0),
    body: new DataView(bytes.buffer, bytes.byteOffset, bytes.length),
    bytes,
    next: from + 4 + size,
  };
}

/** SaslAuthenticate v1 response: error_code, error_message, auth_bytes, session_lifetime_ms. */
function readAuthenticate(body: DataView): { errorCode: number; message: string | null; authBytes: string } {
  const errorCode = body.getInt16(0);
  const messageLength = body.getInt16(2);
  let at = 4;
  const message =
    messageLength < 0
      ? null
      : new TextDecoder().decode(new Uint8Array(body.buffer, body.byteOffset + at, messageLength));
  at += Math.max(messageLength, 0);
  const authLength = body.getInt32(at);
  const authBytes = new TextDecoder().decode(
    new Uint8Array(body.buffer, body.byteOffset + at + 4, Math.max(authLength, 0)),
  );
  return { errorCode, message, authBytes };
}

describe("SASL exchanges in raw frames", () => {
  test("unknown mechanism, a request before the login, SaslAuthenticate before the handshake, oversized and truncated messages, a replayed SCRAM final", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--kafka-port",
      "0",
    ]);
    const { port } = await kafkaPortOf(broker);

    // An unknown mechanism: UNSUPPORTED_SASL_MECHANISM (33) with the list, then the end.
    let socket = await rawConnect(port);
    socket.write(handshake(1, "GSSAPI"));
    let response = await nextResponse(socket, 0);
    expect(response.correlationId).toBe(1);
    expect(response.body.getInt16(0)).toBe(33);
    expect(new TextDecoder().decode(response.bytes)).toContain("SCRAM-SHA-512");
    await socket.closed;

    // Metadata before the login: closed without an answer.
    socket = await rawConnect(port);
    socket.write(new Expect().i16(3).i16(1).i32(2).str("raw").i32(-1).frame());
    await socket.closed;
    expect(socket.received().length).toBe(0);
    await broker.lines.waitFor(
      (l) => l.includes("request (API key 3) before SASL authentication refused"),
      "the audit line",
    );

    // SaslAuthenticate before SaslHandshake: SASL_AUTHENTICATION_FAILED (58), then the end.
    socket = await rawConnect(port);
    socket.write(authenticate(3, "n,,n=alice,r=abc"));
    response = await nextResponse(socket, 0);
    expect(readAuthenticate(response.body)).toMatchObject({
      errorCode: 58,
      message: "Authentication failed: SaslAuthenticate before SaslHandshake",
    });
    await socket.closed;

    // An oversized SCRAM message: 58, then the end.
    socket = await rawConnect(port);
    socket.write(handshake(4, "SCRAM-SHA-256"));
    response = await nextResponse(socket, 0);
    expect(response.body.getInt16(0)).toBe(0);
    socket.write(authenticate(5, `n,,n=alice,r=${"x".repeat(5000)}`));
    const oversized = await nextResponse(socket, response.next);
    expect(readAuthenticate(oversized.body)).toMatchObject({
      errorCode: 58,
      message: "Authentication failed: a SCRAM message of 5013 bytes is too long",
    });
    await socket.closed;

    // A truncated SaslHandshake (its string claims more bytes than the frame has): closed.
    socket = await rawConnect(port);
    socket.write(new Expect().i16(17).i16(1).i32(6).str("raw").i16(40).raw([65, 66]).frame());
    await socket.closed;
    expect(socket.received().length).toBe(0);

    // A recorded client-final replayed on a new exchange: the server nonce differs, so it fails.
    const record = async () => {
      const s = await rawConnect(port);
      const client = new ScramClient("SCRAM-SHA-256", "alice", "correct horse");
      s.write(handshake(7, "SCRAM-SHA-256"));
      const first = await nextResponse(s, 0);
      s.write(authenticate(8, client.first()));
      const serverFirst = await nextResponse(s, first.next);
      return {
        socket: s,
        client,
        serverFirst: readAuthenticate(serverFirst.body).authBytes,
        at: serverFirst.next,
      };
    };
    const original = await record();
    const recordedFinal = original.client.final(original.serverFirst);
    original.socket.write(authenticate(9, recordedFinal));
    const ok = await nextResponse(original.socket, original.at);
    expect(readAuthenticate(ok.body).errorCode).toBe(0);
    original.client.verify(readAuthenticate(ok.body).authBytes);
    original.socket.close();
    const replay = await record();
    replay.socket.write(authenticate(10, recordedFinal));
    const refused = await nextResponse(replay.socket, replay.at);
    expect(readAuthenticate(refused.body)).toMatchObject({
      errorCode: 58,
      message: "Authentication failed: SCRAM nonce does not match",
    });
    await replay.socket.closed;
  });
});

test("a PLAIN login's password check runs off the event loop: another connection is answered meanwhile", async () => {
  using dir = tempDir();
  const file = dir.file("users.json");
  const users = readUsersFileOrEmpty(file);
  // About a second of PBKDF2 for the broker (both mechanisms), so the check is long enough to see.
  setUser(users, "slow", "correct horse", undefined, 1_000_000);
  writeUsersFile(file, users);
  await using broker = await startBroker(dir.file("data"), [
    "--users-file",
    file,
    "--kafka-port",
    "0",
    "--sasl-plain-without-tls",
    "yes",
  ]);
  const { port } = await kafkaPortOf(broker);
  const login = await rawConnect(port);
  login.write(handshake(1, "PLAIN"));
  let at = (await nextResponse(login, 0)).next;
  const other = await rawConnect(port);
  const apiVersions = (id: number) => new Expect().i16(18).i16(0).i32(id).str("raw").frame();
  let otherAt = 0;
  let loginAnswered = false;
  login.write(authenticate(2, "\u0000slow\u0000correct horse"));
  const answer = nextResponse(login, at).then((response) => {
    loginAnswered = true;
    return response;
  });
  // ApiVersions round trips on the other connection (served before a login) while the check runs.
  // When the check ran on the event loop (before), the broker read nothing else until it ended: the
  // round trips that finished before the login's answer were the one or two it read first.
  let whileChecking = 0;
  for (let id = 1; !loginAnswered; id++) {
    other.write(apiVersions(id));
    const response = await nextResponse(other, otherAt);
    expect(response.correlationId).toBe(id);
    otherAt = response.next;
    if (!loginAnswered) whileChecking++;
  }
  expect(whileChecking).toBeGreaterThanOrEqual(20);
  const loggedIn = await answer;
  expect(readAuthenticate(loggedIn.body).errorCode).toBe(0);
  at = loggedIn.next;
  await broker.lines.waitFor(
    (l) => l.includes('user "slow"') && l.includes("logged in (SASL PLAIN)"),
    "the audit line",
  );
  expect(await broker.stop()).toBe(0);
});

test("seeded fuzzer: mutated SASL exchanges, closed early, never crash the broker; a real login works afterwards", async () => {
  const seed = testSeed();
  const random = new Random(seed);
  using dir = tempDir();
  await using broker = await startBroker(dir.file("data"), [
    "--users-file",
    usersFile(dir.file("users.json")),
    "--kafka-port",
    "0",
  ]);
  const { port } = await kafkaPortOf(broker);
  const mutate = (frame: Uint8Array): Uint8Array => {
    const body = frame.slice(4);
    const kind = random.int(0, 3);
    if (kind === 0) return frame; // as it was
    if (kind === 1) {
      for (let flips = random.int(1, 4); flips > 0; flips--)
        body[random.int(0, body.length - 1)] = random.int(0, 255);
    } else if (kind === 2) {
      return new Expect().raw(body.subarray(0, random.int(0, body.length))).frame(); // truncated
    } else {
      return new Expect().raw([...body, ...random.bytes(random.int(1, 64))]).frame(); // trailing bytes
    }
    return new Expect().raw(body).frame();
  };
  const mechanisms = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "NOPE"];
  for (let round = 0; round < 120; round++) {
    const socket = await rawConnect(port);
    const client = new ScramClient("SCRAM-SHA-256", random.int(0, 1) === 0 ? "alice" : "mallory", "guess");
    const frames = [
      handshake(1, mechanisms[random.int(0, mechanisms.length - 1)]!),
      authenticate(2, client.first()),
      authenticate(3, `c=biws,r=${"r".repeat(random.int(0, 40))},p=${"p".repeat(random.int(0, 60))}`),
    ].map(mutate);
    for (const frame of frames.slice(0, random.int(1, frames.length))) socket.write(frame);
    // Closed at once: a failure's answer is delayed (100 ms doubling to 5 s per address), and it
    // must then find the connection gone without harm. Waiting for each would take minutes.
    socket.close();
    if (broker.process.exitCode !== null)
      throw new Error(`seed ${seed}: the broker exited in round ${round}`);
  }
  // Not every round reaches SCRAM's final step: a connection the client closed is not read further
  // (its later frames are dropped), and a failure holds the connection for the address's delay.
  // The raw-frames test above covers each refusal deterministically; this one covers the broker's
  // survival of mutated exchanges and of delayed failure answers to connections already gone.
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${port}`],
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "scram-sha-512", username: "alice", password: "correct horse" },
  });
  const admin = kafka.admin();
  await admin.connect();
  expect(await admin.listTopics()).toEqual([]);
  await admin.disconnect();
  expect(await broker.stop()).toBe(0);
});
