/**
 * The bounded form of `bun run torture` (see torture.ts): a few SIGKILL cycles of a real broker under
 * concurrent producers and a position-saving consumer. The seed is in the test name; BOOBLIK_SEED
 * replays it here and `bun run torture --seed <n>` replays it at length.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { runTorture } from "./torture.ts";

setDefaultTimeout(120_000);
const SEED = testSeed();

test(`crash torture, 6 cycles (seed ${SEED})`, async () => {
  using dir = tempDir();
  const result = await runTorture({ cycles: 6, seed: SEED, workDir: dir.path });
  expect(result.cycles).toBe(6);
  expect(result.acknowledged).toBeGreaterThan(0);
  expect(result.consumed).toBeGreaterThanOrEqual(result.acknowledged);
  // The group committer's commits were acknowledged, and checked after each restart.
  expect(result.commitsAcknowledged).toBeGreaterThan(0);
});
