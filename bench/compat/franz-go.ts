/**
 * `bun run compat:franz-go`: franz-go's `pkg/kgo` tests (unit and integration) against a booblik
 * broker child process. The module comes through the Go module proxy (`go mod download`) into the
 * compat cache (GOMODCACHE under $BOOBLIK_COMPAT_CACHE), is copied to a temporary directory (the
 * module cache is read-only) and tested with `go test -json ./pkg/kgo`, `KGO_SEEDS` = booblik,
 * `KGO_TEST_RF=1` (one node), `KGO_TEST_RECORDS` (default 2000 instead of the suite's 500,000, so
 * that a run fits on two shared cores). Prints every test that did not pass, with its first lines of
 * explanation, and the counts.
 *
 * TestTxnEtl is skipped by default (`--with-txn` runs it): transactions are out of booblik's scope,
 * and its transactional producer retries until the whole `go test` timeout (measured: it ran the
 * 9-minute bound out).
 *
 * `--scram 256` (or 512): also starts a second booblik with a users file (one user made with
 * `booblik-cli users add`) so that its Kafka port wants a SASL login, and points franz-go's SCRAM
 * tests at it: KGO_TEST_SCRAM_SEEDS = that broker, KGO_TEST_SCRAM = user:password:256|512 (the
 * suite's own format; every other test keeps using KGO_SEEDS, the broker without users).
 *
 * Usage: bun run compat:franz-go [--version v1.22.3] [--records 2000] [--with-txn] [--scram 256|512]
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startBooblik } from "./booblik.ts";

const { values: args } = parseArgs({
  options: {
    version: { type: "string", default: "v1.22.3" },
    records: { type: "string", default: "2000" },
    "with-txn": { type: "boolean", default: false },
    /** Only the tests matching this `go test -run` pattern (e.g. ^TestConsumeRegex$). */
    run: { type: "string" },
    /** SCRAM-SHA-256 or -512 for the SCRAM tests, against a second broker with a users file. */
    scram: { type: "string" },
  },
});
if (args.scram !== undefined && args.scram !== "256" && args.scram !== "512")
  throw new Error(`--scram takes 256 or 512, got ${JSON.stringify(args.scram)}`);
const cache = process.env.BOOBLIK_COMPAT_CACHE ?? join(homedir(), ".cache", "booblik-compat");
const goEnv = {
  ...process.env,
  GOPATH: join(cache, "go"),
  GOMODCACHE: join(cache, "go", "mod"),
  GOFLAGS: "-modcacherw",
};
/** Bound of `go test` (compiling kgo takes about 2 minutes on two shared cores). */
const GO_TEST_TIMEOUT = "12m";

const download = Bun.spawnSync(
  ["go", "mod", "download", "-json", `github.com/twmb/franz-go@${args.version}`],
  {
    env: goEnv,
    cwd: tmpdir(),
  },
);
const moduleDir = (JSON.parse(download.stdout.toString()) as { Dir?: string; Error?: string }).Dir;
if (download.exitCode !== 0 || moduleDir === undefined)
  throw new Error(`go mod download failed: ${download.stdout}${download.stderr}`);
const work = mkdtempSync(join(tmpdir(), "booblik-compat-franz-"));
cpSync(moduleDir, work, { recursive: true });
Bun.spawnSync(["chmod", "-R", "u+w", work]);

const booblik = await startBooblik();
/** The broker with users for the SCRAM tests (--scram), its users file and the env naming it. */
let scramBroker: Awaited<ReturnType<typeof startBooblik>> | undefined;
const scramEnv: Record<string, string> = {};
const usersDir = mkdtempSync(join(tmpdir(), "booblik-compat-users-"));
let output: string;
const startedMs = Date.now();
const loadBefore = loadavg().map((l) => l.toFixed(2));
try {
  if (args.scram !== undefined) {
    const usersFile = join(usersDir, "users.json");
    const passwordFile = join(usersDir, "franz.password");
    const password = `franz-${crypto.randomUUID()}`;
    writeFileSync(passwordFile, password, { mode: 0o600 });
    const add = Bun.spawnSync([
      process.execPath,
      join(import.meta.dir, "..", "..", "src", "cli", "main.ts"),
      "users",
      "add",
      "franz",
      "--users-file",
      usersFile,
      "--password-file",
      passwordFile,
    ]);
    if (add.exitCode !== 0) throw new Error(`booblik-cli users add failed: ${add.stdout}${add.stderr}`);
    scramBroker = await startBooblik(["--users-file", usersFile]);
    scramEnv.KGO_TEST_SCRAM_SEEDS = scramBroker.bootstrap;
    scramEnv.KGO_TEST_SCRAM = `franz:${password}:${args.scram}`;
    console.log(`SCRAM-SHA-${args.scram} tests against ${scramBroker.bootstrap} (user franz, --users-file)`);
  }
  const command = ["go", "test", "-count=1", `-timeout=${GO_TEST_TIMEOUT}`, "-json"];
  if (!args["with-txn"]) command.push("-skip", "^TestTxnEtl$");
  if (args.run !== undefined) command.push("-run", args.run);
  command.push("./pkg/kgo");
  console.log(
    `${command.join(" ")} (KGO_SEEDS=${booblik.bootstrap}, KGO_TEST_RF=1, KGO_TEST_RECORDS=${args.records})`,
  );
  const child = Bun.spawn(command, {
    cwd: work,
    env: {
      ...goEnv,
      ...scramEnv,
      KGO_SEEDS: booblik.bootstrap,
      KGO_TEST_RF: "1",
      KGO_TEST_RECORDS: args.records!,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  output = stdout + stderr;
} finally {
  await booblik.stop();
  await scramBroker?.stop();
  rmSync(work, { recursive: true, force: true });
  rmSync(usersDir, { recursive: true, force: true });
}

interface TestEvent {
  Action: string;
  Test?: string;
  Output?: string;
}
const results = new Map<string, string>();
const lines = new Map<string, string[]>();
for (const line of output.split("\n")) {
  if (!line.startsWith("{")) continue;
  const event = JSON.parse(line) as TestEvent;
  if (event.Test === undefined) continue;
  if (event.Action === "pass" || event.Action === "fail" || event.Action === "skip")
    results.set(event.Test, event.Action);
  if (event.Action === "output" && event.Output !== undefined) {
    const list = lines.get(event.Test) ?? [];
    // The test's own explanations (file:line: …), not the client's log lines.
    if (/^\s+\w+_test\.go:\d+: /.test(event.Output) && list.length < 3) list.push(event.Output.trim());
    lines.set(event.Test, list);
  }
}
const topLevel = [...results].filter(([test]) => !test.includes("/"));
const count = (action: string) => topLevel.filter(([, result]) => result === action).length;
console.log(
  `\nfranz-go ${args.version} pkg/kgo against booblik${args.scram === undefined ? "" : ` (+ SCRAM-SHA-${args.scram} broker)`}, ` +
    `${new Date().toISOString()}, ${((Date.now() - startedMs) / 1000).toFixed(0)} s, ` +
    `load average ${loadBefore.join(" ")} before, ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} after\n`,
);
console.log("| test | result | first lines of its output |");
console.log("| --- | --- | --- |");
for (const [test, result] of results) {
  if (result === "pass") continue;
  console.log(`| ${test} | ${result} | ${(lines.get(test) ?? []).join("; ").replaceAll("|", "\\|")} |`);
}
console.log(
  `\ntop-level tests: ${count("pass")} passed, ${count("fail")} failed, ${count("skip")} skipped${args["with-txn"] ? "" : " (TestTxnEtl not run)"}`,
);
process.exit(count("fail") === 0 ? 0 : 1);
