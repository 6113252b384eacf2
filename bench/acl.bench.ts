/**
 * What the ACL check (src/auth/acl.ts, src/broker/acl-store.ts) costs a request on the CPU alone: no
 * disk, no socket. Per check, in ns:
 *   - off: a broker without --authorizer acl (what every PRODUCE pays then: one boolean test);
 *   - cached: --authorizer acl, the decision for this principal, host, operation and topic already
 *     cached (every PRODUCE after the first of a connection's topic; the key is a string built per
 *     call);
 *   - scan: a cache miss, the decision computed (after any ACL change, or a new principal, host,
 *     operation or topic): the ACLs are indexed by principal, so it reads the principal's own ACLs
 *     and those of `User:*`, not the other principals'.
 * The principal's one ALLOW is the last of `--acls` ACLs (the others are other principals' literal
 * topic ACLs): the row shows that their number does not matter. Rows interleaved round by round (`--rounds`), each for `--seconds`;
 * median and range printed. The request's size does not matter to the check.
 *
 *   bun bench/acl.bench.ts [--seconds=0.5] [--rounds=5] [--acls=1000]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  ACL_OPERATION,
  ACL_PERMISSION,
  type Acl,
  AclSet,
  MATCH_ALL_ACLS,
  PATTERN_TYPE,
  RESOURCE_TYPE,
} from "../src/auth/acl.ts";
import { AclStore } from "../src/broker/acl-store.ts";
import { ACL_REQUEST_ENTRIES_MAX } from "../src/domain/limits.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, nowMs } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const args = parseBenchArgs({
  usage: "bun bench/acl.bench.ts [--seconds=0.5] [--rounds=5] [--acls=1000]",
  options: { seconds: "0.5", rounds: "5", acls: "1000" },
});
const SECONDS = args.number("seconds");
const ROUNDS = args.number("rounds");
const ACLS = args.number("acls");

const acls: Acl[] = Array.from({ length: ACLS }, (_, i) => ({
  resourceType: RESOURCE_TYPE.TOPIC,
  resourceName: `topic-${i}`,
  patternType: PATTERN_TYPE.LITERAL,
  principal: i === ACLS - 1 ? "User:alice" : `User:user-${i}`,
  host: "*",
  operation: ACL_OPERATION.WRITE,
  permission: ACL_PERMISSION.ALLOW,
}));
const topic = { type: RESOURCE_TYPE.TOPIC, name: `topic-${ACLS - 1}` } as const;

// The store only reads and writes acls.json at open and per change; CPU rows only after that.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "booblik-acl-bench-"));
const enforcing = AclStore.open(dir, { superUsers: [] });
for (let i = 0; i < acls.length; i += ACL_REQUEST_ENTRIES_MAX)
  await enforcing.add(acls.slice(i, i + ACL_REQUEST_ENTRIES_MAX));
const off = AclStore.open(dir, undefined);
fs.rmSync(dir, { recursive: true, force: true });
const set = new AclSet(enforcing.list(MATCH_ALL_ACLS));

type Row = "off" | "cached" | "scan";

function check(row: Row): boolean {
  if (row === "off")
    return !off.enforcing || off.allowed("User:alice", "10.0.0.7", ACL_OPERATION.WRITE, topic);
  if (row === "cached") return enforcing.allowed("User:alice", "10.0.0.7", ACL_OPERATION.WRITE, topic);
  return set.allows("User:alice", "10.0.0.7", ACL_OPERATION.WRITE, topic);
}

function run(row: Row): number {
  if (!check(row)) throw new Error(`${row}: alice must be allowed`);
  let calls = 0;
  const start = nowMs();
  const endMs = start + SECONDS * 1000;
  while (nowMs() < endMs) {
    for (let i = 0; i < 1000; i++) check(row);
    calls += 1000;
  }
  return ((nowMs() - start) * 1e6) / calls;
}

console.log(describeMachine("none (CPU only)"));
console.log(
  `one WRITE check on a topic per request, ${ACLS} ACLs (the allowing one last), ${ROUNDS} rounds of ${SECONDS} s, rows interleaved\n`,
);
const results: Record<Row, number[]> = { off: [], cached: [], scan: [] };
for (let round = 0; round < ROUNDS; round++)
  for (const row of ["off", "cached", "scan"] as const) results[row].push(run(row));
console.log("| check | ns per check, median (range) |\n|---|---|");
for (const [row, values] of Object.entries(results)) {
  console.log(`| ${row} | ${medianRange(values, 1)} |`);
}
