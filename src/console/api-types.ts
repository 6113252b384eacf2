/**
 * The shapes the console's data API sends (src/console/sampler.ts, console-http.ts) and its page
 * reads (src/console/app). Types only, importing nothing, so the page's type check (its own
 * tsconfig, with the DOM library) does not pull in the broker.
 */

/** One second of the broker, as rates over the interval since the previous sample. */
export interface ConsoleSample {
  /** Milliseconds since the epoch. */
  atMs: number;
  produceRecordsPerSecond: number;
  produceBytesPerSecond: number;
  fetchRecordsPerSecond: number;
  fetchBytesPerSecond: number;
  requestsPerSecond: number;
  forcesPerSecond: number;
  /** Mean duration of the forces that ended in the interval; null when none did. */
  forceMeanMs: number | null;
  connections: number;
  /** Totals, so a page can show exact counts next to the rates. */
  produceRecordsTotal: number;
  fetchRecordsTotal: number;
}

export interface PartitionRow {
  partition: number;
  logStartOffset: number;
  nextOffset: number;
  sizeBytes: number;
  segments: number;
  /** Offsets appended per second since the previous listing; null on the first listing. */
  recordsPerSecond: number | null;
}

/** A topic's settings as the console shows them (a subset of src/broker/topic-config.ts TopicConfig). */
export interface TopicSettings {
  partitions: number;
  durability: string;
  flushIntervalMs: number;
  writeMode: string;
  segmentBytes: number;
  maxRecordBytes: number;
  retentionBytes: number | null;
  retentionMs: number | null;
  timestampType?: string;
}

export interface TopicRow {
  name: string;
  config: TopicSettings;
  partitions: PartitionRow[];
}

export interface ConnectionRows {
  count: number;
  byAddress: { address: string; connections: number }[];
}
