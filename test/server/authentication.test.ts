/**
 * SCRAM logins through a real broker process started with --users-file: the right password works
 * and is audited; a wrong password and an unknown user get the same AUTHENTICATION_FAILED, later
 * than the one before from the same address, and the connection ends; nothing but AUTHENTICATE is
 * served before a login; malformed, oversized and replayed exchanges fail cleanly; a users file
 * lets the broker serve a non-loopback address without --allow-anonymous; SIGHUP rereads it.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { ScramClient } from "../../src/auth/scram.ts";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import {
  decodeAuthenticateResponse,
  encodeAuthenticateRequest,
  encodeMetadataRequest,
} from "../../src/protocol/messages.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { frame, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const text = new TextEncoder();

function usersFile(dir: { file(name: string): string }, entries: [string, string][]): string {
  const file = dir.file("users.json");
  const users = readUsersFileOrEmpty(file);
  for (const [name, password] of entries) setUser(users, name, password);
  writeUsersFile(file, users);
  return file;
}

function authenticateFrame(
  id: number,
  message: string | Uint8Array,
  mechanism = "SCRAM-SHA-256",
): Uint8Array {
  return frame((w) =>
    encodeAuthenticateRequest(w, id, {
      mechanism,
      authBytes: typeof message === "string" ? text.encode(message) : message,
    }),
  );
}

describe("SCRAM logins", () => {
  test("the right password works for both mechanisms and is audited; the client checks the broker too", async () => {
    using dir = tempDir();
    const file = usersFile(dir, [["alice", "correct horse"]]);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    expect(broker.startLine).toContain("SCRAM login required (1 user)");
    for (const mechanism of ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const) {
      const client = await BooblikClient.connect({
        host: "127.0.0.1",
        port: broker.port,
        retries: 0,
        user: "alice",
        password: "correct horse",
        mechanism,
      });
      await client.createTopic(`t-${mechanism}`);
      client.close();
    }
    const audit = await broker.lines.waitFor((line) => line.includes("created topic"), "the audit line");
    expect(audit).toContain('booblik: audit: user "alice" from 127.0.0.1: created topic "t-SCRAM-SHA-256"');
  });

  test("a wrong password and an unknown user fail alike, each later than the last, and end the connection", async () => {
    using dir = tempDir();
    const file = usersFile(dir, [["alice", "correct horse"]]);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    const messages: string[] = [];
    const elapsed: number[] = [];
    for (const [user, password] of [
      ["alice", "battery staple"],
      ["mallory", "anything"],
      ["alice", "wrong again"],
    ] as const) {
      const began = performance.now();
      const failure = await BooblikClient.connect({
        host: "127.0.0.1",
        port: broker.port,
        retries: 0,
        user,
        password,
      })
        .then(() => undefined)
        .catch((error) => error);
      elapsed.push(performance.now() - began);
      expect(failure).toMatchObject({ code: "AUTHENTICATION_FAILED", retriable: false });
      messages.push((failure as Error).message);
    }
    expect(new Set(messages).size).toBe(1);
    expect(messages[0]).toContain("unknown user or wrong password");
    // 100 ms, 200 ms, 400 ms at least (the delay doubles per failure of this address).
    expect(elapsed[0]!).toBeGreaterThanOrEqual(95);
    expect(elapsed[2]!).toBeGreaterThanOrEqual(395);
    const figures = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      user: "alice",
      password: "correct horse",
    });
    expect((await figures.stats()).authenticationFailures).toBe(3);
    figures.close();
    const audit = await broker.lines.waitFor((line) => line.includes("authentication failed"), "audit");
    expect(audit).toContain("booblik: audit: anonymous from 127.0.0.1: authentication failed");
  });

  test("one address's logins are checked one at a time while it is held: parallel guesses wait for each other's delays, and so does the right password", async () => {
    using dir = tempDir();
    const file = usersFile(dir, [["alice", "correct horse"]]);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    const login = (password: string) =>
      BooblikClient.connect({
        host: "127.0.0.1",
        port: broker.port,
        retries: 0,
        user: "alice",
        password,
      }).then(
        (client) => {
          client.close();
          return "logged in";
        },
        (error: { code?: string }) => error.code,
      );
    // Failure 1 holds the address for 100 ms; its answer comes when the hold ends.
    expect(await login("guess 1")).toBe("AUTHENTICATION_FAILED");
    // Three guesses at once: checked one after another, each after the last one's delay (200, 400,
    // then 800 ms), so the last answer comes at least 1,400 ms after they began. Before 2026-12-03
    // each waited for its own delay only, and all three were answered within about 800 ms.
    const began = performance.now();
    const parallel = await Promise.all(
      ["guess 2", "guess 3", "guess 4"].map((password) =>
        login(password).then((outcome) => ({ outcome, ms: performance.now() - began })),
      ),
    );
    expect(parallel.map((p) => p.outcome)).toEqual([
      "AUTHENTICATION_FAILED",
      "AUTHENTICATION_FAILED",
      "AUTHENTICATION_FAILED",
    ]);
    expect(Math.max(...parallel.map((p) => p.ms))).toBeGreaterThanOrEqual(1_390);
    // Failure 5 (a delay of 1,600 ms) is checked after `fifthSent`; the right password, sent once
    // the broker has logged that check, is answered only when the hold ends, not at once.
    const fifthSent = performance.now();
    const fifth = login("guess 5");
    // The audit lines not yet read: one per failure so far (the five of this test).
    let failuresLogged = 0;
    await broker.lines.waitFor((line) => {
      if (line.includes("audit: anonymous from 127.0.0.1: authentication failed")) failuresLogged++;
      return failuresLogged >= 5;
    }, "the fifth failure's audit line");
    expect(await login("correct horse")).toBe("logged in");
    expect(performance.now() - fifthSent).toBeGreaterThanOrEqual(1_590);
    expect(await fifth).toBe("AUTHENTICATION_FAILED");
  });

  test("nothing but AUTHENTICATE before a login: the request is refused and the connection ends", async () => {
    using dir = tempDir();
    const file = usersFile(dir, [["alice", "correct horse"]]);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    const socket = await rawConnect(broker.port);
    socket.write(frame((w) => encodeMetadataRequest(w, 1, { topics: [] })));
    const [said] = await waitForResponses(socket, 1);
    expect(said).toMatchObject({ correlationId: 1, errorCode: WIRE_ERROR_CODES.AUTHENTICATION_FAILED });
    expect(said!.message).toContain("METADATA before AUTHENTICATE");
    await socket.closed;
    // The TypeScript client without a user gets the same, as an error it can show.
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await expect(client.metadata()).rejects.toMatchObject({ code: "AUTHENTICATION_FAILED" });
    client.close();
  });

  test("malformed, oversized, non-UTF-8, unknown-mechanism and replayed exchanges fail cleanly", async () => {
    using dir = tempDir();
    const file = usersFile(dir, [["alice", "correct horse"]]);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    const attempts: [Uint8Array[], string][] = [
      [[authenticateFrame(1, "garbage")], "must start with 'n,,'"],
      [[authenticateFrame(1, "n,,n=alice,r=abc".padEnd(5000, "x"))], "too long"],
      [[authenticateFrame(1, new Uint8Array([0x6e, 0x2c, 0x2c, 0xff]))], "must be UTF-8"],
      [[authenticateFrame(1, "n,,n=alice,r=abc", "PLAIN")], 'unknown mechanism "PLAIN"'],
      [
        [authenticateFrame(1, "n,,n=alice,r=abc"), authenticateFrame(2, "c=biws,r=abc,p=AAAA")],
        "nonce does not match",
      ],
    ];
    for (const [frames, reason] of attempts) {
      const socket = await rawConnect(broker.port);
      for (const bytes of frames) socket.write(bytes);
      const said = await waitForResponses(socket, frames.length);
      const last = said.at(-1)!;
      expect(last.errorCode, reason).toBe(WIRE_ERROR_CODES.AUTHENTICATION_FAILED);
      expect(last.message).toContain(reason);
      await socket.closed;
    }
    // A recorded client-final replayed on a new connection: the broker's nonce is new, so it fails.
    const client = new ScramClient("SCRAM-SHA-256", "alice", "correct horse");
    const first = client.first();
    const original = await rawConnect(broker.port);
    original.write(authenticateFrame(1, first));
    const [serverFirst] = await waitForResponses(original, 1);
    const recorded = client.final(new TextDecoder().decode(decodeAuthenticateResponse(serverFirst!.body)));
    original.write(authenticateFrame(2, recorded));
    expect((await waitForResponses(original, 2))[1]!.errorCode).toBe(0);
    original.close();
    const replay = await rawConnect(broker.port);
    replay.write(authenticateFrame(1, first));
    await waitForResponses(replay, 1);
    replay.write(authenticateFrame(2, recorded));
    const replayed = (await waitForResponses(replay, 2))[1]!;
    expect(replayed.errorCode).toBe(WIRE_ERROR_CODES.AUTHENTICATION_FAILED);
    expect(replayed.message).toContain("nonce does not match");
  });

  test("with users, a wildcard address needs no --allow-anonymous; SIGHUP rereads the users file", async () => {
    using dir = tempDir();
    const file = usersFile(dir, [["alice", "correct horse"]]);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file, "--host", "0.0.0.0"]);
    expect(broker.startLine).toContain("listening on 0.0.0.0:");
    const bob = { host: "127.0.0.1", port: broker.port, retries: 0, user: "bob", password: "hunter2" };
    await expect(BooblikClient.connect(bob)).rejects.toMatchObject({ code: "AUTHENTICATION_FAILED" });
    usersFile(dir, [["bob", "hunter2"]]);
    broker.process.kill("SIGHUP");
    await broker.lines.waitFor((line) => line.includes("SIGHUP: reread"), "the reload line");
    const client = await BooblikClient.connect(bob);
    expect((await client.metadata()).topics).toEqual([]);
    client.close();
  });
});
