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
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { kafkaJavaUnavailable, kafkaTool } from "../helpers/kafka-java.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates } from "../helpers/tls-certs.ts";

setDefaultTimeout(180_000);

if (kafkaJavaUnavailable !== undefined)
  console.log(`kafka/java-tls.test.ts: skipped: ${kafkaJavaUnavailable}`);

describe.skipIf(kafkaJavaUnavailable !== undefined)("the Java client over TLS", () => {
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
      const created = await kafkaTool(
        "TopicCommand",
        dir.file("ssl.properties"),
        `localhost:${kafkaTlsPort}`,
        ["--create", "--topic", "from-java", "--partitions", "2"],
      );
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
    const kafkaPort = await kafkaPortOf(broker);
    const listed = await kafkaTool("TopicCommand", dir.file("sasl.properties"), `localhost:${kafkaPort}`, [
      "--list",
    ]);
    expect(listed.stdout.split("\n")).toContain("from-java");
    expect(listed.exitCode).toBe(0);
    await broker.lines.waitFor(
      (l) => l === 'booblik: audit: user "alice" from 127.0.0.1 (kafka): logged in (SASL SCRAM-SHA-512)',
      "the Java client's SCRAM login",
    );
  });
});
