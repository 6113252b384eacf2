/**
 * The receive buffer's two moves for large answers (src/protocol/inbound-buffer.ts): `reserveFrame`
 * makes room for a whole announced frame at once, so later chunks never move it; `detach` gives the
 * buffer away with the frame in it and goes on with a new one holding what followed the frame.
 */
import { describe, expect, test } from "bun:test";
import { INBOUND_INITIAL_BYTES } from "../../src/domain/limits.ts";
import { InboundBuffer } from "../../src/protocol/inbound-buffer.ts";

function bytesOf(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);
}

describe("InboundBuffer", () => {
  test("reserveFrame: a frame announced in a first chunk is never moved by the chunks that complete it", () => {
    const inbound = new InboundBuffer(1024);
    inbound.append(bytesOf(100, 1)); // an earlier frame, consumed
    inbound.consumeTo(100);
    const frame = bytesOf(300_000, 7);
    inbound.append(frame.subarray(0, 700));
    inbound.reserveFrame(inbound.start, frame.length);
    const reserved = inbound.bytes;
    expect(reserved.length).toBeGreaterThanOrEqual(frame.length);
    for (let at = 700; at < frame.length; at += 65_536) inbound.append(frame.subarray(at, at + 65_536));
    expect(inbound.bytes).toBe(reserved); // no reallocation while the frame came in
    expect(inbound.bytes.subarray(inbound.start, inbound.end)).toEqual(frame);
  });

  test("reserveFrame: a frame that fits the capacity is moved to the start once, not regrown", () => {
    const inbound = new InboundBuffer(1000);
    inbound.append(bytesOf(900, 2));
    inbound.consumeTo(800); // 100 bytes of a frame of 600 start at 800
    inbound.reserveFrame(800, 600);
    expect(inbound.bytes.length).toBe(1000);
    expect(inbound.start).toBe(0);
    expect(inbound.bytes.subarray(0, inbound.end)).toEqual(bytesOf(900, 2).subarray(800));
  });

  test("detach: the buffer goes to the caller untouched; the bytes after the frame go on in a new one", () => {
    const inbound = new InboundBuffer(4096);
    const first = bytesOf(1000, 3);
    const next = bytesOf(50, 9); // the first bytes of the next frame, in the same chunk
    const chunk = new Uint8Array(1050);
    chunk.set(first);
    chunk.set(next, 1000);
    inbound.append(chunk);
    const given = inbound.detach(1000);
    expect(given.subarray(0, 1000)).toEqual(first);
    expect(inbound.bytes).not.toBe(given);
    expect(inbound.bytes.length).toBe(INBOUND_INITIAL_BYTES);
    expect(inbound.bytes.subarray(inbound.start, inbound.end)).toEqual(next);
    // Later chunks land in the new buffer only.
    inbound.append(bytesOf(5000, 4));
    expect(given.subarray(0, 1000)).toEqual(first);
    expect(inbound.length).toBe(5050);
  });
});
