/**
 * Formatting for the web console, shared by the page (src/console/app) and its unit tests: numbers
 * with their units, durations, record fields as text, JSON or hex, and the geometry of the charts.
 * Pure functions over plain values; no DOM, no I/O.
 */

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.5 KiB": powers of 1024, three significant digits, whole bytes below 1 KiB. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "–";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const sign = bytes < 0 ? "-" : "";
  if (unit === 0) return `${sign}${Math.round(value)} B`;
  return `${sign}${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)} ${BYTE_UNITS[unit]}`;
}

/** 1234567 → "1,234,567" (offsets and counts must be exact: no rounding). */
export function formatCount(count: number): string {
  if (!Number.isFinite(count)) return "–";
  const digits = String(Math.trunc(Math.abs(count)));
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return count < 0 ? `-${grouped}` : grouped;
}

/** A rate per second, three significant digits with k/M/G: 12345.6 → "12.3 k/s". */
export function formatRate(perSecond: number | null, unit = ""): string {
  if (perSecond === null || !Number.isFinite(perSecond)) return "–";
  const magnitude = Math.abs(perSecond);
  const [value, prefix] =
    magnitude >= 1e9
      ? [perSecond / 1e9, " G"]
      : magnitude >= 1e6
        ? [perSecond / 1e6, " M"]
        : magnitude >= 1e3
          ? [perSecond / 1e3, " k"]
          : [perSecond, ""];
  const abs = Math.abs(value);
  const text =
    prefix === "" && Number.isInteger(value)
      ? String(value)
      : abs >= 100
        ? value.toFixed(0)
        : abs >= 10
          ? value.toFixed(1)
          : value.toFixed(2);
  return `${text}${prefix}${unit === "" ? "" : ` ${unit}`}/s`;
}

/** Bytes per second: 1536 → "1.50 KiB/s". */
export function formatByteRate(bytesPerSecond: number | null): string {
  if (bytesPerSecond === null || !Number.isFinite(bytesPerSecond)) return "–";
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** Uptime and other long durations: 93784 s → "1 d 2 h", 125 s → "2 min 5 s". */
export function formatDurationSeconds(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "–";
  const whole = Math.floor(seconds);
  const days = Math.floor(whole / 86400);
  const hours = Math.floor((whole % 86400) / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const rest = whole % 60;
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes} min`;
  if (minutes > 0) return `${minutes} min ${rest} s`;
  return `${rest} s`;
}

/** Short durations: 0.4213 → "0.421 ms", 12.5 → "12.5 ms", 1500 → "1.50 s". */
export function formatMilliseconds(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return "–";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(3)} ms`;
}

/** A duration setting in milliseconds, or null for "none": 604800000 → "7 d". */
export function formatSettingMs(ms: number | null): string {
  if (ms === null) return "none";
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** A record timestamp (ms since the epoch) in UTC, ISO 8601; negative means none (Kafka's −1). */
export function formatTimestamp(timestampMs: number): string {
  if (!Number.isFinite(timestampMs) || timestampMs < 0) return "none";
  const date = new Date(timestampMs);
  return Number.isNaN(date.getTime()) ? `${timestampMs} (out of range)` : date.toISOString();
}

export type FieldView = "text" | "json" | "hex";
export const FIELD_VIEWS: readonly FieldView[] = ["text", "json", "hex"];

export interface RenderedField {
  text: string;
  /** Why the field is not shown as asked (not UTF-8, not JSON), or undefined. */
  note?: string;
}

/** Hex dump: 16 bytes a line, each line opened by its byte position in hex. */
export function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let start = 0; start < bytes.length; start += 16) {
    const row: string[] = [];
    const end = Math.min(start + 16, bytes.length);
    for (let i = start; i < end; i++) row.push(bytes[i]!.toString(16).padStart(2, "0"));
    lines.push(`${start.toString(16).padStart(8, "0")}  ${row.join(" ")}`);
  }
  return lines.join("\n");
}

/**
 * A key, value or header value as the reader chose. Null is Kafka's null (not an empty value).
 * Text that is not valid UTF-8 and JSON that does not parse fall back to hex and say why, with the
 * byte position for UTF-8.
 */
export function renderField(bytes: Uint8Array | null, view: FieldView): RenderedField {
  if (bytes === null) return { text: "null" };
  if (view === "hex") return { text: hexDump(bytes) };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return {
      text: hexDump(bytes),
      note: `not UTF-8 (first bad byte at position ${firstInvalidUtf8(bytes)}); shown as hex`,
    };
  }
  if (view === "text") return { text };
  try {
    return { text: JSON.stringify(JSON.parse(text), null, 2) };
  } catch (error) {
    return { text, note: `not JSON (${(error as Error).message}); shown as text` };
  }
}

/** Position of the first byte that breaks UTF-8 (the decoder's error does not say). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    const length =
      lead < 0x80
        ? 1
        : lead >= 0xc2 && lead < 0xe0
          ? 2
          : lead >= 0xe0 && lead < 0xf0
            ? 3
            : lead >= 0xf0 && lead < 0xf5
              ? 4
              : 0;
    if (length === 0) return i;
    for (let k = 1; k < length; k++) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) return i;
    }
    // Overlong three-byte forms, surrogates and code points above U+10FFFF.
    if (length === 3) {
      const second = bytes[i + 1]!;
      if ((lead === 0xe0 && second < 0xa0) || (lead === 0xed && second >= 0xa0)) return i;
    }
    if (length === 4) {
      const second = bytes[i + 1]!;
      if ((lead === 0xf0 && second < 0x90) || (lead === 0xf4 && second >= 0x90)) return i;
    }
    i += length;
  }
  return -1;
}

/** Bytes from base64 (the record API carries fields that way; JSON has no bytes). */
export function bytesFromBase64(base64: string): Uint8Array {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The smallest of 1, 2, 5 × 10^n at or above `value` (a chart's top line); 1 for nothing. */
export function niceCeiling(value: number): number {
  if (!Number.isFinite(value) || value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= value * (1 - 1e-12)) return step * power;
  }
  return 10 * power;
}

/**
 * SVG polyline points for a series drawn right-aligned in a `widthPx` × `heightPx` box: the last
 * value at the right edge, one step per sample over `slots` slots, `top` at the upper edge. Gaps
 * (null: no sample, or no force in that second) break the line: one string per run of values.
 */
export function chartLines(
  values: readonly (number | null)[],
  slots: number,
  widthPx: number,
  heightPx: number,
  top: number,
): string[] {
  const step = slots > 1 ? widthPx / (slots - 1) : 0;
  const offset = slots - values.length;
  const lines: string[] = [];
  let current: string[] = [];
  values.forEach((value, i) => {
    if (value === null || !Number.isFinite(value)) {
      if (current.length > 0) lines.push(current.join(" "));
      current = [];
      return;
    }
    const x = (offset + i) * step;
    const clamped = Math.min(Math.max(value, 0), top);
    const y = heightPx - (clamped / top) * heightPx;
    current.push(`${round2(x)},${round2(y)}`);
  });
  if (current.length > 0) lines.push(current.join(" "));
  return lines;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
