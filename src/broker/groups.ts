/**
 * The classic (eager) consumer-group coordinator, protocol-neutral: the Kafka listener's JoinGroup,
 * SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups and DescribeGroups call it
 * and map its error names to Kafka's codes. The state machine is kafka-wire.md §4 (Kafka's
 * GroupCoordinator, as franz-go's kfake models it):
 *
 *   Empty ──join──▶ PreparingRebalance ──every member joined (or rebalance timeout)──▶
 *   CompletingRebalance ──leader's SyncGroup──▶ Stable ──join of a new member, of the leader, or with
 *   changed protocols; a leave; a session expiry──▶ PreparingRebalance
 *
 * Owns: groups with members, generations, leader election, protocol selection, the session timer of
 * each member and the rebalance timer of each group. Committed offsets are the broker's
 * OffsetsStore (durable); this module only checks who may commit.
 *
 * Membership survives a restart, as Kafka's does (its GroupMetadataValue records in
 * __consumer_offsets, reloaded by GroupMetadataManager.onLoaded): with a GroupStore, each completed
 * rebalance is stored (generation, protocol, leader, members with their protocols and assignments)
 * before the SyncGroup answers go out, a static member's replacement without a rebalance before its
 * JoinGroup answer, and a group that empties with its generation. At start the stored groups come
 * back Stable, with every member's session timer started afresh: members that reconnect within
 * their session carry on with the same member id and generation, without a rebalance; those that do
 * not are removed when their session ends. A store that fails is logged and does not stop the group
 * (the previous record stays; after a restart it names an older generation, and members that are
 * past it get ILLEGAL_GENERATION and rejoin, or, for a static member replaced since, FENCED_INSTANCE_ID
 * until the old incarnation's session ends: Kafka reverts a replacement whose store failed).
 * A rebalance under way at a stop is not stored (as in Kafka): its new dynamic members get
 * UNKNOWN_MEMBER_ID after the restart and rejoin, and a static member replaced during it is fenced
 * the same way.
 *
 * Rules:
 * - A JoinGroup is parked until every known member has rejoined and every id handed out with
 *   MEMBER_ID_REQUIRED has joined or expired (or the group's rebalance timeout, the largest of its
 *   members', passed: dynamic members that did not rejoin are removed, static ones stay). The first
 *   rebalance of a group with no members also waits out the initial delay, if one is set (Kafka's
 *   group.initial.rebalance.delay.ms), again and again while new members arrive, up to the
 *   rebalance timeout. Follower
 *   SyncGroups are parked until the leader's arrives. Every parked request is answered: by the
 *   rebalance, by a newer request of the same member (REBALANCE_IN_PROGRESS for the old one), by the
 *   member's removal (UNKNOWN_MEMBER_ID), by its replacement (FENCED_INSTANCE_ID), or at `close`
 *   (COORDINATOR_NOT_AVAILABLE).
 * - Once a rebalance completes, every member owes a SyncGroup within the group's rebalance timeout;
 *   the members that have not sent one by then are removed and the group rebalances (Kafka's
 *   pending-sync expiry), so a member that heartbeats but never syncs cannot hold the group.
 * - A LeaveGroup, of a member or of an id handed out with MEMBER_ID_REQUIRED, rebalances a Stable
 *   or CompletingRebalance group and lets a waiting rebalance complete without it (Kafka's).
 * - A member's session timer runs while it is not parked in JoinGroup; every JoinGroup, SyncGroup,
 *   Heartbeat and OffsetCommit of it restarts the timer. On expiry the member is removed and the
 *   group rebalances, unless it is waiting in JoinGroup or SyncGroup (then the timer starts again).
 * - A JoinGroup's protocols must share one with every member, its own current ones and those of the
 *   member it replaces included (INCONSISTENT_GROUP_PROTOCOL otherwise).
 * - From JoinGroup v4 on, a member without an id gets MEMBER_ID_REQUIRED with its new id and must
 *   join again with it (KIP-394); the id is remembered for one session timeout. A static member
 *   (below) joins in one step, as in Kafka.
 * - Static membership (KIP-345, JoinGroup v5+): a member that names a group instance id keeps its
 *   place across restarts. Joining again without a member id under an instance id the group knows
 *   replaces the previous member of that instance: its parked requests are answered
 *   FENCED_INSTANCE_ID, its id stops being a member's, and the new id inherits its assignment. In a
 *   Stable group whose chosen protocol does not change, there is no rebalance: the member gets
 *   the current generation and the previous leader id (so that it does not act as leader), and its
 *   SyncGroup returns the inherited assignment. Any request that names the instance with another
 *   member id than the current one is FENCED_INSTANCE_ID. A static member leaves by its session
 *   timeout or by LeaveGroup (by member id, or by instance id alone), never by closing a connection.
 *   A request that names an instance the group does not know is UNKNOWN_MEMBER_ID. The client id
 *   and host stay those of the first incarnation. The rules and their order are those of Kafka's
 *   classic GroupCoordinator (GroupMetadataManager and ClassicGroup in Kafka 4.x), checked against
 *   its source; where booblik differs, docs/kafka.md says so.
 * - A follower that rejoins a Stable group with unchanged metadata gets the current generation back
 *   without a rebalance (in CompletingRebalance, the leader too, with the members); the leader
 *   rejoining a Stable group, or anyone with changed metadata, starts one (Kafka's rules).
 * - An Empty group is forgotten (its committed offsets stay in the OffsetsStore). While it has
 *   commits its generation count is kept (in memory and in its stored record) for its next member;
 *   otherwise generations start again from 0, which is safe because member ids are never reused.
 */
import { randomUUID } from "node:crypto";
import {
  GROUP_MEMBERS_MAX,
  GROUP_PENDING_MEMBERS_MAX,
  GROUP_PENDING_SCAN_MAX,
  GROUP_REBALANCE_TIMEOUT_MS_MAX,
  GROUP_SESSION_TIMEOUT_MS_MAX,
  GROUP_SESSION_TIMEOUT_MS_MIN,
  GROUPS_HELD_BYTES_MAX,
  GROUPS_MAX,
  MEMBER_ID_PREFIX_CHARS_MAX,
} from "../domain/limits.ts";
import { groupIdProblem } from "./offsets-store.ts";

export type GroupState = "Empty" | "PreparingRebalance" | "CompletingRebalance" | "Stable" | "Dead";

/** Outcomes with Kafka's names (the Kafka listener maps them to codes, src/kafka/apis.ts). */
export type GroupError =
  | "NONE"
  | "COORDINATOR_NOT_AVAILABLE"
  | "ILLEGAL_GENERATION"
  | "INCONSISTENT_GROUP_PROTOCOL"
  | "INVALID_GROUP_ID"
  | "UNKNOWN_MEMBER_ID"
  | "INVALID_SESSION_TIMEOUT"
  | "REBALANCE_IN_PROGRESS"
  | "GROUP_MAX_SIZE_REACHED"
  | "MEMBER_ID_REQUIRED"
  | "FENCED_INSTANCE_ID";

export interface GroupProtocol {
  name: string;
  metadata: Uint8Array;
}

/** The bytes of a member's protocol metadata (names are at most a STRING each; counted too). */
function protocolBytes(protocols: readonly GroupProtocol[]): number {
  let bytes = 0;
  for (const protocol of protocols) bytes += protocol.name.length + protocol.metadata.length;
  return bytes;
}

function memberBytes(protocols: readonly GroupProtocol[], assignment: Uint8Array): number {
  return protocolBytes(protocols) + assignment.length;
}

/** Java's String.hashCode (UTF-16 code units, int32 arithmetic). */
function javaStringHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  return hash;
}

/**
 * The order a java.util.HashMap (default capacity 16, load factor 0.75) iterates `keys` put in this
 * order: by bucket (the spread hash masked to the table size the map has grown to; a resize keeps
 * each bucket's order), then by insertion within a bucket.
 */
function javaHashMapOrder(keys: readonly string[]): string[] {
  let capacity = 16;
  while (keys.length > capacity * 0.75) capacity *= 2;
  const bucketOf = (key: string) => {
    const hash = javaStringHash(key);
    return (hash ^ (hash >>> 16)) & (capacity - 1);
  };
  return keys
    .map((key, inserted) => ({ key, inserted, bucket: bucketOf(key) }))
    .sort((a, b) => a.bucket - b.bucket || a.inserted - b.inserted)
    .map((entry) => entry.key);
}

/** A new member id: its client's (or instance's) id, at most MEMBER_ID_PREFIX_CHARS_MAX of it, and a UUID. */
function newMemberId(prefix: string): string {
  return `${prefix.slice(0, MEMBER_ID_PREFIX_CHARS_MAX)}-${randomUUID()}`;
}

/**
 * A copy of a JoinGroup's protocols that the group can keep: the request's metadata are views into
 * the connection's inbound buffer (kafka/group-messages.ts), which its next request overwrites. Kept
 * as views, the member's SyncGroup alone turned them into pieces of other requests (a reviewer's
 * run, 2026-12-02): DescribeGroups answered garbage, a rejoin with unchanged metadata rebalanced
 * the group, and OffsetDelete's subscription check read the wrong topics.
 */
function ownedProtocols(protocols: readonly GroupProtocol[]): GroupProtocol[] {
  return protocols.map((p) => ({ name: p.name, metadata: p.metadata.slice() }));
}

export interface JoinRequest {
  groupId: string;
  /** "" for a member joining for the first time. */
  memberId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: readonly GroupProtocol[];
  clientId: string;
  clientHost: string;
  /** JoinGroup v4+: a member without an id gets MEMBER_ID_REQUIRED first (KIP-394). */
  requireKnownMemberId: boolean;
  /** JoinGroup v5+: the static member's group instance id (KIP-345); null for a dynamic member. */
  groupInstanceId: string | null;
  /**
   * JoinGroup v9+ (KIP-814): a static leader that rejoins a Stable group is told it leads, with the
   * members, and to skip the assignment; before v9 it is answered the previous leader id instead, so
   * that it does not assign (Kafka's GroupCoordinator, both branches).
   */
  supportSkippingAssignment?: boolean;
}

/** One member a LeaveGroup names: by member id, or (v3+, member id "") by group instance id alone. */
export interface LeavingMember {
  memberId: string;
  groupInstanceId: string | null;
}

export interface JoinResult {
  error: GroupError;
  generationId: number;
  protocolName: string;
  /** The group's protocol type (JoinGroup v7+ answers it); "" with an error. */
  protocolType: string;
  leaderId: string;
  /** JoinGroup v9+: the leader is to skip the assignment (see JoinRequest.supportSkippingAssignment). */
  skipAssignment: boolean;
  memberId: string;
  /**
   * Only the leader gets the members, with their group instance ids (null for dynamic ones) and
   * their metadata for the chosen protocol.
   */
  members: { memberId: string; groupInstanceId: string | null; metadata: Uint8Array }[];
}

export interface SyncResult {
  error: GroupError;
  assignment: Uint8Array;
}

export interface GroupSummary {
  groupId: string;
  protocolType: string;
  state: GroupState;
}

export interface GroupDescription extends GroupSummary {
  /** The chosen protocol (assignor) name, "" before the first rebalance completes. */
  protocol: string;
  /** One more per completed rebalance; 0 until the first completes. */
  generationId: number;
  members: {
    memberId: string;
    /** The static member's group instance id; null for a dynamic member. */
    groupInstanceId: string | null;
    clientId: string;
    clientHost: string;
    metadata: Uint8Array;
    assignment: Uint8Array;
  }[];
}

/** One member as stored (Kafka's GroupMetadataValue.MemberMetadata). */
export interface StoredMember {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocols: GroupProtocol[];
  assignment: Uint8Array;
}

/** A group as stored after a completed rebalance (members) or once it emptied (no members). */
export interface StoredGroup {
  protocolType: string;
  /** The chosen protocol; "" for a group without members. */
  protocol: string;
  generationId: number;
  leaderId: string;
  members: StoredMember[];
}

/** Where groups are kept across restarts (the broker's OffsetsStore). */
export interface GroupStore {
  /** The groups stored before this start, by group id. */
  storedGroups(): ReadonlyMap<string, StoredGroup>;
  /** Stores a group's record (null: deletes the record, if there is one); resolves once forced. */
  storeGroup(groupId: string, group: StoredGroup | null): Promise<void>;
  /** Whether a record of the group is stored or being stored (DeleteGroups deletes it). */
  hasGroupRecord?(groupId: string): boolean;
}

export interface CoordinatorOptions {
  /** Kafka's group.min/max.session.timeout.ms; tests lower the minimum. */
  sessionTimeoutMsMin?: number;
  sessionTimeoutMsMax?: number;
  /**
   * Kafka's group.initial.rebalance.delay.ms: how long the first rebalance of a group with no
   * members waits for more members, extended by as much while new ones keep arriving, up to the
   * rebalance timeout. 0 (the default, as in Kafka's shipped server.properties) completes it as soon
   * as every member has joined.
   */
  initialRebalanceDelayMs?: number;
  /**
   * Whether the group has committed offsets. A group that empties is forgotten; one with commits
   * keeps its generation count for its next member, as Kafka keeps such a group (state Empty) and
   * its generation. Without it, every group starts again at generation 1.
   */
  hasCommittedOffsets?: (groupId: string) => boolean;
  /** Keeps groups across restarts; without one they live in memory only (unit tests). */
  store?: GroupStore;
  /** The bound of `heldBytes` (GROUPS_HELD_BYTES_MAX; tests lower it). */
  heldBytesMax?: number;
}

const EMPTY = new Uint8Array(0);

interface Member {
  /** Changes once per replacement of a static member (the instance's new incarnation). */
  id: string;
  /** Static membership: the group instance id, or null. */
  readonly instanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: readonly GroupProtocol[];
  assignment: Uint8Array;
  parkedJoin: ((result: JoinResult) => void) | undefined;
  parkedSync: ((result: SyncResult) => void) | undefined;
  sessionTimer: ReturnType<typeof setTimeout> | undefined;
}

class Group {
  readonly id: string;
  state: GroupState = "Empty";
  generationId = 0;
  protocolType = "";
  protocol = "";
  leaderId = "";
  readonly members = new Map<string, Member>();
  /** Ids handed out with MEMBER_ID_REQUIRED, until they join or their timer ends. */
  readonly pendingMemberIds = new Map<string, ReturnType<typeof setTimeout>>();
  /** Group instance id → the member id of its current incarnation. */
  readonly staticMembers = new Map<string, string>();
  rebalanceTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Members of the current generation that have not sent their SyncGroup yet (Kafka's
   * pendingSyncMembers); the sync timer removes them when the rebalance timeout passes first.
   */
  readonly pendingSync = new Set<string>();
  syncTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * The group's first rebalance (from Empty) is waiting out the initial delay: only the delay's
   * timer completes it, not the last member's join.
   */
  initialDelay = false;
  /** A new member joined during the current window of the initial delay. */
  newMemberAdded = false;
  /** The generation whose assignment is being stored (the leader's SyncGroup waits on it); −1: none. */
  storingGeneration = -1;

  constructor(id: string) {
    this.id = id;
  }
}

function sameProtocols(a: readonly GroupProtocol[], b: readonly GroupProtocol[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.name !== y.name || x.metadata.length !== y.metadata.length) return false;
    for (let j = 0; j < x.metadata.length; j++) if (x.metadata[j] !== y.metadata[j]) return false;
  }
  return true;
}

function failedJoin(error: GroupError, memberId: string): JoinResult {
  return {
    error,
    generationId: -1,
    protocolName: "",
    protocolType: "",
    leaderId: "",
    skipAssignment: false,
    memberId,
    members: [],
  };
}

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();
  private readonly sessionTimeoutMsMin: number;
  private readonly sessionTimeoutMsMax: number;
  private readonly initialRebalanceDelayMs: number;
  private readonly hasCommittedOffsets: (groupId: string) => boolean;
  /**
   * The generation and protocol type of each forgotten group that had committed offsets
   * (forgetIfEmpty): the generation for its next member; the protocol type for ListGroups and
   * DescribeGroups, where Kafka's Empty group keeps it ("consumer": the Java admin client's
   * `isSimpleConsumerGroup()` is false; "" would make every idle consumer group look like one of
   * manual assignment, a helper's differential run, 2026-12-03). At most GROUPS_MAX, the oldest
   * dropped first (that group then starts at 1 again, and shows protocol type "").
   */
  private readonly emptiedGenerations = new Map<string, { generationId: number; protocolType: string }>();
  private readonly store: GroupStore | undefined;
  /** Groups restored from the store at construction (for the start line and tests). */
  readonly restoredGroups: number;
  private closed = false;
  /**
   * Bytes of every member's protocol metadata and assignment, all groups together: what members
   * make the coordinator hold, bounded by GROUPS_HELD_BYTES_MAX (see `join` and `sync`).
   */
  heldBytes = 0;
  private readonly heldBytesMax: number;
  /**
   * Every pending member id (KIP-394: told its id, not joined yet), oldest first, with its group:
   * at most GROUP_PENDING_MEMBERS_MAX, the oldest dropped first (`addPending`).
   */
  private readonly pendingIds = new Map<string, Group>();

  constructor(options: CoordinatorOptions = {}) {
    this.sessionTimeoutMsMin = options.sessionTimeoutMsMin ?? GROUP_SESSION_TIMEOUT_MS_MIN;
    this.sessionTimeoutMsMax = options.sessionTimeoutMsMax ?? GROUP_SESSION_TIMEOUT_MS_MAX;
    this.initialRebalanceDelayMs = options.initialRebalanceDelayMs ?? 0;
    this.hasCommittedOffsets = options.hasCommittedOffsets ?? (() => false);
    this.store = options.store;
    this.heldBytesMax = options.heldBytesMax ?? GROUPS_HELD_BYTES_MAX;
    this.restoredGroups = this.store === undefined ? 0 : this.restore(this.store.storedGroups());
  }

  /**
   * Rebuilds the stored groups: one with members comes back Stable in its stored generation, each
   * member's session timer started now (Kafka's onLoaded reschedules every member's heartbeat); one
   * without members keeps its generation count for its next member. At most GROUPS_MAX groups with
   * members come back; members of the others rejoin (UNKNOWN_MEMBER_ID).
   */
  private restore(stored: ReadonlyMap<string, StoredGroup>): number {
    let restored = 0;
    for (const [groupId, record] of stored) {
      if (record.members.length === 0) {
        if (record.generationId > 0 && this.emptiedGenerations.size < GROUPS_MAX)
          this.emptiedGenerations.set(groupId, {
            generationId: record.generationId,
            protocolType: record.protocolType,
          });
        continue;
      }
      if (this.groups.size >= GROUPS_MAX) continue;
      const group = new Group(groupId);
      group.state = "Stable";
      group.generationId = record.generationId;
      group.protocolType = record.protocolType;
      group.protocol = record.protocol;
      for (const stored of record.members) {
        const member: Member = {
          id: stored.memberId,
          instanceId: stored.groupInstanceId,
          clientId: stored.clientId,
          clientHost: stored.clientHost,
          sessionTimeoutMs: stored.sessionTimeoutMs,
          rebalanceTimeoutMs: stored.rebalanceTimeoutMs,
          protocolType: record.protocolType,
          protocols: stored.protocols,
          assignment: stored.assignment,
          parkedJoin: undefined,
          parkedSync: undefined,
          sessionTimer: undefined,
        };
        group.members.set(member.id, member);
        this.heldBytes += memberBytes(member.protocols, member.assignment);
        if (member.instanceId !== null) group.staticMembers.set(member.instanceId, member.id);
      }
      group.leaderId = group.members.has(record.leaderId)
        ? record.leaderId
        : group.members.keys().next().value!;
      for (const member of group.members.values()) this.restartSession(group, member);
      this.groups.set(groupId, group);
      restored++;
    }
    return restored;
  }

  /** The record of a group with members, with `assignments` (member id → bytes) where given. */
  private storedOf(group: Group, assignments?: ReadonlyMap<string, Uint8Array>): StoredGroup {
    return {
      protocolType: group.protocolType,
      protocol: group.protocol,
      generationId: group.generationId,
      leaderId: group.leaderId,
      members: [...group.members.values()].map((m) => ({
        memberId: m.id,
        groupInstanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        sessionTimeoutMs: m.sessionTimeoutMs,
        rebalanceTimeoutMs: m.rebalanceTimeoutMs,
        protocols: [...m.protocols],
        assignment: assignments === undefined ? m.assignment : (assignments.get(m.id) ?? EMPTY),
      })),
    };
  }

  /** Stores a group's record; a failure is logged, not thrown (see the header). */
  private persist(groupId: string, record: StoredGroup | null): Promise<void> {
    if (this.store === undefined) return Promise.resolve();
    return this.store.storeGroup(groupId, record).catch((error: unknown) => {
      if (this.closed) return;
      console.error(
        `booblik: storing group ${JSON.stringify(groupId)} failed (its members carry on; after a restart they may rejoin): ${(error as Error).message}`,
      );
    });
  }

  // --- JoinGroup ---------------------------------------------------------------------------------

  join(request: JoinRequest): Promise<JoinResult> {
    if (this.closed) return Promise.resolve(failedJoin("COORDINATOR_NOT_AVAILABLE", request.memberId));
    if (groupIdProblem(request.groupId) !== undefined)
      return Promise.resolve(failedJoin("INVALID_GROUP_ID", request.memberId));
    if (
      request.sessionTimeoutMs < this.sessionTimeoutMsMin ||
      request.sessionTimeoutMs > this.sessionTimeoutMsMax ||
      request.rebalanceTimeoutMs < 0 ||
      request.rebalanceTimeoutMs > GROUP_REBALANCE_TIMEOUT_MS_MAX
    )
      return Promise.resolve(failedJoin("INVALID_SESSION_TIMEOUT", request.memberId));
    if (request.protocols.length === 0 || request.protocolType === "")
      return Promise.resolve(failedJoin("INCONSISTENT_GROUP_PROTOCOL", request.memberId));
    let group = this.groups.get(request.groupId);
    if (group === undefined) {
      if (request.memberId !== "") return Promise.resolve(failedJoin("UNKNOWN_MEMBER_ID", request.memberId));
      if (this.groups.size >= GROUPS_MAX && !this.dropPendingOnlyGroup())
        return Promise.resolve(failedJoin("COORDINATOR_NOT_AVAILABLE", request.memberId));
      group = new Group(request.groupId);
      // Kafka keeps a group with commits, Empty, and counts its generations on: a consumer group
      // that empties and comes back continues at the next generation there (its commits deleted
      // meanwhile, it starts afresh).
      const emptied = this.emptiedGenerations.get(group.id);
      if (emptied !== undefined) {
        this.emptiedGenerations.delete(group.id);
        if (this.hasCommittedOffsets(group.id)) group.generationId = emptied.generationId;
      }
      this.groups.set(group.id, group);
    }
    const instanceId = request.groupInstanceId;
    const current = instanceId === null ? undefined : group.staticMembers.get(instanceId);
    // A new incarnation replaces the current member of its instance.
    const replaced = request.memberId === "" ? current : undefined;
    if (!this.protocolsFit(group, request)) {
      this.forgetIfEmpty(group);
      return Promise.resolve(failedJoin("INCONSISTENT_GROUP_PROTOCOL", request.memberId));
    }
    // Members' metadata and assignments, all groups together, stay within GROUPS_HELD_BYTES_MAX: 30
    // members of 15 MiB of metadata each took a broker from 67 MiB to 1.4 GiB of RSS, and nothing
    // but the member and group counts bounded it (a security helper's run, 2026-12-03).
    const before = group.members.get(replaced ?? request.memberId);
    const growth =
      protocolBytes(request.protocols) - (before === undefined ? 0 : protocolBytes(before.protocols));
    if (growth > 0 && this.heldBytes + growth > this.heldBytesMax) {
      this.forgetIfEmpty(group);
      return Promise.resolve(failedJoin("GROUP_MAX_SIZE_REACHED", request.memberId));
    }
    if (replaced !== undefined) return this.replaceStaticMember(group, group.members.get(replaced)!, request);
    if (current !== undefined && current !== request.memberId)
      return Promise.resolve(failedJoin("FENCED_INSTANCE_ID", request.memberId));
    if (request.memberId === "") return this.joinNew(group, request);
    if (group.pendingMemberIds.has(request.memberId)) {
      this.dropPending(group, request.memberId);
      return this.addMemberAndRebalance(group, request, request.memberId);
    }
    const member = group.members.get(request.memberId);
    if (member === undefined) return Promise.resolve(failedJoin("UNKNOWN_MEMBER_ID", request.memberId));
    return this.rejoin(group, member, request);
  }

  /**
   * A member's protocol type and at least one of its protocols fit every current member, the
   * joining member's own current protocols and those of the member a static one replaces included
   * (Kafka's ClassicGroup.supportsProtocols): a member that switches to protocols nobody has yet
   * is refused until the group's members have them.
   */
  private protocolsFit(group: Group, request: JoinRequest): boolean {
    if (group.members.size === 0) return true;
    if (request.protocolType !== group.protocolType) return false;
    const members = [...group.members.values()];
    return request.protocols.some((p) => members.every((m) => m.protocols.some((q) => q.name === p.name)));
  }

  private joinNew(group: Group, request: JoinRequest): Promise<JoinResult> {
    if (group.members.size + group.pendingMemberIds.size >= GROUP_MEMBERS_MAX)
      return Promise.resolve(failedJoin("GROUP_MAX_SIZE_REACHED", ""));
    // Kafka names a static member's ids after its instance, a dynamic one's after its client.
    const memberId = newMemberId(request.groupInstanceId ?? request.clientId);
    if (request.requireKnownMemberId && request.groupInstanceId === null) {
      // KIP-394: the member learns its id first, so a client that retries a lost JoinGroup does not
      // leave a ghost member behind. The id is good for one session timeout.
      this.addPending(group, memberId, request.sessionTimeoutMs);
      return Promise.resolve(failedJoin("MEMBER_ID_REQUIRED", memberId));
    }
    return this.addMemberAndRebalance(group, request, memberId);
  }

  private addMemberAndRebalance(group: Group, request: JoinRequest, memberId: string): Promise<JoinResult> {
    const member: Member = {
      id: memberId,
      instanceId: request.groupInstanceId,
      clientId: request.clientId,
      clientHost: request.clientHost,
      sessionTimeoutMs: request.sessionTimeoutMs,
      rebalanceTimeoutMs: request.rebalanceTimeoutMs,
      protocolType: request.protocolType,
      protocols: ownedProtocols(request.protocols),
      assignment: EMPTY,
      parkedJoin: undefined,
      parkedSync: undefined,
      sessionTimer: undefined,
    };
    if (group.members.size === 0) group.protocolType = request.protocolType;
    group.members.set(memberId, member);
    this.heldBytes += memberBytes(member.protocols, EMPTY);
    if (member.instanceId !== null) group.staticMembers.set(member.instanceId, memberId);
    if (group.leaderId === "") group.leaderId = memberId;
    if (group.initialDelay) group.newMemberAdded = true;
    const parked = this.park(member);
    this.prepareRebalance(group);
    this.tryCompleteJoin(group);
    return parked;
  }

  private rejoin(group: Group, member: Member, request: JoinRequest): Promise<JoinResult> {
    const changed = !sameProtocols(member.protocols, request.protocols);
    this.setProtocols(member, request.protocols);
    member.sessionTimeoutMs = request.sessionTimeoutMs;
    member.rebalanceTimeoutMs = request.rebalanceTimeoutMs;
    switch (group.state) {
      case "PreparingRebalance": {
        const parked = this.park(member);
        this.tryCompleteJoin(group);
        return parked;
      }
      case "CompletingRebalance":
      case "Stable":
        // Kafka's rules: changed metadata rebalances; so does the leader rejoining a Stable group
        // (how a leader asks for a new assignment when topics change, which its metadata does not
        // show). Otherwise the member missed an answer or rejoins for nothing: it gets the
        // current generation back (the leader in CompletingRebalance with the members, to assign).
        if (changed || (group.state === "Stable" && member.id === group.leaderId)) {
          const parked = this.park(member);
          this.prepareRebalance(group);
          this.tryCompleteJoin(group);
          return parked;
        }
        this.restartSession(group, member);
        return Promise.resolve(this.joinResultFor(group, member));
      default:
        return Promise.resolve(failedJoin("UNKNOWN_MEMBER_ID", member.id));
    }
  }

  /**
   * A static member's new incarnation (a JoinGroup without member id under an instance id the group
   * knows) takes the place of `member`: see the header. Kafka's
   * GroupCoordinator.updateStaticMemberAndRebalance.
   */
  private replaceStaticMember(group: Group, member: Member, request: JoinRequest): Promise<JoinResult> {
    const oldId = member.id;
    // Only static members are replaced, so the instance id is there; the client id only satisfies the type.
    const newId = newMemberId(member.instanceId ?? request.clientId);
    const leaderBefore = group.leaderId;
    const join = member.parkedJoin;
    member.parkedJoin = undefined;
    join?.(failedJoin("FENCED_INSTANCE_ID", oldId));
    const sync = member.parkedSync;
    member.parkedSync = undefined;
    sync?.({ error: "FENCED_INSTANCE_ID", assignment: EMPTY });
    group.members.delete(oldId);
    // The new incarnation owes the SyncGroup the old one owed (Kafka's replaceStaticMember).
    if (group.pendingSync.delete(oldId)) group.pendingSync.add(newId);
    member.id = newId;
    group.members.set(newId, member);
    group.staticMembers.set(member.instanceId!, newId);
    if (group.leaderId === oldId) group.leaderId = newId;
    // The client id and host stay the first incarnation's, as Kafka's replaceStaticMember keeps them.
    this.setProtocols(member, request.protocols);
    member.sessionTimeoutMs = request.sessionTimeoutMs;
    member.rebalanceTimeoutMs = request.rebalanceTimeoutMs;
    if (group.state === "Stable" && this.selectProtocol(group) === group.protocol) {
      // No rebalance. Before JoinGroup v9 the previous leader id is answered even when this member
      // was the leader, so that it does not compute an assignment a Stable group would never hand
      // out; from v9 the leader is told it leads, with the members, and to skip the assignment
      // (KIP-814: it keeps watching the metadata), as Kafka's GroupCoordinator answers both.
      this.restartSession(group, member);
      const leads = request.supportSkippingAssignment === true && group.leaderId === newId;
      const answer: JoinResult = {
        ...this.joinResultFor(group, member),
        leaderId: request.supportSkippingAssignment === true ? group.leaderId : leaderBefore,
        skipAssignment: leads,
      };
      if (!leads) answer.members = [];
      // Stored before the answer, as Kafka does: after a restart the instance's member must be
      // this id, or the new incarnation would be fenced (FENCED_INSTANCE_ID) by the old one's.
      return this.persist(group.id, this.storedOf(group)).then(() => answer);
    }
    // Stable with another protocol to choose, or CompletingRebalance (the leader may be assigning
    // to the old id): a rebalance. PreparingRebalance: the new incarnation waits in its place.
    const parked = this.park(member);
    this.prepareRebalance(group);
    this.tryCompleteJoin(group);
    return parked;
  }

  /** Parks a member's JoinGroup (answering an older one of it); its session timer stops meanwhile. */
  private park(member: Member): Promise<JoinResult> {
    member.parkedJoin?.(failedJoin("REBALANCE_IN_PROGRESS", member.id));
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = undefined;
    return new Promise((resolve) => {
      member.parkedJoin = resolve;
    });
  }

  /** The group's rebalance timeout: the largest of its members'. */
  private rebalanceTimeoutMs(group: Group): number {
    let timeoutMs = 0;
    for (const member of group.members.values()) timeoutMs = Math.max(timeoutMs, member.rebalanceTimeoutMs);
    return timeoutMs;
  }

  /** (Re)starts the group's rebalance timer. */
  private armRebalanceTimer(group: Group): void {
    if (group.rebalanceTimer !== undefined) clearTimeout(group.rebalanceTimer);
    group.rebalanceTimer = setTimeout(() => {
      group.rebalanceTimer = undefined;
      if (group.state === "PreparingRebalance") this.completeJoin(group);
    }, this.rebalanceTimeoutMs(group));
    group.rebalanceTimer.unref();
  }

  /**
   * A new generation: every member owes a SyncGroup within the rebalance timeout. A member that
   * keeps heartbeating without syncing (a leader whose assignor never returns, a follower that
   * never asks for its assignment) would otherwise hold the group in CompletingRebalance, or hold
   * its partitions unassigned in Stable, for as long as it lives. When the timeout passes, the
   * members that did not sync are removed and the group rebalances without them (Kafka's
   * expirePendingSync, GroupMetadataManager in Kafka 4.x).
   */
  private awaitSyncs(group: Group): void {
    this.stopAwaitingSyncs(group);
    for (const id of group.members.keys()) group.pendingSync.add(id);
    const generationId = group.generationId;
    group.syncTimer = setTimeout(() => {
      group.syncTimer = undefined;
      if (group.generationId !== generationId) return;
      if (group.state !== "CompletingRebalance" && group.state !== "Stable") return;
      // Every id in pendingSync is a member's (dropMember and replaceStaticMember keep it so); the
      // filter only keeps a broken invariant from throwing inside a timer, which would end the broker.
      const silent = [...group.pendingSync]
        .map((id) => group.members.get(id))
        .filter((member): member is Member => member !== undefined);
      group.pendingSync.clear();
      if (silent.length === 0) return;
      for (const member of silent) this.dropMember(group, member);
      this.rebalanceAfterRemoval(group);
    }, this.rebalanceTimeoutMs(group));
    group.syncTimer.unref();
  }

  private stopAwaitingSyncs(group: Group): void {
    group.pendingSync.clear();
    if (group.syncTimer !== undefined) clearTimeout(group.syncTimer);
    group.syncTimer = undefined;
  }

  /** A member's SyncGroup of the current generation arrived. */
  private syncReceived(group: Group, memberId: string): void {
    group.pendingSync.delete(memberId);
    if (group.pendingSync.size === 0) this.stopAwaitingSyncs(group);
  }

  private prepareRebalance(group: Group): void {
    if (group.state === "CompletingRebalance") {
      // Assignments of the generation that did not complete: parked followers must rejoin.
      for (const member of group.members.values()) {
        this.setAssignment(member, EMPTY);
        const sync = member.parkedSync;
        member.parkedSync = undefined;
        sync?.({ error: "REBALANCE_IN_PROGRESS", assignment: EMPTY });
      }
    }
    // From Stable the members keep their assignments until the next SyncGroup replaces them:
    // DescribeGroups shows them during the rebalance, as Kafka 4.1.1 does. Its coordinator clears
    // them only when a rebalance interrupts CompletingRebalance, as above (GroupMetadataManager
    // .prepareRebalance); a helper's differential run of 2026-12-03 saw Kafka show each member's
    // previous assignment where booblik showed none.
    this.stopAwaitingSyncs(group);
    if (group.state === "Empty" && this.initialRebalanceDelayMs > 0) {
      group.state = "PreparingRebalance";
      group.initialDelay = true;
      group.newMemberAdded = false;
      this.armInitialDelay(
        group,
        this.initialRebalanceDelayMs,
        Math.max(this.rebalanceTimeoutMs(group) - this.initialRebalanceDelayMs, 0),
      );
      return;
    }
    if (group.state !== "PreparingRebalance") {
      group.state = "PreparingRebalance";
      this.armRebalanceTimer(group);
    }
  }

  /**
   * The first rebalance of a group with no members waits `delayMs` for more members (Kafka's
   * InitialDelayedJoin, GroupMetadataManager.tryCompleteInitialRebalanceElseSchedule): members that
   * start together then share one rebalance instead of one each. While new members keep arriving
   * it waits another delay, until `remainingMs` of the rebalance timeout is used up.
   */
  private armInitialDelay(group: Group, delayMs: number, remainingMs: number): void {
    if (group.rebalanceTimer !== undefined) clearTimeout(group.rebalanceTimer);
    group.rebalanceTimer = setTimeout(() => {
      group.rebalanceTimer = undefined;
      if (group.state !== "PreparingRebalance" || !group.initialDelay) return;
      if (group.newMemberAdded && remainingMs > 0) {
        group.newMemberAdded = false;
        this.armInitialDelay(
          group,
          Math.min(this.initialRebalanceDelayMs, remainingMs),
          Math.max(remainingMs - delayMs, 0),
        );
        return;
      }
      this.completeJoin(group);
    }, delayMs);
    group.rebalanceTimer.unref();
  }

  /**
   * Completes the rebalance once every member has rejoined and no id handed out with
   * MEMBER_ID_REQUIRED is still to join with it (Kafka's hasAllMembersJoined: members starting
   * together then share one rebalance).
   */
  private tryCompleteJoin(group: Group): void {
    if (group.state !== "PreparingRebalance" || group.pendingMemberIds.size > 0 || group.initialDelay) return;
    for (const member of group.members.values()) if (member.parkedJoin === undefined) return;
    this.completeJoin(group);
  }

  /**
   * Ends a rebalance (everyone rejoined, or the rebalance timeout passed): dynamic members that did
   * not rejoin are removed; static ones keep their place in the new generation (KIP-345: a static
   * member that restarts slowly comes back to its assignment) until their session ends. A leader
   * that did not rejoin hands the lead to a member that did. If only static members are left and
   * none rejoined, the rebalance waits another timeout, as Kafka's does.
   */
  private completeJoin(group: Group): void {
    if (group.rebalanceTimer !== undefined) clearTimeout(group.rebalanceTimer);
    group.rebalanceTimer = undefined;
    group.initialDelay = false;
    group.newMemberAdded = false;
    for (const member of [...group.members.values()])
      if (member.parkedJoin === undefined && member.instanceId === null) this.dropMember(group, member);
    if (group.members.size === 0) {
      group.generationId++;
      group.state = "Empty";
      group.protocol = "";
      group.leaderId = "";
      this.storeEmptied(group);
      this.forgetIfEmpty(group);
      return;
    }
    if (group.members.get(group.leaderId)?.parkedJoin === undefined) {
      let joined: Member | undefined;
      for (const member of group.members.values()) {
        if (member.parkedJoin !== undefined) {
          joined = member;
          break;
        }
      }
      if (joined === undefined) {
        this.armRebalanceTimer(group);
        return;
      }
      group.leaderId = joined.id;
    }
    group.generationId++;
    group.protocol = this.selectProtocol(group);
    group.state = "CompletingRebalance";
    this.awaitSyncs(group);
    for (const member of group.members.values()) {
      const join = member.parkedJoin;
      member.parkedJoin = undefined;
      this.restartSession(group, member);
      join?.(this.joinResultFor(group, member));
    }
  }

  /** The protocol type and chosen protocol of a group with members (SyncGroup v5+ answers them). */
  protocolsOf(groupId: string): { protocolType: string; protocolName: string } | undefined {
    const group = this.groups.get(groupId);
    if (group === undefined || group.members.size === 0) return undefined;
    return { protocolType: group.protocolType, protocolName: group.protocol };
  }

  private joinResultFor(group: Group, member: Member): JoinResult {
    const members =
      member.id === group.leaderId
        ? [...group.members.values()].map((m) => ({
            memberId: m.id,
            groupInstanceId: m.instanceId,
            metadata: m.protocols.find((p) => p.name === group.protocol)?.metadata ?? EMPTY,
          }))
        : [];
    return {
      error: "NONE",
      generationId: group.generationId,
      protocolName: group.protocol,
      protocolType: group.protocolType,
      leaderId: group.leaderId,
      skipAssignment: false,
      memberId: member.id,
      members,
    };
  }

  /**
   * The protocol every member supports, chosen by vote: each member votes for the first of its own
   * protocols (in its order of preference) that all support; most votes wins. A tie goes where
   * Kafka 4.1.1's ClassicGroup.selectProtocol sends it (read in its bytecode): the votes are a
   * java.util.HashMap and `stream().max` keeps the first maximum, so the first in that map's
   * iteration order (`javaHashMapOrder`) wins: "range" before "roundrobin", whatever the leader
   * prefers. (booblik gave ties to the leader's preference until 2026-12-03, and a group of a Java
   * member and a kcat member chose another assignor than Kafka: a mixed-client helper's run.)
   */
  private selectProtocol(group: Group): string {
    const members = [...group.members.values()];
    const candidates = members[0]!.protocols
      .map((p) => p.name)
      .filter((name) => members.every((m) => m.protocols.some((p) => p.name === name)));
    const votes = new Map<string, number>();
    for (const member of members) {
      const choice = member.protocols.find((p) => candidates.includes(p.name));
      if (choice !== undefined) votes.set(choice.name, (votes.get(choice.name) ?? 0) + 1);
    }
    let best = candidates[0] ?? "";
    let bestVotes = 0;
    for (const name of javaHashMapOrder([...votes.keys()])) {
      const count = votes.get(name)!;
      if (count > bestVotes) {
        best = name;
        bestVotes = count;
      }
    }
    return best;
  }

  // --- SyncGroup, Heartbeat, LeaveGroup ----------------------------------------------------------

  sync(
    groupId: string,
    generationId: number,
    memberId: string,
    assignments: readonly { memberId: string; assignment: Uint8Array }[],
    groupInstanceId: string | null = null,
    /**
     * SyncGroup v5+: the protocol type and name the member joined with (null: not given). One the
     * group does not have is INCONSISTENT_GROUP_PROTOCOL, after the member and generation checks,
     * as Kafka's validateSyncGroup orders them.
     */
    protocol: { type: string | null; name: string | null } = { type: null, name: null },
  ): Promise<SyncResult> {
    const found = this.memberOf(groupId, memberId, generationId, groupInstanceId);
    if (typeof found === "string") return Promise.resolve({ error: found, assignment: EMPTY });
    const { group, member } = found;
    if (
      (protocol.type !== null && protocol.type !== group.protocolType) ||
      (protocol.name !== null && group.protocol !== "" && protocol.name !== group.protocol)
    )
      return Promise.resolve({ error: "INCONSISTENT_GROUP_PROTOCOL", assignment: EMPTY });
    if (group.state === "PreparingRebalance")
      return Promise.resolve({ error: "REBALANCE_IN_PROGRESS", assignment: EMPTY });
    this.restartSession(group, member);
    this.syncReceived(group, member.id);
    if (group.state === "Stable") return Promise.resolve({ error: "NONE", assignment: member.assignment });
    // CompletingRebalance: park; the leader's request completes everyone's.
    member.parkedSync?.({ error: "REBALANCE_IN_PROGRESS", assignment: EMPTY });
    const parked = new Promise<SyncResult>((resolve) => {
      member.parkedSync = resolve;
    });
    if (member.id === group.leaderId && group.storingGeneration !== group.generationId) {
      const owned = new Map<string, Uint8Array>();
      let growth = 0;
      for (const { memberId: id, assignment } of assignments) {
        const assigned = group.members.get(id);
        if (assigned === undefined) continue;
        owned.set(id, assignment.slice());
        growth += assignment.length - assigned.assignment.length;
      }
      if (growth > 0 && this.heldBytes + growth > this.heldBytesMax) {
        // Assignments the coordinator cannot hold: the generation does not complete, and the
        // members rejoin (REBALANCE_IN_PROGRESS, which every client handles by rejoining).
        this.prepareRebalance(group);
        return parked;
      }
      if (this.store === undefined) {
        this.completeSync(group, owned);
        return parked;
      }
      // As Kafka's: the assignment is stored before anyone is told it, so a member that learns
      // generation G finds G after a crash. Meanwhile the group stays CompletingRebalance (followers
      // park); a rebalance or a stop in between wins, and the stored record then names a
      // generation that no member holds any more (its members rejoin after a restart).
      const generationId = group.generationId;
      group.storingGeneration = generationId;
      void this.persist(group.id, this.storedOf(group, owned)).then(() => {
        if (group.storingGeneration === generationId) group.storingGeneration = -1;
        if (
          this.closed ||
          this.groups.get(group.id) !== group ||
          group.generationId !== generationId ||
          group.state !== "CompletingRebalance"
        )
          return;
        this.completeSync(group, owned);
      });
    }
    return parked;
  }

  /** The leader's assignment takes effect: the group is Stable and every parked SyncGroup answered. */
  private completeSync(group: Group, assignments: ReadonlyMap<string, Uint8Array>): void {
    for (const m of group.members.values()) this.setAssignment(m, assignments.get(m.id) ?? EMPTY);
    group.state = "Stable";
    for (const m of group.members.values()) {
      const sync = m.parkedSync;
      m.parkedSync = undefined;
      sync?.({ error: "NONE", assignment: m.assignment });
    }
  }

  heartbeat(
    groupId: string,
    generationId: number,
    memberId: string,
    groupInstanceId: string | null = null,
  ): GroupError {
    const found = this.memberOf(groupId, memberId, generationId, groupInstanceId);
    if (typeof found === "string") return found;
    this.restartSession(found.group, found.member);
    return found.group.state === "PreparingRebalance" ? "REBALANCE_IN_PROGRESS" : "NONE";
  }

  /**
   * Removes members (LeaveGroup); the group rebalances. One outcome per member, in Kafka's order: a
   * member named by instance id alone (member id "") is that instance's current member; an id
   * handed out with MEMBER_ID_REQUIRED is forgotten; an instance named with another member id than
   * its current one is FENCED_INSTANCE_ID.
   */
  leave(groupId: string, members: readonly LeavingMember[]): GroupError[] {
    const group = this.groups.get(groupId);
    return members.map(({ memberId, groupInstanceId }) => {
      if (group === undefined) return "UNKNOWN_MEMBER_ID";
      if (memberId === "") {
        const current = groupInstanceId === null ? undefined : group.staticMembers.get(groupInstanceId);
        const member = current === undefined ? undefined : group.members.get(current);
        if (member === undefined) return "UNKNOWN_MEMBER_ID";
        this.removeMember(group, member);
        return "NONE";
      }
      if (group.pendingMemberIds.has(memberId)) {
        this.dropPending(group, memberId);
        // As any leave in Kafka (classicGroupLeave): a rebalance waiting for this id completes
        // without it; a Stable or CompletingRebalance group rebalances.
        this.rebalanceAfterRemoval(group);
        this.forgetIfEmpty(group);
        return "NONE";
      }
      const problem = this.memberProblem(group, groupInstanceId, memberId);
      if (problem !== undefined) return problem;
      this.removeMember(group, group.members.get(memberId)!);
      return "NONE";
    });
  }

  /**
   * Whether `memberId` of `generationId` may commit offsets for the group now. Generation −1 with
   * no member id is a "simple" commit (a consumer without group membership), allowed while the
   * group has no members.
   */
  checkCommit(
    groupId: string,
    generationId: number,
    memberId: string,
    groupInstanceId: string | null = null,
    hasCommits: () => boolean = () => false,
  ): GroupError {
    if (this.closed) return "COORDINATOR_NOT_AVAILABLE";
    if (groupIdProblem(groupId) !== undefined) return "INVALID_GROUP_ID";
    const group = this.groups.get(groupId);
    if (generationId < 0 && memberId === "") {
      return group === undefined || group.members.size === 0 ? "NONE" : "UNKNOWN_MEMBER_ID";
    }
    // A generation for a group without members (forgotten once empty, or before a restart). Kafka
    // keeps a group with committed offsets as an Empty group, where the member is unknown
    // (UNKNOWN_MEMBER_ID: it rejoins without its id); a group it does not know at all is
    // ILLEGAL_GENERATION (OffsetMetadataManager.validateOffsetCommit, v0-8).
    if (group === undefined) return hasCommits() ? "UNKNOWN_MEMBER_ID" : "ILLEGAL_GENERATION";
    const found = this.memberOf(groupId, memberId, generationId, groupInstanceId);
    if (typeof found === "string") return found;
    if (found.group.state === "CompletingRebalance") return "REBALANCE_IN_PROGRESS";
    this.restartSession(found.group, found.member);
    return "NONE";
  }

  /**
   * Kafka's ClassicGroup.validateMember: a request that names a group instance must name its
   * current member id (another id: FENCED_INSTANCE_ID; an instance the group does not know:
   * UNKNOWN_MEMBER_ID); one that names none must name a member.
   */
  private memberProblem(
    group: Group,
    groupInstanceId: string | null,
    memberId: string,
  ): GroupError | undefined {
    if (groupInstanceId !== null) {
      const current = group.staticMembers.get(groupInstanceId);
      if (current === undefined) return "UNKNOWN_MEMBER_ID";
      if (current !== memberId) return "FENCED_INSTANCE_ID";
      return undefined;
    }
    return group.members.has(memberId) ? undefined : "UNKNOWN_MEMBER_ID";
  }

  private memberOf(
    groupId: string,
    memberId: string,
    generationId: number,
    groupInstanceId: string | null,
  ): { group: Group; member: Member } | GroupError {
    if (this.closed) return "COORDINATOR_NOT_AVAILABLE";
    const group = this.groups.get(groupId);
    if (group === undefined) return "UNKNOWN_MEMBER_ID";
    const problem = this.memberProblem(group, groupInstanceId, memberId);
    if (problem !== undefined) return problem;
    const member = group.members.get(memberId)!;
    if (generationId !== group.generationId) return "ILLEGAL_GENERATION";
    return { group, member };
  }

  // --- Members leaving ---------------------------------------------------------------------------

  private restartSession(group: Group, member: Member): void {
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = setTimeout(() => {
      member.sessionTimer = undefined;
      if (group.members.get(member.id) !== member) return;
      // A member waiting in JoinGroup or SyncGroup is not silent (Kafka's hasSatisfiedHeartbeat):
      // a Heartbeat it sent meanwhile restarted a timer that must not remove it; it runs again.
      if (member.parkedJoin !== undefined || member.parkedSync !== undefined) {
        this.restartSession(group, member);
        return;
      }
      this.removeMember(group, member);
    }, member.sessionTimeoutMs);
    member.sessionTimer.unref();
  }

  /** Removes a member and rebalances what is left. */
  private removeMember(group: Group, member: Member): void {
    this.dropMember(group, member);
    this.rebalanceAfterRemoval(group);
  }

  /** After members were dropped: a rebalance of what is left, completed at once if nobody is. */
  private rebalanceAfterRemoval(group: Group): void {
    if (group.state === "Stable" || group.state === "CompletingRebalance") this.prepareRebalance(group);
    if (group.members.size === 0 && group.state === "PreparingRebalance") {
      this.completeJoin(group);
      return;
    }
    this.tryCompleteJoin(group);
  }

  /** Takes a member out, answering what it has parked; no state change. */
  private dropMember(group: Group, member: Member): void {
    group.members.delete(member.id);
    this.heldBytes -= memberBytes(member.protocols, member.assignment);
    group.pendingSync.delete(member.id);
    if (member.instanceId !== null && group.staticMembers.get(member.instanceId) === member.id)
      group.staticMembers.delete(member.instanceId);
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = undefined;
    const join = member.parkedJoin;
    member.parkedJoin = undefined;
    join?.(failedJoin("UNKNOWN_MEMBER_ID", member.id));
    const sync = member.parkedSync;
    member.parkedSync = undefined;
    sync?.({ error: "UNKNOWN_MEMBER_ID", assignment: EMPTY });
    if (group.leaderId === member.id) group.leaderId = group.members.keys().next().value ?? "";
  }

  /**
   * A group that emptied: its record keeps the generation count while it has committed offsets
   * (as Kafka keeps such a group, Empty), otherwise it goes. Nobody waits on it.
   */
  private storeEmptied(group: Group): void {
    if (this.store === undefined) return;
    const keep = group.generationId > 0 && this.hasCommittedOffsets(group.id);
    void this.persist(
      group.id,
      keep
        ? {
            protocolType: group.protocolType,
            protocol: "",
            generationId: group.generationId,
            leaderId: "",
            members: [],
          }
        : null,
    );
  }

  private forgetIfEmpty(group: Group): void {
    if (
      group.members.size === 0 &&
      group.pendingMemberIds.size === 0 &&
      group.state !== "PreparingRebalance"
    ) {
      if (group.rebalanceTimer !== undefined) clearTimeout(group.rebalanceTimer);
      this.stopAwaitingSyncs(group);
      if (this.groups.get(group.id) === group) {
        this.groups.delete(group.id);
        if (group.generationId > 0 && this.hasCommittedOffsets(group.id)) {
          if (this.emptiedGenerations.size >= GROUPS_MAX)
            this.emptiedGenerations.delete(this.emptiedGenerations.keys().next().value!);
          this.emptiedGenerations.set(group.id, {
            generationId: group.generationId,
            protocolType: group.protocolType,
          });
        }
      }
    }
  }

  // --- Inspection ----------------------------------------------------------------------------------

  /**
   * The protocol type a group without members shows: the one its members had when it emptied
   * (kept while its record is stored, across restarts too), else "" (a group that only ever had
   * commits, as Kafka shows it).
   */
  emptiedProtocolType(groupId: string): string {
    const emptied = this.emptiedGenerations.get(groupId);
    if (emptied === undefined) return "";
    // Deleted since (DeleteGroups, the native DELETE_GROUP: its record went with its commits): a
    // group that commits again without members is a new one, of protocol type "" in Kafka.
    if (this.store?.hasGroupRecord?.(groupId) === false) return "";
    return emptied.protocolType;
  }

  /** Groups with members (ListGroups adds the groups that only have committed offsets). */
  list(): GroupSummary[] {
    return [...this.groups.values()].map((group) => ({
      groupId: group.id,
      protocolType: group.protocolType,
      state: group.state,
    }));
  }

  /** A group with members, or undefined (the caller answers Empty or Dead). */
  describe(groupId: string): GroupDescription | undefined {
    const group = this.groups.get(groupId);
    if (group === undefined) return undefined;
    return {
      groupId: group.id,
      protocolType: group.protocolType,
      state: group.state,
      protocol: group.protocol,
      generationId: group.generationId,
      members: [...group.members.values()].map((m) => ({
        memberId: m.id,
        groupInstanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        metadata: m.protocols.find((p) => p.name === group.protocol)?.metadata ?? EMPTY,
        assignment: m.assignment,
      })),
    };
  }

  /**
   * A pending member id, good for one session timeout. Beyond GROUP_PENDING_MEMBERS_MAX the oldest
   * pending id is dropped (a client that still comes with it gets UNKNOWN_MEMBER_ID and joins
   * again): pending ids cost memory and a timer each, and each group's cap of 1,000 members left
   * 10 million of them possible (1.2 million took a broker to 2.9 GiB, a helper's run, 2026-12-03).
   * A real client comes back with its id within milliseconds.
   */
  private addPending(group: Group, memberId: string, sessionTimeoutMs: number): void {
    if (this.pendingIds.size >= GROUP_PENDING_MEMBERS_MAX) {
      const [oldestId, oldestGroup] = this.pendingIds.entries().next().value!;
      this.dropPending(oldestGroup, oldestId);
      this.tryCompleteJoin(oldestGroup);
      this.forgetIfEmpty(oldestGroup);
    }
    const timer = setTimeout(() => {
      this.dropPending(group, memberId);
      this.tryCompleteJoin(group);
      this.forgetIfEmpty(group);
    }, sessionTimeoutMs);
    timer.unref();
    group.pendingMemberIds.set(memberId, timer);
    this.pendingIds.set(memberId, group);
  }

  private dropPending(group: Group, memberId: string): void {
    const timer = group.pendingMemberIds.get(memberId);
    if (timer !== undefined) clearTimeout(timer);
    group.pendingMemberIds.delete(memberId);
    this.pendingIds.delete(memberId);
  }

  /**
   * With GROUPS_MAX groups, a new group may take the place of one that has nothing but pending ids
   * (the oldest of those): otherwise 10,000 JoinGroups that never came back with their ids kept
   * every new group out for their session timeout, up to 30 minutes (a helper's run). Looks at the
   * oldest GROUP_PENDING_SCAN_MAX pending ids only; returns whether a group was dropped.
   */
  private dropPendingOnlyGroup(): boolean {
    let looked = 0;
    for (const group of this.pendingIds.values()) {
      if (++looked > GROUP_PENDING_SCAN_MAX) return false;
      if (group.members.size > 0 || group.state === "PreparingRebalance") continue;
      for (const id of [...group.pendingMemberIds.keys()]) this.dropPending(group, id);
      this.forgetIfEmpty(group);
      return this.groups.get(group.id) !== group;
    }
    return false;
  }

  /** `heldBytes` counted afresh from every member (tests check the running count against it). */
  countHeldBytes(): number {
    let bytes = 0;
    for (const group of this.groups.values())
      for (const member of group.members.values()) bytes += memberBytes(member.protocols, member.assignment);
    return bytes;
  }

  /** A member's protocols from its latest JoinGroup (owned copies), counted in `heldBytes`. */
  private setProtocols(member: Member, protocols: readonly GroupProtocol[]): void {
    this.heldBytes += protocolBytes(protocols) - protocolBytes(member.protocols);
    member.protocols = ownedProtocols(protocols);
  }

  /** A member's assignment, counted in `heldBytes`. */
  private setAssignment(member: Member, assignment: Uint8Array): void {
    this.heldBytes += assignment.length - member.assignment.length;
    member.assignment = assignment;
  }

  /** Answers every parked request COORDINATOR_NOT_AVAILABLE and stops every timer (broker stop). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.heldBytes = 0;
    this.pendingIds.clear();
    for (const group of this.groups.values()) {
      if (group.rebalanceTimer !== undefined) clearTimeout(group.rebalanceTimer);
      this.stopAwaitingSyncs(group);
      for (const timer of group.pendingMemberIds.values()) clearTimeout(timer);
      group.pendingMemberIds.clear();
      for (const member of group.members.values()) {
        if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
        member.parkedJoin?.(failedJoin("COORDINATOR_NOT_AVAILABLE", member.id));
        member.parkedSync?.({ error: "COORDINATOR_NOT_AVAILABLE", assignment: EMPTY });
        member.parkedJoin = undefined;
        member.parkedSync = undefined;
      }
    }
    this.groups.clear();
  }
}
