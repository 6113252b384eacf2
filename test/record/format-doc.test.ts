/**
 * The worked RecordBatch v2 example in docs/format.md is what the encoder writes, byte for byte,
 * and each line's offset column is where its bytes really are: the documentation cannot drift.
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { decodeBatch, encodeBatch } from "../../src/record/batch.ts";
import { hex, utf8 } from "./helpers.ts";

const DOC = path.resolve(import.meta.dir, "../../docs/format.md");

function documentedDump(): { offset: number; bytes: string }[] {
  const text = fs.readFileSync(DOC, "utf8");
  const block = text.match(
    /<!-- recordbatch-example:start -->\n```text\n([\s\S]*?)```\n<!-- recordbatch-example:end -->/,
  );
  if (block === null) throw new Error("docs/format.md lost its RecordBatch example markers");
  return block[1]!
    .trimEnd()
    .split("\n")
    .map((line) => {
      const [left] = line.split("|");
      const [offset, ...bytes] = left!.trim().split(/\s+/);
      return { offset: Number(offset), bytes: bytes.join("") };
    });
}

test("the documented hex dump is the encoder's output, with correct offsets", () => {
  const batch = encodeBatch([
    {
      key: utf8("k"),
      value: utf8("hello"),
      headers: [{ key: "h", value: utf8("1") }],
      timestamp: 1_700_000_000_000,
    },
    { key: null, value: utf8("x"), timestamp: 1_699_999_999_999 },
  ]);
  const lines = documentedDump();
  let position = 0;
  for (const line of lines) {
    expect(line.offset).toBe(position);
    expect(line.bytes).toMatch(/^([0-9a-f]{2})+$/);
    position += line.bytes.length / 2;
  }
  expect(lines.map((line) => line.bytes).join("")).toBe(hex(batch));
  // And it means what the comments say.
  const decoded = decodeBatch(batch);
  expect(decoded.records.map((record) => [record.offset, record.timestamp])).toEqual([
    [0, 1_700_000_000_000],
    [1, 1_699_999_999_999],
  ]);
});
