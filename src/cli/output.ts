/**
 * CLI output: aligned tables for people, JSON for scripts, a progress bar on stderr for long work,
 * and one-line errors. Progress is drawn only when stderr is a terminal (or when forced).
 */

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? "").length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join("  ")
      .trimEnd();
  return [line(cells[0]!), line(widths.map((width) => "-".repeat(width))), ...cells.slice(1).map(line)].join(
    "\n",
  );
}

export class Progress {
  private readonly total: number;
  private readonly label: string;
  private readonly enabled: boolean;
  private done = 0;
  private lastDrawMs = 0;

  constructor(label: string, total: number, force = false) {
    this.label = label;
    this.total = total;
    this.enabled = force || process.stderr.isTTY === true;
  }

  add(amount: number): void {
    this.done += amount;
    const now = performance.now();
    if (this.enabled && now - this.lastDrawMs > 100) {
      this.lastDrawMs = now;
      this.draw();
    }
  }

  private draw(): void {
    const fraction = this.total > 0 ? Math.min(1, this.done / this.total) : 0;
    const width = 30;
    const filled = Math.round(fraction * width);
    const bar = `${"#".repeat(filled)}${".".repeat(width - filled)}`;
    process.stderr.write(`\r${this.label} [${bar}] ${(fraction * 100).toFixed(0).padStart(3)}%`);
  }

  finish(): void {
    if (!this.enabled) return;
    this.done = this.total;
    this.draw();
    process.stderr.write("\n");
  }
}
