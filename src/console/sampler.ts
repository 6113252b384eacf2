/**
 * The console's live data: one snapshot of the broker's counters per CONSOLE_SAMPLE_INTERVAL_MS,
 * computed once and sent to every open live stream (server-sent events), so ten tabs cost what one
 * does plus ten socket writes. The topic and connection listings are computed in the same tick only
 * when some open stream shows them.
 *
 * Consumer groups: every tick also sums the lag of each group into a per-group history of
 * CONSOLE_HISTORY_SAMPLES points, so that a group's page opens with its lag over the last minutes
 * (the first groups by name, while their committed partitions add up to at most
 * CONSOLE_LAG_PARTITIONS_MAX: the sum runs whether or not a tab is open, so it is bounded). A group
 * that disappears, or falls beyond that bound, loses its history. The groups listing itself is
 * computed only while a stream shows it.
 *
 * Owns: the sample history (CONSOLE_HISTORY_SAMPLES), the groups' lag histories, the set of open
 * streams (at most CONSOLE_STREAMS_MAX) and the tick timer, which runs from the first console request on and is
 * unref'd (it never keeps the process alive). Reads counters the broker and server already keep;
 * adds nothing to their hot paths.
 */
import type { Broker } from "../broker/broker.ts";
import {
  CONSOLE_HISTORY_SAMPLES,
  CONSOLE_LAG_PARTITIONS_MAX,
  CONSOLE_SAMPLE_INTERVAL_MS,
  CONSOLE_STREAM_QUEUED_BYTES_MAX,
  CONSOLE_STREAMS_MAX,
} from "../domain/limits.ts";
import type {
  ConnectionRows,
  ConsoleSample,
  GroupDetail,
  GroupRow,
  LagPoint,
  TopicRow,
} from "./api-types.ts";
import { type ConsoleGroupsView, groupDetail, groupLags, groupRows, type TopicVisible } from "./groups.ts";

/** What the console reads of the TCP server (src/server/server.ts BrokerServer has all of it). */
export interface ConsoleServerView {
  readonly counters: {
    readonly produceRecords: number;
    readonly produceBytes: number;
    readonly fetchRecords: number;
    readonly fetchBytes: number;
    readonly requests: number;
    readonly errors: number;
  };
  readonly connectionCount: number;
  readonly connectionsPerAddress: ReadonlyMap<string, number>;
}

export interface ConsoleTargets {
  broker: Broker | undefined;
  server: ConsoleServerView | undefined;
  ready: boolean;
  /** The Kafka listener's group coordinator, when a Kafka listener runs (main.ts sets it). */
  groups?: ConsoleGroupsView | undefined;
}

export type StreamView = "overview" | "topics" | "connections" | "groups" | "group";
export const STREAM_VIEWS: readonly StreamView[] = ["overview", "topics", "connections", "groups", "group"];

interface Stream {
  view: StreamView;
  /** The group a "group" stream shows ("" for the other views). */
  group: string;
  controller: ReadableStreamDefaultController<Uint8Array>;
}

interface Totals {
  atMs: number;
  produceRecords: number;
  produceBytes: number;
  fetchRecords: number;
  fetchBytes: number;
  requests: number;
  forces: number;
  forceSeconds: number;
}

const encoder = new TextEncoder();

function event(name: string, data: unknown): Uint8Array {
  return encoder.encode(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

export class ConsoleSampler {
  private readonly targets: ConsoleTargets;
  private readonly history: ConsoleSample[] = [];
  private readonly streams = new Set<Stream>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private previous: Totals | undefined;
  /** Next offsets of the previous topic listing, for per-partition rates. */
  private previousOffsets = new Map<string, number>();
  private previousOffsetsAtMs = 0;
  private cachedRows: TopicRow[] | undefined;
  /** Each tracked group's total lag, one point per tick, oldest first. */
  private readonly lagHistory = new Map<string, LagPoint[]>();
  /** Ticks so far (tests and the bench read it to know a tick happened). */
  ticks = 0;

  /** Milliseconds of a monotonic clock; a benchmark passes its own to tick faster than real time. */
  private readonly clockMs: () => number;

  constructor(targets: ConsoleTargets, clockMs: () => number = () => performance.now()) {
    this.targets = targets;
    this.clockMs = clockMs;
  }

  get openStreams(): number {
    return this.streams.size;
  }

  get samples(): readonly ConsoleSample[] {
    return this.history;
  }

  /** Starts ticking (idempotent): the first console request calls it. */
  start(): void {
    if (this.timer !== undefined) return;
    this.previous = this.totals();
    this.timer = setInterval(() => this.tick(), CONSOLE_SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    for (const stream of this.streams) {
      try {
        stream.controller.close();
      } catch {
        // Already closed by its reader.
      }
    }
    this.streams.clear();
  }

  /**
   * A live stream for one page, or undefined when CONSOLE_STREAMS_MAX are open. It opens with the
   * history (so the charts fill at once) and the current listing of its view.
   */
  openStream(view: StreamView, signal: AbortSignal, group = ""): ReadableStream<Uint8Array> | undefined {
    if (this.streams.size >= CONSOLE_STREAMS_MAX) return undefined;
    this.start();
    let stream: Stream | undefined;
    const remove = () => {
      if (stream !== undefined) this.streams.delete(stream);
    };
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          stream = { view, group, controller };
          this.streams.add(stream);
          controller.enqueue(event("history", this.history));
          if (view === "topics") controller.enqueue(event("topics", this.topicRows()));
          if (view === "connections") controller.enqueue(event("connections", this.connectionRows()));
          if (view === "groups") controller.enqueue(event("groups", this.groupRows()));
          if (view === "group") {
            controller.enqueue(event("lag-history", this.lagHistory.get(group) ?? []));
            controller.enqueue(event("group", this.groupDetail(group)));
          }
        },
        cancel: remove,
      },
      { highWaterMark: CONSOLE_STREAM_QUEUED_BYTES_MAX, size: (chunk) => chunk?.byteLength ?? 0 },
    );
    signal.addEventListener("abort", remove, { once: true });
    return body;
  }

  private totals(): Totals {
    const counters = this.targets.server?.counters;
    const force = this.targets.broker?.forceLatency;
    return {
      atMs: this.clockMs(),
      produceRecords: counters?.produceRecords ?? 0,
      produceBytes: counters?.produceBytes ?? 0,
      fetchRecords: counters?.fetchRecords ?? 0,
      fetchBytes: counters?.fetchBytes ?? 0,
      requests: counters?.requests ?? 0,
      forces: force?.observations ?? 0,
      forceSeconds: force?.observedSum ?? 0,
    };
  }

  /** One tick: a sample for the history, then one message per view shared by its streams. */
  tick(): void {
    this.ticks++;
    const now = this.totals();
    const before = this.previous ?? now;
    this.previous = now;
    const seconds = Math.max((now.atMs - before.atMs) / 1000, 1e-3);
    const forces = now.forces - before.forces;
    const sample: ConsoleSample = {
      atMs: Date.now(),
      produceRecordsPerSecond: (now.produceRecords - before.produceRecords) / seconds,
      produceBytesPerSecond: (now.produceBytes - before.produceBytes) / seconds,
      fetchRecordsPerSecond: (now.fetchRecords - before.fetchRecords) / seconds,
      fetchBytesPerSecond: (now.fetchBytes - before.fetchBytes) / seconds,
      requestsPerSecond: (now.requests - before.requests) / seconds,
      forcesPerSecond: forces / seconds,
      forceMeanMs: forces > 0 ? ((now.forceSeconds - before.forceSeconds) / forces) * 1000 : null,
      connections: this.targets.server?.connectionCount ?? 0,
      produceRecordsTotal: now.produceRecords,
      fetchRecordsTotal: now.fetchRecords,
    };
    this.history.push(sample);
    if (this.history.length > CONSOLE_HISTORY_SAMPLES) this.history.shift();
    this.recordLag(sample.atMs);
    if (this.streams.size === 0) return;
    let groups: GroupRow[] | undefined;
    const messages = new Map<string, Uint8Array[]>();
    const sampleMessage = event("sample", sample);
    for (const stream of [...this.streams]) {
      const key = stream.view === "group" ? `group\u0000${stream.group}` : stream.view;
      let message = messages.get(key);
      if (message === undefined) {
        message = [sampleMessage];
        if (stream.view === "topics") message.push(event("topics", this.topicRows()));
        if (stream.view === "connections") message.push(event("connections", this.connectionRows()));
        if (stream.view === "groups") {
          groups ??= this.groupRows();
          message.push(event("groups", groups));
        }
        if (stream.view === "group") {
          const point = this.lagHistory.get(stream.group)?.at(-1);
          if (point !== undefined && point.atMs === sample.atMs) message.push(event("lag", point));
          message.push(event("group", this.groupDetail(stream.group)));
        }
        messages.set(key, message);
      }
      this.send(stream, message);
    }
  }

  /** Appends each tracked group's lag to its history; forgets groups no longer tracked. */
  private recordLag(atMs: number): void {
    const broker = this.targets.broker;
    const lags =
      broker === undefined || broker.isClosed || !broker.recoveryProgress.done
        ? new Map<string, number>()
        : groupLags(broker, this.targets.groups, CONSOLE_LAG_PARTITIONS_MAX);
    for (const [group, lag] of lags) {
      let points = this.lagHistory.get(group);
      if (points === undefined) {
        points = [];
        this.lagHistory.set(group, points);
      }
      points.push({ atMs, lag });
      if (points.length > CONSOLE_HISTORY_SAMPLES) points.shift();
    }
    for (const group of this.lagHistory.keys()) if (!lags.has(group)) this.lagHistory.delete(group);
  }

  /** A group's lag history (oldest first; empty for an untracked group). */
  lagHistoryOf(group: string): readonly LagPoint[] {
    return this.lagHistory.get(group) ?? [];
  }

  /** Every consumer group with its state, members and total lag (empty while the broker opens). */
  groupRows(visible?: TopicVisible): GroupRow[] {
    const broker = this.targets.broker;
    if (broker === undefined || broker.isClosed || !broker.recoveryProgress.done) return [];
    return groupRows(broker, this.targets.groups, visible);
  }

  /**
   * One group's members, offsets and lag, or null when no such group exists (now). `visible`
   * leaves out the offsets of topics the reader may not see (the live streams show everything:
   * they need DESCRIBE on the cluster).
   */
  groupDetail(group: string, visible?: TopicVisible): GroupDetail | null {
    const broker = this.targets.broker;
    if (broker === undefined || broker.isClosed || !broker.recoveryProgress.done) return null;
    return groupDetail(broker, this.targets.groups, group, visible) ?? null;
  }

  private send(stream: Stream, chunks: Uint8Array[]): void {
    try {
      // A reader that stopped reading: close its stream rather than queue without end.
      const desired = stream.controller.desiredSize;
      if (desired === null || desired <= 0) {
        this.streams.delete(stream);
        stream.controller.close();
        return;
      }
      for (const chunk of chunks) stream.controller.enqueue(chunk);
    } catch {
      this.streams.delete(stream);
    }
  }

  /**
   * The topic listing with per-partition rates since the previous listing. Computed at most about
   * once per interval: a call within half an interval of the last gets the same rows.
   */
  topicRows(): TopicRow[] {
    const broker = this.targets.broker;
    if (broker === undefined || broker.isClosed || !broker.recoveryProgress.done) return [];
    const nowMs = this.clockMs();
    if (this.cachedRows !== undefined && nowMs - this.previousOffsetsAtMs < CONSOLE_SAMPLE_INTERVAL_MS / 2) {
      return this.cachedRows;
    }
    const seconds = (nowMs - this.previousOffsetsAtMs) / 1000;
    const offsets = new Map<string, number>();
    const rows = broker.listTopics().map((topic) => ({
      name: topic.name,
      config: topic.config,
      partitions: topic.partitions.map((partition) => {
        const key = `${topic.name}\u0000${partition.partition}`;
        offsets.set(key, partition.nextOffset);
        const before = this.previousOffsets.get(key);
        return {
          partition: partition.partition,
          logStartOffset: partition.logStartOffset,
          nextOffset: partition.nextOffset,
          sizeBytes: partition.sizeBytes,
          segments: partition.segments,
          recordsPerSecond: before === undefined ? null : (partition.nextOffset - before) / seconds,
        };
      }),
    }));
    this.previousOffsets = offsets;
    this.previousOffsetsAtMs = nowMs;
    this.cachedRows = rows;
    return rows;
  }

  connectionRows(): ConnectionRows {
    const server = this.targets.server;
    if (server === undefined) return { count: 0, byAddress: [] };
    const byAddress = [...server.connectionsPerAddress]
      .map(([address, connections]) => ({ address, connections }))
      .sort((a, b) => b.connections - a.connections || a.address.localeCompare(b.address));
    return { count: server.connectionCount, byAddress };
  }
}
