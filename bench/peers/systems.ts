/**
 * Starting and stopping the systems compared in bench/peers.bench.ts, each as its own process on
 * loopback with its data in a fresh directory on the measurement disk (after a `sync`, so that one
 * run's writeback does not land in the next), what each one promises when it acknowledges, and
 * which of them are compared with which.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { startRedisServer } from "../lib/peer-tools.ts";
import { freePort, startBrokerProcess } from "../lib/processes.ts";

export type SystemName =
  | "booblik-append"
  | "booblik-force"
  | "nats-jetstream"
  | "redis-everysec"
  | "redis-always";

export type Family = "booblik" | "nats" | "redis";

export const familyOf = (name: SystemName): Family =>
  name.startsWith("booblik") ? "booblik" : name.startsWith("nats") ? "nats" : "redis";

/**
 * The durability pairings: booblik `append` (page cache) against Redis `everysec` and JetStream's
 * file storage (written to the OS, synced every 2 minutes); booblik `force` against Redis `always`.
 * nats-server 2.9 (Debian 12's) has no per-message sync (`sync_interval: always` arrived in 2.10),
 * so the `force` pairing has no NATS row.
 */
export const PAIRINGS = {
  append: ["booblik-append", "redis-everysec", "nats-jetstream"],
  force: ["booblik-force", "redis-always"],
} as const satisfies Record<string, readonly SystemName[]>;
export type Pairing = keyof typeof PAIRINGS;

/** What an acknowledgement means, in each system's own terms, for the output. */
export const PROMISES: Record<SystemName, string> = {
  "booblik-append": "acknowledged once in the page cache (survives a process crash, not a power loss)",
  "booblik-force": "acknowledged after fdatasync (group commit): survives a power loss",
  "nats-jetstream":
    "JetStream file storage, nats-server 2.9 defaults: acknowledged once written to the OS, synced every 2 minutes (2.9 has no per-message sync option)",
  "redis-everysec":
    "appendonly yes, appendfsync everysec: acknowledged before the fsync, which runs every second",
  "redis-always":
    "appendonly yes, appendfsync always: fsync before acknowledging (group commit in the event loop)",
};

/** The booblik topic, Redis stream, and NATS subject every load writes to and reads from. */
export const TOPIC = "peers";
/** The JetStream stream that holds TOPIC. */
export const NATS_STREAM = "PEERS";

/** natscli, the NATS CLI whose `nats bench` is NATS's own benchmark tool; built with Go if missing. */
const NATSCLI_VERSION = "v0.5.1";
const NATSCLI_DIR = path.join(os.homedir(), ".cache", "booblik-peers");

export interface RunningSystem {
  name: SystemName;
  pid: number;
  port: number;
  version: string;
  stop(): Promise<void>;
}

/**
 * Installs nats-server and redis-server (with redis-benchmark) from Debian packages when they are
 * missing, and finds `nats` (natscli): on the PATH, else in ~/.cache/booblik-peers, else builds it
 * there with `go install` when Go is present. Returns the natscli path, or undefined (NATS is then
 * driven by the official nats.js client with the same round-trip shape).
 */
export function ensurePeersInstalled(): string | undefined {
  const missing = ["nats-server", "redis-server", "redis-benchmark"].filter(
    (binary) => Bun.which(binary) === null,
  );
  if (missing.length > 0) {
    const packages = [
      ...new Set(missing.map((binary) => (binary === "nats-server" ? "nats-server" : "redis"))),
    ];
    console.error(`installing ${packages.join(", ")} (apt-get)…`);
    spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
    const install = spawnSync("apt-get", ["install", "-y", "-qq", ...packages], { stdio: "inherit" });
    if (install.status !== 0)
      throw new Error(`could not install ${packages.join(", ")}; install them and run again`);
  }
  const onPath = Bun.which("nats");
  if (onPath !== null) return onPath;
  const cached = path.join(NATSCLI_DIR, "nats");
  if (fs.existsSync(cached)) return cached;
  if (Bun.which("go") === null) return undefined;
  console.error(`building natscli ${NATSCLI_VERSION} with go install into ${NATSCLI_DIR}…`);
  fs.mkdirSync(NATSCLI_DIR, { recursive: true });
  const build = spawnSync("go", ["install", `github.com/nats-io/natscli/nats@${NATSCLI_VERSION}`], {
    stdio: "inherit",
    env: { ...process.env, GOBIN: NATSCLI_DIR },
  });
  return build.status === 0 && fs.existsSync(cached) ? cached : undefined;
}

export function versionOf(name: SystemName, natscli: string | undefined): string {
  const first = (command: string[]) => {
    const result = spawnSync(command[0]!, command.slice(1), { encoding: "utf8" });
    return `${result.stdout}${result.stderr}`.trim().split("\n")[0] ?? "unknown";
  };
  if (name.startsWith("booblik")) return `booblik 0.1.0 (Bun ${Bun.version})`;
  if (name.startsWith("redis"))
    return `${first(["redis-server", "--version"])}; ${first(["redis-benchmark", "--version"])}`;
  return `${first(["nats-server", "--version"])}; load: ${natscli === undefined ? "nats.js" : `natscli ${first([natscli, "--version"])}`}`;
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const open = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (socket) => {
        socket.end();
        return true;
      },
      () => false,
    );
    if (open) return;
    if (performance.now() > deadline) throw new Error(`nothing listens on ${port} after ${timeoutMs} ms`);
    await Bun.sleep(20);
  }
}

/**
 * Starts `name` with its data in `dataDir` (created fresh; `sync` first). booblik gets the topic
 * TOPIC (one partition) under the system's durability; the others create their stream on first write.
 */
export async function startSystem(name: SystemName, dataDir: string): Promise<RunningSystem> {
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.mkdirSync(dataDir, { recursive: true });
  spawnSync("sync");
  if (familyOf(name) === "booblik") {
    const durability = name === "booblik-force" ? "force" : "append";
    const broker = await startBrokerProcess(dataDir, ["--durability", durability]);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await admin.createTopic(TOPIC, { durability });
    admin.close();
    return {
      name,
      pid: broker.pid,
      port: broker.port,
      version: "",
      stop: async () => {
        await broker.stop();
      },
    };
  }
  if (familyOf(name) === "redis") {
    const server = await startRedisServer(dataDir, name === "redis-always" ? "always" : "everysec");
    return { name, ...server, version: "" };
  }
  const port = freePort();
  const child = Bun.spawn(["nats-server", "-js", "-sd", dataDir, "-a", "127.0.0.1", "-p", String(port)], {
    stdout: "ignore",
    stderr: "ignore",
  });
  await waitForPort(port);
  return {
    name,
    pid: child.pid,
    port,
    version: "",
    stop: async () => {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}
