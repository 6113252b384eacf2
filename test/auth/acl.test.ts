/**
 * The ACL decision (src/auth/acl.ts) and its store (src/broker/acl-store.ts) on real files: Kafka's
 * rules one by one (deny wins, implied DESCRIBE, LITERAL, PREFIXED and "*" names, User:* and hosts,
 * super users, nothing applying = denied), filters as Kafka matches them, validation of every field,
 * the file written atomically and read back, an invalid file refused, and the limits.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import {
  ACL_PERMISSION,
  type Acl,
  type AclFilter,
  AclSet,
  clientHost,
  filterMatches,
  MATCH_ALL_ACLS,
  ACL_OPERATION as OP,
  PATTERN_TYPE,
  RESOURCE_TYPE,
  validateAcl,
} from "../../src/auth/acl.ts";
import { ACLS_FILE, AclStore } from "../../src/broker/acl-store.ts";
import { ACL_REQUEST_ENTRIES_MAX, ACLS_MAX } from "../../src/domain/limits.ts";
import { tempDir } from "../helpers/temp-dir.ts";

function acl(fields: Partial<Acl>): Acl {
  return {
    resourceType: RESOURCE_TYPE.TOPIC,
    resourceName: "orders",
    patternType: PATTERN_TYPE.LITERAL,
    principal: "User:alice",
    host: "*",
    operation: OP.READ,
    permission: ACL_PERMISSION.ALLOW,
    ...fields,
  };
}

const topic = (name: string) => ({ type: RESOURCE_TYPE.TOPIC, name }) as const;
const group = (name: string) => ({ type: RESOURCE_TYPE.GROUP, name }) as const;
const HOST = "10.0.0.7";

describe("the decision", () => {
  test("nothing applying denies; an ALLOW of the operation allows only it, for that principal and name", () => {
    const set = new AclSet([acl({})]);
    expect(set.allows("User:alice", HOST, OP.READ, topic("orders"))).toBe(true);
    expect(set.allows("User:alice", HOST, OP.WRITE, topic("orders"))).toBe(false);
    expect(set.allows("User:bob", HOST, OP.READ, topic("orders"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.READ, topic("orders2"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.READ, group("orders"))).toBe(false);
    expect(new AclSet([]).allows("User:alice", HOST, OP.DESCRIBE, topic("orders"))).toBe(false);
  });

  test("READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies everything; CREATE implies nothing", () => {
    for (const granted of [OP.READ, OP.WRITE, OP.DELETE, OP.ALTER, OP.ALL])
      expect(
        new AclSet([acl({ operation: granted })]).allows("User:alice", HOST, OP.DESCRIBE, topic("orders")),
      ).toBe(true);
    expect(
      new AclSet([acl({ operation: OP.CREATE })]).allows("User:alice", HOST, OP.DESCRIBE, topic("orders")),
    ).toBe(false);
    const configs = new AclSet([acl({ operation: OP.ALTER_CONFIGS })]);
    expect(configs.allows("User:alice", HOST, OP.DESCRIBE_CONFIGS, topic("orders"))).toBe(true);
    expect(configs.allows("User:alice", HOST, OP.DESCRIBE, topic("orders"))).toBe(false);
    const all = new AclSet([acl({ operation: OP.ALL })]);
    for (const asked of [OP.READ, OP.WRITE, OP.CREATE, OP.DELETE, OP.ALTER, OP.ALTER_CONFIGS])
      expect(all.allows("User:alice", HOST, asked, topic("orders"))).toBe(true);
  });

  test("deny wins over any allow, a DENY of ALL denies every operation, and implied operations are not denied", () => {
    const set = new AclSet([
      acl({ operation: OP.ALL }),
      acl({ operation: OP.WRITE, permission: ACL_PERMISSION.DENY }),
    ]);
    expect(set.allows("User:alice", HOST, OP.WRITE, topic("orders"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.READ, topic("orders"))).toBe(true);
    const denyRead = new AclSet([
      acl({ operation: OP.READ }),
      acl({ operation: OP.DESCRIBE }),
      acl({ operation: OP.READ, permission: ACL_PERMISSION.DENY }),
    ]);
    expect(denyRead.allows("User:alice", HOST, OP.READ, topic("orders"))).toBe(false);
    // Kafka: a DENY of READ does not deny DESCRIBE (implication applies to ALLOW only).
    expect(denyRead.allows("User:alice", HOST, OP.DESCRIBE, topic("orders"))).toBe(true);
    const denyAll = new AclSet([
      acl({ operation: OP.READ }),
      acl({ resourceName: "*", principal: "User:*", operation: OP.ALL, permission: ACL_PERMISSION.DENY }),
    ]);
    expect(denyAll.allows("User:alice", HOST, OP.READ, topic("orders"))).toBe(false);
  });

  test('PREFIXED names match every name starting with them; LITERAL "*" every name; User:* every principal; a host only that address', () => {
    const set = new AclSet([
      acl({ resourceName: "ord", patternType: PATTERN_TYPE.PREFIXED, operation: OP.WRITE }),
      acl({ resourceName: "*", principal: "User:*", operation: OP.DESCRIBE }),
      acl({ resourceType: RESOURCE_TYPE.GROUP, resourceName: "app-", patternType: PATTERN_TYPE.PREFIXED }),
      acl({ resourceName: "audit", host: "10.0.0.8" }),
    ]);
    expect(set.allows("User:alice", HOST, OP.WRITE, topic("orders"))).toBe(true);
    expect(set.allows("User:alice", HOST, OP.WRITE, topic("ord"))).toBe(true);
    expect(set.allows("User:alice", HOST, OP.WRITE, topic("or"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.WRITE, topic("xorders"))).toBe(false);
    expect(set.allows("User:zed", HOST, OP.DESCRIBE, topic("anything"))).toBe(true);
    expect(set.allows("User:zed", HOST, OP.READ, topic("anything"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.READ, group("app-1"))).toBe(true);
    expect(set.allows("User:alice", HOST, OP.READ, group("other"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.READ, topic("audit"))).toBe(false);
    expect(set.allows("User:alice", "10.0.0.8", OP.READ, topic("audit"))).toBe(true);
  });

  test("hosts: an IPv4 address mapped into IPv6 is the IPv4 address, for clients and for stored ACLs", () => {
    expect(clientHost("::ffff:10.0.0.8")).toBe("10.0.0.8");
    expect(clientHost("::FFFF:127.0.0.1")).toBe("127.0.0.1");
    for (const unchanged of ["10.0.0.8", "::1", "fe80::1", "::ffff:abcd", "::ffff:10.0.0"])
      expect(clientHost(unchanged)).toBe(unchanged);
    const set = new AclSet([
      acl({ resourceName: "audit", host: "::ffff:10.0.0.8" }),
      acl({ resourceName: "audit", host: "10.0.0.9", permission: ACL_PERMISSION.DENY }),
    ]);
    expect(set.allows("User:alice", "10.0.0.8", OP.READ, topic("audit"))).toBe(true);
    expect(set.allows("User:alice", "10.0.0.7", OP.READ, topic("audit"))).toBe(false);
  });

  test("an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka ≥ 2.8)", () => {
    expect(
      new AclSet([acl({ operation: OP.WRITE, resourceName: "x" })]).allowsAnyOf(
        "User:alice",
        HOST,
        OP.WRITE,
        RESOURCE_TYPE.TOPIC,
      ),
    ).toBe(true);
    expect(
      new AclSet([acl({ operation: OP.READ })]).allowsAnyOf(
        "User:alice",
        HOST,
        OP.WRITE,
        RESOURCE_TYPE.TOPIC,
      ),
    ).toBe(false);
    const deniedEverywhere = new AclSet([
      acl({ operation: OP.WRITE }),
      acl({ resourceName: "*", operation: OP.WRITE, permission: ACL_PERMISSION.DENY }),
    ]);
    expect(deniedEverywhere.allowsAnyOf("User:alice", HOST, OP.WRITE, RESOURCE_TYPE.TOPIC)).toBe(false);
  });

  test("WRITE on some topic: an ALLOW whose own name is denied does not count (Kafka's authorizeByResourceType)", () => {
    const anyWrite = (acls: Partial<Acl>[]) =>
      new AclSet(acls.map(acl)).allowsAnyOf("User:alice", HOST, OP.WRITE, RESOURCE_TYPE.TOPIC);
    const deny = { permission: ACL_PERMISSION.DENY };
    const prefixed = { patternType: PATTERN_TYPE.PREFIXED };
    // The one allowed name is denied by a literal DENY of it, by ALL, or by a prefix of it: no topic
    // is writable, so Kafka answers InitProducerId with 31.
    expect(anyWrite([{ operation: OP.WRITE }, { operation: OP.WRITE, ...deny }])).toBe(false);
    expect(anyWrite([{ operation: OP.WRITE }, { operation: OP.ALL, ...deny }])).toBe(false);
    expect(
      anyWrite([{ operation: OP.WRITE }, { operation: OP.WRITE, resourceName: "ord", ...prefixed, ...deny }]),
    ).toBe(false);
    expect(
      anyWrite([
        { operation: OP.WRITE, resourceName: "orders-", ...prefixed },
        { operation: OP.WRITE, resourceName: "orders", ...prefixed, ...deny },
      ]),
    ).toBe(false);
    // A DENY for every principal counts for alice too.
    expect(anyWrite([{ operation: OP.WRITE }, { operation: OP.WRITE, principal: "User:*", ...deny }])).toBe(
      false,
    );
    // Still allowed: a DENY of another name, of another operation, for another host, or a longer
    // prefix (names under "orders" but outside "orders-eu" stay writable); an ALLOW of every name.
    expect(anyWrite([{ operation: OP.WRITE }, { operation: OP.WRITE, resourceName: "other", ...deny }])).toBe(
      true,
    );
    expect(anyWrite([{ operation: OP.WRITE }, { operation: OP.READ, ...deny }])).toBe(true);
    expect(anyWrite([{ operation: OP.WRITE }, { operation: OP.WRITE, host: "10.9.9.9", ...deny }])).toBe(
      true,
    );
    expect(
      anyWrite([
        { operation: OP.WRITE, ...prefixed },
        { operation: OP.WRITE, resourceName: "orders-eu", ...prefixed, ...deny },
      ]),
    ).toBe(true);
    expect(
      anyWrite([
        { operation: OP.WRITE, resourceName: "*" },
        { operation: OP.WRITE, ...deny },
      ]),
    ).toBe(true);
    // Two allowed names, one denied: the other counts.
    expect(
      anyWrite([
        { operation: OP.WRITE },
        { operation: OP.WRITE, resourceName: "payments" },
        { operation: OP.WRITE, ...deny },
      ]),
    ).toBe(true);
  });
});

describe("filters (Kafka's AclBindingFilter)", () => {
  const literal = acl({});
  const prefixed = acl({ resourceName: "ord", patternType: PATTERN_TYPE.PREFIXED });
  const wildcard = acl({ resourceName: "*" });
  const filter = (fields: Partial<AclFilter>): AclFilter => ({ ...MATCH_ALL_ACLS, ...fields });

  test("ANY with a name matches that exact name whatever the pattern; MATCH every ACL that applies to the name", () => {
    const any = filter({ resourceName: "orders" });
    expect([literal, prefixed, wildcard].map((a) => filterMatches(any, a))).toEqual([true, false, false]);
    const match = filter({ resourceName: "orders", patternType: PATTERN_TYPE.MATCH });
    expect([literal, prefixed, wildcard].map((a) => filterMatches(match, a))).toEqual([true, true, true]);
    const onlyPrefixed = filter({ patternType: PATTERN_TYPE.PREFIXED });
    expect([literal, prefixed, wildcard].map((a) => filterMatches(onlyPrefixed, a))).toEqual([
      false,
      true,
      false,
    ]);
    expect(filterMatches(filter({ principal: "User:bob" }), literal)).toBe(false);
    expect(filterMatches(filter({ operation: OP.WRITE }), literal)).toBe(false);
    expect(filterMatches(filter({ permission: ACL_PERMISSION.DENY }), literal)).toBe(false);
    expect(filterMatches(filter({ resourceType: RESOURCE_TYPE.GROUP }), literal)).toBe(false);
  });
});

describe("validation: each bad field is refused naming it", () => {
  test.each([
    [{ resourceType: RESOURCE_TYPE.ANY }, "resource type ANY cannot be used"],
    [{ resourceType: 99 }, "resource type unknown (99)"],
    [{ resourceType: RESOURCE_TYPE.TRANSACTIONAL_ID }, "TRANSACTIONAL_ID cannot be used"],
    [{ patternType: PATTERN_TYPE.MATCH }, "pattern type MATCH cannot be stored"],
    [{ resourceName: "" }, "resource name cannot be empty"],
    [
      { resourceType: RESOURCE_TYPE.CLUSTER, resourceName: "c", operation: OP.ALTER },
      'named "kafka-cluster"',
    ],
    [{ principal: "alice" }, 'principal "alice" is not of the form User:<name>'],
    [{ principal: "User:" }, "is not of the form User:<name>"],
    [{ host: "" }, "host cannot be empty"],
    // Matched against the client's IP address: a name never would (stored before 2026-12-03).
    [{ host: "app.internal" }, 'host "app.internal" is not an IP address'],
    [{ host: "999.1.1.1" }, 'host "999.1.1.1" is not an IP address'],
    [{ permission: ACL_PERMISSION.ANY }, "permission ANY cannot be stored"],
    [{ operation: OP.ANY }, "operation ANY is not valid on a TOPIC"],
    [{ operation: OP.IDEMPOTENT_WRITE }, "operation IDEMPOTENT_WRITE is not valid on a TOPIC"],
    [{ resourceType: RESOURCE_TYPE.GROUP, operation: OP.WRITE }, "operation WRITE is not valid on a GROUP"],
    // ACL_FIELD_BYTES_MAX (1,024 bytes of UTF-8), declared but not checked before 2026-12-01.
    [{ resourceName: "t".repeat(1025) }, "resource name is 1025 bytes, more than 1024"],
    [{ principal: `User:${"é".repeat(600)}` }, "principal is 1205 bytes, more than 1024"],
    [{ host: "h".repeat(2000) }, "host is 2000 bytes, more than 1024"],
  ] as [Partial<Acl>, string][])("%j", (fields, message) => {
    expect(() => validateAcl(acl(fields))).toThrow(message);
  });

  test("hosts: IPv4, IPv6 and *; one read back from an older file is kept whatever it is", () => {
    for (const host of ["10.0.0.5", "::1", "*"]) expect(validateAcl(acl({ host })).host).toBe(host);
    expect(validateAcl(acl({ host: "app.internal" }), { stored: true }).host).toBe("app.internal");
  });
});

describe("the store (acls.json)", () => {
  test("changes are durable and read back; duplicates change nothing; removal returns what each filter removed", async () => {
    using dir = tempDir();
    const store = AclStore.open(dir.path, { superUsers: ["User:admin"] });
    expect(store.enforcing).toBe(true);
    await store.add([acl({}), acl({}), acl({ operation: OP.WRITE })]);
    expect(store.size).toBe(2);
    expect(store.allowed("User:alice", HOST, OP.READ, topic("orders"))).toBe(true);
    expect(store.allowed("User:admin", HOST, OP.DELETE, topic("anything"))).toBe(true);
    expect(store.allowed("User:bob", HOST, OP.READ, topic("orders"))).toBe(false);
    const text = fs.readFileSync(`${dir.path}/${ACLS_FILE}`, "utf8");
    expect(JSON.parse(text).acls[0]).toEqual({
      resourceType: "TOPIC",
      resourceName: "orders",
      patternType: "LITERAL",
      principal: "User:alice",
      host: "*",
      operation: "READ",
      permission: "ALLOW",
    });
    expect(fs.readdirSync(dir.path).filter((name) => name.includes("tmp"))).toEqual([]);
    const reopened = AclStore.open(dir.path, undefined);
    expect(reopened.enforcing).toBe(false);
    expect(reopened.list(MATCH_ALL_ACLS)).toEqual(store.list(MATCH_ALL_ACLS));
    // Not enforcing: everything is allowed whatever the file says.
    expect(reopened.allowed("User:bob", HOST, OP.DELETE, topic("orders"))).toBe(true);
    const removed = await store.remove([
      { ...MATCH_ALL_ACLS, operation: OP.WRITE },
      { ...MATCH_ALL_ACLS, principal: "User:nobody" },
    ]);
    expect(removed.map((list) => list.length)).toEqual([1, 0]);
    expect(store.allowed("User:alice", HOST, OP.READ, topic("orders"))).toBe(true);
    expect(AclStore.open(dir.path, undefined).size).toBe(1);
  });

  test("a decision cached before a change is not reused after it", async () => {
    using dir = tempDir();
    const store = AclStore.open(dir.path, { superUsers: [] });
    expect(store.allowed("User:alice", HOST, OP.READ, topic("orders"))).toBe(false);
    await store.add([acl({})]);
    expect(store.allowed("User:alice", HOST, OP.READ, topic("orders"))).toBe(true);
    await store.remove([MATCH_ALL_ACLS]);
    expect(store.allowed("User:alice", HOST, OP.READ, topic("orders"))).toBe(false);
  });

  test("an invalid file stops the open, naming the file and the ACL; a bad super user is refused", () => {
    using dir = tempDir();
    const file = `${dir.path}/${ACLS_FILE}`;
    fs.writeFileSync(file, "{not json");
    expect(() => AclStore.open(dir.path, undefined)).toThrow(`${file} is not a valid ACL file`);
    fs.writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        acls: [
          {
            ...JSON.parse(
              '{"resourceType":"TOPIC","resourceName":"t","patternType":"LITERAL","principal":"bob","host":"*","operation":"READ","permission":"ALLOW"}',
            ),
          },
        ],
      }),
    );
    expect(() => AclStore.open(dir.path, undefined)).toThrow('ACL 0: principal "bob" is not of the form');
    fs.rmSync(file);
    expect(() => AclStore.open(dir.path, { superUsers: ["admin"] })).toThrow('super user "admin"');
  });

  test(`at most ACLS_MAX (${ACLS_MAX}) ACLs: the request that would pass it is refused whole`, async () => {
    using dir = tempDir();
    const store = AclStore.open(dir.path, { superUsers: [] });
    const many = Array.from({ length: ACL_REQUEST_ENTRIES_MAX }, (_, i) => acl({ resourceName: `t${i}` }));
    for (let round = 0; round < ACLS_MAX / ACL_REQUEST_ENTRIES_MAX; round++)
      await store.add(many.map((a) => ({ ...a, principal: `User:u${round}` })));
    expect(store.size).toBe(ACLS_MAX);
    await expect(store.add([acl({ resourceName: "one-more" })])).rejects.toThrow(
      `this broker holds at most ${ACLS_MAX} ACLs`,
    );
    expect(store.size).toBe(ACLS_MAX);
  });
});

// docs/security.md: a host that is not an address the broker sees "is refused (it would never
// match, so a DENY with it would protect nothing)", and "an ACL written with the `::ffff:` form
// applies to that address too". An IPv6 address in another spelling passed validateAcl (isIP says 6)
// and then never matched, hostApplies comparing the text: a DENY for the Java form of ::1 (what
// Kafka's own broker matches, InetAddress.getHostAddress), for upper-case hex, or for the hex form
// of an IPv4-mapped address protected nothing.
describe("review 2026-12-03: an IPv6 host in another spelling of the client's address", () => {
  test.each([
    ["0:0:0:0:0:0:0:1", "::1"],
    ["0000:0000:0000:0000:0000:0000:0000:0001", "::1"],
    ["FE80::A", "fe80::a"],
    ["::ffff:7f00:1", "127.0.0.1"],
    ["::FFFF:7F00:0001", "127.0.0.1"],
  ])("a DENY for host %s applies to a client at %s (or is refused)", (host, client) => {
    let valid: Acl;
    try {
      valid = validateAcl(acl({ host, permission: ACL_PERMISSION.DENY }));
    } catch {
      return; // refused: nothing stored that would silently never apply
    }
    const set = new AclSet([acl({}), valid]);
    expect(set.allows("User:alice", client, OP.READ, topic("orders"))).toBe(false);
    expect(set.allows("User:alice", HOST, OP.READ, topic("orders"))).toBe(true);
  });
});
