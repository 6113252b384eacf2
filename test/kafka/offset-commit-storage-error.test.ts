/**
 * An OffsetCommit whose append to `__consumer_offsets` fails with a storage error (a full disk) is
 * answered NOT_COORDINATOR, as Kafka answers it. Found by a fault hunt (2026-12-03); this test failed
 * on 10db40d, which answered KAFKA_STORAGE_ERROR (56) per partition. Kafka never answers that to
 * OffsetCommit: its group coordinator maps a storage error
 * of the offsets append to NOT_COORDINATOR (GroupMetadataManager.storeOffsets: `case
 * Errors.NOT_LEADER_OR_FOLLOWER | Errors.KAFKA_STORAGE_ERROR => Errors.NOT_COORDINATOR`), which
 * every client handles by finding the coordinator again and retrying. The Java consumer does not
 * handle 56 in a commit response: its OffsetCommitResponseHandler falls through to
 * `new KafkaException("Unexpected error in commit: ...")`, a non-retriable exception thrown out of
 * commitSync into the application (a Kafka Streams thread dies of it), for a disk that is full for
 * a moment.
 *
 * In-process (a Broker and its KafkaHandler, as test/kafka/handler.test.ts) so that the offsets
 * topic's writes can fail through the Disk seam: a Disk whose pwrite to `__consumer_offsets-0`
 * fails with ENOSPC while a flag is set.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { ioError } from "../../ffi/file.ts";
import { Broker } from "../../src/broker/broker.ts";
import { KAFKA_ERROR } from "../../src/kafka/apis.ts";
import { KafkaReader } from "../../src/kafka/codec.ts";
import { KafkaHandler } from "../../src/kafka/handler.ts";
import { type Disk, realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { Expect } from "./bytes.ts";

setDefaultTimeout(30_000);

const ENOSPC = 28;
const OFFSET_COMMIT = 8;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The real disk, except that writes to the offsets topic fail with ENOSPC while `full.on`. */
function offsetsFullDisk(full: { on: boolean }): Disk {
  return {
    ...realDisk,
    pwriteAll(fd, source, start, end, position, filePath) {
      if (full.on && filePath?.includes("__consumer_offsets-0") === true)
        throw ioError("pwrite", ENOSPC, filePath, "test: the disk is full");
      realDisk.pwriteAll(fd, source, start, end, position, filePath);
    },
  };
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

test("an OffsetCommit that meets a full disk is answered as Kafka's coordinator answers it: NOT_COORDINATOR", async () => {
  const dir = tempDir("kafka-commit-full");
  cleanups.push(() => dir[Symbol.dispose]());
  const full = { on: false };
  cleanups.push(useDisk(offsetsFullDisk(full)));
  const broker = Broker.open({ dataDir: dir.path });
  cleanups.push(() => broker.close());
  const handler = new KafkaHandler(broker, { advertisedHost: "kafka.example", advertisedPort: 19092 });
  cleanups.push(() => handler.stop());
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
