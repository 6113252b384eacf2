/**
 * Packaging: the single executable (`bun run build` compiles src/main.ts with `bun build --compile`)
 * starts, serves a produce and a fetch, and stops cleanly; the Dockerfile stays consistent with the
 * code it packages (no Docker engine runs on these machines, so it is checked, not built).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { frameRecords } from "../../src/record/batch-builder.ts";
import { payloadsOf } from "../../src/record/codec.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(120_000);

const ROOT = path.resolve(import.meta.dir, "../..");

test("the compiled single executable starts, serves a produce and a fetch, and stops", async () => {
  using dir = tempDir();
  const binary = dir.file("booblik");
  const build = Bun.spawnSync(
    ["bun", "build", "--compile", path.join(ROOT, "src/main.ts"), "--outfile", binary],
    {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  expect(build.exitCode).toBe(0);
  expect(fs.statSync(binary).mode & 0o111).not.toBe(0);
  const child = Bun.spawn([binary, "--data-dir", dir.file("data"), "--host", "127.0.0.1", "--port", "0"], {
    cwd: dir.path, // nowhere near the sources: the binary carries everything it needs
    stdout: "pipe",
    stderr: "inherit",
  });
  // SIGKILLed and waited for if the test fails before it stops the binary itself.
  await using _child = killAtEnd(child);
  const lines = new LineReader(child.stdout);
  const start = await lines.waitFor((line) => line.includes("listening on"), "the start line");
  const port = Number(/listening on [^:]+:(\d+)/.exec(start)?.[1]);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port });
  try {
    await client.createTopic("bin");
    const ack = await client.produce("bin", 0, frameRecords(["from", "the", "binary"]));
    expect(ack).toMatchObject({ firstOffset: 0, recordCount: 3, durability: "forced" });
    const fetched = await client.fetch("bin", 0, 0);
    expect(payloadsOf(fetched.records).map((bytes) => new TextDecoder().decode(bytes))).toEqual([
      "from",
      "the",
      "binary",
    ]);
  } finally {
    client.close();
  }
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);
  expect((await lines.rest()).join("\n")).toContain("stopped cleanly");
});

test("the Dockerfile packages what exists, runs as non-root, checks health with booblik-cli", () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
  // Every COPY source exists.
  for (const match of dockerfile.matchAll(/^COPY (.+) \S+$/gm)) {
    for (const source of match[1]!.split(/\s+/))
      expect(fs.existsSync(path.join(ROOT, source)), source).toBe(true);
  }
  expect(dockerfile).toMatch(/^FROM oven\/bun:1\.4\.4/m);
  expect(dockerfile).toMatch(/apt-get install -y --no-install-recommends libisal2/);
  expect(dockerfile).toMatch(/^USER booblik$/m);
  expect(dockerfile).toMatch(/^VOLUME \["\/data"\]$/m);
  expect(dockerfile).toMatch(/^EXPOSE 7979$/m);
  expect(dockerfile).toMatch(/HEALTHCHECK[\s\S]*CMD \["booblik-cli", "health"/);
  expect(dockerfile).toMatch(/^CMD \["bun", "run", "broker"\]$/m);
  expect(dockerfile).toMatch(/BOOBLIK_DATA_DIR=\/data/);
  expect(dockerfile).toMatch(/BOOBLIK_DURABILITY=force/);
  // The port and the environment variables are the ones the broker reads.
  const main = fs.readFileSync(path.join(ROOT, "src/main.ts"), "utf8");
  expect(main).toContain('fallback: "7979"');
  for (const variable of ["BOOBLIK_DATA_DIR", "BOOBLIK_HOST", "BOOBLIK_PORT", "BOOBLIK_DURABILITY"])
    expect(main).toContain(variable);
  const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts;
  expect(scripts.broker).toBe("bun src/main.ts");
  expect(scripts.build).toContain("bun build --compile src/main.ts");
});
