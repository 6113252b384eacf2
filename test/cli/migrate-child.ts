/**
 * `booblik-cli migrate`'s conversion in a child process that SIGKILLs itself right before its Nth
 * change on disk (argv[3]; 0 = never), for test/cli/migrate-kill.test.ts: a kill -9 at every step of
 * a migration, deterministic and repeatable. Prints {"steps": n, "outcome": …} when it finishes.
 */
import { DataDirLock } from "../../src/broker/data-dir-lock.ts";
import { migrateFormat1 } from "../../src/storage/migrate-format1.ts";

const dataDir = process.argv[2]!;
const killAt = Number(process.argv[3] ?? 0);
let steps = 0;
const report = migrateFormat1(dataDir, {
  lockDirectory: (directory) => DataDirLock.acquire(directory),
  onStep: () => {
    steps++;
    // A signal a process sends itself is delivered before kill(2) returns to it: nothing after runs.
    if (steps === killAt) process.kill(process.pid, "SIGKILL");
  },
});
console.log(JSON.stringify({ steps, outcome: report.outcome }));
