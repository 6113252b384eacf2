/**
 * What kcat 1.7.1 does when an idempotent producer is refused at InitProducerId: runs
 * `kcat -X enable.idempotence=true -P` N times as a user with DESCRIBE but no WRITE against one
 * broker (--authorizer acl, SCRAM users, a temporary data directory), and prints how many runs ended
 * each way (exit code, kcat's last stderr line), whether librdkafka logged the cluster-authorization
 * fatal error, and the topic's high watermark after each run (0: nothing was written).
 *
 * Why it exists: test/kafka/acl.test.ts once saw such a kcat exit 0. The figures in docs/security.md
 * ("kcat (librdkafka)") come from this script; kcat's exit code depends on thread timing, so the
 * load average is printed with them.
 *
 * Usage: bun bench/compat/kcat-idempotent-refusal.ts [runs]   (default 100; needs kcat on PATH)
 */
import os from "node:os";
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from "kafkajs";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { kafkaPortOf, startBroker } from "../../test/helpers/broker-process.ts";
import { tempDir } from "../../test/helpers/temp-dir.ts";

const runs = Number(process.argv[2] ?? 100);
const PASSWORDS = { admin: "admin secret", alice: "alice secret" } as const;

using dir = tempDir("kcat-idempotent-refusal");
const users = readUsersFileOrEmpty(dir.file("users.json"));
for (const [name, password] of Object.entries(PASSWORDS)) setUser(users, name, password);
writeUsersFile(dir.file("users.json"), users);
await using broker = await startBroker(dir.file("data"), [
  "--users-file",
  dir.file("users.json"),
  "--authorizer",
  "acl",
  "--super-users",
  "User:admin",
  "--kafka-port",
  "0",
]);
const port = await kafkaPortOf(broker);
const admin = new Kafka({
  brokers: [`127.0.0.1:${port}`],
  logLevel: logLevel.NOTHING,
  sasl: { mechanism: "scram-sha-256", username: "admin", password: PASSWORDS.admin },
}).admin();
await admin.connect();
try {
  await admin.createTopics({ topics: [{ topic: "listed", numPartitions: 1 }] });
  await admin.createAcls({
    acl: [
      {
        resourceType: AclResourceTypes.TOPIC,
        resourceName: "listed",
        resourcePatternType: ResourcePatternTypes.LITERAL,
        principal: "User:alice",
        host: "*",
        operation: AclOperationTypes.DESCRIBE,
        permissionType: AclPermissionTypes.ALLOW,
      },
    ],
  });
  const loadBefore = os.loadavg()[0]!;
  const outcomes = new Map<string, number>();
  for (let run = 0; run < runs; run++) {
    const child = Bun.spawn(
      [
        "kcat",
        "-b",
        `127.0.0.1:${port}`,
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanisms=SCRAM-SHA-256",
        "-X",
        "sasl.username=alice",
        "-X",
        `sasl.password=${PASSWORDS.alice}`,
        "-X",
        "enable.idempotence=true",
        "-P",
        "-t",
        "listed",
        "-p",
        "0",
      ],
      { stdin: new TextEncoder().encode("x\n"), stdout: "ignore", stderr: "pipe" },
    );
    const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    const highWatermark = (await admin.fetchTopicOffsets("listed"))[0]!.high;
    const last = (stderr.trim().split("\n").at(-1) ?? "")
      .replace(/^%\d\|[\d.]+\|/, "")
      .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT");
    const fatal = stderr.includes("Fatal error: Broker: Cluster authorization failed");
    const key = `exit ${exitCode}, cluster-authorization fatal error logged: ${fatal}, high watermark ${highWatermark}, last line: ${last}`;
    outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  }
  console.log(
    `${runs} runs, load average (1 min) ${loadBefore.toFixed(1)} before, ${os.loadavg()[0]!.toFixed(1)} after`,
  );
  for (const [outcome, count] of [...outcomes].sort((a, b) => b[1] - a[1]))
    console.log(`${count}\t${outcome}`);
} finally {
  await admin.disconnect();
}
