/**
 * Metrics in the Prometheus text format (version 0.0.4): counters, gauges read when scraped, and
 * histograms with fixed buckets. No dependency; the HTTP side is src/server/metrics-http.ts.
 *
 * Owns: histograms and the registry of metric families, each family a name, help, type and a
 * function read at scrape time. Invariants: a scrape reads every value at that moment (nothing is
 * cached between scrapes); families are written in registration order; a histogram's buckets are
 * cumulative and its count is the `+Inf` bucket.
 *
 * Cost on hot paths: an observation is a bucket search over ~15 bounds and three number updates; no
 * allocation. Labels are fixed when a series is created, never per observation.
 */

type Labels = Record<string, string>;

function renderLabels(labels: Labels, extra?: [string, string]): string {
  const parts = Object.entries(labels).map(([key, value]) => `${key}="${escapeLabel(value)}"`);
  if (extra !== undefined) parts.push(`${extra[0]}="${extra[1]}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  return Number.isInteger(value) ? String(value) : value.toPrecision(9).replace(/\.?0+$/, "");
}

/** Latency buckets in seconds: 50 µs to 10 s. */
export const LATENCY_BUCKETS_SECONDS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
];

export class Histogram {
  readonly bounds: readonly number[];
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(bounds: readonly number[] = LATENCY_BUCKETS_SECONDS) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  get observations(): number {
    return this.count;
  }

  /** Sum of every observed value (seconds for the latency histograms). */
  get observedSum(): number {
    return this.sum;
  }

  render(name: string, labels: Labels): string[] {
    const lines: string[] = [];
    let cumulative = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      cumulative += this.counts[i]!;
      lines.push(
        `${name}_bucket${renderLabels(labels, ["le", formatNumber(this.bounds[i]!)])} ${cumulative}`,
      );
    }
    lines.push(`${name}_bucket${renderLabels(labels, ["le", "+Inf"])} ${this.count}`);
    lines.push(`${name}_sum${renderLabels(labels)} ${formatNumber(this.sum)}`);
    lines.push(`${name}_count${renderLabels(labels)} ${this.count}`);
    return lines;
  }
}

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  /** Series read at scrape time: [labels, value] pairs, or histograms. */
  collect: () => [Labels, number | Histogram][];
}

export class MetricsRegistry {
  private readonly families: Family[] = [];
  private readonly scrapeHooks: (() => void)[] = [];

  /**
   * Runs `hook` at the start of every scrape, before any family is read: for a snapshot several
   * families share (read once per scrape, and consistent across them).
   */
  onScrape(hook: () => void): void {
    this.scrapeHooks.push(hook);
  }

  /** A counter or gauge whose values are read when scraped. */
  register(name: string, type: "counter" | "gauge", help: string, collect: () => [Labels, number][]): void {
    this.families.push({ name, help, type, collect });
  }

  /** Histograms, one per label set, read when scraped. */
  registerHistograms(name: string, help: string, collect: () => [Labels, Histogram][]): void {
    this.families.push({ name, help, type: "histogram", collect });
  }

  render(): string {
    for (const hook of this.scrapeHooks) hook();
    const lines: string[] = [];
    for (const family of this.families) {
      lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
      for (const [labels, value] of family.collect()) {
        if (value instanceof Histogram) lines.push(...value.render(family.name, labels));
        else lines.push(`${family.name}${renderLabels(labels)} ${formatNumber(value)}`);
      }
    }
    return `${lines.join("\n")}\n`;
  }
}
