/**
 * A seeded PRNG for tests. Every randomized test prints its seed on failure through the test name or
 * message; `BOOBLIK_SEED=<n>` replays one.
 */

export function testSeed(): number {
  const fromEnv = process.env.BOOBLIK_SEED;
  if (fromEnv !== undefined && fromEnv !== "") return Number(fromEnv) >>> 0;
  return (Math.random() * 2 ** 32) >>> 0;
}

/** mulberry32: small, fast, good enough to pick sizes and positions. */
export class Random {
  private state: number;
  readonly seed: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.state = this.seed;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = (this.next() * 256) | 0;
    return out;
  }
}

/**
 * The payload of the record at `offset` in tests that must recognise records after a crash: derived
 * from the offset alone, of a length that varies with it.
 */
export function payloadForOffset(offset: number, maxExtraBytes = 200): Uint8Array {
  const text = `record-${offset}-`;
  const extra = (offset * 7919) % (maxExtraBytes + 1);
  const out = new Uint8Array(text.length + extra);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  for (let i = 0; i < extra; i++) out[text.length + i] = (offset + i) & 0xff;
  return out;
}
