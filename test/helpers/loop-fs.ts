/**
 * Small ext4 and XFS file systems on loop devices, for the disk-full tests that a tmpfs cannot stand
 * in for: on ext4 a store through a shared mapping into fallocated (unwritten) blocks of a full file
 * system raised SIGBUS (a tmpfs has no unwritten extents, so it never showed this).
 *
 * Needs root, loop devices, and mkfs.ext4 (e2fsprogs) / mkfs.xfs (xfsprogs); `.ci/run` installs both.
 * Where any of it is missing, `loopFileSystemUnavailable(kind)` says why and the tests skip with that
 * reason printed. Cleanup runs on every exit path of the test's scope: unmount (the loop device was
 * attached with autoclear by `mount -o loop`, so it is released with the mount), then any loop device
 * still attached to the image is detached, then the image and mount point are removed.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export type LoopFileSystemKind = "ext4" | "xfs";

export interface LoopFileSystem extends Disposable {
  readonly kind: LoopFileSystemKind;
  readonly path: string;
}

function run(command: string, args: string[], env?: Record<string, string>): string | undefined {
  const result = spawnSync(command, args, {
    encoding: "utf8",
    env: env === undefined ? process.env : { ...process.env, ...env },
  });
  if (result.status === 0) return undefined;
  return (
    result.stderr ||
    result.stdout ||
    result.error?.message ||
    `${command} exited with ${result.status}`
  ).trim();
}

function makeFileSystem(kind: LoopFileSystemKind, image: string, ext4Options: string[]): string | undefined {
  if (kind === "ext4") return run("mkfs.ext4", ["-q", "-F", ...ext4Options, image]);
  // mkfs.xfs refuses file systems below 300 MB unless it runs under fstests, which it recognises by
  // these variables (xfsprogs 6.1); a 32 MiB XFS mounts and works.
  return run("mkfs.xfs", ["-q", "-f", image], { TEST_DIR: "1", TEST_DEV: "1", QA_CHECK_FS: "1" });
}

function detachLoopDevices(image: string): void {
  const result = spawnSync("losetup", ["-j", image], { encoding: "utf8" });
  for (const line of (result.stdout ?? "").split("\n")) {
    const device = line.split(":")[0] ?? "";
    if (device.startsWith("/dev/loop")) spawnSync("losetup", ["-d", device]);
  }
}

function unmount(target: string): void {
  if (run("umount", [target]) !== undefined) run("umount", ["-l", target]);
}

/**
 * Creates, formats and mounts a `sizeBytes` image; throws with the failing command's message.
 * `ext4Options` go to mkfs.ext4 (e.g. `-m 0`: no blocks reserved for root).
 */
export function mountLoopFileSystem(
  kind: LoopFileSystemKind,
  sizeBytes: number,
  ext4Options: string[] = [],
): LoopFileSystem {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `booblik-${kind}-`));
  const image = path.join(root, "image");
  const target = path.join(root, "mnt");
  let mounted = false;
  const cleanUp = () => {
    if (mounted) unmount(target);
    detachLoopDevices(image);
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    fs.mkdirSync(target);
    fs.writeFileSync(image, "");
    fs.truncateSync(image, sizeBytes);
    const formatFailure = makeFileSystem(kind, image, ext4Options);
    if (formatFailure !== undefined) throw new Error(`mkfs (${kind}) failed: ${formatFailure}`);
    const mountFailure = run("mount", ["-o", "loop", "-t", kind, image, target]);
    if (mountFailure !== undefined) throw new Error(`mount (${kind}) failed: ${mountFailure}`);
    mounted = true;
  } catch (error) {
    cleanUp();
    throw error;
  }
  return { kind, path: target, [Symbol.dispose]: cleanUp };
}

const probed = new Map<LoopFileSystemKind, string | undefined>();

/** Why a `kind` file system cannot be loop-mounted here, or undefined when it can. Probed once. */
export function loopFileSystemUnavailable(kind: LoopFileSystemKind): string | undefined {
  if (!probed.has(kind)) {
    let reason: string | undefined;
    try {
      using probe = mountLoopFileSystem(kind, 32 * 1024 * 1024);
      fs.writeFileSync(path.join(probe.path, "probe"), "x");
    } catch (error) {
      reason = `cannot loop-mount ${kind} here (${(error as Error).message})`;
    }
    probed.set(kind, reason);
  }
  return probed.get(kind);
}
