/**
 * Where a process's resident memory is, by mapping: /proc/<pid>/smaps summed into three kinds.
 *
 * - `segments`: file mappings of `<20 digits>.log` files (the mapped write path's active segments).
 *   Their resident pages are the page cache of those files seen through the mapping: counted in the
 *   process's RSS (as RssFile, never RssAnon) while mapped, dropped from it at munmap, and written
 *   back by the kernel whether mapped or not. Private_Dirty here means "dirty, mapped by this
 *   process only", not copy-on-write: the mappings are MAP_SHARED.
 * - `anonymous`: mappings without a file ([heap], [stack], [anon:…], unnamed): the JS heap, malloc's
 *   arenas, buffers outside the JS heap. This is RssAnon of /proc/<pid>/status.
 * - `files`: every other file mapping (the Bun binary, shared libraries).
 */
import fs from "node:fs";

export interface MappingKind {
  mappings: number;
  rssKiB: number;
  privateDirtyKiB: number;
  sharedDirtyKiB: number;
  cleanKiB: number;
}

export interface SmapsBreakdown {
  segments: MappingKind;
  anonymous: MappingKind;
  files: MappingKind;
}

const SEGMENT_FILE = /\/\d{20}\.log$/;

function emptyKind(): MappingKind {
  return { mappings: 0, rssKiB: 0, privateDirtyKiB: 0, sharedDirtyKiB: 0, cleanKiB: 0 };
}

/** Reads /proc/<pid>/smaps once (a few ms for a few hundred mappings) and sums it by kind. */
export function smapsBreakdown(pid: number): SmapsBreakdown {
  const result: SmapsBreakdown = { segments: emptyKind(), anonymous: emptyKind(), files: emptyKind() };
  let current = result.anonymous;
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const first = line.charCodeAt(0);
    // A mapping's header line starts with its address (hex); its fields start with a capital.
    const isHeader = (first >= 48 && first <= 57) || (first >= 97 && first <= 102);
    if (isHeader) {
      const fields = line.split(/\s+/);
      const name = fields.slice(5).join(" ");
      current =
        name === "" || name.startsWith("[")
          ? result.anonymous
          : SEGMENT_FILE.test(name)
            ? result.segments
            : result.files;
      current.mappings++;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const field = line.slice(0, colon);
    if (field !== "Rss" && field !== "Private_Dirty" && field !== "Shared_Dirty" && !field.endsWith("_Clean"))
      continue;
    const kib = Number.parseInt(line.slice(colon + 1), 10);
    if (field === "Rss") current.rssKiB += kib;
    else if (field === "Private_Dirty") current.privateDirtyKiB += kib;
    else if (field === "Shared_Dirty") current.sharedDirtyKiB += kib;
    else current.cleanKiB += kib;
  }
  return result;
}
