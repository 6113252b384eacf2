/**
 * ACLs on the Kafka listener, through a real broker process (--users-file, --authorizer acl,
 * --super-users User:admin, --kafka-port 0) and real clients: kafkajs's admin creates, describes
 * and deletes ACLs (CreateAcls, DescribeAcls, DeleteAcls v1); kcat (librdkafka) and kafkajs as a
 * user get each error code the issue lists — TOPIC_AUTHORIZATION_FAILED (29) for a produce, a
 * consume and a topic create, GROUP_AUTHORIZATION_FAILED (30) for a group, CLUSTER_AUTHORIZATION_FAILED
 * (31) for an ACL change and for an idempotent producer's InitProducerId without WRITE (nothing is
 * written), SASL_AUTHENTICATION_FAILED (58) for a wrong password — and do what their
 * ACLs allow (produce, consume, a consumer group with commits); Metadata lists only the topics the
 * user may describe; a hostile CreateAcls (bad enums, a huge count) gets clear errors, no crash.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  type Admin,
  ConfigResourceTypes,
  type EachMessagePayload,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from "kafkajs";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { rawConnect } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import { Expect } from "./bytes.ts";

setDefaultTimeout(30_000);

const PASSWORDS = { admin: "admin secret", alice: "alice secret" } as const;

function usersFile(file: string): string {
  const users = readUsersFileOrEmpty(file);
  for (const [name, password] of Object.entries(PASSWORDS)) setUser(users, name, password);
  writeUsersFile(file, users);
  return file;
}

async function kcat(port: number, user: keyof typeof PASSWORDS, args: string[], input?: string) {
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
      `sasl.username=${user}`,
      "-X",
      `sasl.password=${PASSWORDS[user]}`,
      ...args,
    ],
    {
      stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, exitCode };
}

function kafkaFor(port: number, user: keyof typeof PASSWORDS, password: string = PASSWORDS[user]): Kafka {
  return new Kafka({
    brokers: [`127.0.0.1:${port}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    sasl: { mechanism: "scram-sha-256", username: user, password },
  });
}

/**
 * The kafkajs error `work` rejects with: the Kafka error name (`type`) found on it or on what it
 * wraps (kafkajs nests them: `originalError`, `cause`, and per topic, group or partition `errors`, `groups`,
 * `partitions`), and its class name and message.
 */
async function kafkajsError(
  work: Promise<unknown>,
): Promise<{ type: string; name: string; message: string }> {
  try {
    await work;
  } catch (error) {
    const e = error as { name: string; message: string };
    return { type: kafkaType(error) ?? "", name: e.name, message: e.message };
  }
  throw new Error("the request was not refused");
}

function kafkaType(error: unknown, depth = 0): string | undefined {
  if (error === null || typeof error !== "object" || depth > 4) return undefined;
  const e = error as Record<string, unknown>;
  if (typeof e.type === "string") return e.type;
  const nested = [e.originalError, e.cause, e.error];
  for (const list of [e.errors, e.groups, e.partitions]) if (Array.isArray(list)) nested.push(...list);
  for (const inner of nested) {
    const found = kafkaType(inner, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

const aliceAcl = (
  resourceType: number,
  resourceName: string,
  operation: number,
  pattern = ResourcePatternTypes.LITERAL,
) => ({
  resourceType,
  resourceName,
  resourcePatternType: pattern,
  principal: "User:alice",
  host: "*",
  operation,
  permissionType: AclPermissionTypes.ALLOW,
});

describe("ACLs on the Kafka listener", () => {
  test("kafkajs manages ACLs; kcat and kafkajs get 29, 30, 31 and 58 where refused and work where allowed; Metadata shows only describable topics", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--authorizer",
      "acl",
      "--super-users",
      "User:admin",
      "--kafka-port",
      "0",
      "--metrics-port",
      "0",
    ]);
    const port = await kafkaPortOf(broker);
    const admin = kafkaFor(port, "admin").admin();
    await admin.connect();
    const alice = kafkaFor(port, "alice");
    const aliceAdmin = alice.admin();
    await aliceAdmin.connect();
    try {
      await admin.createTopics({
        topics: [
          { topic: "orders", numPartitions: 1 },
          { topic: "payments", numPartitions: 1 },
        ],
      });

      // Nothing allowed yet: kcat -L sees no topic at all.
      const empty = await kcat(port, "alice", ["-L", "-J"]);
      expect(empty.exitCode).toBe(0);
      expect(JSON.parse(empty.stdout).topics).toEqual([]);

      // 31: alice may not change ACLs.
      const cluster = await kafkajsError(
        aliceAdmin.createAcls({
          acl: [aliceAcl(AclResourceTypes.CLUSTER, "kafka-cluster", AclOperationTypes.ALL)],
        }),
      );
      expect(cluster.type).toBe("CLUSTER_AUTHORIZATION_FAILED");

      // The super user grants: READ and WRITE on orders, READ on groups starting "billing".
      await admin.createAcls({
        acl: [
          aliceAcl(AclResourceTypes.TOPIC, "orders", AclOperationTypes.WRITE),
          aliceAcl(AclResourceTypes.TOPIC, "orders", AclOperationTypes.READ),
          aliceAcl(AclResourceTypes.GROUP, "billing", AclOperationTypes.READ, ResourcePatternTypes.PREFIXED),
        ],
      });
      const described = await admin.describeAcls({
        resourceType: AclResourceTypes.ANY,
        resourcePatternType: ResourcePatternTypes.ANY,
        principal: "User:alice",
        host: "*",
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY,
      });
      expect(
        described.resources.map((r) => [
          r.resourceType,
          r.resourceName,
          r.resourcePatternType,
          r.acls.length,
        ]),
      ).toEqual([
        [AclResourceTypes.TOPIC, "orders", ResourcePatternTypes.LITERAL, 2],
        [AclResourceTypes.GROUP, "billing", ResourcePatternTypes.PREFIXED, 1],
      ]);

      // Metadata: orders only.
      const listed = await kcat(port, "alice", ["-L", "-J"]);
      expect(JSON.parse(listed.stdout).topics.map((t: { topic: string }) => t.topic)).toEqual(["orders"]);
      const named = await kcat(port, "alice", ["-L", "-J", "-t", "payments"]);
      expect(JSON.parse(named.stdout).topics[0].error).toBe("Broker: Topic authorization failed");

      // 29 through kcat: produce to payments (refused at Metadata); produce and consume orders work.
      const refused = await kcat(port, "alice", ["-P", "-t", "payments", "-p", "0"], "x\n");
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toContain("Topic authorization failed");
      const produced = await kcat(port, "alice", ["-P", "-t", "orders", "-p", "0"], "one\ntwo\n");
      expect(produced.stderr).toBe("");
      expect(produced.exitCode).toBe(0);
      const consumed = await kcat(port, "alice", [
        "-C",
        "-t",
        "orders",
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
      ]);
      expect(consumed.stdout).toBe("one\ntwo\n");
      expect((await kcat(port, "admin", ["-P", "-t", "payments", "-p", "0"], "p\n")).exitCode).toBe(0);

      // DESCRIBE on payments: Metadata answers it, and the Produce and the Fetch themselves are
      // refused with 29 (WRITE and READ are not implied by DESCRIBE).
      await admin.createAcls({
        acl: [aliceAcl(AclResourceTypes.TOPIC, "payments", AclOperationTypes.DESCRIBE)],
      });
      const produceRefused = await kcat(port, "alice", ["-P", "-t", "payments", "-p", "0"], "x\n");
      expect(produceRefused.exitCode).not.toBe(0);
      expect(produceRefused.stderr).toContain("Topic authorization failed");
      const consumeRefused = await kcat(port, "alice", [
        "-C",
        "-t",
        "payments",
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
      ]);
      expect(consumeRefused.stdout).toBe("");
      expect(consumeRefused.stderr).toContain("Topic authorization failed");

      // 29 through kafkajs: a producer to payments, a topic create.
      const producer = alice.producer();
      await producer.connect();
      const producerError = await kafkajsError(
        producer.send({ topic: "payments", messages: [{ value: "x" }] }),
      );
      expect(producerError.type).toBe("TOPIC_AUTHORIZATION_FAILED");
      await producer.send({ topic: "orders", messages: [{ value: "three" }] });
      await producer.disconnect();
      const createError = await kafkajsError(aliceAdmin.createTopics({ topics: [{ topic: "mine" }] }));
      expect(createError.type).toBe("TOPIC_AUTHORIZATION_FAILED");

      // 30: a group alice may describe but not read or delete: kafkajs's consumer is refused at
      // JoinGroup, its admin at DeleteGroups. (Without DESCRIBE, FindCoordinator answers 30 too,
      // which kafkajs reports only as "Failed to find group coordinator".)
      await admin.createAcls({
        acl: [aliceAcl(AclResourceTypes.GROUP, "audit", AclOperationTypes.DESCRIBE)],
      });
      const deleteGroupError = await kafkajsError(aliceAdmin.deleteGroups(["audit"]));
      expect(deleteGroupError.type).toBe("GROUP_AUTHORIZATION_FAILED");
      const auditConsumer = alice.consumer({ groupId: "audit", retry: { retries: 0 } });
      const crashed = new Promise<string>((resolve) => {
        auditConsumer.on(auditConsumer.events.CRASH, (event) => {
          resolve((event.payload.error as { type?: string }).type ?? event.payload.error.name);
        });
      });
      await auditConsumer.connect();
      try {
        await auditConsumer.subscribe({ topic: "orders", fromBeginning: true });
        await auditConsumer.run({ eachMessage: async () => {} });
        expect(await crashed).toBe("GROUP_AUTHORIZATION_FAILED");
      } finally {
        await auditConsumer.disconnect();
      }
      // A group alice may read (billing-1, by the PREFIXED ACL) runs and commits.
      const consumer = alice.consumer({
        groupId: "billing-1",
        sessionTimeout: 10_000,
        rebalanceTimeout: 10_000,
        heartbeatInterval: 300,
        maxWaitTimeInMs: 200,
      });
      const received: string[] = [];
      await consumer.connect();
      try {
        await consumer.subscribe({ topic: "orders", fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }: EachMessagePayload) => {
            received.push(message.value!.toString());
          },
        });
        await waitUntil(() => received.length === 3, "alice's consumer group to read orders");
      } finally {
        await consumer.disconnect();
      }
      expect(received).toEqual(["one", "two", "three"]);
      const committed = await aliceAdmin.fetchOffsets({ groupId: "billing-1", topics: ["orders"] });
      expect(committed[0]!.partitions[0]!.offset).toBe("3");

      // DeleteAcls: the group ACL goes, and with it alice's group access.
      const deleted = await admin.deleteAcls({
        filters: [
          {
            resourceType: AclResourceTypes.GROUP,
            resourcePatternType: ResourcePatternTypes.ANY,
            principal: "User:alice",
            operation: AclOperationTypes.READ,
            permissionType: AclPermissionTypes.ANY,
          },
        ],
      });
      expect(deleted.filterResponses[0]!.matchingAcls.map((a) => a.resourceName)).toEqual(["billing"]);
      const left = await admin.describeAcls({
        resourceType: AclResourceTypes.GROUP,
        resourcePatternType: ResourcePatternTypes.ANY,
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY,
      });
      expect(left.resources.map((r) => r.resourceName)).toEqual(["audit"]);

      // 58: a wrong password.
      const wrong = kafkaFor(port, "alice", "wrong").admin();
      const sasl = await kafkajsError(wrong.connect());
      expect(sasl.name).toBe("KafkaJSSASLAuthenticationError");
      expect(sasl.message).toContain("SASL SCRAM SHA256 authentication failed");

      await broker.lines.waitFor(
        (line) =>
          line.includes(
            'audit: user "alice" from 127.0.0.1 (kafka): denied: User:alice (from 127.0.0.1) is not authorized to WRITE TOPIC "payments"',
          ),
        "the Kafka denial audit line",
      );
      const metricsPort = Number(/metrics on 127\.0\.0\.1:(\d+)/.exec(broker.startLine)?.[1]);
      const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(
        metricValue(scrape, 'booblik_authorization_denials_total{listener="kafka"}'),
      ).toBeGreaterThanOrEqual(7);
    } finally {
      await aliceAdmin.disconnect();
      await admin.disconnect();
    }
  });

  test("kafkajs's admin APIs, one by one: refused without the ACL each needs, done with it", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--authorizer",
      "acl",
      "--super-users",
      "User:admin",
      "--kafka-port",
      "0",
    ]);
    const port = await kafkaPortOf(broker);
    const admin = kafkaFor(port, "admin").admin();
    await admin.connect();
    const alice = kafkaFor(port, "alice");
    const aliceAdmin = alice.admin();
    await aliceAdmin.connect();
    const grant = (resourceType: number, resourceName: string, operation: number) =>
      admin.createAcls({ acl: [aliceAcl(resourceType, resourceName, operation)] });
    try {
      for (const topic of ["listed", "grown", "configured", "purged", "doomed"])
        await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
      const producer = kafkaFor(port, "admin").producer();
      await producer.connect();
      await producer.send({ topic: "purged", messages: [{ value: "a" }, { value: "b" }] });
      await producer.disconnect();
      const steps: {
        what: string;
        refusedAs: string;
        grant: [number, string, number];
        run: (a: Admin) => Promise<unknown>;
      }[] = [
        {
          what: "ListOffsets",
          refusedAs: "TOPIC_AUTHORIZATION_FAILED",
          grant: [AclResourceTypes.TOPIC, "listed", AclOperationTypes.DESCRIBE],
          run: (a) => a.fetchTopicOffsets("listed"),
        },
        {
          what: "CreatePartitions",
          refusedAs: "TOPIC_AUTHORIZATION_FAILED",
          grant: [AclResourceTypes.TOPIC, "grown", AclOperationTypes.ALTER],
          run: (a) => a.createPartitions({ topicPartitions: [{ topic: "grown", count: 2 }] }),
        },
        {
          what: "DescribeConfigs",
          refusedAs: "TOPIC_AUTHORIZATION_FAILED",
          grant: [AclResourceTypes.TOPIC, "configured", AclOperationTypes.DESCRIBE_CONFIGS],
          run: (a) =>
            a.describeConfigs({
              resources: [{ type: ConfigResourceTypes.TOPIC, name: "configured" }],
              includeSynonyms: false,
            }),
        },
        {
          what: "DeleteRecords",
          refusedAs: "TOPIC_AUTHORIZATION_FAILED",
          grant: [AclResourceTypes.TOPIC, "purged", AclOperationTypes.DELETE],
          // kafkajs reads the partitions' leaders from Metadata first: DESCRIBE is granted below.
          run: async (a) => {
            await a.fetchTopicOffsets("purged");
            await a.deleteTopicRecords({ topic: "purged", partitions: [{ partition: 0, offset: "1" }] });
          },
        },
        {
          what: "DeleteTopics",
          refusedAs: "TOPIC_AUTHORIZATION_FAILED",
          grant: [AclResourceTypes.TOPIC, "doomed", AclOperationTypes.DELETE],
          run: (a) => a.deleteTopics({ topics: ["doomed"] }),
        },
      ];
      // DESCRIBE on the topics whose kafkajs calls read Metadata before the request under test.
      await grant(AclResourceTypes.TOPIC, "purged", AclOperationTypes.DESCRIBE);
      // Each run on a new kafkajs admin: one keeps refreshing the Metadata of every topic it used
      // before, and a topic refused there (29) makes its later calls fail on their own.
      const runAsAlice = async (run: (a: Admin) => Promise<unknown>) => {
        const fresh = alice.admin();
        await fresh.connect();
        try {
          return await run(fresh);
        } finally {
          await fresh.disconnect();
        }
      };
      for (const step of steps) {
        const refused = await kafkajsError(runAsAlice(step.run));
        expect([step.what, refused.type || refused.message]).toEqual([step.what, step.refusedAs]);
        await grant(...step.grant);
        await runAsAlice(step.run);
      }
      const low = await aliceAdmin.fetchTopicOffsets("purged");
      expect(low[0]!.low).toBe("1");

      // ListGroups lists only the groups alice may describe; DescribeGroups then answers.
      const offsetsProducer = kafkaFor(port, "admin").admin();
      await offsetsProducer.connect();
      await offsetsProducer.setOffsets({
        groupId: "ledger",
        topic: "listed",
        partitions: [{ partition: 0, offset: "0" }],
      });
      await offsetsProducer.setOffsets({
        groupId: "secret",
        topic: "listed",
        partitions: [{ partition: 0, offset: "0" }],
      });
      await offsetsProducer.disconnect();
      expect((await admin.listGroups()).groups.map((g) => g.groupId).sort()).toEqual(["ledger", "secret"]);
      expect((await aliceAdmin.listGroups()).groups).toEqual([]);
      await grant(AclResourceTypes.GROUP, "ledger", AclOperationTypes.DESCRIBE);
      expect((await aliceAdmin.listGroups()).groups.map((g) => g.groupId)).toEqual(["ledger"]);
      expect((await aliceAdmin.describeGroups(["ledger"])).groups[0]!.state).toBe("Empty");

      // InitProducerId: an idempotent producer (kafkajs, kcat) with DESCRIBE but no WRITE anywhere
      // gets 31 and writes nothing; with WRITE on a topic (Kafka ≥ 2.8's rule) it gets an id and
      // sends.
      const highWatermark = async () => (await admin.fetchTopicOffsets("listed"))[0]!.high;
      expect(await highWatermark()).toBe("0");
      const refusedProducer = alice.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        retry: { retries: 1 },
      });
      const noIdKafkajs = await kafkajsError(
        (async () => {
          await refusedProducer.connect();
          try {
            await refusedProducer.send({ topic: "listed", messages: [{ value: "x" }] });
          } finally {
            await refusedProducer.disconnect();
          }
        })(),
      );
      expect(noIdKafkajs.type).toBe("CLUSTER_AUTHORIZATION_FAILED");
      const idempotent = ["-X", "enable.idempotence=true", "-P", "-t", "listed", "-p", "0"];
      const noId = await kcat(port, "alice", idempotent, "x\n");
      // librdkafka's own log line, printed whichever way kcat then goes.
      expect(noId.stderr).toContain(
        "Fatal error: Broker: Cluster authorization failed: Failed to acquire idempotence PID",
      );
      // Not kcat's exit code. kcat 1.7.1 exits 1 when the fatal error comes before it queues the
      // message ("Failed to produce message") or when the purged message's delivery report comes in
      // time ("Delivery failed"), but its error_cb sets conf.run = 0, which also ends its final wait
      // for delivery reports: when librdkafka's purge has not reported yet, kcat exits 0 ("Producer
      // terminating with 1 message (1 byte) still in queue"): 42 runs in 200 at load 11 on this
      // machine (bench/compat/kcat-idempotent-refusal.ts), every one with the broker's 31 in stderr.
      // What matters is that nothing was written.
      expect(await highWatermark()).toBe("0");
      await grant(AclResourceTypes.TOPIC, "listed", AclOperationTypes.WRITE);
      const withId = await kcat(port, "alice", idempotent, "x\n");
      expect(withId.stderr).toBe("");
      expect(withId.exitCode).toBe(0);
      expect(await highWatermark()).toBe("1");
      const allowedProducer = alice.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        retry: { retries: 1 },
      });
      await allowedProducer.connect();
      await allowedProducer.send({ topic: "listed", messages: [{ value: "y" }] });
      await allowedProducer.disconnect();
      expect(await highWatermark()).toBe("2");
    } finally {
      await aliceAdmin.disconnect();
      await admin.disconnect();
    }
  });

  test("a hostile CreateAcls: bad enums and principals are refused one by one with a message, too many at once all, a count beyond the frame closes the connection; the broker goes on", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--authorizer",
      "acl",
      "--super-users",
      "User:ANONYMOUS",
      "--kafka-port",
      "0",
    ]);
    const port = await kafkaPortOf(broker);
    const socket = await rawConnect(port);
    const creation = (e: Expect, type: number, principal: string, operation: number) =>
      e.i8(type).str("t").i8(3).str(principal).str("*").i8(operation).i8(3);
    // CreateAcls v1: an unknown resource type, a bad principal, an unknown operation, a good one.
    const request = new Expect().i16(30).i16(1).i32(5).str("c").i32(4);
    creation(request, 42, "User:a", 3);
    creation(request, 2, "nobody", 3);
    creation(request, 2, "User:a", 99);
    creation(request, 2, "User:a", 3);
    socket.write(request.frame());
    const answer = await readKafkaResponse(socket);
    const view = new DataView(answer.buffer, answer.byteOffset);
    expect(view.getInt32(4)).toBe(5); // correlation id
    expect(view.getInt32(12)).toBe(4); // results
    const results = decodeResults(answer.subarray(16), 4);
    expect(results).toEqual([
      [
        KAFKA_ERROR.INVALID_REQUEST,
        "resource type unknown (42) cannot be used in an ACL here: booblik's ACLs name a TOPIC, a GROUP or the CLUSTER",
      ],
      [
        KAFKA_ERROR.INVALID_REQUEST,
        'principal "nobody" is not of the form User:<name> (User:* for everyone)',
      ],
      [
        KAFKA_ERROR.INVALID_REQUEST,
        "operation unknown (99) is not valid on a TOPIC: it takes ALL, READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS",
      ],
      [KAFKA_ERROR.NONE, null],
    ]);
    // 1,001 creations: every one refused, nothing stored.
    const many = new Expect().i16(30).i16(1).i32(6).str("c").i32(1001);
    for (let i = 0; i < 1001; i++) creation(many, 2, `User:u${i}`, 3);
    const before = socket.received().length;
    socket.write(many.frame());
    const manyAnswer = await readKafkaResponse(socket, before);
    const manyResults = decodeResults(manyAnswer.subarray(16), 1001);
    expect(new Set(manyResults.map((r) => JSON.stringify(r)))).toEqual(
      new Set([JSON.stringify([KAFKA_ERROR.INVALID_REQUEST, "1001 ACLs in one CreateAcls: at most 1000"])]),
    );
    // A count of 2^31 − 1 in a small frame: the connection is closed (a malformed request).
    socket.write(new Expect().i16(30).i16(1).i32(7).str("c").i32(0x7fffffff).frame());
    await socket.closed;
    const line = await broker.lines.waitFor(
      (l) => l.includes("malformed CREATE_ACLS v1 request"),
      "the close line",
    );
    expect(line).toContain("creations");
    // Still serving, with exactly the one good ACL.
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const admin = kafka.admin();
    await admin.connect();
    const all = await admin.describeAcls({
      resourceType: AclResourceTypes.ANY,
      resourcePatternType: ResourcePatternTypes.ANY,
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    });
    await admin.disconnect();
    expect(all.resources.flatMap((r) => r.acls.map((a) => a.principal))).toEqual(["User:a"]);
  });
});

async function readKafkaResponse(
  socket: Awaited<ReturnType<typeof rawConnect>>,
  fromByte = 0,
): Promise<Uint8Array> {
  const head = await socket.waitForBytes(fromByte + 4);
  const size = new DataView(head.buffer, head.byteOffset + fromByte).getInt32(0);
  const all = await socket.waitForBytes(fromByte + 4 + size);
  return all.subarray(fromByte, fromByte + 4 + size);
}

/** CreateAcls v1 results: error_code INT16, error_message NULLABLE_STRING, each. */
function decodeResults(bytes: Uint8Array, count: number): [number, string | null][] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  let at = 0;
  const out: [number, string | null][] = [];
  for (let i = 0; i < count; i++) {
    const code = view.getInt16(at);
    const length = view.getInt16(at + 2);
    at += 4;
    const message = length < 0 ? null : new TextDecoder().decode(bytes.subarray(at, at + length));
    if (length > 0) at += length;
    out.push([code, message]);
  }
  expect(at).toBe(bytes.length);
  return out;
}

describe("ACL hosts of IPv4 clients on an IPv6 socket", () => {
  test("a listener on an IPv6 socket sees IPv4 clients as ::ffff:a.b.c.d: a DENY for host 127.0.0.1 still refuses them, on both protocols (before, it never matched)", async () => {
    using dir = tempDir();
    // The IPv4-mapped loopback: an IPv6 socket, reached by IPv4 clients of 127.0.0.1 only, as a
    // listener on `::` is reached by every IPv4 client.
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--authorizer",
      "acl",
      "--super-users",
      "User:admin",
      "--host",
      "::ffff:127.0.0.1",
      "--kafka-port",
      "0",
    ]);
    const port = await kafkaPortOf(broker);
    const cli = (user: keyof typeof PASSWORDS, args: string[], stdin?: string) =>
      runCli(["--broker", `127.0.0.1:${broker.port}`, "--user", user, ...args], {
        env: { BOOBLIK_PASSWORD: PASSWORDS[user] },
        ...(stdin === undefined ? {} : { stdin }),
      });
    const created = await cli("admin", ["topics", "create", "orders"]);
    expect(created.stderr).toBe("");
    expect(created.exitCode).toBe(0);
    expect((await cli("admin", ["produce", "orders"], "kept\n")).exitCode).toBe(0);
    const grant = [
      "acl",
      "add",
      "--principal",
      "User:alice",
      "--operation",
      "read",
      "--topic",
      "orders",
      "--prefixed",
    ];
    expect((await cli("admin", grant)).exitCode).toBe(0);
    // Allowed from any host: both protocols read the record.
    expect((await cli("alice", ["consume", "orders", "--max", "1"])).stdout).toContain("kept");
    const read = () => kcat(port, "alice", ["-C", "-t", "orders", "-p", "0", "-o", "beginning", "-e", "-q"]);
    expect((await read()).stdout).toBe("kept\n");
    const deny = [
      ...["acl", "add", "--principal", "User:alice", "--operation", "read", "--deny"],
      ...["--topic", "orders", "--host", "127.0.0.1"],
    ];
    expect((await cli("admin", deny)).exitCode).toBe(0);
    const nativeRefused = await cli("alice", ["consume", "orders", "--max", "1"]);
    expect(nativeRefused.exitCode).toBe(1);
    expect(nativeRefused.stderr).toContain("User:alice (from 127.0.0.1) is not authorized to READ");
    const kafkaRefused = await read();
    expect(kafkaRefused.stdout).toBe("");
    expect(kafkaRefused.stderr).toContain("Topic authorization failed");
  });
});
