/**
 * Crash torture: start the broker, run concurrent producers under the `force` policy and a consumer
 * that saves its position after every record, SIGKILL the broker at a random moment, restart it,
 * verify, repeat. Verified every cycle:
 * - every acknowledged record is present with the right bytes at its offset;
 * - every partition is a gap-free sequence of whole records, each one some producer sent: producers
 *   send multi-record batches with keys and headers, and the key, value and headers come back;
 * - every record the consumer was handed is still at its offset with its bytes, and so is every
 *   record a tail reader was handed (a reader that keeps no position and so stays at the end of
 *   the log, where a record shown before it was forced would be seen before a crash takes it);
 * - the consumer, resuming from its saved position, sees each offset exactly once;
 * - a consumer group's committed offsets (OFFSET_COMMIT, one per record a group committer reads,
 *   each forced before it is acknowledged) are never behind the last commit the broker acknowledged
 *   for that partition, never beyond the last one sent, and never beyond the end of the log;
 * - `booblik-cli segment verify` finds no damage in the crashed data directory, nor anywhere after
 *   the last restart and a clean stop.
 *
 * `bun run torture [--cycles N] [--seed S] [--write-mode file|mapped]` (the long mode runs 1,000
 * cycles by default, on the file write path unless told);
 * `bun run torture --power-loss` adds a power cut after every kill (test/power-loss/power-loss.ts);
 * test/torture/torture.test.ts runs a few cycles inside `bun test`. The seed is printed; a failing
 * seed replays with --seed or BOOBLIK_SEED.
 */
import fs from "node:fs";
import path from "node:path";
import { parseBenchArgs } from "../../bench/lib/args.ts";
import { BooblikClient, type FetchResult } from "../../src/client/client.ts";
import { Consumer, headersTextOf, keyTextOf, textOf } from "../../src/client/consumer.ts";
import type { ConsumedRecord } from "../../src/client/fetched.ts";
import { PositionFile } from "../../src/client/position-file.ts";
import { Producer } from "../../src/client/producer.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { Random } from "../helpers/random.ts";
import { fetchedRecords } from "../helpers/records.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const TOPIC = "torture";
const PARTITIONS = 3;
/** The consumer group whose committed offsets the run checks (stored in `__consumer_offsets`). */
const GROUP = "torture-group";
/** A record as text: key, value and headers, so that all three are checked wherever it is read. */
const PAYLOAD = /^key-\d+\|c(\d+)-p(\d+)-s(\d+)-i(\d+):x*\|\{"producer":"p\d+","index":"\d+"\}$/;
/**
 * A stall detector, not a pace: a cycle normally reaches its kill point in well under a second. If the
 * producers have not made the acknowledgements a cycle waits for within this time, the cycle fails
 * instead of killing an idle broker and passing.
 */
const STALL_TIMEOUT_MS = 30_000;

export interface TortureOptions {
  cycles: number;
  seed: number;
  /** Positions and (unless `dataDir` says otherwise) the data directory. */
  workDir: string;
  /** The broker's data directory; default `<workDir>/data`. */
  dataDir?: string;
  /**
   * Runs at the kill point just before the SIGKILL, with the broker still running: the power-loss
   * harness cuts the power here (test/power-loss/power-loss.ts). Failures of producers and the
   * consumer from here on are expected, as after the kill.
   */
  beforeKill?: (cycle: number, broker: BrokerProcess) => Promise<void>;
  /** More arguments for every broker the cycles start (the power-loss harness adds a metrics port). */
  brokerArgs?: string[];
  /**
   * Runs after each SIGKILL, before anything looks at the data directory: the power-loss harness
   * unmounts and mounts what survived here. Returns a note for the cycle's log line.
   */
  afterKill?: (cycle: number) => Promise<string>;
  /**
   * Run `booblik-cli segment verify` on the crashed directory each cycle (default true). After a
   * power cut in the middle of a force, a sealed segment may have lost its unforced tail while the
   * entry of its successor survived: a gap recovery removes (nothing in it was acknowledged), but
   * which the offline check rightly calls damage. The power-loss harness turns it off and relies on
   * the checks through the restarted broker, and on the offline check after the final clean stop.
   */
  verifyCrashedDirectory?: boolean;
  /** The topic's write path (default `file`). */
  writeMode?: "file" | "mapped";
  log?: (line: string) => void;
}

export interface TortureResult {
  /** Kill cycles completed whose crash was then verified through a restarted broker. */
  cycles: number;
  acknowledged: number;
  consumed: number;
  /** Offset commits the broker acknowledged (each checked not to be lost). */
  commitsAcknowledged: number;
}

/** Per partition: the last commit the broker acknowledged, and the highest one sent. */
interface CommitLedger {
  acknowledged: number[];
  sent: number[];
  /** Acknowledged commits over the run. */
  count: number;
}

function payload(cycle: number, producer: number, sequence: number, index: number): string {
  return `c${cycle}-p${producer}-s${sequence}-i${index}:`.padEnd(
    20 + ((cycle * 7 + sequence * 13 + index) % 180),
    "x",
  );
}

/** What a producer sends: a key, the payload as value, two headers. */
function recordOf(key: string, value: string, producer: number, index: number) {
  return {
    key,
    value,
    headers: [
      { key: "producer", value: `p${producer}` },
      { key: "index", value: String(index) },
    ],
  };
}

/** A record as the text PAYLOAD matches: what was sent, read back through any path. */
function textOfRecord(record: ConsumedRecord): string {
  return `${keyTextOf(record)}|${textOf(record)}|${JSON.stringify(headersTextOf(record))}`;
}

function sentText(record: ReturnType<typeof recordOf>): string {
  return `${record.key}|${record.value}|${JSON.stringify({ producer: record.headers[0]!.value, index: record.headers[1]!.value })}`;
}

class TortureFailure extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new TortureFailure(message);
}

export async function runTorture(options: TortureOptions): Promise<TortureResult> {
  const { cycles, seed, workDir } = options;
  const log = options.log ?? (() => undefined);
  const random = new Random(seed);
  const dataDir = options.dataDir ?? path.join(workDir, "data");
  /** partition → offset → payload, for every acknowledged record. */
  const acknowledged = Array.from({ length: PARTITIONS }, () => new Map<number, string>());
  /** partition → offset → payload, for every record the consumer was handed. */
  const consumedOffsets = Array.from({ length: PARTITIONS }, () => new Map<number, string>());
  /** partition → offset → payload, for every record the tail readers were handed. */
  const tailed = Array.from({ length: PARTITIONS }, () => new Map<number, string>());
  const positions = Array.from(
    { length: PARTITIONS },
    (_, p) => new PositionFile(path.join(workDir, `position-${p}.json`), TOPIC, p),
  );
  const commits: CommitLedger = {
    acknowledged: Array.from({ length: PARTITIONS }, () => -1),
    sent: Array.from({ length: PARTITIONS }, () => -1),
    count: 0,
  };
  let broker: BrokerProcess | undefined;
  let verifiedCycles = 0;
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      broker = await startBroker(dataDir, ["--segment-size", "64KiB", ...(options.brokerArgs ?? [])]);
      const client = await BooblikClient.connect({
        host: "127.0.0.1",
        port: broker.port,
        retries: 0,
        requestTimeoutMs: 10_000,
      });
      if (cycle === 0)
        await client.createTopic(TOPIC, {
          partitions: PARTITIONS,
          durability: "force",
          segmentBytes: 64 * 1024,
          writeMode: options.writeMode ?? "file",
        });
      // Verify what the previous crash left, through the restarted broker.
      await verifyLog(client, acknowledged, [consumedOffsets, tailed]);
      const resumeFrom = await verifyCommits(client, commits);
      if (cycle > 0) verifiedCycles++;
      // Producers and the consumer run until the broker dies under them.
      const producers = random.int(2, 6);
      const acksBeforeKill = random.int(1, 150);
      let acks = 0;
      let killed = false;
      const brokerKilled = () => killed;
      let killRequested: () => void = () => undefined;
      const killPoint = new Promise<void>((resolve) => {
        killRequested = resolve;
      });
      const running = [
        ...Array.from({ length: producers }, (_, producer) =>
          produce(
            client,
            cycle,
            producer,
            random.int(0, 2 ** 30),
            acknowledged,
            () => {
              if (++acks === acksBeforeKill) killRequested();
            },
            brokerKilled,
          ),
        ),
        consume(client, positions, consumedOffsets, brokerKilled),
        tail(client, tailed, brokerKilled),
        commitAsGroup(client, resumeFrom, commits, brokerKilled),
      ];
      // Until the kill point; a check failing in a producer or the consumer (a rejection) ends the
      // cycle at once, and so does a stall.
      let stallTimer: ReturnType<typeof setTimeout> | undefined;
      let outcome: "kill" | "ended" | "stalled";
      try {
        outcome = await Promise.race([
          killPoint.then(() => "kill" as const),
          Promise.all(running).then(() => "ended" as const),
          new Promise<"stalled">((resolve) => {
            stallTimer = setTimeout(() => resolve("stalled"), STALL_TIMEOUT_MS);
          }),
        ]);
      } finally {
        clearTimeout(stallTimer);
      }
      check(
        outcome !== "stalled",
        `cycle ${cycle}: producers stalled: ${acks} of the ${acksBeforeKill} acknowledgements before the kill in ${STALL_TIMEOUT_MS} ms`,
      );
      check(
        outcome !== "ended",
        `cycle ${cycle}: the producers and the consumer stopped before the kill (${acks} of ${acksBeforeKill} acknowledgements)`,
      );
      // A random extra moment, so the kill does not always land right after an acknowledgement.
      if (random.next() < 0.5) await new Promise((resolve) => setTimeout(resolve, random.int(0, 5)));
      killed = true;
      await options.beforeKill?.(cycle, broker);
      broker.process.kill("SIGKILL");
      await broker.process.exited;
      check(broker.process.signalCode === "SIGKILL", `cycle ${cycle}: the broker was not killed by SIGKILL`);
      // Every producer and the consumer ended with the broker; a check that failed in any of them fails
      // the cycle (connection errors after the kill are expected and were tolerated where they arose).
      for (const settled of await Promise.allSettled(running))
        if (settled.status === "rejected") throw settled.reason;
      client.close();
      broker = undefined;
      const note = options.afterKill === undefined ? "" : `; ${await options.afterKill(cycle)}`;
      // The crashed directory, offline: no damage (an incomplete newest tail is allowed).
      if (options.verifyCrashedDirectory ?? true) verifyOffline(dataDir, `cycle ${cycle}`);
      log(
        `cycle ${cycle + 1}/${cycles}: ${producers} producers, killed after ${acks} acknowledgements${note}`,
      );
    }
    // A last restart verifies the last crash.
    broker = await startBroker(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await verifyLog(client, acknowledged, [consumedOffsets, tailed]);
    await verifyCommits(client, commits);
    // Nothing kills this broker: here every error fails the run.
    await consume(client, positions, consumedOffsets, () => false, true);
    client.close();
    if (cycles > 0) verifiedCycles++;
    // A clean stop, then the whole directory offline: recovery left no damage anywhere.
    const exitCode = await broker.stop("SIGTERM");
    broker = undefined;
    check(exitCode === 0, `the last broker exited with ${exitCode} on SIGTERM`);
    verifyOffline(dataDir, "after the last clean stop");
    return {
      cycles: verifiedCycles,
      acknowledged: acknowledged.reduce((sum, map) => sum + map.size, 0),
      consumed: consumedOffsets.reduce((sum, set) => sum + set.size, 0),
      commitsAcknowledged: commits.count,
    };
  } catch (error) {
    if (error instanceof TortureFailure) throw new TortureFailure(`${error.message} (seed ${seed})`);
    throw error;
  } finally {
    if (broker !== undefined) await broker[Symbol.asyncDispose]();
  }
}

function verifyOffline(dataDir: string, when: string): void {
  const verify = Bun.spawnSync(
    ["bun", path.join(ROOT, "src/cli/main.ts"), "segment", "verify", dataDir, "--json"],
    { stdout: "pipe", stderr: "pipe" },
  );
  check(
    verify.exitCode === 0,
    `${when}: segment verify found damage: ${verify.stdout.toString()} ${verify.stderr.toString()}`,
  );
}

async function produce(
  client: BooblikClient,
  cycle: number,
  producer: number,
  seed: number,
  acknowledged: Map<number, string>[],
  onAck: () => void,
  brokerKilled: () => boolean,
): Promise<void> {
  const random = new Random(seed);
  const sender = new Producer(client, { retryOnConnectionFailure: false, lingerMs: 1 });
  try {
    for (let sequence = 0; ; sequence++) {
      // Multi-record batches with keys and headers: either to a chosen partition, each record with
      // a key of its own, or all with one key, which picks the partition (Kafka's partitioner).
      const count = random.int(1, 10);
      const byPartition = random.next() < 0.5;
      const sharedKey = `key-${random.int(0, 20)}`;
      const records = Array.from({ length: count }, (_, i) =>
        recordOf(
          byPartition ? `key-${random.int(0, 20)}` : sharedKey,
          payload(cycle, producer, sequence, i),
          producer,
          i,
        ),
      );
      const result = await sender.send(
        TOPIC,
        records,
        byPartition ? { partition: random.int(0, PARTITIONS - 1) } : {},
      );
      check(result.durability === "forced", "an acknowledgement under force must say forced");
      for (let i = 0; i < count; i++)
        acknowledged[result.partition]!.set(result.offset + i, sentText(records[i]!));
      onAck();
    }
  } catch (error) {
    if (error instanceof TortureFailure) throw error;
    // The broker died under us: whatever was not acknowledged may or may not be in the log. Failing
    // while it was still running is not expected.
    check(
      brokerKilled(),
      `cycle ${cycle}: producer ${producer} failed while the broker ran: ${String(error)}`,
    );
  }
}

async function consume(
  client: BooblikClient,
  positions: PositionFile[],
  consumed: Map<number, string>[],
  brokerKilled: () => boolean,
  toTheEnd = false,
): Promise<void> {
  await Promise.all(
    positions.map(async (position, partition) => {
      const consumer = new Consumer(client, {
        topic: TOPIC,
        partition,
        from: (await position.load()) ?? "earliest",
        maxWaitMs: 50,
        stopAtEnd: toTheEnd,
      });
      try {
        for await (const record of consumer) {
          check(
            !consumed[partition]!.has(record.offset),
            `partition ${partition}: offset ${record.offset} consumed twice`,
          );
          const value = textOfRecord(record);
          check(
            PAYLOAD.test(value),
            `partition ${partition}: offset ${record.offset} holds a record nobody sent`,
          );
          consumed[partition]!.set(record.offset, value);
          await position.save(record.offset + 1);
        }
      } catch (error) {
        if (error instanceof TortureFailure) throw error;
        // The broker died under us; the saved position is where the next cycle resumes. Failing while
        // it was still running is not expected.
        check(
          brokerKilled(),
          `partition ${partition}: the consumer failed while the broker ran: ${String(error)}`,
        );
      }
    }),
  );
}

/**
 * A group committer per partition: reads from the group's committed offset and commits the offset
 * after each record it is handed (OFFSET_COMMIT, acknowledged only after the force that covers it),
 * one commit in flight per partition, so the commits of a partition are sent in increasing order.
 */
async function commitAsGroup(
  client: BooblikClient,
  from: readonly number[],
  commits: CommitLedger,
  brokerKilled: () => boolean,
): Promise<void> {
  await Promise.all(
    from.map(async (start, partition) => {
      const consumer = new Consumer(client, { topic: TOPIC, partition, from: start, maxWaitMs: 50 });
      try {
        for await (const record of consumer) {
          const offset = record.offset + 1;
          commits.sent[partition] = Math.max(commits.sent[partition]!, offset);
          await client.commitOffsets(GROUP, [{ topic: TOPIC, partition, offset }]);
          commits.acknowledged[partition] = offset;
          commits.count++;
        }
      } catch (error) {
        if (error instanceof TortureFailure) throw error;
        check(
          brokerKilled(),
          `partition ${partition}: the group committer failed while the broker ran: ${String(error)}`,
        );
      }
    }),
  );
}

/**
 * Through the restarted broker: each partition's committed offset is at least the last commit the
 * broker acknowledged (nothing acknowledged was lost), at most the highest sent (nothing invented),
 * and at most the end of the log (a record a committer read was forced, so it survived). Returns the
 * offsets to resume from.
 */
async function verifyCommits(client: BooblikClient, commits: CommitLedger): Promise<number[]> {
  const fetched = await client.fetchOffsets(GROUP, [
    { topic: TOPIC, partitions: Array.from({ length: PARTITIONS }, (_, p) => p) },
  ]);
  const resume: number[] = [];
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const committed = fetched.find((f) => f.partition === partition)?.offset ?? -1;
    const acked = commits.acknowledged[partition]!;
    const sent = commits.sent[partition]!;
    check(
      committed >= acked,
      `partition ${partition}: committed offset ${committed} is behind the acknowledged commit ${acked}`,
    );
    check(
      committed <= sent,
      `partition ${partition}: committed offset ${committed} was never sent (highest ${sent})`,
    );
    const { nextOffset } = await client.listOffsets(TOPIC, partition);
    check(
      committed <= nextOffset,
      `partition ${partition}: committed offset ${committed} is beyond the end of the log (${nextOffset})`,
    );
    // The next cycle's committer starts here, so its commits stay at or above the acknowledged one.
    commits.acknowledged[partition] = Math.max(acked, committed);
    resume.push(Math.max(0, committed));
  }
  return resume;
}

/**
 * The records of a FETCH from `offset` as text, from `offset` on (a fetch starts with the whole
 * batch holding `offset`; the records below it are dropped, as the client library does).
 */
function valuesOf(result: FetchResult, offset: number): string[] {
  return fetchedRecords(result, offset).map(textOfRecord);
}

/**
 * A reader per partition that keeps no position: from the end of the log at the start of the cycle,
 * long polls, and records every record it is handed. Unlike the consumer, which saves its position
 * after every record and so lags behind, it stays at the end of the log, where a record shown before
 * it was forced would be read before a power cut takes it back.
 */
async function tail(
  client: BooblikClient,
  seen: Map<number, string>[],
  brokerKilled: () => boolean,
): Promise<void> {
  await Promise.all(
    seen.map(async (records, partition) => {
      try {
        let { nextOffset: offset } = await client.listOffsets(TOPIC, partition);
        for (;;) {
          const result = await client.fetch(TOPIC, partition, offset, { maxWaitMs: 50 }); // CRCs checked
          for (const value of valuesOf(result, offset)) {
            check(PAYLOAD.test(value), `partition ${partition}: offset ${offset} holds a record nobody sent`);
            const earlier = records.get(offset);
            check(
              earlier === undefined || earlier === value,
              `partition ${partition}: the tail reader saw offset ${offset} with other bytes than before`,
            );
            records.set(offset, value);
            offset++;
          }
        }
      } catch (error) {
        if (error instanceof TortureFailure) throw error;
        check(
          brokerKilled(),
          `partition ${partition}: the tail reader failed while the broker ran: ${String(error)}`,
        );
      }
    }),
  );
}

/**
 * Through the broker: the log starts at 0 and has no holes, every record is one some producer sent,
 * and every acknowledged record and every record a reader was handed is there, with its bytes.
 */
async function verifyLog(
  client: BooblikClient,
  acknowledged: Map<number, string>[],
  read: Map<number, string>[][],
): Promise<void> {
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const { logStartOffset, nextOffset } = await client.listOffsets(TOPIC, partition);
    check(logStartOffset === 0, `partition ${partition}: log start moved to ${logStartOffset}`);
    const seen = new Map<number, string>();
    let offset = 0;
    while (offset < nextOffset) {
      const result = await client.fetch(TOPIC, partition, offset, { maxBytes: 256 * 1024 }); // CRCs checked here
      check(
        result.recordCount > 0,
        `partition ${partition}: no record at ${offset} below ${nextOffset} (a hole)`,
      );
      for (const value of valuesOf(result, offset)) {
        check(PAYLOAD.test(value), `partition ${partition}: offset ${offset} holds a record nobody sent`);
        seen.set(offset, value);
        offset++;
      }
    }
    for (const [ackedOffset, value] of acknowledged[partition]!) {
      check(
        ackedOffset < nextOffset,
        `partition ${partition}: acknowledged offset ${ackedOffset} lost (log ends at ${nextOffset})`,
      );
      check(
        seen.get(ackedOffset) === value,
        `partition ${partition}: acknowledged offset ${ackedOffset} holds other bytes`,
      );
    }
    for (const [readOffset, value] of read.flatMap((maps) => [...maps[partition]!])) {
      check(
        readOffset < nextOffset,
        `partition ${partition}: offset ${readOffset}, which a reader was handed, lost (log ends at ${nextOffset})`,
      );
      check(
        seen.get(readOffset) === value,
        `partition ${partition}: offset ${readOffset}, which a reader was handed, holds other bytes now`,
      );
    }
  }
}

if (import.meta.main && process.argv.includes("--power-loss")) {
  // The same cycles with the data directory on a volatile file system and a power cut after each kill.
  const { powerLossMain } = await import("../power-loss/power-loss.ts");
  await powerLossMain(process.argv.slice(2).filter((arg) => arg !== "--power-loss"));
} else if (import.meta.main) {
  const usage = "bun run torture [--cycles 1000] [--seed S] [--write-mode file|mapped] [--power-loss]";
  const args = parseBenchArgs({ usage, options: { cycles: "1000", seed: "", "write-mode": "file" } });
  const cycles = args.integer("cycles", 1)!;
  const seed =
    Number(args.integer("seed") ?? process.env.BOOBLIK_SEED ?? (Math.random() * 2 ** 32) >>> 0) >>> 0;
  const writeMode = args.text("write-mode");
  if (writeMode !== "file" && writeMode !== "mapped") {
    console.error(`--write-mode ${writeMode}: file | mapped\nusage: ${usage}`);
    process.exit(2);
  }
  const workDir = fs.mkdtempSync(path.join(process.env.BOOBLIK_BENCH_DIR ?? "/tmp", "booblik-torture-"));
  console.log(`torture: ${cycles} cycles, seed ${seed}, write mode ${writeMode}, in ${workDir}`);
  const started = performance.now();
  try {
    const result = await runTorture({ cycles, seed, workDir, writeMode, log: (line) => console.log(line) });
    console.log(
      `torture passed: ${result.cycles} cycles, ${result.acknowledged} acknowledged records all present, ` +
        `${result.consumed} consumed exactly once, ${result.commitsAcknowledged} acknowledged offset commits none lost, in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${seed})`,
    );
    fs.rmSync(workDir, { recursive: true, force: true });
  } catch (error) {
    console.error(`torture FAILED (seed ${seed}; data kept in ${workDir}): ${(error as Error).message}`);
    process.exit(1);
  }
}
