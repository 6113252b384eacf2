/**
 * Kafka's own command-line tools, as an operator coming from Kafka runs them (the main classes
 * behind `kafka-topics.sh`, `kafka-console-producer.sh`, `kafka-console-consumer.sh`,
 * `kafka-consumer-groups.sh`, `kafka-get-offsets.sh`, `kafka-delete-records.sh`, `kafka-configs.sh`,
 * `kafka-log-dirs.sh`, `kafka-broker-api-versions.sh`, `kafka-cluster.sh` and
 * `kafka-leader-election.sh`, from Kafka 4.1.1),
 * against a broker child process: each command's exit code and what it prints. The jars are the ones
 * bench/compat/kafka-node.ts fetches into the compat cache (`.ci/run` fetches them; nothing of Kafka
 * is in the repository); without them, or without java, the test is skipped and says why.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { kafkaJavaUnavailable, kafkaMain } from "../helpers/kafka-java.ts";
import { tempDir } from "../helpers/temp-dir.ts";

// About twenty JVM starts, each 1-3 s on a busy 2-core machine.
setDefaultTimeout(300_000);

if (kafkaJavaUnavailable !== undefined)
  console.log(`kafka/java-tools.test.ts: skipped: ${kafkaJavaUnavailable}`);

const TOOLS = "org.apache.kafka.tools";

describe.skipIf(kafkaJavaUnavailable !== undefined)("Kafka's command-line tools", () => {
  test("topics, console producer and consumer, consumer groups, offsets, record deletion, configs, log directories, API versions, the cluster id and leader election", async () => {
    using dir = tempDir("kafka-java-tools");
    const dataDir = dir.file("data");
    await using broker = await startBroker(dataDir, ["--kafka-port", "0"]);
    const bootstrap = `127.0.0.1:${await kafkaPortOf(broker)}`;
    /** Runs a tool; it must exit 0. Returns its standard output. */
    const run = async (mainClass: string, args: string[], input?: string): Promise<string> => {
      // ClusterTool takes its options after its subcommand; the others anywhere.
      const withBootstrap = [...args, "--bootstrap-server", bootstrap];
      const result = await kafkaMain(mainClass, withBootstrap, input);
      expect({
        mainClass,
        args,
        exitCode: result.exitCode,
        stderr: result.exitCode === 0 ? "" : result.stderr,
      }).toEqual({
        mainClass,
        args,
        exitCode: 0,
        stderr: "",
      });
      return result.stdout;
    };
    const topics = (args: string[]) => run(`${TOOLS}.TopicCommand`, args);
    const groups = (args: string[]) => run(`${TOOLS}.consumer.group.ConsumerGroupCommand`, args);
    /** kafka-get-offsets.sh: "topic:partition:offset" lines, as [partition, offset]. */
    const offsets = async (time: string) =>
      (await run(`${TOOLS}.GetOffsetShell`, ["--topic", "orders", "--time", time]))
        .trim()
        .split("\n")
        .map((line) => line.split(":").slice(1).map(Number));

    expect(await topics(["--create", "--topic", "orders", "--partitions", "3"])).toContain(
      "Created topic orders.",
    );
    await topics(["--alter", "--topic", "orders", "--partitions", "4"]);
    expect((await topics(["--list"])).trim()).toBe("orders");
    const described = await topics(["--describe", "--topic", "orders"]);
    expect(described).toContain("PartitionCount: 4\tReplicationFactor: 1");
    expect(described.match(/Leader: 1\tReplicas: 1\tIsr: 1/g)).toHaveLength(4);

    await run(
      `${TOOLS}.ConsoleProducer`,
      ["--topic", "orders", "--property", "parse.key=true", "--property", "key.separator=:"],
      "k1:v1\nk2:v2\nk3:v3\nk4:v4\n",
    );
    const consumed = await run(`${TOOLS}.consumer.ConsoleConsumer`, [
      ...["--topic", "orders", "--group", "billing", "--from-beginning", "--max-messages", "4"],
      ...["--property", "print.key=true", "--property", "print.partition=true"],
      ...["--property", "print.timestamp=true", "--property", "print.offset=true"],
    ]);
    // "CreateTime:ms\tPartition:N\tOffset:N\tkey\tvalue" per record.
    const records = consumed
      .trim()
      .split("\n")
      .map((line) => {
        const [timestamp, partition, offset, key, value] = line.split("\t");
        const number = (field: string | undefined) => Number(field!.split(":")[1]);
        return {
          timestamp: number(timestamp),
          partition: number(partition),
          offset: number(offset),
          key,
          value,
        };
      });
    expect(records.map(({ key, value }) => `${key}=${value}`).sort()).toEqual([
      "k1=v1",
      "k2=v2",
      "k3=v3",
      "k4=v4",
    ]);
    const partitionOf = (key: string) => records.find((r) => r.key === key)!.partition;

    const ends = await offsets("-1");
    expect(ends.map(([partition]) => partition)).toEqual([0, 1, 2, 3]);
    expect(ends.reduce((sum, [, offset]) => sum + offset!, 0)).toBe(4);
    // --time -3: in each partition with records, the record with the largest timestamp (the
    // earliest of several with it, as Kafka answers).
    const newestOf = new Map<number, { timestamp: number; offset: number }>();
    for (const r of records) {
      const best = newestOf.get(r.partition);
      if (
        best === undefined ||
        r.timestamp > best.timestamp ||
        (r.timestamp === best.timestamp && r.offset < best.offset)
      )
        newestOf.set(r.partition, r);
    }
    const newest = await offsets("-3");
    expect(newest.filter(([partition]) => newestOf.has(partition!))).toEqual(
      [...newestOf].sort(([a], [b]) => a - b).map(([partition, r]) => [partition, r.offset]),
    );
    // The group committed everything it read: no lag on any partition.
    const lagLines = (await groups(["--describe", "--group", "billing"]))
      .split("\n")
      .filter((line) => line.startsWith("billing "))
      .map((line) => line.trim().split(/\s+/));
    expect(
      lagLines.map(([, topic, partition, current, end, lag]) => [
        topic,
        Number(partition),
        current,
        end,
        lag,
      ]),
    ).toEqual(ends.map(([partition, offset]) => ["orders", partition, String(offset), String(offset), "0"]));
    expect((await groups(["--list"])).trim()).toBe("billing");
    // By state: ListGroups v4+ (booblik served up to v2, and the tool failed with
    // UnsupportedVersionException for a state filter and printed "Unknown" for every state).
    const byState = async (state: string[]) =>
      (await groups(["--list", "--state", ...state]))
        .trim()
        .split("\n")
        .slice(1) // the header: GROUP STATE
        .map((line) => line.trim().split(/\s+/));
    expect(await byState([])).toEqual([["billing", "Empty"]]);
    expect(await byState(["Empty"])).toEqual([["billing", "Empty"]]);
    expect(await byState(["Stable,PreparingRebalance"])).toEqual([]);
    // An unknown group: the tool's DescribeGroups v6 gets GROUP_ID_NOT_FOUND, as from Kafka 4.x
    // (booblik answered up to v4, state Dead, and the tool went on as if the group existed).
    const unknown = await kafkaMain(`${TOOLS}.consumer.group.ConsumerGroupCommand`, [
      "--describe",
      "--group",
      "nobody",
      "--bootstrap-server",
      bootstrap,
    ]);
    expect(unknown.stdout).toContain("GroupIdNotFoundException: Group nobody not found.");

    // kafka-delete-records.sh: the partition of k1 starts after its first record.
    const purged = partitionOf("k1");
    const json = dir.file("delete.json");
    fs.writeFileSync(
      json,
      JSON.stringify({ version: 1, partitions: [{ topic: "orders", partition: purged, offset: 1 }] }),
    );
    expect(await run(`${TOOLS}.DeleteRecordsCommand`, ["--offset-json-file", json])).toContain(
      `partition: orders-${purged}\tlow_watermark: 1`,
    );
    const earliest = await offsets("-2");
    expect(earliest.find(([partition]) => partition === purged)).toEqual([purged, 1]);
    // --time -4 (earliest local, ListOffsets v8) is the log start on a broker without tiered storage;
    // --time -5 (latest tiered, v9): nothing was tiered, offset −1 (the AdminClient reads −1 and −1
    // from Apache Kafka 4.1.1 too: `bun run compat:kafka`), and the tool prints no line for it.
    // Before booblik served v8-v9, the tool printed no line for -4 either (exit 0).
    expect(await offsets("-4")).toEqual(earliest);
    expect(await offsets("-5")).toEqual([[]]);
    const reset = await groups([
      "--reset-offsets",
      "--to-earliest",
      "--group",
      "billing",
      "--topic",
      "orders",
      "--execute",
    ]);
    expect(reset).toMatch(new RegExp(`billing\\s+orders\\s+${purged}\\s+1\\s`));

    // kafka-configs.sh (kafka.admin.ConfigCommand, still Scala in 4.1.1) on a topic.
    const configs = (args: string[]) =>
      run("kafka.admin.ConfigCommand", ["--entity-type", "topics", "--entity-name", "orders", ...args]);
    expect(await configs(["--alter", "--add-config", "retention.ms=3600000"])).toContain(
      "Completed updating config for topic orders.",
    );
    expect(await configs(["--describe"])).toContain("retention.ms=3600000");
    const topicAll = await configs(["--describe", "--all"]);
    expect(topicAll).toContain(
      "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000",
    );
    expect(topicAll).toContain("  max.message.bytes=");
    // The broker's settings: none dynamic (as a Kafka broker without dynamic configs), all with --all.
    const brokerConfigs = (args: string[]) =>
      run("kafka.admin.ConfigCommand", [
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
        "--describe",
        ...args,
      ]);
    expect((await brokerConfigs([])).trim()).toBe("Dynamic configs for broker 1 are:");
    const all = await brokerConfigs(["--all"]);
    expect(all).toContain(
      `  log.dirs=${fs.realpathSync(dataDir)} sensitive=false synonyms={STATIC_BROKER_CONFIG:`,
    );
    expect(all).toContain("  auto.create.topics.enable=false sensitive=false synonyms={DEFAULT_CONFIG:");

    // kafka-log-dirs.sh: one directory, the data directory, with every partition of the topic.
    const logDirs = async (args: string[]) => {
      const printed = await run(`${TOOLS}.LogDirsCommand`, ["--describe", ...args]);
      return JSON.parse(printed.split("\n").find((line) => line.startsWith("{"))!) as {
        brokers: {
          broker: number;
          logDirs: {
            logDir: string;
            error: string | null;
            partitions: { partition: string; size: number }[];
          }[];
        }[];
      };
    };
    const report = await logDirs(["--topic-list", "orders"]);
    expect(report.brokers.map((b) => b.broker)).toEqual([1]);
    const [logDir] = report.brokers[0]!.logDirs;
    expect([logDir!.logDir, logDir!.error]).toEqual([fs.realpathSync(dataDir), null]);
    expect(logDir!.partitions.map((p) => p.partition).sort()).toEqual([
      "orders-0",
      "orders-1",
      "orders-2",
      "orders-3",
    ]);
    expect(
      logDir!.partitions.find((p) => p.partition === `orders-${partitionOf("k2")}`)!.size,
    ).toBeGreaterThan(0);
    // Without --topic-list: every topic's partitions, the group's internal topic included.
    const everything = (await logDirs([])).brokers[0]!.logDirs[0]!.partitions.map((p) => p.partition);
    expect(everything).toEqual(expect.arrayContaining(["orders-0", "orders-3", "__consumer_offsets-0"]));

    expect(await run(`${TOOLS}.BrokerApiVersionsCommand`, [])).toContain(
      "DescribeLogDirs(35): 0 to 4 [usable: 4]",
    );
    expect((await run(`${TOOLS}.ClusterTool`, ["cluster-id"])).trim()).toBe("Cluster ID: booblik");
    expect(await run(`${TOOLS}.ClusterTool`, ["list-endpoints"])).toMatch(/^1\s+127\.0\.0\.1\s+\d+/m);
    // kafka-leader-election.sh: one node already leads every partition.
    const elect = (args: string[]) =>
      run(`${TOOLS}.LeaderElectionCommand`, ["--election-type", "preferred", ...args]);
    expect((await elect(["--topic", "orders", "--partition", "1"])).trim()).toBe(
      "Valid replica already elected for partitions orders-1",
    );
    expect((await elect(["--all-topic-partitions"])).trim()).toBe("");

    expect(await groups(["--delete", "--group", "billing"])).toContain(
      "Deletion of requested consumer groups ('billing') was successful.",
    );
    await topics(["--delete", "--topic", "orders"]);
    // The group's commits made the internal topic, which Kafka lists too unless asked not to.
    expect((await topics(["--list"])).trim()).toBe("__consumer_offsets");
    expect((await topics(["--list", "--exclude-internal"])).trim()).toBe("");
  });
});
