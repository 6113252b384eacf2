/**
 * AtomicWriteBatch (ffi/file.ts), the clean shutdown's way of writing thousands of checkpoints and
 * producer snapshots durably at once: staged files change nothing until the commit, the commit puts
 * every one in place and leaves no temporary file; and a broker's clean stop goes through it (a
 * restart after SIGTERM finds every partition cleanly closed: nothing scanned).
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { AtomicWriteBatch } from "../../ffi/file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

test("staged files change nothing until the commit, which puts each in place", () => {
  using dir = tempDir();
  const files = Array.from({ length: 20 }, (_, i) => {
    const sub = dir.file(`p-${i}`);
    fs.mkdirSync(sub);
    const file = path.join(sub, "checkpoint.json");
    if (i % 2 === 0) fs.writeFileSync(file, `old ${i}`);
    return file;
  });
  const batch = new AtomicWriteBatch(dir.path);
  files.forEach((file, i) => {
    batch.stage(file, i % 3 === 0 ? new TextEncoder().encode(`new ${i}`) : `new ${i}`);
  });
  expect(batch.size).toBe(20);
  files.forEach((file, i) => {
    expect(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined).toBe(
      i % 2 === 0 ? `old ${i}` : undefined,
    );
  });
  batch.commit();
  expect(batch.size).toBe(0);
  files.forEach((file, i) => {
    expect(fs.readFileSync(file, "utf8")).toBe(`new ${i}`);
    expect(fs.readdirSync(path.dirname(file))).toEqual(["checkpoint.json"]);
  });
  // A second commit has nothing to do.
  batch.commit();
});

test("a staging failure names the file and leaves no temporary file", () => {
  using dir = tempDir();
  const batch = new AtomicWriteBatch(dir.path);
  expect(() => batch.stage(dir.file("missing/checkpoint.json"), "x")).toThrow(
    /missing\/checkpoint\.json\.tmp/,
  );
  expect(batch.size).toBe(0);
});

test("a broker's clean stop writes every partition's clean checkpoint (the restart scans nothing)", async () => {
  using dir = tempDir();
  const dataDir = dir.file("data");
  {
    await using broker = await startBroker(dataDir);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await client.createTopic("t", { partitions: 64 });
    await Promise.all(
      Array.from({ length: 64 }, (_, p) => client.produce("t", p, batchOfValues(["a", "b"]))),
    );
    client.close();
    expect(await broker.stop("SIGTERM")).toBe(0);
  }
  for (let p = 0; p < 64; p++) {
    const names = fs.readdirSync(path.join(dataDir, `t-${p}`));
    expect(names.filter((name) => name.endsWith(".tmp"))).toEqual([]);
    const checkpoint = JSON.parse(fs.readFileSync(path.join(dataDir, `t-${p}`, "checkpoint.json"), "utf8"));
    expect(checkpoint.cleanShutdown).toBe(true);
  }
  await using broker = await startBroker(dataDir);
  expect(broker.startLine).toContain("(clean shutdown, nothing scanned)");
});
