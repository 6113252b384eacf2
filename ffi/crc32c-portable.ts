/**
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78) in plain TypeScript, slicing-by-16.
 *
 * This is the fallback when ISA-L is not installed (see crc32c.ts). Measured on Bun 1.4.4 here:
 * slicing-by-16 runs 1.6-2.1 GB/s on 64 KiB-1 MiB buffers against 0.3-0.4 GB/s bytewise and
 * 1.2-1.5 GB/s slicing-by-8 (bun-platform §5). It imports nothing, so the client can use it anywhere.
 */

const POLYNOMIAL_REFLECTED = 0x82f63b78;
const SLICES = 16;
const TABLE = buildTable();

function buildTable(): Uint32Array {
  const table = new Uint32Array(SLICES * 256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ POLYNOMIAL_REFLECTED : crc >>> 1;
    table[byte] = crc >>> 0;
  }
  // Table k advances a byte through k further zero bytes: T[k][b] = (T[k-1][b] >>> 8) ^ T[0][T[k-1][b] & 0xff].
  for (let slice = 1; slice < SLICES; slice++) {
    for (let byte = 0; byte < 256; byte++) {
      const previous = table[(slice - 1) * 256 + byte]!;
      table[slice * 256 + byte] = ((previous >>> 8) ^ table[previous & 0xff]!) >>> 0;
    }
  }
  return table;
}

/** Standard CRC32C of `bytes[start, end)` (initial value and final xor 0xFFFFFFFF), unsigned. */
export function crc32cPortable(bytes: Uint8Array, start: number, end: number): number {
  const t = TABLE;
  let crc = ~0;
  let i = start;
  // Each 16-byte block: the first four bytes are folded into the running CRC and looked up in the
  // tables for 15..12 further bytes; the other twelve are looked up alone in tables 11..0.
  while (end - i >= 16) {
    const low = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[3840 + (low & 0xff)]! ^
      t[3584 + ((low >>> 8) & 0xff)]! ^
      t[3328 + ((low >>> 16) & 0xff)]! ^
      t[3072 + (low >>> 24)]! ^
      t[2816 + bytes[i + 4]!]! ^
      t[2560 + bytes[i + 5]!]! ^
      t[2304 + bytes[i + 6]!]! ^
      t[2048 + bytes[i + 7]!]! ^
      t[1792 + bytes[i + 8]!]! ^
      t[1536 + bytes[i + 9]!]! ^
      t[1280 + bytes[i + 10]!]! ^
      t[1024 + bytes[i + 11]!]! ^
      t[768 + bytes[i + 12]!]! ^
      t[512 + bytes[i + 13]!]! ^
      t[256 + bytes[i + 14]!]! ^
      t[bytes[i + 15]!]!;
    i += 16;
  }
  while (i < end) crc = t[(crc ^ bytes[i++]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}
