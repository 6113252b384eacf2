/**
 * Kafka-style ACLs, sans I/O: the model (Kafka's enum numbers, so the Kafka listener's CreateAcls,
 * DescribeAcls and DeleteAcls and the native CREATE_ACLS, DESCRIBE_ACLS and DELETE_ACLS carry the
 * same bytes for each field), validation of a new ACL, filter matching, and the decision.
 * Persistence is src/broker/acl-store.ts; which request needs which operation is docs/security.md
 * ("ACLs") and the listeners (src/server/server.ts, src/kafka/handler.ts).
 *
 * The decision is Kafka's AclAuthorizer/StandardAuthorizer rule with allow.everyone.if.no.acl.found
 * false:
 * - a super user is allowed everything (denies included);
 * - an ACL applies to a request when its resource pattern matches (same resource type, and a LITERAL
 *   name equal to the resource's or the wildcard `*`, or a PREFIXED name the resource's starts
 *   with), its principal is the request's or `User:*`, its host the client's address or `*`;
 * - any applying DENY whose operation is the one asked for, or ALL, denies (deny wins);
 * - otherwise an applying ALLOW of the operation, of ALL, or of an operation that implies it allows:
 *   READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS (Kafka's
 *   implied operations apply to ALLOW only: a DENY of READ does not deny DESCRIBE);
 * - nothing applying: denied.
 *
 * Invariants: every ACL in an `AclSet` passed `validateAcl` (a known resource type, pattern type,
 * operation valid for that resource type, ALLOW or DENY, a `User:` principal, a host); the set has no
 * two equal ACLs (adding one already there changes nothing, as in Kafka).
 */
import { isIP } from "node:net";
import { BooblikError } from "../domain/errors.ts";
import { ACL_CANONICAL_HOSTS_MAX, ACL_FIELD_BYTES_MAX } from "../domain/limits.ts";

/**
 * A client's address as ACL hosts, audit lines and per-address limits name it: an IPv4 address
 * mapped into IPv6 (`::ffff:127.0.0.1`, what a listener bound to `::` sees for every IPv4 client)
 * becomes the plain IPv4 address. Without this a DENY for host `127.0.0.1` never matched a client
 * of a `::` listener (and an ALLOW for it never allowed one). Anything else is returned unchanged.
 */
export function clientHost(address: string): string {
  return IPV4_MAPPED.test(address) ? address.slice(7) : address;
}
const IPV4_MAPPED = /^::ffff:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i;

/** Does an ACL's host apply to a client at `host` (already `clientHost`)? */
function hostApplies(aclHost: string, host: string): boolean {
  return aclHost === host || aclHost === WILDCARD || canonicalHost(aclHost) === host;
}

/**
 * An ACL's host as the broker spells a client's address: an IPv6 address in its compressed,
 * lower-case form (`0:0:0:0:0:0:0:1`, Kafka's Java spelling, is `::1`; `FE80::A` is `fe80::a`), an
 * IPv4-mapped one in any spelling (`::ffff:7f00:1`) as its IPv4 address (clientHost). validateAcl
 * accepts every spelling isIP does; compared as text, all but one never applied, so a DENY with
 * them protected nothing (review of 2026-12-03). Anything else is returned unchanged.
 */
function canonicalHost(aclHost: string): string {
  if (!aclHost.includes(":")) return aclHost;
  let canonical = canonicalHosts.get(aclHost);
  if (canonical === undefined) {
    canonical = aclHost;
    try {
      // The WHATWG URL parser writes an IPv6 address in RFC 5952's form (::ffff:127.0.0.1 too: hex).
      canonical = new URL(`http://[${aclHost}]/`).hostname.slice(1, -1);
    } catch {
      // Not an address the URL parser takes (a zone id): compared as written.
    }
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
    if (mapped !== null) {
      const high = Number.parseInt(mapped[1]!, 16);
      const low = Number.parseInt(mapped[2]!, 16);
      canonical = `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
    }
    // Bounded: the hosts of the ACLs in force, at most ACLS_MAX of them; stale ones go all at once.
    if (canonicalHosts.size >= ACL_CANONICAL_HOSTS_MAX) canonicalHosts.clear();
    canonicalHosts.set(aclHost, canonical);
  }
  return canonical;
}
const canonicalHosts = new Map<string, string>();

/** Kafka's ResourceType codes (org.apache.kafka.common.resource.ResourceType). */
export const RESOURCE_TYPE = {
  UNKNOWN: 0,
  ANY: 1,
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
  DELEGATION_TOKEN: 6,
  USER: 7,
} as const;

/** Kafka's PatternType codes. MATCH and ANY exist in filters only. */
export const PATTERN_TYPE = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const;

/** Kafka's AclOperation codes. */
export const ACL_OPERATION = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
} as const;

/** Kafka's AclPermissionType codes. */
export const ACL_PERMISSION = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const;

export type AclOperation = (typeof ACL_OPERATION)[keyof typeof ACL_OPERATION];
/** The resource types an ACL may name in booblik (no transactions, tokens or user quotas). */
export type AclResourceType =
  | typeof RESOURCE_TYPE.TOPIC
  | typeof RESOURCE_TYPE.GROUP
  | typeof RESOURCE_TYPE.CLUSTER;

/** The one cluster resource's name (Kafka's `kafka-cluster`). */
export const CLUSTER_RESOURCE_NAME = "kafka-cluster";
/** A LITERAL resource name matching every resource of its type; in a principal, `User:*`. */
export const WILDCARD = "*";
/** The principal of an ACL that applies to every principal. */
export const EVERY_PRINCIPAL = "User:*";
/** What an unauthenticated connection is (Kafka's KafkaPrincipal.ANONYMOUS). */
export const ANONYMOUS_PRINCIPAL = "User:ANONYMOUS";

/** One ACL (Kafka's AclBinding), all fields in Kafka's codes. */
export interface Acl {
  resourceType: number;
  resourceName: string;
  patternType: number;
  principal: string;
  host: string;
  operation: number;
  permission: number;
}

/** A filter over ACLs (Kafka's AclBindingFilter): null names and ANY codes match everything. */
export interface AclFilter {
  resourceType: number;
  resourceName: string | null;
  patternType: number;
  principal: string | null;
  host: string | null;
  operation: number;
  permission: number;
}

/** A filter matching every ACL. */
export const MATCH_ALL_ACLS: AclFilter = {
  resourceType: RESOURCE_TYPE.ANY,
  resourceName: null,
  patternType: PATTERN_TYPE.ANY,
  principal: null,
  host: null,
  operation: ACL_OPERATION.ANY,
  permission: ACL_PERMISSION.ANY,
};

function nameOf(table: Record<string, number>, code: number): string {
  for (const [name, value] of Object.entries(table)) if (value === code) return name;
  return `unknown (${code})`;
}

export function resourceTypeName(code: number): string {
  return nameOf(RESOURCE_TYPE, code);
}
export function patternTypeName(code: number): string {
  return nameOf(PATTERN_TYPE, code);
}
export function operationName(code: number): string {
  return nameOf(ACL_OPERATION, code);
}
export function permissionName(code: number): string {
  return nameOf(ACL_PERMISSION, code);
}

/** The code of a name of `table`, case-insensitive, `-` or `_` alike; undefined when none. */
function codeOf(table: Record<string, number>, name: string): number | undefined {
  return table[name.toUpperCase().replaceAll("-", "_")];
}
export function parseResourceType(name: string): number | undefined {
  return codeOf(RESOURCE_TYPE, name);
}
export function parsePatternType(name: string): number | undefined {
  return codeOf(PATTERN_TYPE, name);
}
export function parseOperation(name: string): number | undefined {
  return codeOf(ACL_OPERATION, name);
}
export function parsePermission(name: string): number | undefined {
  return codeOf(ACL_PERMISSION, name);
}

/**
 * An ACL's JSON form, with enum names rather than codes so that people can read it: one object of
 * `<dataDir>/acls.json` (src/broker/acl-store.ts) and of `booblik-cli acl … --json` (src/cli/acl.ts).
 * `{"resourceType":"TOPIC","resourceName":"orders","patternType":"LITERAL","principal":"User:alice",
 * "host":"*","operation":"READ","permission":"ALLOW"}`, in that key order.
 */
export interface AclJson {
  resourceType: string;
  resourceName: string;
  patternType: string;
  principal: string;
  host: string;
  operation: string;
  permission: string;
}

export function aclToJson(acl: Acl): AclJson {
  return {
    resourceType: resourceTypeName(acl.resourceType),
    resourceName: acl.resourceName,
    patternType: patternTypeName(acl.patternType),
    principal: acl.principal,
    host: acl.host,
    operation: operationName(acl.operation),
    permission: permissionName(acl.permission),
  };
}

/** An ACL from its JSON form; throws naming the first field that is missing, not text or not known. */
export function aclFromJson(entry: unknown): Acl {
  if (entry === null || typeof entry !== "object") throw new Error("not an object");
  const fields = entry as Record<string, unknown>;
  const text = (name: keyof AclJson): string => {
    const value = fields[name];
    if (typeof value !== "string") throw new Error(`${name} is not a string`);
    return value;
  };
  const code = (name: keyof AclJson, parse: (value: string) => number | undefined): number => {
    const value = parse(text(name));
    if (value === undefined) throw new Error(`${name} ${JSON.stringify(fields[name])} is not known`);
    return value;
  };
  return {
    resourceType: code("resourceType", parseResourceType),
    resourceName: text("resourceName"),
    patternType: code("patternType", parsePatternType),
    principal: text("principal"),
    host: text("host"),
    operation: code("operation", parseOperation),
    permission: code("permission", parsePermission),
  };
}

/**
 * Operations an ACL may name per resource type (Kafka's AclEntry.supportedOperations), ALL besides.
 * CLUSTER_ACTION is accepted for compatibility with Kafka tools; no booblik request asks for it.
 */
const SUPPORTED_OPERATIONS: Record<AclResourceType, readonly number[]> = {
  [RESOURCE_TYPE.TOPIC]: [
    ACL_OPERATION.READ,
    ACL_OPERATION.WRITE,
    ACL_OPERATION.CREATE,
    ACL_OPERATION.DESCRIBE,
    ACL_OPERATION.DELETE,
    ACL_OPERATION.ALTER,
    ACL_OPERATION.DESCRIBE_CONFIGS,
    ACL_OPERATION.ALTER_CONFIGS,
  ],
  [RESOURCE_TYPE.GROUP]: [ACL_OPERATION.READ, ACL_OPERATION.DESCRIBE, ACL_OPERATION.DELETE],
  [RESOURCE_TYPE.CLUSTER]: [
    ACL_OPERATION.CREATE,
    ACL_OPERATION.CLUSTER_ACTION,
    ACL_OPERATION.DESCRIBE_CONFIGS,
    ACL_OPERATION.ALTER_CONFIGS,
    ACL_OPERATION.IDEMPOTENT_WRITE,
    ACL_OPERATION.ALTER,
    ACL_OPERATION.DESCRIBE,
  ],
};

/** An ACL or a filter that cannot be accepted: Kafka's INVALID_REQUEST, booblik's INVALID_ARGUMENT. */
export class InvalidAclError extends BooblikError {
  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
  }
}

/** A principal as ACLs name it: `User:<name>`, the name not empty. */
export function isValidPrincipal(principal: string): boolean {
  return principal.startsWith("User:") && principal.length > "User:".length;
}

const UTF8 = new TextEncoder();

/**
 * Throws InvalidAclError naming what is wrong with `acl`; returns it when it can be stored. `stored`:
 * an ACL read back from the data directory, which skips the host rule that came after the file
 * format (2026-12-03; an older file may hold a host that is not an address, harmless if useless).
 */
export function validateAcl(acl: Acl, options: { stored?: boolean } = {}): Acl {
  const type = acl.resourceType;
  if (type !== RESOURCE_TYPE.TOPIC && type !== RESOURCE_TYPE.GROUP && type !== RESOURCE_TYPE.CLUSTER) {
    throw new InvalidAclError(
      `resource type ${resourceTypeName(type)} cannot be used in an ACL here: booblik's ACLs name a TOPIC, a GROUP or the CLUSTER`,
    );
  }
  if (acl.patternType !== PATTERN_TYPE.LITERAL && acl.patternType !== PATTERN_TYPE.PREFIXED) {
    throw new InvalidAclError(
      `pattern type ${patternTypeName(acl.patternType)} cannot be stored: an ACL is LITERAL or PREFIXED`,
    );
  }
  if (acl.resourceName.length === 0) throw new InvalidAclError("an ACL's resource name cannot be empty");
  for (const [field, value] of [
    ["resource name", acl.resourceName],
    ["principal", acl.principal],
    ["host", acl.host],
  ] as const) {
    const bytes = UTF8.encode(value).length;
    if (bytes > ACL_FIELD_BYTES_MAX)
      throw new InvalidAclError(`an ACL's ${field} is ${bytes} bytes, more than ${ACL_FIELD_BYTES_MAX}`);
  }
  if (type === RESOURCE_TYPE.CLUSTER && acl.resourceName !== CLUSTER_RESOURCE_NAME) {
    throw new InvalidAclError(
      `the cluster resource is named ${JSON.stringify(CLUSTER_RESOURCE_NAME)}, not ${JSON.stringify(acl.resourceName)}`,
    );
  }
  if (type === RESOURCE_TYPE.CLUSTER && acl.patternType !== PATTERN_TYPE.LITERAL) {
    throw new InvalidAclError("a CLUSTER ACL is LITERAL");
  }
  if (acl.patternType === PATTERN_TYPE.PREFIXED && acl.resourceName === WILDCARD) {
    throw new InvalidAclError('a PREFIXED ACL of "*" means nothing: use LITERAL "*" for every name');
  }
  if (!isValidPrincipal(acl.principal)) {
    throw new InvalidAclError(
      `principal ${JSON.stringify(acl.principal)} is not of the form User:<name> (User:* for everyone)`,
    );
  }
  if (acl.host.length === 0) throw new InvalidAclError('an ACL\'s host cannot be empty ("*" for any host)');
  // A host is matched against the client's IP address as text (hostApplies): a name such as
  // "app.internal" would never match, and a DENY with it would protect nothing without a word (a
  // doc-only client's finding, 2026-12-03). Kafka stores such hosts; booblik refuses them.
  if (options.stored !== true && acl.host !== WILDCARD && isIP(acl.host) === 0)
    throw new InvalidAclError(
      `host ${JSON.stringify(acl.host)} is not an IP address: an ACL's host is matched against the client's IP address, so this one would never apply ("*" for any host)`,
    );
  if (acl.permission !== ACL_PERMISSION.ALLOW && acl.permission !== ACL_PERMISSION.DENY) {
    throw new InvalidAclError(
      `permission ${permissionName(acl.permission)} cannot be stored: an ACL is ALLOW or DENY`,
    );
  }
  const supported = SUPPORTED_OPERATIONS[type];
  if (acl.operation !== ACL_OPERATION.ALL && !supported.includes(acl.operation)) {
    throw new InvalidAclError(
      `operation ${operationName(acl.operation)} is not valid on a ${resourceTypeName(type)}: it takes ALL, ${supported.map(operationName).join(", ")}`,
    );
  }
  return acl;
}

/** Kafka's ResourcePatternFilter.matches and AccessControlEntryFilter.matches together. */
export function filterMatches(filter: AclFilter, acl: Acl): boolean {
  if (filter.resourceType !== RESOURCE_TYPE.ANY && filter.resourceType !== acl.resourceType) return false;
  const patternType = filter.patternType;
  if (
    patternType !== PATTERN_TYPE.ANY &&
    patternType !== PATTERN_TYPE.MATCH &&
    patternType !== acl.patternType
  )
    return false;
  const name = filter.resourceName;
  if (name !== null) {
    if (patternType === PATTERN_TYPE.ANY || patternType === acl.patternType) {
      if (name !== acl.resourceName) return false;
    } else if (acl.patternType === PATTERN_TYPE.LITERAL) {
      if (name !== acl.resourceName && acl.resourceName !== WILDCARD) return false;
    } else if (!name.startsWith(acl.resourceName)) {
      return false;
    }
  }
  if (filter.principal !== null && filter.principal !== acl.principal) return false;
  if (filter.host !== null && filter.host !== acl.host) return false;
  if (filter.operation !== ACL_OPERATION.ANY && filter.operation !== acl.operation) return false;
  if (filter.permission !== ACL_PERMISSION.ANY && filter.permission !== acl.permission) return false;
  return true;
}

/**
 * Throws InvalidAclError when `filter` holds a code outside Kafka's enums (UNKNOWN included), which
 * Kafka answers INVALID_REQUEST rather than silently matching nothing.
 */
export function validateFilter(filter: AclFilter): AclFilter {
  const check = (what: string, table: Record<string, number>, code: number) => {
    if (code === 0 || !Object.values(table).includes(code))
      throw new InvalidAclError(`${what} ${code} is not a valid filter value`);
  };
  check("resource type", RESOURCE_TYPE, filter.resourceType);
  check("pattern type", PATTERN_TYPE, filter.patternType);
  check("operation", ACL_OPERATION, filter.operation);
  check("permission", ACL_PERMISSION, filter.permission);
  return filter;
}

/** Two ACLs are the same ACL when every field is equal. */
export function aclKey(acl: Acl): string {
  return JSON.stringify([
    acl.resourceType,
    acl.resourceName,
    acl.patternType,
    acl.principal,
    acl.host,
    acl.operation,
    acl.permission,
  ]);
}

/** A line for people and audit logs: `ALLOW User:alice READ on TOPIC "orders" (LITERAL) from *`. */
export function describeAcl(acl: Acl): string {
  return `${permissionName(acl.permission)} ${acl.principal} ${operationName(acl.operation)} on ${resourceTypeName(acl.resourceType)} ${JSON.stringify(acl.resourceName)} (${patternTypeName(acl.patternType)}) from ${acl.host === WILDCARD ? "any host" : acl.host}`;
}

/** Does an ALLOW of `granted` allow `asked`? (ALL, itself, or an operation implying it.) */
function allowImplies(granted: number, asked: number): boolean {
  if (granted === asked || granted === ACL_OPERATION.ALL) return true;
  if (asked === ACL_OPERATION.DESCRIBE) {
    return (
      granted === ACL_OPERATION.READ ||
      granted === ACL_OPERATION.WRITE ||
      granted === ACL_OPERATION.DELETE ||
      granted === ACL_OPERATION.ALTER
    );
  }
  return asked === ACL_OPERATION.DESCRIBE_CONFIGS && granted === ACL_OPERATION.ALTER_CONFIGS;
}

/** A resource a request touches. */
export interface AclResource {
  type: AclResourceType;
  name: string;
}

/**
 * An immutable set of valid ACLs and the decision over them (header). The ACLs are indexed by
 * principal, so that a decision reads only the principal's own ACLs and those of `User:*`, not every
 * ACL of the broker (bench/acl.bench.ts).
 */
export class AclSet {
  readonly acls: readonly Acl[];
  private readonly byPrincipal = new Map<string, Acl[]>();
  private static readonly NONE: readonly Acl[] = [];

  constructor(acls: readonly Acl[]) {
    this.acls = acls;
    for (const acl of acls) {
      const list = this.byPrincipal.get(acl.principal);
      if (list === undefined) this.byPrincipal.set(acl.principal, [acl]);
      else list.push(acl);
    }
  }

  /** Does an ACL of this set apply to `resource` (pattern only)? */
  private static patternApplies(acl: Acl, resource: AclResource): boolean {
    if (acl.resourceType !== resource.type) return false;
    if (acl.patternType === PATTERN_TYPE.LITERAL)
      return acl.resourceName === resource.name || acl.resourceName === WILDCARD;
    return resource.name.startsWith(acl.resourceName);
  }

  /** The ACLs naming `principal`, then those naming every principal. */
  private candidates(principal: string): [readonly Acl[], readonly Acl[]] {
    const own = this.byPrincipal.get(principal) ?? AclSet.NONE;
    const everyone =
      principal === EVERY_PRINCIPAL ? AclSet.NONE : (this.byPrincipal.get(EVERY_PRINCIPAL) ?? AclSet.NONE);
    return [own, everyone];
  }

  /** The rule of the header, for a principal that is not a super user. */
  allows(principal: string, host: string, operation: number, resource: AclResource): boolean {
    let allowed = false;
    for (const list of this.candidates(principal)) {
      for (const acl of list) {
        if (!hostApplies(acl.host, host)) continue;
        if (!AclSet.patternApplies(acl, resource)) continue;
        if (acl.permission === ACL_PERMISSION.DENY) {
          if (acl.operation === operation || acl.operation === ACL_OPERATION.ALL) return false;
        } else if (allowImplies(acl.operation, operation)) {
          allowed = true;
        }
      }
    }
    return allowed;
  }

  /**
   * Does any ALLOW let `principal` do `operation` on some resource of `type` (Kafka ≥ 2.8's
   * "WRITE on any topic" for an idempotent producer)? Kafka's authorizeByResourceType
   * (Authorizer.java): a DENY of every name (`*`) refuses at once; an ALLOW of every name allows;
   * otherwise some allowed name must not be cancelled by a DENY of that literal name or by a
   * PREFIXED DENY that is a prefix of it. DENYs of other names do not cancel it: some other topic
   * may still be writable.
   */
  allowsAnyOf(principal: string, host: string, operation: number, type: AclResourceType): boolean {
    const allowedNames: Acl[] = [];
    const deniedLiterals = new Set<string>();
    const deniedPrefixes: string[] = [];
    let everyNameAllowed = false;
    for (const list of this.candidates(principal)) {
      for (const acl of list) {
        if (acl.resourceType !== type) continue;
        if (!hostApplies(acl.host, host)) continue;
        const literal = acl.patternType === PATTERN_TYPE.LITERAL;
        if (acl.permission === ACL_PERMISSION.DENY) {
          if (acl.operation !== operation && acl.operation !== ACL_OPERATION.ALL) continue;
          if (literal && acl.resourceName === WILDCARD) return false;
          if (literal) deniedLiterals.add(acl.resourceName);
          else deniedPrefixes.push(acl.resourceName);
        } else if (allowImplies(acl.operation, operation)) {
          if (literal && acl.resourceName === WILDCARD) everyNameAllowed = true;
          else allowedNames.push(acl);
        }
      }
    }
    if (everyNameAllowed) return true;
    return allowedNames.some(
      (acl) =>
        !(acl.patternType === PATTERN_TYPE.LITERAL && deniedLiterals.has(acl.resourceName)) &&
        !deniedPrefixes.some((prefix) => acl.resourceName.startsWith(prefix)),
    );
  }
}

/** What to say when `principal` may not `operation` `resource`. */
export function deniedMessage(
  principal: string,
  operation: number,
  resource: AclResource,
  host: string,
): string {
  return `${principal} (from ${host}) is not authorized to ${operationName(operation)} ${resourceTypeName(resource.type)} ${JSON.stringify(resource.name)}`;
}
