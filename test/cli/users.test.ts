/**
 * `booblik-cli users add|remove|list` and the CLI's `--user` login, as an operator runs them: the
 * CLI and the broker as child processes, the users file on disk. The file stays 0600 and never holds
 * or prints a secret; a password never comes from (or shows in) the command line; a broker started
 * with the file lets the CLI in with the right password and refuses a wrong one; SIGHUP picks up a
 * user added while it runs.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { readUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { CLI, runCli } from "../helpers/cli-process.ts";
import { killAtEnd } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

describe("booblik-cli users", () => {
  test("add, list and remove round trip; the file stays 0600 and no secret is written or printed", async () => {
    using dir = tempDir();
    const file = dir.file("users.json");
    // From stdin (with the newline `echo` leaves), from a file, from the environment.
    const alice = await runCli(["users", "add", "alice", "--users-file", file], {
      stdin: "correct horse\n",
    });
    expect(alice.stderr).toBe("");
    expect(alice.exitCode).toBe(0);
    expect(alice.stdout).toContain("added user alice (SCRAM-SHA-256, SCRAM-SHA-512)");
    expect(alice.stdout).toContain("SIGHUP");
    expect(modeOf(file)).toBe(0o600);
    fs.writeFileSync(dir.file("bob.pw"), "battery staple\n", { mode: 0o600 });
    const bob = await runCli([
      "users",
      "add",
      "bob",
      "--users-file",
      file,
      "--password-file",
      dir.file("bob.pw"),
      "--mechanism",
      "SCRAM-SHA-512",
      "--iterations",
      "8192",
    ]);
    expect(bob.exitCode).toBe(0);
    const carol = await runCli(["users", "add", "carol", "--users-file", file], {
      env: { BOOBLIK_PASSWORD: "tr0ub4dor" },
    });
    expect(carol.exitCode).toBe(0);
    expect(modeOf(file)).toBe(0o600);

    const text = fs.readFileSync(file, "utf8");
    for (const secret of ["correct horse", "battery staple", "tr0ub4dor"]) expect(text).not.toContain(secret);
    const users = readUsersFile(file);
    expect([...users.keys()].sort()).toEqual(["alice", "bob", "carol"]);
    expect([...users.get("bob")!.keys()]).toEqual(["SCRAM-SHA-512"]);
    expect(users.get("bob")!.get("SCRAM-SHA-512")!.iterations).toBe(8192);

    const list = await runCli(["users", "list", "--users-file", file]);
    expect(list.exitCode).toBe(0);
    expect(list.stdout.split("\n")).toEqual([
      "user   mechanisms                    iterations",
      "-----  ----------------------------  ----------",
      "alice  SCRAM-SHA-256, SCRAM-SHA-512  4096",
      "bob    SCRAM-SHA-512                 8192",
      "carol  SCRAM-SHA-256, SCRAM-SHA-512  4096",
      "",
    ]);
    const listJson = await runCli(["users", "list", "--json"], { env: { BOOBLIK_USERS_FILE: file } });
    expect(JSON.parse(listJson.stdout)).toEqual([
      { name: "alice", mechanisms: ["SCRAM-SHA-256", "SCRAM-SHA-512"], iterations: [4096] },
      { name: "bob", mechanisms: ["SCRAM-SHA-512"], iterations: [8192] },
      { name: "carol", mechanisms: ["SCRAM-SHA-256", "SCRAM-SHA-512"], iterations: [4096] },
    ]);
    // No salt, StoredKey or ServerKey in what it prints.
    const alicesKey = Buffer.from(users.get("alice")!.get("SCRAM-SHA-256")!.storedKey).toString("base64");
    expect(list.stdout + listJson.stdout).not.toContain(alicesKey);

    const removed = await runCli(["users", "remove", "bob", "--users-file", file]);
    expect(removed.exitCode).toBe(0);
    expect(removed.stdout).toContain("removed user bob");
    expect([...readUsersFile(file).keys()]).toEqual(["alice", "carol"]);
    expect(modeOf(file)).toBe(0o600);
    expect(fs.existsSync(`${file}.tmp`)).toBe(false);

    const again = await runCli(["users", "remove", "bob", "--users-file", file]);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain('no user "bob" in');
  });

  test("a password from argv, an empty password, a terminal as stdin and a bad name are refused, and the file is untouched", async () => {
    using dir = tempDir();
    const file = dir.file("users.json");
    const first = await runCli(["users", "add", "alice", "--users-file", file], { stdin: "pw-one\n" });
    expect(first.exitCode).toBe(0);
    const before = fs.readFileSync(file, "utf8");
    fs.writeFileSync(dir.file("empty.pw"), "\n");
    const cases: [string[], Record<string, string>, string | undefined, string][] = [
      [["users", "add", "bob", "--password", "hunter2"], {}, undefined, "never taken from the command line"],
      [["users", "add", "bob"], {}, "", "the password on stdin is empty"],
      [["users", "add", "bob"], {}, "one\ntwo\n", "more than one line"],
      [["users", "add", "bob", "--password-file", dir.file("empty.pw")], {}, undefined, "is empty"],
      [["users", "add", "bob"], { BOOBLIK_PASSWORD: "" }, undefined, "BOOBLIK_PASSWORD is empty"],
      [["users", "add", "bad name"], {}, "pw\n", "user name must be"],
      [["users", "add", "bob", "--iterations", "100"], {}, "pw\n", "--iterations"],
      [["users", "add", "bob", "--mechanism", "MD5"], {}, "pw\n", "--mechanism must be one of"],
      [["users", "list", "--mechanism", "SCRAM-SHA-256"], {}, undefined, "unknown option --mechanism"],
      [["users", "add"], {}, "pw\n", "missing user name"],
      [["users", "rename", "bob"], {}, undefined, "unknown users action rename"],
    ];
    for (const [args, env, stdin, message] of cases) {
      const run = await runCli([...args, "--users-file", file], {
        env,
        ...(stdin === undefined ? {} : { stdin }),
      });
      expect({ args, exitCode: run.exitCode }).toEqual({ args, exitCode: 2 });
      expect(run.stderr).toContain(message);
      expect(run.stderr).not.toContain("hunter2");
    }
    expect(fs.readFileSync(file, "utf8")).toBe(before);
    // A terminal as stdin would echo the password: refused (util-linux `script` gives it one).
    const script = Bun.which("script");
    if (script === null) console.warn("users add from a terminal not tested: no `script` command");
    else {
      const quoted = [process.execPath, CLI, "users", "add", "bob", "--users-file", file]
        .map((word) => `'${word.replaceAll("'", "'\\''")}'`)
        .join(" ");
      const env = { ...process.env };
      delete env.BOOBLIK_PASSWORD;
      const atTerminal = Bun.spawnSync([script, "-qec", quoted, "/dev/null"], { stdin: "ignore", env });
      expect(atTerminal.exitCode).toBe(2);
      expect(atTerminal.stdout.toString()).toContain("not a terminal");
    }
    expect(fs.readFileSync(file, "utf8")).toBe(before);
    const noFile = await runCli(["users", "list"], { env: { BOOBLIK_USERS_FILE: "" } });
    expect(noFile.exitCode).toBe(2);
    expect(noFile.stderr).toContain("users needs --users-file");
  });
});

describe("booblik-cli --user", () => {
  test("a broker started with the file lets the right password in and refuses a wrong one; SIGHUP adds a user", async () => {
    using dir = tempDir();
    const file = dir.file("users.json");
    expect(
      (await runCli(["users", "add", "alice", "--users-file", file], { stdin: "s3cret\n" })).exitCode,
    ).toBe(0);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    const at = ["--broker", `127.0.0.1:${broker.port}`];

    const created = await runCli([...at, "--user", "alice", "topics", "create", "orders"], {
      env: { BOOBLIK_PASSWORD: "s3cret" },
    });
    expect(created.stderr).toBe("");
    expect(created.exitCode).toBe(0);
    const audit = await broker.lines.waitFor((line) => line.includes("created topic"), "the audit line");
    expect(audit).toContain('audit: user "alice" from 127.0.0.1: created topic "orders"');

    // The password from a file, and SCRAM-SHA-512.
    fs.writeFileSync(dir.file("alice.pw"), "s3cret\n", { mode: 0o600 });
    const listed = await runCli([
      ...at,
      "--user",
      "alice",
      "--password-file",
      dir.file("alice.pw"),
      "--mechanism",
      "SCRAM-SHA-512",
      "topics",
      "list",
    ]);
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout).toContain("orders");

    // The user from the environment too.
    const fromEnv = await runCli([...at, "topics", "list"], {
      env: { BOOBLIK_USER: "alice", BOOBLIK_PASSWORD: "s3cret" },
    });
    expect(fromEnv.exitCode).toBe(0);

    const wrong = await runCli([...at, "--json", "--user", "alice", "topics", "list"], {
      env: { BOOBLIK_PASSWORD: "guess" },
    });
    expect(wrong.exitCode).toBe(1);
    expect(JSON.parse(wrong.stderr).error.code).toBe("AUTHENTICATION_FAILED");
    const anonymous = await runCli([...at, "--json", "topics", "list"]);
    expect(anonymous.exitCode).toBe(1);
    expect(JSON.parse(anonymous.stderr).error.code).toBe("AUTHENTICATION_FAILED");
    const noPassword = await runCli([...at, "--user", "alice", "topics", "list"], {
      env: { BOOBLIK_PASSWORD: "" },
    });
    expect(noPassword.exitCode).toBe(2);
    const inArgv = await runCli([...at, "--user", "alice", "--password", "s3cret", "topics", "list"]);
    expect(inArgv.exitCode).toBe(2);
    expect(inArgv.stderr).toContain("never taken from the command line");

    // Added while the broker runs: refused until SIGHUP, accepted after it.
    expect(
      (await runCli(["users", "add", "bob", "--users-file", file], { env: { BOOBLIK_PASSWORD: "b0b" } }))
        .exitCode,
    ).toBe(0);
    const bobFirst = await runCli([...at, "--json", "--user", "bob", "topics", "list"], {
      env: { BOOBLIK_PASSWORD: "b0b" },
    });
    expect(JSON.parse(bobFirst.stderr).error.code).toBe("AUTHENTICATION_FAILED");
    broker.process.kill("SIGHUP");
    await broker.lines.waitFor((line) => line.includes("SIGHUP: reread"), "the reload line");
    const bobAfter = await runCli([...at, "--user", "bob", "topics", "list"], {
      env: { BOOBLIK_PASSWORD: "b0b" },
    });
    expect(bobAfter.exitCode).toBe(0);

    // Removed while logged in: the open connection stays (logins are checked once per connection),
    // a new login is refused after SIGHUP.
    const open = await BooblikClient.connect({
      host: "127.0.0.1",
      port: broker.port,
      retries: 0,
      user: "alice",
      password: "s3cret",
    });
    try {
      expect((await runCli(["users", "remove", "alice", "--users-file", file])).exitCode).toBe(0);
      broker.process.kill("SIGHUP");
      await broker.lines.waitFor((line) => line.includes("SIGHUP: reread"), "the second reload line");
      expect((await open.metadata()).topics.map((topic) => topic.name)).toEqual(["orders"]);
      const aliceAfter = await runCli([...at, "--json", "--user", "alice", "topics", "list"], {
        env: { BOOBLIK_PASSWORD: "s3cret" },
      });
      expect(JSON.parse(aliceAfter.stderr).error.code).toBe("AUTHENTICATION_FAILED");
    } finally {
      open.close();
    }
    expect(modeOf(file)).toBe(0o600);
  });

  test("the password never shows in the CLI's command line (ps, /proc/<pid>/cmdline)", async () => {
    using dir = tempDir();
    const file = dir.file("users.json");
    const password = "zebra-quartz-7781";
    expect(
      (await runCli(["users", "add", "alice", "--users-file", file], { env: { BOOBLIK_PASSWORD: password } }))
        .exitCode,
    ).toBe(0);
    await using broker = await startBroker(dir.file("data"), ["--users-file", file]);
    const at = ["--broker", `127.0.0.1:${broker.port}`];
    expect(
      (
        await runCli([...at, "--user", "alice", "topics", "create", "t"], {
          env: { BOOBLIK_PASSWORD: password },
        })
      ).exitCode,
    ).toBe(0);
    // Past the create's own login line, so that the next one is the consumer's.
    await broker.lines.waitFor((line) => line.includes("created topic"), "the create's audit line");
    // A consumer that stays connected, logged in with the password from the environment.
    const consumer = Bun.spawn(
      [process.execPath, CLI, ...at, "--user", "alice", "consume", "t", "--follow"],
      {
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, BOOBLIK_BROKER: "", BOOBLIK_PASSWORD: password },
      },
    );
    await using _consumer = killAtEnd(consumer);
    await broker.lines.waitFor(
      (line) => line.includes('user "alice"') && line.includes("logged in"),
      "the consumer's login",
    );
    expect(consumer.exitCode).toBeNull();
    const cmdline = fs.readFileSync(`/proc/${consumer.pid}/cmdline`, "utf8");
    expect(cmdline).toContain("--user\0alice");
    expect(cmdline).not.toContain(password);
    const ps = Bun.spawnSync(["ps", "-ww", "-eo", "pid,args"]).stdout.toString();
    expect(ps).toContain(`${consumer.pid} `);
    expect(ps).not.toContain(password);
  });
});
