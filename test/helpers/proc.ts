/** What this process holds, from /proc/self: open descriptors and memory mappings (Linux only). */
import fs from "node:fs";

/** How many descriptors this process has open (entries of /proc/self/fd). */
export function openDescriptorCount(): number {
  return fs.readdirSync("/proc/self/fd").length;
}

/** How many of this process's memory mappings name a path containing `text` (lines of /proc/self/maps). */
export function mappingsContaining(text: string): number {
  return fs
    .readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .filter((line) => line.includes(text)).length;
}
