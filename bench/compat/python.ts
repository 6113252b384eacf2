/**
 * `bun run compat:python`: the two most used Python Kafka clients, confluent-kafka (librdkafka,
 * bundled in its wheel) and kafka-python (pure Python), against booblik's Kafka listener. Not in
 * the gate: it downloads packages from PyPI (once) and runs Python.
 *
 * 1. Makes a venv outside the repository, $BOOBLIK_COMPAT_CACHE/python-venv (default
 *    ~/.cache/booblik-compat/python-venv), with `python3 -m venv`, and installs exactly the versions
 *    pinned in bench/compat/python/requirements.txt (again whenever that file changes).
 * 2. For each client, starts a booblik broker child process on a temporary data directory
 *    (`--kafka-port 0`), or uses `--bootstrap host:port` (another Kafka-speaking server), and runs
 *    that client's scenario file (bench/compat/python/<client>_scenarios.py; each scenario prints
 *    one `RESULT {json}` line: PASS, FAIL, or KNOWN for a gap docs/kafka.md documents).
 * 3. Prints one Markdown table per client, keeps the client output in
 *    <cache>/last-python-<client>.log and the broker's in <cache>/last-python-<client>-broker.log,
 *    and exits 1 when a scenario failed or a scenario file ended without its results.
 *
 * Usage: bun run compat:python [--client confluent|kafka-python] [--only <word>]...
 *        [--debug <librdkafka debug contexts, e.g. protocol,broker,cgrp>] [--bootstrap host:port]
 * With --debug, confluent-kafka's clients log with librdkafka's `debug` set to it and
 * kafka-python logs at DEBUG (both into the client log; group members into <cache>/python-members).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startBooblik } from "./booblik.ts";
import { runCommand as run } from "./run-command.ts";

const HERE = join(import.meta.dir, "python");
const { values: args } = parseArgs({
  options: {
    client: { type: "string", multiple: true },
    only: { type: "string", multiple: true },
    debug: { type: "string" },
    bootstrap: { type: "string" },
  },
});
const cache = process.env.BOOBLIK_COMPAT_CACHE ?? join(homedir(), ".cache", "booblik-compat");
const venv = join(cache, "python-venv");
const python = join(venv, "bin", "python");
/** Bound of one client's scenario file: each scenario has its own bound of 120 s (common.py). */
const PYTHON_RUN_MS_MAX = 15 * 60_000;

const CLIENTS = {
  confluent: { file: "confluent_scenarios.py", label: "confluent-kafka" },
  "kafka-python": { file: "kafka_python_scenarios.py", label: "kafka-python" },
} as const;
type Client = keyof typeof CLIENTS;

/** The venv with exactly the pinned packages; reinstalled when requirements.txt changed. */
async function ensureVenv(): Promise<void> {
  const requirements = readFileSync(join(HERE, "requirements.txt"), "utf8");
  const stamp = join(venv, "booblik-requirements.txt");
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, "utf8") === requirements) return;
  mkdirSync(cache, { recursive: true });
  if (!existsSync(python)) {
    console.log(`making a Python venv in ${venv}`);
    await run(["python3", "-m", "venv", venv], "python3 -m venv");
  }
  console.log("installing the pinned clients (bench/compat/python/requirements.txt) with pip");
  await run(
    [
      python,
      "-m",
      "pip",
      "install",
      "--quiet",
      "--disable-pip-version-check",
      "-r",
      join(HERE, "requirements.txt"),
    ],
    "pip install",
  );
  writeFileSync(stamp, requirements);
}

interface Row {
  scenario: string;
  status: string;
  reason: string;
  seconds: number;
}

async function runClient(client: Client): Promise<{ rows: Row[]; complete: boolean }> {
  const { file, label } = CLIENTS[client];
  const brokerLog = join(cache, `last-python-${client}-broker.log`);
  rmSync(brokerLog, { force: true });
  const target =
    args.bootstrap === undefined
      ? { name: "booblik", ...(await startBooblik([], { logFile: brokerLog })) }
      : { name: "external", bootstrap: args.bootstrap, stop: async () => {} };
  const memberLogs = join(cache, "python-members", client);
  rmSync(memberLogs, { recursive: true, force: true });
  mkdirSync(memberLogs, { recursive: true });
  let output: string;
  let code: number;
  try {
    const child = Bun.spawn(
      [python, join(HERE, file), "run", target.bootstrap, memberLogs, ...(args.only ?? [])],
      {
        cwd: HERE,
        stdout: "pipe",
        stderr: "pipe",
        env: {
          ...process.env,
          PYTHONUNBUFFERED: "1",
          PYTHONDONTWRITEBYTECODE: "1",
          ...(args.debug ? { COMPAT_DEBUG: args.debug } : {}),
        },
      },
    );
    const timer = setTimeout(() => child.kill("SIGKILL"), PYTHON_RUN_MS_MAX);
    const [stdout, stderr] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ]).finally(() => clearTimeout(timer));
    code = await child.exited;
    output = `${stdout}\n--- stderr ---\n${stderr}`;
  } finally {
    await target.stop();
  }
  const logFile = join(cache, `last-python-${client}.log`);
  writeFileSync(logFile, output);
  const version = /^VERSION (.*)$/m.exec(output)?.[1] ?? label;
  const rows: Row[] = output
    .split("\n")
    .filter((line) => line.startsWith("RESULT "))
    .map((line) => JSON.parse(line.slice("RESULT ".length)) as Row);
  console.log(`\n${version} against ${target.name} at ${target.bootstrap}, ${new Date().toISOString()}\n`);
  console.log("| scenario | result | reason |");
  console.log("| --- | --- | --- |");
  for (const row of rows)
    console.log(
      `| ${row.scenario} | ${row.status} | ${row.reason.replaceAll("|", "\\|").replaceAll("\n", " ")} |`,
    );
  const count = (status: string) => rows.filter((row) => row.status === status).length;
  console.log(
    `\n${count("PASS")} passed, ${count("FAIL")} failed, ${count("KNOWN")} known gaps (client output: ${logFile}` +
      (target.name === "booblik" ? `; broker output: ${brokerLog})` : ")"),
  );
  // A scenario file that crashed or was killed prints fewer results and exits non-zero.
  const complete = rows.length > 0 && (code === 0 || count("FAIL") > 0);
  if (!complete)
    console.log(`the ${label} scenario file ended with exit code ${code}:\n${output.slice(-4000)}`);
  return { rows, complete };
}

async function main(): Promise<number> {
  const clients = (args.client ?? Object.keys(CLIENTS)) as Client[];
  for (const client of clients)
    if (!(client in CLIENTS))
      throw new Error(`--client takes ${Object.keys(CLIENTS).join(" or ")}, got ${client}`);
  await ensureVenv();
  console.log((await run([python, "--version"], "python --version")).trim());
  let ok = true;
  for (const client of clients) {
    const { rows, complete } = await runClient(client);
    if (!complete || rows.some((row) => row.status === "FAIL")) ok = false;
  }
  return ok ? 0 : 1;
}

process.exit(await main());
