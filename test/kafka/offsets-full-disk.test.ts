/**
 * The Kafka listener's group APIs when the internal `__consumer_offsets` topic meets a full disk
 * (in process: a Broker and its KafkaHandler, as test/kafka/handler.test.ts, over a Disk whose
 * writes to the offsets topic fail with ENOSPC while a flag is set). Found by a fault hunt
 * (2026-12-03); both tests failed on 10db40d.
 *
 * OffsetCommit: answered NOT_COORDINATOR, as Kafka answers it (10db40d answered KAFKA_STORAGE_ERROR,
 * 56). Kafka's group coordinator maps a storage error of the offsets append to NOT_COORDINATOR
 * (GroupMetadataManager.storeOffsets: `case Errors.NOT_LEADER_OR_FOLLOWER |
 * Errors.KAFKA_STORAGE_ERROR => Errors.NOT_COORDINATOR`), which every client handles by finding the
 * coordinator again and retrying. The Java consumer does not handle 56 in a commit response: its
 * OffsetCommitResponseHandler falls through to `new KafkaException("Unexpected error in commit:
 * ...")`, thrown out of commitSync into the application, for a disk that is full for a moment.
 *
 * FindCoordinator for a group creates `__consumer_offsets` on first use (Broker.ensureOffsetsTopic,
 * src/kafka/handler.ts); while that fails it is answered COORDINATOR_NOT_AVAILABLE with the reason,
 * as Kafka answers while its offsets topic cannot be created (10db40d closed the connection with
 * "internal error answering a request").
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaHandler } from "../../src/kafka/handler.ts";
import { useDisk } from "../../src/storage/disk.ts";
import { offsetsTopicFullDisk } from "../helpers/offsets-full-disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { Expect } from "./bytes.ts";

setDefaultTimeout(30_000);

const OFFSET_COMMIT = 8;
const FIND_COORDINATOR = 10;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A broker and its Kafka handler over a disk whose offsets topic is full while `full.on`. */
function openOnDisk(fullAtStart: boolean): { full: { on: boolean }; broker: Broker; handler: KafkaHandler } {
  const dir = tempDir("kafka-offsets-full");
  cleanups.push(() => dir[Symbol.dispose]());
  const full = { on: fullAtStart };
  cleanups.push(useDisk(offsetsTopicFullDisk(full)));
  const broker = Broker.open({ dataDir: dir.path });
  cleanups.push(() => broker.close());
  const handler = new KafkaHandler(broker, { advertisedHost: "kafka.example", advertisedPort: 19092 });
  cleanups.push(() => handler.stop());
  return { full, broker, handler };
}

/** OffsetCommit v2 (a simple consumer's: generation -1, no member) of one partition; its error code. */
async function commit(handler: KafkaHandler, offset: number): Promise<number> {
  const request = new Expect()
    .i16(OFFSET_COMMIT)
    .i16(2)
    .i32(7)
    .str("test")
    .str("g") // group_id
    .i32(-1) // generation_id
    .str("") // member_id
    .i64(-1) // retention_time_ms
    .i32(1) // topics
    .str("orders")
    .i32(1) // partitions
    .i32(0)
    .i64(offset)
    .str(null); // committed_metadata
  const outcome = await handler.handle(request.body());
  if (outcome.kind !== "respond") throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  const reader = new KafkaReader(outcome.bytes);
  reader.int32("size");
  expect(reader.int32("correlation_id")).toBe(7);
  expect(reader.int32("topics")).toBe(1);
  reader.string("name");
  expect(reader.int32("partitions")).toBe(1);
  expect(reader.int32("partition_index")).toBe(0);
  return reader.int16("error_code");
}

/** FindCoordinator v1 for group `g`: the error code of the answer (throws when there is none). */
async function findCoordinator(handler: KafkaHandler): Promise<number> {
  const request = new Expect().i16(FIND_COORDINATOR).i16(1).i32(7).str("test").str("g").i8(0);
  const outcome = await handler.handle(request.body());
  if (outcome.kind !== "respond") throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  const reader = new KafkaReader(outcome.bytes);
  reader.int32("size");
  expect(reader.int32("correlation_id")).toBe(7);
  reader.int32("throttle_time_ms");
  return reader.int16("error_code");
}

test("an OffsetCommit that meets a full disk is answered as Kafka's coordinator answers it: NOT_COORDINATOR", async () => {
  const { full, broker, handler } = openOnDisk(false);
  broker.createTopic("orders", { partitions: 1 });
  expect(await commit(handler, 1)).toBe(KAFKA_ERROR.NONE);

  full.on = true;
  const refused = await commit(handler, 2);
  full.on = false;
  // Not KAFKA_STORAGE_ERROR (56), which the Java consumer raises as "Unexpected error in commit".
  expect(refused).toBe(KAFKA_ERROR.NOT_COORDINATOR);
  expect(broker.offsets.committed("g", "orders", 0)?.offset).toBe(1);

  // Space again: the same commit goes through.
  expect(await commit(handler, 2)).toBe(KAFKA_ERROR.NONE);
  expect(broker.offsets.committed("g", "orders", 0)?.offset).toBe(2);
});

test("FindCoordinator answers COORDINATOR_NOT_AVAILABLE while the offsets topic cannot be created", async () => {
  const { full, handler } = openOnDisk(true);

  const refused = await findCoordinator(handler).catch((error: unknown) => error);
  expect(refused).toBe(KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE);

  // Space again: the coordinator is found (and the offsets topic made).
  full.on = false;
  expect(await findCoordinator(handler)).toBe(KAFKA_ERROR.NONE);
});
