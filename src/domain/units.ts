/**
 * Reading sizes, durations, integers and addresses written by people: `128MiB`, `10GiB`, `64k`, `7d`,
 * `250ms`, `1.5h`, `7979`, `127.0.0.1:7979`. Shared by the broker's flags and the CLI, so both read a
 * value the same way. Binary units (K = KiB = 1024). An empty text is never a value (it is not 0).
 */
import { InvalidArgumentError } from "./errors.ts";

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 2 ** 20,
  mb: 2 ** 20,
  mib: 2 ** 20,
  g: 2 ** 30,
  gb: 2 ** 30,
  gib: 2 ** 30,
  t: 2 ** 40,
  tb: 2 ** 40,
  tib: 2 ** 40,
};
const TIME_UNITS: Record<string, number> = {
  "": 1,
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

function parseQuantity(what: string, text: string, units: Record<string, number>, examples: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = match === null ? undefined : units[match[2]!.toLowerCase()];
  if (match === null || unit === undefined) {
    throw new InvalidArgumentError(`${what}: cannot read ${JSON.stringify(text)} (examples: ${examples})`);
  }
  const value = Math.round(Number(match[1]) * unit);
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError(`${what}: ${text} is too large`);
  return value;
}

/** Bytes from `512`, `64KiB`, `128MiB`, `10G`. */
export function parseBytes(what: string, text: string): number {
  return parseQuantity(what, text, SIZE_UNITS, "4096, 64KiB, 128MiB, 10GiB");
}

/** Milliseconds from `250ms`, `30s`, `10m`, `12h`, `7d` (a bare number is milliseconds). */
export function parseDurationMs(what: string, text: string): number {
  return parseQuantity(what, text, TIME_UNITS, "250ms, 30s, 10m, 12h, 7d");
}

/**
 * A whole number from decimal digits (a leading `-` only matters when `min` is negative), within
 * [min, max]. Stricter than `Number()`: that reads "" and " " as 0, and "0x10", "1e3" and "1.0" as
 * integers; and a too-long digit string is rounded to a double, so it must be range-checked here
 * rather than wrapped or truncated later (2^64 became offset 0; 2^32 became partition 0).
 */
export function parseInteger(
  what: string,
  text: string,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  const trimmed = text.trim();
  // Digits only, so Number() cannot read anything else; past 2^53 it rounds, but stays > max.
  const value = /^-?\d+$/.test(trimmed) ? Number(trimmed) + 0 : Number.NaN; // + 0: -0 is 0
  if (Number.isNaN(value) || value < min) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new InvalidArgumentError(`${what} must be an integer ${range}, got ${JSON.stringify(text)}`);
  }
  if (value > max)
    throw new InvalidArgumentError(`${what} must be at most ${max}, got ${JSON.stringify(text)}`);
  return value;
}

/** `host:port` (IPv6 as `[::1]:7979`): a non-empty host and a port from 1 to 65535. */
export function parseHostPort(what: string, text: string): { host: string; port: number } {
  const colon = text.lastIndexOf(":");
  let host = colon < 0 ? "" : text.slice(0, colon).trim();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (colon < 0 || host === "") {
    throw new InvalidArgumentError(`${what} must be host:port, got ${JSON.stringify(text)}`);
  }
  return { host, port: parseInteger(`${what} port`, text.slice(colon + 1), 1, 65535) };
}

export function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}
