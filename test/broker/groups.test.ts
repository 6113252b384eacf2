/**
 * The group coordinator's state machine (src/broker/groups.ts) without sockets: joins parked until
 * every member rejoined, generations, the leader, protocol selection, parked SyncGroups, session and
 * rebalance timeouts removing members, leaves, MEMBER_ID_REQUIRED, the errors of kafka-wire.md §4,
 * static membership (KIP-345) and rejoins without a rebalance, as Kafka's GroupCoordinator does them.
 * Session timeouts are lowered (the coordinator's minimum is an option) so expiries happen within a
 * test; the tests wait for the outcome, never for a fixed time.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { GroupCoordinator, type JoinRequest } from "../../src/broker/groups.ts";
import { GROUP_PENDING_MEMBERS_MAX, GROUPS_MAX } from "../../src/domain/limits.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

const coordinators: GroupCoordinator[] = [];
afterEach(() => {
  for (const coordinator of coordinators.splice(0)) {
    // The running count of members' bytes agrees with a recount, whatever the test did.
    expect(coordinator.heldBytes).toBe(coordinator.countHeldBytes());
    coordinator.close();
  }
});

function coordinator(initialRebalanceDelayMs = 0): GroupCoordinator {
  const made = new GroupCoordinator({ sessionTimeoutMsMin: 1, initialRebalanceDelayMs });
  coordinators.push(made);
  return made;
}

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array) => new TextDecoder().decode(value);

function join(overrides: Partial<JoinRequest> = {}): JoinRequest {
  return {
    groupId: "g",
    memberId: "",
    sessionTimeoutMs: 30_000,
    rebalanceTimeoutMs: 30_000,
    protocolType: "consumer",
    protocols: [{ name: "range", metadata: bytes("m") }],
    clientId: "c",
    clientHost: "/127.0.0.1",
    requireKnownMemberId: false,
    groupInstanceId: null,
    ...overrides,
  };
}

/** A LeaveGroup's member named by its member id alone. */
const dynamic = (memberId: string) => ({ memberId, groupInstanceId: null });

/** Whether a promise settled by now (after the microtasks queued so far). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await Bun.sleep(0);
  return done;
}

describe("the group coordinator", () => {
  test("one member: joins as leader of generation 1 with its metadata, syncs its own assignment, then Stable", async () => {
    const groups = coordinator();
    const joined = await groups.join(join());
    expect(joined).toMatchObject({ error: "NONE", generationId: 1, protocolName: "range" });
    expect(joined.leaderId).toBe(joined.memberId);
    expect(joined.members.map((m) => [m.memberId, text(m.metadata)])).toEqual([[joined.memberId, "m"]]);
    expect(groups.describe("g")?.state).toBe("CompletingRebalance");
    expect(groups.heartbeat("g", 1, joined.memberId)).toBe("NONE");
    const synced = await groups.sync("g", 1, joined.memberId, [
      { memberId: joined.memberId, assignment: bytes("all") },
    ]);
    expect([synced.error, text(synced.assignment)]).toEqual(["NONE", "all"]);
    expect(groups.describe("g")?.state).toBe("Stable");
  });

  test("v4+: a member without an id gets MEMBER_ID_REQUIRED and its id, then joins with it", async () => {
    const groups = coordinator();
    const first = await groups.join(join({ requireKnownMemberId: true, clientId: "rdkafka" }));
    expect(first.error).toBe("MEMBER_ID_REQUIRED");
    expect(first.memberId).toStartWith("rdkafka-");
    const second = await groups.join(join({ requireKnownMemberId: true, memberId: first.memberId }));
    expect([second.error, second.memberId, second.generationId]).toEqual(["NONE", first.memberId, 1]);
    expect((await groups.join(join({ memberId: "made-up" }))).error).toBe("UNKNOWN_MEMBER_ID");
  });

  test("a second member starts a rebalance: the first learns it by heartbeat, both join generation 2, followers' syncs wait for the leader's", async () => {
    const groups = coordinator();
    const a = await groups.join(join());
    await groups.sync("g", 1, a.memberId, [{ memberId: a.memberId, assignment: bytes("a:0,1") }]);
    const bJoin = groups.join(join({ clientId: "b" }));
    expect(await settled(bJoin)).toBe(false);
    expect(groups.heartbeat("g", 1, a.memberId)).toBe("REBALANCE_IN_PROGRESS");
    // During the rebalance each member still shows its previous assignment (the new one none), as
    // Kafka 4.1.1's DescribeGroups answers; booblik cleared them until 2026-12-03.
    const assignments = () =>
      groups
        .describe("g")
        ?.members.map((m) => [m.clientId, text(m.assignment)])
        .sort();
    expect(groups.describe("g")?.state).toBe("PreparingRebalance");
    expect(assignments()).toEqual([
      ["b", ""],
      ["c", "a:0,1"],
    ]);
    // An old-generation sync during the rebalance is refused; commits of generation 1 still pass.
    expect((await groups.sync("g", 1, a.memberId, [])).error).toBe("REBALANCE_IN_PROGRESS");
    expect(groups.checkCommit("g", 1, a.memberId)).toBe("NONE");
    const aJoin = await groups.join(join({ memberId: a.memberId }));
    const b = await bJoin;
    expect([aJoin.generationId, b.generationId]).toEqual([2, 2]);
    expect(aJoin.leaderId).toBe(a.memberId);
    expect(aJoin.members.map((m) => m.memberId).sort()).toEqual([a.memberId, b.memberId].sort());
    expect(b.members).toEqual([]);
    expect(assignments()).toEqual([
      ["b", ""],
      ["c", "a:0,1"],
    ]);
    expect(groups.checkCommit("g", 2, b.memberId)).toBe("REBALANCE_IN_PROGRESS");
    expect(groups.heartbeat("g", 1, a.memberId)).toBe("ILLEGAL_GENERATION");
    const bSync = groups.sync("g", 2, b.memberId, []);
    expect(await settled(bSync)).toBe(false);
    const aSync = await groups.sync("g", 2, a.memberId, [
      { memberId: a.memberId, assignment: bytes("a:0") },
      { memberId: b.memberId, assignment: bytes("b:1") },
    ]);
    expect(text(aSync.assignment)).toBe("a:0");
    expect(text((await bSync).assignment)).toBe("b:1");
    expect(
      groups
        .describe("g")
        ?.members.map((m) => text(m.assignment))
        .sort(),
    ).toEqual(["a:0", "b:1"]);
  });

  test("a member that leaves makes the rest rebalance; the last one leaving empties (and forgets) the group", async () => {
    const groups = coordinator();
    const a = await groups.join(join());
    const bJoin = groups.join(join());
    const aJoin = await groups.join(join({ memberId: a.memberId }));
    const b = await bJoin;
    await Promise.all([
      groups.sync("g", 2, b.memberId, []),
      groups.sync("g", 2, a.memberId, [{ memberId: a.memberId, assignment: bytes("x") }]),
    ]);
    expect(aJoin.generationId).toBe(2);
    expect(groups.leave("g", [dynamic(a.memberId), dynamic("nobody")])).toEqual([
      "NONE",
      "UNKNOWN_MEMBER_ID",
    ]);
    // The leader left: b rejoins alone and becomes the leader of generation 3.
    expect(groups.heartbeat("g", 2, b.memberId)).toBe("REBALANCE_IN_PROGRESS");
    const again = await groups.join(join({ memberId: b.memberId }));
    expect([again.generationId, again.leaderId]).toEqual([3, b.memberId]);
    expect(groups.leave("g", [dynamic(b.memberId)])).toEqual(["NONE"]);
    expect(groups.describe("g")).toBeUndefined();
    expect(groups.list()).toEqual([]);
  });

  test("a member whose session expires is removed and the group rebalances without it", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ sessionTimeoutMs: 60_000 }));
    await groups.sync("g", 1, a.memberId, []);
    const bJoin = groups.join(join({ sessionTimeoutMs: 50 }));
    await groups.join(join({ memberId: a.memberId, sessionTimeoutMs: 60_000 }));
    const b = await bJoin;
    expect(b.generationId).toBe(2);
    // b never syncs nor heartbeats: its session ends, a learns of the rebalance and is alone in 3.
    await waitUntil(
      () => groups.heartbeat("g", 2, a.memberId) === "REBALANCE_IN_PROGRESS",
      "b's session to end",
    );
    const alone = await groups.join(join({ memberId: a.memberId, sessionTimeoutMs: 60_000 }));
    expect([alone.generationId, alone.members.map((m) => m.memberId)]).toEqual([3, [a.memberId]]);
    expect(groups.heartbeat("g", 3, b.memberId)).toBe("UNKNOWN_MEMBER_ID");
  });

  test("members that do not rejoin within the rebalance timeout are dropped and the rebalance completes", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ rebalanceTimeoutMs: 50 }));
    await groups.sync("g", 1, a.memberId, []);
    const b = await groups.join(join({ rebalanceTimeoutMs: 50 }));
    // a never rejoins: after 50 ms the rebalance completes with b alone.
    expect([b.generationId, b.leaderId, b.members.length]).toEqual([2, b.memberId, 1]);
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("UNKNOWN_MEMBER_ID");
  });

  test("a tied vote goes where Kafka 4.1.1 sends it (the first in its HashMap's order: range before roundrobin), not to the leader's preference", async () => {
    const meta = bytes("");
    const offering = (...names: string[]) => names.map((name) => ({ name, metadata: meta }));
    for (const [leaderPrefers, otherPrefers] of [
      [
        ["roundrobin", "range"],
        ["range", "roundrobin"],
      ],
      [
        ["range", "roundrobin"],
        ["roundrobin", "range"],
      ],
    ]) {
      const groups = coordinator();
      const a = await groups.join(join({ protocols: offering(...leaderPrefers!) }));
      const bJoin = groups.join(join({ protocols: offering(...otherPrefers!) }));
      const aJoin = await groups.join(join({ memberId: a.memberId, protocols: offering(...leaderPrefers!) }));
      expect(aJoin.leaderId).toBe(a.memberId);
      // One vote each. Kafka chose range for a Java leader preferring roundrobin and a kcat
      // member preferring range (a mixed-client helper's run); booblik chose roundrobin then.
      expect([aJoin.protocolName, (await bJoin).protocolName]).toEqual(["range", "range"]);
    }
  });

  test("protocol selection: the one every member supports, by vote; none in common is INCONSISTENT_GROUP_PROTOCOL", async () => {
    const groups = coordinator();
    const meta = bytes("");
    const a = await groups.join(
      join({
        protocols: [
          { name: "range", metadata: meta },
          { name: "roundrobin", metadata: meta },
        ],
      }),
    );
    const bJoin = groups.join(
      join({
        protocols: [
          { name: "roundrobin", metadata: meta },
          { name: "sticky", metadata: meta },
        ],
      }),
    );
    const aJoin = await groups.join(
      join({
        memberId: a.memberId,
        protocols: [
          { name: "range", metadata: meta },
          { name: "roundrobin", metadata: meta },
        ],
      }),
    );
    expect([aJoin.protocolName, (await bJoin).protocolName]).toEqual(["roundrobin", "roundrobin"]);
    expect((await groups.join(join({ protocols: [{ name: "other", metadata: meta }] }))).error).toBe(
      "INCONSISTENT_GROUP_PROTOCOL",
    );
    expect((await groups.join(join({ protocolType: "connect" }))).error).toBe("INCONSISTENT_GROUP_PROTOCOL");
  });

  test("refusals: session timeout outside the bounds, empty group id, unknown members and generations", async () => {
    const strict = new GroupCoordinator();
    coordinators.push(strict);
    expect((await strict.join(join({ sessionTimeoutMs: 5_999 }))).error).toBe("INVALID_SESSION_TIMEOUT");
    expect((await strict.join(join({ sessionTimeoutMs: 1_800_001 }))).error).toBe("INVALID_SESSION_TIMEOUT");
    expect((await strict.join(join({ groupId: "" }))).error).toBe("INVALID_GROUP_ID");
    expect(strict.heartbeat("g", 1, "x")).toBe("UNKNOWN_MEMBER_ID");
    expect((await strict.sync("g", 1, "x", [])).error).toBe("UNKNOWN_MEMBER_ID");
    const a = await strict.join(join());
    expect((await strict.sync("g", 7, a.memberId, [])).error).toBe("ILLEGAL_GENERATION");
    expect(strict.checkCommit("g", 1, "x")).toBe("UNKNOWN_MEMBER_ID");
    // A "simple" commit (generation −1, no member) only while the group has no members.
    expect(strict.checkCommit("g", -1, "")).toBe("UNKNOWN_MEMBER_ID");
    expect(strict.checkCommit("other", -1, "")).toBe("NONE");
    // A generation for a group without members (forgotten, or lost in a restart), as Kafka answers.
    expect(strict.checkCommit("other", 3, "m")).toBe("ILLEGAL_GENERATION");
    expect(strict.checkCommit("other", 3, "m", null, () => true)).toBe("UNKNOWN_MEMBER_ID");
  });

  test("close answers every parked request COORDINATOR_NOT_AVAILABLE", async () => {
    const groups = new GroupCoordinator();
    const a = await groups.join(join());
    const bJoin = groups.join(join());
    groups.close();
    expect((await bJoin).error).toBe("COORDINATOR_NOT_AVAILABLE");
    expect(groups.heartbeat("g", 1, a.memberId)).toBe("COORDINATOR_NOT_AVAILABLE");
  });
});

/**
 * Two static members ("i-a" leads, "i-b" follows) of a Stable group of generation 2, "a:0" and
 * "b:1"; `both` is part of both members' JoinGroups, `b` of b's.
 */
async function stableStaticPair(
  groups: GroupCoordinator,
  both: Partial<JoinRequest> = {},
  b: Partial<JoinRequest> = {},
) {
  const a1 = await groups.join(join({ groupInstanceId: "i-a", ...both }));
  await groups.sync("g", 1, a1.memberId, []);
  const bJoin = groups.join(join({ groupInstanceId: "i-b", ...both, ...b }));
  const a = await groups.join(join({ memberId: a1.memberId, groupInstanceId: "i-a", ...both }));
  const bJoined = await bJoin;
  const bSync = groups.sync("g", 2, bJoined.memberId, [], "i-b");
  await groups.sync(
    "g",
    2,
    a.memberId,
    [
      { memberId: a.memberId, assignment: bytes("a:0") },
      { memberId: bJoined.memberId, assignment: bytes("b:1") },
    ],
    "i-a",
  );
  expect(text((await bSync).assignment)).toBe("b:1");
  expect([a.generationId, a.leaderId, groups.describe("g")?.state]).toEqual([2, a.memberId, "Stable"]);
  return { a, b: bJoined };
}

describe("the memory members make the coordinator hold", () => {
  test("metadata and assignments, all groups together, stay within heldBytesMax: a JoinGroup past it gets GROUP_MAX_SIZE_REACHED, a SyncGroup past it makes the group rebalance; leaving gives the bytes back", async () => {
    const groups = new GroupCoordinator({ sessionTimeoutMsMin: 1, heldBytesMax: 10_000 });
    coordinators.push(groups);
    const metadata = (size: number) => [{ name: "range", metadata: new Uint8Array(size) }];
    const a = await groups.join(join({ groupId: "a", protocols: metadata(4_000) }));
    expect(a.error).toBe("NONE");
    expect(groups.heldBytes).toBe(4_005);
    // 4,005 + 6,005 would pass 10,000: refused, and the group it would have made is not kept.
    const b = await groups.join(join({ groupId: "b", protocols: metadata(6_000) }));
    expect(b.error).toBe("GROUP_MAX_SIZE_REACHED");
    expect(groups.describe("b")?.state ?? "Dead").toBe("Dead");
    expect(groups.heldBytes).toBe(4_005);
    // An assignment that does not fit: no Stable generation, the member is told to rejoin.
    const synced = await groups.sync("a", a.generationId, a.memberId, [
      { memberId: a.memberId, assignment: new Uint8Array(7_000) },
    ]);
    expect(synced.error).toBe("REBALANCE_IN_PROGRESS");
    expect(groups.describe("a")?.state).toBe("PreparingRebalance");
    expect(groups.heldBytes).toBe(4_005);
    // A smaller rejoin and an assignment that fits.
    const again = await groups.join(join({ groupId: "a", memberId: a.memberId, protocols: metadata(1_000) }));
    expect([again.error, groups.heldBytes]).toEqual(["NONE", 1_005]);
    const fits = await groups.sync("a", again.generationId, a.memberId, [
      { memberId: a.memberId, assignment: new Uint8Array(2_000) },
    ]);
    expect([fits.error, groups.heldBytes]).toEqual(["NONE", 3_005]);
    expect((await groups.join(join({ groupId: "b", protocols: metadata(6_000) }))).error).toBe("NONE");
    expect(groups.heldBytes).toBe(9_010);
    // Leaving gives everything back.
    groups.leave("a", [dynamic(a.memberId)]);
    expect(groups.heldBytes).toBe(6_005);
  });
});

describe("pending member ids (KIP-394) under a flood", () => {
  test(`at most ${GROUP_PENDING_MEMBERS_MAX} pending ids, the oldest dropped first; with ${GROUPS_MAX} groups of pending ids only, a new group takes the oldest one's place`, async () => {
    const groups = coordinator();
    const pending = async (groupId: string) => {
      const answer = await groups.join(join({ groupId, requireKnownMemberId: true }));
      expect(answer.error).toBe("MEMBER_ID_REQUIRED");
      return answer.memberId;
    };
    const ids: string[] = [];
    for (let i = 0; i < GROUPS_MAX; i++) ids.push(await pending(`flood-${i}`));
    // Every group slot is taken by a group that only has a pending id. A new group used to get
    // COORDINATOR_NOT_AVAILABLE for as long as those ids lived (up to 30 minutes).
    const fresh = await groups.join(join({ groupId: "fresh" }));
    expect(fresh.error).toBe("NONE");
    expect((await groups.join(join({ groupId: "flood-0", memberId: ids[0]! }))).error).toBe(
      "UNKNOWN_MEMBER_ID",
    );
    // 9,999 pending ids now; two more in one group pass the cap: the oldest left (flood-1's) goes.
    await pending("flood-9999");
    await pending("flood-9999");
    expect((await groups.join(join({ groupId: "flood-1", memberId: ids[1]! }))).error).toBe(
      "UNKNOWN_MEMBER_ID",
    );
    // A younger pending id still joins.
    expect((await groups.join(join({ groupId: "flood-2", memberId: ids[2]! }))).error).toBe("NONE");
  });
});

describe("static membership (KIP-345)", () => {
  test("a static member joins in one step (no MEMBER_ID_REQUIRED) with an id named after its instance; the leader and DescribeGroups see the instance ids", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ requireKnownMemberId: true, groupInstanceId: "i-a" }));
    expect([a.error, a.generationId]).toEqual(["NONE", 1]);
    expect(a.memberId).toStartWith("i-a-");
    expect(a.members.map((m) => m.groupInstanceId)).toEqual(["i-a"]);
    expect(groups.describe("g")?.members.map((m) => [m.memberId, m.groupInstanceId])).toEqual([
      [a.memberId, "i-a"],
    ]);
  });

  test("restarted under its instance id, a member takes its place in a Stable group without a rebalance and gets its assignment; its old id is fenced", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups);
    const again = groups.join(join({ groupInstanceId: "i-b", clientId: "c2" }));
    expect(await settled(again)).toBe(true);
    const b2 = await again;
    expect(b2).toMatchObject({ error: "NONE", generationId: 2, leaderId: a.memberId, members: [] });
    expect(b2.memberId).not.toBe(b.memberId);
    expect(b2.memberId).toStartWith("i-b-");
    // No rebalance: the leader's heartbeat of generation 2 is fine, and the new id syncs b's share.
    expect(groups.heartbeat("g", 2, a.memberId, "i-a")).toBe("NONE");
    expect(groups.describe("g")).toMatchObject({ state: "Stable", generationId: 2 });
    const synced = await groups.sync("g", 2, b2.memberId, [], "i-b");
    expect([synced.error, text(synced.assignment)]).toEqual(["NONE", "b:1"]);
    expect(groups.checkCommit("g", 2, b2.memberId, "i-b")).toBe("NONE");
    // The previous incarnation, still running somewhere, is fenced wherever it names the instance.
    expect(groups.heartbeat("g", 2, b.memberId, "i-b")).toBe("FENCED_INSTANCE_ID");
    expect((await groups.sync("g", 2, b.memberId, [], "i-b")).error).toBe("FENCED_INSTANCE_ID");
    expect(groups.checkCommit("g", 2, b.memberId, "i-b")).toBe("FENCED_INSTANCE_ID");
    expect((await groups.join(join({ memberId: b.memberId, groupInstanceId: "i-b" }))).error).toBe(
      "FENCED_INSTANCE_ID",
    );
    expect(groups.heartbeat("g", 2, b.memberId)).toBe("UNKNOWN_MEMBER_ID");
    // An instance the group does not know, named with a live member id, is UNKNOWN_MEMBER_ID.
    expect(groups.heartbeat("g", 2, a.memberId, "i-x")).toBe("UNKNOWN_MEMBER_ID");
    // The client id stays the first incarnation's ("c", not "c2"), as Kafka keeps it.
    expect(groups.describe("g")?.members.map((m) => [m.memberId, m.groupInstanceId, m.clientId])).toEqual([
      [a.memberId, "i-a", "c"],
      [b2.memberId, "i-b", "c"],
    ]);
  });

  test("the leader restarted: it is told the previous leader id (so it does not assign), and leads the next rebalance under its new id", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups);
    const a2 = await groups.join(join({ groupInstanceId: "i-a" }));
    expect([a2.error, a2.generationId, a2.leaderId, a2.members]).toEqual(["NONE", 2, a.memberId, []]);
    expect(text((await groups.sync("g", 2, a2.memberId, [], "i-a")).assignment)).toBe("a:0");
    expect(groups.heartbeat("g", 2, b.memberId, "i-b")).toBe("NONE");
    // A third member: the rebalance that follows is led by the leader's new incarnation.
    const cJoin = groups.join(join());
    const a3 = groups.join(join({ memberId: a2.memberId, groupInstanceId: "i-a" }));
    const b3 = await groups.join(join({ memberId: b.memberId, groupInstanceId: "i-b" }));
    expect([(await a3).leaderId, b3.leaderId, (await cJoin).generationId]).toEqual([
      a2.memberId,
      a2.memberId,
      3,
    ]);
    expect((await a3).members.map((m) => m.groupInstanceId).sort()).toEqual(["i-a", "i-b", null].sort());
  });

  test("the leader restarted, JoinGroup v9 (KIP-814): it is told it leads, with the members, and to skip the assignment; a follower is not", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups);
    const a2 = await groups.join(join({ groupInstanceId: "i-a", supportSkippingAssignment: true }));
    expect([a2.error, a2.generationId, a2.leaderId, a2.skipAssignment, a2.protocolType]).toEqual([
      "NONE",
      2,
      a2.memberId,
      true,
      "consumer",
    ]);
    expect(a2.leaderId).not.toBe(a.memberId);
    expect(a2.members.map((m) => m.groupInstanceId).sort()).toEqual(["i-a", "i-b"]);
    // Still no rebalance: the group keeps its generation and assignment.
    expect(groups.describe("g")).toMatchObject({ state: "Stable", generationId: 2 });
    expect(text((await groups.sync("g", 2, a2.memberId, [], "i-a")).assignment)).toBe("a:0");
    const b2 = await groups.join(join({ groupInstanceId: "i-b", supportSkippingAssignment: true }));
    expect([b2.leaderId, b2.skipAssignment, b2.members]).toEqual([a2.memberId, false, []]);
    expect(b2.memberId).not.toBe(b.memberId);
  });

  test("SyncGroup v5's protocol type and name: one the group does not have is INCONSISTENT_GROUP_PROTOCOL, after the member check", async () => {
    const groups = coordinator();
    const { a } = await stableStaticPair(groups);
    const sync = (id: string, type: string | null, name: string | null) =>
      groups.sync("g", 2, id, [], "i-a", { type, name });
    expect((await sync(a.memberId, "consumer", "range")).error).toBe("NONE");
    expect((await sync(a.memberId, null, null)).error).toBe("NONE");
    expect((await sync(a.memberId, "connect", "range")).error).toBe("INCONSISTENT_GROUP_PROTOCOL");
    expect((await sync(a.memberId, "consumer", "roundrobin")).error).toBe("INCONSISTENT_GROUP_PROTOCOL");
    expect((await groups.sync("g", 2, "nobody", [], null, { type: "connect", name: null })).error).toBe(
      "UNKNOWN_MEMBER_ID",
    );
  });

  test("a replacement must share a protocol with the member it replaces; one that changes the group's protocol rebalances; one during a rebalance fences the parked join and waits in its place; one in CompletingRebalance rebalances", async () => {
    const meta = bytes("");
    const groups = coordinator();
    const alone = await groups.join(join({ groupInstanceId: "i-a" }));
    await groups.sync("g", 1, alone.memberId, []);
    // Kafka counts the incarnation being replaced: nothing in common with it is refused.
    expect(
      (
        await groups.join(
          join({ groupInstanceId: "i-a", protocols: [{ name: "roundrobin", metadata: meta }] }),
        )
      ).error,
    ).toBe("INCONSISTENT_GROUP_PROTOCOL");
    const changed = await groups.join(
      join({
        groupInstanceId: "i-a",
        protocols: [
          { name: "roundrobin", metadata: meta },
          { name: "range", metadata: meta },
        ],
      }),
    );
    expect([changed.generationId, changed.protocolName, changed.leaderId]).toEqual([
      2,
      "roundrobin",
      changed.memberId,
    ]);
    // CompletingRebalance (no sync yet): the leader may be assigning to the old id, so a rebalance.
    const replaced = await groups.join(
      join({ groupInstanceId: "i-a", protocols: [{ name: "roundrobin", metadata: meta }] }),
    ); // roundrobin alone now fits: the member it replaces has it
    expect([replaced.generationId, replaced.leaderId]).toEqual([3, replaced.memberId]);
    expect(groups.heartbeat("g", 3, changed.memberId, "i-a")).toBe("FENCED_INSTANCE_ID");

    const other = coordinator();
    const { a, b } = await stableStaticPair(other);
    const cJoin = other.join(join());
    const oldB = other.join(join({ memberId: b.memberId, groupInstanceId: "i-b" }));
    expect(await settled(oldB)).toBe(false); // waits for a
    const newB = other.join(join({ groupInstanceId: "i-b" }));
    expect((await oldB).error).toBe("FENCED_INSTANCE_ID");
    expect(await settled(newB)).toBe(false);
    // a rejoins last: the rebalance completes with the new incarnation in it.
    const aJoin = other.join(join({ memberId: a.memberId, groupInstanceId: "i-a" }));
    const results = await Promise.all([cJoin, aJoin, newB]);
    expect(results.map((r) => r.generationId)).toEqual([3, 3, 3]);
    expect(results[1]!.members.map((m) => m.memberId)).toContain(results[2]!.memberId);
    expect(results[1]!.members.map((m) => m.memberId)).not.toContain(b.memberId);
  });

  test("LeaveGroup: by instance id alone, refused for a fenced id, unknown instances; an id from MEMBER_ID_REQUIRED can leave too", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups);
    const b2 = await groups.join(join({ groupInstanceId: "i-b" }));
    expect(
      groups.leave("g", [
        { memberId: b.memberId, groupInstanceId: "i-b" },
        { memberId: "", groupInstanceId: "nobody" },
        { memberId: "", groupInstanceId: "i-b" },
      ]),
    ).toEqual(["FENCED_INSTANCE_ID", "UNKNOWN_MEMBER_ID", "NONE"]);
    expect(groups.heartbeat("g", 2, b2.memberId, "i-b")).toBe("UNKNOWN_MEMBER_ID");
    expect(groups.heartbeat("g", 2, a.memberId, "i-a")).toBe("REBALANCE_IN_PROGRESS");
    // Its instance is free again: a new member under it is a new member (no replacement).
    const a2 = groups.join(join({ memberId: a.memberId, groupInstanceId: "i-a" }));
    expect((await a2).members.map((m) => m.groupInstanceId)).toEqual(["i-a"]);

    const pending = await groups.join(join({ requireKnownMemberId: true }));
    expect(pending.error).toBe("MEMBER_ID_REQUIRED");
    expect(groups.leave("g", [dynamic(pending.memberId)])).toEqual(["NONE"]);
    expect((await groups.join(join({ memberId: pending.memberId }))).error).toBe("UNKNOWN_MEMBER_ID");
  });

  test("static members that miss the rebalance timeout keep their place (and their restart causes no rebalance); a leader that did not rejoin hands the lead over", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups, { rebalanceTimeoutMs: 50 });
    const cJoin = groups.join(join({ rebalanceTimeoutMs: 50 }));
    const aJoin = await groups.join(
      join({ memberId: a.memberId, groupInstanceId: "i-a", rebalanceTimeoutMs: 50 }),
    );
    // b never rejoined: after 50 ms generation 3 completes with b still in it.
    expect(aJoin.generationId).toBe(3);
    expect(aJoin.members.map((m) => m.memberId)).toContain(b.memberId);
    const c = await cJoin;
    await Promise.all([
      groups.sync("g", 3, c.memberId, []),
      groups.sync(
        "g",
        3,
        a.memberId,
        [
          { memberId: a.memberId, assignment: bytes("a:0") },
          { memberId: b.memberId, assignment: bytes("b:1") },
          { memberId: c.memberId, assignment: bytes("c:-") },
        ],
        "i-a",
      ),
    ]);
    const b2 = await groups.join(join({ groupInstanceId: "i-b", rebalanceTimeoutMs: 50 }));
    expect([b2.error, b2.generationId]).toEqual(["NONE", 3]);
    expect(text((await groups.sync("g", 3, b2.memberId, [], "i-b")).assignment)).toBe("b:1");
    expect(groups.heartbeat("g", 3, c.memberId)).toBe("NONE");

    // The leader a does not rejoin the next rebalance: one that did leads generation 4, with a
    // (static) still among the members it assigns to.
    const dJoin = groups.join(join({ rebalanceTimeoutMs: 50 }));
    const cAgain = groups.join(join({ memberId: c.memberId, rebalanceTimeoutMs: 50 }));
    const bAgain = groups.join(
      join({ memberId: b2.memberId, groupInstanceId: "i-b", rebalanceTimeoutMs: 50 }),
    );
    const rejoined = await Promise.all([dJoin, cAgain, bAgain]);
    expect(rejoined.map((r) => r.generationId)).toEqual([4, 4, 4]);
    const leader = rejoined.find((r) => r.memberId === r.leaderId);
    expect(leader).toBeDefined();
    expect(rejoined.map((r) => r.leaderId)).not.toContain(a.memberId);
    expect(leader!.members.map((m) => m.memberId)).toContain(a.memberId);
  });

  test("when only static members are left and none rejoins, the rebalance waits (they leave by their sessions), then completes with whoever rejoins", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups, { rebalanceTimeoutMs: 20 }, { sessionTimeoutMs: 300 });
    // A dynamic member joins and leaves again: the rebalance it started has nobody rejoining.
    const cJoin = groups.join(join({ rebalanceTimeoutMs: 20 }));
    expect(groups.leave("g", [dynamic(groups.describe("g")!.members[2]!.memberId)])).toEqual(["NONE"]);
    expect((await cJoin).error).toBe("UNKNOWN_MEMBER_ID");
    // Several 20 ms rebalance timeouts pass without anyone rejoining; b's 300 ms session ends first.
    await waitUntil(() => groups.describe("g")?.members.length === 1, "b's removal");
    expect(groups.describe("g")).toMatchObject({ state: "PreparingRebalance", generationId: 2 });
    const aJoin = await groups.join(
      join({ memberId: a.memberId, groupInstanceId: "i-a", rebalanceTimeoutMs: 20 }),
    );
    expect([aJoin.generationId, aJoin.members.map((m) => m.memberId)]).toEqual([3, [a.memberId]]);
    expect(groups.heartbeat("g", 3, b.memberId, "i-b")).toBe("UNKNOWN_MEMBER_ID");
  });

  test("a static member whose session expires is removed, and its instance joins again as a new member", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ groupInstanceId: "i-a", sessionTimeoutMs: 50 }));
    await groups.sync("g", 1, a.memberId, []);
    await waitUntil(() => groups.describe("g") === undefined, "a's session to end");
    const again = await groups.join(join({ groupInstanceId: "i-a" }));
    expect([again.error, again.generationId, again.leaderId]).toEqual(["NONE", 1, again.memberId]);
  });
});

describe("rejoining a group", () => {
  test("members starting together share one rebalance: the join waits for ids handed out with MEMBER_ID_REQUIRED, or for their expiry", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ requireKnownMemberId: true }));
    const b = await groups.join(join({ requireKnownMemberId: true }));
    expect([a.error, b.error]).toEqual(["MEMBER_ID_REQUIRED", "MEMBER_ID_REQUIRED"]);
    const aJoin = groups.join(join({ requireKnownMemberId: true, memberId: a.memberId }));
    expect(await settled(aJoin)).toBe(false);
    const bJoined = await groups.join(join({ requireKnownMemberId: true, memberId: b.memberId }));
    expect([(await aJoin).generationId, bJoined.generationId, (await aJoin).members.length]).toEqual([
      1, 1, 2,
    ]);

    // An id whose member never comes back holds the join only until it expires (its session).
    const other = coordinator();
    const c = await other.join(join({ groupId: "h", requireKnownMemberId: true }));
    await other.join(join({ groupId: "h", requireKnownMemberId: true, sessionTimeoutMs: 50 }));
    const alone = await other.join(join({ groupId: "h", requireKnownMemberId: true, memberId: c.memberId }));
    expect([alone.generationId, alone.members.map((m) => m.memberId)]).toEqual([1, [c.memberId]]);
  });

  test("a member waiting in JoinGroup is not removed by the session timer its Heartbeat restarted", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ sessionTimeoutMs: 50 }));
    await groups.sync("g", 1, a.memberId, []);
    const bJoin = groups.join(join({ sessionTimeoutMs: 300 }));
    const aJoin = groups.join(join({ memberId: a.memberId, sessionTimeoutMs: 50 }));
    // b's join completed generation 2 at once (both joined); b goes silent and a rejoins again.
    expect((await bJoin).generationId).toBe(2);
    expect((await aJoin).generationId).toBe(2);
    const b = await bJoin;
    const aWaits = groups.join(
      join({
        memberId: a.memberId,
        sessionTimeoutMs: 50,
        protocols: [{ name: "range", metadata: bytes("n") }],
      }),
    );
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("REBALANCE_IN_PROGRESS"); // restarts a 50 ms timer
    // a waits for b, which never rejoins: b's 300 ms session ends, and only then does the
    // rebalance complete, with a still in it.
    const rejoined = await aWaits;
    expect([rejoined.error, rejoined.generationId, rejoined.members.map((m) => m.memberId)]).toEqual([
      "NONE",
      3,
      [a.memberId],
    ]);
    expect(groups.heartbeat("g", 3, b.memberId)).toBe("UNKNOWN_MEMBER_ID");
  });

  test("a follower with unchanged metadata gets the current generation back, without a rebalance; changed metadata or the leader rejoining rebalances", async () => {
    const groups = coordinator();
    const { a, b } = await stableStaticPair(groups);
    const same = await groups.join(join({ memberId: b.memberId }));
    expect(same).toMatchObject({ error: "NONE", generationId: 2, leaderId: a.memberId, members: [] });
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("NONE");
    expect(text((await groups.sync("g", 2, b.memberId, [])).assignment)).toBe("b:1");

    const changedJoin = groups.join(
      join({ memberId: b.memberId, protocols: [{ name: "range", metadata: bytes("other") }] }),
    );
    expect(await settled(changedJoin)).toBe(false);
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("REBALANCE_IN_PROGRESS");
    const aJoin = await groups.join(join({ memberId: a.memberId }));
    expect([aJoin.generationId, (await changedJoin).generationId]).toEqual([3, 3]);
    // CompletingRebalance: the leader rejoining with the same metadata gets the members again.
    const leaderAgain = await groups.join(join({ memberId: a.memberId }));
    expect([leaderAgain.generationId, leaderAgain.members.length]).toEqual([3, 2]);
    await Promise.all([
      groups.sync("g", 3, b.memberId, []),
      groups.sync("g", 3, a.memberId, [{ memberId: a.memberId, assignment: bytes("x") }]),
    ]);
    // Stable: the leader rejoining starts a rebalance.
    const leaderJoin = groups.join(join({ memberId: a.memberId }));
    expect(await settled(leaderJoin)).toBe(false);
    expect(groups.heartbeat("g", 3, b.memberId)).toBe("REBALANCE_IN_PROGRESS");
  });

  test("a LeaveGroup of an id handed out with MEMBER_ID_REQUIRED lets a rebalance waiting for it complete, and rebalances a Stable group", async () => {
    const groups = coordinator();
    const a = await groups.join(join());
    await groups.sync("g", 1, a.memberId, []);
    const stranger = await groups.join(join({ requireKnownMemberId: true }));
    expect(stranger.error).toBe("MEMBER_ID_REQUIRED");
    // a asks for a rebalance; it waits for the id handed out (it may join with it any moment).
    const aJoin = groups.join(
      join({ memberId: a.memberId, protocols: [{ name: "range", metadata: bytes("n") }] }),
    );
    expect(await settled(aJoin)).toBe(false);
    // The id leaves instead: the rebalance completes now, not after its 30 s session.
    expect(groups.leave("g", [dynamic(stranger.memberId)])).toEqual(["NONE"]);
    expect((await aJoin).generationId).toBe(2);
    await groups.sync("g", 2, a.memberId, []);
    expect(groups.describe("g")?.state).toBe("Stable");
    // In a Stable group, such a leave starts a rebalance, as any leave does in Kafka.
    const other = await groups.join(join({ requireKnownMemberId: true }));
    expect(groups.leave("g", [dynamic(other.memberId)])).toEqual(["NONE"]);
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("REBALANCE_IN_PROGRESS");
  });
});

describe("SyncGroup within the rebalance timeout", () => {
  /** Dynamic members a (the leader) and b, joined to generation 2 with 50 ms rebalance timeouts. */
  async function joinedPair(groups: GroupCoordinator) {
    const first = await groups.join(join({ rebalanceTimeoutMs: 50 }));
    await groups.sync("g", 1, first.memberId, []);
    const bJoin = groups.join(join({ rebalanceTimeoutMs: 50 }));
    const a = await groups.join(join({ memberId: first.memberId, rebalanceTimeoutMs: 50 }));
    return { a, b: await bJoin };
  }

  test("a leader that joined and keeps heartbeating but never syncs is removed after the rebalance timeout; the waiting follower is told to rejoin and leads the next generation", async () => {
    const groups = coordinator();
    const { a, b } = await joinedPair(groups);
    expect([a.generationId, a.leaderId]).toEqual([2, a.memberId]);
    // b syncs and waits for the leader's assignment; the leader only heartbeats.
    const bSync = groups.sync("g", 2, b.memberId, []);
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("NONE");
    expect((await bSync).error).toBe("REBALANCE_IN_PROGRESS");
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("UNKNOWN_MEMBER_ID");
    const again = await groups.join(join({ memberId: b.memberId, rebalanceTimeoutMs: 50 }));
    expect([again.generationId, again.leaderId, again.members.map((m) => m.memberId)]).toEqual([
      3,
      b.memberId,
      [b.memberId],
    ]);
  });

  test("in a Stable group, a follower that never asks for its assignment is removed after the rebalance timeout and the group rebalances; the members that synced stay", async () => {
    const groups = coordinator();
    const { a, b } = await joinedPair(groups);
    const assigned = await groups.sync("g", 2, a.memberId, [
      { memberId: a.memberId, assignment: bytes("a:0") },
      { memberId: b.memberId, assignment: bytes("b:1") },
    ]);
    expect([assigned.error, groups.describe("g")?.state]).toEqual(["NONE", "Stable"]);
    // b holds partition 1 without consuming it; its heartbeats keep its session alive.
    await waitUntil(() => groups.heartbeat("g", 2, b.memberId) !== "NONE", "b's removal");
    expect(groups.heartbeat("g", 2, b.memberId)).toBe("UNKNOWN_MEMBER_ID");
    expect(groups.heartbeat("g", 2, a.memberId)).toBe("REBALANCE_IN_PROGRESS");
    const alone = await groups.join(join({ memberId: a.memberId, rebalanceTimeoutMs: 50 }));
    expect([alone.generationId, alone.members.map((m) => m.memberId)]).toEqual([3, [a.memberId]]);
  });

  test("a static member restarted in a Stable group before its SyncGroup owes it under its new id", async () => {
    const groups = coordinator();
    const a = await groups.join(join({ groupInstanceId: "i-a", rebalanceTimeoutMs: 50 }));
    await groups.sync("g", 1, a.memberId, [], "i-a");
    const bJoin = groups.join(join({ groupInstanceId: "i-b", rebalanceTimeoutMs: 50 }));
    await groups.join(join({ memberId: a.memberId, groupInstanceId: "i-a", rebalanceTimeoutMs: 50 }));
    const b = await bJoin;
    await groups.sync("g", 2, a.memberId, [{ memberId: b.memberId, assignment: bytes("b:1") }], "i-a");
    // b restarts before its SyncGroup (no rebalance: Stable, same protocol); the new incarnation
    // never syncs either, so it is the one removed.
    const b2 = await groups.join(join({ groupInstanceId: "i-b", rebalanceTimeoutMs: 50 }));
    expect([b2.error, b2.generationId]).toEqual(["NONE", 2]);
    await waitUntil(
      () => groups.heartbeat("g", 2, b2.memberId, "i-b") !== "NONE",
      "the removal of b's new incarnation",
    );
    expect(groups.heartbeat("g", 2, b2.memberId, "i-b")).toBe("UNKNOWN_MEMBER_ID");
    expect(groups.heartbeat("g", 2, a.memberId, "i-a")).toBe("REBALANCE_IN_PROGRESS");
  });
});

describe("the initial rebalance delay (Kafka's group.initial.rebalance.delay.ms)", () => {
  test("members that join a group without members within the delay share its first generation; later rebalances are not delayed", async () => {
    const delayMs = 100;
    const groups = coordinator(delayMs);
    const started = performance.now();
    const aJoin = groups.join(join());
    // Without the delay a would be generation 1 alone at once, and b would start generation 2.
    expect(await settled(aJoin)).toBe(false);
    const bJoin = groups.join(join());
    const [a, b] = await Promise.all([aJoin, bJoin]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(delayMs);
    expect([a.generationId, b.generationId, a.leaderId, a.members.length]).toEqual([1, 1, a.memberId, 2]);
    await Promise.all([groups.sync("g", 1, b.memberId, []), groups.sync("g", 1, a.memberId, [])]);
    // A group that has members rebalances as soon as all of them rejoined.
    const cJoin = groups.join(join());
    const rejoins = [
      groups.join(join({ memberId: a.memberId })),
      groups.join(join({ memberId: b.memberId })),
    ];
    expect(await settled(Promise.all([cJoin, ...rejoins]))).toBe(true);
    expect((await cJoin).generationId).toBe(2);
  });

  test("a member that arrives during the delay extends it by another delay", async () => {
    const delayMs = 150;
    const groups = coordinator(delayMs);
    const started = performance.now();
    const joins = [groups.join(join()), groups.join(join())];
    const [a] = await Promise.all(joins);
    // The first window ends with a new member seen: one more window, then the rebalance completes.
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * delayMs);
    expect([a!.generationId, a!.members.length]).toEqual([1, 2]);
  });

  test("the delay ends early when every member leaves", async () => {
    const groups = coordinator(60_000);
    const aJoin = groups.join(join());
    expect(await settled(aJoin)).toBe(false);
    const pending = groups.describe("g")!.members[0]!.memberId;
    expect(groups.leave("g", [dynamic(pending)])).toEqual(["NONE"]);
    expect((await aJoin).error).toBe("UNKNOWN_MEMBER_ID");
    expect(groups.describe("g")).toBeUndefined();
  });
});

describe("the group coordinator across a restart (its groups kept in the broker's offsets topic)", () => {
  /** A broker on a fresh directory, and a coordinator that stores its groups there. */
  function brokerAt(dir: string): { broker: Broker; groups: GroupCoordinator } {
    const broker = Broker.open({ dataDir: dir });
    const groups = new GroupCoordinator({
      sessionTimeoutMsMin: 1,
      store: broker.offsets,
      hasCommittedOffsets: (id) => broker.offsets.hasCommits(id),
    });
    coordinators.push(groups);
    return { broker, groups };
  }

  async function restart(dir: string, before: { broker: Broker; groups: GroupCoordinator }) {
    before.groups.close();
    await before.broker.close();
    return brokerAt(dir);
  }

  test("members carry on with their ids, generation and assignments, without a rebalance; a member that does not come back is removed when its session ends", async () => {
    using dir = tempDir();
    let at = brokerAt(dir.path);
    try {
      const a = await at.groups.join(join({ sessionTimeoutMs: 60_000 }));
      await at.groups.sync("g", 1, a.memberId, [{ memberId: a.memberId, assignment: bytes("a:0,1") }]);
      const bJoin = at.groups.join(join({ clientId: "b", sessionTimeoutMs: 300 }));
      await at.groups.join(join({ memberId: a.memberId, sessionTimeoutMs: 60_000 }));
      const b = await bJoin;
      const bSync = at.groups.sync("g", 2, b.memberId, []);
      // The leader's SyncGroup is answered once its generation is stored.
      const aSync = await at.groups.sync("g", 2, a.memberId, [
        { memberId: a.memberId, assignment: bytes("a:0") },
        { memberId: b.memberId, assignment: bytes("b:1") },
      ]);
      expect([text(aSync.assignment), text((await bSync).assignment)]).toEqual(["a:0", "b:1"]);
      expect(at.broker.offsets.storedGroups().get("g")?.generationId).toBe(2);

      at = await restart(dir.path, at);
      expect(at.groups.restoredGroups).toBe(1);
      const described = at.groups.describe("g");
      expect(described).toMatchObject({ state: "Stable", generationId: 2, protocol: "range" });
      expect(described?.members.map((m) => [m.memberId, text(m.assignment)]).sort()).toEqual(
        [
          [a.memberId, "a:0"],
          [b.memberId, "b:1"],
        ].sort(),
      );
      // The same member id and generation are good: no UNKNOWN_MEMBER_ID, no rebalance.
      expect(at.groups.heartbeat("g", 2, a.memberId)).toBe("NONE");
      expect(at.groups.checkCommit("g", 2, a.memberId)).toBe("NONE");
      expect(text((await at.groups.sync("g", 2, a.memberId, [])).assignment)).toBe("a:0");
      const rejoined = await at.groups.join(
        join({ clientId: "b", memberId: b.memberId, sessionTimeoutMs: 300 }),
      );
      expect(rejoined).toMatchObject({ error: "NONE", generationId: 2, leaderId: a.memberId });
      // b goes silent: its session (300 ms) ends, and a is told to rejoin for generation 3.
      await waitUntil(() => at.groups.heartbeat("g", 2, a.memberId) === "REBALANCE_IN_PROGRESS", "b removed");
      const alone = await at.groups.join(join({ memberId: a.memberId, sessionTimeoutMs: 60_000 }));
      expect([alone.generationId, alone.members.map((m) => m.memberId)]).toEqual([3, [a.memberId]]);
    } finally {
      at.groups.close();
      await at.broker.close();
    }
  });

  test("a static member's replacement is stored before its answer, so after a restart its new id is the one that counts", async () => {
    using dir = tempDir();
    let at = brokerAt(dir.path);
    try {
      const first = await at.groups.join(join({ groupInstanceId: "one" }));
      await at.groups.sync("g", 1, first.memberId, [{ memberId: first.memberId, assignment: bytes("p0") }]);
      const second = await at.groups.join(join({ groupInstanceId: "one" }));
      expect(second).toMatchObject({ error: "NONE", generationId: 1 });
      expect(second.memberId).not.toBe(first.memberId);
      at = await restart(dir.path, at);
      expect(at.groups.heartbeat("g", 1, second.memberId, "one")).toBe("NONE");
      expect(at.groups.heartbeat("g", 1, first.memberId, "one")).toBe("FENCED_INSTANCE_ID");
      expect(text((await at.groups.sync("g", 1, second.memberId, [], "one")).assignment)).toBe("p0");
    } finally {
      at.groups.close();
      await at.broker.close();
    }
  });

  test('a group that emptied keeps counting generations and its protocol type after a restart while it has commits; deleting it starts it again at 1, of protocol type ""', async () => {
    using dir = tempDir();
    let at = brokerAt(dir.path);
    try {
      const a = await at.groups.join(join());
      await at.groups.sync("g", 1, a.memberId, [{ memberId: a.memberId, assignment: bytes("p0") }]);
      await at.broker.offsets.commit("g", [
        { topic: "t", partition: 0, offset: 5, leaderEpoch: -1, metadata: null },
      ]);
      expect(at.groups.leave("g", [dynamic(a.memberId)])).toEqual(["NONE"]);
      // The rebalance that empties the group counts one (Kafka's): generation 2, stored without members.
      await waitUntil(
        () => at.broker.offsets.storedGroups().get("g")?.members.length === 0,
        "the emptied record",
      );
      // Empty, it is still a consumer group (ListGroups and DescribeGroups show it so, as Kafka).
      expect(at.groups.emptiedProtocolType("g")).toBe("consumer");
      at = await restart(dir.path, at);
      expect(at.groups.describe("g")).toBeUndefined();
      expect(at.groups.emptiedProtocolType("g")).toBe("consumer");
      expect((await at.groups.join(join())).generationId).toBe(3);
      at.groups.close();
      at = await restart(dir.path, at);
      // Closed while CompletingRebalance: generation 3 never synced, so the stored record is still
      // the emptied one; the next member continues from it.
      const b = await at.groups.join(join());
      expect(b.generationId).toBe(3);
      expect(at.groups.leave("g", [dynamic(b.memberId)])).toEqual(["NONE"]);
      await waitUntil(
        () => at.broker.offsets.storedGroups().get("g")?.generationId === 4,
        "the emptied record",
      );
      await at.broker.offsets.deleteGroup("g");
      expect(at.broker.offsets.storedGroups().has("g")).toBe(false);
      // Committed again without members after its delete: a new group of manual assignment.
      await at.broker.offsets.commit("g", [
        { topic: "t", partition: 0, offset: 6, leaderEpoch: -1, metadata: null },
      ]);
      expect(at.groups.emptiedProtocolType("g")).toBe("");
      at = await restart(dir.path, at);
      expect((await at.groups.join(join())).generationId).toBe(1);
    } finally {
      at.groups.close();
      await at.broker.close();
    }
  });
});
