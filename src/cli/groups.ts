/**
 * `booblik-cli groups …`: consumer groups over the native protocol (LIST_GROUPS, OFFSET_FETCH,
 * OFFSET_COMMIT, DELETE_GROUP; docs/protocol.md "Groups and committed offsets"). main.ts parses the
 * command line and hands over its helpers; every flag is read before connecting.
 *
 * reset-offsets refuses a group with live Kafka members, as Kafka's kafka-consumer-groups does: they
 * would commit their own positions over the reset at their next commit.
 */
import type { BooblikClient } from "../client/client.ts";
import { BooblikError } from "../domain/errors.ts";
import { COMMIT_OFFSETS_PER_REQUEST_MAX } from "../domain/limits.ts";
import { table } from "./output.ts";

export const GROUPS_HELP = `  groups list                           consumer groups: committed partitions, Kafka members
  groups describe <group>               committed offset, log end and lag per partition
  groups reset-offsets <group> --topic T (--to-earliest | --to-latest | --to-offset N | --to-time T)
                                        commit new offsets for every partition of T (refused while
                                        the group has Kafka members)
  groups delete <group>                 delete the group's committed offsets (refused while it has
                                        Kafka members)`;

export interface GroupsCli {
  positional: string[];
  flags: Map<string, string>;
  usage: (message: string) => Error;
  allowOnly: (allowed: string[]) => void;
  connect: () => Promise<BooblikClient>;
  print: (json: unknown, human: () => string) => void;
  /** `--to-offset`'s value (an offset). */
  offsetFlag: (name: string) => number | undefined;
  /** `--to-time`'s value (ms since the epoch). */
  timeFlag: (name: string) => number | undefined;
}

const TARGETS = ["to-earliest", "to-latest", "to-offset", "to-time"];

export async function groupsCommand(cli: GroupsCli): Promise<number> {
  const action = cli.positional[1];
  const actions = ["list", "describe", "reset-offsets", "delete"];
  if (action === undefined || !actions.includes(action))
    throw cli.usage(
      action === undefined
        ? "missing groups action: list, describe, reset-offsets or delete (see --help)"
        : `unknown groups action ${action} (list, describe, reset-offsets, delete)`,
    );
  const group = action === "list" ? "" : cli.positional[2];
  if (group === undefined) throw cli.usage("missing group (see --help)");
  cli.allowOnly(action === "reset-offsets" ? ["topic", ...TARGETS] : []);
  // reset-offsets: exactly one target, read before connecting.
  let target: { kind: string; value: number | undefined } | undefined;
  let topic: string | undefined;
  if (action === "reset-offsets") {
    topic = cli.flags.get("topic");
    if (topic === undefined) throw cli.usage("reset-offsets needs --topic T");
    const given = TARGETS.filter((name) => cli.flags.has(name));
    if (given.length !== 1)
      throw cli.usage(
        "reset-offsets needs exactly one of --to-earliest, --to-latest, --to-offset N, --to-time T",
      );
    const kind = given[0]!;
    target = {
      kind,
      value:
        kind === "to-offset" ? cli.offsetFlag(kind) : kind === "to-time" ? cli.timeFlag(kind) : undefined,
    };
  }
  const client = await cli.connect();
  try {
    if (action === "list") {
      const groups = await client.listGroups();
      cli.print(groups, () =>
        groups.length === 0
          ? "no groups"
          : table(
              ["group", "committed partitions", "kafka members"],
              groups.map((g) => [g.group, g.committedPartitions, g.kafkaMembers]),
            ),
      );
      return 0;
    }
    if (action === "describe") {
      const committed = await client.fetchOffsets(group);
      const topics = [...new Set(committed.map((c) => c.topic))];
      // A topic deleted since the commit: no log end, no lag.
      const ends = new Map<string, number>();
      for (const name of topics) {
        const info = await client.metadata([name]).catch((error: unknown) => {
          if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION") return undefined;
          throw error;
        });
        for (const p of info?.topics[0]?.partitions ?? []) ends.set(`${name}\0${p.partition}`, p.nextOffset);
      }
      const rows = committed.map((c) => {
        const logEnd = ends.get(`${c.topic}\0${c.partition}`);
        return {
          topic: c.topic,
          partition: c.partition,
          committed: c.offset,
          logEnd: logEnd ?? null,
          lag: logEnd === undefined ? null : Math.max(0, logEnd - c.offset),
          metadata: c.metadata,
          commitTimestampMs: c.commitTimestampMs,
        };
      });
      if (rows.length === 0)
        throw new BooblikError("UNKNOWN_TOPIC_OR_PARTITION", `group ${group} has no committed offsets`);
      cli.print({ group, partitions: rows }, () =>
        [
          `group ${group}`,
          table(
            ["topic", "partition", "committed", "log end", "lag", "metadata"],
            rows.map((r) => [
              r.topic,
              r.partition,
              r.committed,
              r.logEnd ?? "-",
              r.lag ?? "- (topic deleted)",
              r.metadata,
            ]),
          ),
        ].join("\n"),
      );
      return 0;
    }
    const members = (await client.listGroups()).find((g) => g.group === group)?.kafkaMembers ?? 0;
    if (action === "reset-offsets") {
      if (members > 0)
        throw new BooblikError(
          "INVALID_REQUEST",
          `group ${group} has ${members} live Kafka member${members === 1 ? "" : "s"}; stop its consumers before resetting its offsets`,
        );
      const info = (await client.metadata([topic!])).topics[0]!;
      const offsets = await Promise.all(
        info.partitions.map(async (p) => {
          let offset: number;
          if (target!.kind === "to-earliest") offset = p.logStartOffset;
          else if (target!.kind === "to-latest") offset = p.nextOffset;
          else if (target!.kind === "to-offset")
            // Kafka's tool clamps an offset outside the log to its bounds; so does this one.
            offset = Math.min(Math.max(target!.value!, p.logStartOffset), p.nextOffset);
          else {
            const found = await client.offsetForTime(topic!, p.partition, target!.value!);
            offset = found.offset >= 0 ? found.offset : found.nextOffset;
          }
          return { topic: topic!, partition: p.partition, offset };
        }),
      );
      // One OFFSET_COMMIT holds at most COMMIT_OFFSETS_PER_REQUEST_MAX partitions and a topic may
      // have more: a topic of 300 partitions failed whole (a helper's stress run, 2026-12-02). Each
      // request is whole or nothing; a failure says how far the reset got.
      for (let start = 0; start < offsets.length; start += COMMIT_OFFSETS_PER_REQUEST_MAX) {
        try {
          await client.commitOffsets(group, offsets.slice(start, start + COMMIT_OFFSETS_PER_REQUEST_MAX));
        } catch (error) {
          if (start > 0 && error instanceof Error)
            error.message = `${error.message} (partitions 0-${start - 1} of ${topic} were reset, the others not)`;
          throw error;
        }
      }
      cli.print({ group, reset: offsets }, () =>
        [
          `group ${group}: offsets of ${topic} reset`,
          table(
            ["partition", "offset"],
            offsets.map((o) => [o.partition, o.offset]),
          ),
        ].join("\n"),
      );
      return 0;
    }
    await client.deleteGroup(group);
    cli.print({ deleted: group }, () => `deleted group ${group}`);
    return 0;
  } finally {
    client.close();
  }
}
