/**
 * A change answered with an error is in force exactly as far as the next start will have it. When a
 * file replaced atomically (writeFileAtomicallyNow / writeFileAtomically, ffi/file.ts) is renamed
 * into place and then its directory's fsync fails (EIO), the new content is what every read and the
 * next start see: the broker now applies the change in memory too and answers STORAGE_ERROR saying
 * so (UnsyncedReplaceError, src/domain/errors.ts), for ALTER_TOPIC, CREATE_ACLS, CREATE_TOPIC and
 * ADD_PARTITIONS. Found by a fault hunt (2026-12-03); this test failed on 10db40d, where the
 * callers treated the throw as "nothing changed": the running broker kept the old settings (a
 * refused ACL not enforced, a refused retention not applied) and the next start applied them.
 *
 * The fault: strace's syscall fault injection (`-e inject=fsync:error=EIO`) on the broker child
 * process, limited to the one directory by `-P`. Skipped where strace cannot run.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import {
  ACL_PERMISSION,
  MATCH_ALL_ACLS,
  ACL_OPERATION as OP,
  PATTERN_TYPE,
  RESOURCE_TYPE,
} from "../../src/auth/acl.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { MAIN, startBroker } from "../helpers/broker-process.ts";
import { LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(60_000);

const straceUnavailable: string | undefined = (() => {
  const result = spawnSync("strace", ["-qq", "-o", "/dev/null", "-e", "inject=fsync:error=EIO", "true"], {
    encoding: "utf8",
  });
  if (result.error !== undefined) return `strace is not installed (${result.error.message})`;
  if (result.status !== 0) return `strace cannot trace here: ${result.stderr.trim()}`;
  return undefined;
})();
if (straceUnavailable !== undefined) console.warn(`test skipped: ${straceUnavailable}`);

/** The broker under strace, every `syscall` (fsync by default) on `directory` failing with EIO. */
async function startWithFailingDirectorySync(
  dataDir: string,
  directory: string,
  args: string[],
  syscall: "fsync" | "fdatasync" = "fsync",
): Promise<{ port: number; stop(): Promise<void> }> {
  const child: Subprocess<"ignore", "pipe", "pipe"> = Bun.spawn(
    [
      "strace",
      "-f",
      "-qq",
      "-o",
      "/dev/null",
      "-P",
      directory,
      "-e",
      `trace=${syscall}`,
      "-e",
      `inject=${syscall}:error=EIO`,
      process.execPath,
      MAIN,
      "--data-dir",
      dataDir,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      ...args,
    ],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, BOOBLIK_KAFKA_PORT: "off" } },
  );
  const lines = new LineReader(child.stdout);
  const startLine = await lines.waitFor((line) => line.includes(" listening on "), "the start line");
  const port = Number(/listening on \S+:(\d+)/.exec(startLine)?.[1]);
  return {
    port,
    async stop() {
      // The broker is strace's child: signal it, and strace ends with it.
      const found = spawnSync("pgrep", ["-P", String(child.pid)], { encoding: "utf8" });
      for (const pid of found.stdout.trim().split("\n").filter(Boolean)) process.kill(Number(pid), "SIGKILL");
      child.kill("SIGKILL");
      await child.exited;
    },
  };
}

const ARGS = ["--authorizer", "acl", "--super-users", "User:ANONYMOUS"];

test.skipIf(straceUnavailable !== undefined)(
  "a topic change or an ACL whose directory sync fails is in force at once, as after a restart",
  async () => {
    using dir = tempDir("dir-fsync-failure");
    const dataDir = dir.file("data");
    {
      await using broker = await startBroker(dataDir, ARGS);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("t");
      client.close();
    }
    const live: { retentionMs?: unknown; acls?: number } = {};
    {
      // The topics directory's fsync fails: ALTER_TOPIC.
      const broker = await startWithFailingDirectorySync(dataDir, path.join(dataDir, "topics"), ARGS);
      try {
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        await expect(client.alterTopic("t", { retentionMs: 3_600_000 })).rejects.toThrow("EIO");
        live.retentionMs = (await client.metadata(["t"])).topics[0]!.config.retentionMs;
        client.close();
      } finally {
        await broker.stop();
      }
    }
    {
      // The data directory's fsync fails: CREATE_ACLS (acls.json lives there).
      const broker = await startWithFailingDirectorySync(dataDir, dataDir, ARGS);
      try {
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        await expect(
          client.createAcls([
            {
              resourceType: RESOURCE_TYPE.TOPIC,
              resourceName: "t",
              patternType: PATTERN_TYPE.LITERAL,
              principal: "User:bob",
              host: "*",
              operation: OP.READ,
              permission: ACL_PERMISSION.DENY,
            },
          ]),
        ).rejects.toThrow("EIO");
        live.acls = (await client.describeAcls(MATCH_ALL_ACLS)).length;
        client.close();
      } finally {
        await broker.stop();
      }
    }
    // A healthy restart shows what the broker showed while it was running.
    await using broker = await startBroker(dataDir, ARGS);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      expect((await client.metadata(["t"])).topics[0]!.config.retentionMs).toEqual(live.retentionMs);
      expect((await client.describeAcls(MATCH_ALL_ACLS)).length).toBe(live.acls!);
    } finally {
      client.close();
    }
  },
);

test.skipIf(straceUnavailable !== undefined)(
  "a delete whose topics directory sync fails keeps the groups' commits until it is durable",
  async () => {
    // Before 2026-12-03 the tombstones were written anyway: a power cut that undid the unlink (not
    // synced) brought the topic back with its records and without its groups' commits, so its
    // consumers started over by their reset rule. Now the commits stay until the delete is durable
    // (the next create of the name, or the next start, syncs the directory first).
    using dir = tempDir("dir-fsync-failure-delete");
    const dataDir = dir.file("data");
    const topicFile = path.join(dataDir, "topics", "t.json");
    /** The group's commit for t/0 (OFFSET_FETCH of every topic: an unknown one is refused), or −1. */
    const committed = async (client: BooblikClient) =>
      (await client.fetchOffsets("g")).find((o) => o.topic === "t" && o.partition === 0)?.offset ?? -1;
    {
      await using broker = await startBroker(dataDir, []);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("t", { durability: "force" });
      await client.produce("t", 0, batchOfValues(["kept"]));
      await client.commitOffsets("g", [{ topic: "t", partition: 0, offset: 1 }]);
      client.close();
    }
    const topicFileBytes = await Bun.file(topicFile).bytes();
    {
      const broker = await startWithFailingDirectorySync(dataDir, path.join(dataDir, "topics"), []);
      try {
        const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
        await expect(client.deleteTopic("t")).rejects.toThrow("EIO");
        // A crash may still bring the topic back: the commit is kept.
        expect(await committed(client)).toBe(1);
        // A create of the name tries to finish the delete first, and cannot while the sync fails.
        await expect(client.createTopic("t")).rejects.toThrow("could not be synced");
        client.close();
      } finally {
        await broker.stop(); // SIGKILL
      }
    }
    // The power cut lost the unlink: the topic file is back, as the directory never synced.
    await Bun.write(topicFile, topicFileBytes);
    {
      await using broker = await startBroker(dataDir, []);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      expect(await client.listOffsets("t", 0)).toMatchObject({ nextOffset: 1 });
      expect(await committed(client)).toBe(1);
      client.close();
    }
    // Had the unlink survived instead, the next start finishes the delete: commits forgotten, and
    // the name can be created again, empty and without them.
    fs.rmSync(topicFile);
    {
      await using broker = await startBroker(dataDir, []);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await waitUntil(async () => (await committed(client)) === -1, "the deleted topic's commit forgotten");
      await client.createTopic("t");
      expect(await client.listOffsets("t", 0)).toMatchObject({ nextOffset: 0 });
      expect(await committed(client)).toBe(-1);
      client.close();
    }
  },
);

test.skipIf(straceUnavailable !== undefined)(
  "a topic made `force` whose first force fails says its settings are in force",
  async () => {
    // The settings are in force (the topic file was replaced) when the force of the data written
    // before them fails; before 2026-12-03 the answer was the bare fdatasync error, which reads as
    // "nothing changed" to a caller about to retry or undo it.
    using dir = tempDir("alter-force-failure");
    const dataDir = dir.file("data");
    // The topic is made under the fault: started under it on an existing segment, the broker stopped
    // at its start.
    const segment = path.join(dataDir, "t-0", `${"0".repeat(20)}.log`);
    const broker = await startWithFailingDirectorySync(dataDir, segment, [], "fdatasync");
    try {
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      await client.createTopic("t", { durability: "append" });
      expect(fs.existsSync(segment)).toBe(true);
      await client.produce("t", 0, batchOfValues(["unforced"]));
      const refusal = client.alterTopic("t", { durability: "force" });
      await expect(refusal).rejects.toThrow("new settings are in force");
      await expect(refusal).rejects.toThrow("EIO");
      expect((await client.metadata(["t"])).topics[0]!.config.durability).toBe("force");
      client.close();
    } finally {
      await broker.stop();
    }
  },
);
