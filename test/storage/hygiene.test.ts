/**
 * Descriptor and mapping hygiene: creating, appending to, reopening (with recovery), reading and
 * closing 1,000 segments on each path leaves no descriptor in /proc/self/fd and no mapping in
 * /proc/self/maps. The predecessor leaked one descriptor per rolled segment when the mapping did not
 * own its descriptor; a leaked mapping would hold address space and page cache until exit.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Offset } from "../../src/domain/ids.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { newFileRange, Segment, segmentConfig } from "../../src/storage/segment.ts";
import { segmentFileName } from "../../src/storage/segment-header.ts";
import { WRITE_MODES, type WriteMode } from "../../src/storage/segment-writer.ts";
import { descriptorsUnder, mappingsContaining } from "../helpers/proc.ts";
import { tempDir } from "../helpers/temp-dir.ts";

describe.each(WRITE_MODES.map((mode) => [mode]))("hygiene, %s write path", (mode: WriteMode) => {
  test("1,000 segments opened and closed leave no descriptor and no mapping behind", () => {
    using dir = tempDir();
    const config = segmentConfig({ writeMode: mode, segmentBytes: 64 * 1024 });
    const descriptorsBefore = descriptorsUnder(dir.path);
    const range = newFileRange();
    const batch = batchOfValues(["hygiene", "check"]);
    for (let i = 0; i < 1000; i++) {
      const base = (i * 10) as Offset;
      const created = Segment.create(dir.path, base, config);
      created.append(batch);
      if (i % 2 === 0) created.seal(); // sealing then closing must release just as much
      created.close();
      const filePath = path.join(dir.path, segmentFileName(base));
      const { segment } = Segment.openForAppend(filePath, config);
      segment.read(base, 100);
      segment.fileRange(base, 100, range);
      segment.close();
      const sealed = Segment.openSealed(filePath, config, (base + 2) as Offset);
      sealed.read(base + 1, 100);
      if (i % 3 === 0) {
        sealed.acquire();
        sealed.delete(); // unlinked now, descriptor kept for the reader
        expect(sealed.hasOpenDescriptor).toBe(true);
        sealed.release(); // the last reader closes it
        expect(sealed.hasOpenDescriptor).toBe(false);
      } else {
        sealed.close();
      }
    }
    expect(descriptorsUnder(dir.path)).toBe(descriptorsBefore);
    expect(mappingsContaining(dir.path)).toBe(0);
  }, 60_000);

  test("a failing open closes what it opened", () => {
    using dir = tempDir();
    const config = segmentConfig({ writeMode: mode, segmentBytes: 64 * 1024 });
    const descriptorsBefore = descriptorsUnder(dir.path);
    const bad = path.join(dir.path, segmentFileName(0 as Offset));
    fs.writeFileSync(bad, "not a segment, long enough to hold a header of 32 bytes");
    for (let i = 0; i < 100; i++) {
      expect(() => Segment.openForAppend(bad, config)).toThrow();
      // A sealed segment is opened by name; its header is checked on the first read, which refuses.
      const sealed = Segment.openSealed(bad, config, 1 as Offset);
      expect(() => sealed.read(0, 100)).toThrow(/not a booblik segment/);
      sealed.close();
    }
    expect(() => Segment.openForAppend(path.join(dir.path, "missing.log"), config)).toThrow(/ENOENT/);
    expect(descriptorsUnder(dir.path)).toBe(descriptorsBefore);
    expect(mappingsContaining(dir.path)).toBe(0);
  });
});
