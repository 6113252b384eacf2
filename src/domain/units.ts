/**
 * Reading sizes and durations written by people: `128MiB`, `10GiB`, `64k`, `7d`, `250ms`, `1.5h`.
 * Shared by the broker's flags and the CLI. Binary units (K = KiB = 1024).
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

export function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}
