/**
 * The console's logins (src/console/console-auth.ts) against broker child processes with a users
 * file: over HTTPS (--tls-cert), where other machines may log in, and over plain HTTP, where only
 * this machine is served, login or not. Through real HTTP requests, and once in a real browser
 * (Debian's Chromium through playwright-core; skipped with the reason when it is missing).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { chromium } from "playwright-core";
import { ACL_OPERATION, ACL_PERMISSION, PATTERN_TYPE, RESOURCE_TYPE } from "../../src/auth/acl.ts";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { type BrokerProcess, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates, type TestCertificates } from "../helpers/tls-certs.ts";
import { waitUntil } from "../helpers/wait.ts";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  expectLabelledControls,
  expectReadableContrast,
  expectTouchTargets,
  screenshot,
} from "./browser-checks.ts";

setDefaultTimeout(60_000);

const dir = tempDir("booblik-console-login");
const usersFile = dir.file("users.json");
let certificates: TestCertificates;
let tlsBroker: BrokerProcess;
let plainBroker: BrokerProcess;
let tlsBase: string;
let plainBase: string;

/** A request to the HTTPS broker, trusting the test's CA. */
function secure(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${tlsBase}${path}`, { ...init, tls: { ca: certificates.ca } } as RequestInit);
}

function login(base: string, user: string, password: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/console/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ user, password }),
    tls: { ca: certificates.ca },
  } as RequestInit);
}

function sessionCookie(response: Response): string {
  const setCookie = response.headers.get("set-cookie") ?? "";
  return setCookie.split(";")[0]!;
}

beforeAll(async () => {
  certificates = makeCertificates(dir.path);
  const users = readUsersFileOrEmpty(usersFile);
  setUser(users, "alice", "correct horse");
  setUser(users, "bob", "battery staple");
  writeUsersFile(usersFile, users);
  tlsBroker = await startBroker(dir.file("tls-data"), [
    "--users-file",
    usersFile,
    "--tls-cert",
    certificates.certFile,
    "--tls-key",
    certificates.keyFile,
    "--metrics-port",
    "0",
  ]);
  tlsBase = `https://localhost:${metricsPortOf(tlsBroker.startLine)}`;
  plainBroker = await startBroker(dir.file("plain-data"), ["--users-file", usersFile, "--metrics-port", "0"]);
  plainBase = `http://127.0.0.1:${metricsPortOf(plainBroker.startLine)}`;
});

afterAll(async () => {
  await tlsBroker?.[Symbol.asyncDispose]();
  await plainBroker?.[Symbol.asyncDispose]();
  dir[Symbol.dispose]();
});

describe("console logins over HTTPS", () => {
  test("data needs a login: 401 with a Basic challenge for scripts, none for browsers", async () => {
    const script = await secure("/console/api/overview");
    expect(script.status).toBe(401);
    expect(script.headers.get("www-authenticate")).toBe('Basic realm="booblik console", charset="UTF-8"');
    expect(await script.json()).toMatchObject({
      login: true,
      error: expect.stringContaining("log in first"),
    });
    const browserLike = await secure("/console/api/overview", {
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(browserLike.status).toBe(401);
    expect(browserLike.headers.get("www-authenticate")).toBeNull();
    // The page itself holds no data and needs no login.
    expect((await secure("/console/")).status).toBe(200);
  });

  test("a wrong password is refused after a delay, counted and audited; the right one gets a session cookie", async () => {
    const started = performance.now();
    const wrong = await login(tlsBase, "alice", "wrong");
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({
      error: "authentication failed: unknown user or wrong password",
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(90); // AUTHENTICATION_FAILED_DELAY_MIN_MS
    const unknown = await login(tlsBase, "mallory", "x");
    expect(await unknown.json()).toMatchObject({
      error: "authentication failed: unknown user or wrong password",
    });
    await tlsBroker.lines.waitFor(
      (line) => line.includes('(console): login as "alice" failed: unknown user or wrong password'),
      "the audit line of the failed login",
    );
    const metrics = await (await secure("/metrics")).text();
    expect(metrics).toMatch(/booblik_authentication_failures_total\{listener="console"\} [2-9]/);

    const right = await login(tlsBase, "alice", "correct horse");
    expect(right.status).toBe(200);
    expect(await right.json()).toEqual({ user: "alice" });
    const setCookie = right.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(
      /^booblik_console=[A-Za-z0-9_-]{43}; Path=\/console\/; Max-Age=43200; HttpOnly; SameSite=Strict; Secure$/,
    );
    await tlsBroker.lines.waitFor(
      (line) => line.includes('audit: user "alice" from') && line.includes("(console): logged in"),
      "the audit line of the login",
    );
    const cookie = sessionCookie(right);
    const overview = await secure("/console/api/overview", { headers: { cookie } });
    expect(overview.status).toBe(200);
    expect(await overview.json()).toMatchObject({ ready: true });
    expect(await (await secure("/console/api/session", { headers: { cookie } })).json()).toEqual({
      loginRequired: true,
      user: "alice",
    });

    // Logout ends the session.
    const logout = await secure("/console/api/logout", { method: "POST", headers: { cookie } });
    expect(logout.status).toBe(204);
    expect(logout.headers.get("set-cookie")).toContain("Max-Age=0");
    const after = await secure("/console/api/overview", { headers: { cookie } });
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ error: expect.stringContaining("the session ended") });
  });

  test("HTTP Basic works for scripts; a wrong one is refused", async () => {
    const basic = (user: string, password: string) =>
      `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    const ok = await secure("/console/api/topic-names", {
      headers: { authorization: basic("bob", "battery staple") },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual([]);
    const bad = await secure("/console/api/topic-names", {
      headers: { authorization: basic("bob", "nope") },
    });
    expect(bad.status).toBe(401);
  });

  test("over TLS a Host other than loopback is served after a login (remote access)", async () => {
    const cookie = sessionCookie(await login(tlsBase, "alice", "correct horse"));
    const remote = await secure("/console/api/overview", { headers: { cookie, host: "broker.example:443" } });
    expect(remote.status).toBe(200);
  });

  test("a login from another site's page is refused; a malformed or oversized one gets a clear error", async () => {
    const crossSite = await login(tlsBase, "alice", "correct horse", { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.json()).toMatchObject({ error: expect.stringContaining("another site") });
    const malformed = await secure("/console/api/login", { method: "POST", body: "user=alice" });
    expect(malformed.status).toBe(400);
    const huge = await secure("/console/api/login", { method: "POST", body: "x".repeat(10_000) });
    expect(huge.status).toBe(413);
    expect((await secure("/console/api/login")).status).toBe(405);
  });

  test("a user removed from the file (SIGHUP) or given a new password loses the session", async () => {
    const bobCookie = sessionCookie(await login(tlsBase, "bob", "battery staple"));
    const aliceCookie = sessionCookie(await login(tlsBase, "alice", "correct horse"));
    const users = readUsersFileOrEmpty(usersFile);
    users.delete("bob");
    setUser(users, "alice", "a new password");
    writeUsersFile(usersFile, users);
    tlsBroker.process.kill("SIGHUP");
    await tlsBroker.lines.waitFor((line) => line.includes("SIGHUP: reread"), "the users file reread");
    await waitUntil(
      async () => (await secure("/console/api/overview", { headers: { cookie: bobCookie } })).status === 401,
      "bob's session to end",
    );
    expect((await secure("/console/api/overview", { headers: { cookie: aliceCookie } })).status).toBe(401);
    expect((await login(tlsBase, "alice", "a new password")).status).toBe(200);
    // Restore the file for the other tests.
    setUser(users, "alice", "correct horse");
    setUser(users, "bob", "battery staple");
    writeUsersFile(usersFile, users);
    tlsBroker.process.kill("SIGHUP");
    await waitUntil(async () => (await login(tlsBase, "bob", "battery staple")).status === 200, "bob back");
  });
});

describe("console logins over plain HTTP", () => {
  test("loopback needs a login too; a cookie is not marked Secure", async () => {
    expect((await fetch(`${plainBase}/console/api/overview`)).status).toBe(401);
    const right = await login(plainBase, "alice", "correct horse");
    expect(right.status).toBe(200);
    expect(right.headers.get("set-cookie")).not.toContain("Secure");
    const cookie = sessionCookie(right);
    expect((await fetch(`${plainBase}/console/api/overview`, { headers: { cookie } })).status).toBe(200);
  });

  test("another Host is refused even with a login: passwords do not cross a network in clear", async () => {
    const cookie = sessionCookie(await login(plainBase, "alice", "correct horse"));
    const remote = await fetch(`${plainBase}/console/api/overview`, {
      headers: { cookie, host: "broker.example" },
    });
    expect(remote.status).toBe(403);
    expect(await remote.json()).toMatchObject({
      error: expect.stringContaining("--tls-cert and --users-file"),
    });
    const remoteLogin = await login(plainBase, "alice", "correct horse", { host: "broker.example" });
    expect(remoteLogin.status).toBe(403);
  });
});

describe("the console under ACLs (--authorizer acl)", () => {
  test("a user sees what its ACLs let it describe and reads only topics it may read", async () => {
    await using broker = await startBroker(dir.file("acl-data"), [
      "--users-file",
      usersFile,
      "--metrics-port",
      "0",
      "--authorizer",
      "acl",
      "--super-users",
      "User:alice",
    ]);
    const base = `http://127.0.0.1:${metricsPortOf(broker.startLine)}`;
    /** A connection of the super user alice. */
    const asAlice = () =>
      BooblikClient.connect({
        host: "127.0.0.1",
        port: broker.port,
        retries: 0,
        user: "alice",
        password: "correct horse",
      });
    const admin = await asAlice();
    try {
      await admin.createTopic("shared");
      await admin.createTopic("secret");
      // bob may read "shared" (READ implies DESCRIBE), nothing else.
      await admin.createAcls([
        {
          resourceType: RESOURCE_TYPE.TOPIC,
          resourceName: "shared",
          patternType: PATTERN_TYPE.LITERAL,
          principal: "User:bob",
          host: "*",
          operation: ACL_OPERATION.READ,
          permission: ACL_PERMISSION.ALLOW,
        },
      ]);
    } finally {
      admin.close();
    }
    const cookieOf = async (user: string, password: string) =>
      sessionCookie(await login(base, user, password));
    const bob = await cookieOf("bob", "battery staple");
    const get = (path: string, cookie: string) =>
      fetch(`${base}/console/api/${path}`, { headers: { cookie } });

    const names = await get("topic-names", bob);
    expect(await names.json()).toEqual([{ name: "shared", partitions: 1 }]);
    expect((await get("records?topic=shared", bob)).status).toBe(200);
    const secret = await get("records?topic=secret", bob);
    expect(secret.status).toBe(403);
    expect(await secret.json()).toEqual({
      error: 'User:bob (from 127.0.0.1) is not authorized to READ TOPIC "secret"',
    });
    // A topic that does not exist is refused the same way: the refusal does not tell.
    expect((await get("records?topic=nothing-here", bob)).status).toBe(403);
    // The overview and the live views show the whole broker: DESCRIBE on the cluster.
    const overview = await get("overview", bob);
    expect(overview.status).toBe(403);
    expect(await overview.json()).toEqual({
      error: 'User:bob (from 127.0.0.1) is not authorized to DESCRIBE CLUSTER "kafka-cluster"',
    });
    expect((await get("stream?view=topics", bob)).status).toBe(403);
    expect((await get("group?group=billing", bob)).status).toBe(403);
    // With DESCRIBE on the group, its page and the groups list show only the offsets of topics bob
    // may see (as OffsetFetch answers him): "secret"'s offset and log end used to be there too.
    const granting = await asAlice();
    try {
      await granting.commitOffsets("billing", [
        { topic: "shared", partition: 0, offset: 0 },
        { topic: "secret", partition: 0, offset: 0 },
      ]);
      await granting.commitOffsets("billing-hidden", [{ topic: "secret", partition: 0, offset: 0 }]);
      await granting.createAcls([
        {
          resourceType: RESOURCE_TYPE.GROUP,
          resourceName: "billing",
          patternType: PATTERN_TYPE.PREFIXED,
          principal: "User:bob",
          host: "*",
          operation: ACL_OPERATION.DESCRIBE,
          permission: ACL_PERMISSION.ALLOW,
        },
      ]);
    } finally {
      granting.close();
    }
    const billing = (await (await get("group?group=billing", bob)).json()) as {
      offsets: { topic: string }[];
      lagHistory: unknown[];
    };
    expect(billing.offsets.map((row) => row.topic)).toEqual(["shared"]);
    expect(billing.lagHistory).toEqual([]);
    const listed = (await (await get("groups", bob)).json()) as {
      group: string;
      committedPartitions: number;
    }[];
    expect(listed.map((row) => [row.group, row.committedPartitions])).toEqual([
      ["billing", 1],
      ["billing-hidden", 0],
    ]);
    // A group whose only commits are of topics bob may not see is listed, and its page answers
    // (with no offsets): it was a 404 while the list showed it.
    const hidden = await get("group?group=billing-hidden", bob);
    expect(hidden.status).toBe(200);
    expect(((await hidden.json()) as { offsets: unknown[] }).offsets).toEqual([]);

    // The super user sees everything.
    const alice = await cookieOf("alice", "correct horse");
    expect(((await (await get("topic-names", alice)).json()) as unknown[]).length).toBe(2);
    expect((await get("overview", alice)).status).toBe(200);
    expect((await get("records?topic=secret", alice)).status).toBe(200);
    const whole = (await (await get("group?group=billing", alice)).json()) as {
      offsets: { topic: string }[];
    };
    expect(whole.offsets.map((row) => row.topic)).toEqual(["secret", "shared"]);

    const scrape = await (await fetch(`${base}/metrics`)).text();
    expect(metricValue(scrape, 'booblik_authorization_denials_total{listener="console"}')).toBe(5);
  });
});

describe.skipIf(!fs.existsSync(CHROMIUM))("the login page in a browser", () => {
  test("the page asks for a login, refuses a wrong password, shows the overview after the right one, and logs out", async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const page = await context.newPage();
      await page.goto(`${tlsBase}/console/`);
      await page.getByLabel("User").waitFor();
      expect(await page.locator("h1").textContent()).toBe("Log in");
      // The form is usable by keyboard and screen reader, readable and touchable, like every page.
      await expectLabelledControls(page);
      await expectReadableContrast(page);
      await expectTouchTargets(page);
      fs.mkdirSync(dir.file("screenshots"), { recursive: true });
      await screenshot(browser, page, dir.file("screenshots"), "login");
      await page.getByLabel("User").fill("alice");
      await page.getByLabel("Password").fill("wrong");
      await page.getByRole("button", { name: "Log in" }).click();
      await page.getByText("authentication failed: unknown user or wrong password").waitFor();
      await page.getByLabel("Password").fill("correct horse");
      await page.getByRole("button", { name: "Log in" }).click();
      await page.getByText("Logged in as alice").waitFor();
      await page.locator('main[data-page="overview"]').waitFor();
      // The overview's live stream runs with the session cookie.
      await waitUntil(
        async () => (await page.locator("#live").textContent()) === "live",
        "the stream to open",
      );
      await screenshot(browser, page, dir.file("screenshots"), "overview-logged-in");
      await page.getByRole("button", { name: "Log out" }).click();
      await page.getByLabel("User").waitFor();
      expect(await page.locator("h1").textContent()).toBe("Log in");
    } finally {
      await browser.close();
    }
  });
});

describe("console logins of one address while it is held", () => {
  test("are checked one at a time: parallel guesses wait for each other's delays, and so does the right password", async () => {
    // A broker of its own: the address's failures here must not slow the other tests' logins.
    await using broker = await startBroker(dir.file("held-data"), [
      "--users-file",
      usersFile,
      "--metrics-port",
      "0",
    ]);
    const base = `http://127.0.0.1:${metricsPortOf(broker.startLine)}`;
    const attempt = async (password: string) => (await login(base, "alice", password)).status;
    expect(await attempt("guess 1")).toBe(401);
    // Checked one after another after delays of 200, 400 and 800 ms: the last answer at least 1,400
    // ms after they began (before 2026-12-03 the checks ran at once, all answered within ~800 ms).
    const began = performance.now();
    const parallel = await Promise.all(
      ["guess 2", "guess 3", "guess 4"].map((password) =>
        attempt(password).then((status) => ({ status, ms: performance.now() - began })),
      ),
    );
    expect(parallel.map((p) => p.status)).toEqual([401, 401, 401]);
    expect(Math.max(...parallel.map((p) => p.ms))).toBeGreaterThanOrEqual(1_390);
    // Failure 5 holds the address for 1,600 ms from its check, which comes after `fifthSent`.
    const fifthSent = performance.now();
    const fifth = attempt("guess 5");
    let failuresLogged = 0;
    await broker.lines.waitFor((line) => {
      if (line.includes('(console): login as "alice" failed')) failuresLogged++;
      return failuresLogged >= 5;
    }, "the fifth failure's audit line");
    expect(await attempt("correct horse")).toBe(200);
    expect(performance.now() - fifthSent).toBeGreaterThanOrEqual(1_590);
    expect(await fifth).toBe(401);
  });
});
