/**
 * Branded ids. The brand makes an `Offset` impossible to pass where a `Position` is expected, while
 * staying a plain JS number at run time (no boxing, no BigInt). Values from outside enter through the
 * `to*` functions, which validate; code that derives one id from another (offset + count) casts.
 */
import { InvalidArgumentError } from "./errors.ts";
import { OFFSET_MAX, PARTITIONS_MAX, TOPIC_NAME_LENGTH_MAX } from "./limits.ts";

/** Logical position of a record in a partition: 0, 1, 2, … without gaps. */
export type Offset = number & { readonly __brand: "Offset" };
/** Byte position inside one segment file (header included). Fits an int32 (DESIGN invariant 6). */
export type Position = number & { readonly __brand: "Position" };
export type TopicName = string & { readonly __brand: "TopicName" };
export type PartitionId = number & { readonly __brand: "PartitionId" };

export function toOffset(value: number, what = "offset"): Offset {
  if (!Number.isSafeInteger(value) || value < 0 || value > OFFSET_MAX) {
    throw new InvalidArgumentError(`${what} must be an integer in [0, 2^53), got ${value}`);
  }
  return value as Offset;
}

const TOPIC_NAME_PATTERN = /^[A-Za-z0-9._-]+$/;

/** ASCII letters, digits, `.`, `_`, `-`; 1 to 249 characters; not `.` or `..` (they are directories). */
export function toTopicName(value: string): TopicName {
  if (typeof value !== "string" || value.length === 0) {
    throw new InvalidArgumentError("topic name must not be empty");
  }
  if (value.length > TOPIC_NAME_LENGTH_MAX) {
    throw new InvalidArgumentError(
      `topic name is ${value.length} characters long; the limit is ${TOPIC_NAME_LENGTH_MAX}`,
    );
  }
  if (!TOPIC_NAME_PATTERN.test(value)) {
    throw new InvalidArgumentError(
      `topic name ${JSON.stringify(value)} may contain only ASCII letters, digits, '.', '_' and '-'`,
    );
  }
  if (value === "." || value === "..") {
    throw new InvalidArgumentError(`topic name ${JSON.stringify(value)} is reserved`);
  }
  return value as TopicName;
}

export function toPartitionId(value: number): PartitionId {
  if (!Number.isInteger(value) || value < 0 || value >= PARTITIONS_MAX) {
    throw new InvalidArgumentError(`partition must be an integer in [0, ${PARTITIONS_MAX}), got ${value}`);
  }
  return value as PartitionId;
}
