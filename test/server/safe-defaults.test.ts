/**
 * Safe by default, through a real broker process: with no options it listens on loopback only; a
 * non-loopback address without authentication is refused unless asked for in words (and then the
 * start line warns); broker-wide limits on topics, partitions and mapped address space refuse a
 * create with LIMIT_EXCEEDED naming the limit; every admin action is logged with where it came from.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { MAIN, runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(30_000);

describe("binding", () => {
  test("with no --host the broker listens on 127.0.0.1 only", async () => {
    using dir = tempDir();
    const env = { ...process.env };
    delete env.BOOBLIK_HOST; // the default, not whatever the environment running the tests says
    const child = Bun.spawn([process.execPath, MAIN, "--data-dir", dir.path, "--port", "0"], {
      stdout: "pipe",
      stderr: "pipe",
      env,
    });
    try {
      const line = await new LineReader(child.stdout).waitFor(
        (l) => l.includes(" listening on "),
        "start line",
      );
      expect(line).toContain("listening on 127.0.0.1:");
      expect(line).not.toContain("WARNING");
    } finally {
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
    }
  });

  test("a wildcard or other address without authentication is refused unless --allow-anonymous yes", async () => {
    using dir = tempDir();
    for (const host of ["0.0.0.0", "::", "192.0.2.1"]) {
      const refused = await runBrokerExpectingFailure([
        "--data-dir",
        dir.path,
        "--host",
        host,
        "--port",
        "0",
      ]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain(`refusing to listen on ${host} without authentication`);
      expect(refused.stderr).toContain("--allow-anonymous yes");
      expect(refused.stdout).not.toContain("listening");
    }
    const badValue = await runBrokerExpectingFailure([
      "--data-dir",
      dir.path,
      "--host",
      "0.0.0.0",
      "--allow-anonymous",
      "maybe",
    ]);
    expect(badValue.exitCode).toBe(1);
    expect(badValue.stderr).toContain('--allow-anonymous must be one of yes, no, got "maybe"');
    await using broker = await startBroker(dir.path, ["--host", "0.0.0.0", "--allow-anonymous", "yes"]);
    expect(broker.startLine).toContain("listening on 0.0.0.0:");
    const warning = await broker.lines.waitFor((line) => line.includes("WARNING"), "the warning");
    expect(warning).toContain(
      `no authentication (--allow-anonymous yes): anyone who can reach 0.0.0.0:${broker.port} can create, read, write and delete every topic`,
    );
  });
});

describe("broker-wide limits", () => {
  test("topics, partitions and mapped address space: a create beyond a limit is LIMIT_EXCEEDED naming it", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, [
      "--max-topics",
      "3",
      "--max-partitions",
      "6",
      "--max-mapped-memory",
      "3MiB",
    ]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      await client.createTopic("a", { partitions: 4 });
      const tooManyPartitions = await client.createTopic("b", { partitions: 3 }).catch((error) => error);
      expect(tooManyPartitions).toMatchObject({ code: "LIMIT_EXCEEDED", retriable: false });
      expect(tooManyPartitions.message).toContain(
        'cannot create topic "b": 3 more partitions would make 7, above the limit of 6 (--max-partitions)',
      );
      const mapped = { writeMode: "mapped", segmentBytes: 2 * 1024 * 1024 } as const;
      const tooMuchMapped = await client
        .createTopic("m", { partitions: 2, ...mapped })
        .catch((error) => error);
      expect(tooMuchMapped).toMatchObject({ code: "LIMIT_EXCEEDED" });
      expect(tooMuchMapped.message).toContain(
        "2 mapped partitions of 2097152 bytes would map 4194304 bytes of address space in all, above the limit of 3145728 (--max-mapped-memory)",
      );
      await client.createTopic("m", { partitions: 1, ...mapped });
      await client.createTopic("c", { partitions: 1 });
      const tooManyTopics = await client.createTopic("d", { partitions: 1 }).catch((error) => error);
      expect(tooManyTopics).toMatchObject({ code: "LIMIT_EXCEEDED" });
      expect(tooManyTopics.message).toContain("the broker holds 3 topics, the limit (--max-topics)");
      // A delete makes room again.
      await client.deleteTopic("c");
      await client.createTopic("d", { partitions: 1 });
      expect((await client.metadata()).topics.map((t) => t.name)).toEqual(["a", "d", "m"]);
    } finally {
      client.close();
    }
  });
});

describe("audit", () => {
  test("creates and deletes, done or refused, are logged with the client's address", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--max-partitions", "2"]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    try {
      await client.createTopic("logged", { partitions: 2, durability: "append" });
      await client.createTopic("over", { partitions: 1 }).catch(() => undefined);
      await client.deleteTopic("logged");
      await client.deleteTopic("never-was").catch(() => undefined);
    } finally {
      client.close();
    }
    const audit: string[] = [];
    while (audit.length < 4)
      audit.push(await broker.lines.waitFor((line) => line.includes("audit:"), "audit lines"));
    expect(audit).toEqual([
      'booblik: audit: anonymous from 127.0.0.1: created topic "logged" (2 partitions, append, file, segments of 134217728 bytes)',
      expect.stringContaining(
        'booblik: audit: anonymous from 127.0.0.1: create topic "over" refused: cannot create topic "over"',
      ),
      'booblik: audit: anonymous from 127.0.0.1: deleted topic "logged"',
      expect.stringContaining('booblik: audit: anonymous from 127.0.0.1: delete topic "never-was" refused'),
    ]);
  });
});
