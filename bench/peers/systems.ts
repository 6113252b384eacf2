/**
 * Starting and stopping the systems compared in bench/peers.bench.ts, each as its own process on
 * loopback with its data on the measurement disk, and what each one promises when it acknowledges.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { startBrokerProcess } from "../lib/processes.ts";

export type SystemName =
  | "booblik-append"
  | "booblik-force"
  | "nats-jetstream"
  | "redis-everysec"
  | "redis-always";

export const SYSTEMS: SystemName[] = [
  "booblik-append",
  "booblik-force",
  "nats-jetstream",
  "redis-everysec",
  "redis-always",
];

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

/**
 * How each load batches or pipelines (printed with the figures). Every client keeps many records
 * in flight; none waits for one acknowledgement before sending the next record.
 */
export const LOAD_SETTINGS = {
  /** booblik Producer buffer per producer: sixteen producers in one process must not buffer 0.5 GiB. */
  booblikBufferBytes: 8 * 1024 * 1024,
  /** JetStream async publishes in flight per producer. */
  natsPublishWindow: 512,
  /** Redis XADDs in flight per producer (auto-pipelined by Bun's client). */
  redisXaddWindow: 1024,
  /** Records per consumer pull (JetStream max_messages, Redis XRANGE COUNT). */
  consumeBatchRecords: 1000,
} as const;

/** One line saying what LOAD_SETTINGS means for each system. */
export function describeLoadSettings(): string {
  const s = LOAD_SETTINGS;
  return (
    `booblik: file write path (the default), Producer.write() with its default batching (256 KiB batches), ${s.booblikBufferBytes / 2 ** 20} MiB buffer per producer, ` +
    `Consumer.batches(); JetStream: ${s.natsPublishWindow} async publishes in flight per producer, pull consumer of ` +
    `${s.consumeBatchRecords}; Redis: ${s.redisXaddWindow} XADDs in flight per producer, XRANGE COUNT ${s.consumeBatchRecords}`
  );
}

export interface RunningSystem {
  name: SystemName;
  pid: number;
  port: number;
  version: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (performance.now() > deadline) throw new Error(`nothing listens on ${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Installs nats-server and redis-server from Debian packages when they are missing. */
export function ensurePeersInstalled(): void {
  const missing = ["nats-server", "redis-server"].filter(
    (binary) => spawnSync("which", [binary]).status !== 0,
  );
  if (missing.length === 0) return;
  console.log(`installing ${missing.join(", ")} (apt-get)…`);
  spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  const install = spawnSync("apt-get", ["install", "-y", "-qq", ...missing], { stdio: "inherit" });
  if (install.status !== 0)
    throw new Error(`could not install ${missing.join(", ")}; install them and run again`);
}

function versionOf(command: string[]): string {
  const result = spawnSync(command[0]!, command.slice(1), { encoding: "utf8" });
  return `${result.stdout}${result.stderr}`.trim().split("\n")[0] ?? "unknown";
}

export async function startSystem(name: SystemName, dataRoot: string): Promise<RunningSystem> {
  const dataDir = path.join(dataRoot, name);
  fs.mkdirSync(dataDir, { recursive: true });
  if (name === "booblik-append" || name === "booblik-force") {
    const broker = await startBrokerProcess(dataDir, [
      "--durability",
      name === "booblik-force" ? "force" : "append",
    ]);
    return {
      name,
      pid: broker.pid,
      port: broker.port,
      version: `booblik 0.1.0 (Bun ${Bun.version})`,
      stop: async () => {
        await broker.stop();
      },
    };
  }
  const port = await freePort();
  const command =
    name === "nats-jetstream"
      ? ["nats-server", "-js", "-sd", dataDir, "-a", "127.0.0.1", "-p", String(port)]
      : [
          "redis-server",
          "--bind",
          "127.0.0.1",
          "--port",
          String(port),
          "--dir",
          dataDir,
          "--save",
          "",
          "--appendonly",
          "yes",
          "--appendfsync",
          name === "redis-always" ? "always" : "everysec",
        ];
  const child = Bun.spawn(command, { stdout: "ignore", stderr: "ignore" });
  await waitForPort(port);
  if (name !== "nats-jetstream") {
    // Redis accepts connections while it still loads its append-only file ("LOADING"): wait for PONG.
    const redis = new Bun.RedisClient(`redis://127.0.0.1:${port}`);
    for (;;) {
      try {
        if ((await redis.send("PING", [])) === "PONG") break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    redis.close();
  }
  return {
    name,
    pid: child.pid,
    port,
    version:
      name === "nats-jetstream"
        ? versionOf(["nats-server", "--version"])
        : versionOf(["redis-server", "--version"]),
    stop: async () => {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}
