/**
 * Golden bytes from librdkafka: Debian's `kcat` (1.7.1 with librdkafka 2.0.2) produces to the tiny
 * Kafka listener of kafka-listener.ts, which keeps the RecordBatches as they crossed the socket. The
 * batches must pass our PRODUCE validation and decode to the lines kcat was given: keys, values,
 * headers, and CreateTime timestamps taken during the run. Skipped, with the reason printed, where
 * kcat is not installed (.ci/run installs it).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { decodeBatch, type RecordBatchHeader, validateBatch } from "../../src/record/batch.ts";
import { type KafkaListener, listenLikeKafka } from "./kafka-listener.ts";

const KCAT = Bun.which("kcat");
if (KCAT === null) console.log("kcat.test.ts skipped: kcat is not installed (apt-get install -y kcat)");

const DECODER = new TextDecoder();
let listener: KafkaListener | undefined;
afterEach(() => listener?.stop());

async function produce(args: string[], input: string): Promise<{ before: number; after: number }> {
  listener = listenLikeKafka();
  const before = Date.now();
  const child = Bun.spawn(
    [KCAT!, "-b", `127.0.0.1:${listener.port}`, "-P", "-t", "golden", "-p", "0", ...args],
    { stdin: new TextEncoder().encode(input), stdout: "pipe", stderr: "pipe" },
  );
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]).finally(
    () => clearTimeout(timer),
  );
  if (exitCode !== 0) throw new Error(`kcat exited ${exitCode}: ${stderr}\nrefused: ${listener.refused}`);
  return { before, after: Date.now() };
}

function decodedRecords(): {
  headers: RecordBatchHeader[];
  records: ReturnType<typeof decodeBatch>["records"];
} {
  const headers: RecordBatchHeader[] = [];
  const records: ReturnType<typeof decodeBatch>["records"] = [];
  for (const batch of listener!.captured) {
    headers.push(validateBatch(batch, 0, batch.length, { walkCompressed: true }));
    records.push(...decodeBatch(batch).records);
  }
  return { headers, records };
}

const text = (bytes: Uint8Array | null) => (bytes === null ? null : DECODER.decode(bytes));

describe.skipIf(KCAT === null)("batches captured from kcat (librdkafka)", () => {
  test("keyed lines with headers: validate and decode to what kcat was given", async () => {
    const lines = ["k1:first", "k2:second value", ":no key", "ключ:значение"];
    const { before, after } = await produce(
      ["-K", ":", "-H", "trace-id=abc", "-H", "multi=x", "-H", "multi=y"],
      `${lines.join("\n")}\n`,
    );
    const { headers, records } = decodedRecords();
    expect(headers.length).toBeGreaterThanOrEqual(1);
    // librdkafka 2.0.2: ProducerId −1, BaseSequence −1, CreateTime, no compression for this little.
    for (const header of headers) {
      expect([header.producerId, header.baseSequence, header.logAppendTime]).toEqual([-1, -1, false]);
    }
    expect(
      records.map((record) => [
        text(record.key),
        text(record.value),
        record.headers.map((header) => [header.key, text(header.value)]),
      ]),
    ).toEqual(
      lines.map((line) => {
        const [key = "", value = ""] = line.split(":");
        return [
          // kcat sends an empty key as an empty (not null) key.
          key,
          value,
          [
            ["trace-id", "abc"],
            ["multi", "x"],
            ["multi", "y"],
          ],
        ];
      }),
    );
    for (const record of records) {
      expect(record.timestamp).toBeGreaterThanOrEqual(before);
      expect(record.timestamp).toBeLessThanOrEqual(after);
    }
  });

  test.each([
    ["gzip", 1],
    ["zstd", 4],
  ] as const)("-z %s: a compressed batch (codec %i) that validates and decodes", async (codec, codecId) => {
    const lines = Array.from({ length: 200 }, (_, i) => `line ${i} lorem ipsum dolor sit amet`);
    await produce(["-z", codec], `${lines.join("\n")}\n`);
    const { headers, records } = decodedRecords();
    expect(headers.some((header) => header.codecId === codecId)).toBe(true);
    expect(records.map((record) => [record.key, text(record.value)])).toEqual(
      lines.map((line) => [null, line]),
    );
    expect(records.map((record) => record.offset)).toEqual(
      // Offsets restart in every batch: the listener stamps nothing, BaseOffset stays 0.
      headers.flatMap((header) => Array.from({ length: header.recordCount }, (_, i) => i)),
    );
  });

  test.each([
    ["snappy", 2],
    ["lz4", 3],
  ] as const)(
    "-z %s: a compressed batch (codec %i) that validates and decodes (snappyjs, lz4js)",
    async (codec, codecId) => {
      const lines = Array.from({ length: 200 }, (_, i) => `line ${i} lorem ipsum dolor sit amet`);
      await produce(["-z", codec], `${lines.join("\n")}\n`);
      const { headers, records } = decodedRecords();
      expect(headers.some((header) => header.codecId === codecId)).toBe(true);
      expect(records.map((record) => [record.key, text(record.value)])).toEqual(
        lines.map((line) => [null, line]),
      );
    },
  );
});
