/**
 * Frames: every request and response travels as one length-prefixed frame. This module owns the
 * frame headers and the API table; docs/protocol.md has the same tables in prose.
 *
 * Request frame (big-endian):
 *
 *   offset  size  field
 *   0       4     size           bytes after this field: 8 + payload
 *   4       2     apiKey         see API
 *   6       2     apiVersion     API_VERSION_MIN..API_VERSION_MAX of the API (below)
 *   8       4     correlationId  chosen by the client, echoed in the response
 *   12      …     payload
 *
 * Response frame:
 *
 *   0       4     size           bytes after this field: 6 + payload
 *   4       4     correlationId  of the request this answers
 *   8       2     errorCode      0 = success; otherwise the payload is an error body (error-codes.ts)
 *   10      …     payload
 *
 * Invariants: `size` is checked against the broker's maximum frame size before a single payload
 * byte is buffered; responses on a connection come in the order of its requests.
 */

export const SIZE_BYTES = 4;

export const REQUEST_API_KEY_OFFSET = SIZE_BYTES;
export const REQUEST_API_VERSION_OFFSET = REQUEST_API_KEY_OFFSET + 2;
export const REQUEST_CORRELATION_ID_OFFSET = REQUEST_API_VERSION_OFFSET + 2;
export const REQUEST_HEADER_BYTES = REQUEST_CORRELATION_ID_OFFSET + 4;

export const RESPONSE_CORRELATION_ID_OFFSET = SIZE_BYTES;
export const RESPONSE_ERROR_CODE_OFFSET = RESPONSE_CORRELATION_ID_OFFSET + 4;
export const RESPONSE_HEADER_BYTES = RESPONSE_ERROR_CODE_OFFSET + 2;

if (REQUEST_HEADER_BYTES !== 12 || RESPONSE_HEADER_BYTES !== 10) {
  throw new Error("frame header layout changed; update docs/protocol.md");
}

/** The smallest valid `size` of a request: a header with an empty payload. */
export const REQUEST_SIZE_MIN = REQUEST_HEADER_BYTES - SIZE_BYTES;
export const RESPONSE_SIZE_MIN = RESPONSE_HEADER_BYTES - SIZE_BYTES;

export const API = {
  METADATA: 0,
  CREATE_TOPIC: 1,
  DELETE_TOPIC: 2,
  LIST_OFFSETS: 3,
  PRODUCE: 4,
  FETCH: 5,
  STATS: 6,
  AUTHENTICATE: 7,
  // Groups and committed offsets (src/protocol/group-messages.ts).
  LIST_GROUPS: 8,
  OFFSET_COMMIT: 9,
  OFFSET_FETCH: 10,
  DELETE_GROUP: 11,
  // Changing existing topics (topic-admin.ts).
  ALTER_TOPIC: 12,
  ADD_PARTITIONS: 13,
  PURGE: 14,
  // Idempotent producers (producer-messages.ts).
  INIT_PRODUCER_ID: 15,
  // ACLs (acl-messages.ts).
  CREATE_ACLS: 16,
  DESCRIBE_ACLS: 17,
  DELETE_ACLS: 18,
} as const;

export type ApiKey = (typeof API)[keyof typeof API];

export const API_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(API).map(([name, key]) => [key, name]),
);

/**
 * Highest supported version per API. Version 1 of METADATA, LIST_OFFSETS, PRODUCE and FETCH came
 * with the record model of Kafka's RecordBatch v2 (issue 11): their bodies changed, so their
 * version 0 is gone (API_VERSION_MIN) and a version-0 request is answered UNSUPPORTED_VERSION.
 */
export const API_VERSION_MAX: Record<number, number> = {
  [API.METADATA]: 1,
  [API.CREATE_TOPIC]: 0,
  [API.DELETE_TOPIC]: 0,
  [API.LIST_OFFSETS]: 1,
  [API.PRODUCE]: 1,
  [API.FETCH]: 1,
  [API.STATS]: 0,
  [API.AUTHENTICATE]: 0,
  [API.LIST_GROUPS]: 0,
  [API.OFFSET_COMMIT]: 0,
  [API.OFFSET_FETCH]: 0,
  [API.DELETE_GROUP]: 0,
  [API.ALTER_TOPIC]: 0,
  [API.ADD_PARTITIONS]: 0,
  [API.PURGE]: 0,
  [API.INIT_PRODUCER_ID]: 0,
  [API.CREATE_ACLS]: 0,
  [API.DESCRIBE_ACLS]: 0,
  [API.DELETE_ACLS]: 0,
};

/**
 * Lowest supported version per API: this broker speaks exactly one version of each API (the format-1
 * bodies of version 0 described records this broker no longer stores).
 */
export const API_VERSION_MIN: Record<number, number> = { ...API_VERSION_MAX };

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
}

export interface ResponseHeader {
  correlationId: number;
  errorCode: number;
}

function u32(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
}

function u16(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

/** The `size` field of the frame starting at `at`, or -1 when fewer than 4 bytes are there yet. */
export function peekFrameSize(bytes: Uint8Array, at: number, end: number): number {
  return end - at < SIZE_BYTES ? -1 : u32(bytes, at);
}

/** Fills `out` from the request header at `at` (the caller made sure the header is complete). */
export function readRequestHeader(bytes: Uint8Array, at: number, out: RequestHeader): RequestHeader {
  out.apiKey = u16(bytes, at + REQUEST_API_KEY_OFFSET);
  out.apiVersion = u16(bytes, at + REQUEST_API_VERSION_OFFSET);
  out.correlationId = u32(bytes, at + REQUEST_CORRELATION_ID_OFFSET);
  return out;
}

export function readResponseHeader(bytes: Uint8Array, at: number, out: ResponseHeader): ResponseHeader {
  out.correlationId = u32(bytes, at + RESPONSE_CORRELATION_ID_OFFSET);
  out.errorCode = u16(bytes, at + RESPONSE_ERROR_CODE_OFFSET);
  return out;
}
