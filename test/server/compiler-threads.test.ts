/**
 * `--compiler-priority` through real broker processes: with `idle` JavaScriptCore's compiler
 * threads (`JITWorker`) are put in SCHED_IDLE (src/server/compiler-threads.ts) and no other thread
 * is; by default (`normal`) nothing changes, checked on a broker started before an `idle` one and
 * looked at after that one's threads changed; any other value is refused. The policy is read from
 * the kernel: field 41 of /proc/<pid>/task/<tid>/stat.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(30_000);

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/** Name and scheduling policy of every thread of `pid` still running. */
function threads(pid: number): { name: string; policy: number }[] {
  const found: { name: string; policy: number }[] = [];
  for (const id of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${id}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      // Fields after the name start at field 3 (state); the policy is field 41.
      const policy = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[38]);
      found.push({ name, policy });
    } catch {
      // ended since the listing
    }
  }
  return found;
}

const compilerThreads = (pid: number) => threads(pid).filter((thread) => thread.name === "JITWorker");

describe("--compiler-priority", () => {
  test("idle puts the compiler threads in SCHED_IDLE and no other thread; the default leaves them; the variable says the same", async () => {
    using dir = tempDir();
    // The default first, so it has run at least as many sweeps as the idle one when both are looked at.
    await using normal = await startBroker(dir.file("normal"), [], { BOOBLIK_COMPILER_PRIORITY: undefined });
    for (const [args, env] of [
      [["--compiler-priority", "idle"], {}],
      [[], { BOOBLIK_COMPILER_PRIORITY: "idle" }],
    ] as const) {
      await using broker = await startBroker(dir.file(`idle-${args.length}`), [...args], env);
      const pid = broker.process.pid;
      // Requests make the broker compile (a new compiler thread is changed two sweeps after it starts).
      for (const port of [broker.port, normal.port]) {
        const client = await BooblikClient.connect({ host: "127.0.0.1", port });
        await client.createTopic(`t${args.length}`, { durability: "append" });
        for (let i = 0; i < 200; i++)
          await client.produce(`t${args.length}`, 0, batchOfValues([`record ${i}`]));
        client.close();
      }
      await waitUntil(() => {
        const compilers = compilerThreads(pid);
        return compilers.length > 0 && compilers.every((thread) => thread.policy === SCHED_IDLE);
      }, "every compiler thread in SCHED_IDLE");
      const others = threads(pid).filter((thread) => thread.name !== "JITWorker");
      expect(others.length).toBeGreaterThan(0);
      expect(others.filter((thread) => thread.policy !== SCHED_OTHER)).toEqual([]);
      // The default broker, started earlier, had as many sweeps: nothing of it changed.
      expect(compilerThreads(normal.process.pid).length).toBeGreaterThan(0);
      expect(threads(normal.process.pid).filter((thread) => thread.policy !== SCHED_OTHER)).toEqual([]);
      expect(await broker.stop()).toBe(0);
    }
    expect(await normal.stop()).toBe(0);
    const refused = await runBrokerExpectingFailure(["--data-dir", dir.path, "--compiler-priority", "low"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('--compiler-priority must be one of idle, normal, got "low"');
  });
});
