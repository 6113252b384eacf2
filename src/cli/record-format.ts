/**
 * How `consume` and `segment dump` print records (`--format`). Every format writes bytes to an
 * Output; none decodes a payload it does not have to, so `raw` is the bytes the producer sent.
 *
 * - `raw`: the payload and a newline, untouched. Not safe when payloads contain newlines.
 * - `json`: one JSON object per line, `{"topic","partition","offset","value"}`, the value as UTF-8
 *   text (bytes that are not UTF-8 become U+FFFD: for text payloads).
 * - `json-base64`, `json-hex`: the same object with the value in base64 or hex: safe for any bytes.
 * - a format string (anything containing `%`), kcat-style: `%t` topic, `%p` partition, `%o` offset,
 *   `%s` payload (raw bytes), `%S` payload length in bytes, `%x` payload in hex, `%b` payload in
 *   base64 (`%x` and `%b` are booblik's), `%%` a percent sign; `\n`, `\t`, `\r`, `\\` are escapes.
 *
 * JSON objects name their fields, so fields to come (key, headers, timestamp with the record format
 * of Kafka's RecordBatch v2) are added without breaking a reader; `%k`, `%h`, `%T` are reserved for
 * them as in kcat.
 */
import { InvalidArgumentError } from "../domain/errors.ts";
import type { Output } from "./output.ts";

export interface PrintableRecord {
  topic: string;
  partition: number;
  offset: number;
  value: Uint8Array;
}

export type RecordPrinter = (record: PrintableRecord, out: Output) => void;

export const NAMED_FORMATS = ["raw", "json", "json-base64", "json-hex"] as const;

const NEWLINE = new Uint8Array([0x0a]);
const DECODER = new TextDecoder();

function encodeValue(value: Uint8Array, encoding: "text" | "base64" | "hex"): string {
  if (encoding === "text") return DECODER.decode(value);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString(encoding);
}

function jsonPrinter(encoding: "text" | "base64" | "hex"): RecordPrinter {
  return (record, out) =>
    out.text(
      `${JSON.stringify({
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        value: encodeValue(record.value, encoding),
      })}\n`,
    );
}

type Part = string | ((record: PrintableRecord, out: Output) => void);

const TOKENS: Record<string, (record: PrintableRecord, out: Output) => void> = {
  t: (record, out) => out.text(record.topic),
  p: (record, out) => out.text(String(record.partition)),
  o: (record, out) => out.text(String(record.offset)),
  s: (record, out) => out.write(record.value),
  S: (record, out) => out.text(String(record.value.length)),
  x: (record, out) => out.text(encodeValue(record.value, "hex")),
  b: (record, out) => out.text(encodeValue(record.value, "base64")),
};
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
        throw new InvalidArgumentError(
          `--format: unknown token %${next ?? ""} (known: %t %p %o %s %S %x %b %%)`,
        );
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
        out.write(record.value);
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
