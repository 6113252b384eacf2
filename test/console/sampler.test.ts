/**
 * The console's sampler (src/console/sampler.ts) over a real embedded broker, with its clock
 * injected so that ticks need not wait for seconds: rates from counter deltas, the mean force
 * latency, one message shared by every stream of a view, the stream cap, and a stream whose reader
 * never reads closed once CONSOLE_STREAM_QUEUED_BYTES_MAX waits for it.
 */
import { expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import type { ConsoleSample } from "../../src/console/api-types.ts";
import { groupLags } from "../../src/console/groups.ts";
import { ConsoleSampler } from "../../src/console/sampler.ts";
import { CONSOLE_STREAM_QUEUED_BYTES_MAX, CONSOLE_STREAMS_MAX } from "../../src/domain/limits.ts";
import { tempDir } from "../helpers/temp-dir.ts";

function fakeServer() {
  return {
    counters: { produceRecords: 0, produceBytes: 0, fetchRecords: 0, fetchBytes: 0, requests: 0, errors: 0 },
    connectionCount: 2,
    connectionsPerAddress: new Map([
      ["127.0.0.1", 1],
      ["10.0.0.7", 1],
    ]),
  };
}

/** Reads what a stream has queued so far (the sampler enqueues synchronously). */
async function drain(stream: ReadableStream<Uint8Array>, chunks: number): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  for (let i = 0; i < chunks; i++) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text;
}

function eventsOf(text: string): { event: string; data: unknown }[] {
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      const [eventLine, dataLine] = block.split("\n");
      return {
        event: eventLine!.slice("event: ".length),
        data: JSON.parse(dataLine!.slice("data: ".length)),
      };
    });
}

test("rates come from counter deltas over the clock; the force mean from the histogram's sum and count", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path });
  try {
    const server = fakeServer();
    let clockMs = 0;
    const sampler = new ConsoleSampler({ broker, server, ready: true }, () => clockMs);
    sampler.start();
    server.counters.produceRecords += 3000;
    server.counters.produceBytes += 300_000;
    server.counters.fetchRecords += 1500;
    broker.forceLatency.observe(0.002);
    broker.forceLatency.observe(0.004);
    clockMs += 1500;
    sampler.tick();
    const sample = sampler.samples.at(-1)!;
    expect(sample.produceRecordsPerSecond).toBe(2000);
    expect(sample.produceBytesPerSecond).toBe(200_000);
    expect(sample.fetchRecordsPerSecond).toBe(1000);
    expect(sample.forcesPerSecond).toBeCloseTo(2 / 1.5, 9);
    expect(sample.forceMeanMs).toBeCloseTo(3, 9);
    expect(sample.connections).toBe(2);
    expect(sample.produceRecordsTotal).toBe(3000);
    // A second with no force: a gap in the chart, not a zero latency.
    clockMs += 1000;
    sampler.tick();
    expect(sampler.samples.at(-1)!.forceMeanMs).toBeNull();
    expect(sampler.samples.at(-1)!.produceRecordsPerSecond).toBe(0);
    sampler.stop();
  } finally {
    await broker.close();
  }
});

test("every stream of a view gets the same tick; the topic listing carries per-partition rates", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path });
  try {
    broker.createTopic("t", { partitions: 2, durability: "append" });
    let clockMs = 0;
    const sampler = new ConsoleSampler({ broker, server: fakeServer(), ready: true }, () => clockMs);
    const abort = new AbortController();
    const first = sampler.openStream("topics", abort.signal)!;
    const second = sampler.openStream("topics", abort.signal)!;
    const connections = sampler.openStream("connections", abort.signal)!;
    expect(sampler.openStreams).toBe(3);
    // Opening: the history and the current listing.
    expect(eventsOf(await drain(first, 2)).map((e) => e.event)).toEqual(["history", "topics"]);
    await drain(second, 2);
    await drain(connections, 2);
    await broker.produce(
      "t",
      1,
      ["a", "b", "c", "d"].map((v) => ({ key: null, value: new TextEncoder().encode(v), timestamp: 0 })),
    );
    clockMs += 2000;
    sampler.tick();
    const a = await drain(first, 2);
    const b = await drain(second, 2);
    expect(a).toBe(b);
    const [sample, topics] = eventsOf(a);
    expect(sample!.event).toBe("sample");
    expect((sample!.data as ConsoleSample).connections).toBe(2);
    expect(topics!.data).toEqual([
      {
        name: "t",
        config: expect.objectContaining({ partitions: 2, durability: "append" }),
        partitions: [
          expect.objectContaining({ partition: 0, nextOffset: 0, recordsPerSecond: 0 }),
          expect.objectContaining({ partition: 1, nextOffset: 4, recordsPerSecond: 2 }),
        ],
      },
    ]);
    const [, listed] = eventsOf(await drain(connections, 2));
    expect(listed!.data).toEqual({
      count: 2,
      byAddress: [
        { address: "10.0.0.7", connections: 1 },
        { address: "127.0.0.1", connections: 1 },
      ],
    });
    abort.abort();
    expect(sampler.openStreams).toBe(0);
    sampler.stop();
  } finally {
    await broker.close();
  }
});

test("at most CONSOLE_STREAMS_MAX streams; a stream nobody reads is closed once 1 MiB waits", async () => {
  let clockMs = 0;
  const sampler = new ConsoleSampler(
    { broker: undefined, server: fakeServer(), ready: false },
    () => clockMs,
  );
  const abort = new AbortController();
  const streams = Array.from({ length: CONSOLE_STREAMS_MAX }, () =>
    sampler.openStream("overview", abort.signal),
  );
  expect(streams.every((stream) => stream !== undefined)).toBe(true);
  expect(sampler.openStream("overview", abort.signal)).toBeUndefined();
  abort.abort();
  expect(sampler.openStreams).toBe(0);

  const stalled = sampler.openStream("overview", new AbortController().signal)!;
  const read = sampler.openStream("overview", new AbortController().signal)!;
  const reader = read.getReader();
  let ticks = 0;
  let sampleBytes = 0;
  while (sampler.openStreams === 2 && ticks < 100_000) {
    clockMs += 1000;
    sampler.tick();
    ticks++;
    const { value } = await reader.read(); // the reading stream keeps up
    sampleBytes = value!.byteLength;
    if (ticks === 1) await reader.read(); // its history came first
  }
  // Closed after about 1 MiB of samples (a tick's sample is a few hundred bytes), the reader kept.
  expect(sampler.openStreams).toBe(1);
  expect(ticks * sampleBytes).toBeGreaterThanOrEqual(CONSOLE_STREAM_QUEUED_BYTES_MAX);
  expect(ticks * sampleBytes).toBeLessThan(CONSOLE_STREAM_QUEUED_BYTES_MAX + 4 * sampleBytes);
  // What was queued is still delivered, then the stream ends.
  let delivered = 0;
  for await (const chunk of stalled) delivered += chunk.byteLength;
  expect(delivered).toBeGreaterThanOrEqual(CONSOLE_STREAM_QUEUED_BYTES_MAX);
  sampler.stop();
});

test("groups: lag per partition and per group, one history point per tick, a deleted topic takes its commits and lag with it, a gone group loses its history", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path });
  try {
    broker.createTopic("a", { partitions: 2, durability: "append" });
    broker.createTopic("b", { partitions: 1, durability: "append" });
    await broker.append("a", 0, ["1", "2", "3", "4", "5"]);
    await broker.append("a", 1, ["1", "2"]);
    await broker.append("b", 0, ["1", "2", "3"]);
    await broker.offsets.commit("g1", [
      { topic: "a", partition: 0, offset: 1, leaderEpoch: -1, metadata: null },
      { topic: "a", partition: 1, offset: 5, leaderEpoch: -1, metadata: "m" },
      { topic: "b", partition: 0, offset: 0, leaderEpoch: -1, metadata: null },
    ]);
    let clockMs = 0;
    const sampler = new ConsoleSampler({ broker, server: fakeServer(), ready: true }, () => clockMs);
    clockMs += 1000;
    sampler.tick();
    // a/0: 5 − 1; a/1: the commit is beyond the end, so 0; b/0: 3.
    expect(sampler.groupRows()).toEqual([
      { group: "g1", state: "Empty", protocolType: "", members: 0, committedPartitions: 3, lag: 7 },
    ]);
    const detail = sampler.groupDetail("g1")!;
    expect(detail.offsets.map((o) => [o.topic, o.partition, o.committedOffset, o.nextOffset, o.lag])).toEqual(
      [
        ["a", 0, 1, 5, 4],
        ["a", 1, 5, 2, 0],
        ["b", 0, 0, 3, 3],
      ],
    );
    expect(detail.offsets[1]!.metadata).toBe("m");
    expect(sampler.groupDetail("nobody")).toBeNull();
    // Deleting b deletes its commit too: no lag from it.
    await broker.deleteTopic("b");
    await broker.append("a", 0, ["6"]);
    clockMs += 1000;
    sampler.tick();
    const after = sampler.groupDetail("g1")!;
    expect(after.offsets.map((o) => `${o.topic}/${o.partition}`)).toEqual(["a/0", "a/1"]);
    expect(after.lag).toBe(5);
    expect(sampler.lagHistoryOf("g1").map((point) => point.lag)).toEqual([7, 5]);
    // A stream of the group's page opens with its history, then gets one point and the detail a tick.
    const stream = sampler.openStream("group", new AbortController().signal, "g1")!;
    clockMs += 1000;
    sampler.tick();
    const events = eventsOf(await drain(stream, 6));
    expect(events.map((e) => e.event)).toEqual(["history", "lag-history", "group", "sample", "lag", "group"]);
    expect((events[1]!.data as { lag: number }[]).map((p) => p.lag)).toEqual([7, 5]);
    expect((events[4]!.data as { lag: number }).lag).toBe(5);
    // The group's commits deleted: it is gone from the listing, and its history with it.
    await broker.offsets.deleteGroup("g1");
    clockMs += 1000;
    sampler.tick();
    expect(sampler.groupRows()).toEqual([]);
    expect(sampler.lagHistoryOf("g1")).toEqual([]);
    sampler.stop();
  } finally {
    await broker.close();
  }
});

test("the lag history sums the first groups by name while their committed partitions fit the bound", async () => {
  using dir = tempDir();
  const broker = Broker.open({ dataDir: dir.path });
  try {
    broker.createTopic("a", { partitions: 3, durability: "append" });
    await broker.append("a", 0, ["1", "2"]);
    const commit = (group: string, partitions: number[]) =>
      broker.offsets.commit(
        group,
        partitions.map((partition) => ({
          topic: "a",
          partition,
          offset: 0,
          leaderEpoch: -1,
          metadata: null,
        })),
      );
    await commit("b-second", [0]);
    await commit("a-first", [0, 1]);
    await commit("c-third", [0, 1, 2]);
    expect([...groupLags(broker, undefined, 3)]).toEqual([
      ["a-first", 2],
      ["b-second", 2],
    ]);
    // The bound stops at the first group that does not fit, so what is tracked is a prefix by name.
    expect([...groupLags(broker, undefined, 2)]).toEqual([["a-first", 2]]);
    expect([...groupLags(broker, undefined, 6)].map(([group]) => group)).toEqual([
      "a-first",
      "b-second",
      "c-third",
    ]);
  } finally {
    await broker.close();
  }
});
