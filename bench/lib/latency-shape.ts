/**
 * The shape of the produce → fetch latency runs (bench/load/latency.ts), shared by the benchmarks
 * that compare against it (bench/network.bench.ts's disk probes, bench/latency-floor.bench.ts).
 */
import { ENTRY_HEADER_BYTES } from "../../src/domain/limits.ts";
import { RecordBatchWriter } from "../../src/record/batch.ts";

/**
 * The bytes one batch of the latency run takes in a segment: `rate / 1000` records of 100 B encoded
 * as bench/load/latency.ts encodes them (no key, one timestamp per batch), plus the entry frame. 5,519
 * B at 50 K records/s, the size of the broker's pwrites seen by strace in that run.
 */
export function storedBatchBytes(rate: number): number {
  const writer = new RecordBatchWriter(1024 * 1024);
  writer.begin();
  const timestamp = Date.now();
  const value = new Uint8Array(100);
  for (let i = 0; i < rate / 1000; i++) writer.add({ key: null, value, timestamp });
  return writer.finish().length + ENTRY_HEADER_BYTES;
}
