/**
 * The summary statistics every benchmark prints: the median of its repeats and their range.
 *
 * One definition for all of them: before, twelve scripts had their own, and they differed for an
 * even count (the upper middle value, the lower one, or the mean of the two), so two benchmarks
 * could print different medians for the same figures. The median here is the usual one: the middle
 * value of an odd count, the mean of the two middle values of an even count.
 */

/** The median of `values` (not empty): of an even count, the mean of the two middle values. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error("the median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * `median (min-max)`, each figure written by `format` (or with that many decimals when a number);
 * `separator` goes between min and max.
 */
export function medianRange(
  values: readonly number[],
  format: number | ((value: number) => string),
  separator = "-",
): string {
  const write = typeof format === "number" ? (value: number) => value.toFixed(format) : format;
  return `${write(median(values))} (${write(Math.min(...values))}${separator}${write(Math.max(...values))})`;
}
