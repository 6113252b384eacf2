/** The times the CLI reads (`--timestamp`, `--from-time`, `--at`): each form, and each refusal. */
import { expect, test } from "bun:test";
import { parseTimeArgument } from "../../src/cli/time-argument.ts";

const NOW = 1_700_000_000_000;
const parse = (text: string) => parseTimeArgument("--at", text, NOW);

test("milliseconds, now, durations before now, ISO 8601 with a zone, a date", () => {
  expect(parse("0")).toBe(0);
  expect(parse("1700000000123")).toBe(1_700_000_000_123);
  expect(parse("now")).toBe(NOW);
  expect(parse("-1h")).toBe(NOW - 3_600_000);
  expect(parse("-30m")).toBe(NOW - 1_800_000);
  expect(parse("-250ms")).toBe(NOW - 250);
  expect(parse("-7d")).toBe(NOW - 7 * 86_400_000);
  expect(parse("2023-11-14T22:13:20Z")).toBe(1_700_000_000_000);
  expect(parse("2023-11-14T22:13:20.123Z")).toBe(1_700_000_000_123);
  expect(parse("2023-11-15T00:13:20+02:00")).toBe(1_700_000_000_000);
  expect(parse("2023-11-14T22:13Z")).toBe(1_699_999_980_000);
  expect(parse("2023-11-14")).toBe(Date.UTC(2023, 10, 14));
});

test("refuses what could mean two things or nothing, naming the flag", () => {
  expect(() => parse("2023-11-14T22:13:20")).toThrow(
    '--at: "2023-11-14T22:13:20" has no time zone; add Z (UTC) or an offset such as +02:00',
  );
  expect(() => parse("yesterday")).toThrow("--at must be milliseconds since the epoch, an ISO 8601 time");
  expect(() => parse("1h")).toThrow("--at must be milliseconds");
  expect(() => parse("-1 hour")).toThrow("--at");
  expect(() => parse("2023-13-45T00:00:00Z")).toThrow("is not a valid date and time");
  expect(() => parse("")).toThrow("--at must be");
  expect(() => parse("99999999999999999999")).toThrow("is not a time from 1970 on");
  expect(() => parseTimeArgument("--at", "-100y", NOW)).toThrow("--at");
});
