/**
 * `booblik-cli acl …`: ACLs over the native protocol (CREATE_ACLS, DESCRIBE_ACLS, DELETE_ACLS;
 * docs/protocol.md "ACLs", docs/security.md "ACLs"). main.ts parses the command line and hands over
 * its helpers; every flag is checked before connecting, so a typo never reaches the broker.
 */
import {
  ACL_OPERATION,
  ACL_PERMISSION,
  type Acl,
  type AclFilter,
  aclToJson,
  CLUSTER_RESOURCE_NAME,
  InvalidAclError,
  operationName,
  PATTERN_TYPE,
  parseOperation,
  patternTypeName,
  permissionName,
  RESOURCE_TYPE,
  resourceTypeName,
  validateAcl,
} from "../auth/acl.ts";
import type { BooblikClient } from "../client/client.ts";
import { table } from "./output.ts";

export const ACL_HELP = `  acl add --principal User:NAME --operation OP[,OP…] (--topic T | --group G | --cluster)
          [--prefixed] [--deny] [--host H]
                                        allow (or with --deny deny) the principal OP on the
                                        resource (--prefixed: every name starting with T or G;
                                        T or G "*": every name). OP: read, write, create, delete,
                                        alter, describe, describe-configs, alter-configs,
                                        idempotent-write, all. Needs a broker started with
                                        --authorizer acl and ALTER on the cluster
  acl remove [--principal P] [--operation OP] [--topic T | --group G | --cluster] [--prefixed]
          [--allow | --deny] [--host H]  remove every ACL matching all the flags given (at least
                                        a principal or a resource); prints what it removed
  acl list [--principal P] [--topic T | --group G | --cluster] [--prefixed | --match]
                                        the ACLs matching the flags (--match: every ACL that
                                        applies to T or G, prefixed and "*" ones included)`;

export interface AclCli {
  positional: string[];
  flags: Map<string, string>;
  usage: (message: string) => Error;
  allowOnly: (allowed: string[]) => void;
  connect: () => Promise<BooblikClient>;
  print: (json: unknown, human: () => string) => void;
}

const RESOURCE_FLAGS = ["topic", "group", "cluster"];

/** The resource the flags name, or undefined when none does. */
function resourceOf(cli: AclCli): { type: number; name: string } | undefined {
  const given = RESOURCE_FLAGS.filter((name) => cli.flags.has(name));
  if (given.length > 1) throw cli.usage("give one of --topic, --group, --cluster");
  if (cli.flags.has("topic")) return { type: RESOURCE_TYPE.TOPIC, name: cli.flags.get("topic")! };
  if (cli.flags.has("group")) return { type: RESOURCE_TYPE.GROUP, name: cli.flags.get("group")! };
  if (cli.flags.has("cluster")) return { type: RESOURCE_TYPE.CLUSTER, name: CLUSTER_RESOURCE_NAME };
  return undefined;
}

function operationsOf(cli: AclCli, text: string): number[] {
  return text.split(",").map((name) => {
    const code = parseOperation(name.trim());
    if (code === undefined || code === ACL_OPERATION.UNKNOWN || code === ACL_OPERATION.ANY)
      throw cli.usage(
        `unknown operation ${JSON.stringify(name)}: read, write, create, delete, alter, describe, describe-configs, alter-configs, idempotent-write, all`,
      );
    return code;
  });
}

function row(acl: Acl): (string | number)[] {
  return [
    acl.principal,
    permissionName(acl.permission),
    operationName(acl.operation),
    resourceTypeName(acl.resourceType),
    acl.resourceName,
    patternTypeName(acl.patternType),
    acl.host,
  ];
}

const HEADINGS = ["principal", "permission", "operation", "resource", "name", "pattern", "host"];

export async function aclCommand(cli: AclCli): Promise<number> {
  const action = cli.positional[1];
  const actions = ["add", "remove", "list"];
  if (action === undefined || !actions.includes(action))
    throw cli.usage(
      action === undefined
        ? "missing acl action: add, remove or list (see --help)"
        : `unknown acl action ${action} (add, remove, list)`,
    );
  if (cli.positional.length > 2) throw cli.usage(`unexpected argument ${cli.positional[2]} (see --help)`);
  const resource = resourceOf(cli);
  const principal = cli.flags.get("principal");
  const host = cli.flags.get("host");
  const prefixed = cli.flags.has("prefixed");
  if (prefixed && resource === undefined) throw cli.usage("--prefixed needs --topic or --group");
  if (action === "add") {
    cli.allowOnly(["principal", "operation", "prefixed", "deny", "host", ...RESOURCE_FLAGS]);
    if (principal === undefined) throw cli.usage("acl add needs --principal User:NAME");
    const operationText = cli.flags.get("operation");
    if (operationText === undefined) throw cli.usage("acl add needs --operation");
    if (resource === undefined) throw cli.usage("acl add needs --topic T, --group G or --cluster");
    const acls: Acl[] = operationsOf(cli, operationText).map((operation) => ({
      resourceType: resource.type,
      resourceName: resource.name,
      patternType: prefixed ? PATTERN_TYPE.PREFIXED : PATTERN_TYPE.LITERAL,
      principal,
      host: host ?? "*",
      operation,
      permission: cli.flags.has("deny") ? ACL_PERMISSION.DENY : ACL_PERMISSION.ALLOW,
    }));
    // Checked before connecting, as every other value: an ACL that cannot be stored (a principal
    // not User:<name>, say) is the command line's fault, exit 2 (it was the broker's refusal, exit 1).
    for (const acl of acls) {
      try {
        validateAcl(acl);
      } catch (error) {
        if (error instanceof InvalidAclError) throw cli.usage(error.message);
        throw error;
      }
    }
    const client = await cli.connect();
    try {
      await client.createAcls(acls);
    } finally {
      client.close();
    }
    cli.print({ added: acls.map(aclToJson) }, () =>
      acls.map((acl) => `added: ${row(acl).slice(0, 6).join(" ")} from ${acl.host}`).join("\n"),
    );
    return 0;
  }
  if (action === "remove") {
    cli.allowOnly(["principal", "operation", "prefixed", "deny", "allow", "host", ...RESOURCE_FLAGS]);
    if (principal === undefined && resource === undefined)
      throw cli.usage("acl remove needs --principal or a resource (--topic, --group, --cluster)");
    if (cli.flags.has("allow") && cli.flags.has("deny")) throw cli.usage("give --allow or --deny, not both");
    const operationText = cli.flags.get("operation");
    const operations = operationText === undefined ? [ACL_OPERATION.ANY] : operationsOf(cli, operationText);
    const filters: AclFilter[] = operations.map((operation) => ({
      resourceType: resource?.type ?? RESOURCE_TYPE.ANY,
      resourceName: resource?.name ?? null,
      patternType:
        resource === undefined ? PATTERN_TYPE.ANY : prefixed ? PATTERN_TYPE.PREFIXED : PATTERN_TYPE.LITERAL,
      principal: principal ?? null,
      host: host ?? null,
      operation,
      permission: cli.flags.has("deny")
        ? ACL_PERMISSION.DENY
        : cli.flags.has("allow")
          ? ACL_PERMISSION.ALLOW
          : ACL_PERMISSION.ANY,
    }));
    const client = await cli.connect();
    let removed: Acl[];
    try {
      removed = (await client.deleteAcls(filters)).flat();
    } finally {
      client.close();
    }
    cli.print({ removed: removed.map(aclToJson) }, () =>
      removed.length === 0 ? "no ACL matched" : table(HEADINGS, removed.map(row)),
    );
    return 0;
  }
  cli.allowOnly(["principal", "prefixed", "match", ...RESOURCE_FLAGS]);
  if (prefixed && cli.flags.has("match")) throw cli.usage("give --prefixed or --match, not both");
  if (cli.flags.has("match") && resource === undefined) throw cli.usage("--match needs --topic or --group");
  const filter: AclFilter = {
    resourceType: resource?.type ?? RESOURCE_TYPE.ANY,
    resourceName: resource?.name ?? null,
    patternType: prefixed
      ? PATTERN_TYPE.PREFIXED
      : cli.flags.has("match")
        ? PATTERN_TYPE.MATCH
        : PATTERN_TYPE.ANY,
    principal: principal ?? null,
    host: null,
    operation: ACL_OPERATION.ANY,
    permission: ACL_PERMISSION.ANY,
  };
  const client = await cli.connect();
  let found: Acl[];
  try {
    found = await client.describeAcls(filter);
  } finally {
    client.close();
  }
  cli.print(found.map(aclToJson), () => (found.length === 0 ? "no ACLs" : table(HEADINGS, found.map(row))));
  return 0;
}
