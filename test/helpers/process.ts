/**
 * Child processes in tests: reading stdout line by line (waiting for conditions instead of time), and
 * making sure a child is gone when the test's scope ends, whether it passed or failed.
 */
import type { Subprocess } from "bun";

/**
 * `await using _child = killAtEnd(child)`: when the scope ends (normally or by a failed assertion),
 * SIGKILLs the child if it is still running and waits for it to exit. A child the test already
 * stopped is left as it is.
 */
export function killAtEnd(child: Subprocess): AsyncDisposable {
  return {
    async [Symbol.asyncDispose]() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await child.exited;
    },
  };
}

export class LineReader {
  private readonly reader: { read(): Promise<{ done: boolean; value?: Uint8Array | undefined }> };
  private readonly decoder = new TextDecoder();
  private buffered = "";
  private ended = false;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.reader = stream.getReader();
  }

  /** The next line, or undefined at end of stream. */
  async nextLine(): Promise<string | undefined> {
    for (;;) {
      const newline = this.buffered.indexOf("\n");
      if (newline >= 0) {
        const line = this.buffered.slice(0, newline);
        this.buffered = this.buffered.slice(newline + 1);
        return line;
      }
      if (this.ended) {
        if (this.buffered === "") return undefined;
        const rest = this.buffered;
        this.buffered = "";
        return rest;
      }
      const { value, done } = await this.reader.read();
      if (done || value === undefined) this.ended = true;
      else this.buffered += this.decoder.decode(value, { stream: true });
    }
  }

  /** Reads lines until `predicate` accepts one; returns it (throws at end of stream). */
  async waitFor(predicate: (line: string) => boolean, what: string): Promise<string> {
    for (;;) {
      const line = await this.nextLine();
      if (line === undefined) throw new Error(`stream ended before ${what}`);
      if (predicate(line)) return line;
    }
  }

  /** Every remaining line until the stream ends. */
  async rest(): Promise<string[]> {
    const lines: string[] = [];
    for (;;) {
      const line = await this.nextLine();
      if (line === undefined) return lines;
      lines.push(line);
    }
  }
}

/** A finished child process's output and exit code (`runToEnd`). */
export interface ProcessRun {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * Runs `argv` to its end with `input` on its standard input (none: ignored), its output collected;
 * killed after `timeoutMs`, so a hung tool fails its test instead of the suite (kcat, Kafka's tools).
 */
export async function runToEnd(
  argv: string[],
  input: string | undefined,
  timeoutMs: number,
): Promise<ProcessRun> {
  const child = Bun.spawn(argv, {
    stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(timer));
  return { stdout, stderr, exitCode };
}
