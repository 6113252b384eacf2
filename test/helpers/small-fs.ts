/**
 * A size-limited tmpfs for disk-full tests. Mounting needs CAP_SYS_ADMIN (root in CI and in these
 * sandboxes); where it is impossible the tests that need it are skipped with that reason printed.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export interface SmallFileSystem extends Disposable {
  readonly path: string;
}

function tryMount(target: string, sizeBytes: number): string | undefined {
  const result = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", target], {
    encoding: "utf8",
  });
  if (result.status === 0) return undefined;
  return (result.stderr || result.error?.message || `mount exited with ${result.status}`).trim();
}

/** Why small file systems cannot be mounted here, or undefined when they can. Probed once. */
export const smallFileSystemUnavailable: string | undefined = (() => {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), "booblik-mount-probe-"));
  try {
    const failure = tryMount(probe, 64 * 1024);
    if (failure !== undefined) return `cannot mount a tmpfs here (${failure})`;
    spawnSync("umount", [probe]);
    return undefined;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
})();

export function mountSmallFileSystem(sizeBytes: number): SmallFileSystem {
  const target = fs.mkdtempSync(path.join(os.tmpdir(), "booblik-small-fs-"));
  const failure = tryMount(target, sizeBytes);
  if (failure !== undefined) {
    fs.rmSync(target, { recursive: true, force: true });
    throw new Error(`mount failed: ${failure}`);
  }
  return {
    path: target,
    [Symbol.dispose]() {
      spawnSync("umount", ["-l", target]);
      fs.rmSync(target, { recursive: true, force: true });
    },
  };
}
