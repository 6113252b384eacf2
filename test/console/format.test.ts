/** The console's formatting (src/console/format.ts): units, durations, record fields, chart geometry. */
import { describe, expect, test } from "bun:test";
import {
  bytesFromBase64,
  chartLines,
  firstInvalidUtf8,
  formatByteRate,
  formatBytes,
  formatCount,
  formatDurationSeconds,
  formatMilliseconds,
  formatRate,
  formatSettingMs,
  formatTimestamp,
  hexDump,
  niceCeiling,
  renderField,
} from "../../src/console/format.ts";

const bytes = (...values: number[]) => new Uint8Array(values);
const utf8 = (text: string) => new TextEncoder().encode(text);

describe("numbers", () => {
  test("bytes in powers of 1024, three significant digits", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1024)).toBe("1.00 KiB");
    expect(formatBytes(1536)).toBe("1.50 KiB");
    expect(formatBytes(15 * 1024 + 512)).toBe("15.5 KiB");
    expect(formatBytes(128 * 2 ** 20)).toBe("128 MiB");
    expect(formatBytes(2 ** 40)).toBe("1.00 TiB");
    expect(formatBytes(Number.NaN)).toBe("–");
    expect(formatByteRate(2048)).toBe("2.00 KiB/s");
    expect(formatByteRate(null)).toBe("–");
  });

  test("counts are exact, grouped by thousands", () => {
    expect(formatCount(0)).toBe("0");
    expect(formatCount(999)).toBe("999");
    expect(formatCount(1000)).toBe("1,000");
    expect(formatCount(1234567)).toBe("1,234,567");
    expect(formatCount(2 ** 53 - 1)).toBe("9,007,199,254,740,991");
    expect(formatCount(-4200)).toBe("-4,200");
  });

  test("rates: whole numbers as they are, then k, M, G", () => {
    expect(formatRate(0)).toBe("0/s");
    expect(formatRate(7)).toBe("7/s");
    expect(formatRate(2.5)).toBe("2.50/s");
    expect(formatRate(999)).toBe("999/s");
    expect(formatRate(12345.6)).toBe("12.3 k/s");
    expect(formatRate(2_500_000)).toBe("2.50 M/s");
    expect(formatRate(3e9)).toBe("3.00 G/s");
    expect(formatRate(1500, "records")).toBe("1.50 k records/s");
    expect(formatRate(7, "records")).toBe("7 records/s");
    expect(formatRate(null)).toBe("–");
  });

  test("durations", () => {
    expect(formatDurationSeconds(12.9)).toBe("12 s");
    expect(formatDurationSeconds(125)).toBe("2 min 5 s");
    expect(formatDurationSeconds(3 * 3600 + 7 * 60)).toBe("3 h 7 min");
    expect(formatDurationSeconds(93784)).toBe("1 d 2 h");
    expect(formatDurationSeconds(-1)).toBe("–");
    expect(formatMilliseconds(0.4213)).toBe("0.421 ms");
    expect(formatMilliseconds(2.345)).toBe("2.35 ms");
    expect(formatMilliseconds(12.5)).toBe("12.5 ms");
    expect(formatMilliseconds(250)).toBe("250 ms");
    expect(formatMilliseconds(1500)).toBe("1.50 s");
    expect(formatMilliseconds(null)).toBe("–");
    expect(formatSettingMs(null)).toBe("none");
    expect(formatSettingMs(7 * 86_400_000)).toBe("7 d");
    expect(formatSettingMs(12 * 3_600_000)).toBe("12 h");
    expect(formatSettingMs(90_000)).toBe("90 s");
    expect(formatSettingMs(1000)).toBe("1 s");
    expect(formatSettingMs(1500)).toBe("1500 ms");
  });

  test("timestamps in UTC; Kafka's −1 is none", () => {
    expect(formatTimestamp(0)).toBe("1970-01-01T00:00:00.000Z");
    expect(formatTimestamp(1_700_000_000_123)).toBe("2023-11-14T22:13:20.123Z");
    expect(formatTimestamp(-1)).toBe("none");
    expect(formatTimestamp(9e15)).toBe("9000000000000000 (out of range)");
  });
});

describe("record fields", () => {
  test("text, JSON pretty-printed, hex with positions", () => {
    expect(renderField(utf8("héllo"), "text")).toEqual({ text: "héllo" });
    expect(renderField(utf8('{"a":[1,2]}'), "json")).toEqual({ text: '{\n  "a": [\n    1,\n    2\n  ]\n}' });
    expect(renderField(bytes(0, 1, 0xff), "hex")).toEqual({ text: "00000000  00 01 ff" });
    expect(hexDump(new Uint8Array(17).fill(0xab))).toBe(
      `00000000  ${Array(16).fill("ab").join(" ")}\n00000010  ab`,
    );
    expect(hexDump(new Uint8Array(0))).toBe("");
  });

  test("null is Kafka's null, not an empty value", () => {
    expect(renderField(null, "text")).toEqual({ text: "null" });
    expect(renderField(new Uint8Array(0), "text")).toEqual({ text: "" });
  });

  test("not UTF-8: hex, naming the first bad byte; not JSON: text, saying why", () => {
    const rendered = renderField(bytes(0x61, 0x62, 0xc3, 0x28), "text");
    expect(rendered.text).toBe("00000000  61 62 c3 28");
    expect(rendered.note).toBe("not UTF-8 (first bad byte at position 2); shown as hex");
    const notJson = renderField(utf8("plain words"), "json");
    expect(notJson.text).toBe("plain words");
    expect(notJson.note).toStartWith("not JSON (");
  });

  test("the first invalid UTF-8 byte: stray continuation, overlong, surrogate, truncated", () => {
    expect(firstInvalidUtf8(utf8("aé€😀"))).toBe(-1);
    expect(firstInvalidUtf8(bytes(0x61, 0x80))).toBe(1);
    expect(firstInvalidUtf8(bytes(0xc0, 0x80))).toBe(0); // overlong NUL
    expect(firstInvalidUtf8(bytes(0x61, 0xe0, 0x80, 0x80))).toBe(1); // overlong three-byte
    expect(firstInvalidUtf8(bytes(0xed, 0xa0, 0x80))).toBe(0); // a surrogate
    expect(firstInvalidUtf8(bytes(0xf4, 0x90, 0x80, 0x80))).toBe(0); // above U+10FFFF
    expect(firstInvalidUtf8(bytes(0x61, 0x62, 0xe2, 0x82))).toBe(2); // cut short
  });

  test("base64 back to bytes", () => {
    expect([...bytesFromBase64(Buffer.from([0, 255, 7]).toString("base64"))]).toEqual([0, 255, 7]);
    expect(bytesFromBase64("").length).toBe(0);
  });
});

describe("charts", () => {
  test("the top line is the next 1, 2 or 5 × 10^n", () => {
    expect(niceCeiling(0)).toBe(1);
    expect(niceCeiling(0.7)).toBe(1);
    expect(niceCeiling(1)).toBe(1);
    expect(niceCeiling(1.1)).toBe(2);
    expect(niceCeiling(3)).toBe(5);
    expect(niceCeiling(7)).toBe(10);
    expect(niceCeiling(120)).toBe(200);
    expect(niceCeiling(0.0042)).toBe(0.005);
  });

  test("points are right-aligned, scaled to the top, and gaps break the line", () => {
    // 3 slots over 100 px: x = 0, 50, 100; two values sit in the last two slots.
    expect(chartLines([5, 10], 3, 100, 50, 10)).toEqual(["50,25 100,0"]);
    expect(chartLines([0, null, 10, 20], 4, 30, 10, 10)).toEqual(["0,10", "20,0 30,0"]);
    expect(chartLines([], 300, 300, 100, 1)).toEqual([]);
    expect(chartLines([null, null], 2, 10, 10, 1)).toEqual([]);
  });
});
