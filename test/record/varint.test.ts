/**
 * Kafka varints at their edges: the byte forms Kafka's ByteUtils produces (zigzag, 7-bit groups,
 * least significant first), int32 extremes, varlongs up to ±(2^53 − 1), and every way a read can
 * fail (truncated, too long, bits beyond the width, beyond 2^53) — each a CorruptRecordError at the
 * varint's first byte, never a wrong number.
 */
import { describe, expect, test } from "bun:test";
import { CorruptRecordError, InvalidArgumentError } from "../../src/domain/errors.ts";
import {
  readUnsignedVarint,
  readVarint,
  readVarlong,
  sizeOfUnsignedVarint,
  sizeOfVarint,
  sizeOfVarlong,
  writeUnsignedVarint,
  writeVarint,
  writeVarlong,
} from "../../src/record/varint.ts";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const fromHex = (text: string) => new Uint8Array(Buffer.from(text.replaceAll(" ", ""), "hex"));

function encodeVarint(value: number): Uint8Array {
  const buffer = new Uint8Array(16);
  return buffer.subarray(0, writeVarint(buffer, 0, value));
}

function encodeVarlong(value: number): Uint8Array {
  const buffer = new Uint8Array(16);
  return buffer.subarray(0, writeVarlong(buffer, 0, value));
}

function decode(read: typeof readVarint, bytes: Uint8Array): { value: number; consumed: number } {
  const cursor = { position: 0 };
  const value = read(bytes, cursor, bytes.length);
  return { value, consumed: cursor.position };
}

function expectCorrupt(action: () => unknown, reason: RegExp, position = 0): void {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(CorruptRecordError);
    expect((error as CorruptRecordError).reason).toMatch(reason);
    expect((error as CorruptRecordError).position).toBe(position);
    return;
  }
  throw new Error("expected a CorruptRecordError");
}

// The expected byte forms were produced by kafkajs 2.2.4's Encoder (writeVarInt/writeVarLong), an
// implementation independent of ours; the cross-check at the end compares many more values with it.
describe("zigzag varint (int32)", () => {
  test.each([
    [0, "00"],
    [-1, "01"],
    [1, "02"],
    [-2, "03"],
    [63, "7e"],
    [-64, "7f"],
    [64, "8001"],
    [-65, "8101"],
    [300, "d804"],
    [2 ** 31 - 1, "feffffff0f"],
    [-(2 ** 31), "ffffffff0f"],
  ])("%i encodes as %s and decodes back", (value, bytes) => {
    const encoded = encodeVarint(value);
    expect(hex(encoded)).toBe(bytes);
    expect(sizeOfVarint(value)).toBe(encoded.length);
    expect(decode(readVarint, encoded)).toEqual({ value, consumed: encoded.length });
  });

  test("every size boundary round-trips and sizeOf agrees with the writer", () => {
    for (let bits = 0; bits <= 31; bits++) {
      for (const value of [2 ** bits - 1, 2 ** bits, -(2 ** bits), -(2 ** bits) - 1]) {
        if (value > 2 ** 31 - 1 || value < -(2 ** 31)) continue;
        const encoded = encodeVarint(value);
        expect(sizeOfVarint(value)).toBe(encoded.length);
        expect(decode(readVarint, encoded).value).toBe(value);
      }
    }
  });

  test("every value of one and two bytes (-8192..8191, the reader's fast paths) round-trips", () => {
    for (let value = -8192; value <= 8191; value++) {
      const encoded = encodeVarint(value);
      expect(encoded.length).toBe(value >= -64 && value <= 63 ? 1 : 2);
      const decoded = decode(readVarint, encoded);
      if (decoded.value !== value || decoded.consumed !== encoded.length)
        expect(decoded).toEqual({ value, consumed: encoded.length });
    }
  });

  test("a non-int32 is refused on write, not wrapped", () => {
    for (const value of [2 ** 31, -(2 ** 31) - 1, 1.5, Number.NaN]) {
      expect(() => encodeVarint(value)).toThrow(InvalidArgumentError);
    }
  });

  test("a redundant (non-canonical) but short encoding is accepted, as Kafka does", () => {
    expect(decode(readVarint, fromHex("8000"))).toEqual({ value: 0, consumed: 2 });
  });

  test("truncated: the last byte still has the continuation bit", () => {
    expectCorrupt(() => decode(readVarint, fromHex("80")), /truncated/);
    expectCorrupt(() => decode(readVarint, fromHex("ffffff")), /truncated/);
    expectCorrupt(() => decode(readVarint, new Uint8Array(0)), /truncated/);
  });

  test("a read stops at `end`, not at the end of the array", () => {
    const bytes = fromHex("8001");
    expectCorrupt(() => readVarint(bytes, { position: 0 }, 1), /truncated/);
  });

  test("too long: six bytes, or a fifth byte with bits beyond 32", () => {
    expectCorrupt(() => decode(readVarint, fromHex("ffffffffff01")), /longer than 5 bytes/);
    expectCorrupt(() => decode(readVarint, fromHex("ffffffff1f")), /bits beyond 32/);
  });

  test("the error names the varint's first byte in the array", () => {
    const bytes = fromHex("00 00 00 80 80");
    expectCorrupt(() => readVarint(bytes, { position: 3 }, bytes.length), /truncated/, 3);
  });

  test("unsigned varints (flexible-version lengths) are not zigzag", () => {
    const buffer = new Uint8Array(8);
    const end = writeUnsignedVarint(buffer, 0, 300);
    expect(hex(buffer.subarray(0, end))).toBe("ac02");
    expect(sizeOfUnsignedVarint(300)).toBe(2);
    expect(decode(readUnsignedVarint, buffer.subarray(0, end)).value).toBe(300);
    const max = buffer.subarray(0, writeUnsignedVarint(buffer, 0, 2 ** 32 - 1));
    expect(hex(max)).toBe("ffffffff0f");
    expect(decode(readUnsignedVarint, max).value).toBe(2 ** 32 - 1);
  });
});

describe("zigzag varlong (int64 as a JS number)", () => {
  test.each([
    [0, "00"],
    [-1, "01"],
    [1, "02"],
    [63, "7e"],
    [-64, "7f"],
    [64, "8001"],
    [2 ** 31, "8080808010"],
    [-(2 ** 31) - 1, "8180808010"],
    // A millisecond timestamp (2023-11-14T22:13:20Z) and a day back as a delta.
    [1_700_000_000_000, "80a0abfef962"],
    [-86_400_000, "ffefb252"],
    [Number.MAX_SAFE_INTEGER, "feffffffffffff1f"],
    [-Number.MAX_SAFE_INTEGER, "fdffffffffffff1f"],
  ])("%p encodes as %s and decodes back", (value, bytes) => {
    const encoded = encodeVarlong(value);
    expect(hex(encoded)).toBe(bytes);
    expect(sizeOfVarlong(value)).toBe(encoded.length);
    expect(decode(readVarlong, encoded)).toEqual({ value, consumed: encoded.length });
  });

  test("every power of two up to 2^52, both signs, round-trips and sizeOf agrees", () => {
    for (let bits = 0; bits <= 52; bits++) {
      for (const value of [2 ** bits - 1, 2 ** bits, -(2 ** bits), -(2 ** bits) + 1]) {
        const encoded = encodeVarlong(value);
        expect(sizeOfVarlong(value)).toBe(encoded.length);
        expect(decode(readVarlong, encoded).value).toBe(value);
      }
    }
  });

  test("beyond 2^53 is an error on read, never a rounded number", () => {
    // 2^53 and −2^53, the first values past the safe range, as kafkajs's Encoder writes them.
    expectCorrupt(() => decode(readVarlong, fromHex("8080808080808020")), /beyond 2\^53/);
    expectCorrupt(() => decode(readVarlong, fromHex("ffffffffffffff1f")), /beyond 2\^53/);
    // Java's Long.MAX_VALUE and Long.MIN_VALUE, as Kafka would write them.
    expectCorrupt(() => decode(readVarlong, fromHex("feffffffffffffffff01")), /beyond 2\^53/);
    expectCorrupt(() => decode(readVarlong, fromHex("ffffffffffffffffff01")), /beyond 2\^53/);
  });

  test("beyond 2^53 is refused on write", () => {
    for (const value of [2 ** 53, -(2 ** 53), 1e300, 0.5]) {
      expect(() => encodeVarlong(value)).toThrow(InvalidArgumentError);
    }
  });

  test("too long, bits beyond 64, and truncated are errors", () => {
    expectCorrupt(() => decode(readVarlong, fromHex("8080808080808080808001")), /longer than 10 bytes/);
    expectCorrupt(() => decode(readVarlong, fromHex("80808080808080808002")), /bits beyond 64/);
    expectCorrupt(() => decode(readVarlong, fromHex("8080")), /truncated/);
  });
});

describe("agrees with kafkajs's Encoder and Decoder (an independent implementation)", () => {
  const Encoder = require("kafkajs/src/protocol/encoder") as {
    new (): {
      writeVarInt(value: number): { buffer: Buffer };
      writeVarLong(value: unknown): { buffer: Buffer };
    };
  };
  const Long = require("kafkajs/src/utils/long") as { fromNumber(value: number): unknown };
  // A fixed-seed generator: the same values on every run.
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };

  test("10,000 int32 varints and 10,000 safe varlongs encode byte for byte alike", () => {
    for (let i = 0; i < 10_000; i++) {
      const int32 = Math.floor(next() * 2 ** 32) - 2 ** 31;
      expect(hex(encodeVarint(int32))).toBe(new Encoder().writeVarInt(int32).buffer.toString("hex"));
      const magnitude = Math.floor(next() * 2 ** Math.floor(next() * 53));
      const int53 = next() < 0.5 ? -magnitude : magnitude;
      expect(hex(encodeVarlong(int53))).toBe(
        new Encoder().writeVarLong(Long.fromNumber(int53)).buffer.toString("hex"),
      );
    }
  });
});
