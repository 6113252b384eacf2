/** Starting the broker and load generators as separate processes, and reading their CPU and memory. */
import fs from "node:fs";
import path from "node:path";

const MAIN = path.resolve(import.meta.dir, "../../src/main.ts");

/**
 * A port nobody listens on right now on 127.0.0.1, for a process that takes a number, not 0
 * (redis-server, nats-server, Kafka, booblik's --kafka-port and --metrics-port).
 */
export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

export interface BrokerHandle {
  pid: number;
  port: number;
  stop(): Promise<number>;
}

/** Starts `main` (this checkout's src/main.ts unless another checkout's is given) on a fresh port. */
/**
 * What a child printed up to the end of its first line (and whatever came with it in the same
 * read); the stream stays readable. Throws `${what}: <the text so far>` if the child ends first.
 */
export async function firstOutput(stdout: ReadableStream<Uint8Array>, what: string): Promise<string> {
  const reader = stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${what}: ${text}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text;
}

export async function startBrokerProcess(
  dataDir: string,
  extraArgs: string[],
  main = MAIN,
): Promise<BrokerHandle> {
  fs.mkdirSync(dataDir, { recursive: true });
  const child = Bun.spawn(
    [process.execPath, main, "--data-dir", dataDir, "--host", "127.0.0.1", "--port", "0", ...extraArgs],
    {
      stdout: "pipe",
      stderr: "inherit",
      // Kafka's 9092 is the broker's default: benchmarks start several brokers (and Kafka itself),
      // so theirs is off unless asked for with --kafka-port. The variable, not the flag, because an
      // older checkout (bench/ab.bench.ts) may not know the flag.
      env: { ...process.env, BOOBLIK_KAFKA_PORT: process.env.BOOBLIK_KAFKA_PORT ?? "off" },
    },
  );
  const text = await firstOutput(child.stdout, "broker exited before starting");
  const port = Number(/listening on [^:]+:(\d+)/.exec(text)?.[1]);
  if (!Number.isInteger(port) || port === 0) throw new Error(`cannot read the broker's port from: ${text}`);
  // Keep draining stdout so the broker never blocks on a full pipe.
  void (async () => {
    for await (const _ of child.stdout) {
      // discard
    }
  })().catch(() => undefined);
  return {
    pid: child.pid,
    port,
    stop: async () => {
      child.kill("SIGTERM");
      return child.exited;
    },
  };
}

/** Runs a load generator to completion and parses the JSON line it prints. */
export async function runLoad(script: string, args: string[]): Promise<unknown> {
  return (await runLoadMeasured(script, args)).result;
}

/** `runLoad`, and the generator's own CPU (user + system seconds, from its rusage). */
export async function runLoadMeasured(
  script: string,
  args: string[],
): Promise<{ result: unknown; cpuSeconds: number }> {
  const child = Bun.spawn([process.execPath, script, ...args], { stdout: "pipe", stderr: "inherit" });
  const output = await new Response(child.stdout).text();
  const code = await child.exited;
  if (code !== 0) throw new Error(`${path.basename(script)} exited with ${code}: ${output}`);
  const cpuMicros = child.resourceUsage()?.cpuTime.total;
  return {
    result: JSON.parse(output.trim().split("\n").at(-1)!),
    cpuSeconds: cpuMicros === undefined ? Number.NaN : Number(cpuMicros) / 1e6,
  };
}

const TICKS_PER_SECOND = 100; // sysconf(_SC_CLK_TCK) on Linux

export function brokerCpuSeconds(pid: number): number;
export function brokerCpuSeconds(pid: number, split: true): { user: number; system: number };
export function brokerCpuSeconds(pid: number, split?: true): number | { user: number; system: number } {
  const { user, system } = statCpuSeconds(`/proc/${pid}/stat`);
  return split ? { user, system } : user + system;
}

/** utime and stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file, in seconds. */
function statCpuSeconds(file: string): { user: number; system: number } {
  const stat = fs.readFileSync(file, "utf8");
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / TICKS_PER_SECOND, system: Number(fields[12]) / TICKS_PER_SECOND };
}

export async function brokerMemory(pid: number): Promise<{ rssBytes: number; anonymousBytes: number }> {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rssBytes: kib("VmRSS"), anonymousBytes: kib("RssAnon") };
}

/**
 * The main thread's scheduler statistics (/proc/<pid>/task/<pid>/schedstat): nanoseconds it ran
 * and nanoseconds it waited on a run queue (runnable, but another thread had the CPU). The wait is
 * how long the event loop was ready to serve and could not: on a machine with fewer cores than
 * runnable threads, a latency tail that no collector pause explains.
 */
export function mainThreadSchedule(pid: number): { runNs: number; waitNs: number } {
  const [run, wait] = fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ");
  return { runNs: Number(run), waitNs: Number(wait) };
}

/**
 * CPU seconds (user + system) of the threads of `pid` whose name starts with `prefix`, summed, e.g.
 * "JITWorker" for JavaScriptCore's compiler threads (/proc/<pid>/task/<tid>/comm and stat).
 */
export function threadsCpuSeconds(pid: number, prefix: string): number {
  let seconds = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").startsWith(prefix)) continue;
      const { user, system } = statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
      seconds += user + system;
    } catch {
      // The thread ended between the listing and the read: it no longer counts.
    }
  }
  return seconds;
}

/** The counts of `perf stat -x ,` output (CSV: value, unit, event, …), by event name. */
export function perfStatCounts(csv: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of csv.split("\n")) {
    const [value, , event] = line.split(",");
    if (event !== undefined && value !== undefined) counts.set(event, Number(value));
  }
  return counts;
}
