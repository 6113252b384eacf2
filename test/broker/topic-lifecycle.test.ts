/**
 * Topic lifecycle in the embedded broker: a topic name stays reserved until its delete finished (a
 * create in the gap used to lose the new topic's directory to the resumed delete), and closing a
 * partition waits for the force in flight without asking for another one.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { BooblikError } from "../../src/domain/errors.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const decode = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes!);

function values(broker: Broker, topic: string, partition: number): string[] {
  return valuesOfEntries(broker.read(topic, partition, 0, 10 * 1024 * 1024).records).map(decode);
}

test("a create of a name whose delete is still running cannot lose the new topic's records", async () => {
  using dir = tempDir();
  let broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  try {
    broker.createTopic("t", { partitions: 2 });
    await broker.append("t", 0, batchOfValues(["old 0"]));
    await broker.append("t", 1, batchOfValues(["old 1"]));
    // The delete is not awaited: it is past its commit point and closing the old partitions.
    const deleting = broker.deleteTopic("t");
    let createdDuringDelete = false;
    try {
      broker.createTopic("t", { partitions: 2 });
      createdDuringDelete = true;
    } catch (error) {
      // Refused while the name is reserved, with an error that says to try again.
      expect(error).toBeInstanceOf(BooblikError);
      expect(error).toMatchObject({ code: "TOPIC_EXISTS", retriable: true });
      expect((error as Error).message).toContain("being deleted");
    }
    if (createdDuringDelete) {
      await broker.append("t", 0, batchOfValues(["new 0"]));
      await broker.append("t", 1, batchOfValues(["new 1"]));
    }
    await deleting;
    if (!createdDuringDelete) {
      broker.createTopic("t", { partitions: 2 });
      await broker.append("t", 0, batchOfValues(["new 0"]));
      await broker.append("t", 1, batchOfValues(["new 1"]));
    }
    expect(values(broker, "t", 0)).toEqual(["new 0"]);
    await broker.close();
    broker = Broker.open({ dataDir: dir.path });
    expect(values(broker, "t", 0)).toEqual(["new 0"]);
    expect(values(broker, "t", 1)).toEqual(["new 1"]);
  } finally {
    await broker.close();
  }
});

test("close waits for deletes in progress before it releases the data directory", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "append" } });
  broker.createTopic("gone");
  await broker.append("gone", 0, batchOfValues(["x"]));
  const deleting = broker.deleteTopic("gone");
  await broker.close();
  // The delete finished (its directory is gone) before the lock was released, so no other broker can
  // open the directory while a removal of ours still runs in it.
  expect(fs.existsSync(path.join(dir.path, "gone-0"))).toBe(false);
  await deleting;
  const reopened = Broker.open({ dataDir: dir.path });
  try {
    expect(reopened.listTopics()).toEqual([]);
  } finally {
    await reopened.close();
  }
});

test("closing a partition waits for the force in flight without queueing another", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "force" } });
  broker.createTopic("f");
  const partition = broker.partition("f", 0);
  // A force starts for this append and is in flight when close begins.
  const appended = broker.append("f", 0, batchOfValues(["a"]));
  expect(partition.groupCommit.inFlight).toBe(true);
  await broker.close();
  expect((await appended).durability).toBe("forced");
  // Only the append asked the group commit for a force; the clean close forced by itself.
  expect(partition.groupCommit.requestCount).toBe(1);
  expect(partition.groupCommit.forceCount).toBe(1);
});
