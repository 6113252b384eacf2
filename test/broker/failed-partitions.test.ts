/**
 * A partition stopped by a failed fdatasync (EIO) is counted by `Broker.failedPartitionCount`
 * (booblik_failed_partitions in /metrics): it refuses appends until a restart, reads work, and the
 * other partitions go on. Before 2026-12-03 such a partition showed in no metric (a fault hunt's
 * finding); only the refused requests said so.
 */
import { afterEach, expect, test } from "bun:test";
import { ioError } from "../../ffi/file.ts";
import { Broker } from "../../src/broker/broker.ts";
import { realDisk, useDisk } from "../../src/storage/disk.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const EIO = 5;
let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

test("a partition whose fdatasync failed is counted as failed; the others are not", async () => {
  using dir = tempDir("failed-partitions");
  const failing = { on: false };
  restore = useDisk({
    ...realDisk,
    datasync(fd, file) {
      if (failing.on && file?.includes("/bad-0/") === true)
        return Promise.reject(ioError("fdatasync", EIO, file, "test: a failing device"));
      return realDisk.datasync(fd, file);
    },
    datasyncNow(fd, file) {
      if (failing.on && file?.includes("/bad-0/") === true)
        throw ioError("fdatasync", EIO, file, "test: a failing device");
      realDisk.datasyncNow(fd, file);
    },
  });
  const broker = Broker.open({ dataDir: dir.path, topicDefaults: { durability: "force" } });
  try {
    broker.createTopic("bad");
    broker.createTopic("good");
    await broker.append("bad", 0, ["before"]);
    expect(broker.failedPartitionCount()).toBe(0);
    failing.on = true;
    await expect(broker.append("bad", 0, ["lost"])).rejects.toThrow("EIO");
    await broker.append("good", 0, ["fine"]);
    expect(broker.failedPartitionCount()).toBe(1);
    await expect(broker.append("bad", 0, ["refused"])).rejects.toThrow();
    expect(broker.read("bad", 0, 0).recordCount).toBe(1);
  } finally {
    failing.on = false;
    await broker.close().catch(() => undefined);
  }
});
