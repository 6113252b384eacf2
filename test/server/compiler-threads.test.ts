/**
 * `--compiler-priority` through a real broker process: by default JavaScriptCore's compiler threads
 * (`JITWorker`) run in SCHED_IDLE, so a request never waits behind a compilation
 * (src/server/compiler-threads.ts); with `normal` they keep the normal policy; any other value is
 * refused. The policy is read from the kernel: field 41 of /proc/<pid>/task/<tid>/stat.
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
  test("by default the compiler threads run in SCHED_IDLE, and no other thread does", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, [], { BOOBLIK_COMPILER_PRIORITY: undefined });
    const pid = broker.process.pid;
    // Requests make the broker compile (a new compiler thread, if any, is found by the next sweep).
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await client.createTopic("t", { durability: "append" });
    for (let i = 0; i < 200; i++) await client.produce("t", 0, batchOfValues([`record ${i}`]));
    client.close();
    await waitUntil(() => {
      const compilers = compilerThreads(pid);
      return compilers.length > 0 && compilers.every((thread) => thread.policy === SCHED_IDLE);
    }, "every compiler thread in SCHED_IDLE");
    const others = threads(pid).filter((thread) => thread.name !== "JITWorker");
    expect(others.length).toBeGreaterThan(0);
    expect(others.filter((thread) => thread.policy !== SCHED_OTHER)).toEqual([]);
    expect(await broker.stop()).toBe(0);
  });

  test("normal leaves them as they are; the variable says the same; another value is refused", async () => {
    using dir = tempDir();
    for (const [args, env] of [
      [["--compiler-priority", "normal"], {}],
      [[], { BOOBLIK_COMPILER_PRIORITY: "normal" }],
    ] as const) {
      await using broker = await startBroker(dir.path, [...args], env);
      const pid = broker.process.pid;
      // The idle default's first sweep runs before the start line, so a broker that ignored the
      // setting would have moved every compiler thread there was by now.
      await waitUntil(() => compilerThreads(pid).length > 0, "a compiler thread");
      expect(threads(pid).filter((thread) => thread.policy !== SCHED_OTHER)).toEqual([]);
      expect(await broker.stop()).toBe(0);
    }
    const refused = await runBrokerExpectingFailure(["--data-dir", dir.path, "--compiler-priority", "low"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('--compiler-priority must be one of idle, normal, got "low"');
  });
});
