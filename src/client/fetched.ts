/**
 * What a FETCH brought, checked and cut into entries: the client side of docs/protocol.md "How to
 * consume". Owns the rules a consumer applies to the framed entries a broker sends (a FETCH answer
 * is the stored bytes, sent with sendfile and never read by the broker, so this is the only check
 * between the disk and the application); the walking itself is src/record's (`scanEntries` over the
 * entries, `RecordBatchReader` over each batch's records): nothing here parses a record.
 *
 * Invariants:
 * - Every whole entry's frame CRC32C (which covers the stamped batch) and batch CRC32C (Kafka's,
 *   over attributes..end) are checked before any of its records is handed out. A mismatch, a bad
 *   length, a bad magic or an offset gap after at least one valid entry ends the answer there: the
 *   entries before it are handed out, and the next fetch starts at the damaged entry, whose error
 *   the broker names (file, file position, offset, next readable offset; it checks the first entry
 *   of every answer). In the first entry it is a CorruptRecordError naming the offset and the byte
 *   position inside the response's records (damage between the broker's check and here).
 * - A trailing partial entry is not an error (a broker that trims at a byte limit, or a proxy, may
 *   cut one): it is left out, and the next fetch starts at its first offset.
 * - The first entry must contain the requested offset (the broker starts with the entry that holds
 *   it); records below the requested offset are dropped by the reader of the entries, never
 *   handed out (Kafka's contract for a fetch that starts inside a batch).
 */
import { CorruptRecordError } from "../domain/errors.ts";
import { ENTRY_HEADER_BYTES } from "../domain/limits.ts";
import {
  computeBatchCrc,
  type DecodedHeader,
  type RecordBatchReader,
  type RecordView,
  recordHeaders,
  recordKey,
  recordValue,
} from "../record/batch.ts";
import { newEntryScanResult, scanEntries } from "../record/entries.ts";

/** The checked part of a FETCH answer. */
export interface CheckedEntries {
  /** Bytes of the whole entries; what follows them (a partial entry) is not used. */
  completeBytes: number;
  /** BaseOffset of the first entry (≤ the requested offset), or the requested offset when empty. */
  firstOffset: number;
  /** The offset after the last whole entry: where the next fetch starts. */
  nextFetchOffset: number;
  /** [batchStart, batchEnd) of each whole entry's batch, flattened. */
  batchBounds: number[];
}

/**
 * Checks the framed entries `bytes` of a FETCH from `offset` (see the invariants above). Damage
 * after at least one whole, valid entry ends the answer there (the valid entries are handed out, and
 * the next fetch, from the damaged entry, gets the broker's error naming its file and file
 * position). Damage in the first entry throws CorruptRecordError naming the offset.
 */
export function checkFetchedEntries(bytes: Uint8Array, offset: number): CheckedEntries {
  const batchBounds: number[] = [];
  // The first entry whose batch CRC fails: where it starts, its BaseOffset, why.
  let batchCrcFault: { entryPosition: number; baseOffset: number; detail: string } | undefined;
  const scan = scanEntries(
    bytes,
    0,
    bytes.length,
    { framing: "framed", verifyCrc: true },
    newEntryScanResult(),
    (entryPosition, batchStart, batchEnd, header) => {
      if (batchCrcFault !== undefined) return;
      const actual = computeBatchCrc(bytes, batchStart, batchEnd);
      if (actual !== header.crc) {
        batchCrcFault = {
          entryPosition,
          baseOffset: header.baseOffset,
          detail: `the entry at offset ${header.baseOffset} is damaged (batch CRC32C 0x${actual.toString(16)}, the batch says 0x${header.crc.toString(16)})`,
        };
        return;
      }
      batchBounds.push(batchStart, batchEnd);
    },
  );
  let completeBytes = scan.endPosition;
  let nextFetchOffset = scan.nextOffset;
  let entries = scan.entryCount;
  if (batchCrcFault !== undefined) {
    completeBytes = batchCrcFault.entryPosition;
    nextFetchOffset = batchCrcFault.baseOffset;
    entries = batchBounds.length / 2;
    if (entries === 0)
      throw new CorruptRecordError(
        `fetched entries from offset ${offset}: ${batchCrcFault.detail}`,
        batchCrcFault.entryPosition,
      );
  } else if (scan.stop !== "end" && scan.stop !== "truncated" && scan.entryCount === 0) {
    throw new CorruptRecordError(
      `fetched entries from offset ${offset}: the first entry (containing offset ${offset}) is damaged (${scan.stop}: ${scan.detail})`,
      scan.endPosition,
    );
  }
  if (entries === 0) return { completeBytes: 0, firstOffset: offset, nextFetchOffset: offset, batchBounds };
  const firstOffset = readFirstBaseOffset(bytes);
  if (firstOffset > offset || nextFetchOffset <= offset)
    throw new CorruptRecordError(
      `a FETCH from offset ${offset} returned entries covering offsets ${firstOffset} to ${nextFetchOffset - 1}`,
      0,
    );
  return { completeBytes, firstOffset, nextFetchOffset, batchBounds };
}

/** The BaseOffset of the first entry (frame header, then the batch's first 8 bytes). */
function readFirstBaseOffset(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return view.getUint32(ENTRY_HEADER_BYTES) * 2 ** 32 + view.getUint32(ENTRY_HEADER_BYTES + 4);
}

/**
 * A consumed record (docs/client.md). Key, value and header values are views into the bytes of
 * the fetch that brought them, which the client never reuses: they stay valid as long as they are
 * referenced.
 */
export interface ConsumedRecord {
  topic: string;
  partition: number;
  offset: number;
  /** Milliseconds since the epoch: CreateTime from the producer, or the broker's LogAppendTime. */
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: DecodedHeader[];
}

const NO_HEADERS: DecodedHeader[] = [];
Object.freeze(NO_HEADERS);

/** The record under the reader's view as a ConsumedRecord (views into its bytes, no copies). */
export function consumedRecord(topic: string, partition: number, view: RecordView): ConsumedRecord {
  return {
    topic,
    partition,
    offset: view.offset,
    timestamp: view.timestamp,
    key: recordKey(view),
    value: recordValue(view),
    headers: view.headerCount === 0 ? NO_HEADERS : recordHeaders(view),
  };
}

/**
 * Calls `visit` for every record at or after `fromOffset` in the checked entries (records below it,
 * in the first entry of a fetch that started inside a batch, are skipped). Returns how many were
 * visited. Uses one reader for every batch.
 */
export function forEachFetchedRecord(
  bytes: Uint8Array,
  batchBounds: readonly number[],
  fromOffset: number,
  reader: RecordBatchReader,
  visit: (view: RecordView) => void,
): number {
  let visited = 0;
  for (let i = 0; i < batchBounds.length; i += 2) {
    reader.open(bytes, batchBounds[i]!, batchBounds[i + 1]!);
    for (let view = reader.next(); view !== undefined; view = reader.next()) {
      if (view.offset < fromOffset) continue;
      visit(view);
      visited++;
    }
  }
  return visited;
}
