/**
 * TLS on every listener (--tls-cert, --tls-key, --tls-ca) through a real broker process and
 * certificates the test makes with openssl: records round trip over TLS on the native listener
 * (FETCH copying, never sendfile), the Kafka listener (kcat, security.protocol=SSL) and the metrics
 * port (HTTPS); a client refuses a broker whose certificate a CA it does not trust signed, and one
 * whose certificate expired; the broker refuses to start with an expired certificate, a key of
 * another certificate, or sendfile asked for under TLS; with --tls-ca a client without a
 * certificate is refused and one with a certificate the CA signed is served.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { kafkaPortOf, runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { readValues } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates } from "../helpers/tls-certs.ts";

setDefaultTimeout(60_000);

const text = new TextEncoder();
const decode = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

describe("TLS", () => {
  test("records round trip over TLS on the native listener; FETCH copies (no sendfile); the CLI speaks TLS with --tls-ca", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
    ]);
    const client = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: { ca: certs.ca },
    });
    try {
      await client.createTopic("secret", { partitions: 1 });
      const values = Array.from({ length: 2000 }, (_, i) => `record ${i} ${"x".repeat(i % 300)}`);
      for (let i = 0; i < values.length; i += 250) {
        await client.produce("secret", 0, batchOfValues(values.slice(i, i + 250).map((v) => text.encode(v))));
      }
      const read = await readValues(client, "secret", 0, 0, values.length);
      expect(read.map(decode)).toEqual(values);
      const stats = await client.stats();
      expect(stats.fetchPath).toBe("copy");
      expect(broker.startLine).toContain("fetch copy (TLS)");
      expect(stats.sendfileBytes).toBe(0);
      expect(Number(stats.copiedFetchBytes)).toBeGreaterThan(0);
    } finally {
      client.close();
    }
    const cli = await runCli([
      "--broker",
      `127.0.0.1:${broker.port}`,
      "--tls-ca",
      certs.caFile,
      "topics",
      "list",
    ]);
    expect(cli.stderr).toBe("");
    expect(cli.exitCode).toBe(0);
    expect(cli.stdout).toContain("secret");
    // The same command without TLS does not get an answer it could misread: it fails.
    const plain = await runCli(["--broker", `127.0.0.1:${broker.port}`, "--timeout", "2s", "topics", "list"]);
    expect(plain.exitCode).toBe(1);
  });

  test("a client refuses a certificate signed by a CA it does not trust, and an expired one", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
    ]);
    const wrongCa = BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: { ca: certs.otherCa },
    });
    await expect(wrongCa).rejects.toThrow(
      /TLS with 127\.0\.0\.1:\d+ refused: .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/,
    );
    // A name the certificate does not carry.
    const wrongName = BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: { ca: certs.ca, serverName: "elsewhere.example" },
    });
    await expect(wrongName).rejects.toThrow(/TLS with 127\.0\.0\.1:\d+ refused/);
    const cli = await runCli([
      "--broker",
      `127.0.0.1:${broker.port}`,
      "--tls-ca",
      certs.otherCaFile,
      "topics",
      "list",
    ]);
    expect(cli.exitCode).toBe(1);
    expect(cli.stderr).toContain("UNABLE_TO_VERIFY_LEAF_SIGNATURE");

    // The broker refuses to serve an expired certificate at all, so the client's side is checked
    // against a TLS listener of the test's serving one.
    const refused = await runBrokerExpectingFailure([
      "--data-dir",
      dir.file("data2"),
      "--port",
      "0",
      "--tls-cert",
      certs.expiredCertFile,
      "--tls-key",
      certs.keyFile,
    ]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("is not valid now");
    const expired = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: Bun.file(certs.expiredCertFile), key: Bun.file(certs.keyFile) },
      socket: { data() {} },
    });
    try {
      const attempt = BooblikClient.connect({
        host: "127.0.0.1",
        port: expired.port,
        retries: 0,
        tls: { ca: certs.ca },
      });
      await expect(attempt).rejects.toThrow(/refused: certificate has expired \[CERT_HAS_EXPIRED\]/);
    } finally {
      expired.stop(true);
    }
  });

  test("start refusals: sendfile under TLS (native and Kafka), a key of another certificate, a CA without a certificate", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    const base = ["--data-dir", dir.file("data"), "--port", "0"];
    const tlsOnly = [...base, "--tls-cert", certs.certFile, "--tls-key", certs.keyFile];
    const sendfile = await runBrokerExpectingFailure([...tlsOnly, "--fetch-path", "sendfile"]);
    expect(sendfile.exitCode).toBe(1);
    expect(sendfile.stderr).toContain("--fetch-path sendfile cannot be combined with TLS");
    const kafkaSendfile = await runBrokerExpectingFailure([
      ...tlsOnly,
      "--kafka-port",
      "0",
      "--kafka-fetch-path",
      "sendfile",
    ]);
    expect(kafkaSendfile.exitCode).toBe(1);
    expect(kafkaSendfile.stderr).toContain("--kafka-fetch-path sendfile cannot be combined with TLS only");
    const wrongKey = await runBrokerExpectingFailure([
      ...base,
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.clientKeyFile,
    ]);
    expect(wrongKey.exitCode).toBe(1);
    expect(wrongKey.stderr).toContain("does not belong to the certificate");
    const caOnly = await runBrokerExpectingFailure([...base, "--tls-ca", certs.caFile]);
    expect(caOnly.exitCode).toBe(1);
    expect(caOnly.stderr).toContain("TLS needs both --tls-cert and --tls-key");
  });

  test("with --tls-ca a client must present a certificate the CA signed (mutual TLS)", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--tls-ca",
      certs.caFile,
    ]);
    expect(broker.startLine).toContain("(TLS, client certificates required; principal: the subject DN)");
    const withCertificate = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey },
    });
    try {
      expect((await withCertificate.metadata()).topics).toEqual([]);
    } finally {
      withCertificate.close();
    }
    // Without one the handshake, or the first request, fails: nothing is served.
    const without = (async () => {
      const client = await BooblikClient.connect({
        host: "127.0.0.1",
        port: broker.port,
        retries: 0,
        tls: { ca: certs.ca },
      });
      try {
        return await client.metadata();
      } finally {
        client.close();
      }
    })();
    // TLS 1.3 finishes the client's side of the handshake first: the broker's alert ends the
    // first request.
    await expect(without).rejects.toThrow(/CERTIFICATE_REQUIRED/);
  });

  test("the Kafka listener speaks SSL to kcat, and the metrics port HTTPS", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--kafka-port",
      "0",
      "--metrics-port",
      "0",
    ]);
    const metricsPort = Number(/metrics on 127\.0\.0\.1:(\d+)/.exec(broker.startLine)?.[1]);
    const kafkaPort = await kafkaPortOf(broker);
    const ssl = ["-X", "security.protocol=SSL", "-X", `ssl.ca.location=${certs.caFile}`];
    const kcat = async (args: string[], input?: string) => {
      const child = Bun.spawn(["kcat", "-b", `127.0.0.1:${kafkaPort}`, ...ssl, ...args], {
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
    };
    const client = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      tls: { ca: certs.ca },
    });
    try {
      await client.createTopic("k", { partitions: 1 });
    } finally {
      client.close();
    }
    const produced = await kcat(["-P", "-t", "k", "-p", "0"], "one\ntwo\nthree\n");
    expect(produced.exitCode).toBe(0);
    const consumed = await kcat(["-C", "-t", "k", "-p", "0", "-o", "beginning", "-e", "-q"]);
    expect(consumed.exitCode).toBe(0);
    expect(consumed.stdout).toBe("one\ntwo\nthree\n");
    // kcat with another CA refuses the broker.
    const wrong = Bun.spawn(
      [
        "kcat",
        "-b",
        `127.0.0.1:${kafkaPort}`,
        "-X",
        "security.protocol=SSL",
        "-X",
        `ssl.ca.location=${certs.otherCaFile}`,
        "-L",
        "-m",
        "3",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const wrongStderr = await new Response(wrong.stderr).text();
    expect(await wrong.exited).not.toBe(0);
    expect(wrongStderr).toMatch(/certificate verify failed|SSL handshake failed/);

    const metrics = await fetch(`https://127.0.0.1:${metricsPort}/ready`, { tls: { ca: certs.ca } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toBe("ready\n");
    await expect(fetch(`http://127.0.0.1:${metricsPort}/ready`)).rejects.toThrow();
  });
});
