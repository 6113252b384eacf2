/**
 * A Disk (src/storage/disk.ts) that is the real one, except that writes to the internal
 * `__consumer_offsets` topic's files fail with ENOSPC while `full.on` is set: the offsets topic
 * meets a full disk, every other file does not. Install it with `useDisk`.
 */
import { ioError } from "../../ffi/file.ts";
import { OFFSETS_TOPIC_NAME } from "../../src/domain/limits.ts";
import { type Disk, realDisk } from "../../src/storage/disk.ts";

const ENOSPC = 28;

export function offsetsTopicFullDisk(full: { on: boolean }): Disk {
  return {
    ...realDisk,
    pwriteAll(fd, source, start, end, position, file) {
      if (full.on && file?.includes(OFFSETS_TOPIC_NAME) === true)
        throw ioError("pwrite", ENOSPC, file, "test: the disk is full");
      realDisk.pwriteAll(fd, source, start, end, position, file);
    },
  };
}
