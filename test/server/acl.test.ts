/**
 * ACLs on the native listener, through a real broker process (--users-file, --authorizer acl,
 * --super-users User:admin) and real sockets: every native request refused for a user without the
 * ACL it needs (with the code docs/protocol.md names: TOPIC_, GROUP_, CLUSTER_AUTHORIZATION_FAILED),
 * then allowed once the super user adds that ACL, and refused again by a DENY (deny wins); METADATA
 * lists only topics the user may describe; booblik-cli acl add/list/remove; ACLs survive a restart;
 * denials are audited and counted in /metrics; without --authorizer the ACL requests answer
 * SECURITY_DISABLED and nothing is checked; a hostile CREATE_ACLS gets a clear error.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import {
  ACL_PERMISSION,
  type Acl,
  MATCH_ALL_ACLS,
  ACL_OPERATION as OP,
  PATTERN_TYPE,
  RESOURCE_TYPE,
} from "../../src/auth/acl.ts";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import type { BrokerError } from "../../src/client/connection.ts";
import { encodeCreateAclsRequest } from "../../src/protocol/acl-messages.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API } from "../../src/protocol/frame.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { metricValue } from "../helpers/metrics.ts";
import { frame, rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const PASSWORDS = { admin: "admin secret", alice: "alice secret" } as const;

function usersFile(file: string): string {
  const users = readUsersFileOrEmpty(file);
  for (const [name, password] of Object.entries(PASSWORDS)) setUser(users, name, password);
  writeUsersFile(file, users);
  return file;
}

function connect(port: number, user: keyof typeof PASSWORDS): Promise<BooblikClient> {
  return BooblikClient.connect({ host: "127.0.0.1", port, retries: 0, user, password: PASSWORDS[user] });
}

function acl(fields: Partial<Acl>): Acl {
  return {
    resourceType: RESOURCE_TYPE.TOPIC,
    resourceName: "t",
    patternType: PATTERN_TYPE.LITERAL,
    principal: "User:alice",
    host: "*",
    operation: OP.READ,
    permission: ACL_PERMISSION.ALLOW,
    ...fields,
  };
}

/** The wire code and message a request was refused with. */
async function refusal(
  work: Promise<unknown>,
  what = "the request",
): Promise<{ wireCode: number; message: string }> {
  try {
    await work;
  } catch (error) {
    return { wireCode: (error as BrokerError).wireCode, message: (error as Error).message };
  }
  throw new Error(`${what} was not refused`);
}

const TOPIC_DENIED = WIRE_ERROR_CODES.TOPIC_AUTHORIZATION_FAILED;
const GROUP_DENIED = WIRE_ERROR_CODES.GROUP_AUTHORIZATION_FAILED;
const CLUSTER_DENIED = WIRE_ERROR_CODES.CLUSTER_AUTHORIZATION_FAILED;

interface Case {
  what: string;
  /** The ACL that lets alice do it. */
  grant: Partial<Acl>;
  code: number;
  /** What the refusal names: operation and resource. */
  names: string;
  run: (alice: BooblikClient) => Promise<unknown>;
}

describe("ACLs on the native listener", () => {
  test("each native request is refused without its ACL (naming principal, operation, resource), allowed with it, and refused again by a DENY", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--authorizer",
      "acl",
      "--super-users",
      "User:admin",
      "--kafka-port",
      "off",
      "--metrics-port",
      "0",
    ]);
    expect(broker.startLine).toContain("ACLs enforced (0 ACLs, super users: User:admin)");
    const admin = await connect(broker.port, "admin");
    const alice = await connect(broker.port, "alice");
    for (const name of ["t", "gone", "purged", "grown", "altered"]) await admin.createTopic(name);
    await admin.produce("t", 0, batchOfValues(["a", "b"]));
    await admin.produce("purged", 0, batchOfValues(["a", "b"]));
    await admin.commitOffsets("g", [{ topic: "t", partition: 0, offset: 1 }]);
    await admin.commitOffsets("doomed", [{ topic: "t", partition: 0, offset: 1 }]);

    const cases: Case[] = [
      {
        what: "METADATA of a named topic",
        grant: { operation: OP.DESCRIBE },
        code: TOPIC_DENIED,
        names: 'DESCRIBE TOPIC "t"',
        run: (c) => c.metadata(["t"]),
      },
      {
        what: "LIST_OFFSETS",
        grant: { resourceName: "purged", operation: OP.DESCRIBE },
        code: TOPIC_DENIED,
        names: 'DESCRIBE TOPIC "purged"',
        run: (c) => c.listOffsets("purged", 0),
      },
      {
        what: "PRODUCE",
        grant: { operation: OP.WRITE },
        code: TOPIC_DENIED,
        names: 'WRITE TOPIC "t"',
        run: (c) => c.produce("t", 0, batchOfValues(["x"])),
      },
      {
        what: "FETCH",
        grant: { operation: OP.READ },
        code: TOPIC_DENIED,
        names: 'READ TOPIC "t"',
        run: (c) => c.fetch("t", 0, 0),
      },
      {
        what: "CREATE_TOPIC (CREATE on a prefixed topic name)",
        grant: { resourceName: "new-", patternType: PATTERN_TYPE.PREFIXED, operation: OP.CREATE },
        code: TOPIC_DENIED,
        names: 'CREATE TOPIC "new-1"',
        run: (c) => c.createTopic("new-1"),
      },
      {
        what: "CREATE_TOPIC (CREATE on the cluster)",
        grant: { resourceType: RESOURCE_TYPE.CLUSTER, resourceName: "kafka-cluster", operation: OP.CREATE },
        code: TOPIC_DENIED,
        names: 'CREATE TOPIC "other"',
        run: (c) => c.createTopic("other"),
      },
      {
        what: "DELETE_TOPIC",
        grant: { resourceName: "gone", operation: OP.DELETE },
        code: TOPIC_DENIED,
        names: 'DELETE TOPIC "gone"',
        run: (c) => c.deleteTopic("gone"),
      },
      {
        what: "PURGE",
        grant: { resourceName: "purged", operation: OP.DELETE },
        code: TOPIC_DENIED,
        names: 'DELETE TOPIC "purged"',
        run: (c) => c.purge("purged", [{ partition: 0, beforeOffset: 1 }]),
      },
      {
        what: "ADD_PARTITIONS",
        grant: { resourceName: "grown", operation: OP.ALTER },
        code: TOPIC_DENIED,
        names: 'ALTER TOPIC "grown"',
        run: (c) => c.addPartitions("grown", 2),
      },
      {
        what: "ALTER_TOPIC",
        grant: { resourceName: "altered", operation: OP.ALTER_CONFIGS },
        code: TOPIC_DENIED,
        names: 'ALTER_CONFIGS TOPIC "altered"',
        run: (c) => c.alterTopic("altered", { retentionMs: 60_000 }),
      },
      {
        what: "OFFSET_COMMIT (READ on the group; READ on the topic is granted above)",
        grant: { resourceType: RESOURCE_TYPE.GROUP, resourceName: "g", operation: OP.READ },
        code: GROUP_DENIED,
        names: 'READ GROUP "g"',
        run: (c) => c.commitOffsets("g", [{ topic: "t", partition: 0, offset: 2 }]),
      },
      {
        what: "OFFSET_FETCH",
        grant: { resourceType: RESOURCE_TYPE.GROUP, resourceName: "h", operation: OP.DESCRIBE },
        code: GROUP_DENIED,
        names: 'DESCRIBE GROUP "h"',
        run: (c) => c.fetchOffsets("h", [{ topic: "t" }]),
      },
      {
        what: "DELETE_GROUP",
        grant: { resourceType: RESOURCE_TYPE.GROUP, resourceName: "doomed", operation: OP.DELETE },
        code: GROUP_DENIED,
        names: 'DELETE GROUP "doomed"',
        run: (c) => c.deleteGroup("doomed"),
      },
      {
        what: "STATS",
        grant: { resourceType: RESOURCE_TYPE.CLUSTER, resourceName: "kafka-cluster", operation: OP.DESCRIBE },
        code: CLUSTER_DENIED,
        names: 'DESCRIBE CLUSTER "kafka-cluster"',
        run: (c) => c.stats(),
      },
      {
        what: "DESCRIBE_ACLS (DESCRIBE on the cluster, granted just above)",
        grant: {},
        code: -1,
        names: "",
        run: (c) => c.describeAcls(MATCH_ALL_ACLS),
      },
      {
        what: "CREATE_ACLS",
        grant: { resourceType: RESOURCE_TYPE.CLUSTER, resourceName: "kafka-cluster", operation: OP.ALTER },
        code: CLUSTER_DENIED,
        names: 'ALTER CLUSTER "kafka-cluster"',
        run: (c) => c.createAcls([acl({ principal: "User:bob" })]),
      },
    ];
    for (const item of cases) {
      if (item.code !== -1) {
        const denied = await refusal(item.run(alice), item.what);
        expect([item.what, denied.wireCode]).toEqual([item.what, item.code]);
        expect(denied.message).toBe(`User:alice (from 127.0.0.1) is not authorized to ${item.names}`);
        await admin.createAcls([acl(item.grant)]);
      }
      await item.run(alice); // allowed now
    }
    // INIT_PRODUCER_ID: allowed by WRITE on some topic (granted above, Kafka ≥ 2.8's rule).
    expect((await alice.initProducerId()).producerId).toBeGreaterThanOrEqual(0);

    // Deny wins: a DENY of WRITE on every topic, for everyone, over alice's ALLOW.
    const denyWrite = acl({
      resourceName: "*",
      principal: "User:*",
      operation: OP.WRITE,
      permission: ACL_PERMISSION.DENY,
    });
    await admin.createAcls([denyWrite]);
    expect((await refusal(alice.produce("t", 0, batchOfValues(["y"])))).wireCode).toBe(TOPIC_DENIED);
    // With WRITE denied on every topic and no IDEMPOTENT_WRITE, no producer id either.
    expect((await refusal(alice.initProducerId())).wireCode).toBe(CLUSTER_DENIED);
    // The super user is not subject to ACLs, denies included.
    await admin.produce("t", 0, batchOfValues(["z"]));
    const removed = await admin.deleteAcls([{ ...MATCH_ALL_ACLS, permission: ACL_PERMISSION.DENY }]);
    expect(removed).toEqual([[denyWrite]]);
    await alice.produce("t", 0, batchOfValues(["y"]));

    // Denials: one audit line each, counted in /metrics.
    const audit = await broker.lines.waitFor(
      (line) => line.includes('denied: User:alice (from 127.0.0.1) is not authorized to WRITE TOPIC "t"'),
      "the denial audit line",
    );
    expect(audit).toStartWith('booblik: audit: user "alice" from 127.0.0.1: denied:');
    const metricsPort = Number(/metrics on 127\.0\.0\.1:(\d+)/.exec(broker.startLine)?.[1]);
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metricValue(scrape, 'booblik_authorization_denials_total{listener="native"}')).toBe(
      cases.length - 1 + 2,
    );
    // One grant per case but DESCRIBE_ACLS's, and the one alice created for bob.
    expect(metricValue(scrape, "booblik_acls")).toBe(cases.length - 1 + 1);
    admin.close();
    alice.close();
  });

  test("METADATA lists only topics the user may describe; booblik-cli acl add, list, remove; ACLs survive a restart", async () => {
    using dir = tempDir();
    const args = [
      "--users-file",
      usersFile(dir.file("users.json")),
      "--authorizer",
      "acl",
      "--super-users",
      "User:admin",
      "--kafka-port",
      "off",
    ];
    let broker = await startBroker(dir.file("data"), args);
    const cli = (user: keyof typeof PASSWORDS, command: string[]) =>
      runCli(["--broker", `127.0.0.1:${broker.port}`, "--user", user, ...command], {
        env: { BOOBLIK_PASSWORD: PASSWORDS[user] },
      });
    try {
      for (const name of ["orders", "orders-eu", "payments"]) {
        const created = await cli("admin", ["topics", "create", name]);
        expect(created.exitCode).toBe(0);
      }
      const none = await cli("alice", ["--json", "topics", "list"]);
      expect(none.exitCode).toBe(0);
      expect(JSON.parse(none.stdout)).toEqual([]);
      const added = await cli("admin", [
        "acl",
        "add",
        "--principal",
        "User:alice",
        "--operation",
        "read,write",
        "--topic",
        "orders",
        "--prefixed",
      ]);
      expect(added.stderr).toBe("");
      expect(added.stdout).toBe(
        "added: User:alice ALLOW READ TOPIC orders PREFIXED from *\nadded: User:alice ALLOW WRITE TOPIC orders PREFIXED from *\n",
      );
      const denied = await cli("alice", [
        "acl",
        "add",
        "--principal",
        "User:alice",
        "--operation",
        "all",
        "--cluster",
      ]);
      expect(denied.exitCode).toBe(1);
      expect(denied.stderr).toBe(
        'booblik-cli: User:alice (from 127.0.0.1) is not authorized to ALTER CLUSTER "kafka-cluster"\n',
      );
      const listed = await cli("alice", ["--json", "topics", "list"]);
      expect(JSON.parse(listed.stdout).map((t: { name: string }) => t.name)).toEqual(["orders", "orders-eu"]);
      const produced = await runCli(
        ["--broker", `127.0.0.1:${broker.port}`, "--user", "alice", "produce", "orders-eu"],
        { env: { BOOBLIK_PASSWORD: PASSWORDS.alice }, stdin: "hello\n" },
      );
      expect(produced.exitCode).toBe(0);
      const refused = await runCli(
        ["--broker", `127.0.0.1:${broker.port}`, "--user", "alice", "produce", "payments"],
        { env: { BOOBLIK_PASSWORD: PASSWORDS.alice }, stdin: "hello\n" },
      );
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain("User:alice (from 127.0.0.1) is not authorized to");
      expect(refused.stderr).toContain('TOPIC "payments"');
    } finally {
      await broker.stop();
    }
    // A restart reads acls.json back.
    broker = await startBroker(dir.file("data"), args);
    try {
      expect(broker.startLine).toContain("ACLs enforced (2 ACLs, super users: User:admin)");
      const list = await cli("admin", ["--json", "acl", "list", "--topic", "orders-eu", "--match"]);
      expect(JSON.parse(list.stdout)).toEqual([
        {
          principal: "User:alice",
          permission: "ALLOW",
          operation: "READ",
          resourceType: "TOPIC",
          resourceName: "orders",
          patternType: "PREFIXED",
          host: "*",
        },
        {
          principal: "User:alice",
          permission: "ALLOW",
          operation: "WRITE",
          resourceType: "TOPIC",
          resourceName: "orders",
          patternType: "PREFIXED",
          host: "*",
        },
      ]);
      // The CLI prints each ACL in the form acls.json stores it (one definition: src/auth/acl.ts).
      const stored = JSON.parse(fs.readFileSync(dir.file("data/acls.json"), "utf8")).acls;
      const all = JSON.parse((await cli("admin", ["--json", "acl", "list"])).stdout);
      expect(all).toEqual(stored);
      expect(all.map(Object.keys)).toEqual(stored.map(Object.keys));
      const literalOnly = await cli("admin", ["--json", "acl", "list", "--topic", "orders-eu"]);
      expect(JSON.parse(literalOnly.stdout)).toEqual([]);
      const removed = await cli("admin", [
        "acl",
        "remove",
        "--principal",
        "User:alice",
        "--operation",
        "write",
      ]);
      expect(removed.exitCode).toBe(0);
      expect(removed.stdout).toContain("User:alice  ALLOW       WRITE");
      const left = await cli("admin", ["--json", "acl", "list"]);
      expect(JSON.parse(left.stdout).map((a: { operation: string }) => a.operation)).toEqual(["READ"]);
    } finally {
      await broker.stop();
    }
  });

  test("without --authorizer acl nothing is checked and the ACL requests answer SECURITY_DISABLED", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), ["--kafka-port", "off"]);
    expect(broker.startLine).not.toContain("ACLs enforced");
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await client.createTopic("t");
    await client.produce("t", 0, batchOfValues(["a"]));
    for (const work of [
      client.createAcls([acl({})]),
      client.describeAcls(MATCH_ALL_ACLS),
      client.deleteAcls([MATCH_ALL_ACLS]),
    ]) {
      const refused = await refusal(work);
      expect(refused.wireCode).toBe(WIRE_ERROR_CODES.SECURITY_DISABLED);
      expect(refused.message).toContain("started without --authorizer acl");
    }
    client.close();
    const cli = await runCli(["--broker", `127.0.0.1:${broker.port}`, "acl", "list"]);
    expect(cli.exitCode).toBe(1);
    expect(cli.stderr).toContain("this broker does not enforce ACLs");
  });

  test("an anonymous connection is User:ANONYMOUS; invalid ACLs and a hostile CREATE_ACLS get clear errors and change nothing", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"), [
      "--authorizer",
      "acl",
      "--super-users",
      "User:ANONYMOUS",
      "--kafka-port",
      "off",
    ]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    // One invalid ACL refuses the request whole.
    const invalid = await refusal(client.createAcls([acl({}), acl({ principal: "alice" })]));
    expect(invalid.wireCode).toBe(WIRE_ERROR_CODES.INVALID_CONFIG);
    expect(invalid.message).toBe('principal "alice" is not of the form User:<name> (User:* for everyone)');
    const badEnum = await refusal(client.createAcls([acl({ operation: 200 })]));
    expect(badEnum.message).toBe(
      "operation unknown (200) is not valid on a TOPIC: it takes ALL, READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS",
    );
    const badFilter = await refusal(client.describeAcls({ ...MATCH_ALL_ACLS, resourceType: 0 }));
    expect(badFilter.message).toBe("resource type 0 is not a valid filter value");
    expect(await client.describeAcls(MATCH_ALL_ACLS)).toEqual([]);
    client.close();

    // A count of 4 billion ACLs in a small frame: refused before anything is allocated, and the
    // stream goes on (the frame was whole).
    const bytes = frame((w) => encodeCreateAclsRequest(w, 7, []));
    new DataView(bytes.buffer).setUint32(12, 0xffffffff); // the count, after the 12-byte header
    expect(bytes[4]! * 256 + bytes[5]!).toBe(API.CREATE_ACLS);
    const socket = await rawConnect(broker.port);
    socket.write(bytes);
    const [answer] = await waitForResponses(socket, 1);
    expect(answer!.correlationId).toBe(7);
    expect(answer!.errorCode).toBe(WIRE_ERROR_CODES.INVALID_REQUEST);
    expect(answer!.message).toBe("4294967295 ACLs in one request: at most 1000");
    // The broker is still there and holds no ACL.
    const after = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    expect(await after.describeAcls(MATCH_ALL_ACLS)).toEqual([]);
    after.close();
  });
});
