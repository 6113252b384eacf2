/**
 * Assertions for programmer errors: a broken invariant is a bug, not an operating condition, so it
 * throws an `AssertionError` that nobody is meant to catch. Operating errors are `BooblikError`s.
 */

export class AssertionError extends Error {
  override name = "AssertionError";
}

export function assert(condition: boolean, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}

export function unreachable(value: never, message = "unreachable"): never {
  throw new AssertionError(`${message}: ${String(value)}`);
}
