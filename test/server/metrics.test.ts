/**
 * The opt-in metrics listener, scraped like Prometheus would: counters and histograms move with
 * produce and fetch, partitions are listed with their sizes, and /ready answers 503 with the
 * recovery progress while a large data directory opens, then 200.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { Broker } from "../../src/broker/broker.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { MAIN, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { freePort } from "../helpers/free-port.ts";
import { metricValue } from "../helpers/metrics.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(60_000);

test("/metrics reports traffic, latency, forces and partitions", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path, [
    "--metrics-port",
    "0",
    "--max-open-segment-files",
    "16",
    "--max-producer-ids",
    "3",
  ]);
  const metricsPort = metricsPortOf(broker.startLine);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("m", { partitions: 2, durability: "force" });
    await new Producer(client).send("m", ["a", "bb", "ccc"], { partition: 1 });
    await client.fetch("m", 1, 0);
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await response.text();
    expect(metricValue(text, "booblik_ready")).toBe(1);
    expect(metricValue(text, "booblik_produce_records_total")).toBe(3);
    expect(metricValue(text, "booblik_fetch_records_total")).toBe(3);
    // One stored entry: its 8-byte frame, the 61-byte batch header, three records of 7 bytes
    // (Length, Attributes, TimestampDelta, OffsetDelta, KeyLength −1, ValueLength, HeaderCount) each
    // plus their values of 1, 2 and 3 bytes.
    // An answer this small is copied, not sent with sendfile (FETCH_SENDFILE_ANSWER_BYTES_MIN).
    expect(metricValue(text, "booblik_fetch_copied_bytes_total")).toBe(8 + 61 + 3 * 7 + 6);
    expect(metricValue(text, "booblik_fetch_sendfile_bytes_total")).toBe(0);
    expect(metricValue(text, "booblik_connections")).toBe(1);
    // The Producer is idempotent by default: its one producer id on partition 1.
    expect(metricValue(text, "booblik_producer_ids")).toBe(1);
    expect(metricValue(text, "booblik_failed_partitions")).toBe(0);
    expect(metricValue(text, 'booblik_segment_read_descriptors{state="limit"}')).toBe(16);
    expect(metricValue(text, 'booblik_segment_read_descriptors{state="open"}')).toBe(0); // nothing sealed yet
    expect(metricValue(text, "booblik_segment_read_descriptors_closed_total")).toBe(0);
    expect(metricValue(text, 'booblik_inbound_budget_bytes{state="limit"}')).toBe(256 * 2 ** 20);
    expect(metricValue(text, 'booblik_inbound_budget_bytes{state="used"}')).toBe(0);
    expect(metricValue(text, "booblik_inbound_budget_waits_total")).toBe(0);
    expect(metricValue(text, "booblik_request_timeouts_total")).toBe(0);
    expect(metricValue(text, 'booblik_request_duration_seconds_count{api="PRODUCE"}')).toBe(1);
    expect(metricValue(text, 'booblik_request_duration_seconds_bucket{api="FETCH",le="+Inf"}')).toBe(1);
    expect(metricValue(text, "booblik_force_duration_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'booblik_partition_next_offset{topic="m",partition="1"}')).toBe(3);
    expect(metricValue(text, 'booblik_partition_size_bytes{topic="m",partition="0"}')).toBe(32);
    expect(metricValue(text, "process_resident_memory_bytes")).toBeGreaterThan(1e6);
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/ready`)).text()).toBe("ready\n");
  } finally {
    client.close();
  }
});

/** Many partitions, closed uncleanly: opening them takes a while (a scan and a checkpoint each). */
async function slowToOpen(dataDir: string): Promise<void> {
  const setup = Broker.open({ dataDir });
  setup.createTopic("wide", { partitions: 400, durability: "append" });
  for (let p = 0; p < 400; p++) await setup.append("wide", p, batchOfValues([`record in ${p}`]));
  for (const topic of setup.listTopics())
    for (const partition of topic.partitions)
      setup.partition(topic.name, partition.partition).log.close(false);
  // The logs are closed already (uncleanly): this releases the lock for the broker child below. A
  // failure here fails the setup rather than leaving the directory locked.
  await setup.close();
}

test("/ready is 503 with the recovery progress while the data directory opens, then 200", async () => {
  using dir = tempDir();
  await slowToOpen(dir.path);
  const port = await freePort();
  const child = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "--data-dir",
      dir.path,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--metrics-port",
      String(port),
      // Bun.spawn without `env` does not pass test/preload.ts's BOOBLIK_KAFKA_PORT=off (Bun 1.4.4):
      // without this the broker would take 9092, and fail beside anything else holding it.
      "--kafka-port",
      "off",
    ],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  try {
    const seen: string[] = [];
    await waitUntil(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the broker exited (${child.exitCode ?? child.signalCode}) before it was ready`);
        const answer = await fetch(`http://127.0.0.1:${port}/ready`).then(
          async (response) => `${response.status} ${await response.text()}`,
          () => undefined,
        );
        if (answer === undefined) return false; // not listening yet
        seen.push(answer.trim());
        return answer.startsWith("200");
      },
      "/ready to answer 200",
      45_000,
      0,
    );
    expect(seen.at(-1)).toBe("200 ready");
    const waiting = seen.filter((answer) => answer.startsWith("503"));
    expect(waiting.length).toBeGreaterThan(0);
    expect(waiting.at(-1)).toMatch(/^503 not ready: opening partitions: \d+ of 400$/);
  } finally {
    child.kill("SIGTERM");
    await child.exited;
  }
});

for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
  test(`${signal} while the data directory opens is acted on once the broker serves, not the end of the process`, async () => {
    using dir = tempDir();
    await slowToOpen(dir.path);
    const port = await freePort();
    const child = Bun.spawn(
      [
        ...[process.execPath, MAIN, "--data-dir", dir.path, "--host", "127.0.0.1", "--port", "0"],
        ...["--metrics-port", String(port), "--kafka-port", "off"],
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    try {
      // Still opening: /ready answers 503 with the progress.
      await waitUntil(
        async () => {
          if (child.exitCode !== null || child.signalCode !== null)
            throw new Error("the broker exited early");
          const status = await fetch(`http://127.0.0.1:${port}/ready`).then(
            (response) => response.status,
            () => undefined,
          );
          return status === 503;
        },
        "/ready to answer 503 while opening",
        45_000,
        0,
      );
      child.kill(signal);
      if (signal === "SIGHUP") {
        // Before, SIGHUP ended the process (exit 129): now it is reread once serving, and the
        // broker goes on until told to stop.
        await waitUntil(
          async () =>
            (await fetch(`http://127.0.0.1:${port}/ready`).then(
              (r) => r.status,
              () => 0,
            )) === 200,
          "/ready to answer 200",
          45_000,
          0,
        );
        child.kill("SIGTERM");
      }
      const [stdout, exitCode] = await Promise.all([new Response(child.stdout).text(), child.exited]);
      // Before, SIGTERM and SIGINT ended it by the signal, silently (exit 143 and 130).
      expect({ exitCode, signalCode: child.signalCode }).toEqual({ exitCode: 0, signalCode: null });
      expect(stdout).toContain(`booblik: ${signal} during the start: `);
      expect(stdout).toContain("booblik: stopped cleanly");
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      await child.exited;
    }
  });
}
