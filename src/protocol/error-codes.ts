/**
 * Wire error codes. The numbers are fixed forever (Kafka's rule: names may change, codes never);
 * test/protocol/error-codes.test.ts freezes this table.
 *
 * Error body, the payload of a response whose errorCode is not 0:
 *
 *   offset  size  field
 *   0       1     flags          bit 0: retriable (repeating the request later can succeed)
 *   1       2+n   message        string: a sentence for people
 *   …             detail         OFFSET_OUT_OF_RANGE only: logStartOffset u64, nextOffset u64
 */
import type { ErrorCode } from "../domain/errors.ts";

export const WIRE_ERROR_CODES = {
  NONE: 0,
  UNKNOWN_TOPIC_OR_PARTITION: 1,
  OFFSET_OUT_OF_RANGE: 2,
  CORRUPT_RECORD: 3,
  RECORD_TOO_LARGE: 4,
  INVALID_REQUEST: 5,
  UNSUPPORTED_VERSION: 6,
  TOPIC_EXISTS: 7,
  STORAGE_ERROR: 8,
  TOO_MANY_CONNECTIONS: 9,
  INVALID_CONFIG: 10,
  BROKER_SHUTTING_DOWN: 11,
} as const;

export type WireErrorName = keyof typeof WIRE_ERROR_CODES;

const NAMES_BY_NUMBER = new Map<number, WireErrorName>(
  Object.entries(WIRE_ERROR_CODES).map(([name, code]) => [code, name as WireErrorName]),
);

export function wireErrorName(code: number): WireErrorName | undefined {
  return NAMES_BY_NUMBER.get(code);
}

/** The wire code for a broker-side error code. Everything storage-related is STORAGE_ERROR. */
export function wireCodeOf(code: ErrorCode): number {
  switch (code) {
    case "UNKNOWN_TOPIC_OR_PARTITION":
      return WIRE_ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION;
    case "OFFSET_OUT_OF_RANGE":
      return WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE;
    case "CORRUPT_RECORD":
      return WIRE_ERROR_CODES.CORRUPT_RECORD;
    case "RECORD_TOO_LARGE":
      return WIRE_ERROR_CODES.RECORD_TOO_LARGE;
    case "INVALID_REQUEST":
      return WIRE_ERROR_CODES.INVALID_REQUEST;
    case "UNSUPPORTED_VERSION":
      return WIRE_ERROR_CODES.UNSUPPORTED_VERSION;
    case "TOPIC_EXISTS":
      return WIRE_ERROR_CODES.TOPIC_EXISTS;
    case "TOO_MANY_CONNECTIONS":
      return WIRE_ERROR_CODES.TOO_MANY_CONNECTIONS;
    case "INVALID_ARGUMENT":
      return WIRE_ERROR_CODES.INVALID_CONFIG;
    case "CLOSED":
      return WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN;
    case "STORAGE_ERROR":
    case "PARTITION_FAILED":
    case "BAD_SEGMENT_FILE":
    case "SEGMENT_FULL":
    case "DATA_DIR_LOCKED":
      return WIRE_ERROR_CODES.STORAGE_ERROR;
    case "TIMEOUT":
    case "CONNECTION_ERROR":
      return WIRE_ERROR_CODES.INVALID_REQUEST;
  }
}
