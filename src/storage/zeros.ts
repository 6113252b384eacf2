/**
 * Writing zeros ahead of a segment writer's position, for both write paths (their headers say why
 * each wants written blocks there), and the page rounding of their windows. Owns one shared buffer of
 * zeros: JS runs one pwrite at a time and nothing ever writes into it.
 */
import { PAGE_BYTES } from "../../ffi/libc.ts";
import { ZERO_CHUNK_BYTES } from "../domain/limits.ts";
import { disk } from "./disk.ts";

let zeros: Uint8Array | undefined;

/**
 * Writes zeros over `[from, to)` of `fd`, ZERO_CHUNK_BYTES per pwrite. A throw (ENOSPC, EIO) may leave
 * a prefix of the zeros written; zeros beyond a writer's published size are harmless.
 */
export function writeZeros(fd: number, from: number, to: number, path: string): void {
  zeros ??= new Uint8Array(ZERO_CHUNK_BYTES);
  for (let at = from; at < to; at += ZERO_CHUNK_BYTES) {
    disk.pwriteAll(fd, zeros, 0, Math.min(ZERO_CHUNK_BYTES, to - at), at, path);
  }
}

/** `bytes` rounded up to a whole page: windows end on page boundaries. */
export function roundUpToPage(bytes: number): number {
  return Math.ceil(bytes / PAGE_BYTES) * PAGE_BYTES;
}
