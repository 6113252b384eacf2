/**
 * A start that fails after its partitions were opened (here: an invalid acls.json, read in
 * finishOpen) names its own cause and releases the data directory, even when closing a partition on
 * the way out fails (EIO from close(2): NFS, a failing device). Found by a fault hunt (2026-12-03);
 * this test failed on 10db40d, where Broker.abandon (src/broker/broker.ts) let that close's error
 * replace the start's ("close failed: EIO on <segment>" instead of what is wrong with acls.json) and
 * skip the lock's release: a second open in the same process was refused with DataDirLockedError
 * naming this very process.
 * Found by a seeded FaultyDisk simulation of the offsets store (not kept); made deterministic here
 * with a Disk whose close of segment files fails.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { ioError } from "../../ffi/file.ts";
import { ACLS_FILE } from "../../src/broker/acl-store.ts";
import { Broker } from "../../src/broker/broker.ts";
import { type Disk, realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

const EIO = 5;

let restoreDisk: (() => void) | undefined;
afterEach(() => {
  restoreDisk?.();
  restoreDisk = undefined;
});

/** The real disk, except that closing a segment file reports EIO (after closing it) while `failing.on`. */
function closeFailingDisk(failing: { on: boolean }): Disk {
  return {
    ...realDisk,
    closeFile(fd, filePath) {
      realDisk.closeFile(fd, filePath);
      if (failing.on && filePath?.endsWith(".log") === true)
        throw ioError("close", EIO, filePath, "test: a failing device");
    },
  };
}

test("a start that fails names its cause and releases the data directory, even when a close fails on the way out", async () => {
  using dir = tempDir("open-failure-cleanup");
  const failing = { on: false };
  restoreDisk = useDisk(closeFailingDisk(failing));
  const first = Broker.open({ dataDir: dir.path });
  first.createTopic("t", { partitions: 2 });
  await first.close();
  // What stops the next start: an ACL file that does not parse.
  fs.writeFileSync(path.join(dir.path, ACLS_FILE), "{ not json");
  failing.on = true;
  let startError: unknown;
  try {
    await Broker.open({ dataDir: dir.path }).close();
  } catch (error) {
    startError = error;
  }
  failing.on = false;
  // The cause of the failed start is what the operator reads.
  expect((startError as Error | undefined)?.message).toContain(ACLS_FILE);
  // And the data directory is free again: fixed, it opens in this process.
  fs.unlinkSync(path.join(dir.path, ACLS_FILE));
  const again = Broker.open({ dataDir: dir.path });
  expect(again.listTopics().map((topic) => topic.name)).toEqual(["t"]);
  await again.close();
});
