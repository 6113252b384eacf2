/**
 * End to end against a real broker child process on 127.0.0.1, port 0, through the real client:
 * round trips across segment boundaries, pipelining, long poll, offset errors, bad batches, the
 * zero-copy proof (bytes counted through sendfile) and the copying path, restarts (kill -9, SIGTERM),
 * refusals to start.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { OffsetOutOfRangeError } from "../../src/domain/errors.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { type BrokerProcess, runBrokerExpectingFailure, startBroker } from "../helpers/broker-process.ts";
import { runCli } from "../helpers/cli-process.ts";
import { payloadForOffset } from "../helpers/random.ts";
import { fetchedTexts, readValues } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

// These tests start processes and wait on disks; the 5 s default is too tight for a busy 2-core CI.
setDefaultTimeout(30_000);

async function readAll(client: BooblikClient, topic: string, partition: number, from: number, to: number) {
  return (await readValues(client, topic, partition, from, to)).map((value) => value!);
}

describe("produce and fetch", () => {
  test("round trips across segment boundaries; fetches end on entries and continue in the next segment", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("rt", { segmentBytes: 2048, partitions: 2 });
      let next = 0;
      for (let batch = 0; batch < 60; batch++) {
        const values = Array.from({ length: 1 + (batch % 5) }, (_, i) => payloadForOffset(next + i, 120));
        const ack = await client.produce("rt", 1, batchOfValues(values));
        expect(ack.firstOffset).toBe(next);
        expect(ack.recordCount).toBe(values.length);
        expect(ack.durability).toBe("forced");
        next += values.length;
      }
      const offsets = await client.listOffsets("rt", 1);
      expect(offsets).toEqual({ logStartOffset: 0, nextOffset: next });
      // Fetches of 700 bytes from every offset: each starts at the batch holding it.
      const payloads = await readAll(client, "rt", 1, 0, next);
      expect(payloads.length).toBe(next);
      payloads.forEach((payload, i) => {
        expect(Buffer.from(payload).equals(Buffer.from(payloadForOffset(i, 120)))).toBe(true);
      });
      // A fetch never crosses a segment end: with a huge maxBytes it stops at the first segment's end.
      const first = await client.fetch("rt", 1, 0, { maxBytes: 10_000_000 });
      expect(first.recordCount).toBeLessThan(next);
      expect(first.records.length).toBeLessThanOrEqual(2048 - 32);
      // An empty fetch at the end of the log, without waiting.
      const atEnd = await client.fetch("rt", 1, next);
      expect(atEnd).toMatchObject({ recordCount: 0, nextOffset: next });
      expect((await client.fetch("rt", 0, 0)).recordCount).toBe(0);
    } finally {
      client.close();
    }
  });

  test("pipelining: many requests in flight on one connection are answered in order", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("pipe", { durability: "force" });
      const acks = await Promise.all(
        Array.from({ length: 500 }, (_, i) => client.produce("pipe", 0, batchOfValues([`r${i}`, `s${i}`]))),
      );
      // Every produce was appended in request order: the offsets are exactly 0, 2, 4, …
      acks.forEach((ack, i) => {
        expect(ack.firstOffset).toBe(2 * i);
      });
      const mixed = await Promise.all([
        client.fetch("pipe", 0, 0, { maxBytes: 10 }),
        client.listOffsets("pipe", 0),
        client.fetch("pipe", 0, 998, { maxBytes: 1000 }),
        client.metadata(["pipe"]),
      ]);
      // maxBytes 10 is less than one entry: the first entry still comes whole.
      expect(fetchedTexts(mixed[0], 0)).toEqual(["r0", "s0"]);
      expect(mixed[1].nextOffset).toBe(1000);
      expect(fetchedTexts(mixed[2], 998)).toEqual(["r499", "s499"]);
      expect(mixed[3].topics[0]!.partitions[0]!.nextOffset).toBe(1000);
    } finally {
      client.close();
    }
  });

  test("a long-poll fetch waits and is woken by a produce on another connection; an idle one times out empty", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const consumer = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    const producer = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await producer.createTopic("lp");
      let answered = false;
      const waiting = consumer.fetch("lp", 0, 0, { maxWaitMs: 20_000 }).then((result) => {
        answered = true;
        return result;
      });
      // The fetch is registered as waiting before we produce (a condition, checked through STATS).
      await waitUntil(
        async () => (await producer.stats()).waitingFetches === 1,
        "the FETCH to wait",
        10_000,
        2,
      );
      expect(answered).toBe(false);
      await producer.produce("lp", 0, batchOfValues(["wake up"]));
      const result = await waiting;
      expect(fetchedTexts(result, 0)).toEqual(["wake up"]);
      const empty = await consumer.fetch("lp", 0, 1, { maxWaitMs: 50 });
      expect(empty.recordCount).toBe(0);
      expect(empty.nextOffset).toBe(1);
    } finally {
      consumer.close();
      producer.close();
    }
  });

  test("errors: offset out of range with bounds, unknown topic, corrupt batch, record too large; nothing appended", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("err", { maxRecordBytes: 200, segmentBytes: 4096 });
      await client.produce("err", 0, batchOfValues(["a", "b", "c"]));
      const outOfRange = await client.fetch("err", 0, 7).catch((error) => error);
      expect(outOfRange).toBeInstanceOf(OffsetOutOfRangeError);
      expect(outOfRange).toMatchObject({
        code: "OFFSET_OUT_OF_RANGE",
        offset: 7,
        logStartOffset: 0,
        nextOffset: 3,
      });
      await expect(client.fetch("nope", 0, 0)).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
      await expect(client.fetch("err", 5, 0)).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
      const corrupt = batchOfValues(["good", "bad!"]).slice();
      corrupt[corrupt.length - 1]! ^= 1;
      await expect(client.produce("err", 0, corrupt)).rejects.toMatchObject({ code: "CORRUPT_RECORD" });
      // maxRecordBytes bounds the whole batch: 61 header bytes + one record of a 150-byte value.
      await expect(client.produce("err", 0, batchOfValues([new Uint8Array(150)]))).rejects.toMatchObject({
        code: "RECORD_TOO_LARGE",
      });
      await expect(client.produce("err", 0, new Uint8Array([0, 0, 0]))).rejects.toMatchObject({
        code: "CORRUPT_RECORD",
      });
      await expect(client.createTopic("err")).rejects.toMatchObject({ code: "TOPIC_EXISTS" });
      await expect(client.createTopic("bad name!")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(client.createTopic("cfg", { partitions: -1 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      expect((await client.listOffsets("err", 0)).nextOffset).toBe(3);
      // The connection is still usable after all those errors.
      expect((await client.produce("err", 0, batchOfValues(["d"]))).firstOffset).toBe(3);
    } finally {
      client.close();
    }
  });

  test("the client checks every CRC of what it fetched", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("crc", { segmentBytes: 4096, durability: "force" });
      for (const value of ["one", "two", "three"]) await client.produce("crc", 0, batchOfValues([value]));
      // Damage the last byte (the header count of its only record) of the second entry on disk,
      // behind the broker's back. Each entry is 8 + 61 + the record (7 + value length).
      const file = `${dir.path}/crc-0/00000000000000000000.log`;
      const bytes = new Uint8Array(await Bun.file(file).arrayBuffer());
      const firstEntry = 8 + 61 + 7 + 3;
      const secondEntry = 8 + 61 + 7 + 3;
      bytes[32 + firstEntry + secondEntry - 1]! ^= 0xff;
      await Bun.write(file, bytes);
      // The answer ends before the damaged entry (issue 15): the client hands out what is valid.
      expect(fetchedTexts(await client.fetch("crc", 0, 0), 0)).toEqual(["one"]);
      // From the damaged entry, the broker (which checks the first entry it sends) names it.
      const failure = await client.fetch("crc", 0, 1).catch((error) => error);
      expect(failure).toMatchObject({ code: "CORRUPT_RECORD" });
      expect((failure as Error).message).toContain("the entry at offset 1 is damaged");
      expect((failure as Error).message).toContain("the next readable offset is 2");
      expect(fetchedTexts(await client.fetch("crc", 0, 2), 2)).toEqual(["three"]);
    } finally {
      client.close();
    }
  });
});

describe("zero copy", () => {
  test("FETCH answers of 64 KiB and more go through sendfile, smaller ones are copied: the broker counts exactly the bytes of each", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("zc", { durability: "append" });
      const values = Array.from({ length: 2000 }, (_, i) => payloadForOffset(i, 500));
      for (let i = 0; i < values.length; i += 100)
        await client.produce("zc", 0, batchOfValues(values.slice(i, i + 100)));
      const before = await client.stats();
      expect(before.fetchPath).toBe("sendfile");
      const answers: { bytes: number; records: string }[] = [];
      // Whole batches of 100 records (about 27 KB each): several per answer within 150 KiB, and at
      // 16 KiB only the first, which always comes whole.
      for (const maxBytes of [150 * 1024, 16 * 1024]) {
        let offset = 0;
        while (offset < values.length) {
          const result = await client.fetch("zc", 0, offset, { maxBytes });
          answers.push({ bytes: result.records.length, records: fetchedTexts(result, offset).join() });
          offset += result.recordCount;
        }
      }
      // The same records either way (copied answers are checked, then sent as stored).
      expect(answers.map((a) => a.records).join()).toBe(
        [...values, ...values].map((v) => new TextDecoder().decode(v)).join(),
      );
      const large = answers.filter((a) => a.bytes >= 64 * 1024).reduce((sum, a) => sum + a.bytes, 0);
      const small = answers.filter((a) => a.bytes < 64 * 1024).reduce((sum, a) => sum + a.bytes, 0);
      expect(large).toBeGreaterThan(0);
      expect(small).toBeGreaterThan(0);
      const after = await client.stats();
      expect(Number(after.sendfileBytes) - Number(before.sendfileBytes)).toBe(large);
      expect(Number(after.sendfileCalls)).toBeGreaterThan(Number(before.sendfileCalls));
      expect(Number(after.copiedFetchBytes) - Number(before.copiedFetchBytes)).toBe(small);
    } finally {
      client.close();
    }
  });

  test("the copying path behind --fetch-path copy sends the same bytes without sendfile", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--fetch-path", "copy"]);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("cp");
      await client.produce("cp", 0, batchOfValues(["x", "y", "z"]));
      const result = await client.fetch("cp", 0, 1);
      // The entry holding offset 1 is the whole batch (0-2); the reader drops offset 0.
      expect(result.firstOffset).toBe(0);
      expect(fetchedTexts(result, 1)).toEqual(["y", "z"]);
      const stats = await client.stats();
      expect(stats).toMatchObject({
        fetchPath: "copy",
        sendfileBytes: 0,
        copiedFetchBytes: result.records.length,
      });
    } finally {
      client.close();
    }
  });
});

describe("restarts and refusals", () => {
  test("kill -9 then restart keeps every acknowledged record; SIGTERM then restart is clean and scans nothing", async () => {
    using dir = tempDir();
    // Every broker started here is stopped at the end, also when a check fails.
    const started: BrokerProcess[] = [];
    const start = async () => {
      const broker = await startBroker(dir.path);
      started.push(broker);
      return broker;
    };
    try {
      let broker = await start();
      let client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      await client.createTopic("keep", { segmentBytes: 4096, durability: "force" });
      for (let i = 0; i < 100; i++) await client.produce("keep", 0, batchOfValues([payloadForOffset(i, 50)]));
      client.close();
      await broker.stop("SIGKILL");
      expect(broker.process.signalCode).toBe("SIGKILL");

      broker = await start();
      expect(broker.startLine).toContain("recovered after a crash");
      client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      const payloads = await readAll(client, "keep", 0, 0, 100);
      payloads.forEach((payload, i) => {
        expect(Buffer.from(payload).equals(Buffer.from(payloadForOffset(i, 50)))).toBe(true);
      });
      await client.produce("keep", 0, batchOfValues([payloadForOffset(100, 50)]));
      client.close();
      const output = broker.lines.rest();
      expect(await broker.stop("SIGTERM")).toBe(0);
      expect((await output).join("\n")).toContain("stopped cleanly");

      const again = await start();
      expect(again.startLine).toContain("clean shutdown, nothing scanned");
      const last = await BooblikClient.connect({ host: "127.0.0.1", port: again.port });
      try {
        expect((await last.listOffsets("keep", 0)).nextOffset).toBe(101);
        expect((await readAll(last, "keep", 0, 0, 101)).length).toBe(101);
      } finally {
        last.close();
      }
    } finally {
      for (const broker of started) await broker.stop("SIGKILL");
    }
  });

  test("after kill -9 the zeros reserved ahead of a writer are cut but not reported as torn bytes; torn tails are, on both write paths", async () => {
    using dir = tempDir();
    let broker = await startBroker(dir.path);
    let client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      // A mapped segment holds its whole capacity; a forced `file` writer keeps a window of zeros.
      await client.createTopic("mapped", { durability: "force", writeMode: "mapped" });
      await client.createTopic("window", { durability: "force", writeMode: "file" });
      await client.createTopic("plain", { durability: "append", writeMode: "file" });
      for (let i = 0; i < 50; i++)
        for (const topic of ["mapped", "window", "plain"])
          await client.produce(topic, 0, batchOfValues([payloadForOffset(i, 50)]));
    } finally {
      client.close();
      await broker.stop("SIGKILL");
    }
    const segment = (topic: string) => `${dir.path}/${topic}-0/00000000000000000000.log`;
    const sizes = (topics: string[]) => topics.map((topic) => fs.statSync(segment(topic)).size);
    const [mappedBefore, windowBefore] = sizes(["mapped", "window"]);

    broker = await startBroker(dir.path);
    try {
      expect(broker.startLine).toContain("recovered after a crash");
      // Before the fix: "134194798 torn bytes cut" (the mapped capacity) with no write in progress.
      expect(broker.startLine).not.toContain("torn bytes cut");
      // The zeros were there: the mapped file holds far more than its 50 entries of ~100 B (its
      // writer maps the capacity again after the cut), and the window's restart cut them.
      expect(mappedBefore).toBeGreaterThan(1 << 20);
      expect(windowBefore).toBeGreaterThan(sizes(["window"])[0]!);
      client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      for (const topic of ["mapped", "window", "plain"])
        expect((await readAll(client, topic, 0, 0, 50)).length).toBe(50);
      client.close();
    } finally {
      // Also when a check fails: no broker outlives the test.
      await broker.stop("SIGKILL");
    }

    // Torn writes: bytes after the last entry that are not zeros. On the file path, 37 bytes past
    // the end; on the mapped one a torn append's bytes without its length (the mapped writer stores
    // an entry's length last), 37 bytes from 4 past the end of the entries: 41 to count.
    fs.appendFileSync(segment("plain"), new Uint8Array(37).fill(0xab));
    const mapped = fs.readFileSync(segment("mapped"));
    let end = 32; // the segment header
    while (mapped.readUInt32BE(end) !== 0) end += 8 + mapped.readUInt32BE(end);
    const fd = fs.openSync(segment("mapped"), "r+");
    fs.writeSync(fd, new Uint8Array(37).fill(0xab), 0, 37, end + 4);
    fs.closeSync(fd);
    await using again = await startBroker(dir.path);
    expect(again.startLine).toContain(`, ${37 + 41} torn bytes cut`);
    const last = await BooblikClient.connect({ host: "127.0.0.1", port: again.port });
    try {
      expect((await last.listOffsets("plain", 0)).nextOffset).toBe(50);
      expect((await last.listOffsets("mapped", 0)).nextOffset).toBe(50);
    } finally {
      last.close();
    }
  });
  test("a wrong BOOBLIK_CRC32C, read while the modules load, is one line and an exit code for the broker and the CLI", async () => {
    using dir = tempDir();
    const expected = "BOOBLIK_CRC32C=bogus: expected auto, isa-l-01, isa-l-00, isa-l-dispatcher, portable";
    // Before: Bun's report of an uncaught exception, source lines and a stack trace.
    const broker = await runBrokerExpectingFailure(["--data-dir", dir.path, "--port", "0"], {
      BOOBLIK_CRC32C: "bogus",
    });
    expect([broker.exitCode, broker.stderr]).toEqual([1, `booblik: ${expected}\n`]);
    expect(fs.readdirSync(dir.path)).toEqual([]);
    const cli = await runCli(["--local", "topics", "list"], {
      env: { BOOBLIK_CRC32C: "bogus" },
    });
    expect([cli.exitCode, cli.stderr]).toEqual([2, `booblik-cli: ${expected}\n`]);
  });

  test("a port in use and a locked data directory are refused with a clear message and exit code 1", async () => {
    using first = tempDir();
    using second = tempDir();
    using third = tempDir();
    await using broker = await startBroker(first.path);
    const portTaken = await runBrokerExpectingFailure([
      "--data-dir",
      second.path,
      "--host",
      "127.0.0.1",
      "--port",
      String(broker.port),
    ]);
    expect(portTaken.exitCode).toBe(1);
    expect(portTaken.stderr).toContain(`cannot listen on 127.0.0.1:${broker.port}: address already in use`);
    // A data directory the failed start made is removed again; one that was there stays (before
    // 2026-12-03 a new one was left behind, holding a lock file and an empty topics/).
    const made = path.join(second.path, "new-data");
    const refusedFresh = await runBrokerExpectingFailure([
      "--data-dir",
      made,
      "--host",
      "127.0.0.1",
      "--port",
      String(broker.port),
    ]);
    expect(refusedFresh.exitCode).toBe(1);
    expect(fs.existsSync(made)).toBe(false);
    expect(fs.existsSync(second.path)).toBe(true);
    expect(portTaken.stdout).not.toContain("listening");
    // Each refusal: exit code 1 and a message that says why.
    const refused = async (args: string[], message: string) => {
      const run = await runBrokerExpectingFailure(args);
      expect(run.exitCode, args.join(" ")).toBe(1);
      expect(run.stderr).toContain(message);
    };
    await refused(
      ["--data-dir", first.path, "--host", "127.0.0.1", "--port", "0"],
      `data directory ${first.path} is in use by pid ${broker.process.pid}`,
    );
    await refused(
      ["--data-dir", second.path, "--host", "203.0.113.7", "--port", "0", "--allow-anonymous", "yes"],
      "cannot listen on 203.0.113.7:0",
    );
    await refused(
      ["--data-dir", second.path, "--durability", "maybe"],
      "durability must be one of append, force, interval",
    );
    // Numbers that are not numbers are refused, not read as "no limit" (NaN compares false).
    await refused(
      ["--data-dir", second.path, "--max-connections", "many"],
      'max connections must be an integer ≥ 1, got "many"',
    );
    await refused(
      ["--data-dir", second.path, "--max-open-segment-files", "2"],
      'max open segment files must be an integer ≥ 4, got "2"',
    );
    // An option where a value belongs is a missing value (it was taken as the value, and the
    // value after it refused as an unknown option: "unknown option off").
    await refused(
      ["--data-dir", second.path, "--port", "--kafka-port", "off"],
      "--port needs a value, not the option --kafka-port",
    );
    // The refused brokers left the running one alone.
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    expect((await client.metadata()).brokerVersion).toBe("0.1.0");
    client.close();
    // And a plain TCP server holding a port is refused the same way as a broker.
    const holder = net.createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => holder.once("listening", resolve));
    const heldPort = (holder.address() as net.AddressInfo).port;
    const held = await runBrokerExpectingFailure([
      "--data-dir",
      second.path,
      "--host",
      "127.0.0.1",
      "--port",
      String(heldPort),
    ]);
    holder.close();
    expect(held.exitCode).toBe(1);
    expect(held.stderr).toContain("address already in use");
    // The metrics port too: before 2026-12-03 a second broker with the same --metrics-port started
    // and shared it (Bun set SO_REUSEPORT), its /metrics and /ready answering for either broker.
    await using withMetrics = await startBroker(third.path, ["--metrics-port", "0"]);
    const metricsPort = Number(/metrics on \S+:(\d+)/.exec(withMetrics.startLine)?.[1]);
    const metricsTaken = await runBrokerExpectingFailure([
      "--data-dir",
      second.path,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--metrics-port",
      String(metricsPort),
    ]);
    expect(metricsTaken.exitCode).toBe(1);
    expect(metricsTaken.stderr).toBe(
      `booblik: cannot serve metrics on 127.0.0.1:${metricsPort}: address already in use (choose another --metrics-port, or --metrics-port off)\n`,
    );
  });

  // `chattr +i` (immutable: mkdir inside fails with EPERM) stands in for a read-only mount or a
  // directory of another user; it needs root and a file system that has the flag.
  const chattrUnavailable = (() => {
    using probe = tempDir();
    const result = Bun.spawnSync(["chattr", "+i", probe.path]);
    Bun.spawnSync(["chattr", "-i", probe.path]);
    return result.exitCode === 0 ? undefined : `chattr +i failed: ${result.stderr.toString().trim()}`;
  })();
  if (chattrUnavailable !== undefined)
    console.warn(`e2e.test.ts: data directory test skipped: ${chattrUnavailable}`);
  test.skipIf(chattrUnavailable !== undefined)(
    "a data directory the broker cannot write is refused naming it and what to check",
    async () => {
      using dir = tempDir();
      Bun.spawnSync(["chattr", "+i", dir.path]);
      try {
        const refused = await runBrokerExpectingFailure([
          "--data-dir",
          dir.path,
          "--host",
          "127.0.0.1",
          "--port",
          "0",
        ]);
        expect(refused.exitCode).toBe(1);
        // Before 2026-12-03 the line was only "booblik: mkdir failed: EPERM on <dir>/topics".
        expect(refused.stderr).toBe(
          `booblik: cannot open the data directory ${dir.path}: mkdir failed: EPERM on ${dir.path}/topics (the broker must be able to write there: check its permissions and mount, or choose another --data-dir)\n`,
        );
      } finally {
        Bun.spawnSync(["chattr", "-i", dir.path]);
      }
    },
  );

  test("--help lists every option with its environment variable", async () => {
    const help = await runBrokerExpectingFailure(["--help"]);
    expect(help.exitCode).toBe(0);
    for (const option of [
      "--data-dir",
      "--host",
      "--port",
      "--durability",
      "--write-mode",
      "--segment-size",
      "--retention-size",
      "--retention-time",
      "--max-record-size",
      "--max-frame-size",
      "--max-connections",
      "--max-open-segment-files",
      "--idle-timeout",
      "--fetch-path",
    ]) {
      expect(help.stdout).toContain(option);
    }
    expect(help.stdout).toContain("BOOBLIK_PORT");
  });

  test("options come from BOOBLIK_* environment variables", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, [], {
      BOOBLIK_DURABILITY: "interval",
      BOOBLIK_WRITE_MODE: "mapped",
    });
    expect(broker.startLine).toContain("durability interval, write path mapped");
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("env");
      const topic = (await client.metadata(["env"])).topics[0]!;
      expect(topic.config).toMatchObject({ durability: "interval", writeMode: "mapped" });
    } finally {
      client.close();
    }
  });
});
