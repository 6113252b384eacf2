/**
 * Loaded before every test file (bunfig.toml).
 *
 * - Kafka's port: the broker serves Kafka on 9092 by default; the brokers the tests start as child
 *   processes (many at once, and beside whatever else this machine runs) would fight over that one
 *   port. So every child inherits BOOBLIK_KAFKA_PORT=off unless the test asks for a listener itself
 *   (`--kafka-port 0`, a flag wins over the variable). The test of the default itself
 *   (test/kafka/clients.test.ts) spawns its broker without this variable.
 * - An interrupted run leaves no child behind: every process started with `Bun.spawn` is killed with
 *   SIGKILL when `bun test` gets SIGINT, SIGTERM or SIGHUP. Without this, a broker a test had
 *   paused with SIGSTOP outlived a `bun test` stopped with SIGTERM, in state T, deaf to anything but
 *   SIGKILL (seen 2026-12-02); children outlive their parent on Linux unless someone kills them.
 */
import type { Subprocess } from "bun";

process.env.BOOBLIK_KAFKA_PORT ??= "off";

const children = new Set<Subprocess>();
const spawn = Bun.spawn;
// Bun.spawn has several overloads; the wrapper passes its arguments through unchanged.
Bun.spawn = ((...args: Parameters<typeof spawn>) => {
  const child = spawn(...args);
  children.add(child);
  void child.exited.then(() => children.delete(child));
  return child;
}) as typeof spawn;

for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
] as const) {
  process.on(signal, () => {
    for (const child of children) child.kill("SIGKILL");
    process.exit(code);
  });
}
