/**
 * What a throughput load generator (bench/load/*.ts, a separate process) prints: one JSON line,
 * read back by `runLoad` in the benchmark that started it. One shape for all of them, so that every
 * benchmark reads records, bytes and rates the same way.
 */

export interface ThroughputResult {
  records: number;
  /** Record bytes moved, framing included (length and CRC per record). */
  bytes: number;
  seconds: number;
  recordsPerSecond: number;
  megabytesPerSecond: number;
  /** The load process's CPU time (user + system) over the measured span, when it reports it. */
  cpuSeconds?: number;
}

/** CPU time (user + system, seconds) since `since` (a process.cpuUsage() reading). */
export function cpuSecondsSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}

/** Prints the result line and ends the load process (its sockets may still hold timers). */
export function reportThroughput(
  records: number,
  bytes: number,
  seconds: number,
  cpuSeconds?: number,
): never {
  const result: ThroughputResult = {
    records,
    bytes,
    seconds,
    recordsPerSecond: records / seconds,
    megabytesPerSecond: bytes / seconds / 1e6,
    ...(cpuSeconds === undefined ? {} : { cpuSeconds }),
  };
  console.log(JSON.stringify(result));
  process.exit(0);
}
