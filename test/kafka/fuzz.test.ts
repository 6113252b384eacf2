/**
 * The Kafka listener under a seeded fuzzer (fuzz-kafka.ts): mutated frames of every (API, version)
 * booblik advertises (fuzz-templates.test.ts checks that each has a template), and random bytes, on
 * hostile connections, while a well-behaved idempotent kafkajs producer appends to its own topic. The broker must acknowledge every good record in order, keep
 * them all (read back by a kafkajs consumer), log no internal error (an exception a request's
 * decoder did not turn into a clear refusal), and stop cleanly. A bounded run for the gate; the seed
 * is in the test name and BOOBLIK_SEED=<n> replays it; `bun run fuzz:kafka` runs longer.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { fuzzKafka, readAllValues, startFuzzBroker } from "./fuzz-kafka.ts";

setDefaultTimeout(120_000);

const SEED = testSeed();
const ROUNDS = 150;
const FRAMES_PER_ROUND = 12;

test(`Kafka fuzzer: mutated frames of every API never crash the broker; a kafkajs producer is unaffected (seed ${SEED})`, async () => {
  using dir = tempDir();
  const { broker, port, logLines } = await startFuzzBroker(dir.path, "fuzz-good");
  await using _stop = broker;

  const result = await fuzzKafka({
    port,
    seed: SEED,
    rounds: ROUNDS,
    framesPerRound: FRAMES_PER_ROUND,
    goodTopic: "fuzz-good",
  });
  expect(result).toEqual({ frames: ROUNDS * FRAMES_PER_ROUND, acknowledged: ROUNDS });
  const values = await readAllValues(port, "fuzz-good", ROUNDS);
  expect(values).toEqual(Array.from({ length: ROUNDS }, (_, round) => `good ${round}`));

  expect(broker.process.exitCode).toBeNull();
  expect(await broker.stop("SIGTERM")).toBe(0);
  const logged = await logLines;
  expect(logged.filter((l) => l.includes("internal error"))).toEqual([]);
});

test("bun run fuzz:kafka leaves nothing in the temporary directory after a passing run", async () => {
  // Its data directory comes from os.tmpdir(), which follows TMPDIR. The script used to end with
  // process.exit before its `using` disposal ran: every run left a data directory behind.
  using scratch = tempDir("fuzz-tmpdir");
  const child = Bun.spawn(
    [process.execPath, path.join(import.meta.dir, "fuzz.ts"), "--rounds", "20", "--seed", String(SEED)],
    { env: { ...process.env, TMPDIR: scratch.path }, stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, , code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  expect([code, stdout.includes("0 internal errors")]).toEqual([0, true]);
  expect(fs.readdirSync(scratch.path)).toEqual([]);
});
