/**
 * ACLs managed and met by the Java tools docs/security.md gives (`kafka-acls.sh`, which runs
 * org.apache.kafka.tools.AclCommand, and `kafka-topics.sh`, TopicCommand), kafka-clients 4.1.1
 * over SASL_PLAINTEXT with SCRAM-SHA-512, against a broker with `--authorizer acl`. The jars are the
 * ones bench/compat/kafka-node.ts fetched into the compat cache (nothing of Kafka is in the
 * repository); without them, or without java, the test is skipped and says why.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { kafkaJavaUnavailable, kafkaTool } from "../helpers/kafka-java.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(180_000);

if (kafkaJavaUnavailable !== undefined)
  console.log(`kafka/java-acl.test.ts: skipped: ${kafkaJavaUnavailable}`);

describe.skipIf(kafkaJavaUnavailable !== undefined)("ACLs from the Java tools", () => {
  test("kafka-acls adds, lists and removes; kafka-topics as a user is refused, then allowed by an ACL", async () => {
    using dir = tempDir();
    const usersFile = dir.file("users.json");
    const users = readUsersFileOrEmpty(usersFile);
    setUser(users, "admin", "admin password");
    setUser(users, "alice", "alice password");
    writeUsersFile(usersFile, users);
    const properties = (user: string, password: string) => {
      const file = dir.file(`${user}.properties`);
      fs.writeFileSync(
        file,
        [
          "security.protocol=SASL_PLAINTEXT",
          "sasl.mechanism=SCRAM-SHA-512",
          `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`,
          "",
        ].join("\n"),
      );
      return file;
    };
    const admin = properties("admin", "admin password");
    const alice = properties("alice", "alice password");
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile,
      "--authorizer",
      "acl",
      "--super-users",
      "User:admin",
      "--kafka-port",
      "0",
    ]);
    const bootstrap = `127.0.0.1:${await kafkaPortOf(broker)}`;

    // alice may not create a topic yet.
    const refused = await kafkaTool("TopicCommand", alice, bootstrap, ["--create", "--topic", "orders-eu"]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain(
      'User:alice (from 127.0.0.1) is not authorized to CREATE TOPIC "orders-eu"',
    );

    const added = await kafkaTool("AclCommand", admin, bootstrap, [
      "--add",
      "--allow-principal",
      "User:alice",
      "--operation",
      "Create",
      "--operation",
      "Describe",
      "--topic",
      "orders",
      "--resource-pattern-type",
      "prefixed",
    ]);
    expect(added.exitCode).toBe(0);
    const listed = await kafkaTool("AclCommand", admin, bootstrap, ["--list"]);
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout).toContain("ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED)");
    expect(listed.stdout).toContain("(principal=User:alice, host=*, operation=CREATE, permissionType=ALLOW)");
    expect(listed.stdout).toContain(
      "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)",
    );

    const created = await kafkaTool("TopicCommand", alice, bootstrap, ["--create", "--topic", "orders-eu"]);
    expect(created.stdout).toContain("Created topic orders-eu.");
    expect(created.exitCode).toBe(0);
    // A topic outside the prefix stays refused; the listing shows only what alice may describe.
    expect(
      (await kafkaTool("TopicCommand", alice, bootstrap, ["--create", "--topic", "billing"])).exitCode,
    ).not.toBe(0);
    await kafkaTool("TopicCommand", admin, bootstrap, ["--create", "--topic", "secret"]);
    const topics = await kafkaTool("TopicCommand", alice, bootstrap, ["--list"]);
    expect(topics.stdout.trim().split("\n")).toEqual(["orders-eu"]);

    const removed = await kafkaTool("AclCommand", admin, bootstrap, [
      "--remove",
      "--force",
      "--allow-principal",
      "User:alice",
      "--operation",
      "Create",
      "--topic",
      "orders",
      "--resource-pattern-type",
      "prefixed",
    ]);
    expect(removed.exitCode).toBe(0);
    expect(
      (await kafkaTool("TopicCommand", alice, bootstrap, ["--create", "--topic", "orders-us"])).exitCode,
    ).not.toBe(0);
    await broker.lines.waitFor(
      (l) =>
        l ===
        'booblik: audit: user "admin" from 127.0.0.1 (kafka): deleted 1 ACL: ALLOW User:alice CREATE on TOPIC "orders" (PREFIXED) from any host',
      "the audit line of the removal",
    );
  });
});
