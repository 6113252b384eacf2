/**
 * Kafka's default partitioner for keyed records, so a key lands on the same partition here as in a
 * Kafka cluster with the same partition count: `toPositive(murmur2(keyBytes)) % partitionCount`
 * (Kafka's BuiltInPartitioner.partitionForKey; Utils.murmur2 and Utils.toPositive). Owns that
 * function and nothing else; records without a key are the producer's choice (sticky or round
 * robin), not this module's.
 *
 * murmur2 as Kafka runs it: MurmurHash2 (Austin Appleby), 32-bit, seed 0x9747b28c, m 0x5bd1e995,
 * r 24; the input in 4-byte little-endian blocks, then the 1-3 tail bytes, then the final mix
 * h ^= h >>> 13; h *= m; h ^= h >>> 15. Results are signed int32 as in Java. `toPositive` is
 * `& 0x7fffffff` (not Math.abs: abs(−2^31) is negative in Java).
 *
 * Checked against the vectors of Kafka's own UtilsTest.testMurmur2 (test/record/partitioner.test.ts).
 */
import { InvalidArgumentError } from "../domain/errors.ts";
import { PARTITIONS_MAX } from "../domain/limits.ts";

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Kafka's Utils.murmur2 of `key`: a signed 32-bit integer. */
export function murmur2(key: Uint8Array): number {
  const length = key.length;
  let h = SEED ^ length;
  const blocksEnd = length & ~3;
  for (let i = 0; i < blocksEnd; i += 4) {
    let k = key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail === 3) h ^= key[blocksEnd + 2]! << 16;
  if (tail >= 2) h ^= key[blocksEnd + 1]! << 8;
  if (tail >= 1) {
    h ^= key[blocksEnd]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's Utils.toPositive: clears the sign bit. */
export function toPositive(value: number): number {
  return value & 0x7fffffff;
}

/** The partition Kafka's default partitioner picks for a keyed record. */
export function partitionForKey(key: Uint8Array, partitionCount: number): number {
  if (!(Number.isInteger(partitionCount) && partitionCount >= 1 && partitionCount <= PARTITIONS_MAX))
    throw new InvalidArgumentError(
      `partition count ${partitionCount} is not an integer from 1 to ${PARTITIONS_MAX}`,
    );
  return toPositive(murmur2(key)) % partitionCount;
}
