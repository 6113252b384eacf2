/**
 * CLI output: aligned tables for people, JSON for scripts, a progress line on stderr for long work,
 * and a buffered stdout that keeps memory bounded and ends quietly when its reader has gone.
 * Progress is drawn only when stderr is a terminal (or when forced).
 */
import { readerGone } from "../../ffi/pipe.ts";
import { CLI_OUTPUT_BUFFER_BYTES, CLI_PROGRESS_REDRAW_MS } from "../domain/limits.ts";
import { formatBytes } from "../domain/units.ts";

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  // A loop, not Math.max(...column): spreading a million rows overflows the call stack.
  const widths = headers.map((_, column) => {
    let width = 0;
    for (const row of cells) width = Math.max(width, (row[column] ?? "").length);
    return width;
  });
  const line = (row: string[]) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join("  ")
      .trimEnd();
  return [line(cells[0]!), line(widths.map((width) => "-".repeat(width))), ...cells.slice(1).map(line)].join(
    "\n",
  );
}

/**
 * Progress of long work on stderr. With a known total (a file, a data directory): a bar and a
 * percentage. Without one (stdin has no size): records and bytes so far and per second, since a
 * bar over an unknown total stayed at 0 % for the whole run.
 */
export class Progress {
  private readonly total: number;
  private readonly label: string;
  private readonly enabled: boolean;
  private readonly startMs = performance.now();
  private done = 0;
  private records = 0;
  private lastDrawMs = 0;

  constructor(label: string, total: number, force = false) {
    this.label = label;
    this.total = total;
    this.enabled = force || process.stderr.isTTY === true;
  }

  /** `bytes` more done (and `records` more records, when the work counts records). */
  add(bytes: number, records = 0): void {
    this.done += bytes;
    this.records += records;
    const now = performance.now();
    if (this.enabled && now - this.lastDrawMs > CLI_PROGRESS_REDRAW_MS) {
      this.lastDrawMs = now;
      this.draw(now);
    }
  }

  private draw(now: number): void {
    if (this.total > 0) {
      const fraction = Math.min(1, this.done / this.total);
      const width = 30;
      const filled = Math.round(fraction * width);
      const bar = `${"#".repeat(filled)}${".".repeat(width - filled)}`;
      process.stderr.write(`\r${this.label} [${bar}] ${(fraction * 100).toFixed(0).padStart(3)}%`);
      return;
    }
    const seconds = Math.max((now - this.startMs) / 1000, 0.001);
    process.stderr.write(
      `\r${this.label}: ${this.records} records, ${formatBytes(this.done)} ` +
        `(${Math.round(this.records / seconds)} records/s, ${formatBytes(Math.round(this.done / seconds))}/s)   `,
    );
  }

  finish(): void {
    if (!this.enabled) return;
    if (this.total > 0) this.done = this.total;
    this.draw(performance.now());
    process.stderr.write("\n");
  }
}

/** The reader of stdout has gone (EPIPE): the command stops quietly, exit 0, like `cat | head`. */
export class StdoutClosed extends Error {
  constructor() {
    super("stdout was closed");
  }
}

export function isClosedPipe(error: unknown): boolean {
  return error instanceof StdoutClosed || (error as NodeJS.ErrnoException | null)?.code === "EPIPE";
}

const ENCODER = new TextEncoder();

/**
 * Bytes to stdout, untouched (raw payloads stay raw: no text decoding on the way), gathered into
 * buffers of CLI_OUTPUT_BUFFER_BYTES. `write` never waits and never touches the pipe; `drain()`
 * writes the buffers one at a time, waiting for the pipe to take each. Callers drain whenever
 * `full` says so, which bounds memory when the reader is slower than the records. Writing only
 * inside drain() also means a closed pipe (EPIPE) surfaces there, as an error the caller awaits:
 * chunks handed to Bun's stdout writer without waiting failed later, each printed as an uncaught
 * error with its stack trace.
 */
export class Output {
  private readonly sink = Bun.stdout.writer();
  private buffer = new Uint8Array(CLI_OUTPUT_BUFFER_BYTES);
  private used = 0;
  private readonly queue: Uint8Array[] = [];
  private queuedBytes = 0;

  get full(): boolean {
    return this.queuedBytes + this.used >= CLI_OUTPUT_BUFFER_BYTES;
  }

  write(bytes: Uint8Array): void {
    if (this.used + bytes.length > this.buffer.length) {
      this.seal();
      if (bytes.length > this.buffer.length) {
        this.enqueue(bytes.slice());
        return;
      }
    }
    this.buffer.set(bytes, this.used);
    this.used += bytes.length;
  }

  text(text: string): void {
    // Every UTF-16 unit becomes at most 3 bytes of UTF-8.
    if (this.used + text.length * 3 > this.buffer.length) {
      this.seal();
      if (text.length * 3 > this.buffer.length) {
        this.enqueue(ENCODER.encode(text));
        return;
      }
    }
    this.used += ENCODER.encodeInto(text, this.buffer.subarray(this.used)).written;
  }

  private seal(): void {
    if (this.used === 0) return;
    const chunk = this.buffer.subarray(0, this.used);
    this.buffer = new Uint8Array(CLI_OUTPUT_BUFFER_BYTES);
    this.used = 0;
    this.enqueue(chunk);
  }

  private enqueue(chunk: Uint8Array): void {
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
  }

  /** Writes everything buffered, waiting for the pipe to take each chunk (throws EPIPE when it has gone). */
  async drain(): Promise<void> {
    this.seal();
    while (this.queue.length > 0) {
      const chunk = this.queue.shift()!;
      this.queuedBytes -= chunk.length;
      // write() returns a Promise when the write is pending (bun-types, FileSink.write), and that
      // Promise is what settles once the pipe took the chunk, or rejects with EPIPE once the reader
      // has gone. flush() meanwhile returns 0 at once (seen for every chunk of a few KiB or more):
      // awaiting flush() alone neither waited for the pipe nor saw EPIPE, and the rejection nobody
      // handled ended `consume <topic of several partitions> | head -1` with exit 1 and a stack trace.
      await this.sink.write(chunk);
      await this.sink.flush();
    }
  }
}

/**
 * Calls `onClosed` once the reader of stdout has gone, checking every `intervalMs` (see
 * ffi/pipe.ts). Returns the function that stops watching. The timer does not keep the process alive.
 */
export function watchStdoutReader(intervalMs: number, onClosed: () => void): () => void {
  const timer = setInterval(() => {
    if (readerGone(1)) {
      clearInterval(timer);
      onClosed();
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
