/**
 * The Java client (Apache Kafka's own kafka-clients, through its TopicCommand tool) with the
 * client.properties docs/security.md gives: SSL with a PEM truststore and a PEM keystore (mutual
 * TLS, the certificate's subject as the principal) against the Kafka TLS port beside a plain one,
 * and SASL_SSL with SCRAM-SHA-512. The jars are the ones bench/compat/kafka-node.ts fetched into the
 * compat cache (nothing of Kafka is in the repository); without them, or without java, the test is
 * skipped and says why, as kcat's tests are.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates } from "../helpers/tls-certs.ts";

setDefaultTimeout(180_000);

const JAVA = Bun.which("java");
const JARS = path.join(
  process.env.BOOBLIK_COMPAT_CACHE ?? path.join(os.homedir(), ".cache", "booblik-compat"),
  "server-4.1.1",
);
const HAVE_JARS = fs.existsSync(path.join(JARS, "kafka-tools-4.1.1.jar"));
if (JAVA === null || !HAVE_JARS) {
  console.log(
    `kafka/java-tls.test.ts: skipped: ${JAVA === null ? "java is not installed" : `no Kafka 4.1.1 jars in ${JARS} (bun run compat:kafka fetches them)`}`,
  );
}

async function topicCommand(properties: string, bootstrap: string, args: string[]) {
  const child = Bun.spawn(
    [
      JAVA!,
      "-Xmx256m",
      "-cp",
      `${JARS}/*`,
      "org.apache.kafka.tools.TopicCommand",
      "--bootstrap-server",
      bootstrap,
      "--command-config",
      properties,
      ...args,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, exitCode };
}

describe.skipIf(JAVA === null || !HAVE_JARS)("the Java client over TLS", () => {
  test("SSL with PEM truststore and keystore on the Kafka TLS port (principal CN=alice); SASL_SSL with SCRAM-SHA-512", async () => {
    using dir = tempDir();
    const certs = makeCertificates(dir.path);
    // Kafka's PEM keystore: the certificate and its (PKCS#8, unencrypted) key in one file.
    fs.writeFileSync(dir.file("alice-with-key.pem"), certs.clientCert + certs.clientKey);
    fs.writeFileSync(
      dir.file("ssl.properties"),
      [
        "security.protocol=SSL",
        "ssl.truststore.type=PEM",
        `ssl.truststore.location=${certs.caFile}`,
        "ssl.keystore.type=PEM",
        `ssl.keystore.location=${dir.file("alice-with-key.pem")}`,
        "",
      ].join("\n"),
    );
    {
      await using broker = await startBroker(dir.file("data"), [
        "--tls-cert",
        certs.certFile,
        "--tls-key",
        certs.keyFile,
        "--tls-ca",
        certs.caFile,
        "--tls-port",
        "0",
        "--kafka-port",
        "0",
        "--kafka-tls-port",
        "0",
      ]);
      const tlsLine = await broker.lines.waitFor(
        (l) => l.includes("Kafka protocol over TLS on"),
        "the TLS line",
      );
      const kafkaTlsPort = Number(/over TLS on 127\.0\.0\.1:(\d+)/.exec(tlsLine)?.[1]);
      // "localhost": the broker certificate names it (the Java client checks the host name).
      const created = await topicCommand(dir.file("ssl.properties"), `localhost:${kafkaTlsPort}`, [
        "--create",
        "--topic",
        "from-java",
        "--partitions",
        "2",
      ]);
      expect(created.stdout).toContain("Created topic from-java.");
      expect(created.exitCode).toBe(0);
      await broker.lines.waitFor(
        (l) =>
          l === 'booblik: audit: user "CN=alice" from 127.0.0.1 (kafka): logged in (TLS client certificate)',
        "the Java client's login by certificate",
      );
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        expect(
          (await client.metadata()).topics.find((topic) => topic.name === "from-java")?.partitions,
        ).toHaveLength(2);
      } finally {
        client.close();
      }
    }

    const usersFile = dir.file("users.json");
    const users = readUsersFileOrEmpty(usersFile);
    setUser(users, "alice", "correct horse");
    writeUsersFile(usersFile, users);
    fs.writeFileSync(
      dir.file("sasl.properties"),
      [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="correct horse";',
        "ssl.truststore.type=PEM",
        `ssl.truststore.location=${certs.caFile}`,
        "",
      ].join("\n"),
    );
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile,
      "--tls-cert",
      certs.certFile,
      "--tls-key",
      certs.keyFile,
      "--kafka-port",
      "0",
    ]);
    const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
    const kafkaPort = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(kafkaLine)?.[1]);
    const listed = await topicCommand(dir.file("sasl.properties"), `localhost:${kafkaPort}`, ["--list"]);
    expect(listed.stdout.split("\n")).toContain("from-java");
    expect(listed.exitCode).toBe(0);
    await broker.lines.waitFor(
      (l) => l === 'booblik: audit: user "alice" from 127.0.0.1 (kafka): logged in (SASL SCRAM-SHA-512)',
      "the Java client's SCRAM login",
    );
  });
});
