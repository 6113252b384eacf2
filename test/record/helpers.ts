/**
 * Shared by the record tests: text as bytes, hex, recomputing a batch CRC after byte surgery, and
 * catching a typed batch error.
 */
import { expect } from "bun:test";
import { CRC_OFFSET, computeBatchCrc, InvalidBatchError } from "../../src/record/batch.ts";

const ENCODER = new TextEncoder();

export const utf8 = (text: string): Uint8Array => ENCODER.encode(text);
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

/** Recomputes the batch CRC, so that surgery inside [21, end) reaches the check it aims at. */
export function resign(batch: Uint8Array): Uint8Array {
  new DataView(batch.buffer, batch.byteOffset).setUint32(CRC_OFFSET, computeBatchCrc(batch, 0, batch.length));
  return batch;
}

/** Runs `action`, expects an InvalidBatchError and returns it. */
export function batchError(action: () => unknown): InvalidBatchError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidBatchError);
    return error as InvalidBatchError;
  }
  throw new Error("expected an InvalidBatchError, nothing was thrown");
}
