/**
 * Waiting for a condition with a deadline: `await waitUntil(() => seen.length === 3, "three records")`.
 * Polls the predicate (which may be async, and may throw to give up early, e.g. when a child process
 * it depends on has exited) and fails with `what` if it is still false after `timeoutMs`.
 */
export async function waitUntil(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 5,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (performance.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(intervalMs);
  }
}
