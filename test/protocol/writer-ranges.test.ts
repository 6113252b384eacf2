/**
 * Ranges of the wire codec: the writer refuses integers its fields cannot hold instead of
 * wrapping them (2^32 as a partition went out as partition 0), field names in reader errors are
 * still complete, and the error body is decoded exactly like every other payload.
 */
import { expect, test } from "bun:test";
import { InvalidArgumentError } from "../../src/domain/errors.ts";
import { ByteReader, ByteWriter, ProtocolError } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { REQUEST_HEADER_BYTES, RESPONSE_HEADER_BYTES } from "../../src/protocol/frame.ts";
import {
  decodeErrorBody,
  decodeFetchRequest,
  encodeErrorResponse,
  encodeFetchRequest,
  encodeListOffsetsRequest,
} from "../../src/protocol/messages.ts";

test("u32 and u64 refuse values their field cannot hold; edge values round-trip", () => {
  const writer = new ByteWriter(8);
  for (const bad of [2 ** 32, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
    expect(() => writer.u32(bad)).toThrow(InvalidArgumentError);
  for (const bad of [2 ** 53, -2, 0.5, Number.NaN, -1])
    expect(() => writer.u64(bad)).toThrow(InvalidArgumentError);
  expect(() => writer.i64(-2)).toThrow(InvalidArgumentError);
  expect(() => writer.patchU32(0, 2 ** 32)).toThrow(/does not fit a u32 field/);
  expect(writer.position).toBe(0); // nothing half-written by a refused value
  writer
    .u32(0xffffffff)
    .u32(0)
    .u64(2 ** 53 - 1)
    .u64(0)
    .i64(-1)
    .i64(7);
  const reader = new ByteReader(writer.written());
  expect([reader.u32("a"), reader.u32("b"), reader.u64("c"), reader.u64("d")]).toEqual([
    0xffffffff,
    0,
    2 ** 53 - 1,
    0,
  ]);
  expect([reader.i64("e"), reader.i64("f")]).toEqual([-1, 7]);
  reader.expectEnd("test");
});

test("a request with an out-of-range partition is refused, not sent to partition 0", () => {
  const writer = new ByteWriter();
  expect(() => encodeListOffsetsRequest(writer, 1, { topic: "t", partition: 2 ** 32 })).toThrow(
    "4294967296 does not fit a u32 field",
  );
  writer.reset();
  const request = { topic: "t", partition: 3, offset: 2 ** 40, maxBytes: 1, maxWaitMs: 0xffffffff };
  encodeFetchRequest(writer, 1, request);
  expect(decodeFetchRequest(new ByteReader(writer.written(), REQUEST_HEADER_BYTES))).toEqual(request);
});

test("reader errors still name the length field of strings and byte fields", () => {
  expect(() => new ByteReader(new Uint8Array([0])).string("topic")).toThrow(
    "topic length at byte 0 needs 2 bytes, 1 left in the frame",
  );
  expect(() => new ByteReader(new Uint8Array([0, 5, 97])).string("topic")).toThrow(
    "topic at byte 2 needs 5 bytes, 1 left in the frame",
  );
  expect(() => new ByteReader(new Uint8Array([0, 0])).bytesField("records")).toThrow(
    "records length at byte 0 needs 4 bytes, 2 left in the frame",
  );
  expect(() => new ByteReader(new Uint8Array([0, 0, 0, 9])).bytesField("records")).toThrow(ProtocolError);
});

test("the error body decodes exactly: its detail for OFFSET_OUT_OF_RANGE, nothing left over", () => {
  const writer = new ByteWriter();
  encodeErrorResponse(writer, 4, WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE, {
    retriable: false,
    message: "offset 9 is out of range",
    logStartOffset: 2,
    nextOffset: 5,
  });
  const bytes = writer.written().slice();
  expect(
    decodeErrorBody(new ByteReader(bytes, RESPONSE_HEADER_BYTES), WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE),
  ).toEqual({ retriable: false, message: "offset 9 is out of range", logStartOffset: 2, nextOffset: 5 });
  // Read under another code, the detail is 16 unexpected bytes.
  expect(() =>
    decodeErrorBody(new ByteReader(bytes, RESPONSE_HEADER_BYTES), WIRE_ERROR_CODES.INVALID_REQUEST),
  ).toThrow("error body has 16 unexpected bytes after its last field");
  writer.reset();
  encodeErrorResponse(writer, 4, WIRE_ERROR_CODES.TOPIC_EXISTS, { retriable: true, message: "busy" });
  expect(
    decodeErrorBody(new ByteReader(writer.written(), RESPONSE_HEADER_BYTES), WIRE_ERROR_CODES.TOPIC_EXISTS),
  ).toEqual({ retriable: true, message: "busy" });
});
