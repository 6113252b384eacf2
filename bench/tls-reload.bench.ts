/**
 * What a certificate reload (SIGHUP) costs clients that connect at that moment. Bun 1.4.4 cannot
 * swap a listening socket's TLS context, so the broker closes the TLS listening socket and binds it
 * again (BrokerServer.reloadTls): an attempt in between is refused, and one the kernel accepted but
 * the broker had not yet is reset. This counts both.
 *
 *   BOOBLIK_BENCH_DIR=<ext4 dir> bun bench/tls-reload.bench.ts [--rounds=3] [--reloads=50] [--clients=4]
 *
 * One broker child process (plain --port and --tls-port, P-256 certificate made with openssl); a
 * load-generator child process runs `clients` loops, each opening a TLS connection (handshake
 * verified against the CA) and closing it, as fast as it can; the driver sends SIGHUP every 100 ms,
 * `reloads` times. Printed per round: attempts, failures by error code; then median and range of
 * failures per reload over the rounds. No records are written (record and batch size: none).
 */
import fs from "node:fs";
import path from "node:path";
import { makeCertificates } from "../test/helpers/tls-certs.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";

const argument = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");

// The load generator: node:tls connects in `clients` loops until stdin closes, then prints counts.
if (process.argv[2] === "--load") {
  const tls = await import("node:tls");
  const [port, caFile, clients] = [Number(process.argv[3]), process.argv[4]!, Number(process.argv[5])];
  const ca = fs.readFileSync(caFile, "utf8");
  let ok = 0;
  const failures: Record<string, number> = {};
  let running = true;
  const attempt = () =>
    new Promise<void>((resolve) => {
      const socket = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost" }, () => {
        ok++;
        socket.destroy();
        resolve();
      });
      socket.on("error", (error: NodeJS.ErrnoException) => {
        const code = error.code ?? error.message;
        failures[code] = (failures[code] ?? 0) + 1;
        resolve();
      });
    });
  const loops = Array.from({ length: clients }, async () => {
    while (running) await attempt();
  });
  process.stdin.on("end", () => {
    running = false;
  });
  process.stdin.resume();
  console.log("started");
  await Promise.all(loops);
  console.log(JSON.stringify({ ok, failures }));
  process.exit(0);
}

const rounds = argument("rounds", 3);
const reloads = argument("reloads", 50);
const clients = argument("clients", 4);
const directory = measurementDirectory("tls-reload");
const certs = makeCertificates(directory.path);
console.log(describeMachine(directory.fileSystem));
console.log(
  `policy: none (no records); ${clients} connecting clients; ${reloads} SIGHUPs 100 ms apart per round`,
);

async function firstLine(
  stream: ReadableStream<Uint8Array>,
  test: (line: string) => boolean,
): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before the line: ${text}`);
    text += new TextDecoder().decode(value);
    const line = text.split("\n").find(test);
    if (line !== undefined) {
      reader.releaseLock();
      return line;
    }
  }
}

const perReload: number[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    const broker = Bun.spawn(
      [
        process.execPath,
        MAIN,
        "--data-dir",
        path.join(directory.path, `data-${round}`),
        "--port",
        "0",
        "--tls-port",
        "0",
        "--kafka-port",
        "off",
        "--tls-cert",
        certs.certFile,
        "--tls-key",
        certs.keyFile,
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
    const start = await firstLine(broker.stdout, (line) => line.includes(" listening on "));
    const port = Number(/over TLS on 127\.0\.0\.1:(\d+)/.exec(start)?.[1]);
    const load = Bun.spawn(
      [process.execPath, import.meta.path, "--load", String(port), certs.caFile, String(clients)],
      { stdin: "pipe", stdout: "pipe", stderr: "inherit" },
    );
    const loadOut = load.stdout.getReader();
    await loadOut.read(); // "started"
    for (let i = 0; i < reloads; i++) {
      await Bun.sleep(100);
      broker.kill("SIGHUP");
    }
    await Bun.sleep(200);
    load.stdin.end();
    let text = "";
    for (;;) {
      const { value, done } = await loadOut.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await load.exited;
    broker.kill("SIGTERM");
    await broker.exited;
    const counts = JSON.parse(text.trim().split("\n").at(-1)!) as {
      ok: number;
      failures: Record<string, number>;
    };
    const failed = Object.values(counts.failures).reduce((a, b) => a + b, 0);
    perReload.push(failed / reloads);
    console.log(
      `round ${round}: ${counts.ok + failed} attempts, ${failed} failed ${JSON.stringify(counts.failures)}, ${(failed / reloads).toFixed(2)} per reload`,
    );
  }
} finally {
  directory.remove();
}
const sorted = [...perReload].sort((a, b) => a - b);
console.log(
  `failed attempts per reload: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} (range ${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)})`,
);
