/**
 * Kafka's default partitioner for keyed records (src/record/partitioner.ts).
 *
 * The murmur2 vectors are the ones in Apache Kafka's own test,
 * clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, `testMurmur2` (apache/kafka at
 * f55581d; the same six cases have been there since Kafka 0.8.2). Only the numbers are taken.
 * kafkajs's DefaultPartitioner, which its authors wrote to match the Java client, serves as a second
 * opinion for many more keys and partition counts.
 */
import { describe, expect, test } from "bun:test";
import { InvalidArgumentError } from "../../src/domain/errors.ts";
import { murmur2, partitionForKey, toPositive } from "../../src/record/partitioner.ts";
import { utf8 } from "./helpers.ts";

describe("murmur2 as Kafka's Utils.murmur2", () => {
  test.each([
    ["21", -973932308],
    ["foobar", -790332482],
    ["a-little-bit-long-string", -985981536],
    ["a-little-bit-longer-string", -1486304829],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
    ["abc", 479470107],
  ])("UtilsTest.testMurmur2: %p → %p", (key, hash) => {
    expect(murmur2(utf8(key))).toBe(hash);
  });
});

describe("partitionForKey", () => {
  test("toPositive clears the sign bit (not abs: Java's abs(−2^31) stays negative)", () => {
    expect(toPositive(-(2 ** 31))).toBe(0);
    expect(toPositive(-1)).toBe(2 ** 31 - 1);
    expect(toPositive(-973932308)).toBe(1173551340); // 1173551340 % 7 = 3
  });

  test("the UtilsTest keys land where Kafka puts them: toPositive(hash) % n", () => {
    // toPositive(-790332482) = 1357151166: % 5 = 1, % 10 = 6. toPositive(-58897971) = 2088585677: % 3 = 2.
    expect(partitionForKey(utf8("21"), 7)).toBe(3);
    expect(partitionForKey(utf8("foobar"), 5)).toBe(1);
    expect(partitionForKey(utf8("foobar"), 10)).toBe(6);
    expect(partitionForKey(utf8("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), 3)).toBe(2);
    expect(partitionForKey(utf8("abc"), 10)).toBe(7);
  });

  test("agrees with kafkajs's DefaultPartitioner for 2,000 keys over 1-64 partitions", () => {
    const createPartitioner = require("kafkajs/src/producer/partitioners/default") as () => (args: {
      topic: string;
      partitionMetadata: { partitionId: number; leader: number }[];
      message: { key: Buffer };
    }) => number;
    const kafkajs = createPartitioner();
    for (let i = 0; i < 2000; i++) {
      // Keys of every length 0-3 mod 4 (the murmur2 tail cases), the empty key first.
      const key = i === 0 ? new Uint8Array(0) : utf8(`user-${i * 7919}`.slice(0, 1 + (i % 13)));
      const partitions = 1 + (i % 64);
      const partitionMetadata = Array.from({ length: partitions }, (_, id) => ({
        partitionId: id,
        leader: 1,
      }));
      expect(partitionForKey(key, partitions)).toBe(
        kafkajs({ topic: "t", partitionMetadata, message: { key: Buffer.from(key) } }),
      );
    }
  });

  test("refuses a partition count that is not 1..PARTITIONS_MAX", () => {
    for (const count of [0, -1, 1.5, 100_000]) {
      expect(() => partitionForKey(utf8("k"), count)).toThrow(InvalidArgumentError);
    }
  });
});
