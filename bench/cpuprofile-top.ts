/**
 * The functions a `bun --cpu-prof` profile spent its samples in, by self time: for reading where a
 * process's time goes without a browser's profiler.
 *
 *   bun bench/cpuprofile-top.ts <file.cpuprofile> [count=40]
 *
 * Prints one line per function (name, file and line), its share of all sampled time, largest first,
 * then the total. Self time only: a function's callees are their own lines. Native functions show
 * with the name JavaScript called them by and no file (e.g. `write` for a socket write, time in the
 * system call included). The profile samples wall time on the JavaScript thread, so time
 * blocked in a synchronous call (an fdatasync on the event loop) counts where it blocked.
 */
import path from "node:path";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, countText] = process.argv.slice(2);
const count = Number(countText ?? 40);
if (file === undefined || !(count > 0)) {
  console.error("usage: bun bench/cpuprofile-top.ts <file.cpuprofile> [count=40]");
  process.exit(2);
}
const profile = (await Bun.file(file).json()) as CpuProfile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const root = path.resolve(import.meta.dir, "..");
const microsByFunction = new Map<string, number>();
let totalMicros = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const frame = nodes.get(profile.samples[i]!)?.callFrame;
  if (frame === undefined) continue;
  const where = frame.url.startsWith("file://") ? frame.url.slice("file://".length) : frame.url;
  // Native functions have no file: name only.
  const file =
    where === ""
      ? ""
      : ` ${path.isAbsolute(where) ? path.relative(root, where) : where}:${frame.lineNumber + 1}`;
  const key = `${frame.functionName || "(anonymous)"}${file}`;
  const micros = profile.timeDeltas[i] ?? 0;
  microsByFunction.set(key, (microsByFunction.get(key) ?? 0) + micros);
  totalMicros += micros;
}
for (const [key, micros] of [...microsByFunction].sort((a, b) => b[1] - a[1]).slice(0, count)) {
  console.log(`${((micros / totalMicros) * 100).toFixed(2).padStart(6)} % ${key}`);
}
console.log(`sampled ${(totalMicros / 1000).toFixed(0)} ms in ${profile.samples.length} samples`);
