/**
 * The broker's ACLs (model and decision: src/auth/acl.ts), kept in `<dataDir>/acls.json` beside the
 * topic configs, and whether they are enforced.
 *
 * File: `{"version":1,"acls":[{"resourceType":"TOPIC","resourceName":"orders","patternType":"LITERAL",
 * "principal":"User:alice","host":"*","operation":"READ","permission":"ALLOW"},…]}`, names rather
 * than codes so that an operator can read it. Replaced atomically (temporary file, fsync, rename,
 * fsync of the directory: ffi/file.ts writeFileAtomically, as producer-ids.json); a missing file is
 * no ACLs. An unreadable or invalid one stops the start: guessing could open topics to everyone.
 *
 * Invariants: a change is answered only after the file holding it is durable, and becomes visible to
 * decisions at the same moment (the in-memory set is swapped after the write); changes are applied
 * one at a time in arrival order (each waits for the previous write); at most ACLS_MAX ACLs.
 *
 * Enforcement is the broker's start option (`--authorizer acl`), not a property of the file: without
 * it every request is allowed whatever the file holds, and the ACL requests are refused with
 * SECURITY_DISABLED (Kafka's answer without an authorizer), so a broker started as before keeps
 * behaving as before.
 */
import path from "node:path";
import { readTextFile, writeFileAtomically } from "../../ffi/file.ts";
import {
  ACL_OPERATION,
  type Acl,
  type AclFilter,
  type AclResource,
  AclSet,
  aclFromJson,
  aclKey,
  aclToJson,
  deniedMessage,
  filterMatches,
  isValidPrincipal,
  RESOURCE_TYPE,
  validateAcl,
  validateFilter,
} from "../auth/acl.ts";
import { AuthorizationError, BooblikError } from "../domain/errors.ts";
import { ACL_DECISION_CACHE_MAX, ACLS_MAX } from "../domain/limits.ts";
import { replacedUnsyncedAsync } from "../domain/replaced.ts";

export const ACLS_FILE = "acls.json";
const FILE_VERSION = 1;

/** How the broker authorizes (main.ts `--authorizer acl`, `--super-users`). */
export interface AuthorizationOptions {
  /** Principals allowed everything, ACLs or not (Kafka's super.users), e.g. `User:admin`. */
  superUsers: readonly string[];
}

/** A denial, for the listener's audit line and counter. */
export type DenialListener = "native" | "kafka" | "console";

export class AclStore {
  private readonly file: string;
  private set: AclSet;
  /** undefined: not enforcing (every request allowed). */
  private readonly options: AuthorizationOptions | undefined;
  private readonly superUsers: ReadonlySet<string>;
  private readonly decisions = new Map<string, boolean>();
  private changing: Promise<unknown> = Promise.resolve();
  /** Requests (or parts of one, per topic) refused by an ACL, per listener; for /metrics. */
  readonly denials: Record<DenialListener, number> = { native: 0, kafka: 0, console: 0 };

  private constructor(file: string, acls: Acl[], options: AuthorizationOptions | undefined) {
    this.file = file;
    this.set = new AclSet(acls);
    this.options = options;
    this.superUsers = new Set(options?.superUsers ?? []);
  }

  /** Reads `<dataDir>/acls.json` (none: no ACLs); throws naming the file and the problem. */
  static open(dataDir: string, options: AuthorizationOptions | undefined): AclStore {
    const file = path.join(dataDir, ACLS_FILE);
    for (const principal of options?.superUsers ?? []) {
      if (!isValidPrincipal(principal))
        throw new BooblikError(
          "INVALID_ARGUMENT",
          `super user ${JSON.stringify(principal)} is not of the form User:<name>`,
        );
    }
    const text = readTextFile(file);
    if (text === undefined) return new AclStore(file, [], options);
    let acls: Acl[];
    try {
      const parsed = JSON.parse(text) as { version?: unknown; acls?: unknown };
      if (parsed.version !== FILE_VERSION || !Array.isArray(parsed.acls))
        throw new Error(`expected {"version":${FILE_VERSION},"acls":[…]}`);
      if (parsed.acls.length > ACLS_MAX) throw new Error(`${parsed.acls.length} ACLs, more than ${ACLS_MAX}`);
      acls = parsed.acls.map((entry, i) => {
        try {
          return validateAcl(aclFromJson(entry), { stored: true });
        } catch (error) {
          throw new Error(`ACL ${i}: ${(error as Error).message}`);
        }
      });
    } catch (error) {
      throw new BooblikError(
        "BAD_SEGMENT_FILE",
        `${file} is not a valid ACL file: ${(error as Error).message}; refusing to start rather than guess who may do what (restore it, fix it, or move it away to start with no ACLs)`,
      );
    }
    const unique = new Map(acls.map((acl) => [aclKey(acl), acl]));
    return new AclStore(file, [...unique.values()], options);
  }

  /** True when the broker was started with an authorizer: requests are checked. */
  get enforcing(): boolean {
    return this.options !== undefined;
  }

  get size(): number {
    return this.set.acls.length;
  }

  /** Is `principal` connecting from `host` allowed `operation` on `resource`? */
  allowed(principal: string, host: string, operation: number, resource: AclResource): boolean {
    if (this.options === undefined || this.superUsers.has(principal)) return true;
    const key = `${principal}\u0000${host}\u0000${operation}\u0000${resource.type}\u0000${resource.name}`;
    const known = this.decisions.get(key);
    if (known !== undefined) return known;
    const decision = this.set.allows(principal, host, operation, resource);
    if (this.decisions.size >= ACL_DECISION_CACHE_MAX) this.decisions.clear();
    this.decisions.set(key, decision);
    return decision;
  }

  /** Kafka ≥ 2.8's idempotent producer rule: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic. */
  allowedIdempotentWrite(principal: string, host: string): boolean {
    if (this.options === undefined || this.superUsers.has(principal)) return true;
    return (
      this.set.allows(principal, host, ACL_OPERATION.IDEMPOTENT_WRITE, {
        type: RESOURCE_TYPE.CLUSTER,
        name: "kafka-cluster",
      }) || this.set.allowsAnyOf(principal, host, ACL_OPERATION.WRITE, RESOURCE_TYPE.TOPIC)
    );
  }

  /**
   * Throws AuthorizationError (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED by the resource) when
   * not allowed, counting the denial for `listener`.
   */
  require(
    listener: DenialListener,
    principal: string,
    host: string,
    operation: number,
    resource: AclResource,
  ): void {
    if (this.allowed(principal, host, operation, resource)) return;
    throw this.denied(listener, principal, host, operation, resource);
  }

  /** Counts a denial and returns its error (for callers that answer per resource). */
  denied(
    listener: DenialListener,
    principal: string,
    host: string,
    operation: number,
    resource: AclResource,
  ): AuthorizationError {
    this.denials[listener]++;
    const code =
      resource.type === RESOURCE_TYPE.TOPIC
        ? "TOPIC_AUTHORIZATION_FAILED"
        : resource.type === RESOURCE_TYPE.GROUP
          ? "GROUP_AUTHORIZATION_FAILED"
          : "CLUSTER_AUTHORIZATION_FAILED";
    return new AuthorizationError(code, deniedMessage(principal, operation, resource, host));
  }

  /** The ACLs matching `filter`. */
  list(filter: AclFilter): Acl[] {
    validateFilter(filter);
    return this.set.acls.filter((acl) => filterMatches(filter, acl));
  }

  /** Throws SECURITY_DISABLED when this broker does not enforce ACLs (Kafka's answer then). */
  checkEnabled(): void {
    if (this.options === undefined)
      throw new BooblikError(
        "SECURITY_DISABLED",
        "this broker does not enforce ACLs (started without --authorizer acl), so it keeps none: start it with --authorizer acl --super-users User:<admin>",
      );
  }

  /**
   * Adds `acls` (each validated first: one invalid ACL refuses them all), durably. ACLs already
   * present change nothing. Resolves once the file holds them.
   */
  add(acls: readonly Acl[]): Promise<void> {
    for (const acl of acls) validateAcl(acl);
    return this.change((current) => {
      const byKey = new Map(current.map((acl) => [aclKey(acl), acl]));
      for (const acl of acls) if (!byKey.has(aclKey(acl))) byKey.set(aclKey(acl), { ...acl });
      if (byKey.size > ACLS_MAX)
        throw new BooblikError(
          "LIMIT_EXCEEDED",
          `this broker holds at most ${ACLS_MAX} ACLs (it has ${current.length}; this request would make ${byKey.size}): remove some, or use PREFIXED ACLs`,
        );
      return { next: [...byKey.values()], result: undefined };
    });
  }

  /** Removes every ACL matching any of `filters`, durably; resolves with what each filter removed. */
  remove(filters: readonly AclFilter[]): Promise<Acl[][]> {
    for (const filter of filters) validateFilter(filter);
    return this.change((current) => {
      const removed = filters.map((filter) => current.filter((acl) => filterMatches(filter, acl)));
      const next = current.filter((acl) => !filters.some((filter) => filterMatches(filter, acl)));
      return { next, result: removed };
    });
  }

  private change<T>(apply: (current: readonly Acl[]) => { next: Acl[]; result: T }): Promise<T> {
    const run = async (): Promise<T> => {
      const { next, result } = apply(this.set.acls);
      if (next.length !== this.set.acls.length || next.some((acl, i) => acl !== this.set.acls[i])) {
        const body = { version: FILE_VERSION, acls: next.map(aclToJson) };
        // In place also when only the directory's sync failed: then the ACLs hold (errors.ts).
        const unsynced = await replacedUnsyncedAsync(() =>
          writeFileAtomically(this.file, `${JSON.stringify(body, null, 1)}\n`),
        );
        this.set = new AclSet(next);
        this.decisions.clear();
        if (unsynced !== undefined) throw unsynced;
      }
      return result;
    };
    const done = this.changing.then(run, run);
    this.changing = done.catch(() => undefined);
    return done;
  }
}
