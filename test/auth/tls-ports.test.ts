/**
 * The TLS side both listeners share (src/auth/tls-ports.ts), shown on both: a native BrokerServer
 * and a KafkaListener in this process, each on a real TLS port with a CA, reached by node:tls with
 * certificates made by openssl (test/helpers/tls-certs.ts).
 *
 * - A client certificate login writes the same audit line to each listener's audit sink (the
 *   Kafka listener wrote it to its connection log instead before the two shared this code).
 * - reloadTls: both present the new certificate to new connections while an open one continues; new
 *   files a port cannot be bound with leave both on the old certificate, and reloadTls throws.
 * - A certificate whose subject does not parse: audited and refused (loginWithClientCertificate, the
 *   one function both listeners call). No TLS stack here lets such a certificate reach a listener:
 *   BoringSSL (Bun) and OpenSSL refuse to parse it at all, as the last test shows.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createPrivateKey, sign, X509Certificate } from "node:crypto";
import fs from "node:fs";
import tls from "node:tls";
import { readTlsFiles, type TlsFiles } from "../../src/auth/tls.ts";
import { type CertificateLoginTarget, loginWithClientCertificate } from "../../src/auth/tls-ports.ts";
import { Broker } from "../../src/broker/broker.ts";
import { KafkaListener } from "../../src/kafka/listener.ts";
import { InboundBudget } from "../../src/server/inbound-budget.ts";
import { BrokerServer } from "../../src/server/server.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates, type TestCertificates } from "../helpers/tls-certs.ts";
import { waitUntil } from "../helpers/wait.ts";

let dir: TempDir;
let certs: TestCertificates;
let broker: Broker;
let server: BrokerServer | undefined;
let kafka: KafkaListener | undefined;
const sockets: tls.TLSSocket[] = [];
const nativeAudit: string[] = [];
const kafkaAudit: string[] = [];
const kafkaLog: string[] = [];

beforeEach(() => {
  dir = tempDir("tls-ports");
  certs = makeCertificates(dir.path);
  broker = Broker.open({ dataDir: dir.file("data") });
  nativeAudit.length = 0;
  kafkaAudit.length = 0;
  kafkaLog.length = 0;
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await kafka?.stop();
  kafka = undefined;
  await server?.stop();
  server = undefined;
  await broker.close();
  dir[Symbol.dispose]();
});

/** What both listeners take alike. */
const limits = {
  hostname: "127.0.0.1",
  port: 0,
  maxFrameBytes: 1 << 20,
  maxConnections: 16,
  maxConnectionsPerAddress: 16,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 30_000,
};

/** Both listeners, TLS only, with `files`; returns their ports. */
function startBoth(files: TlsFiles): { nativePort: number; kafkaPort: number } {
  const budget = new InboundBudget(1 << 20);
  server = new BrokerServer(broker, {
    ...limits,
    maxInboundBytes: 1 << 20,
    fetchPath: "copy",
    maxFetchBytes: 1 << 20,
    auditLog: (line) => nativeAudit.push(line),
    tls: files,
  });
  kafka = new KafkaListener(broker, {
    ...limits,
    inboundBudget: budget,
    log: (line) => kafkaLog.push(line),
    audit: (line) => kafkaAudit.push(line),
    tls: files,
  });
  return { nativePort: server.listen().port, kafkaPort: kafka.listen().port };
}

/** A TLS connection with the test client certificate (CN=alice); resolves with the server's certificate. */
function connect(port: number): Promise<{ socket: tls.TLSSocket; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      {
        host: "127.0.0.1",
        port,
        ca: certs.ca,
        servername: "localhost",
        cert: certs.clientCert,
        key: certs.clientKey,
      },
      () => resolve({ socket, fingerprint: socket.getPeerCertificate().fingerprint256 }),
    );
    sockets.push(socket);
    socket.on("error", reject);
  });
}

const fingerprintOf = (file: string) => new X509Certificate(fs.readFileSync(file)).fingerprint256;

/** The certificate a port presents now, read without checking it (the reload serves an expired one). */
function presented(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: "127.0.0.1", port, rejectUnauthorized: false, cert: certs.clientCert, key: certs.clientKey },
      () => resolve(socket.getPeerCertificate().fingerprint256),
    );
    sockets.push(socket);
    socket.on("error", reject);
  });
}

describe("both listeners share one TLS path", () => {
  test("a client certificate login is one audit line in each listener's audit sink", async () => {
    const { nativePort, kafkaPort } = startBoth(readTlsFiles(certs.certFile, certs.keyFile, certs.caFile));
    await connect(nativePort);
    await connect(kafkaPort);
    const line = 'booblik: audit: user "CN=alice" from 127.0.0.1';
    await waitUntil(() => nativeAudit.length > 0 && kafkaAudit.length > 0, "both login lines");
    expect(nativeAudit).toEqual([`${line}: logged in (TLS client certificate)`]);
    expect(kafkaAudit).toEqual([`${line} (kafka): logged in (TLS client certificate)`]);
    expect(kafkaLog.filter((l) => l.includes("logged in"))).toEqual([]);
  });

  test("reloadTls: new connections to both get the new certificate, open ones continue; files a port cannot bind keep the old one", async () => {
    const { nativePort, kafkaPort } = startBoth(readTlsFiles(certs.certFile, certs.keyFile, certs.caFile));
    const oldFingerprint = fingerprintOf(certs.certFile);
    const before = [await connect(nativePort), await connect(kafkaPort)];
    for (const { fingerprint } of before) expect(fingerprint).toBe(oldFingerprint);
    // The same key in the expired certificate (makeCertificates): another certificate to serve.
    const renewed: TlsFiles = {
      cert: fs.readFileSync(certs.expiredCertFile, "utf8"),
      key: fs.readFileSync(certs.keyFile, "utf8"),
      ca: certs.ca,
    };
    expect(server!.reloadTls(renewed)).toBe(1);
    expect(kafka!.reloadTls(renewed)).toBe(1);
    const newFingerprint = fingerprintOf(certs.expiredCertFile);
    expect(newFingerprint).not.toBe(oldFingerprint);
    // The connections opened before the reload are still open, on both sides.
    expect([server!.connectionCount, kafka!.connectionCount]).toEqual([1, 1]);
    for (const { socket } of before) expect(socket.destroyed).toBe(false);
    for (const port of [nativePort, kafkaPort]) expect(await presented(port)).toBe(newFingerprint);
    // A key that does not belong to the certificate: Bun refuses to bind with it, so each listener
    // binds its port again with the files it served, and says so by throwing.
    const broken: TlsFiles = { ...renewed, key: fs.readFileSync(`${dir.path}/client.key`, "utf8") };
    expect(() => server!.reloadTls(broken)).toThrow();
    expect(() => kafka!.reloadTls(broken)).toThrow();
    for (const port of [nativePort, kafkaPort]) expect(await presented(port)).toBe(newFingerprint);
  });
});

/** The test client certificate (CN=alice) with its CN's UTF8String bytes made invalid UTF-8, signed again by the test CA. */
function certificateWithBadSubject(): Uint8Array {
  const der = new Uint8Array(new X509Certificate(certs.clientCert).raw);
  const element = (at: number) => {
    let length = der[at + 1]!;
    let start = at + 2;
    if (length & 0x80) {
      const count = length & 0x7f;
      length = 0;
      for (let i = 0; i < count; i++) length = length * 256 + der[start + i]!;
      start += count;
    }
    return { head: at, start, end: start + length };
  };
  const encode = (tag: number, body: Uint8Array) => {
    const n = body.length;
    const head = n < 0x80 ? [tag, n] : n < 0x100 ? [tag, 0x81, n] : [tag, 0x82, n >> 8, n & 0xff];
    return new Uint8Array([...head, ...body]);
  };
  const outer = element(0);
  const tbsElement = element(outer.start);
  const tbs = der.slice(tbsElement.head, tbsElement.end);
  const algorithm = element(tbsElement.end);
  // The subject's "alice" (the last one in TBSCertificate: the issuer comes before it).
  const alice = new TextEncoder().encode("alice");
  let at = -1;
  for (let i = 0; i + alice.length <= tbs.length; i++) if (alice.every((c, j) => tbs[i + j] === c)) at = i;
  expect(tbs[at - 2]).toBe(0x0c); // UTF8String
  tbs.set([0xff, 0xfe, 0xfd, 0xfc, 0xfb], at);
  const signature = sign("sha256", tbs, createPrivateKey(fs.readFileSync(`${dir.path}/ca.key`)));
  return encode(
    0x30,
    new Uint8Array([
      ...tbs,
      ...der.slice(algorithm.head, algorithm.end),
      ...encode(0x03, new Uint8Array([0, ...signature])),
    ]),
  );
}

describe("a client certificate whose subject does not parse", () => {
  test("is audited and refused by the login both listeners call", () => {
    const events: string[] = [];
    const target: CertificateLoginTarget = {
      loginRequired: false,
      principal: undefined,
      setPrincipal: (principal) => events.push(`principal ${principal}`),
      audit: (what) => events.push(`audit ${what}`),
      refuse: (reason) => events.push(`refuse ${reason}`),
    };
    loginWithClientCertificate(certificateWithBadSubject(), "dn", target);
    const reason = "TLS client certificate refused: its subject does not parse: ";
    expect(events).toHaveLength(2);
    expect(events[0]).toStartWith(`audit ${reason}`);
    expect(events[1]).toStartWith(`refuse ${reason}`);
    // The same function with the certificate as openssl made it: the principal and a login line.
    events.length = 0;
    loginWithClientCertificate(new X509Certificate(certs.clientCert).raw, "dn", target);
    expect(events).toEqual(["principal CN=alice", "audit logged in (TLS client certificate)"]);
  });

  test("cannot reach a listener here: BoringSSL (Bun) refuses to parse such a certificate", () => {
    const pem = `-----BEGIN CERTIFICATE-----\n${Buffer.from(certificateWithBadSubject()).toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE-----\n`;
    expect(() => new X509Certificate(pem)).toThrow(/INVALID_UTF8STRING/);
    expect(() => tls.createSecureContext({ cert: pem, key: certs.clientKey })).toThrow(/INVALID_UTF8STRING/);
  });
});
