/**
 * Wire error codes. The numbers are fixed forever (Kafka's rule: names may change, codes never);
 * test/protocol/codec.test.ts freezes this table.
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
  LIMIT_EXCEEDED: 12,
  AUTHENTICATION_FAILED: 13,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 14,
  INVALID_PRODUCER_EPOCH: 15,
  TOPIC_AUTHORIZATION_FAILED: 16,
  GROUP_AUTHORIZATION_FAILED: 17,
  CLUSTER_AUTHORIZATION_FAILED: 18,
  SECURITY_DISABLED: 19,
} as const;

export type WireErrorName = keyof typeof WIRE_ERROR_CODES;

const NAMES_BY_NUMBER = new Map<number, WireErrorName>(
  Object.entries(WIRE_ERROR_CODES).map(([name, code]) => [code, name as WireErrorName]),
);

export function wireErrorName(code: number): WireErrorName | undefined {
  return NAMES_BY_NUMBER.get(code);
}

/**
 * What each wire code means as an ErrorCode: the one table both directions derive from (the client
 * reads it wire to code, the broker code to wire), so the two cannot drift apart.
 */
const ERROR_CODE_OF_WIRE = {
  UNKNOWN_TOPIC_OR_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
  OFFSET_OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE",
  CORRUPT_RECORD: "CORRUPT_RECORD",
  RECORD_TOO_LARGE: "RECORD_TOO_LARGE",
  INVALID_REQUEST: "INVALID_REQUEST",
  UNSUPPORTED_VERSION: "UNSUPPORTED_VERSION",
  TOPIC_EXISTS: "TOPIC_EXISTS",
  STORAGE_ERROR: "STORAGE_ERROR",
  TOO_MANY_CONNECTIONS: "TOO_MANY_CONNECTIONS",
  INVALID_CONFIG: "INVALID_ARGUMENT",
  BROKER_SHUTTING_DOWN: "CLOSED",
  LIMIT_EXCEEDED: "LIMIT_EXCEEDED",
  AUTHENTICATION_FAILED: "AUTHENTICATION_FAILED",
  OUT_OF_ORDER_SEQUENCE_NUMBER: "OUT_OF_ORDER_SEQUENCE_NUMBER",
  INVALID_PRODUCER_EPOCH: "INVALID_PRODUCER_EPOCH",
  TOPIC_AUTHORIZATION_FAILED: "TOPIC_AUTHORIZATION_FAILED",
  GROUP_AUTHORIZATION_FAILED: "GROUP_AUTHORIZATION_FAILED",
  CLUSTER_AUTHORIZATION_FAILED: "CLUSTER_AUTHORIZATION_FAILED",
  SECURITY_DISABLED: "SECURITY_DISABLED",
} as const satisfies Record<Exclude<WireErrorName, "NONE">, ErrorCode>;

type WireCarriedCode = (typeof ERROR_CODE_OF_WIRE)[keyof typeof ERROR_CODE_OF_WIRE];

/**
 * The codes no wire code stands for, and the wider one they travel as: everything storage-related
 * is STORAGE_ERROR; client-side failures never come from a broker. The type makes this list exactly
 * the codes the table above leaves out.
 */
const FOLDED_CODES = {
  PARTITION_FAILED: "STORAGE_ERROR",
  BAD_SEGMENT_FILE: "STORAGE_ERROR",
  SEGMENT_FULL: "STORAGE_ERROR",
  DATA_DIR_LOCKED: "STORAGE_ERROR",
  TIMEOUT: "INVALID_REQUEST",
  CONNECTION_ERROR: "INVALID_REQUEST",
} as const satisfies Record<Exclude<ErrorCode, WireCarriedCode>, WireErrorName>;

/** Complete: the two `satisfies` above cover every ErrorCode exactly once between them. */
const WIRE_BY_CODE = Object.fromEntries([
  ...Object.entries(ERROR_CODE_OF_WIRE).map(([name, code]) => [
    code,
    WIRE_ERROR_CODES[name as WireErrorName],
  ]),
  ...Object.entries(FOLDED_CODES).map(([code, name]) => [code, WIRE_ERROR_CODES[name]]),
]) as Record<ErrorCode, number>;

/** The wire code for a broker-side error code. */
export function wireCodeOf(code: ErrorCode): number {
  return WIRE_BY_CODE[code];
}

/** The ErrorCode a wire code means; undefined for NONE and for numbers this version does not know. */
export function errorCodeOfWire(wireCode: number): ErrorCode | undefined {
  const name = NAMES_BY_NUMBER.get(wireCode);
  return name === undefined || name === "NONE" ? undefined : ERROR_CODE_OF_WIRE[name];
}
