/**
 * What a certificate reload (SIGHUP) costs clients that connect at that moment. Bun 1.4.4 cannot
 * swap a listening socket's TLS context, so the broker closes the TLS listening socket and binds it
 * again (BrokerServer.reloadTls): an attempt in between is refused, and one the kernel accepted but
 * the broker had not yet is reset. This counts both.
 *
 *   BOOBLIK_BENCH_DIR=<ext4 dir> bun bench/tls-reload.bench.ts [--rounds=3] [--reloads=50] [--clients=4]
 *
 * One broker child process (plain --port and --tls-port, P-256 certificates made with openssl); a
 * load-generator child process runs `clients` loops, each opening a TLS connection (handshake
 * verified against the CA) and closing it, as fast as it can; the driver sends SIGHUP every 100 ms,
 * `reloads` times. Before each SIGHUP it replaces the certificate file (rename over it) with the
 * other of two certificates the same CA signed for the same key: the broker rebinds only when the
 * files changed (a SIGHUP for the users file rebinds nothing), so with one certificate this measured
 * no reload at all. A round ends once the broker has said, for every SIGHUP, that it serves the new
 * certificate (its `reread the TLS certificate` line). Printed per round: attempts, failures by
 * error code; then median and range of failures per reload over the rounds. No records are written
 * (record and batch size: none).
 */
import fs from "node:fs";
import path from "node:path";
import { makeCertificates } from "../test/helpers/tls-certs.ts";
import { parseBenchArgs } from "./lib/args.ts";
import { describeMachine, measurementDirectory } from "./lib/environment.ts";
import { medianRange } from "./lib/stats.ts";

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
/** How long the broker may take to report its reloads after the last SIGHUP: a bound, not a pause. */
const RELOADS_WAIT_MS = 30_000;

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

const args = parseBenchArgs({
  usage:
    "BOOBLIK_BENCH_DIR=<ext4 dir> bun bench/tls-reload.bench.ts [--rounds=3] [--reloads=50] [--clients=4]",
  options: { rounds: "3", reloads: "50", clients: "4" },
});
const rounds = args.number("rounds");
const reloads = args.number("reloads");
const clients = args.number("clients");
const directory = measurementDirectory("tls-reload");
const certs = makeCertificates(directory.path);
/** A second certificate for the same key, signed by the same CA (another serial number). */
const otherCertFile = path.join(directory.path, "server-2.pem");
{
  const signed = Bun.spawnSync(
    [
      "openssl",
      ...["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"],
      ...["-out", otherCertFile, "-days", "2", "-extfile", "server.ext"],
    ],
    { cwd: directory.path, stdout: "pipe", stderr: "pipe" },
  );
  if (signed.exitCode !== 0) throw new Error(`openssl x509 -req: ${signed.stderr.toString()}`);
}
/** The file the broker serves: replaced whole (rename) before each SIGHUP, as docs/security.md says to. */
const servedCertFile = path.join(directory.path, "served.pem");
function serve(certFile: string): void {
  fs.copyFileSync(certFile, `${servedCertFile}.tmp`);
  fs.renameSync(`${servedCertFile}.tmp`, servedCertFile);
}
console.log(describeMachine(directory.fileSystem));
console.log(
  `policy: none (no records); ${clients} connecting clients; ${reloads} SIGHUPs 100 ms apart per round`,
);

/** The broker's stdout, line by line: `until` resolves once `count` lines passed `test`. */
function watchLines(stream: ReadableStream<Uint8Array>): {
  until(test: (line: string) => boolean, count?: number): Promise<string>;
} {
  const lines: string[] = [];
  let ended = false;
  let wake = () => {};
  void (async () => {
    let text = "";
    for await (const chunk of stream) {
      text += new TextDecoder().decode(chunk);
      const end = text.lastIndexOf("\n");
      if (end < 0) continue;
      lines.push(...text.slice(0, end).split("\n"));
      text = text.slice(end + 1);
      wake();
    }
    ended = true;
    wake();
  })();
  return {
    async until(test, count = 1) {
      for (;;) {
        const matching = lines.filter(test);
        if (matching.length >= count) return matching[count - 1]!;
        if (ended)
          throw new Error(
            `the broker's output ended with ${matching.length} of ${count} lines:\n${lines.join("\n")}`,
          );
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
  };
}

const perReload: number[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    serve(certs.certFile);
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
        servedCertFile,
        "--tls-key",
        certs.keyFile,
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
    const brokerOut = watchLines(broker.stdout);
    const start = await brokerOut.until((line) => line.includes(" listening on "));
    const port = Number(/over TLS on 127\.0\.0\.1:(\d+)/.exec(start)?.[1]);
    const load = Bun.spawn(
      [process.execPath, import.meta.path, "--load", String(port), certs.caFile, String(clients)],
      { stdin: "pipe", stdout: "pipe", stderr: "inherit" },
    );
    const loadOut = load.stdout.getReader();
    await loadOut.read(); // "started"
    for (let i = 0; i < reloads; i++) {
      await Bun.sleep(100); // the pace of the reloads (what is measured), not a wait for something
      serve(i % 2 === 0 ? otherCertFile : certs.certFile);
      broker.kill("SIGHUP");
    }
    // Every SIGHUP rebound the listeners (a refused certificate would say so on stderr instead).
    const rebound = brokerOut.until((line) => line.includes("SIGHUP: reread the TLS certificate"), reloads);
    let timer: Timer | undefined;
    await Promise.race([
      rebound,
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`the broker did not say it reloaded ${reloads} times within ${RELOADS_WAIT_MS} ms`),
            ),
          RELOADS_WAIT_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
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
console.log(`failed attempts per reload: median (range) ${medianRange(perReload, 2, "–")}`);
