/**
 * The record browser's data: one page of a partition's records from an offset, before an offset,
 * or from a time, read through the broker layer (`Partition.read` gives framed entries, walked here
 * with `scanEntries` and `forEachRecord`). Never loads a whole partition: a page is at most
 * CONSOLE_RECORDS_PAGE_MAX records, read CONSOLE_RECORDS_READ_BYTES at a time (a read always
 * returns at least one whole entry, so one large batch is read whole), and each key, value and
 * header value is cut to CONSOLE_FIELD_PREVIEW_BYTES (its full size is sent along).
 */
import type { Broker } from "../broker/broker.ts";
import { InvalidArgumentError } from "../domain/errors.ts";
import {
  CONSOLE_FIELD_PREVIEW_BYTES,
  CONSOLE_RECORDS_PAGE_DEFAULT,
  CONSOLE_RECORDS_PAGE_MAX,
  CONSOLE_RECORDS_READ_BYTES,
} from "../domain/limits.ts";
import { forEachRecord, recordHeaders, recordKey, recordValue } from "../record/batch.ts";
import { scanEntries } from "../record/entries.ts";

export interface RecordRow {
  offset: number;
  timestamp: number;
  /** Base64 of at most CONSOLE_FIELD_PREVIEW_BYTES, or null (Kafka's null). */
  key: string | null;
  value: string | null;
  /** Full sizes in bytes (−1 for null). */
  keyBytes: number;
  valueBytes: number;
  headers: { key: string; value: string | null; valueBytes: number }[];
}

export interface RecordsPage {
  topic: string;
  partition: number;
  logStartOffset: number;
  nextOffset: number;
  /** The first offset of the page, and the one after its last record (the next page's start). */
  fromOffset: number;
  toOffset: number;
  /** When the page was asked by time: the time, and the offset it found (or null: none so late). */
  timestampMs?: number;
  records: RecordRow[];
}

function preview(bytes: Uint8Array | null): string | null {
  if (bytes === null) return null;
  const cut = bytes.subarray(0, CONSOLE_FIELD_PREVIEW_BYTES);
  return Buffer.from(cut.buffer, cut.byteOffset, cut.byteLength).toString("base64");
}

/** A whole number within [min, max] from a query parameter, or a clear error naming it. */
export function integerParameter(
  name: string,
  text: string | null,
  min: number,
  max: number,
): number | undefined {
  if (text === null || text === "") return undefined;
  if (
    !/^-?\d+$/.test(text) ||
    !Number.isSafeInteger(Number(text)) ||
    Number(text) < min ||
    Number(text) > max
  ) {
    throw new InvalidArgumentError(
      `${name} must be a whole number in [${min}, ${max}], got ${JSON.stringify(text)}`,
    );
  }
  return Number(text);
}

export interface RecordsQuery {
  topic: string;
  partition: number;
  /** Start here (clamped into the partition). */
  offset?: number;
  /** Or end just before here (the previous page). */
  before?: number;
  /** Or start at the first record at or after this time. */
  timestampMs?: number;
  limit?: number;
}

export function readRecordsPage(broker: Broker, query: RecordsQuery): RecordsPage {
  const limit = Math.min(query.limit ?? CONSOLE_RECORDS_PAGE_DEFAULT, CONSOLE_RECORDS_PAGE_MAX);
  const partition = broker.partition(query.topic, query.partition);
  const described = broker.describeTopic(query.topic).partitions[query.partition]!;
  const logStartOffset = described.logStartOffset;
  const nextOffset = described.nextOffset;
  const clamp = (offset: number) => Math.min(Math.max(offset, logStartOffset), nextOffset);
  let fromOffset: number;
  if (query.timestampMs !== undefined) {
    fromOffset = clamp(partition.offsetForTimestamp(query.timestampMs)?.offset ?? nextOffset);
  } else if (query.before !== undefined) {
    fromOffset = clamp(query.before - limit);
  } else {
    fromOffset = clamp(query.offset ?? logStartOffset);
  }
  const untilOffset =
    query.before !== undefined ? clamp(query.before) : Math.min(fromOffset + limit, nextOffset);
  const records: RecordRow[] = [];
  let position = fromOffset;
  while (position < untilOffset) {
    const read = partition.read(position, CONSOLE_RECORDS_READ_BYTES);
    if (read.records.length === 0) break;
    const bytes = read.records;
    const scan = scanEntries(
      bytes,
      0,
      bytes.length,
      { framing: "framed", verifyCrc: false },
      undefined,
      (_entry, batchStart, batchEnd, header) => {
        forEachRecord(
          bytes,
          batchStart,
          batchEnd,
          (record) => {
            if (record.offset < position || record.offset >= untilOffset) return;
            const key = recordKey(record);
            const value = recordValue(record);
            records.push({
              offset: record.offset,
              timestamp: record.timestamp,
              key: preview(key),
              value: preview(value),
              keyBytes: key === null ? -1 : key.length,
              valueBytes: value === null ? -1 : value.length,
              headers: recordHeaders(record).map((h) => ({
                key: h.key,
                value: preview(h.value),
                valueBytes: h.value === null ? -1 : h.value.length,
              })),
            });
          },
          header,
        );
      },
    );
    // The read CRC-checked its entries (Partition.read); a scan that passes none means no progress.
    if (scan.entryCount === 0 || scan.nextOffset <= position) break;
    position = scan.nextOffset;
  }
  return {
    topic: query.topic,
    partition: query.partition,
    logStartOffset,
    nextOffset,
    fromOffset,
    toOffset: records.length === 0 ? fromOffset : records.at(-1)!.offset + 1,
    ...(query.timestampMs === undefined ? {} : { timestampMs: query.timestampMs }),
    records,
  };
}
