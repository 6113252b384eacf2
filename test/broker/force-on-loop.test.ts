/**
 * Forcing on the event loop (issue 13; src/storage/group-commit.ts, src/broker/partition.ts): a
 * turn's only forced group is forced right after its pwrite on the calling thread and answered;
 * groups of several partitions go to the thread pool; a group queued behind a pool force is forced
 * on the loop once that one completed; a slow force sends the next ones to the pool, until one there
 * is fast again (FORCE_ON_LOOP_BACKOFF_MS at most). Whatever path a force takes, no waiter is told
 * before an fdatasync that started after its bytes were written returned, and a failed fdatasync
 * refuses the whole group. After a force on the loop the partition waits for the senders that force
 * answered before it forces again (the gather), for a window only. Real files through the embedded
 * broker (and, for the gather, once through the server with a load generator in another process);
 * the storage's Disk seam records every segment pwrite and fdatasync in one sequence. The seam
 * leaves out the real fdatasync of segment files: on a loaded machine one takes 10-100 ms, which
 * would trip the back-off (FORCE_ON_LOOP_SLOW_MS) and make the path a force takes depend on the
 * machine. What these tests check is the order of pwrite, fdatasync and acknowledgement; that forced
 * records survive a power cut is test/power-loss's job.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import type { AppendSender, AppendWaiter, Partition } from "../../src/broker/partition.ts";
import { IoError, PartitionFailedError } from "../../src/domain/errors.ts";
import {
  FORCE_GATHER_MAX_MS,
  FORCE_GATHER_SKIP_MAX,
  FORCE_ON_LOOP_BACKOFF_MS,
  FORCE_ON_LOOP_SLOW_MS,
} from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { BrokerServer } from "../../src/server/server.ts";
import { realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

/** One sequence for every event the test orders: segment pwrites, fdatasync starts and ends, tells. */
let seq = 0;
/** Per segment file: the sequence number of each pwrite. */
const writes = new Map<string, number[]>();
/** Per segment file: each fdatasync that returned, with when it started and ended, and on which thread. */
const syncs = new Map<string, { start: number; end: number; onLoop: boolean }[]>();
let loopSyncs = 0;
let poolSyncs = 0;
/** Set by a test: the next fdatasync on the loop fails with EIO (and does not sync). */
let failNextLoopSync = false;
/** Set by a test: the next fdatasync on the loop takes this long first. */
let slowNextLoopSyncMs = 0;
/** Set by a test: every fdatasync of a segment file on the loop takes this long first (busy). */
let slowLoopSyncsMs = 0;
/** Set by a test: every pool fdatasync of a segment file takes this long first. */
let slowPoolSyncMs = 0;
/** Set by a test: a pool fdatasync of a file whose path contains a key waits for the key's gate. */
const gates = new Map<string, Promise<void>>();

function recordSync(path: string, start: number, onLoop: boolean): void {
  const list = syncs.get(path) ?? [];
  list.push({ start, end: ++seq, onLoop });
  syncs.set(path, list);
}

const restoreDisk = useDisk({
  ...realDisk,
  pwriteAll(fd, source, start, end, position, path) {
    realDisk.pwriteAll(fd, source, start, end, position, path);
    if (path?.endsWith(".log")) {
      const list = writes.get(path) ?? [];
      list.push(++seq);
      writes.set(path, list);
    }
  },
  datasyncNow(fd, path) {
    const start = ++seq;
    if (path?.endsWith(".log")) {
      loopSyncs++;
      if (failNextLoopSync) {
        failNextLoopSync = false;
        throw new IoError("fdatasync", 5, "EIO", path);
      }
      if (slowNextLoopSyncMs > 0) {
        Bun.sleepSync(slowNextLoopSyncMs);
        slowNextLoopSyncMs = 0;
      }
      if (slowLoopSyncsMs > 0) {
        const untilMs = performance.now() + slowLoopSyncsMs;
        while (performance.now() < untilMs);
      }
    }
    if (!path?.endsWith(".log")) realDisk.datasyncNow(fd, path);
    if (path !== undefined) recordSync(path, start, true);
  },
  async datasync(fd, path) {
    const start = ++seq;
    if (path?.endsWith(".log")) {
      poolSyncs++;
      if (slowPoolSyncMs > 0) await Bun.sleep(slowPoolSyncMs);
      for (const [key, gate] of gates) if (path.includes(key)) await gate;
    }
    if (!path?.endsWith(".log")) await realDisk.datasync(fd, path);
    if (path !== undefined) recordSync(path, start, false);
  },
});
afterEach(() => {
  failNextLoopSync = false;
  slowNextLoopSyncMs = 0;
  slowPoolSyncMs = 0;
  slowLoopSyncsMs = 0;
  gates.clear();
});
process.on("exit", restoreDisk);

interface Told {
  waiter: AppendWaiter;
  /** How many pwrites the segment file had when the append was made: its bytes are in a later one. */
  writesBefore: number;
  outcome?: { firstOffset: number; durability: string; at: number } | { error: unknown; at: number };
}

/** The segment file partitions write to (one segment each in these tests). */
function segmentPath(partition: Partition): string {
  const path = [...writes.keys()].find((file) => file.startsWith(`${partition.log.directory}/`));
  if (path === undefined) throw new Error(`no segment pwrite seen under ${partition.log.directory}`);
  return path;
}

/**
 * Appends one record through the PRODUCE path's appendQueued, recording when it is told; from
 * `sender` when given (a connection, as the gather sees it), calling `then` once told.
 */
function append(partition: Partition, value: string, sender?: AppendSender, then?: () => void): Told {
  const path = segmentPath(partition);
  const told: Told = { waiter: undefined as unknown as AppendWaiter, writesBefore: writes.get(path)!.length };
  told.waiter = {
    sender,
    appended(firstOffset, _recordCount, durability) {
      told.outcome = { firstOffset, durability, at: ++seq };
      then?.();
    },
    appendFailed(error) {
      told.outcome = { error, at: ++seq };
      then?.();
    },
  };
  partition.appendQueued(batchOfValues([value]), told.waiter);
  return told;
}

/**
 * The promise: each append told `forced` was told after an fdatasync of its segment file that
 * started after the pwrite carrying its bytes (the first pwrite after the append was made; no roll
 * in these tests) and returned.
 */
function expectForcedBeforeTold(partition: Partition, appends: Told[]): void {
  const path = segmentPath(partition);
  for (const told of appends) {
    const outcome = told.outcome;
    expect(outcome !== undefined && "durability" in outcome && outcome.durability === "forced").toBe(true);
    const written = writes.get(path)![told.writesBefore];
    expect(written).toBeDefined();
    const covering = (syncs.get(path) ?? []).some((s) => s.start > written! && s.end < outcome!.at);
    expect(covering).toBe(true);
  }
}

/** A forced topic with its segment created (the header's pwrite seen) and its first force done. */
async function forcedPartition(broker: Broker, topic: string): Promise<Partition> {
  broker.createTopic(topic, { durability: "force" });
  const partition = broker.partition(topic, 0);
  // The segment header is written at creation; one append settles the directory's first force.
  await broker.append(topic, 0, batchOfValues(["warm-up"]));
  return partition;
}

describe("forcing on the event loop", () => {
  test("a turn's only forced group is forced on the loop after its pwrite; nobody is told before it returned", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const partition = await forcedPartition(broker, "solo");
      const loopForcesBefore = partition.groupCommit.loopForceCount;
      const loopSyncsBefore = loopSyncs;
      const poolSyncsBefore = poolSyncs;
      const all: Told[] = [];
      for (let turn = 0; turn < 3; turn++) {
        const group = Array.from({ length: 20 }, (_, i) => append(partition, `t${turn}.${i}`));
        // Nothing is told within the turn the appends arrived in, and nothing is visible yet.
        expect(group.every((told) => told.outcome === undefined)).toBe(true);
        await waitUntil(() => group.every((told) => told.outcome !== undefined), `turn ${turn} answered`);
        all.push(...group);
      }
      expectForcedBeforeTold(partition, all);
      expect(all.map((told) => (told.outcome as { firstOffset: number }).firstOffset)).toEqual(
        Array.from({ length: 60 }, (_, i) => i + 1),
      );
      expect(partition.groupCommit.loopForceCount - loopForcesBefore).toBe(3);
      expect(loopSyncs - loopSyncsBefore).toBe(3);
      expect(poolSyncs - poolSyncsBefore).toBe(0);
      expect(partition.visibleNextOffset).toBe(61);
    } finally {
      await broker.close();
    }
  });

  test("a failed fdatasync on the loop refuses every append of the group, and the log refuses later ones", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const partition = await forcedPartition(broker, "eio");
      failNextLoopSync = true;
      const group = Array.from({ length: 10 }, (_, i) => append(partition, `e${i}`));
      await waitUntil(() => group.every((told) => told.outcome !== undefined), "the group answered");
      for (const told of group) {
        expect(told.outcome !== undefined && "error" in told.outcome).toBe(true);
        expect((told.outcome as { error: unknown }).error).toBeInstanceOf(IoError);
      }
      // Written but never forced: not visible, and never acknowledged.
      expect(partition.visibleNextOffset).toBe(1);
      await expect(broker.append("eio", 0, batchOfValues(["after"]))).rejects.toBeInstanceOf(
        PartitionFailedError,
      );
    } finally {
      await broker.close().catch(() => undefined);
    }
  });

  test("two partitions in one turn are forced on the pool; a later turn with one goes back to the loop", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const a = await forcedPartition(broker, "pa");
      const b = await forcedPartition(broker, "pb");
      const loopBefore = loopSyncs;
      const poolBefore = poolSyncs;
      const both = [
        ...Array.from({ length: 5 }, (_, i) => append(a, `a${i}`)),
        ...Array.from({ length: 5 }, (_, i) => append(b, `b${i}`)),
      ];
      await waitUntil(() => both.every((told) => told.outcome !== undefined), "both groups answered");
      expectForcedBeforeTold(a, both.slice(0, 5));
      expectForcedBeforeTold(b, both.slice(5));
      expect(poolSyncs - poolBefore).toBe(2);
      expect(loopSyncs - loopBefore).toBe(0);
      const alone = Array.from({ length: 5 }, (_, i) => append(a, `a-alone${i}`));
      await waitUntil(() => alone.every((told) => told.outcome !== undefined), "the lone group answered");
      expectForcedBeforeTold(a, alone);
      expect(loopSyncs - loopBefore).toBe(1);
      expect(poolSyncs - poolBefore).toBe(2);
    } finally {
      await broker.close();
    }
  });

  test("a group queued behind a pool force is forced on the loop once no pool force is left", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const a = await forcedPartition(broker, "qa");
      const b = await forcedPartition(broker, "qb");
      let openA!: () => void;
      let openB!: () => void;
      gates.set("/qa", new Promise<void>((resolve) => (openA = resolve)));
      gates.set("/qb", new Promise<void>((resolve) => (openB = resolve)));
      const poolBefore = poolSyncs;
      const loopBefore = loopSyncs;
      const first = [append(a, "a0"), append(b, "b0")];
      await waitUntil(() => poolSyncs - poolBefore === 2, "both forces on the pool");
      // A's force waits at its gate: the next turn's group of A queues behind it.
      const queued = Array.from({ length: 5 }, (_, i) => append(a, `a-queued${i}`));
      await waitUntil(() => a.log.nextOffset === 7, "the queued group written");
      expect(queued.every((told) => told.outcome === undefined)).toBe(true);
      openB();
      await waitUntil(() => first[1]!.outcome !== undefined, "B answered");
      openA();
      await waitUntil(() => queued.every((told) => told.outcome !== undefined), "the queued group answered");
      expectForcedBeforeTold(a, [first[0]!, ...queued]);
      expectForcedBeforeTold(b, [first[1]!]);
      expect(poolSyncs - poolBefore).toBe(2);
      expect(loopSyncs - loopBefore).toBe(1);
    } finally {
      gates.clear();
      await broker.close();
    }
  });

  // The back-off is the process's (one disk): each test ends it before the next one starts.
  test("a force on the loop slower than FORCE_ON_LOOP_SLOW_MS sends the next force to the pool; a fast one there ends the back-off", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const partition = await forcedPartition(broker, "slow");
      slowNextLoopSyncMs = FORCE_ON_LOOP_SLOW_MS + 5;
      const loopBefore = loopSyncs;
      const poolBefore = poolSyncs;
      const slow = [append(partition, "slow")];
      await waitUntil(() => slow[0]!.outcome !== undefined, "the slow group answered");
      expect(loopSyncs - loopBefore).toBe(1);
      const backedOffAtMs = performance.now();
      // The seam's pool fdatasync returns at once: the disk is fast again.
      const next = [append(partition, "next")];
      await waitUntil(() => next[0]!.outcome !== undefined, "the next group answered");
      expect(poolSyncs - poolBefore).toBe(1);
      expect(loopSyncs - loopBefore).toBe(1);
      const after = [append(partition, "after")];
      await waitUntil(() => after[0]!.outcome !== undefined, "the group after answered");
      expect(loopSyncs - loopBefore).toBe(2);
      expect(poolSyncs - poolBefore).toBe(1);
      // Back on the loop by the fast pool force, not by the back-off's end.
      expect(performance.now() - backedOffAtMs).toBeLessThan(FORCE_ON_LOOP_BACKOFF_MS);
      expectForcedBeforeTold(partition, [...slow, ...next, ...after]);
    } finally {
      await broker.close();
    }
  });

  test("while the forces on the pool stay slow, the back-off holds, and it ends after FORCE_ON_LOOP_BACKOFF_MS at most", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const partition = await forcedPartition(broker, "stall");
      slowNextLoopSyncMs = FORCE_ON_LOOP_SLOW_MS + 5;
      const loopBefore = loopSyncs;
      const poolBefore = poolSyncs;
      const slowStartMs = performance.now();
      const slow = [append(partition, "slow")];
      await waitUntil(() => slow[0]!.outcome !== undefined, "the slow group answered");
      expect(loopSyncs - loopBefore).toBe(1);
      // Every pool fdatasync now takes longer than FORCE_ON_LOOP_SLOW_MS.
      slowPoolSyncMs = FORCE_ON_LOOP_SLOW_MS + 5;
      const stalled: Told[] = [];
      for (let i = 0; i < 3; i++) {
        const told = append(partition, `stalled${i}`);
        stalled.push(told);
        await waitUntil(() => told.outcome !== undefined, `stalled group ${i} answered`);
      }
      if (performance.now() - slowStartMs < FORCE_ON_LOOP_BACKOFF_MS) {
        expect(loopSyncs - loopBefore).toBe(1);
        expect(poolSyncs - poolBefore).toBe(3);
      }
      // Still slow on the pool: appends until one is forced on the loop, which only the back-off's
      // end allows.
      const later: Told[] = [];
      await waitUntil(
        async () => {
          const told = append(partition, `later${later.length}`);
          later.push(told);
          await waitUntil(() => told.outcome !== undefined, "a later group answered");
          return loopSyncs - loopBefore === 2;
        },
        "a force on the loop again",
        FORCE_ON_LOOP_BACKOFF_MS * 5,
        0,
      );
      expect(performance.now() - slowStartMs).toBeGreaterThanOrEqual(FORCE_ON_LOOP_BACKOFF_MS);
      expectForcedBeforeTold(partition, [...slow, ...stalled, ...later]);
    } finally {
      slowPoolSyncMs = 0;
      await broker.close();
    }
  });

  /** A sender as the server's connections are: nothing awaited yet. */
  function sender(): AppendSender {
    return { answeredBy: undefined, answeredByForce: 0 };
  }

  /**
   * `run` in the first event-loop turn at least `ms` after now: a client in another process that
   * sends its next request that long after its answer (its request reaches the broker's loop in the
   * first turn after it arrived, as a socket's would).
   */
  function afterMs(ms: number, run: () => void): void {
    const dueMs = performance.now() + ms;
    const poll = (): void => {
      if (performance.now() >= dueMs) run();
      else setImmediate(poll);
    };
    setImmediate(poll);
  }

  test("the senders a force on the loop answered are waited for, a turn at a time, before the next force", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const partition = await forcedPartition(broker, "gather");
      // Forces of 3 ms (not slow: below FORCE_ON_LOOP_SLOW_MS), so the gather waits up to
      // FORCE_GATHER_MAX_MS for the senders the last force answered.
      slowLoopSyncsMs = 3;
      const rounds = 20;
      const senders = Array.from({ length: 8 }, () => sender());
      const all: Told[][] = senders.map(() => []);
      const loopBefore = loopSyncs;
      // Half the senders append again 0.2 ms after their answer, half 0.5 ms after it (both within
      // the window): without the gather the first half is forced alone, the second half arrives
      // during that force and rides the next one, and so on: two forces a round.
      const earlyMs = FORCE_GATHER_MAX_MS / 5;
      const lateMs = FORCE_GATHER_MAX_MS / 2;
      const next = (index: number, round: number): void => {
        if (round === rounds) return;
        const then = () => afterMs(index % 2 === 0 ? earlyMs : lateMs, () => next(index, round + 1));
        all[index]!.push(append(partition, `s${index}.${round}`, senders[index], then));
      };
      for (let index = 0; index < senders.length; index++) next(index, 0);
      await waitUntil(
        () => all.every((told) => told.length === rounds && told.every((t) => t.outcome !== undefined)),
        "every round of every sender answered",
      );
      const forces = loopSyncs - loopBefore;
      // One force a round when every round is gathered; a missed gather (a sender delayed past the
      // window on a loaded machine) costs one more.
      expect(forces).toBeGreaterThanOrEqual(rounds);
      expect(forces).toBeLessThan(rounds * 1.5);
      expectForcedBeforeTold(partition, all.flat());
      // Each sender's appends in its own order.
      for (const told of all) {
        const offsets = told.map((t) => (t.outcome as { firstOffset: number }).firstOffset);
        expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      }
    } finally {
      await broker.close();
    }
  });

  test("a sender that stops appending holds the next force back for the window only; one that moves to another partition not at all", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const p = await forcedPartition(broker, "stays");
      // Not forced: its own appends never block the loop, so what `p` waits for shows alone.
      broker.createTopic("moves", { durability: "append" });
      const q = broker.partition("moves", 0);
      await broker.append("moves", 0, batchOfValues(["warm-up"]));
      // Forces of 3 ms: a gather waits up to FORCE_GATHER_MAX_MS (1 ms), hundreds of turns.
      slowLoopSyncsMs = 3;
      /** Event-loop turns from `told`'s append until it is told. */
      const turnsUntilTold = async (told: Told): Promise<number> => {
        let turns = 0;
        while (told.outcome === undefined) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          turns++;
        }
        return turns;
      };
      /** One force on `on` answering `senders`, then, right after (inside the window), `next`. */
      const roundThen = async (on: Partition, senders: AppendSender[], next: () => Told): Promise<Told> => {
        const first = senders.map((from, i) => append(on, `first${i}`, from));
        await waitUntil(
          () => first.every((told) => told.outcome !== undefined),
          "the first force answered",
          10_000,
          0,
        );
        return next();
      };
      // `moves` appends to another partition, then `stays` to the first: nobody left to wait for
      // (were `moves` still awaited, `stays` would wait the window).
      const stays = sender();
      const moves = sender();
      const afterMove = await roundThen(p, [stays, moves], () => {
        append(q, "moved", moves);
        return append(p, "stays-after-move", stays);
      });
      const afterMoveTurns = await turnsUntilTold(afterMove);
      // `stops` never appends again: `stays` waits for it, for the window only, and is answered (on
      // a partition of its own: `p`'s gather state, back-off included, is the first case's).
      const r = await forcedPartition(broker, "stops");
      const stays2 = sender();
      const stops = sender();
      const afterStop = await roundThen(r, [stays2, stops], () => append(r, "stays-after-stop", stays2));
      const afterStopTurns = await turnsUntilTold(afterStop);
      expect(afterMoveTurns).toBeLessThanOrEqual(5);
      expect(afterStopTurns).toBeGreaterThan(5);
      expect(stops.answeredBy).toBe(r);
      // Cleared by its move (its partition under `append` forces nothing that would stamp it again).
      expect(moves.answeredBy).toBeUndefined();
      expectForcedBeforeTold(p, [afterMove]);
      expectForcedBeforeTold(r, [afterStop]);
    } finally {
      await broker.close();
    }
  });

  test("after a gather whose senders did not come back, the next forces do not wait: 1, then 2, … (backing off)", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    try {
      const partition = await forcedPartition(broker, "open-loop");
      // Forces of 3 ms: a gather waits up to FORCE_GATHER_MAX_MS (1 ms), hundreds of turns.
      slowLoopSyncsMs = 3;
      /** Event-loop turns from one append by a new sender until it is told. */
      const turnsUntilTold = async (value: string): Promise<number> => {
        const told = append(partition, value, sender());
        let turns = 0;
        while (told.outcome === undefined) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          turns++;
        }
        return turns;
      };
      const first = Array.from({ length: 8 }, (_, i) => append(partition, `closed${i}`, sender()));
      await waitUntil(() => first.every((told) => told.outcome !== undefined), "the first force answered");
      const answeredMs = performance.now();
      await waitUntil(
        () => performance.now() > answeredMs + FORCE_GATHER_MAX_MS,
        "the gather's window closed",
      );
      // Producers on their own clock: every later append comes from a sender no force answered, and
      // the answered ones do not send again. "a" comes after the window: no wait, but the gather
      // saw none of its eight senders back, so it failed and the next force ("a"'s) skips its
      // gather; "b" does not wait either. "b"'s force gathers again: "c" waits its window, fails,
      // and the next two forces skip theirs ("d", "e"); "f" waits again.
      const turns: number[] = [];
      for (const value of ["a", "b", "c", "d", "e", "f"]) turns.push(await turnsUntilTold(value));
      const waited = turns.map((n) => n > 5);
      expect(waited).toEqual([false, false, true, false, false, true]);
      expect(FORCE_GATHER_SKIP_MAX).toBeGreaterThanOrEqual(2);
    } finally {
      await broker.close();
    }
  });

  test("through the server: 16 connections with one PRODUCE in flight each, in another process, share a force", async () => {
    using dir = tempDir();
    const broker = Broker.open({ dataDir: dir.path });
    const server = new BrokerServer(broker, {
      hostname: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1 << 20,
      maxConnections: 32,
      maxConnectionsPerAddress: 32,
      idleTimeoutMs: 60_000,
      requestTimeoutMs: 30_000,
      maxInboundBytes: 1 << 26,
      fetchPath: "sendfile",
      maxFetchBytes: 1 << 20,
    });
    try {
      const { port } = server.listen();
      const partition = await forcedPartition(broker, "served");
      // Forces of 3 ms: the load generator's next requests (it answers within a fraction of that)
      // arrive during the force that follows, unless the partition waits for them.
      slowLoopSyncsMs = 3;
      const loopBefore = partition.groupCommit.loopForceCount;
      const offsetBefore = partition.log.nextOffset;
      // The benchmarks' load generator: 16 connections, one 100 B record per request, one request in
      // flight each, for 2 s; it checks every answer and exits 1 on any error.
      const load = Bun.spawn(
        [
          process.execPath,
          path.join(import.meta.dir, "../../bench/load/produce-pipelined.ts"),
          String(port),
          "served",
          "100",
          "1",
          "16",
          "2",
          "1",
        ],
        { stdout: "ignore", stderr: "inherit" },
      );
      expect(await load.exited).toBe(0);
      const requests = partition.log.nextOffset - offsetBefore;
      const forces = partition.groupCommit.loopForceCount - loopBefore;
      expect(forces).toBeGreaterThan(0);
      // Without the gather the connections split into two halves that alternate: about 8 requests a
      // force (docs/benchmarks.md, "The gather"); with it close to 16.
      expect(requests / forces).toBeGreaterThan(12);
    } finally {
      slowLoopSyncsMs = 0;
      await server.stop(1_000);
      await broker.close();
    }
  });
});
