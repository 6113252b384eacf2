/**
 * Packaging: the single executable (`bun run build` compiles src/main.ts with `bun build --compile`)
 * starts, serves a produce and a fetch, and stops cleanly; the Dockerfile stays consistent with the
 * code it packages (no Docker engine runs on these machines, so it is checked, not built).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BooblikClient } from "../../src/client/client.ts";
import { BROKER_PORT_DEFAULT } from "../../src/domain/limits.ts";
import { batchOfValues } from "../../src/record/entries.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { valuesOf } from "../helpers/records.ts";
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
  // --version answers (it was "--version needs a value"); --help names the binary as it was invoked
  // (it said `usage: bun run broker`, which does not exist where only the binary was copied).
  const version = Bun.spawnSync([binary, "--version"], { cwd: dir.path });
  expect(version.exitCode).toBe(0);
  const packageVersion = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
  expect(version.stdout.toString()).toBe(`booblik ${packageVersion}\n`);
  const help = Bun.spawnSync([binary, "--help"], { cwd: dir.path });
  expect(help.exitCode).toBe(0);
  expect(help.stdout.toString()).toContain("usage: booblik [options]");
  expect(help.stdout.toString()).not.toContain("bun run broker");
  // --kafka-port off: Bun.spawn without `env` passes the environment the process started with, not
  // the preload's BOOBLIK_KAFKA_PORT=off, and 9092 may be taken on this machine.
  const child = Bun.spawn(
    [binary, "--data-dir", dir.file("data"), "--host", "127.0.0.1", "--port", "0", "--kafka-port", "off"],
    {
      cwd: dir.path, // nowhere near the sources: the binary carries everything it needs
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  // SIGKILLed and waited for if the test fails before it stops the binary itself.
  await using _child = killAtEnd(child);
  const lines = new LineReader(child.stdout);
  const start = await lines.waitFor((line) => line.includes("listening on"), "the start line");
  const port = Number(/listening on [^:]+:(\d+)/.exec(start)?.[1]);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port });
  try {
    await client.createTopic("bin");
    const ack = await client.produce("bin", 0, batchOfValues(["from", "the", "binary"]));
    expect(ack).toMatchObject({ firstOffset: 0, recordCount: 3, durability: "forced" });
    const fetched = await client.fetch("bin", 0, 0);
    expect(valuesOf(fetched.records).map((bytes) => new TextDecoder().decode(bytes))).toEqual([
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
  expect(main).toContain("fallback: String(BROKER_PORT_DEFAULT)");
  expect(BROKER_PORT_DEFAULT).toBe(7979);
  for (const variable of ["BOOBLIK_DATA_DIR", "BOOBLIK_HOST", "BOOBLIK_PORT", "BOOBLIK_DURABILITY"])
    expect(main).toContain(variable);
  const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts;
  expect(scripts.broker).toBe("bun src/main.ts");
  expect(scripts.build).toContain("bun build --compile src/main.ts");
});

test("the Dockerfile's health check finds the broker from BOOBLIK_PORT and BOOBLIK_HOST", async () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
  const command = JSON.parse(
    /^HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? "null",
  ) as string[];
  expect(command[0]).toBe("booblik-cli");
  // The image's own environment (its ENV lines), then what `docker run -e` adds.
  const imageEnv = Object.fromEntries(
    [...(/^ENV ((?:.*\\\n)*.*)$/m.exec(dockerfile)?.[1] ?? "").matchAll(/(BOOBLIK_[A-Z_]+)=(\S+)/g)].map(
      (match) => [match[1]!, match[2]!],
    ),
  );
  expect(imageEnv).toMatchObject({ BOOBLIK_HOST: "0.0.0.0", BOOBLIK_PORT: "7979" });
  const check = async (env: Record<string, string>) => {
    const child = Bun.spawn([process.execPath, path.join(ROOT, "src/cli/main.ts"), ...command.slice(1)], {
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "", ...imageEnv, ...env },
    });
    const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    return { exitCode, stderr };
  };
  using dir = tempDir();
  const broker = Bun.spawn(
    [
      process.execPath,
      path.join(ROOT, "src/main.ts"),
      "--data-dir",
      dir.file("data"),
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--kafka-port",
      "off",
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  await using _broker = killAtEnd(broker);
  const start = await new LineReader(broker.stdout).waitFor(
    (line) => line.includes("listening on"),
    "the start line",
  );
  const port = /listening on [^:]+:(\d+)/.exec(start)![1]!;
  // -e BOOBLIK_PORT=<port>: the wildcard host of the image is reached through loopback.
  expect(await check({ BOOBLIK_PORT: port })).toMatchObject({ exitCode: 0 });
  expect(await check({ BOOBLIK_PORT: port, BOOBLIK_HOST: "127.0.0.1" })).toMatchObject({ exitCode: 0 });
  broker.kill("SIGTERM");
  expect(await broker.exited).toBe(0);
  // And it is that port it asks: with the broker gone, the check fails.
  const down = await check({ BOOBLIK_PORT: port });
  expect(down.exitCode).toBe(1);
  expect(down.stderr).toContain(`127.0.0.1:${port}`);
});
