/**
 * TLS beyond "every listener speaks TLS" (issue 14), through a real broker process, real clients
 * (the TypeScript client, kcat, kafkajs, node:tls) and certificates the test makes with openssl:
 *
 * - plain and TLS side by side (--tls-port, --kafka-tls-port): FETCH uses sendfile on the plain
 *   connection and copies on the TLS one of the same broker; Kafka METADATA on each port advertises
 *   that port, so kcat bootstrapped over TLS consumes over TLS; the safe default holds per listener;
 * - mutual TLS: a client certificate's subject is the principal (--tls-client-principal dn | cn),
 *   in the audit lines of both listeners; without a certificate kcat is refused;
 * - SIGHUP rereads the certificate: new connections get the new one on the native, Kafka and
 *   metrics ports while an open connection continues; a broken file is refused, the old one stays;
 *   with --tls-ca, client certificates stay required after the reload and still name the user
 *   (checked to fail when the reload drops the CA);
 * - kafkajs refuses a broker certificate of another CA and an expired one; kcat an expired one
 *   (test/server/tls.test.ts has kcat with another CA, and the native client with both).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import fs from "node:fs";
import tls from "node:tls";
import { Kafka, logLevel } from "kafkajs";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import {
  type BrokerProcess,
  kafkaPortOf,
  runBrokerExpectingFailure,
  startBroker,
} from "../helpers/broker-process.ts";
import { LineReader } from "../helpers/process.ts";
import { readValues } from "../helpers/records.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates, type TestCertificates } from "../helpers/tls-certs.ts";

setDefaultTimeout(60_000);

const text = new TextEncoder();
const decode = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

function openssl(dir: string, args: string[]): void {
  const run = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${run.stderr.toString()}`);
}

/** A key and a certificate for `subject`, signed by the test CA of makeCertificates (in `dir`). */
function signedCertificate(dir: string, name: string, subject: string, extensions?: string): void {
  openssl(dir, [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  ]);
  if (extensions !== undefined) fs.writeFileSync(`${dir}/${name}.ext`, extensions);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    ...(extensions === undefined ? [] : ["-extfile", `${name}.ext`]),
  ]);
}

async function kcat(args: string[], input?: string) {
  const child = Bun.spawn(["kcat", ...args], {
    stdin: input === undefined ? "ignore" : text.encode(input),
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

/** The SHA-256 fingerprint of the certificate a TLS server at `port` presents now. */
function presentedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost" }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fingerprint);
    });
    socket.on("error", reject);
  });
}

function fingerprintOf(file: string): string {
  return new X509Certificate(fs.readFileSync(file)).fingerprint256;
}

const portAfter = (line: string, pattern: RegExp) => Number(pattern.exec(line)?.[1]);

/** Creates `topic` over a new native connection with these TLS options (a client certificate, say). */
async function createTopicOverTls(
  port: number,
  tlsOptions: NonNullable<Parameters<typeof BooblikClient.connect>[0]["tls"]>,
  topic: string,
): Promise<void> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0, tls: tlsOptions });
  try {
    await client.createTopic(topic, { partitions: 1 });
  } finally {
    client.close();
  }
}

/**
 * The files a reloading broker is started with: copies of the test certificate and key (`tlsArgs`
 * names them to the broker), and
 * `renew(broker)`, which replaces them in place with a newly signed certificate (renewed.pem), sends
 * the SIGHUP and returns the broker's reload line once it is printed.
 */
function reloadableCertificate(dir: TempDir, certs: TestCertificates) {
  signedCertificate(dir.path, "renewed", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  const certFile = dir.file("live.pem");
  const keyFile = dir.file("live.key");
  fs.copyFileSync(certs.certFile, certFile);
  fs.copyFileSync(certs.keyFile, keyFile);
  const renew = (broker: BrokerProcess): Promise<string> => {
    fs.copyFileSync(dir.file("renewed.pem"), certFile);
    fs.copyFileSync(dir.file("renewed.key"), keyFile);
    broker.process.kill("SIGHUP");
    return broker.lines.waitFor((l) => l.includes("SIGHUP: reread the TLS certificate"), "the reload line");
  };
  return { certFile, keyFile, tlsArgs: ["--tls-cert", certFile, "--tls-key", keyFile], renew };
}

describe("plain and TLS listeners side by side", () => {
  test("FETCH: sendfile on the plain port, copy on the TLS port; Kafka METADATA advertises the port asked; kcat stays on TLS", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--tls-port",
      "0",
      "--kafka-port",
      "0",
      "--kafka-tls-port",
      "0",
      "--kafka-fetch-path",
      "sendfile",
    ]);
    expect(broker.startLine).toContain("fetch sendfile on plain connections, copy on TLS ones (TLS)");
    const tlsPort = portAfter(broker.startLine, /and over TLS on 127\.0\.0\.1:(\d+)/);
    const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
    const kafkaTlsLine = await broker.lines.waitFor(
      (l) => l.includes("Kafka protocol over TLS on"),
      "the Kafka TLS line",
    );
    const kafkaPort = portAfter(kafkaLine, /Kafka protocol on 127\.0\.0\.1:(\d+)/);
    const kafkaTlsPort = portAfter(kafkaTlsLine, /over TLS on 127\.0\.0\.1:(\d+)/);
    expect(new Set([broker.port, tlsPort, kafkaPort, kafkaTlsPort]).size).toBe(4);

    const plain = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    const secure = await BooblikClient.connect({
      host: "127.0.0.1",
      port: tlsPort,
      retries: 0,
      tls: { ca: certs.ca },
    });
    const values = Array.from({ length: 1000 }, (_, i) => `record ${i} ${"y".repeat(i % 200)}`);
    try {
      await plain.createTopic("both", { partitions: 1 });
      await secure.produce("both", 0, batchOfValues(values.map((v) => text.encode(v))));
      const before = await plain.stats();
      expect((await readValues(plain, "both", 0, 0, values.length)).map(decode)).toEqual(values);
      const afterPlain = await plain.stats();
      // The plain connection's records went by sendfile, none copied.
      expect(Number(afterPlain.sendfileBytes)).toBeGreaterThan(Number(before.sendfileBytes));
      expect(afterPlain.copiedFetchBytes).toBe(before.copiedFetchBytes);
      expect((await readValues(secure, "both", 0, 0, values.length)).map(decode)).toEqual(values);
      const afterSecure = await plain.stats();
      // The TLS connection's were copied, none sent by sendfile.
      expect(afterSecure.sendfileBytes).toBe(afterPlain.sendfileBytes);
      expect(Number(afterSecure.copiedFetchBytes)).toBeGreaterThan(Number(afterPlain.copiedFetchBytes));
      // The plain port does not speak TLS, the TLS port does not speak plain.
      await expect(
        BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0, tls: { ca: certs.ca } }),
      ).rejects.toThrow();
    } finally {
      plain.close();
      secure.close();
    }

    const ssl = ["-X", "security.protocol=SSL", "-X", `ssl.ca.location=${certs.caFile}`];
    const overTls = await kcat(["-b", `127.0.0.1:${kafkaTlsPort}`, ...ssl, "-L", "-J"]);
    expect(overTls.exitCode).toBe(0);
    expect(JSON.parse(overTls.stdout).brokers).toEqual([{ id: 1, name: `127.0.0.1:${kafkaTlsPort}` }]);
    const overPlain = await kcat(["-b", `127.0.0.1:${kafkaPort}`, "-L", "-J"]);
    expect(overPlain.exitCode).toBe(0);
    expect(JSON.parse(overPlain.stdout).brokers).toEqual([{ id: 1, name: `127.0.0.1:${kafkaPort}` }]);
    // Produce and consume after bootstrapping over TLS: every later connection (to the advertised
    // broker) must speak TLS too, or kcat would fail.
    const produced = await kcat(
      ["-b", `127.0.0.1:${kafkaTlsPort}`, ...ssl, "-P", "-t", "both", "-p", "0"],
      "k1\nk2\n",
    );
    expect(produced.exitCode).toBe(0);
    const consumeOverTls = (from: string, extra: string[]) =>
      kcat([
        "-b",
        `127.0.0.1:${kafkaTlsPort}`,
        ...ssl,
        "-C",
        "-t",
        "both",
        "-p",
        "0",
        "-o",
        from,
        "-q",
        ...extra,
      ]);
    const consumed = await consumeOverTls("1000", ["-e"]);
    expect(consumed.exitCode).toBe(0);
    expect(consumed.stdout).toBe("k1\nk2\n");
    // From the beginning over TLS: the first stored batch (1,000 records, ~200 KB) is one the plain
    // port sends with sendfile (--kafka-fetch-path sendfile); the TLS port must copy it through the
    // encryption, or kcat would read clear text where TLS records belong.
    const fromStart = await consumeOverTls("beginning", ["-c", "1002", "-X", "check.crcs=true"]);
    expect(fromStart.exitCode).toBe(0);
    expect(fromStart.stdout.trim().split("\n")).toEqual([...values, "k1", "k2"]);
    // kafkajs over TLS, groups shared with the plain port's coordinator.
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${kafkaTlsPort}`],
      ssl: { ca: [certs.ca], servername: "localhost" },
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).toContain("both");
    } finally {
      await admin.disconnect();
    }
  });

  test("--kafka-tls-advertised-listener names what METADATA on the TLS port advertises; the plain port keeps its own", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--kafka-port",
      "0",
      "--kafka-tls-port",
      "0",
      "--kafka-advertised-listener",
      "plain.example:9092",
      "--kafka-tls-advertised-listener",
      "secure.example:9094",
    ]);
    const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
    const kafkaTlsLine = await broker.lines.waitFor(
      (l) => l.includes("Kafka protocol over TLS on"),
      "the Kafka TLS line",
    );
    expect(kafkaTlsLine).toEndWith("advertised to its clients as secure.example:9094");
    const kafkaPort = portAfter(kafkaLine, /Kafka protocol on 127\.0\.0\.1:(\d+)/);
    const kafkaTlsPort = portAfter(kafkaTlsLine, /over TLS on 127\.0\.0\.1:(\d+)/);
    const ssl = ["-X", "security.protocol=SSL", "-X", `ssl.ca.location=${certs.caFile}`];
    const overTls = await kcat(["-b", `127.0.0.1:${kafkaTlsPort}`, ...ssl, "-L", "-J"]);
    expect(overTls.exitCode).toBe(0);
    expect(JSON.parse(overTls.stdout).brokers).toEqual([{ id: 1, name: "secure.example:9094" }]);
    const overPlain = await kcat(["-b", `127.0.0.1:${kafkaPort}`, "-L", "-J"]);
    expect(overPlain.exitCode).toBe(0);
    expect(JSON.parse(overPlain.stdout).brokers).toEqual([{ id: 1, name: "plain.example:9092" }]);
  });

  test("with users: SASL PLAIN is offered on the Kafka TLS port and not on the plain one beside it", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    const usersFile = dir.file("users.json");
    const users = readUsersFileOrEmpty(usersFile);
    setUser(users, "alice", "correct horse");
    writeUsersFile(usersFile, users);
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile,
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--kafka-port",
      "0",
      "--kafka-tls-port",
      "0",
    ]);
    const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
    const kafkaTlsLine = await broker.lines.waitFor(
      (l) => l.includes("Kafka protocol over TLS on"),
      "the Kafka TLS line",
    );
    const kafkaPort = portAfter(kafkaLine, /Kafka protocol on 127\.0\.0\.1:(\d+)/);
    const kafkaTlsPort = portAfter(kafkaTlsLine, /over TLS on 127\.0\.0\.1:(\d+)/);
    const protocols = await broker.lines.waitFor(
      (l) => l.includes("security.protocol="),
      "the protocol line",
    );
    expect(protocols).toBe(
      `booblik: Kafka clients must use security.protocol=SASL_PLAINTEXT with sasl.mechanism SCRAM-SHA-256, SCRAM-SHA-512 on port ${kafkaPort}, ` +
        `SASL_SSL with sasl.mechanism SCRAM-SHA-256, SCRAM-SHA-512, PLAIN on port ${kafkaTlsPort}`,
    );
    const login = (mechanism: string) => [
      "-X",
      `sasl.mechanisms=${mechanism}`,
      "-X",
      "sasl.username=alice",
      "-X",
      "sasl.password=correct horse",
    ];
    const overTls = await kcat([
      "-b",
      `127.0.0.1:${kafkaTlsPort}`,
      "-X",
      "security.protocol=SASL_SSL",
      "-X",
      `ssl.ca.location=${certs.caFile}`,
      ...login("PLAIN"),
      "-L",
      "-J",
    ]);
    expect(overTls.exitCode).toBe(0);
    expect(JSON.parse(overTls.stdout).brokers).toEqual([{ id: 1, name: `127.0.0.1:${kafkaTlsPort}` }]);
    const scramPlain = await kcat([
      "-b",
      `127.0.0.1:${kafkaPort}`,
      "-X",
      "security.protocol=SASL_PLAINTEXT",
      ...login("SCRAM-SHA-256"),
      "-L",
    ]);
    expect(scramPlain.exitCode).toBe(0);
    const plainOverPlain = await kcat([
      "-b",
      `127.0.0.1:${kafkaPort}`,
      "-X",
      "security.protocol=SASL_PLAINTEXT",
      ...login("PLAIN"),
      "-L",
      "-m",
      "1",
    ]);
    expect(plainOverPlain.exitCode).not.toBe(0);
    expect(plainOverPlain.stderr).toMatch(/PLAIN.*not supported|Unsupported SASL mechanism/i);
  });

  test("the safe default holds per listener; plain --fetch-path sendfile is allowed beside TLS; refusals", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    const tlsArgs = ["--tls-cert", certs.certFile, "--tls-key", certs.keyFile];
    // Plain on loopback, TLS on the wildcard without users or client certificates: refused.
    const anonymous = await runBrokerExpectingFailure([
      "--data-dir",
      dir.file("data"),
      "--port",
      "0",
      ...tlsArgs,
      "--host",
      "127.0.0.1",
      "--tls-host",
      "0.0.0.0",
      "--tls-port",
      "0",
      "--kafka-port",
      "off",
    ]);
    expect(anonymous.stderr).toContain("refusing to listen on 0.0.0.0 without authentication");
    // The same with client certificates required on the TLS port: served.
    await using broker = await startBroker(dir.file("data"), [
      ...tlsArgs,
      "--tls-ca",
      certs.caFile,
      "--tls-host",
      "0.0.0.0",
      "--tls-port",
      "0",
      "--kafka-port",
      "off",
      "--fetch-path",
      "sendfile",
    ]);
    expect(broker.startLine).toContain("and over TLS on 0.0.0.0:");
    expect(broker.startLine).not.toContain("WARNING");
    await broker.stop();
    for (const [args, message] of [
      [["--tls-port", "0"], "--tls-port and --kafka-tls-port need a certificate"],
      [
        [...tlsArgs, "--tls-host", "0.0.0.0"],
        "--tls-host and --kafka-tls-advertised-listener apply to the TLS ports",
      ],
      [
        [...tlsArgs, "--kafka-tls-port", "0", "--kafka-port", "off"],
        "--kafka-tls-port serves beside the plain Kafka port",
      ],
      [[...tlsArgs, "--tls-client-principal", "cn"], "--tls-client-principal needs client certificates"],
      [
        [...tlsArgs, "--tls-ca", certs.caFile, "--tls-client-principal", "uid"],
        "--tls-client-principal must be one of dn, cn",
      ],
    ] as const) {
      const refused = await runBrokerExpectingFailure([
        "--data-dir",
        dir.file("data"),
        "--port",
        "0",
        ...args,
      ]);
      expect(refused.stderr).toContain(message);
    }
  });
});

describe("mutual TLS: the client certificate's subject is the principal", () => {
  test("dn (default) on the native and Kafka listeners, in the audit lines; kcat without a certificate is refused", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    signedCertificate(dir.path, "bob", "/O=Example, Inc./OU=eng/CN=bob");
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--tls-ca",
      certs.caFile,
      "--kafka-port",
      "0",
    ]);
    expect(broker.startLine).toContain(
      "fetch copy (TLS, client certificates required; principal: the subject DN)",
    );
    const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
    const kafkaPort = portAfter(kafkaLine, /Kafka protocol on 127\.0\.0\.1:(\d+)/);
    const client = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: {
        ca: certs.ca,
        cert: fs.readFileSync(dir.file("bob.pem"), "utf8"),
        key: fs.readFileSync(dir.file("bob.key"), "utf8"),
      },
    });
    try {
      await client.createTopic("by-bob", { partitions: 1 });
    } finally {
      client.close();
    }
    // RFC 2253: most specific first, the comma inside a value escaped.
    const dn = "CN=bob,OU=eng,O=Example\\, Inc.";
    await broker.lines.waitFor(
      (l) =>
        l === `booblik: audit: user ${JSON.stringify(dn)} from 127.0.0.1: logged in (TLS client certificate)`,
      "the native login line",
    );
    await broker.lines.waitFor(
      (l) =>
        l.startsWith(`booblik: audit: user ${JSON.stringify(dn)} from 127.0.0.1: created topic "by-bob"`),
      "the audit line naming the certificate's subject",
    );
    const ssl = ["-X", "security.protocol=SSL", "-X", `ssl.ca.location=${certs.caFile}`];
    const withCertificate = await kcat([
      "-b",
      `127.0.0.1:${kafkaPort}`,
      ...ssl,
      "-X",
      `ssl.certificate.location=${certs.clientCertFile}`,
      "-X",
      `ssl.key.location=${certs.clientKeyFile}`,
      "-L",
    ]);
    expect(withCertificate.exitCode).toBe(0);
    expect(withCertificate.stdout).toContain('topic "by-bob"');
    await broker.lines.waitFor(
      (l) =>
        l === 'booblik: audit: user "CN=alice" from 127.0.0.1 (kafka): logged in (TLS client certificate)',
      "the Kafka login line",
    );
    const without = await kcat(["-b", `127.0.0.1:${kafkaPort}`, ...ssl, "-L", "-m", "3"]);
    expect(without.exitCode).not.toBe(0);
    expect(without.stderr).toMatch(/certificate required|SSL handshake failed|alert/i);
  });

  test("cn: the common name alone; with users the SCRAM login decides, not the certificate", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    signedCertificate(dir.path, "bob", "/O=Example/OU=eng/CN=bob");
    const bob = {
      ca: certs.ca,
      cert: fs.readFileSync(dir.file("bob.pem"), "utf8"),
      key: fs.readFileSync(dir.file("bob.key"), "utf8"),
    };
    {
      await using broker = await startBroker(dir.file("data"), [
        "--tls-cert",
        certs.certFile,
        "--tls-key",
        certs.keyFile,
        "--tls-ca",
        certs.caFile,
        "--tls-client-principal",
        "cn",
        "--kafka-port",
        "off",
      ]);
      await createTopicOverTls(broker.port, bob, "cn-topic");
      await broker.lines.waitFor(
        (l) => l.startsWith('booblik: audit: user "bob" from 127.0.0.1: created topic "cn-topic"'),
        "the audit line with the CN",
      );
    }
    const usersFile = dir.file("users.json");
    const users = readUsersFileOrEmpty(usersFile);
    setUser(users, "carol", "carol's password");
    writeUsersFile(usersFile, users);
    await using broker = await startBroker(dir.file("data2"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--tls-ca",
      certs.caFile,
      "--users-file",
      usersFile,
      "--kafka-port",
      "off",
    ]);
    // The certificate admits but does not log in: a request before AUTHENTICATE is refused.
    const anonymous = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: bob,
    });
    try {
      await expect(anonymous.metadata()).rejects.toThrow(/before AUTHENTICATE/);
    } finally {
      anonymous.close();
    }
    const carol = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: bob,
      user: "carol",
      password: "carol's password",
    });
    try {
      await carol.createTopic("by-carol", { partitions: 1 });
    } finally {
      carol.close();
    }
    await broker.lines.waitFor(
      (l) => l.startsWith('booblik: audit: user "carol" from 127.0.0.1: created topic "by-carol"'),
      "the audit line naming the SCRAM user",
    );
  });
});

describe("certificate reload on SIGHUP", () => {
  test("new connections get the new certificate on every TLS port, an open one continues; a broken file keeps the old", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    // The broker reads the files it was given: copies, replaced in place below.
    const { certFile, keyFile, tlsArgs, renew } = reloadableCertificate(dir, certs);
    await using broker = await startBroker(dir.file("data"), [
      ...tlsArgs,
      "--tls-port",
      "0",
      "--kafka-port",
      "0",
      "--kafka-tls-port",
      "0",
      "--metrics-port",
      "0",
    ]);
    const stderr = new LineReader(broker.process.stderr);
    const tlsPort = portAfter(broker.startLine, /and over TLS on 127\.0\.0\.1:(\d+)/);
    const metricsPort = portAfter(broker.startLine, /metrics on 127\.0\.0\.1:(\d+)/);
    const kafkaTlsLine = await broker.lines.waitFor(
      (l) => l.includes("Kafka protocol over TLS on"),
      "the Kafka TLS line",
    );
    const kafkaTlsPort = portAfter(kafkaTlsLine, /over TLS on 127\.0\.0\.1:(\d+)/);
    const oldFingerprint = fingerprintOf(certs.certFile);
    const newFingerprint = fingerprintOf(dir.file("renewed.pem"));
    expect(newFingerprint).not.toBe(oldFingerprint);
    for (const port of [tlsPort, kafkaTlsPort, metricsPort]) {
      expect(await presentedFingerprint(port, certs.ca)).toBe(oldFingerprint);
    }
    const open = await BooblikClient.connect({
      host: "127.0.0.1",
      port: tlsPort,
      retries: 0,
      tls: { ca: certs.ca },
    });
    try {
      await open.createTopic("kept", { partitions: 1 });
      // A SIGHUP with the same files (for the users file, say) rebinds nothing.
      broker.process.kill("SIGHUP");
      await broker.lines.waitFor(
        (l) => l === `booblik: SIGHUP: the TLS certificate ${certFile} is unchanged`,
        "the unchanged line",
      );
      expect(await renew(broker)).toContain("3 listeners serve it to new connections");
      for (const port of [tlsPort, kafkaTlsPort, metricsPort]) {
        expect(await presentedFingerprint(port, certs.ca)).toBe(newFingerprint);
      }
      // The connection opened before the reload still works.
      await open.produce("kept", 0, batchOfValues([text.encode("after the reload")]));
      expect((await readValues(open, "kept", 0, 0, 1)).map(decode)).toEqual(["after the reload"]);
      const ready = await fetch(`https://127.0.0.1:${metricsPort}/ready`, { tls: { ca: certs.ca } });
      expect(await ready.text()).toBe("ready\n");

      // A broken certificate (a key of another certificate): refused, the renewed one stays.
      fs.copyFileSync(certs.keyFile, keyFile);
      broker.process.kill("SIGHUP");
      const refusal = await stderr.waitFor(
        (l) => l.includes("SIGHUP: kept the TLS certificate as it was"),
        "the refusal",
      );
      expect(refusal).toContain("does not belong to the certificate");
      // Not PEM at all: refused the same way.
      fs.writeFileSync(certFile, "not a certificate\n");
      broker.process.kill("SIGHUP");
      const notPem = await stderr.waitFor((l) => l.includes("is not PEM"), "the second refusal");
      expect(notPem).toContain("SIGHUP: kept the TLS certificate as it was");
      for (const port of [tlsPort, kafkaTlsPort, metricsPort]) {
        expect(await presentedFingerprint(port, certs.ca)).toBe(newFingerprint);
      }
      expect((await readValues(open, "kept", 0, 0, 1)).map(decode)).toEqual(["after the reload"]);
    } finally {
      open.close();
    }
  });
});

describe("certificate reload on SIGHUP with client certificates required", () => {
  test("TLS only with --tls-ca: after the reload a client certificate is still required and still names the user, on the native and Kafka listeners", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    signedCertificate(dir.path, "bob", "/CN=bob");
    const { tlsArgs, renew } = reloadableCertificate(dir, certs);
    await using broker = await startBroker(dir.file("data"), [
      ...tlsArgs,
      "--tls-ca",
      certs.caFile,
      "--tls-client-principal",
      "cn",
      "--kafka-port",
      "0",
    ]);
    expect(broker.startLine).toContain(
      "fetch copy (TLS, client certificates required; principal: the subject CN)",
    );
    const kafkaPort = await kafkaPortOf(broker);
    const bob = {
      ca: certs.ca,
      cert: fs.readFileSync(dir.file("bob.pem"), "utf8"),
      key: fs.readFileSync(dir.file("bob.key"), "utf8"),
    };
    const ssl = ["-X", "security.protocol=SSL", "-X", `ssl.ca.location=${certs.caFile}`];
    const kcatWithCertificate = [
      ...ssl,
      "-X",
      `ssl.certificate.location=${dir.file("bob.pem")}`,
      "-X",
      `ssl.key.location=${dir.file("bob.key")}`,
    ];
    const checkCertificatesRequired = async (topic: string) => {
      await createTopicOverTls(broker.port, bob, topic);
      await broker.lines.waitFor(
        (l) => l.startsWith('booblik: audit: user "bob" from 127.0.0.1: created topic ') && l.includes(topic),
        `the audit line of ${topic} naming bob`,
      );
      // Without a certificate: the handshake is refused.
      let refused: unknown;
      try {
        const anonymous = await BooblikClient.connect({
          host: "127.0.0.1",
          port: broker.port,
          retries: 0,
          requestTimeoutMs: 5_000,
          tls: { ca: certs.ca },
        });
        try {
          await anonymous.metadata();
        } finally {
          anonymous.close();
        }
      } catch (error) {
        refused = error;
      }
      expect(String(refused)).toContain("CERTIFICATE_REQUIRED");
      const kafkaWith = await kcat(["-b", `127.0.0.1:${kafkaPort}`, ...kcatWithCertificate, "-L"]);
      expect(kafkaWith.exitCode).toBe(0);
      expect(kafkaWith.stdout).toContain(`topic "${topic}"`);
      const kafkaWithout = await kcat(["-b", `127.0.0.1:${kafkaPort}`, ...ssl, "-L", "-m", "3"]);
      expect(kafkaWithout.exitCode).not.toBe(0);
      expect(kafkaWithout.stderr).toMatch(/certificate required|SSL handshake failed|alert/i);
    };
    await checkCertificatesRequired("before-reload");
    expect(await renew(broker)).toContain("2 listeners serve it to new connections");
    const presented = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect(
        {
          host: "127.0.0.1",
          port: broker.port,
          ca: certs.ca,
          servername: "localhost",
          cert: bob.cert,
          key: bob.key,
        },
        () => {
          const fingerprint = socket.getPeerCertificate().fingerprint256;
          socket.end();
          resolve(fingerprint);
        },
      );
      socket.on("error", reject);
    });
    expect(presented).toBe(fingerprintOf(dir.file("renewed.pem")));
    await checkCertificatesRequired("after-reload");
  });
});

describe("kafkajs and kcat refuse a broker they must not trust", () => {
  test("kafkajs: a certificate of another CA, and an expired one; kcat: an expired one", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--kafka-port",
      "0",
    ]);
    const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
    const kafkaPort = portAfter(kafkaLine, /Kafka protocol on 127\.0\.0\.1:(\d+)/);
    const attempt = async (port: number) => {
      const admin = new Kafka({
        brokers: [`127.0.0.1:${port}`],
        ssl: { ca: [certs.otherCa], servername: "localhost" },
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
      }).admin();
      try {
        await admin.connect();
        return "connected";
      } catch (error) {
        return String((error as Error).message);
      } finally {
        await admin.disconnect();
      }
    };
    expect(await attempt(kafkaPort)).toContain("unable to verify the first certificate");
    // The broker refuses to serve an expired certificate, so a bare TLS server serves it here.
    const expired = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: Bun.file(certs.expiredCertFile), key: Bun.file(certs.keyFile) },
      socket: { data() {} },
    });
    try {
      const admin = new Kafka({
        brokers: [`127.0.0.1:${expired.port}`],
        ssl: { ca: [certs.ca], servername: "localhost" },
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
      }).admin();
      let message = "connected";
      try {
        await admin.connect();
      } catch (error) {
        message = (error as Error).message;
      } finally {
        await admin.disconnect();
      }
      expect(message).toMatch(/certificate has expired/);
      // kcat (librdkafka) refuses it too.
      const kcatExpired = await kcat([
        "-b",
        `127.0.0.1:${expired.port}`,
        "-X",
        "security.protocol=SSL",
        "-X",
        `ssl.ca.location=${certs.caFile}`,
        "-L",
        "-m",
        "3",
      ]);
      // librdkafka 2.0.2 does not name the reason; the same CA verifies the broker's valid
      // certificate (below), so expiry is the one difference.
      expect(kcatExpired.exitCode).not.toBe(0);
      expect(kcatExpired.stderr).toContain("certificate verify failed");
      const kcatValid = await kcat([
        "-b",
        `127.0.0.1:${kafkaPort}`,
        "-X",
        "security.protocol=SSL",
        "-X",
        `ssl.ca.location=${certs.caFile}`,
        "-L",
      ]);
      expect(kcatValid.exitCode).toBe(0);
    } finally {
      expired.stop(true);
    }
  });
});
