/**
 * A DeleteTopic whose commit point fails (the unlink of `topics/<topic>.json`) is answered with an
 * error and leaves the topic as it was; a retry deletes it for good. Found by a fault hunt
 * (2026-12-03); this test failed on 10db40d, where the topic was gone from the running broker
 * anyway: every later call, a retried delete included, answered UNKNOWN_TOPIC_OR_PARTITION, so a
 * client that retried concluded the topic was deleted; the topic file was still there, and the next
 * start brought the topic back with all its records. Its partitions were never closed either.
 *
 * Cause (fixed): Broker.deleteTopic (src/broker/broker.ts) removed the topic from `this.topics` before
 * removeTopic reached its commit point, `unlinkFile(topicFilePath(...))`; a throw there left the
 * registry without the topic and the disk with it. The unlink now comes first.
 *
 * The fault: `chattr +i` on the topic file (unlink fails with EPERM), standing in for any failed
 * unlink (EIO, EROFS after a file system error). Needs root; skipped with the reason otherwise.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Broker } from "../../src/broker/broker.ts";
import { batchOfValues, valuesOfEntries } from "../../src/record/entries.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const immutableUnavailable: string | undefined = (() => {
  const dir = tempDir("booblik-chattr-probe");
  try {
    const file = dir.file("probe");
    fs.writeFileSync(file, "x");
    const result = spawnSync("chattr", ["+i", file], { encoding: "utf8" });
    if (result.status !== 0)
      return `chattr +i failed: ${(result.stderr || result.error?.message || "").trim()}`;
    spawnSync("chattr", ["-i", file]);
    return undefined;
  } finally {
    dir[Symbol.dispose]();
  }
})();
if (immutableUnavailable !== undefined) console.warn(`test skipped: ${immutableUnavailable}`);

function chattr(flag: "+i" | "-i", file: string): void {
  const result = spawnSync("chattr", [flag, file], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`chattr ${flag} ${file}: ${result.stderr}`);
}

const decode = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes!);

test.skipIf(immutableUnavailable !== undefined)(
  "a delete refused at its commit point leaves the topic in place, and a retry deletes it for good",
  async () => {
    using dir = tempDir("delete-unlink-fails");
    const topicFile = path.join(dir.path, "topics", "t.json");
    let broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("t", { partitions: 1, durability: "force" });
      await broker.append("t", 0, batchOfValues(["kept"]));
      chattr("+i", topicFile);
      try {
        await expect(broker.deleteTopic("t")).rejects.toMatchObject({ code: "STORAGE_ERROR" });
      } finally {
        chattr("-i", topicFile);
      }
      // The delete did not happen: the topic file is there, and the topic is served as before.
      expect(fs.existsSync(topicFile)).toBe(true);
      expect(broker.listTopics().map((topic) => topic.name)).toEqual(["t"]);
      expect(valuesOfEntries(broker.read("t", 0, 0).records).map(decode)).toEqual(["kept"]);
      // The fault is gone: a retry deletes it, and it stays deleted across a restart.
      await broker.deleteTopic("t");
      await broker.close();
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.listTopics()).toEqual([]);
    } finally {
      if (fs.existsSync(topicFile)) spawnSync("chattr", ["-i", topicFile]);
      await broker.close();
    }
  },
);

test.skipIf(immutableUnavailable !== undefined)(
  "a delete past its commit point whose directory cannot be removed is answered as done; the next start removes the directory",
  async () => {
    using dir = tempDir("delete-rm-fails");
    const segment = path.join(dir.path, "t-0", "00000000000000000000.log");
    let broker = Broker.open({ dataDir: dir.path });
    try {
      broker.createTopic("t", { partitions: 1 });
      await broker.append("t", 0, batchOfValues(["gone"]));
      chattr("+i", segment); // the directory's removal fails (EPERM on the segment's unlink)
      const logged: string[] = [];
      const originalError = console.error;
      console.error = (...args: unknown[]) => void logged.push(args.map(String).join(" "));
      try {
        // Before 2026-12-03 this rejected, though the topic was deleted (its file gone).
        await broker.deleteTopic("t");
      } finally {
        console.error = originalError;
        chattr("-i", segment);
      }
      expect(logged.some((line) => line.includes("could not be removed (the next start removes it)"))).toBe(
        true,
      );
      expect(broker.listTopics()).toEqual([]);
      expect(fs.existsSync(path.join(dir.path, "t-0"))).toBe(true);
      await broker.close();
      broker = Broker.open({ dataDir: dir.path });
      expect(broker.listTopics()).toEqual([]);
      expect(fs.existsSync(path.join(dir.path, "t-0"))).toBe(false);
    } finally {
      if (fs.existsSync(segment)) spawnSync("chattr", ["-i", segment]);
      await broker.close();
    }
  },
);
