/**
 * The offsets topic's compaction against commits still waiting for their force: a snapshot taken
 * while a commit of the same partition is appended but not yet applied must not repeat the older
 * value after it. It did (found by the SIGKILL test of offsets-store.test.ts, which failed about one
 * run in six): the log then held the older value after the newer one, so a restart at that moment
 * read an acknowledged commit back as the one before it.
 *
 * Committers here commit increasing offsets, so in a correct log every partition's values are
 * non-decreasing in log order; the log is checked after every compaction.
 */
import { expect, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { OFFSETS_TOPIC_NAME } from "../../src/domain/limits.ts";
import { forEachRecord, recordKey, recordValue } from "../../src/record/batch.ts";
import { newEntryScanResult, scanEntries } from "../../src/record/entries.ts";
import { tempDir } from "../helpers/temp-dir.ts";

function entry(offset: number) {
  return [{ topic: "t", partition: 0, offset, leaderEpoch: -1, metadata: null }];
}

/** Each key whose committed offset goes down somewhere in the retained log, with where. */
function decreases(broker: Broker): string[] {
  const partition = broker.partition(OFFSETS_TOPIC_NAME, 0);
  const latest = new Map<string, number>();
  const found: string[] = [];
  const scan = newEntryScanResult();
  const decoder = new TextDecoder();
  for (let offset = partition.logStartOffset; offset < partition.visibleNextOffset; ) {
    const read = partition.read(offset, 1 << 20);
    const bytes = read.records;
    scanEntries(bytes, 0, bytes.length, { framing: "framed", verifyCrc: true }, scan, (_e, start, end) =>
      forEachRecord(bytes, start, end, (record) => {
        const key = decoder.decode(recordKey(record)!).replaceAll("\u0000", "/");
        const value = recordValue(record);
        if (value === null) return;
        const committed = (JSON.parse(decoder.decode(value)) as { offset: number }).offset;
        const before = latest.get(key) ?? -1;
        if (committed < before)
          found.push(`${key}: ${committed} at log offset ${record.offset} after ${before}`);
        latest.set(key, Math.max(before, committed));
      }),
    );
    offset = read.firstOffset + read.recordCount;
  }
  return found;
}

test("committers that commit again as soon as acknowledged, through 100 compactions: the log never repeats an older commit after a newer one", async () => {
  using dir = tempDir();
  let broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
  const acked = [0, 0, 0];
  const found: string[] = [];
  let checkedAt = 0;
  let stop = false;
  // Each committer appends its next commit in the step that applied its previous one, so a
  // compaction started by another committer's commit often finds this one in flight.
  const committer = async (index: number) => {
    for (let offset = 1; !stop; offset++) {
      await broker.offsets.commit(`g${index}`, entry(offset));
      acked[index] = offset;
      if (broker.offsets.compactions !== checkedAt) {
        checkedAt = broker.offsets.compactions;
        found.push(...decreases(broker));
      }
      if (broker.offsets.compactions >= 100 || found.length > 0) stop = true;
    }
  };
  await Promise.all([0, 1, 2].map(committer));
  expect(found).toEqual([]);
  await broker.close();
  broker = Broker.open({ dataDir: dir.path, offsetsSegmentBytes: 4096 });
  try {
    expect([0, 1, 2].map((index) => broker.offsets.committed(`g${index}`, "t", 0)?.offset)).toEqual(acked);
  } finally {
    await broker.close();
  }
});
