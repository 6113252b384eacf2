/**
 * Times on the command line (`produce --timestamp`, `consume --from-time`, `offsets --at`), read
 * strictly: a time that could mean two things is refused, never guessed.
 *
 * - digits: milliseconds since the epoch (Kafka's record time), `1700000000000`;
 * - a duration before now: `-1h`, `-30m`, `-90s`, `-7d`, `-250ms` (units.ts durations);
 * - `now`;
 * - ISO 8601 with a zone: `2024-05-01T12:00:00Z`, `2024-05-01T14:00:00.250+02:00`, or a date alone
 *   (`2024-05-01`, midnight UTC, as JavaScript reads it). A date and time without a zone is refused:
 *   JavaScript would read it as the local time of whichever machine runs the command.
 */
import { InvalidArgumentError } from "../domain/errors.ts";
import { parseDurationMs } from "../domain/units.ts";

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

/** Milliseconds since the epoch for `text` (see above); `nowMs` is what `now` and `-1h` count from. */
export function parseTimeArgument(what: string, text: string, nowMs: number): number {
  const trimmed = text.trim();
  let value: number;
  if (/^\d+$/.test(trimmed)) value = Number(trimmed);
  else if (trimmed === "now") value = nowMs;
  else if (trimmed.startsWith("-")) value = nowMs - parseDurationMs(what, trimmed.slice(1));
  else if (DATE_ONLY.test(trimmed) || DATE_TIME_WITH_ZONE.test(trimmed)) value = Date.parse(trimmed);
  else if (DATE_TIME.test(trimmed))
    throw new InvalidArgumentError(
      `${what}: ${JSON.stringify(text)} has no time zone; add Z (UTC) or an offset such as +02:00`,
    );
  else
    throw new InvalidArgumentError(
      `${what} must be milliseconds since the epoch, an ISO 8601 time (2024-05-01T12:00:00Z), now, or a duration before now (-1h, -30m), got ${JSON.stringify(text)}`,
    );
  if (Number.isNaN(value))
    throw new InvalidArgumentError(`${what}: ${JSON.stringify(text)} is not a valid date and time`);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new InvalidArgumentError(`${what}: ${JSON.stringify(text)} is not a time from 1970 on`);
  return value;
}
