/**
 * The console ships inside the single executable: `bun build --compile` bundles the page's HTML,
 * TypeScript and CSS (Bun's HTML import), and the binary, run far from the sources, serves them.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import path from "node:path";
import { metricsPortOf } from "../helpers/broker-process.ts";
import { killAtEnd, LineReader } from "../helpers/process.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(120_000);

const ROOT = path.resolve(import.meta.dir, "../..");

test("the compiled executable serves the console page, its script and its style", async () => {
  using dir = tempDir("booblik-console-binary");
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
  const child = Bun.spawn(
    // --kafka-port off: Bun.spawn without `env` does not pass test/preload.ts's BOOBLIK_KAFKA_PORT.
    [
      binary,
      "--data-dir",
      dir.file("data"),
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--metrics-port",
      "0",
      "--kafka-port",
      "off",
    ],
    { cwd: dir.path, stdout: "pipe", stderr: "inherit" },
  );
  await using _child = killAtEnd(child);
  const start = await new LineReader(child.stdout).waitFor(
    (line) => line.includes("listening on"),
    "the start line",
  );
  expect(start).toContain("(console at /console/)");
  const base = `http://127.0.0.1:${metricsPortOf(start)}`;
  const html = await (await fetch(`${base}/console/`)).text();
  expect(html).toContain("<title>booblik console</title>");
  const script = /<script[^>]+src="([^"]+)"/.exec(html)?.[1];
  const style = /<link[^>]+href="([^"]+\.css)"/.exec(html)?.[1];
  expect(script).toBeDefined();
  expect(style).toBeDefined();
  const js = await fetch(new URL(script!, `${base}/console/`));
  expect(js.status).toBe(200);
  // The bundle is JavaScript (types stripped) and carries the pages.
  const code = await js.text();
  expect(code).toContain("records-older");
  expect(code).not.toContain("import type");
  const css = await fetch(new URL(style!, `${base}/console/`));
  expect(css.status).toBe(200);
  expect(await css.text()).toContain("--accent");
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);
});
