/**
 * Logins that wait for their address's hold (src/auth/login-delays.ts) on each listener, with a
 * clock the test moves (LoginDelays takes it), so that a hold lasts exactly until the test ends it:
 * - at most LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX of an address wait at once; one more is refused at
 *   once (native: a retriable LIMIT_EXCEEDED; Kafka: the connection closes); the console checks
 *   one at a time and queues at most CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX (one more: 429);
 * - a waiting login whose client went away (connection closed, request aborted) checks nothing
 *   when the hold ends: it neither counts as a failure nor holds the address again;
 * - the right password afterwards logs in.
 * Before 2026-12-03 every held login was checked when the hold ended, whoever still waited for it,
 * each failure holding the address again, and their number had no bound (a reviewer's runs).
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import net from "node:net";
import { LoginDelays } from "../../src/auth/login-delays.ts";
import { Broker } from "../../src/broker/broker.ts";
import { parseUsers, setUser } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { ConsoleAuth } from "../../src/console/console-auth.ts";
import {
  CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX,
  FETCH_RESPONSE_BYTES_MAX,
  LOGIN_CHECK_POLL_MS,
  LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX,
} from "../../src/domain/limits.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import { KafkaSasl } from "../../src/kafka/sasl.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { encodeAuthenticateRequest } from "../../src/protocol/messages.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import { BrokerServer } from "../../src/server/server.ts";
import { frame, type RawSocket, rawConnect, responses, waitForResponses } from "../helpers/raw-socket.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "../kafka/bytes.ts";

setDefaultTimeout(30_000);

const ADDRESS = "127.0.0.1";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function users() {
  const table = parseUsers(JSON.stringify({ version: 1, users: {} }), "test");
  setUser(table, "alice", "correct horse");
  return table;
}

/** LoginDelays on a clock that stands still until the test moves it. */
function heldDelays(): { delays: LoginDelays; clock: { nowMs: number } } {
  const clock = { nowMs: 0 };
  return { delays: new LoginDelays(() => clock.nowMs), clock };
}

function openBroker(): Broker {
  const dir: TempDir = tempDir("login-hold");
  const broker = Broker.open({ dataDir: dir.path });
  cleanups.push(() => dir[Symbol.dispose]());
  cleanups.push(() => broker.close());
  return broker;
}

/** A BrokerServer on port 0 with the test's users and `delays`, stopped after the test. */
function nativeServer(delays: LoginDelays, auditLog: (line: string) => void): BrokerServer {
  const server = new BrokerServer(openBroker(), {
    hostname: ADDRESS,
    port: 0,
    maxFrameBytes: 1 << 20,
    maxConnections: 100,
    maxConnectionsPerAddress: 100,
    idleTimeoutMs: 60_000,
    requestTimeoutMs: 30_000,
    maxInboundBytes: 1 << 26,
    fetchPath: "copy",
    maxFetchBytes: FETCH_RESPONSE_BYTES_MAX,
    users: users(),
    loginDelays: delays,
    auditLog,
  });
  cleanups.push(() => server.stop(1_000));
  return server;
}

/** A malformed first SCRAM step: checked, it fails at once. */
function badAuthenticate(socket: RawSocket): void {
  socket.write(
    frame((w) =>
      encodeAuthenticateRequest(w, 1, {
        mechanism: "SCRAM-SHA-256",
        authBytes: new TextEncoder().encode("x"),
      }),
    ),
  );
}

/**
 * A native server on held delays (heldDelays) with one failed login of ADDRESS (a malformed first
 * step): the address is held until the test moves the clock. `failed` counts the audited failures.
 */
async function heldNativeServer() {
  const { delays, clock } = heldDelays();
  const audit: string[] = [];
  const server = nativeServer(delays, (line) => audit.push(line));
  const { port } = server.listen();
  const failed = () => audit.filter((line) => line.includes("authentication failed")).length;
  badAuthenticate(await rawConnect(port));
  await waitUntil(() => failed() === 1, "the first failure");
  return { delays, clock, port, failed };
}

/** The right password logs in (the hold over). */
async function loginAsAlice(port: number): Promise<void> {
  const client = await BooblikClient.connect({
    host: ADDRESS,
    port,
    retries: 0,
    user: "alice",
    password: "correct horse",
  });
  client.close();
}

test("native listener: at most 16 logins of an address wait; those whose connections closed check nothing", async () => {
  const { delays, clock, port, failed } = await heldNativeServer();
  const waiting: RawSocket[] = [];
  for (let i = 0; i < LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX; i++) {
    const socket = await rawConnect(port);
    badAuthenticate(socket);
    waiting.push(socket);
  }
  await waitUntil(() => delays.waiters(ADDRESS) === LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX, "16 waiting logins");
  // One more is refused at once.
  const extra = await rawConnect(port);
  badAuthenticate(extra);
  const [refusal] = await waitForResponses(extra, 1);
  // Retriable: a place frees within the delay.
  expect(refusal).toMatchObject({ errorCode: WIRE_ERROR_CODES.LIMIT_EXCEEDED });
  expect(refusal!.message).toContain("are waiting for the delay after its failed ones");
  // Their clients go; then the hold ends: none of them is checked.
  for (const socket of waiting) socket.close();
  clock.nowMs = 60_000;
  await waitUntil(() => delays.waiters(ADDRESS) === 0, "the abandoned logins given up");
  expect(failed()).toBe(1);
  expect(delays.holdMs(ADDRESS)).toBe(0);
  await loginAsAlice(port);
});

test("native listener: logins whose clients closed normally (a FIN, not a reset) while they waited check nothing either", async () => {
  // Found by the login fuzzer (test/auth/fuzz-login.ts): clients that close the usual way (a FIN:
  // Node's destroy, Java's and Go's close) left their held logins in place; each was checked when
  // the hold ended, failed, and held the address again, for nobody: a right login of the address
  // waited behind up to 16 such checks (16 x 5 s) instead of one hold.
  const { delays, clock, port, failed } = await heldNativeServer();
  const waiting: RawSocket[] = [];
  for (let i = 0; i < 3; i++) {
    const socket = await rawConnect(port);
    badAuthenticate(socket);
    waiting.push(socket);
  }
  // And one that only half-closes (node:net, allowHalfOpen): it goes on reading.
  const halfClosed: Buffer[] = [];
  const reader = net.connect({ host: ADDRESS, port, allowHalfOpen: true });
  reader.on("data", (chunk: Buffer) => halfClosed.push(chunk));
  const readerClosed = new Promise<void>((resolve) => reader.on("close", () => resolve()));
  await new Promise<void>((resolve) => reader.once("connect", () => resolve()));
  reader.write(
    frame((w) =>
      encodeAuthenticateRequest(w, 1, {
        mechanism: "SCRAM-SHA-256",
        authBytes: new TextEncoder().encode("x"),
      }),
    ),
  );
  await waitUntil(() => delays.waiters(ADDRESS) === 4, "4 waiting logins");
  for (const socket of waiting) socket.end();
  reader.end();
  clock.nowMs = 60_000;
  // (A check that ran would fail and hold the address again on the standing clock: the others
  // would wait for good. So: until they are given up, or one of them was checked.)
  await waitUntil(() => delays.waiters(ADDRESS) === 0 || failed() > 1, "the abandoned logins given up");
  expect(failed()).toBe(1);
  expect(delays.holdMs(ADDRESS)).toBe(0);
  // A client that only half-closed still reads: it is told its login was not checked.
  await readerClosed;
  const [answer] = responses(Buffer.concat(halfClosed));
  expect(answer).toMatchObject({ errorCode: WIRE_ERROR_CODES.AUTHENTICATION_FAILED });
  expect(answer!.message).toContain("while this login waited: not checked");
  await loginAsAlice(port);
});

/** A Kafka request frame: size, api key, version, correlation id, client id "t", then `body`. */
function kafkaRequest(apiKey: number, version: number, body: (e: Expect) => Expect): Uint8Array {
  return body(new Expect().i16(apiKey).i16(version).i32(1).str("t")).frame();
}
const plainHandshake = () => kafkaRequest(17, 1, (e) => e.str("PLAIN"));
const plainLogin = (password: string) => {
  const message = new TextEncoder().encode(`\0alice\0${password}`);
  return kafkaRequest(36, 0, (e) => e.i32(message.length).raw(message));
};

/** A KafkaListener on port 0 with `sasl`, stopped after the test. */
function kafkaListener(sasl: KafkaSasl): KafkaListener {
  const listener = new KafkaListener(openBroker(), {
    hostname: ADDRESS,
    port: 0,
    maxFrameBytes: 1 << 20,
    maxConnections: 100,
    maxConnectionsPerAddress: 100,
    idleTimeoutMs: 60_000,
    requestTimeoutMs: 30_000,
    inboundBudget: new InboundBudget(1 << 24),
    sasl,
  });
  cleanups.push(() => listener.stop());
  return listener;
}

/** A PLAIN login on a new Kafka connection: the handshake, its answer, then SaslAuthenticate. */
async function kafkaLogin(port: number, password: string): Promise<RawSocket> {
  const socket = await rawConnect(port);
  socket.write(plainHandshake());
  await socket.waitForBytes(1);
  socket.write(plainLogin(password));
  return socket;
}

test("Kafka listener: at most 16 SaslAuthenticates of an address wait; those whose connections closed check nothing", async () => {
  const { delays, clock } = heldDelays();
  const failures: string[] = [];
  const sasl = new KafkaSasl({
    users,
    plain: true,
    loginDelays: delays,
    decoySecret: new Uint8Array(32),
    audit: (line) => {
      if (line.includes("SASL authentication failed")) failures.push(line);
    },
    counters: { authenticationFailures: 0 },
  });
  const listener = kafkaListener(sasl);
  const { port } = listener.listen();
  const first = await kafkaLogin(port, "wrong");
  await waitUntil(() => failures.length === 1, "the first failure");
  await first.closed;
  const waiting: RawSocket[] = [];
  for (let i = 0; i < LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX; i++)
    waiting.push(await kafkaLogin(port, `guess ${i}`));
  await waitUntil(() => delays.waiters(ADDRESS) === LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX, "16 waiting logins");
  const extra = await kafkaLogin(port, "guess 16");
  await extra.closed; // refused at once: the connection closes
  for (const socket of waiting) socket.close();
  clock.nowMs = 60_000;
  await waitUntil(() => delays.waiters(ADDRESS) === 0, "the abandoned logins given up");
  expect(failures).toHaveLength(1);
  // The right password logs in (its SaslAuthenticate answered with error 0, the connection open).
  const right = await kafkaLogin(port, "correct horse");
  await waitUntil(() => right.received().length >= 4 + 4 + 2, "the login's answer");
  expect(new DataView(right.received().buffer, right.received().byteOffset).getInt16(8)).toBe(0);
  expect(right.isClosed()).toBe(false);
  right.close();
});

test("console: at most 64 logins of an address queue for their check (one more: 429); those whose clients left check nothing", async () => {
  const { delays, clock } = heldDelays();
  let failures = 0;
  const auth = new ConsoleAuth({
    users,
    loginDelays: delays,
    audit: (line) => {
      if (line.includes("failed")) failures++;
    },
    secure: false,
  });
  const basic = (password: string, signal?: AbortSignal) =>
    new Request("http://127.0.0.1/console/api/topics", {
      headers: { authorization: `Basic ${btoa(`alice:${password}`)}` },
      ...(signal === undefined ? {} : { signal }),
    });
  // Failure 1: its answer waits for its own delay, so it is not awaited here.
  void auth.authenticate(basic("guess 0"), ADDRESS);
  await waitUntil(() => failures === 1 && delays.holdMs(ADDRESS) > 0, "the first failure");
  // Console checks run one at a time: the first queued login waits for the hold (taking a place),
  // the others queue behind it, up to the bound; one more is refused at once.
  const gone = new AbortController();
  const abandoned = Array.from({ length: CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX }, (_, i) =>
    auth.authenticate(basic(`guess ${i + 1}`, gone.signal), ADDRESS),
  );
  await waitUntil(() => delays.waiters(ADDRESS) === 1, "the first queued login waiting for the hold");
  const extra = await auth.authenticate(basic("one more"), ADDRESS);
  expect("refusal" in extra && extra.refusal.status).toBe(429);
  // Their clients go: none of them is checked, and the queue empties.
  gone.abort();
  await Promise.all(abandoned);
  expect(delays.waiters(ADDRESS)).toBe(0);
  clock.nowMs = 60_000;
  expect(failures).toBe(1);
  expect(await auth.authenticate(basic("correct horse"), ADDRESS)).toEqual({ user: "alice" });
});

test("a password check that runs off the event loop (the console's) holds its address until it ends: one check at a time across the listeners", () => {
  const { delays } = heldDelays();
  expect(delays.holdMs(ADDRESS)).toBe(0);
  delays.beginCheck(ADDRESS);
  // Before 2026-12-03 nothing marked it: a native or Kafka login of the address was checked beside it.
  expect(delays.holdMs(ADDRESS)).toBe(LOGIN_CHECK_POLL_MS);
  expect(delays.holdMs("10.0.0.9")).toBe(0);
  delays.endCheck(ADDRESS);
  expect(delays.holdMs(ADDRESS)).toBe(0);
});

test("native listener: a stop answers the logins that wait for a hold at once (it waited out its whole deadline for them)", async () => {
  const { delays } = heldDelays();
  const audit: string[] = [];
  const server = nativeServer(delays, (line) => audit.push(line));
  const { port } = server.listen();
  const first = await rawConnect(port);
  badAuthenticate(first);
  await waitUntil(() => audit.some((line) => line.includes("authentication failed")), "the first failure");
  const held = await rawConnect(port);
  badAuthenticate(held);
  await waitUntil(() => delays.waiters(ADDRESS) === 1, "the held login");
  // The clock stands still: the hold would never end. The stop answers it and closes.
  await server.stop(20_000);
  const [answer] = await waitForResponses(held, 1);
  expect(answer).toMatchObject({ errorCode: WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN });
  expect(delays.waiters(ADDRESS)).toBe(0);
});

test("Kafka listener: a stop ends the wait of held logins at once", async () => {
  const { delays } = heldDelays();
  let failures = 0;
  const sasl = new KafkaSasl({
    users,
    plain: true,
    loginDelays: delays,
    decoySecret: new Uint8Array(32),
    audit: (line) => {
      if (line.includes("SASL authentication failed")) failures++;
    },
    counters: { authenticationFailures: 0 },
  });
  const listener = kafkaListener(sasl);
  const { port } = listener.listen();
  // Twenty failures: a hold of 76.3 s of the clock, longer than the stop's drain deadline.
  for (let i = 0; i < 20; i++) delays.failed(ADDRESS);
  const held = await kafkaLogin(port, "guess");
  await waitUntil(() => delays.waiters(ADDRESS) === 1, "the held login");
  await listener.stop();
  // Before, the wait ran on to its timer after the stop had given up on the connection.
  expect(delays.waiters(ADDRESS)).toBe(0);
  await held.closed;
  expect(failures).toBe(0);
});

test("console: a burst of right logins from an address that no failure holds is never refused", async () => {
  const { delays } = heldDelays();
  const auth = new ConsoleAuth({ users, loginDelays: delays, audit: () => {}, secure: false });
  const basic = () =>
    new Request("http://127.0.0.1/console/api/topics", {
      headers: { authorization: `Basic ${btoa("alice:correct horse")}` },
    });
  // 20 at once, checked one after another (each waits for the one in progress): all logged in.
  // Before, the 17th and later got 429 ("waiting for the delay after its failed ones").
  const answers = await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(basic(), ADDRESS)));
  expect(answers.filter((answer) => "user" in answer)).toHaveLength(20);
  expect(delays.waiters(ADDRESS)).toBe(0);
});

test("native listener: logins that came while only a check was in progress take a place once a failure holds the address (the bound held no more for them)", async () => {
  const { delays } = heldDelays();
  const server = nativeServer(delays, () => {});
  const { port } = server.listen();
  // A console check in progress holds the address for a few ms at a time, without places.
  delays.beginCheck(ADDRESS);
  const sockets: RawSocket[] = [];
  for (let i = 0; i < LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX + 4; i++) {
    const socket = await rawConnect(port);
    badAuthenticate(socket);
    sockets.push(socket);
  }
  expect(delays.waiters(ADDRESS)).toBe(0);
  // The check fails: now a failure holds the address (the clock stands still), and the waiting
  // logins take places as they wake: 16 of them; the other 4 are refused.
  delays.failed(ADDRESS);
  delays.endCheck(ADDRESS);
  await waitUntil(() => sockets.filter((socket) => socket.received().length > 0).length === 4, "4 refusals");
  expect(delays.waiters(ADDRESS)).toBe(LOGIN_HOLD_WAITERS_PER_ADDRESS_MAX);
  for (const socket of sockets.filter((s) => s.received().length > 0)) {
    const [refusal] = await waitForResponses(socket, 1);
    expect(refusal).toMatchObject({ errorCode: WIRE_ERROR_CODES.LIMIT_EXCEEDED });
  }
  for (const socket of sockets) socket.close();
});
