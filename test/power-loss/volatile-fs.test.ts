/**
 * The volatile file system itself (volatile-fs.c): what a power cut keeps and what it takes, and the
 * calls the broker makes on it. The power-loss torture is only as good as this model, so each rule
 * is shown both ways: without the sync the change is gone, with it the change survives.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { datasyncNow, preadFull, pwriteAll, tryLockExclusive } from "../../ffi/file.ts";
import { DataDirLock } from "../../src/broker/data-dir-lock.ts";
import { DataDirLockedError } from "../../src/domain/errors.ts";
import { waitUntil } from "../helpers/wait.ts";
import { isMounted, VolatileFs, volatileFsUnavailable } from "./volatile-fs.ts";

setDefaultTimeout(30_000);
if (volatileFsUnavailable !== undefined) console.warn(`volatile-fs tests skipped: ${volatileFsUnavailable}`);

const bytes = (text: string) => new TextEncoder().encode(text);

function syncDirectory(directory: string): void {
  const fd = fs.openSync(directory, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Creates `name` with `content`, fdatasyncs it and fsyncs its directory: durable as a whole. */
function writeDurably(directory: string, name: string, content: string): void {
  const fd = fs.openSync(path.join(directory, name), "w");
  try {
    fs.writeSync(fd, bytes(content));
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  syncDirectory(directory);
}

const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined);

describe.skipIf(volatileFsUnavailable !== undefined)("volatile-fs: a power cut", () => {
  test("takes an unsynced write and keeps an fdatasynced one, size included", async () => {
    await using vfs = await VolatileFs.mount();
    const file = path.join(vfs.path, "log");
    writeDurably(vfs.path, "log", "durable;");
    const fd = fs.openSync(file, "r+");
    pwriteAll(fd, bytes("forced;"), 0, 7, 8);
    datasyncNow(fd);
    pwriteAll(fd, bytes("unforced"), 0, 8, 15);
    fs.closeSync(fd);
    expect(read(file)).toBe("durable;forced;unforced");
    expect(await vfs.powerCycle()).toContain("discarded unsynced changes of 1 files and 0 directories");
    expect(read(file)).toBe("durable;forced;");
  });

  test("takes a file whose directory was never fsynced, even though the file itself was", async () => {
    await using vfs = await VolatileFs.mount();
    const file = path.join(vfs.path, "segment");
    const fd = fs.openSync(file, "w");
    fs.writeSync(fd, bytes("header"));
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    await vfs.powerCycle();
    expect(fs.existsSync(file)).toBe(false);
    // The same with the directory fsynced: it stays, with its content.
    writeDurably(vfs.path, "segment", "header");
    await vfs.powerCycle();
    expect(read(file)).toBe("header");
  });

  test("undoes a rename until its directory is fsynced (the atomic replace of a checkpoint)", async () => {
    await using vfs = await VolatileFs.mount();
    const target = path.join(vfs.path, "checkpoint.json");
    const temporary = path.join(vfs.path, "checkpoint.json.tmp");
    writeDurably(vfs.path, "checkpoint.json", "old");
    writeDurably(vfs.path, "checkpoint.json.tmp", "new");
    fs.renameSync(temporary, target);
    expect(read(target)).toBe("new");
    await vfs.powerCycle();
    expect(read(target)).toBe("old");
    expect(read(temporary)).toBe("new");
    fs.renameSync(temporary, target);
    syncDirectory(vfs.path);
    await vfs.powerCycle();
    expect(read(target)).toBe("new");
    expect(fs.existsSync(temporary)).toBe(false);
  });

  test("undoes an unlink, a mkdir and a truncate that no sync covered", async () => {
    await using vfs = await VolatileFs.mount();
    writeDurably(vfs.path, "kept", "0123456789");
    fs.unlinkSync(path.join(vfs.path, "kept"));
    fs.mkdirSync(path.join(vfs.path, "new-directory"));
    await vfs.powerCycle();
    expect(fs.readdirSync(vfs.path)).toEqual(["kept"]);
    fs.truncateSync(path.join(vfs.path, "kept"), 4);
    await vfs.powerCycle();
    expect(read(path.join(vfs.path, "kept"))).toBe("0123456789");
  });

  test("cuts under a running writer: a sync that returned is kept, one waiting fails, every later call fails", async () => {
    // Each sync takes 100 ms, like a slow device flush.
    await using vfs = await VolatileFs.mount({ syncLatencyUs: 100_000 });
    writeDurably(vfs.path, "log", "");
    const handle = await fs.promises.open(path.join(vfs.path, "log"), "r+");
    try {
      await handle.write(bytes("forced;"), 0, 7, 0);
      await handle.datasync(); // returned: durable
      await handle.write(bytes("waiting"), 0, 7, 7);
      // Settled into a value at once: it may fail while the cut is still being confirmed.
      const waiting = handle.datasync().then(
        () => "synced",
        (error: Error) => error.message,
      );
      await vfs.unplug();
      // Whether the sync reached the daemon before the cut or after, it must not succeed.
      expect(await waiting).toMatch(/EIO/);
      await expect(handle.write(bytes("after"), 0, 5, 14)).rejects.toThrow(/EIO/);
    } finally {
      await handle.close().catch(() => undefined);
    }
    await vfs.powerCycle();
    expect(read(path.join(vfs.path, "log"))).toBe("forced;");
  });

  test("with tearing on, lands a prefix of the last unsynced write on the durable bytes", async () => {
    const write = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const lengths = new Set<number>();
    await using vfs = await VolatileFs.mount({ tearSeed: 1 });
    writeDurably(vfs.path, "log", "durable;");
    for (let seed = 2; seed < 12; seed++) {
      const fd = fs.openSync(path.join(vfs.path, "log"), "r+");
      pwriteAll(fd, bytes("lost;"), 0, 5, 8); // an earlier unsynced write: gone, leaving zeros
      pwriteAll(fd, bytes(write), 0, write.length, 13);
      fs.closeSync(fd);
      await vfs.powerCycle({ tearSeed: seed });
      const after = read(path.join(vfs.path, "log"))!;
      expect(after.slice(0, 8)).toBe("durable;");
      if (after.length > 8) {
        expect(after.slice(8, 13)).toBe("\0".repeat(5));
        expect(write.startsWith(after.slice(13))).toBe(true);
      }
      lengths.add(after.length);
      // Back to the durable start for the next round.
      const reset = fs.openSync(path.join(vfs.path, "log"), "r+");
      fs.ftruncateSync(reset, 8);
      fs.fdatasyncSync(reset);
      fs.closeSync(reset);
    }
    // Ten seeds do not all tear at the same byte.
    expect(lengths.size).toBeGreaterThan(2);
  });
});

describe.skipIf(volatileFsUnavailable !== undefined)("volatile-fs: the unmount after a kill", () => {
  // The power-loss harness SIGKILLs the broker, then unmounts: the kernel sends the RELEASE of each
  // file the broker had open in the background, and the unmount's abort of the connection
  // (fs/fuse/inode.c, fuse_conn_destroy -> fuse_abort_conn) can meet a daemon thread taking one of
  // them off the queue, which then gets ECONNABORTED from /dev/fuse (fs/fuse/dev.c,
  // fuse_dev_do_read). Before volatile-fs.c handled that, the daemon exited 8 ("fuse: reading
  // device: Software caused connection abort") without saving the image, and the harness stopped
  // (cycle 621 of a 1,000-cycle run). Here the race is provoked: the mount is detached first (lazy
  // unmount), so the connection ends in the holder's own exit, right after the RELEASEs of its
  // 1,000 files were queued. With the daemon before the fix this test failed in its first rounds
  // (2 runs of 2); a round races about one time in ten, so it runs until two rounds raced.
  test("keeps the durable state, also when the unmount races the killed process's requests", async () => {
    await using vfs = await VolatileFs.mount();
    writeDurably(vfs.path, "kept", "durable");
    const maxRounds = 80;
    let rounds = 0;
    for (; rounds < maxRounds && vfs.unmountRaces < 2; rounds++) {
      const holder = Bun.spawn(
        [
          process.execPath,
          "-e",
          `const fs = require("node:fs");
           for (let i = 0; i < 1000; i++) fs.openSync(${JSON.stringify(vfs.path)} + "/open-" + i, "w");
           console.log("open");
           setInterval(() => {}, 1000);`,
        ],
        { stdin: "ignore", stdout: "pipe", stderr: "inherit" },
      );
      const said = await new Response(holder.stdout).body!.getReader().read();
      expect(new TextDecoder().decode(said.value)).toContain("open");
      await vfs.unplug();
      const cut = vfs.pullThePlug({ lazy: true });
      // Detached now; the connection ends when the holder's last file closes, right after the
      // RELEASEs of the others were queued.
      await waitUntil(() => !isMounted(vfs.path), "the lazy unmount to detach the mount");
      holder.kill("SIGKILL");
      await holder.exited;
      // Rejects when the daemon exits other than 0 (volatile-fs exited with 8: …).
      await cut;
      await vfs.remount();
      expect(read(path.join(vfs.path, "kept"))).toBe("durable");
      expect(fs.readdirSync(vfs.path)).toEqual(["kept"]);
    }
    console.log(
      `volatile-fs: ${vfs.unmountRaces} of ${rounds} unmounts raced a request (ECONNABORTED), every image kept`,
    );
    // Else this test showed only unmounts that did not race: say so rather than pass on them.
    expect(vfs.unmountRaces).toBeGreaterThan(0);
  });
});

describe.skipIf(volatileFsUnavailable !== undefined)("volatile-fs: the calls the broker makes", () => {
  test("sparse writes and writes beyond the end read back with zeros between", async () => {
    await using vfs = await VolatileFs.mount();
    const fd = fs.openSync(path.join(vfs.path, "sparse"), "w+");
    pwriteAll(fd, bytes("end"), 0, 3, 100_000);
    pwriteAll(fd, bytes("start"), 0, 5, 0);
    const back = new Uint8Array(100_003);
    expect(preadFull(fd, back, 0, back.length, 0)).toBe(100_003);
    expect(new TextDecoder().decode(back.subarray(0, 5))).toBe("start");
    expect(back.subarray(5, 100_000).every((b) => b === 0)).toBe(true);
    expect(new TextDecoder().decode(back.subarray(100_000))).toBe("end");
    fs.closeSync(fd);
  });

  test("an unlinked open file keeps working (retention deletes segments that readers hold open)", async () => {
    await using vfs = await VolatileFs.mount();
    const file = path.join(vfs.path, "segment");
    fs.writeFileSync(file, "records");
    const fd = fs.openSync(file, "r+");
    fs.unlinkSync(file);
    expect(fs.readdirSync(vfs.path)).toEqual([]);
    pwriteAll(fd, bytes("!"), 0, 1, 7);
    fs.fdatasyncSync(fd);
    const back = new Uint8Array(8);
    expect(preadFull(fd, back, 0, 8, 0)).toBe(8);
    expect(new TextDecoder().decode(back)).toBe("records!");
    fs.closeSync(fd);
  });

  test("flock works: the data-directory lock refuses a second holder", async () => {
    await using vfs = await VolatileFs.mount();
    const first = DataDirLock.acquire(vfs.path);
    try {
      expect(() => DataDirLock.acquire(vfs.path)).toThrow(DataDirLockedError);
      const fd = fs.openSync(path.join(vfs.path, ".lock"), "r");
      expect(tryLockExclusive(fd)).toBe(false);
      fs.closeSync(fd);
    } finally {
      first.release();
    }
    const again = DataDirLock.acquire(vfs.path);
    again.release();
  });
});
