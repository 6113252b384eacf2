/**
 * The native protocol's group requests (LIST_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUP),
 * checked and applied against the broker's OffsetsStore. Kept apart from server.ts so that the
 * dispatcher only routes: every check here throws a BooblikError the server turns into an error
 * response.
 *
 * Invariants:
 * - Every check runs before anything is stored: a request with one bad partition stores nothing
 *   (the store's commit is one append, whole or nothing), and its error names the item by index.
 * - OFFSET_COMMIT resolves after the force that covers its records (OffsetsStore.commit), so an
 *   acknowledged commit survives a crash; the connection's ordering rule (a request is dispatched
 *   after every earlier non-PRODUCE request completed) then makes an OFFSET_FETCH behind it see it.
 * - DELETE_GROUP refuses a group that has live Kafka members: deleting their offsets under them
 *   would send them back to auto.offset.reset at the next rebalance.
 */
import type { Broker } from "../broker/broker.ts";
import { groupIdProblem, metadataProblem, type OffsetCommitEntry } from "../broker/offsets-store.ts";
import { BooblikError } from "../domain/errors.ts";
import { COMMIT_OFFSETS_PER_REQUEST_MAX, OFFSETS_TOPIC_NAME } from "../domain/limits.ts";
import type {
  FetchedOffset,
  ListedGroup,
  OffsetCommitRequest,
  OffsetFetchRequest,
} from "../protocol/group-messages.ts";

/** The groups of the Kafka listener's coordinator (main.ts wires it when a Kafka listener runs). */
export interface KafkaGroups {
  /** Members of a group (0 when it has none). */
  members(group: string): number;
  /** Groups that have members now. */
  groupIds(): string[];
}

/** Every group with committed offsets or Kafka members, sorted by name. */
export function listGroups(broker: Broker, kafka: KafkaGroups | undefined): ListedGroup[] {
  const names = new Set([...broker.offsets.groupIds(), ...(kafka?.groupIds() ?? [])]);
  return [...names].sort().map((group) => ({
    group,
    committedPartitions: broker.offsets.committedOf(group).length,
    kafkaMembers: kafka?.members(group) ?? 0,
  }));
}

function checkGroup(api: string, group: string): void {
  const problem = groupIdProblem(group);
  if (problem !== undefined) throw new BooblikError("INVALID_REQUEST", `${api}: ${problem}`);
}

/**
 * Checks an OFFSET_COMMIT and stores it; resolves after the force. `checkTopic` throws for a topic
 * the committing connection may not commit (one replaced since it fetched from it: server.ts).
 */
export function commitOffsets(
  broker: Broker,
  request: OffsetCommitRequest,
  checkTopic?: (topic: string, where: string) => void,
): Promise<void> {
  checkGroup("OFFSET_COMMIT", request.group);
  if (request.offsets.length === 0)
    throw new BooblikError("INVALID_REQUEST", "OFFSET_COMMIT holds no offsets (at least one is needed)");
  if (request.offsets.length > COMMIT_OFFSETS_PER_REQUEST_MAX)
    throw new BooblikError(
      "INVALID_REQUEST",
      `OFFSET_COMMIT holds ${request.offsets.length} offsets; at most ${COMMIT_OFFSETS_PER_REQUEST_MAX} fit one request`,
    );
  const entries: OffsetCommitEntry[] = request.offsets.map((item, index) => {
    const where = `OFFSET_COMMIT offset ${index} (${item.topic}/${item.partition})`;
    if (item.topic === OFFSETS_TOPIC_NAME)
      throw new BooblikError("INVALID_REQUEST", `${where}: ${OFFSETS_TOPIC_NAME} is the broker's own topic`);
    checkTopic?.(item.topic, where);
    try {
      broker.partition(item.topic, item.partition);
    } catch (error) {
      if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION")
        throw new BooblikError("UNKNOWN_TOPIC_OR_PARTITION", `${where}: ${error.message}`);
      throw error;
    }
    const metadataTooLarge = metadataProblem(item.metadata);
    if (metadataTooLarge !== undefined)
      throw new BooblikError("INVALID_REQUEST", `${where}: ${metadataTooLarge}`);
    return {
      topic: item.topic,
      partition: item.partition,
      offset: item.offset,
      // booblik stamps no leader epochs (common.md §2): −1, as the Kafka listener answers it.
      leaderEpoch: -1,
      metadata: item.metadata === "" ? null : item.metadata,
    };
  });
  return broker.offsets.commit(request.group, entries);
}

/** The committed offsets an OFFSET_FETCH asks for, in request order (or sorted, for "all"). */
export function fetchOffsets(broker: Broker, request: OffsetFetchRequest): FetchedOffset[] {
  checkGroup("OFFSET_FETCH", request.group);
  const store = broker.offsets;
  if (request.topics.length === 0) {
    return store.committedOf(request.group).map(({ topic, partition, committed }) => ({
      topic,
      partition,
      offset: committed.offset,
      commitTimestampMs: committed.commitTimestampMs,
      metadata: committed.metadata ?? "",
    }));
  }
  const answer: FetchedOffset[] = [];
  request.topics.forEach((asked, index) => {
    const where = `OFFSET_FETCH topic ${index} (${asked.topic})`;
    let partitions = asked.partitions;
    try {
      if (partitions.length === 0) partitions = broker.describeTopic(asked.topic).partitions.map((_, p) => p);
      else for (const partition of partitions) broker.partition(asked.topic, partition);
    } catch (error) {
      if (error instanceof BooblikError && error.code === "UNKNOWN_TOPIC_OR_PARTITION")
        throw new BooblikError("UNKNOWN_TOPIC_OR_PARTITION", `${where}: ${error.message}`);
      throw error;
    }
    for (const partition of partitions) {
      const committed = store.committed(request.group, asked.topic, partition);
      answer.push({
        topic: asked.topic,
        partition,
        offset: committed?.offset ?? -1,
        commitTimestampMs: committed?.commitTimestampMs ?? -1,
        metadata: committed?.metadata ?? "",
      });
    }
  });
  return answer;
}

/** Deletes every committed offset of a group; resolves after the force. */
export function deleteGroup(broker: Broker, group: string, kafka: KafkaGroups | undefined): Promise<void> {
  checkGroup("DELETE_GROUP", group);
  const members = kafka?.members(group) ?? 0;
  if (members > 0)
    throw new BooblikError(
      "INVALID_REQUEST",
      `DELETE_GROUP: group ${JSON.stringify(group)} has ${members} live Kafka member${members === 1 ? "" : "s"}; stop its consumers first (Kafka's NON_EMPTY_GROUP)`,
    );
  if (broker.offsets.committedOf(group).length === 0)
    throw new BooblikError(
      "UNKNOWN_TOPIC_OR_PARTITION",
      `DELETE_GROUP: group ${JSON.stringify(group)} has no committed offsets`,
    );
  return broker.offsets.deleteGroup(group);
}
