/**
 * Runs a command with stdout and stderr passed through and prints its peak resident memory (bytes)
 * as the last line of stderr: `peak-rss=<bytes>`. Why a wrapper: Linux keeps ru_maxrss across exec,
 * and Bun.spawn forks the test process first, so a child spawned from a test runner that holds
 * hundreds of MiB reports the runner's size as its own peak (measured: the same dump "peaked" at 63,
 * 195, 313, 487, 647 MiB as its parent kept 120 MiB more per run). This process is small and fresh.
 */
const [command, ...args] = process.argv.slice(2);
const child = Bun.spawn([command!, ...args], { stdin: "ignore", stdout: "inherit", stderr: "inherit" });
await child.exited;
console.error(`peak-rss=${child.resourceUsage()?.maxRSS ?? 0}`);
process.exit(child.exitCode ?? 1);

export {};
