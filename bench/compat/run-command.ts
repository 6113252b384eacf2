/**
 * One command of a compatibility run, to its end: its output when it exits 0, else an error with
 * the command line and everything it printed (bench/compat/run.ts, kafka-node.ts, python.ts).
 */
export async function runCommand(command: string[], what: string): Promise<string> {
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`${what} failed (exit ${code}): ${command.join(" ")}\n${stdout}${stderr}`);
  return stdout + stderr;
}
