/**
 * The longer run of the Kafka fuzzer (fuzz-kafka.ts): `bun run fuzz:kafka [--rounds N] [--frames N]
 * [--seed S] [--watch F]` starts a broker child process on a temporary data directory, runs the
 * rounds, reads the good records back, and prints the seed, the frames sent, how the broker answered
 * the hostile connections (its log lines, counted by reason), any internal error, and the broker's
 * RSS every FUZZ_PRINT_EVERY rounds (memory that grows without bound shows there). `--watch F`
 * also sends a fraction F of the frames on connections that wait for an answer or a close (40 s at
 * most) and prints the frames that got neither (a hang, unless Kafka too leaves them unanswered:
 * Produce acks=0). Exit code 1 on a failure; `--seed` replays one.
 */
import fs from "node:fs";
import { parseArgs } from "node:util";
import { testSeed } from "../helpers/random.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { fuzzKafka, readAllValues, startFuzzBroker } from "./fuzz-kafka.ts";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "2000" },
    frames: { type: "string", default: "12" },
    seed: { type: "string" },
    watch: { type: "string", default: "0" },
  },
});
const seed = args.seed === undefined ? testSeed() : Number(args.seed) >>> 0;
const rounds = Number(args.rounds);
const framesPerRound = Number(args.frames);
console.log(`Kafka fuzzer: seed ${seed}, ${rounds} rounds of ${framesPerRound} frames`);

// Not `using`: the process.exit at the end skips disposals, and every run left its data directory
// in /tmp (seen 2026-12-02). Removed below when the run passed; kept, and named, when it failed.
const dir = tempDir();
const { broker, port, logLines } = await startFuzzBroker(dir.path, "fuzz-good");

/** The broker child's resident set, from /proc (Linux), in MiB. */
function rssMiB(): string {
  try {
    const status = fs.readFileSync(`/proc/${broker.process.pid}/status`, "utf8");
    return (Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024).toFixed(0);
  } catch {
    return "?";
  }
}
const watchFraction = Number(args.watch);
console.log(`broker RSS at the start: ${rssMiB()} MiB`);
const started = performance.now();
let failure: unknown;
try {
  const result = await fuzzKafka({
    port,
    seed,
    rounds,
    framesPerRound,
    goodTopic: "fuzz-good",
    ...(watchFraction > 0 ? { watch: { fraction: watchFraction, deadlineMs: 40_000 } } : {}),
    onRound: (round) => {
      if ((round + 1) % Number(process.env.FUZZ_PRINT_EVERY ?? 500) === 0)
        console.log(`  round ${round + 1}: broker RSS ${rssMiB()} MiB`);
    },
  });
  const values = await readAllValues(port, "fuzz-good", rounds);
  const wrong = values.findIndex((value, round) => value !== `good ${round}`);
  if (values.length !== rounds || wrong !== -1) throw new Error(`good records read back wrong at ${wrong}`);
  console.log(
    `sent ${result.frames} hostile frames; ${result.acknowledged} good records acknowledged in order and read back; broker RSS ${rssMiB()} MiB`,
  );
  if (result.watched !== undefined) {
    const { answered, closed, silent } = result.watched;
    console.log(
      `watched frames: ${answered} answered, ${closed} closed, ${silent.length} neither within 40 s`,
    );
    // By API and version: every kind once, with the first frame of it.
    const kinds = new Map<string, { count: number; frame: Uint8Array }>();
    for (const frame of silent) {
      const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
      const kind = frame.length >= 8 ? `api ${view.getInt16(4)} v${view.getInt16(6)}` : "short";
      const seen = kinds.get(kind);
      if (seen) seen.count++;
      else kinds.set(kind, { count: 1, frame });
    }
    for (const [kind, { count, frame }] of kinds)
      console.log(`  silent: ${count} × ${kind}, e.g. ${Buffer.from(frame).toString("hex").slice(0, 160)}`);
  }
} catch (error) {
  failure = error;
}
const alive = broker.process.exitCode === null;
const exitCode = alive ? await broker.stop("SIGTERM") : broker.process.exitCode;
const logged = await logLines;
const reasons = new Map<string, number>();
for (const l of logged) {
  // "booblik: kafka: closing the connection from <address>: <reason>"; the reason's first words.
  const text = l.replace(/^booblik: /, "").replace(/^kafka: closing the connection from [^ ]+: /, "");
  const reason = (/^(malformed [A-Z_]+ request|[^:0-9(]+)/.exec(text)?.[1] ?? text).slice(0, 70);
  reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
}
console.log("broker log lines by reason:");
for (const [reason, count] of [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 25))
  console.log(`  ${count}\t${reason}`);
const internal = logged.filter((l) => l.includes("internal error"));
console.log(
  `took ${((performance.now() - started) / 1000).toFixed(1)} s; broker ${alive ? "alive" : "DIED"}, stopped with exit code ${exitCode}; ${internal.length} internal errors`,
);
for (const l of internal.slice(0, 10)) console.log(`  ${l}`);
if (failure !== undefined) console.log(`FAILED (seed ${seed}): ${(failure as Error).message}`);
const passed = failure === undefined && exitCode === 0 && internal.length === 0;
if (passed) dir[Symbol.dispose]();
else console.log(`the broker's data directory is kept in ${dir.path}`);
process.exit(passed ? 0 : 1);
