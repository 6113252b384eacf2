/**
 * Checking records that arrived from elsewhere (a FETCH response, a file handed to a tool): every
 * complete record's length and CRC. On the zero-copy path the broker never touches the bytes, so
 * this check in the client is the only one between the disk and the application.
 *
 * A trailing partial record is not an error: a fetch may end inside a record (booblik's broker ends
 * fetches on record boundaries, but a client must not depend on that), and the next fetch starts at
 * the offset after the last complete record.
 */
import { crc32c } from "../../ffi/crc32c.ts";
import { CorruptRecordError } from "../domain/errors.ts";
import { RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_LIMIT } from "../domain/limits.ts";
import { readUint32 } from "./codec.ts";

export interface VerifiedRecords {
  recordCount: number;
  /** Bytes of the complete records; anything after them is a partial record. */
  completeBytes: number;
}

/** Verifies the complete records in `bytes`; `firstOffset` only serves error messages. */
export function verifyRecords(bytes: Uint8Array, firstOffset: number): VerifiedRecords {
  let position = 0;
  let count = 0;
  const end = bytes.length;
  while (end - position >= RECORD_HEADER_BYTES) {
    const length = readUint32(bytes, position);
    if (length === 0 || length > RECORD_PAYLOAD_BYTES_LIMIT) {
      throw new CorruptRecordError(
        `record at offset ${firstOffset + count} has impossible length ${length}`,
        position,
      );
    }
    const recordEnd = position + RECORD_HEADER_BYTES + length;
    if (recordEnd > end) break; // partial record at the end
    if (crc32c(bytes, position + RECORD_HEADER_BYTES, recordEnd) !== readUint32(bytes, position + 4)) {
      throw new CorruptRecordError(
        `record at offset ${firstOffset + count} fails its CRC32C check`,
        position,
      );
    }
    count++;
    position = recordEnd;
  }
  return { recordCount: count, completeBytes: position };
}
