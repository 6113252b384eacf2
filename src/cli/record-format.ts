/**
 * How `consume` and `segment dump` print records (`--format`). Every format writes bytes to an
 * Output; none decodes a value it does not have to, so `raw` is the bytes the producer sent.
 *
 * - `raw`: the value and a newline, untouched (a null value prints as an empty line). Not safe when
 *   values contain newlines, and it shows neither key nor headers.
 * - `json`: one JSON object per line: `{"topic","partition","offset","timestamp","key","value",
 *   "headers":[{"key","value"}]}`, key, value and header values as UTF-8 text (bytes that are not
 *   UTF-8 become U+FFFD: for text), null as null. Headers stay a list: Kafka's keep their order and
 *   may repeat a key.
 * - `json-base64`, `json-hex`: the same object with key, value and header values in base64 or hex:
 *   safe for any bytes.
 * - a format string (anything containing `%`), kcat's tokens: `%t` topic, `%p` partition, `%o`
 *   offset, `%T` timestamp (ms since the epoch), `%k` key, `%K` key length, `%s` value, `%S` value
 *   length (both −1 when null, as kcat prints them), `%h` headers as `key=value,key=value` (kcat's
 *   form; a null value prints as the bare key), `%%` a percent sign; booblik's own: `%x`/`%b` the
 *   value in hex/base64, `%X`/`%B` the key in hex/base64, `%I` the timestamp as ISO 8601 text.
 *   Escapes `\n`, `\t`, `\r`, `\\`. Raw tokens (`%k`, `%s`) write the bytes untouched, nothing for null.
 */
import { InvalidArgumentError } from "../domain/errors.ts";
import type { Output } from "./output.ts";

export interface PrintableHeader {
  key: string;
  value: Uint8Array | null;
}

/** Kafka's record, as `consume` and `segment dump` have it (views; nothing is copied to print it). */
export interface PrintableRecord {
  topic: string;
  partition: number;
  offset: number;
  /** Milliseconds since the epoch (CreateTime or LogAppendTime, as the batch says). */
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: readonly PrintableHeader[];
}

export type RecordPrinter = (record: PrintableRecord, out: Output) => void;

export const NAMED_FORMATS = ["raw", "json", "json-base64", "json-hex"] as const;

const NEWLINE = new Uint8Array([0x0a]);
const DECODER = new TextDecoder();

function encodeBytes(value: Uint8Array, encoding: "text" | "base64" | "hex"): string {
  if (encoding === "text") return DECODER.decode(value);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString(encoding);
}

function encodeNullable(value: Uint8Array | null, encoding: "text" | "base64" | "hex"): string | null {
  return value === null ? null : encodeBytes(value, encoding);
}

function jsonPrinter(encoding: "text" | "base64" | "hex"): RecordPrinter {
  return (record, out) =>
    out.text(
      `${JSON.stringify({
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        timestamp: record.timestamp,
        key: encodeNullable(record.key, encoding),
        value: encodeNullable(record.value, encoding),
        headers: record.headers.map((header) => ({
          key: header.key,
          value: encodeNullable(header.value, encoding),
        })),
      })}\n`,
    );
}

/** kcat's `%h`: `key=value` pairs joined by commas, a null value as the bare key. */
function headersText(record: PrintableRecord): string {
  return record.headers
    .map((header) => (header.value === null ? header.key : `${header.key}=${DECODER.decode(header.value)}`))
    .join(",");
}

type Part = string | ((record: PrintableRecord, out: Output) => void);

const TOKENS: Record<string, (record: PrintableRecord, out: Output) => void> = {
  t: (record, out) => out.text(record.topic),
  p: (record, out) => out.text(String(record.partition)),
  o: (record, out) => out.text(String(record.offset)),
  T: (record, out) => out.text(String(record.timestamp)),
  I: (record, out) => out.text(isoTime(record.timestamp)),
  k: (record, out) => {
    if (record.key !== null) out.write(record.key);
  },
  K: (record, out) => out.text(String(record.key === null ? -1 : record.key.length)),
  X: (record, out) => out.text(record.key === null ? "" : encodeBytes(record.key, "hex")),
  B: (record, out) => out.text(record.key === null ? "" : encodeBytes(record.key, "base64")),
  s: (record, out) => {
    if (record.value !== null) out.write(record.value);
  },
  S: (record, out) => out.text(String(record.value === null ? -1 : record.value.length)),
  x: (record, out) => out.text(record.value === null ? "" : encodeBytes(record.value, "hex")),
  b: (record, out) => out.text(record.value === null ? "" : encodeBytes(record.value, "base64")),
  h: (record, out) => out.text(headersText(record)),
};
const KNOWN_TOKENS = `${Object.keys(TOKENS)
  .map((token) => `%${token}`)
  .join(" ")} %%`;

/** ISO 8601 in UTC; a timestamp no Date can hold (Kafka's −1 "none") prints as the number. */
function isoTime(timestampMs: number): string {
  const date = new Date(timestampMs);
  return timestampMs < 0 || Number.isNaN(date.getTime()) ? String(timestampMs) : date.toISOString();
}
const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\" };

/** Compiles a kcat-style format string; an unknown token is refused (not printed literally). */
function formatStringPrinter(format: string): RecordPrinter {
  const parts: Part[] = [];
  let literal = "";
  for (let i = 0; i < format.length; i++) {
    const char = format[i]!;
    const next = format[i + 1];
    if (char === "%") {
      if (next === "%") literal += "%";
      else if (next !== undefined && TOKENS[next] !== undefined) {
        if (literal !== "") parts.push(literal);
        literal = "";
        parts.push(TOKENS[next]);
      } else {
        throw new InvalidArgumentError(`--format: unknown token %${next ?? ""} (known: ${KNOWN_TOKENS})`);
      }
      i++;
    } else if (char === "\\" && next !== undefined && ESCAPES[next] !== undefined) {
      literal += ESCAPES[next];
      i++;
    } else {
      literal += char;
    }
  }
  if (literal !== "") parts.push(literal);
  return (record, out) => {
    for (const part of parts) {
      if (typeof part === "string") out.text(part);
      else part(record, out);
    }
  };
}

/** The printer for a `--format` value (throws InvalidArgumentError for one it does not know). */
export function recordPrinter(format: string): RecordPrinter {
  switch (format) {
    case "raw":
      return (record, out) => {
        if (record.value !== null) out.write(record.value);
        out.write(NEWLINE);
      };
    case "json":
      return jsonPrinter("text");
    case "json-base64":
      return jsonPrinter("base64");
    case "json-hex":
      return jsonPrinter("hex");
    default:
      if (format.includes("%")) return formatStringPrinter(format);
      throw new InvalidArgumentError(
        `--format must be ${NAMED_FORMATS.join(", ")} or a format string with %-tokens, got ${JSON.stringify(format)}`,
      );
  }
}
