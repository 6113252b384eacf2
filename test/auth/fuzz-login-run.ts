/**
 * The longer run of the login fuzzer (fuzz-login.ts): `bun run fuzz:login [--rounds N]
 * [--conversations N] [--blind N] [--concurrency N] [--flood-every N] [--flood N] [--seed S]`
 * starts a broker child process with a users file on a temporary data directory, runs the rounds,
 * reads the good records back, and prints the seed, the frames sent, the hostile outcomes, the
 * flood's figures (the most 127.0.0.1 logins outstanding at once, refusals), the good client's
 * figures, the broker's log lines by kind, any internal error or stderr line, and the broker's RSS
 * every FUZZ_PRINT_EVERY rounds. Exit code 1 on a failure; `--seed` replays one.
 */
import fs from "node:fs";
import { parseArgs } from "node:util";
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

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "200" },
    conversations: { type: "string", default: "200" },
    blind: { type: "string", default: "200" },
    concurrency: { type: "string", default: "24" },
    "flood-every": { type: "string", default: "5" },
    flood: { type: "string", default: "32" },
    "flood-ms": { type: "string", default: "8000" },
    margin: { type: "string", default: "5000" },
    seed: { type: "string" },
  },
});
const seed = args.seed === undefined ? testSeed() : Number(args.seed) >>> 0;
const rounds = Number(args.rounds);
console.log(
  `login fuzzer: seed ${seed}, ${rounds} rounds of ${args.conversations} interactive and ${args.blind} blind conversations, a flood of ${args.flood} connections every ${args["flood-every"]} rounds`,
);

const dir = tempDir("fuzz-login");
const { broker, ports, log } = await startLoginBroker(dir.file("data"), writeUsers(dir.file("users.json")));

function rssMiB(): string {
  try {
    const status = fs.readFileSync(`/proc/${broker.process.pid}/status`, "utf8");
    return (Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024).toFixed(0);
  } catch {
    return "?";
  }
}
const started = performance.now();
let failure: unknown;
const problems: string[] = [];
try {
  await createGoodTopics(ports);
  console.log(`broker RSS at the start: ${rssMiB()} MiB`);
  const result = await fuzzLogins({
    ports,
    seed,
    rounds,
    conversationsPerRound: Number(args.conversations),
    blindPerRound: Number(args.blind),
    concurrency: Number(args.concurrency),
    floodEvery: Number(args["flood-every"]),
    floodConnections: Number(args.flood),
    floodMinMs: Number(args["flood-ms"]),
    marginMs: Number(args.margin),
    onRound: (round, stats) => {
      if ((round + 1) % Number(process.env.FUZZ_PRINT_EVERY ?? 20) === 0)
        console.log(
          `  round ${round + 1}: ${stats.frames} frames, ${((performance.now() - started) / 1000).toFixed(0)} s, broker RSS ${rssMiB()} MiB, flood outstanding max ${stats.floodOutstandingMax}`,
        );
    },
  });
  const values = await readGoodValues(ports.kafka, rounds);
  const wrong = values.findIndex((value, round) => value !== `good ${round}`);
  if (values.length !== rounds || wrong !== -1) throw new Error(`good records read back wrong at ${wrong}`);
  const { stats, good } = result;
  console.log(
    `sent ${stats.frames} hostile frames (${stats.floodFrames} of them in floods of 127.0.0.1) in ${stats.conversations} interactive and ${stats.blind} blind conversations; ${stats.answered} answered, ${stats.closed} closed, ${stats.silent.length} neither within the bound; ${stats.hostileLogins} hostile logins succeeded`,
  );
  console.log(
    `flood: at most ${stats.floodOutstandingMax} logins of 127.0.0.1 outstanding at once (bound ${WAITERS_MAX} + ${FLOOD_SLACK}); ${stats.floodRefused} refused as too many waiting; longest wait ${(stats.floodWaitMaxMs / 1000).toFixed(1)} s`,
  );
  console.log(
    `good client: ${good.acknowledged} records acknowledged in order and read back; ${good.kafkaLogins} Kafka and ${good.nativeLogins} native logins (with a produce and fetch), ${good.busyRefusals} refusals as busy retried, longest login ${(good.loginMaxMs / 1000).toFixed(1)} s, longest produce ${(good.produceMaxMs / 1000).toFixed(1)} s; broker RSS ${rssMiB()} MiB`,
  );
  for (const frame of stats.silent.slice(0, 10)) problems.push(`silent frame: ${frame}`);
  if (stats.floodOutstandingMax > WAITERS_MAX + FLOOD_SLACK)
    problems.push(`${stats.floodOutstandingMax} logins of 127.0.0.1 outstanding at once`);
} catch (error) {
  failure = error;
}
const alive = broker.process.exitCode === null;
const exitCode = alive ? await broker.stop("SIGTERM") : broker.process.exitCode;
await log.done;
console.log("broker log lines by kind:");
for (const [kind, count] of [...log.counts].sort((a, b) => b[1] - a[1]).slice(0, 30))
  console.log(`  ${count}\t${kind}`);
console.log(
  `took ${((performance.now() - started) / 1000).toFixed(1)} s; broker ${alive ? "alive" : "DIED"}, stopped with exit code ${exitCode}; ${log.kept.length} internal errors; ${log.stderr.length} stderr lines`,
);
for (const l of log.kept.slice(0, 10)) console.log(`  ${l}`);
for (const l of log.stderr.slice(0, 20)) console.log(`  stderr: ${l}`);
for (const p of problems) console.log(`PROBLEM: ${p}`);
if (failure !== undefined) console.log(`FAILED (seed ${seed}): ${(failure as Error).stack ?? failure}`);
const passed =
  failure === undefined &&
  exitCode === 0 &&
  log.kept.length === 0 &&
  log.stderr.length === 0 &&
  problems.length === 0;
if (passed) dir[Symbol.dispose]();
else console.log(`the broker's data directory is kept in ${dir.path}`);
process.exit(passed ? 0 : 1);
