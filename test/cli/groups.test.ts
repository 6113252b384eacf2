/**
 * `booblik-cli groups` against a broker process with a Kafka listener: list, describe (committed
 * offset, log end, lag per partition), reset-offsets to earliest / latest / an offset (clamped to
 * the log) / a time, delete; usage errors exit 2 before connecting; delete and reset-offsets of a
 * group with a live Kafka member (kafkajs) are refused with a clear message and change nothing; a
 * native commit is where the Kafka member starts, and its commits are what the CLI reads.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { type BrokerProcess, kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(90_000);

const T0 = 1_700_000_000_000;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(): Promise<{ broker: BrokerProcess; kafkaPort: number; client: BooblikClient }> {
  const dir: TempDir = tempDir("cli-groups");
  cleanups.push(() => dir[Symbol.dispose]());
  const broker = await startBroker(dir.path, ["--kafka-port", "0"]);
  cleanups.push(() => broker.stop("SIGKILL"));
  const kafkaPort = await kafkaPortOf(broker);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  cleanups.push(() => client.close());
  await client.createTopic("orders", { partitions: 2 });
  // Partition 0: 10 records at T0 + 1000 i; partition 1: 4 records.
  const producer = new Producer(client);
  await producer.send(
    "orders",
    Array.from({ length: 10 }, (_, i) => ({ value: `a${i}`, timestamp: T0 + 1000 * i })),
    { partition: 0 },
  );
  await producer.send("orders", ["b0", "b1", "b2", "b3"], { partition: 1 });
  await producer.close();
  return { broker, kafkaPort, client };
}

const cli = (broker: BrokerProcess, args: string[]) =>
  runCli(["--broker", `127.0.0.1:${broker.port}`, "groups", ...args]);
const json = (broker: BrokerProcess, args: string[]) => cli(broker, ["--json", ...args]);

describe("booblik-cli groups", () => {
  test("list, describe with lag, reset-offsets to earliest, latest, an offset and a time, delete", async () => {
    const { broker, client } = await setUp();
    expect((await cli(broker, ["list"])).stdout.trim()).toBe("no groups");
    await client.commitOffsets("billing", [
      { topic: "orders", partition: 0, offset: 7, metadata: "m" },
      { topic: "orders", partition: 1, offset: 4 },
    ]);
    const listed = await json(broker, ["list"]);
    expect(listed.exitCode).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      { group: "billing", committedPartitions: 2, kafkaMembers: 0 },
    ]);

    const described = await cli(broker, ["describe", "billing"]);
    expect(described.exitCode).toBe(0);
    expect(described.stdout).toContain("group billing");
    const rows = (await json(broker, ["describe", "billing"])).stdout;
    expect(
      JSON.parse(rows).partitions.map((p: Record<string, unknown>) => [
        p.partition,
        p.committed,
        p.logEnd,
        p.lag,
      ]),
    ).toEqual([
      [0, 7, 10, 3],
      [1, 4, 4, 0],
    ]);

    const committedAfter = async (args: string[]) => {
      const run = await cli(broker, ["reset-offsets", "billing", "--topic", "orders", ...args]);
      expect({ args, exitCode: run.exitCode, stderr: run.stderr }).toEqual({ args, exitCode: 0, stderr: "" });
      return (await client.fetchOffsets("billing", [{ topic: "orders" }])).map((o) => o.offset);
    };
    expect(await committedAfter(["--to-earliest"])).toEqual([0, 0]);
    expect(await committedAfter(["--to-latest"])).toEqual([10, 4]);
    expect(await committedAfter(["--to-offset", "6"])).toEqual([6, 4]); // clamped to partition 1's end
    expect(await committedAfter(["--to-time", String(T0 + 2500)])).toEqual([3, 0]); // partition 1's records are from now

    const deleted = await cli(broker, ["delete", "billing"]);
    expect(deleted.exitCode).toBe(0);
    expect(deleted.stdout.trim()).toBe("deleted group billing");
    expect(await client.fetchOffsets("billing")).toEqual([]);
    const again = await cli(broker, ["delete", "billing"]);
    expect(again.exitCode).toBe(1);
    expect(again.stderr.trim()).toBe('booblik-cli: DELETE_GROUP: group "billing" has no committed offsets');
    const unknown = await cli(broker, ["describe", "billing"]);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr.trim()).toBe("booblik-cli: group billing has no committed offsets");
  });

  test("reset-offsets of a topic with more partitions than one OFFSET_COMMIT holds (256)", async () => {
    // It sent them all in one request and failed whole ("at most 256 fit one request").
    const { broker, client } = await setUp();
    await client.createTopic("wide", { partitions: 300 });
    const reset = await cli(broker, ["reset-offsets", "wide-readers", "--topic", "wide", "--to-latest"]);
    expect(reset.stderr).toBe("");
    expect(reset.exitCode).toBe(0);
    const fetched = await client.fetchOffsets("wide-readers", [{ topic: "wide" }]);
    expect(fetched.map((o) => o.partition).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 300 }, (_, i) => i),
    );
  });

  test("usage errors exit 2 before connecting", async () => {
    const port = "127.0.0.1:1"; // nothing listens: a usage error must not get as far as connecting
    const cases: [string[], string][] = [
      [[], "missing groups action"],
      [["frobnicate"], "unknown groups action frobnicate"],
      [["describe"], "missing group"],
      [["reset-offsets", "g", "--to-earliest"], "reset-offsets needs --topic T"],
      [["reset-offsets", "g", "--topic", "t"], "exactly one of"],
      [["reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-latest"], "exactly one of"],
      [["reset-offsets", "g", "--topic", "t", "--to-offset", "-1"], "--to-offset"],
      [["reset-offsets", "g", "--topic", "t", "--to-time", "yesterday-ish"], "--to-time"],
      [["list", "--topic", "t"], "unknown option --topic"],
    ];
    for (const [args, message] of cases) {
      const run = await runCli(["--broker", port, "groups", ...args]);
      expect({ args, exitCode: run.exitCode }).toEqual({ args, exitCode: 2 });
      expect(run.stderr).toContain(message);
    }
  });

  test("delete and reset-offsets refuse a group with a live Kafka member and change nothing", async () => {
    const { broker, kafkaPort, client } = await setUp();
    // Committed over the native protocol: the Kafka client starts partition 0 there (8 of its 10).
    await client.commitOffsets("live", [{ topic: "orders", partition: 0, offset: 2 }]);
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${kafkaPort}`],
      clientId: "cli-test",
      logLevel: logLevel.NOTHING,
    });
    const consumer: Consumer = kafka.consumer({
      groupId: "live",
      sessionTimeout: 10_000,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
    });
    await consumer.connect();
    cleanups.push(() => consumer.disconnect());
    await consumer.subscribe({ topic: "orders", fromBeginning: true });
    let seen = 0;
    await consumer.run({
      autoCommitThreshold: 1,
      eachMessage: async () => {
        seen++;
      },
    });
    await waitUntil(() => joined && seen >= 12, "the kafkajs member consuming 8 + 4 records", 60_000);
    // kafkajs commits what it consumed through the Kafka listener; the CLI sees it.
    await waitUntil(
      async () => (await client.fetchOffsets("live")).map((o) => o.offset).join() === "10,4",
      "kafkajs committing 10 and 4",
      60_000,
    );
    expect(seen).toBe(12); // everything committed was consumed, and nothing below offset 2 of partition 0
    const listed = JSON.parse((await json(broker, ["list"])).stdout);
    expect(listed).toEqual([{ group: "live", committedPartitions: 2, kafkaMembers: 1 }]);

    const refused = await cli(broker, ["delete", "live"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr.trim()).toBe(
      'booblik-cli: DELETE_GROUP: group "live" has 1 live Kafka member; stop its consumers first (Kafka\'s NON_EMPTY_GROUP)',
    );
    const notReset = await cli(broker, ["reset-offsets", "live", "--topic", "orders", "--to-earliest"]);
    expect(notReset.exitCode).toBe(1);
    expect(notReset.stderr.trim()).toBe(
      "booblik-cli: group live has 1 live Kafka member; stop its consumers before resetting its offsets",
    );
    expect((await client.fetchOffsets("live")).map((o) => o.offset)).toEqual([10, 4]);

    // Once the member left, the group can be deleted.
    await consumer.disconnect();
    await waitUntil(
      async () => (await client.listGroups())[0]?.kafkaMembers === 0,
      "the member leaving the group",
      30_000,
    );
    expect((await cli(broker, ["delete", "live"])).exitCode).toBe(0);
  });
});
