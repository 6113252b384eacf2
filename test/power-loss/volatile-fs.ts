/**
 * The volatile file system (volatile-fs.c) from TypeScript: build it, mount it, pull the plug, mount
 * what survived.
 *
 * A power cut is SIGUSR1 (from then on nothing becomes durable and every call on the mount fails
 * with EIO), then an unmount: the daemon writes only what fsync/fdatasync/fsyncdir made durable to
 * its image file and exits; the next mount serves that image (see the header of volatile-fs.c).
 * The binary is compiled once per process into a temporary directory (`cc … $(pkg-config fuse3)`),
 * never committed. Mounting needs /dev/fuse and root (or fusermount3); where that is impossible the
 * tests that need it are skipped with `volatileFsUnavailable` printed as the reason.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Subprocess } from "bun";
import { LineReader } from "../helpers/process.ts";
import { waitUntil } from "../helpers/wait.ts";

const SOURCE = path.join(import.meta.dir, "volatile-fs.c");
/** The daemon's line when the unmount's abort of the connection met a request being read. */
const UNMOUNT_RACE = "volatile-fs: the unmount raced a request (ECONNABORTED), harmless";

let built: string | undefined;

/**
 * Compiles volatile-fs.c, or reuses the binary an earlier run built from the same source and flags
 * (in `<tmp>/booblik-volatile-fs-<hash>/`: one directory per version of the source, not one per run,
 * so nothing accumulates). Returns the binary's path or throws with the compiler's words.
 */
export function buildVolatileFs(): string {
  if (built !== undefined) return built;
  const flags = spawnSync("pkg-config", ["--cflags", "--libs", "fuse3"], { encoding: "utf8" });
  if (flags.status !== 0)
    throw new Error(
      `pkg-config fuse3 failed (apt-get install libfuse3-dev pkg-config): ${flags.stderr || flags.error?.message}`,
    );
  const args = ["-O2", "-Wall", "-Wextra", "-Werror", SOURCE, ...flags.stdout.trim().split(/\s+/)];
  const hash = new Bun.CryptoHasher("sha256")
    .update(fs.readFileSync(SOURCE))
    .update(args.join(" "))
    .digest("hex")
    .slice(0, 16);
  const directory = path.join(os.tmpdir(), `booblik-volatile-fs-${hash}`);
  const binary = path.join(directory, "volatile-fs");
  if (!fs.existsSync(binary)) {
    fs.mkdirSync(directory, { recursive: true });
    // Compile to a name of this process's, then rename: a concurrent run never sees half a binary.
    const partial = `${binary}.${process.pid}`;
    const cc = spawnSync("cc", ["-o", partial, ...args], { encoding: "utf8" });
    if (cc.status !== 0) throw new Error(`cc failed: ${cc.stderr || cc.error?.message}`);
    fs.renameSync(partial, binary);
  }
  built = binary;
  return binary;
}

/** Whether a volatile-fs is mounted at `mountpoint` in this process's mount table. */
export function isMounted(mountpoint: string): boolean {
  // Field 5 of mountinfo is the mount point; " - fuse.volatile " names our file system type.
  return fs
    .readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((line) => line.split(" ")[4] === mountpoint && line.includes(" - fuse.volatile "));
}

export interface MountOptions {
  /** Tear the last unsynced write of each file at a seeded random byte at the next power cut. */
  tearSeed?: number | undefined;
  /** How long each fsync/fdatasync takes, like a device flush (default 0). */
  syncLatencyUs?: number | undefined;
}

export class VolatileFs implements AsyncDisposable {
  /** Where the file system is mounted; the same path across power cuts. */
  readonly path: string;
  private readonly home: string;
  private readonly image: string;
  private daemon: Subprocess<"ignore", "ignore", "pipe"> | undefined;
  private stderr: LineReader | undefined;
  private unplugged = false;
  /**
   * Unmounts at which a daemon thread got ECONNABORTED from /dev/fuse: the kernel's abort of the
   * connection at unmount met a request (a RELEASE of a file the killed broker had open) being taken
   * off the queue. The daemon saves the image all the same (see volatile-fs.c, main).
   */
  unmountRaces = 0;
  private failing = { syncs: false, writes: false };

  private constructor(home: string) {
    this.home = home;
    this.path = path.join(home, "mnt");
    this.image = path.join(home, "image");
    fs.mkdirSync(this.path);
  }

  /** Mounts an empty volatile file system in a new temporary directory. */
  static async mount(options: MountOptions = {}): Promise<VolatileFs> {
    const volatileFs = new VolatileFs(fs.mkdtempSync(path.join(os.tmpdir(), "booblik-volatile-fs-")));
    try {
      await volatileFs.start(options);
    } catch (error) {
      await volatileFs[Symbol.asyncDispose]();
      throw error;
    }
    return volatileFs;
  }

  private async start(options: MountOptions): Promise<void> {
    const args = [buildVolatileFs(), "--image", this.image];
    if (options.tearSeed !== undefined) args.push("--tear", String(options.tearSeed >>> 0));
    if (options.syncLatencyUs !== undefined) args.push("--sync-latency-us", String(options.syncLatencyUs));
    const daemon = Bun.spawn([...args, this.path], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    const stderr = new LineReader(daemon.stderr);
    this.daemon = daemon;
    this.stderr = stderr;
    this.unplugged = false;
    this.failing = { syncs: false, writes: false };
    await waitUntil(async () => {
      if (daemon.exitCode !== null || daemon.signalCode !== null) {
        this.daemon = undefined;
        throw new Error(`volatile-fs did not mount: ${(await stderr.rest()).join(" ").trim()}`);
      }
      return isMounted(this.path);
    }, "volatile-fs to mount");
  }

  /**
   * Cuts the power, with the broker still running if it is: once this resolves nothing becomes
   * durable any more (a sync still waiting fails), and every call on the mount fails with EIO. What
   * the file system keeps is decided here; pullThePlug then unmounts.
   */
  async unplug(): Promise<void> {
    const daemon = this.daemon;
    const stderr = this.stderr;
    if (daemon === undefined || stderr === undefined) throw new Error("volatile-fs is not mounted");
    if (this.unplugged) return;
    daemon.kill("SIGUSR1");
    // The daemon confirms from its signal handler, after setting the flag every call checks.
    await stderr.waitFor((line) => line === "volatile-fs: unplugged", "volatile-fs to confirm the cut");
    this.unplugged = true;
  }

  /**
   * A failing device, while every other call keeps working: `"syncs"` makes every fsync, fdatasync
   * and fsyncdir fail with EIO without changing what is durable; `"writes"` makes every write fail
   * with EIO (pages written back from a shared mapping too). `fail` false makes them work again.
   */
  async fail(calls: "syncs" | "writes", fail: boolean): Promise<void> {
    const daemon = this.daemon;
    const stderr = this.stderr;
    if (daemon === undefined || stderr === undefined) throw new Error("volatile-fs is not mounted");
    if (this.failing[calls] === fail) return;
    daemon.kill(calls === "syncs" ? "SIGUSR2" : "SIGURG");
    const said = `volatile-fs: ${calls} ${fail ? "fail" : "work"}`;
    await stderr.waitFor((line) => line === said, `volatile-fs to say "${said}"`);
    this.failing[calls] = fail;
  }

  /**
   * Checks that the kernel still forwards fsync on this mount: fsyncs a file of the harness's own
   * (`sync-probe` at the root, beside the broker's directory) and asks the daemon (SIGWINCH) whether
   * the sync reached it. Once one FSYNC is answered ENOSYS, Linux stops sending FSYNC for the rest of
   * the mount and fsync returns 0 without reaching the file system (fs/fuse/file.c fuse_fsync:
   * fc->no_fsync); a broker on such a mount acknowledges records no sync covered, and the next
   * power cut takes them. Throws, naming that, when the probe's sync did not arrive.
   */
  async probeSync(): Promise<void> {
    const before = await this.counts();
    const fd = fs.openSync(path.join(this.path, "sync-probe"), "w");
    try {
      fs.writeSync(fd, "probe");
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    const after = await this.counts();
    if (after.probe <= before.probe)
      throw new Error(
        `volatile-fs: an fsync on the mount did not reach the daemon (probe syncs ${before.probe} -> ${after.probe}, file syncs ${after.files}): the kernel stopped forwarding FSYNC (fc->no_fsync), so this cycle's acknowledgements were never synced; a harness failure, not the broker's`,
      );
  }

  /** The daemon's sync counters (SIGWINCH: "volatile-fs: counts probe=P files=F"). */
  private async counts(): Promise<{ probe: number; files: number }> {
    const daemon = this.daemon;
    const stderr = this.stderr;
    if (daemon === undefined || stderr === undefined) throw new Error("volatile-fs is not mounted");
    daemon.kill("SIGWINCH");
    const line = await stderr.waitFor(
      (l) => l.startsWith("volatile-fs: counts "),
      "volatile-fs to report its counts",
    );
    const [, probe, files] = /probe=(\d+) files=(\d+)/.exec(line) ?? [];
    return { probe: Number(probe), files: Number(files) };
  }

  /**
   * Pulls the plug (unplug, unless that happened already) and unmounts: the daemon keeps only what
   * was synced, tearing last writes if asked. Returns the daemon's one-line account of what it
   * discarded. Everything that has a file open on the mount must be dead by now, or the unmount
   * fails (EBUSY) and so does this; with `lazy` the mount is detached at once and the daemon ends
   * when the last file open on it closes (volatile-fs.test.ts provokes the unmount race with it).
   */
  async pullThePlug(options: { lazy?: boolean } = {}): Promise<string> {
    await this.unplug();
    const daemon = this.daemon!;
    const unmount = spawnSync("fusermount3", options.lazy ? ["-u", "-z", this.path] : ["-u", this.path], {
      encoding: "utf8",
    });
    if (unmount.status !== 0)
      throw new Error(`fusermount3 -u failed: ${unmount.stderr || unmount.error?.message}`);
    const [lines, exitCode] = await Promise.all([this.stderr!.rest(), daemon.exited]);
    this.daemon = undefined;
    const stderr = lines.join("\n");
    if (exitCode !== 0) throw new Error(`volatile-fs exited with ${exitCode}: ${stderr.trim()}`);
    const account = /volatile-fs: power cut: (.*)/.exec(stderr)?.[1] ?? stderr.trim();
    // The unmount's own abort of the connection met a request being read (see volatile-fs.c, main):
    // the daemon saved the image as on any unmount; counted and said, never silent.
    if (!lines.includes(UNMOUNT_RACE)) return account;
    this.unmountRaces++;
    return `${account}; the unmount raced a request (ECONNABORTED, harmless)`;
  }

  /** Copies the image the last power cut left (before anything ran on it again) to `to`. */
  keepImage(to: string): void {
    fs.copyFileSync(this.image, to);
  }

  /** Mounts what the last power cut left. */
  remount(options: MountOptions = {}): Promise<void> {
    if (this.daemon !== undefined) throw new Error("volatile-fs is still mounted");
    return this.start(options);
  }

  /** Pull the plug, then mount what survived; returns the account of the cut. */
  async powerCycle(options: MountOptions = {}): Promise<string> {
    const account = await this.pullThePlug();
    await this.remount(options);
    return account;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    const daemon = this.daemon;
    this.daemon = undefined;
    if (daemon !== undefined) {
      // Lazy: also when something still holds a file open there (a test that failed midway).
      spawnSync("fusermount3", ["-u", "-z", this.path]);
      // A guard, not a pace: the daemon exits as soon as the kernel lets go of the mount.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exited = await Promise.race([
        daemon.exited,
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), 5_000);
        }),
      ]);
      clearTimeout(timer);
      if (exited === undefined) daemon.kill("SIGKILL");
      await daemon.exited;
    }
    fs.rmSync(this.home, { recursive: true, force: true });
  }
}

/**
 * Writes the files and directories of an image (see "the image" in volatile-fs.c: kind 'D' or 'F',
 * u32 path length, path, and for 'F' a u64 size and the bytes, in the byte order of the machine)
 * below `directory`, for a post-mortem with ordinary tools (`booblik-cli segment dump`).
 */
export function extractImage(image: string, directory: string): void {
  const bytes = fs.readFileSync(image);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const littleEndian = os.endianness() === "LE";
  fs.mkdirSync(directory, { recursive: true });
  for (let at = 0; at < bytes.length; ) {
    const kind = String.fromCharCode(bytes[at]!);
    const length = view.getUint32(at + 1, littleEndian);
    const name = bytes.subarray(at + 5, at + 5 + length).toString();
    at += 5 + length;
    const target = path.join(directory, name);
    if (kind === "D") {
      fs.mkdirSync(target, { recursive: true });
      continue;
    }
    const size = Number(view.getBigUint64(at, littleEndian));
    fs.writeFileSync(target, bytes.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
}

/** Why the volatile file system cannot be used here, or undefined when it can. Probed once. */
export const volatileFsUnavailable: string | undefined = await (async () => {
  if (!fs.existsSync("/dev/fuse")) return "no /dev/fuse";
  try {
    buildVolatileFs();
    await using probe = await VolatileFs.mount();
    await probe.pullThePlug();
    return undefined;
  } catch (error) {
    return `cannot build or mount volatile-fs: ${(error as Error).message}`;
  }
})();
