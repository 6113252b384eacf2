/**
 * A failing fsync under a running broker, for every durability policy on both write paths: the data
 * directory on volatile-fs (test/power-loss/volatile-fs.c) with its syncs made to fail with EIO
 * while every other call works, as a device whose flush fails. The broker and booblik-cli run as
 * child processes. docs/operations.md, "What survives what", cites it.
 *
 * Checked: once a force of a partition failed, that partition refuses every PRODUCE until the broker
 * restarts, even after the device works again (a retried fsync that succeeds proves nothing about the
 * data of the failed one); under `force` the PRODUCE whose force failed is refused, not
 * acknowledged; reads of what it showed keep working; another topic takes writes once syncs work;
 * SIGTERM still stops the broker; after a restart every acknowledged record is there, the partition
 * takes writes, and a power cut after that restart keeps every acknowledged record.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { waitUntil } from "../helpers/wait.ts";
import { VolatileFs, volatileFsUnavailable } from "./volatile-fs.ts";

setDefaultTimeout(120_000);
if (volatileFsUnavailable !== undefined) console.warn(`sync-failure tests skipped: ${volatileFsUnavailable}`);

const VARIANTS = ["force", "append", "interval"].flatMap((policy) =>
  ["file", "mapped"].map((writeMode) => [policy, writeMode] as const),
);

const line = (i: number) => `record ${i} ${"x".repeat(40)}`;

describe.skipIf(volatileFsUnavailable !== undefined).each(VARIANTS)(
  "fsync fails, %s policy, %s write path",
  (policy, writeMode) => {
    test("the partition stops until restart, reads go on, nothing acknowledged is lost", async () => {
      await using vfs = await VolatileFs.mount();
      const dataDir = path.join(vfs.path, "data");
      /** Lines whose PRODUCE was acknowledged (exit 0), by offset. */
      const acknowledged: string[] = [];
      {
        await using broker = await startBroker(dataDir);
        const at = ["--broker", `127.0.0.1:${broker.port}`];
        const cli = (args: string[], stdin?: string) =>
          runCli([...at, ...args], stdin === undefined ? {} : { stdin });
        const produce = async (topic: string, lines: string[]) => {
          const run = await cli(["--json", "produce", topic, "--partition", "0"], `${lines.join("\n")}\n`);
          if (run.exitCode === 0 && topic === "t") acknowledged.push(...lines);
          return run;
        };
        for (const topic of ["t", "other"]) {
          const created = await cli([
            "topics",
            "create",
            topic,
            "--durability",
            policy,
            "--write-mode",
            writeMode,
            "--segment-size",
            "4KiB",
          ]);
          expect(created.exitCode).toBe(0);
        }
        expect((await produce("t", [0, 1, 2].map(line))).exitCode).toBe(0);

        await vfs.failSyncs(true);
        // Under `force` the next PRODUCE waits for a force, which fails. Under `append` a force runs
        // after a roll (4 KiB segments: about every 70 records), under `interval` on its timer: the
        // PRODUCEs are acknowledged until that background force has failed, then refused.
        let refusal: { code: string; message: string } | undefined;
        let next = acknowledged.length;
        await waitUntil(async () => {
          const lines = Array.from({ length: 20 }, (_, i) => line(next + i));
          const run = await produce("t", lines);
          if (run.exitCode === 0) {
            next += lines.length;
            return false;
          }
          refusal = JSON.parse(run.stderr).error;
          return true;
        }, "a PRODUCE refused after the failed fsync");
        if (policy === "force") expect(acknowledged.length).toBe(3);
        expect(refusal!.code).toBe("STORAGE_ERROR");
        expect(refusal!.message).toContain("EIO");

        await vfs.failSyncs(false);
        // The device works again; the partition still refuses, naming the earlier failure.
        const again = await produce("t", [line(9999)]);
        expect(again.exitCode).toBe(1);
        const stopped = JSON.parse(again.stderr).error;
        expect(stopped.code).toBe("STORAGE_ERROR");
        expect(stopped.message).toContain("refuses appends after an earlier failure");
        expect(stopped.message).toContain("EIO");
        // Reads of what it showed go on: every acknowledged record, at its offset.
        const read = await cli(["consume", "t", "--partition", "0", "--max", String(acknowledged.length)]);
        expect(read.exitCode).toBe(0);
        expect(read.stdout).toBe(acknowledged.map((l) => `${l}\n`).join(""));
        // Another partition takes writes.
        expect((await produce("other", ["elsewhere"])).exitCode).toBe(0);
        expect(await broker.stop("SIGTERM")).toBe(0);
      }
      {
        await using broker = await startBroker(dataDir);
        const at = ["--broker", `127.0.0.1:${broker.port}`];
        const after = await runCli([...at, "produce", "t", "--partition", "0"], {
          stdin: "after the restart\n",
        });
        expect(after.exitCode).toBe(0);
        const read = await runCli([...at, "consume", "t", "--partition", "0"]);
        const lines = read.stdout.split("\n").slice(0, -1);
        // Every acknowledged record at its offset; records whose PRODUCE was refused may follow
        // (written, never acknowledged), then the new one.
        expect(lines.slice(0, acknowledged.length)).toEqual(acknowledged);
        expect(lines.at(-1)).toBe("after the restart");
        expect(await broker.stop("SIGKILL")).not.toBe(0);
      }
      // The restart made what it recovered durable: a power cut now keeps every acknowledged record.
      await vfs.powerCycle();
      {
        await using broker = await startBroker(dataDir);
        const read = await runCli([
          "--broker",
          `127.0.0.1:${broker.port}`,
          "consume",
          "t",
          "--partition",
          "0",
        ]);
        expect(read.stdout.split("\n").slice(0, acknowledged.length)).toEqual(acknowledged);
      }
    });
  },
);
