/** Ids are validated where they enter: topic names, partitions, offsets. */
import { expect, test } from "bun:test";
import { InvalidArgumentError } from "../../src/domain/errors.ts";
import { toOffset, toPartitionId, toTopicName } from "../../src/domain/ids.ts";

test("topic names: ASCII letters, digits, '.', '_', '-'; at most 249 characters; not '.' or '..'", () => {
  for (const good of ["orders", "a", "A.b_c-9", "x".repeat(249), "..."])
    expect(toTopicName(good)).toBe(good as never);
  for (const bad of [
    "",
    ".",
    "..",
    "x".repeat(250),
    "with space",
    "slash/name",
    "ünïcode",
    "tab\t",
    "nul\0",
  ]) {
    expect(() => toTopicName(bad)).toThrow(InvalidArgumentError);
  }
  expect(() => toTopicName("x".repeat(250))).toThrow(/250 characters long; the limit is 249/);
});

test("offsets and partitions are non-negative safe integers within their limits", () => {
  expect(toOffset(0)).toBe(0 as never);
  expect(toOffset(2 ** 53 - 1)).toBe((2 ** 53 - 1) as never);
  for (const bad of [-1, 0.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY])
    expect(() => toOffset(bad)).toThrow(InvalidArgumentError);
  expect(toPartitionId(0)).toBe(0 as never);
  for (const bad of [-1, 1.5, 1024]) expect(() => toPartitionId(bad)).toThrow(InvalidArgumentError);
});
