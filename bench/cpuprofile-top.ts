/**
 * The functions a `bun --cpu-prof` profile spent its samples in, by self time: for reading where a
 * process's time goes without a browser's profiler.
 *
 *   bun bench/cpuprofile-top.ts <file.cpuprofile> [count=40]
 *
 * Prints one line per function (name, file and line), its share of the samples, largest first, then
 * the sample count and the median interval between samples. Self time only: a function's callees
 * are their own lines. Native functions show with the name JavaScript called them by and no file
 * (e.g. `write` for a socket write, time in the system call included): the sampler takes the
 * JavaScript thread's stack while it runs, also inside a synchronous call that blocks (an fdatasync
 * on the event loop). It takes none while the event loop waits for events; that wait shows up in the
 * next sample's time delta, so shares are counted in samples, not summed deltas (a sum credits the
 * idle wait to whatever ran first after it).
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
const samplesByFunction = new Map<string, number>();
let samples = 0;
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
  samplesByFunction.set(key, (samplesByFunction.get(key) ?? 0) + 1);
  samples++;
}
for (const [key, functionSamples] of [...samplesByFunction].sort((a, b) => b[1] - a[1]).slice(0, count)) {
  console.log(`${((functionSamples / samples) * 100).toFixed(2).padStart(6)} % ${key}`);
}
const intervals = profile.timeDeltas.filter((delta) => delta > 0).sort((a, b) => a - b);
const medianIntervalMicros = intervals.length === 0 ? 0 : intervals[Math.floor(intervals.length / 2)]!;
console.log(`${samples} samples, median interval ${medianIntervalMicros.toFixed(0)} µs`);
