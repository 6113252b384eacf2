/**
 * Freeing the memory of socket chunks the Kafka listener has copied, at once instead of at the
 * collector's next full collection.
 *
 * Why: JavaScriptCore frees an ArrayBuffer's memory in a full collection, not in an eden one
 * (measured with `bun:jsc` edenGC against fullGC, docs/benchmarks.md "Peak memory of the Kafka
 * listener"), and full collections come late: 27-34 MiB of such memory was waiting at the end of
 * the produce runs of that page's reproduction of the peers benchmark. Every byte a producer sends arrives in a fresh buffer of
 * Bun's (one per socket `data` event, up to 512 KiB), which the listener copies into its inbound
 * buffer: all of it stayed resident until the next full collection. `ArrayBuffer.prototype
 * .transfer(0)` detaches a buffer and frees its memory right away; the allocator hands the same
 * memory to the next chunk.
 *
 * Invariant: a chunk is freed only when the listener owns all of it and has copied it (a detached
 * buffer reads as empty, so a mistake shows as lost bytes, never as someone else's).
 */

/**
 * Frees a socket chunk that was copied and will not be read again; returns whether it did. A chunk
 * that is a view of a larger buffer (other bytes of it may still be in use) or is already detached
 * is left alone.
 */
export function releaseChunk(chunk: Uint8Array): boolean {
  const buffer = chunk.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.detached) return false;
  if (chunk.byteOffset !== 0 || chunk.byteLength !== buffer.byteLength) return false;
  buffer.transfer(0);
  return true;
}
