/**
 * FindCoordinator for a group creates `__consumer_offsets` on first use (Broker.ensureOffsetsTopic,
 * src/kafka/handler.ts). When that create fails (a full disk: the segment's header cannot be
 * written), it is answered COORDINATOR_NOT_AVAILABLE with the reason. Found by a fault hunt
 * (2026-12-03); this test failed on 10db40d, where the IoError escaped KafkaHandler.handle and the
 * listener closed the connection with "internal error answering a request": the client saw a
 * dropped connection, not an answer. Kafka answers
 * COORDINATOR_NOT_AVAILABLE while its offsets topic cannot be created (clients retry it), and
 * booblik's own OffsetCommit path answers the same failure with an error code.
 *
 * In-process (a Broker and its KafkaHandler, as test/kafka/handler.test.ts), with a Disk whose
 * creation of the offsets topic's segment fails with ENOSPC while a flag is set.
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
const FIND_COORDINATOR = 10;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The real disk, except that writes under `__consumer_offsets-0` fail with ENOSPC while `full.on`. */
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

test("FindCoordinator answers COORDINATOR_NOT_AVAILABLE while the offsets topic cannot be created", async () => {
  const dir = tempDir("kafka-find-coordinator-full");
  cleanups.push(() => dir[Symbol.dispose]());
  const full = { on: true };
  cleanups.push(useDisk(offsetsFullDisk(full)));
  const broker = Broker.open({ dataDir: dir.path });
  cleanups.push(() => broker.close());
  const handler = new KafkaHandler(broker, { advertisedHost: "kafka.example", advertisedPort: 19092 });
  cleanups.push(() => handler.stop());

  const refused = await findCoordinator(handler).catch((error: unknown) => error);
  expect(refused).toBe(KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE);

  // Space again: the coordinator is found (and the offsets topic made).
  full.on = false;
  expect(await findCoordinator(handler)).toBe(KAFKA_ERROR.NONE);
});
