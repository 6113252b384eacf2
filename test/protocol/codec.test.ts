/**
 * The wire codec without I/O: the error-code table is frozen (docs/protocol.md's examples are checked
 * in protocol-doc.test.ts), every message round-trips, and a seeded fuzzer feeding random
 * and mutated bytes to every decoder only ever gets a value or a ProtocolError (BOOBLIK_SEED replays).
 */
import { describe, expect, test } from "bun:test";
import { ByteReader, ByteWriter, ProtocolError } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { REQUEST_HEADER_BYTES, RESPONSE_HEADER_BYTES } from "../../src/protocol/frame.ts";
import {
  decodeCreateTopicRequest,
  decodeDeleteTopicRequest,
  decodeErrorBody,
  decodeFetchRequest,
  decodeFetchResponse,
  decodeListOffsetsRequest,
  decodeListOffsetsResponse,
  decodeMetadataRequest,
  decodeMetadataResponse,
  decodeProduceRequest,
  decodeProduceResponse,
  decodeStatsResponse,
  encodeCreateTopicRequest,
  encodeErrorResponse,
  encodeFetchRequest,
  encodeFetchResponseHeader,
  encodeListOffsetsRequest,
  encodeListOffsetsResponse,
  encodeMetadataRequest,
  encodeMetadataResponse,
  encodeProduceRequest,
  encodeProduceResponse,
  type MetadataResponse,
} from "../../src/protocol/messages.ts";
import { batchOfValues, writeFramedEntry } from "../../src/record/entries.ts";
import { Random, testSeed } from "../helpers/random.ts";

const SEED = testSeed();
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

test("error codes are frozen: names may change, numbers never", () => {
  expect(WIRE_ERROR_CODES).toEqual({
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
  });
});

function payloadOf(writer: ByteWriter, headerBytes: number): ByteReader {
  const bytes = writer.written();
  return new ByteReader(bytes, headerBytes, bytes.length);
}

describe("round trips", () => {
  test("requests", () => {
    const records = new Uint8Array([...batchOfValues(["x", "yy"], 1), ...batchOfValues(["z"], 2)]);
    let w = new ByteWriter();
    encodeProduceRequest(w, 9, { topic: "tópico", partition: 3, records });
    const produce = decodeProduceRequest(payloadOf(w, REQUEST_HEADER_BYTES));
    expect(produce.topic).toBe("tópico");
    expect(produce.partition).toBe(3);
    expect(hex(produce.records)).toBe(hex(records));
    w = new ByteWriter();
    encodeFetchRequest(w, 9, {
      topic: "t",
      partition: 1,
      offset: 2 ** 53 - 1,
      maxBytes: 123,
      maxWaitMs: 456,
    });
    expect(decodeFetchRequest(payloadOf(w, REQUEST_HEADER_BYTES))).toEqual({
      topic: "t",
      partition: 1,
      offset: 2 ** 53 - 1,
      maxBytes: 123,
      maxWaitMs: 456,
    });
    w = new ByteWriter();
    encodeCreateTopicRequest(w, 1, { name: "n", configJson: '{"partitions":2}' });
    expect(decodeCreateTopicRequest(payloadOf(w, REQUEST_HEADER_BYTES))).toEqual({
      name: "n",
      configJson: '{"partitions":2}',
    });
    w = new ByteWriter();
    encodeListOffsetsRequest(w, 1, { topic: "t", partition: 2, timestampMs: 1_700_000_000_000 });
    expect(decodeListOffsetsRequest(payloadOf(w, REQUEST_HEADER_BYTES))).toEqual({
      topic: "t",
      partition: 2,
      timestampMs: 1_700_000_000_000,
    });
    w = new ByteWriter();
    encodeListOffsetsRequest(w, 1, { topic: "t", partition: 2 });
    expect(decodeListOffsetsRequest(payloadOf(w, REQUEST_HEADER_BYTES)).timestampMs).toBe(-1);
    w = new ByteWriter();
    encodeMetadataRequest(w, 1, { topics: ["a", "b"] });
    expect(decodeMetadataRequest(payloadOf(w, REQUEST_HEADER_BYTES))).toEqual({ topics: ["a", "b"] });
  });

  test("responses, including an error body with offset bounds", () => {
    let w = new ByteWriter();
    const produced = {
      firstOffset: 42,
      recordCount: 7,
      durability: "forced",
      logAppendTimeMs: 1_700_000_000_123,
    } as const;
    encodeProduceResponse(w, 1, produced);
    expect(decodeProduceResponse(payloadOf(w, RESPONSE_HEADER_BYTES))).toEqual(produced);
    w = new ByteWriter();
    const createTime = {
      firstOffset: 0,
      recordCount: 1,
      durability: "appended",
      logAppendTimeMs: -1,
    } as const;
    encodeProduceResponse(w, 1, createTime);
    expect(decodeProduceResponse(payloadOf(w, RESPONSE_HEADER_BYTES))).toEqual(createTime);
    w = new ByteWriter();
    const offsets = {
      logStartOffset: 5,
      nextOffset: 2 ** 40,
      timestampOffset: 17,
      offsetTimestampMs: 1_700_000_000_000,
    };
    encodeListOffsetsResponse(w, 1, offsets);
    expect(decodeListOffsetsResponse(payloadOf(w, RESPONSE_HEADER_BYTES))).toEqual(offsets);
    w = new ByteWriter();
    const none = { logStartOffset: 0, nextOffset: 0, timestampOffset: -1, offsetTimestampMs: -1 };
    encodeListOffsetsResponse(w, 1, none);
    expect(decodeListOffsetsResponse(payloadOf(w, RESPONSE_HEADER_BYTES))).toEqual(none);
    w = new ByteWriter();
    const metadata: MetadataResponse = {
      brokerVersion: "v",
      crc32cImplementation: "x",
      topics: [
        { name: "a", configJson: "{}", timestampType: "CreateTime", partitions: [] },
        {
          name: "b",
          configJson: "{}",
          timestampType: "LogAppendTime",
          partitions: [{ partition: 0, logStartOffset: 1, nextOffset: 2 }],
        },
      ],
    };
    encodeMetadataResponse(w, 1, metadata);
    expect(decodeMetadataResponse(payloadOf(w, RESPONSE_HEADER_BYTES))).toEqual(metadata);
    w = new ByteWriter();
    const batch = batchOfValues(["r"]);
    const records = new Uint8Array(8 + batch.length);
    writeFramedEntry(records, 0, batch);
    encodeFetchResponseHeader(w, 1, { logStartOffset: 0, nextOffset: 1, recordsBytes: records.length });
    w.ensure(records.length);
    w.bytes.set(records, w.position);
    w.position += records.length;
    const fetched = decodeFetchResponse(payloadOf(w, RESPONSE_HEADER_BYTES));
    expect(hex(fetched.records)).toBe(hex(records));
    expect(new DataView(w.bytes.buffer).getUint32(0, false)).toBe(w.position - 4);
    w = new ByteWriter();
    encodeErrorResponse(w, 1, WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE, {
      retriable: false,
      message: "m",
      logStartOffset: 3,
      nextOffset: 9,
    });
    expect(
      decodeErrorBody(payloadOf(w, RESPONSE_HEADER_BYTES), WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE),
    ).toEqual({
      retriable: false,
      message: "m",
      logStartOffset: 3,
      nextOffset: 9,
    });
  });
});

test(`decoders given random and mutated bytes return a value or throw ProtocolError, nothing else (seed ${SEED})`, () => {
  const random = new Random(SEED);
  const decoders: ((reader: ByteReader) => unknown)[] = [
    decodeMetadataRequest,
    decodeCreateTopicRequest,
    decodeDeleteTopicRequest,
    decodeListOffsetsRequest,
    decodeProduceRequest,
    decodeFetchRequest,
    decodeMetadataResponse,
    decodeListOffsetsResponse,
    decodeProduceResponse,
    decodeFetchResponse,
    decodeStatsResponse,
    (reader) => decodeErrorBody(reader, WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE),
  ];
  const seeds: Uint8Array[] = [];
  const w = new ByteWriter();
  encodeProduceRequest(w, 1, { topic: "t", partition: 0, records: batchOfValues(["a"], 0) });
  seeds.push(w.written().slice(REQUEST_HEADER_BYTES));
  w.reset();
  encodeMetadataResponse(w, 1, {
    brokerVersion: "v",
    crc32cImplementation: "x",
    topics: [
      {
        name: "t",
        configJson: "{}",
        timestampType: "LogAppendTime",
        partitions: [{ partition: 0, logStartOffset: 0, nextOffset: 1 }],
      },
    ],
  });
  seeds.push(w.written().slice(RESPONSE_HEADER_BYTES));
  let values = 0;
  let protocolErrors = 0;
  for (let trial = 0; trial < 20_000; trial++) {
    let bytes: Uint8Array;
    if (random.next() < 0.5) {
      bytes = random.bytes(random.int(0, 64));
    } else {
      bytes = seeds[random.int(0, seeds.length - 1)]!.slice();
      for (let m = random.int(1, 3); m > 0; m--) bytes[random.int(0, bytes.length - 1)] = random.int(0, 255);
      bytes = bytes.subarray(0, random.int(0, bytes.length));
    }
    const decode = decoders[random.int(0, decoders.length - 1)]!;
    try {
      decode(new ByteReader(bytes));
      values++;
    } catch (error) {
      if (!(error instanceof ProtocolError))
        throw new Error(`decoder threw ${String(error)} on ${hex(bytes)}`);
      protocolErrors++;
    }
  }
  // Both outcomes occur: the fuzz reaches past the first length check into whole decodes, and damage
  // is reported as ProtocolError (anything else already failed above).
  expect(values).toBeGreaterThan(0);
  expect(protocolErrors).toBeGreaterThan(0);
});
