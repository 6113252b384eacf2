/**
 * The login paths under a seeded fuzzer (fuzz-login.ts), bounded for the gate: mutated Kafka
 * SaslHandshake/SaslAuthenticate (SCRAM-SHA-256/512, PLAIN) and native AUTHENTICATE conversations
 * from many loopback addresses, and a flood of them from 127.0.0.1, while a good client of
 * 127.0.0.1 produces through a logged-in kafkajs producer and logs in afresh each round on both
 * listeners (with a produce and fetch on the native one). The broker must answer or close every
 * hostile frame within the documented delays, keep at most 16 logins of 127.0.0.1 waiting, let
 * the good client in within the documented bound, log no internal error and nothing on stderr,
 * and stop cleanly. The seed is in the test name; BOOBLIK_SEED=<n> replays it; `bun run
 * fuzz:login` runs longer.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import {
  createGoodTopics,
  FLOOD_SLACK,
  fuzzLogins,
  readGoodValues,
  startLoginBroker,
  WAITERS_MAX,
  writeUsers,
} from "./fuzz-login.ts";

setDefaultTimeout(60_000);

const SEED = testSeed();
const ROUNDS = 4;

test(`login fuzzer: mutated SASL and AUTHENTICATE conversations never crash or hang the broker; the good client gets in (seed ${SEED})`, async () => {
  using dir = tempDir("fuzz-login");
  const { broker, ports, log } = await startLoginBroker(dir.file("data"), writeUsers(dir.file("users.json")));
  await using _stop = broker;
  await createGoodTopics(ports);
  const { stats, good } = await fuzzLogins({
    ports,
    seed: SEED,
    rounds: ROUNDS,
    conversationsPerRound: 60,
    blindPerRound: 60,
    concurrency: 16,
    floodEvery: 2,
    floodConnections: 24,
    floodMinMs: 1_500,
    marginMs: 5_000,
  });
  expect(stats.silent).toEqual([]);
  expect(stats.floodOutstandingMax).toBeLessThanOrEqual(WAITERS_MAX + FLOOD_SLACK);
  expect(good).toMatchObject({ acknowledged: ROUNDS, kafkaLogins: ROUNDS, nativeLogins: ROUNDS });
  expect(await readGoodValues(ports.kafka, ROUNDS)).toEqual(
    Array.from({ length: ROUNDS }, (_, round) => `good ${round}`),
  );
  expect(broker.process.exitCode).toBeNull();
  expect(await broker.stop("SIGTERM")).toBe(0);
  await log.done;
  expect({ internal: log.kept, stderr: log.stderr }).toEqual({ internal: [], stderr: [] });
});
