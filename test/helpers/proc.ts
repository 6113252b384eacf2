/** What this process holds, from /proc/self: open descriptors and memory mappings (Linux only). */
import fs from "node:fs";

/** How many descriptors this process has open (entries of /proc/self/fd). */
export function openDescriptorCount(): number {
  return fs.readdirSync("/proc/self/fd").length;
}

/**
 * How many of this process's descriptors refer to files under `directory` (deleted ones included).
 * What a storage test means by "no descriptor leaked": unlike the total count, it does not move when
 * something else in the test process (a child's pipe, the runtime) opens or closes a descriptor.
 */
export function descriptorsUnder(directory: string): number {
  // The kernel reports resolved paths; resolve ours too (a temp dir may sit behind a symlink).
  const prefix = `${fs.realpathSync(directory)}/`;
  let count = 0;
  for (const entry of fs.readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = fs.readlinkSync(`/proc/self/fd/${entry}`);
    } catch {
      continue; // closed since the listing (the listing's own descriptor, for one)
    }
    if (target.startsWith(prefix)) count++;
  }
  return count;
}

/** How many of this process's memory mappings name a path containing `text` (lines of /proc/self/maps). */
export function mappingsContaining(text: string): number {
  return fs
    .readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .filter((line) => line.includes(text)).length;
}
