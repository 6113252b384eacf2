/**
 * A start on a full disk whose recovery must quarantine a damaged tail (a crash left a damaged
 * entry with valid entries behind it in an unforced tail: segment.ts copies them into
 * `<segment>.log.quarantine-<position>` before the cut) stops with a message that says what is
 * wrong and what to do, cuts nothing, and starts normally once that much space is free, with the
 * quarantine file written. Before 2026-12-03 the message was only `write failed: ENOSPC on
 * …quarantine-<position>.tmp` (found by a fault hunt). Starting such a partition read-only instead
 * is not built (docs/operations.md, "A full disk").
 *
 * The damage: one byte of a record in the middle of an unforced tail flipped while the broker is
 * stopped (what a crash that wrote later pages but not an earlier one leaves). Needs a small tmpfs
 * (root); skipped with the reason otherwise.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { MAIN, startBroker } from "../helpers/broker-process.ts";
import { valuesOf } from "../helpers/records.ts";
import { mountSmallFileSystem, smallFileSystemUnavailable } from "../helpers/small-fs.ts";

setDefaultTimeout(60_000);

const record = (i: number) => `record ${i} `.padEnd(1000, "x");

function fillTheDisk(filler: string): void {
  const fd = fs.openSync(filler, "a");
  const block = new Uint8Array(4096);
  try {
    for (;;) fs.writeSync(fd, block);
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    fs.closeSync(fd);
  }
}

test.skipIf(smallFileSystemUnavailable !== undefined)(
  "a start on a full disk whose recovery must quarantine a damaged tail stops with what to do, cuts nothing, and quarantines once space is free",
  async () => {
    using small = mountSmallFileSystem(4 * 1024 * 1024);
    const dataDir = path.join(small.path, "data");
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      // `append`: nothing is forced, so no recovery point covers the records and the next start
      // scans them all.
      await client.createTopic("t", { durability: "append", segmentBytes: 256 * 1024 });
      await client.createTopic("other", { durability: "force" });
      for (let i = 0; i < 20; i++) await client.produce("t", 0, batchOfValues([record(i)]));
      await client.produce("other", 0, batchOfValues(["kept"]));
      client.close();
      expect(await broker.stop("SIGKILL")).not.toBe(0);
    }
    // Damage a byte inside the 10th record's value: entries 10..19 behind it stay valid.
    const segment = path.join(dataDir, "t-0", "00000000000000000000.log");
    const fd = fs.openSync(segment, "r+");
    try {
      const at = Buffer.from(fs.readFileSync(segment)).indexOf(record(9));
      expect(at).toBeGreaterThan(0);
      const byte = Buffer.alloc(1);
      fs.readSync(fd, byte, 0, 1, at + 500);
      byte[0]! ^= 0xff;
      fs.writeSync(fd, byte, 0, 1, at + 500);
    } finally {
      fs.closeSync(fd);
    }
    const filler = path.join(small.path, "filler");
    fillTheDisk(filler);

    const segmentBytes = fs.statSync(segment).size;
    // The start on the full disk stops, says why and what to do, and cuts nothing.
    const refused = Bun.spawn(
      [process.execPath, MAIN, "--data-dir", dataDir, "--host", "127.0.0.1", "--port", "0"],
      { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, BOOBLIK_KAFKA_PORT: "off" } },
    );
    const [stderr, exitCode] = await Promise.all([new Response(refused.stderr).text(), refused.exited]);
    expect(exitCode).toBe(1);
    expect(stderr).toContain("ENOSPC");
    expect(stderr).toContain("the disk is full: recovery must copy");
    expect(stderr).toContain("nothing was cut; free at least that much space and start again");
    expect(fs.statSync(segment).size).toBe(segmentBytes);

    // Space again: the next start quarantines the damaged tail, as it does on a disk with room.
    fs.unlinkSync(filler);
    {
      await using broker = await startBroker(dataDir);
      const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
      try {
        const other = await client.fetch("other", 0, 0);
        expect(valuesOf(other.records).map((v) => new TextDecoder().decode(v))).toEqual(["kept"]);
        // The nine records before the damage are there; the ten behind it are in the quarantine file.
        expect((await client.fetch("t", 0, 0, { maxBytes: 1024 * 1024 })).recordCount).toBe(9);
      } finally {
        client.close();
      }
      expect(fs.readdirSync(path.join(dataDir, "t-0")).some((name) => name.includes(".quarantine-"))).toBe(
        true,
      );
      expect(await broker.stop("SIGTERM")).toBe(0);
    }
  },
);
