/**
 * Reading and damaging segment files by hand, for the tests that check what the broker and
 * booblik-cli make of damage (test/cli/damage-reads, quarantine-lifetime, verify-recovery-point):
 * the layout is docs/format.md's, read here independently of src/storage.
 */
import fs from "node:fs";
import path from "node:path";

/** One entry of a segment file: where its frame starts, its batch's BaseOffset, frame included bytes. */
export interface SegmentEntry {
  position: number;
  baseOffset: number;
  bytes: number;
}

/** The entries of a segment file, walked by their frames (after the 32-byte header) to a zero length. */
export function entriesOf(file: string): SegmentEntry[] {
  const bytes = fs.readFileSync(file);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: SegmentEntry[] = [];
  let position = 32;
  while (position + 8 <= bytes.length) {
    const length = view.getUint32(position);
    if (length === 0) break;
    const baseOffset = view.getUint32(position + 8) * 2 ** 32 + view.getUint32(position + 12);
    entries.push({ position, baseOffset, bytes: 8 + length });
    position += 8 + length;
  }
  return entries;
}

/** Flips the bits of `mask` (bit 4 unless told) in the byte at `position`, in place. */
export function flipByte(file: string, position: number, mask = 0x10): void {
  const fd = fs.openSync(file, "r+");
  try {
    const byte = new Uint8Array(1);
    fs.readSync(fd, byte, 0, 1, position);
    byte[0]! ^= mask;
    fs.writeSync(fd, byte, 0, 1, position);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * What a crash leaves in `<partitionDir>/checkpoint.json` when the last force covered the bytes of
 * segment `segmentBaseOffset` before `position` (the entries before `nextOffset`): not a clean stop,
 * so a start scans from there.
 */
export function writeCheckpointFile(
  partitionDir: string,
  point: { segmentBaseOffset: number; position: number; nextOffset: number },
): void {
  fs.writeFileSync(
    path.join(partitionDir, "checkpoint.json"),
    `${JSON.stringify({ version: 1, cleanShutdown: false, recoveryPoint: point })}\n`,
  );
}
