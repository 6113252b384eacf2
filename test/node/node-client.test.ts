/**
 * The client library as another project gets it, on Node.js and on Bun (issue 15), by every route
 * the README's "Depending on it from another project" names:
 *
 * - the package packed (`bun pm pack`, which runs "prepare": dist/client is built) and installed from
 *   that tarball with Bun (`bun add <tgz>`: lz4js and snappyjs come from Bun's cache) and used
 *   - under Node: `import … from "booblik/client"` resolves to the built JavaScript and its
 *     declarations type-check in a `nodenext` project; CRC32C is the portable implementation and
 *     gives the same CRCs as this process's (ISA-L where libisal2 is installed); a script produces
 *     gzip batches, consumes them with CRC checks, commits through a group, sees a flipped byte
 *     refused and typed errors (test/node/node-checks.mjs); zstd works or fails with an error naming
 *     it; every docs/client.md example that does not embed the Bun-only broker runs, against a real
 *     broker child process (TypeScript stripped by Bun's transpiler);
 *   - under Bun: the same import resolves to the sources (the "bun" export condition), and the
 *     `booblik-cli` bin runs;
 * - with npm under Node: `npm pack` and `npm install <tgz>`; `npm install git+file://<repository>`
 *   (npm clones the last commit, installs its devDependencies there and runs "prepare", which builds
 *   dist/client with Node alone: scripts/build-client.mjs); `npm install <folder of a clone>`;
 * - with Bun: `bun add git+file://<repository>` and `bun add <folder of a clone>` (which failed on the
 *   `booblik-cli@workspace:*` devDependency before the workspace was dropped: Bun resolves a folder
 *   dependency's devDependencies).
 *
 * npm needs its registry (or its cache) for lz4js and snappyjs, and for the devDependencies of the
 * git route.
 *
 * Side effect: packing writes dist/client in the repository (git-ignored, the build's output).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { crc32c, crc32cPortable } from "../../ffi/crc32c.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { type TempDir, tempDir } from "../helpers/temp-dir.ts";
import { makeCertificates } from "../helpers/tls-certs.ts";

setDefaultTimeout(180_000);

const ROOT = path.resolve(import.meta.dir, "../..");
const NODE = Bun.which("node");
/** One Node run's limit, well inside the test's, so a hang is reported by name. */
const NODE_RUN_TIMEOUT_MS = 60_000;

/** npm installing a git dependency clones it and installs its devDependencies first: slower. */
const NPM_GIT_TIMEOUT_MS = 150_000;

function run(argv: string[], cwd: string, env: Record<string, string> = {}, timeoutMs = NODE_RUN_TIMEOUT_MS) {
  const result = Bun.spawnSync(argv, {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ...env },
    timeout: timeoutMs,
  });
  const stdout = result.stdout.toString();
  const stderr = result.stderr.toString();
  if (result.exitCode !== 0) {
    throw new Error(`${argv.join(" ")} exited ${result.exitCode}:\n${stdout}\n${stderr}`);
  }
  return { stdout, stderr };
}

let project: TempDir;

/** A temporary directory with an application's package.json and nothing else. */
function emptyProject(prefix: string): TempDir {
  const app = tempDir(prefix);
  fs.writeFileSync(
    app.file("package.json"),
    JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }),
  );
  return app;
}

/** Node imports booblik/client from the project at `cwd`: the built JavaScript, portable CRC32C. */
function expectNodeClient(cwd: string): void {
  const { stdout } = run(
    [
      NODE!,
      "--input-type=module",
      "-e",
      `const m = await import("booblik/client");
       console.log(JSON.stringify({ crc: m.crc32cImplementation, client: typeof m.BooblikClient,
         resolved: import.meta.resolve("booblik/client") }));`,
    ],
    cwd,
  );
  const answer = JSON.parse(stdout) as { crc: string; client: string; resolved: string };
  expect(answer).toMatchObject({ crc: "portable", client: "function" });
  expect(answer.resolved).toEndWith("/dist/client/src/client/index.js");
}

beforeAll(() => {
  if (NODE === null) throw new Error("node is not on the PATH: the client's Node.js tests need Node.js ≥ 20");
  project = tempDir("booblik-node");
  const packed = run(["bun", "pm", "pack", "--destination", project.path], ROOT);
  const tarball = fs.readdirSync(project.path).find((name) => name.endsWith(".tgz"));
  if (tarball === undefined) throw new Error(`bun pm pack wrote no tarball:\n${packed.stdout}`);
  fs.writeFileSync(
    project.file("package.json"),
    JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }),
  );
  run(["bun", "add", project.file(tarball)], project.path);
});

/**
 * The three npm installs run side by side (each mostly waits on npm: the git route clones and
 * installs booblik's devDependencies, about a minute), started once the tarball above is packed.
 */
let npmRoutes: { tarball: Promise<TempDir>; git: Promise<TempDir>; folder: Promise<TempDir> };
const npmProjects: TempDir[] = [];

async function npmInstall(
  prefix: string,
  spec: (app: TempDir) => string,
  timeoutMs: number,
): Promise<TempDir> {
  const app = emptyProject(prefix);
  npmProjects.push(app);
  const what = spec(app);
  const child = Bun.spawn(["npm", "install", "--no-audit", "--no-fund", what], {
    cwd: app.path,
    stdout: "pipe",
    stderr: "pipe",
    timeout: timeoutMs,
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (exitCode !== 0) throw new Error(`npm install ${what} exited ${exitCode}:\n${stdout}\n${stderr}`);
  return app;
}

beforeAll(() => {
  const routes = {
    tarball: npmInstall(
      "booblik-npm-tarball",
      (app) => {
        const packed = run(["npm", "pack", "--pack-destination", app.path], ROOT);
        const tarball = fs.readdirSync(app.path).find((name) => name.endsWith(".tgz"));
        if (tarball === undefined) throw new Error(`npm pack wrote no tarball:\n${packed.stdout}`);
        return app.file(tarball);
      },
      NODE_RUN_TIMEOUT_MS,
    ),
    git: npmInstall("booblik-npm-git", () => `git+file://${ROOT}`, NPM_GIT_TIMEOUT_MS),
    folder: npmInstall("booblik-npm-folder", () => ROOT, NODE_RUN_TIMEOUT_MS),
  };
  // Each test awaits its own route; until then a rejection is not "unhandled".
  for (const route of Object.values(routes)) route.catch(() => {});
  npmRoutes = routes;
});

afterAll(async () => {
  if (npmRoutes !== undefined) await Promise.allSettled(Object.values(npmRoutes));
  for (const app of npmProjects) app[Symbol.dispose]();
  project?.[Symbol.dispose]();
});

describe("the packed package installed into another project", () => {
  test("runs on Node.js ≥ 20", () => {
    const version = run([NODE!, "--version"], project.path).stdout.trim();
    expect(Number(/^v(\d+)\./.exec(version)?.[1])).toBeGreaterThanOrEqual(20);
  });

  test("under Node, booblik/client is the built JavaScript, with the portable CRC32C", () => {
    const { stdout } = run(
      [
        NODE!,
        "--input-type=module",
        "-e",
        `const m = await import("booblik/client");
         console.log(JSON.stringify({ crc: m.crc32cImplementation, client: typeof m.BooblikClient,
           resolved: import.meta.resolve("booblik/client") }));`,
      ],
      project.path,
    );
    const answer = JSON.parse(stdout) as { crc: string; client: string; resolved: string };
    expect(answer.crc).toBe("portable");
    expect(answer.client).toBe("function");
    expect(answer.resolved).toEndWith("/node_modules/booblik/dist/client/src/client/index.js");
  });

  test("under Node, the Bun-only main entry says so and names booblik/client, for a named import too", async () => {
    // Every name the main entry exports under Bun, imported by name (the README's form): before
    // src/not-on-node.js declared them, Node refused the import with "does not provide an export
    // named …" and never showed the message.
    const names = Object.keys(await import("../../src/index.ts")).sort();
    for (const source of [`await import("booblik");`, `import { ${names.join(", ")} } from "booblik";`]) {
      const result = Bun.spawnSync([NODE!, "--input-type=module", "-e", source], {
        cwd: project.path,
        stderr: "pipe",
      });
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr.toString()).toContain(
        `"booblik" (the broker and the embedded Broker) runs on Bun only; on Node.js`,
      );
      expect(result.stderr.toString()).toContain(`import the client from "booblik/client"`);
    }
  });

  test("forcing ISA-L under Node fails at load with the reason", () => {
    const result = Bun.spawnSync([NODE!, "--input-type=module", "-e", `await import("booblik/client");`], {
      cwd: project.path,
      env: { ...process.env, BOOBLIK_CRC32C: "isa-l-01" },
      stderr: "pipe",
    });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr.toString()).toContain("BOOBLIK_CRC32C=isa-l-01 cannot run here");
    expect(result.stderr.toString()).toContain("ISA-L needs Bun's bun:ffi, absent in this runtime");
  });

  test("its declarations type-check in a nodenext TypeScript project", () => {
    fs.writeFileSync(
      project.file("app.ts"),
      `import { BooblikClient, crc32c, type ProducerRecord } from "booblik/client";
const record: ProducerRecord = { key: "k", value: "v" };
const crc: number = crc32c(new Uint8Array(3), 0, 3);
export const uses = [BooblikClient, record, crc] as const;
`,
    );
    fs.writeFileSync(
      project.file("tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          noEmit: true,
          types: [],
        },
        files: ["app.ts"],
      }),
    );
    run(
      [process.execPath, path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", project.path],
      project.path,
    );
  });

  test("under Bun, booblik/client resolves to the sources, and the booblik-cli bin runs", () => {
    const { stdout } = run(
      [process.execPath, "-e", `console.log(Bun.resolveSync("booblik/client", process.cwd()))`],
      project.path,
    );
    expect(stdout.trim()).toEndWith("/node_modules/booblik/src/client/index.ts");
    const version = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
    expect(run([project.file("node_modules/.bin/booblik-cli"), "--version"], project.path).stdout).toBe(
      `booblik-cli ${version}\n`,
    );
  });

  test("from git (bun add git+file://…, the last commit): Bun gets the client sources and the CLI", () => {
    using app = tempDir("booblik-git-dependent");
    fs.writeFileSync(
      app.file("package.json"),
      JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }),
    );
    run(["bun", "add", `git+file://${ROOT}`], app.path);
    const { stdout } = run(
      [
        process.execPath,
        "-e",
        `const m = await import("booblik/client"); console.log(typeof m.BooblikClient, Bun.resolveSync("booblik/client", process.cwd()))`,
      ],
      app.path,
    );
    expect(stdout.trim()).toMatch(/^function \/.*\/node_modules\/booblik\/src\/client\/index\.ts$/);
    expect(run([app.file("node_modules/.bin/booblik-cli"), "--version"], app.path).stdout).toStartWith(
      "booblik-cli ",
    );
  });

  test("under Node, TLS through node:tls: the CA and a client certificate; refused without one and with another CA", async () => {
    using dir = tempDir();
    makeCertificates(dir.path);
    await using broker = await startBroker(dir.file("data"), [
      "--tls-cert",
      dir.file("server.pem"),
      "--tls-key",
      dir.file("server.key"),
      "--tls-ca",
      dir.file("ca.pem"),
      "--kafka-port",
      "off",
    ]);
    fs.copyFileSync(path.join(import.meta.dir, "node-tls.mjs"), project.file("node-tls.mjs"));
    const { stdout } = run([NODE!, "node-tls.mjs", String(broker.port), dir.path], project.path);
    const out = JSON.parse(stdout);
    expect(out.bun).toBeNull();
    expect(out.received).toBe(500);
    expect(out.last).toBe("secret 499");
    // node:tls finishes its side of a TLS 1.3 handshake first; the broker's alert ends the first request.
    expect(out.withoutCertificate).toMatch(/CERTIFICATE_REQUIRED|certificate required/i);
    expect(out.otherCa).toMatch(/ConnectionError: .*(unable to verify|self[- ]signed|UNABLE_TO_VERIFY)/i);
    // The broker names the certificate's subject as the principal of the Node client.
    await broker.lines.waitFor(
      (line) => line === 'booblik: audit: user "CN=alice" from 127.0.0.1: logged in (TLS client certificate)',
      "the login line of the Node client",
    );
  });

  test("with npm under Node: npm pack, then npm install <tgz>", async () => {
    const app = await npmRoutes.tarball;
    expectNodeClient(app.path);
  });

  test("with npm under Node: npm install git+file://… builds the client in npm's clone (prepare)", async () => {
    const app = await npmRoutes.git;
    expect(fs.existsSync(app.file("node_modules/booblik/dist/client/src/client/index.js"))).toBe(true);
    expectNodeClient(app.path);
  });

  test("with npm under Node: npm install <folder of a clone> links it", async () => {
    const app = await npmRoutes.folder;
    expect(fs.realpathSync(app.file("node_modules/booblik"))).toBe(fs.realpathSync(ROOT));
    expectNodeClient(app.path);
  });

  test("with Bun: bun add <folder of a clone> (it failed on the booblik-cli workspace link)", () => {
    using app = emptyProject("booblik-bun-folder");
    run(["bun", "add", ROOT], app.path);
    const { stdout } = run(
      [
        process.execPath,
        "-e",
        `const m = await import("booblik/client"); console.log(typeof m.BooblikClient, Bun.resolveSync("booblik/client", process.cwd()))`,
      ],
      app.path,
    );
    expect(stdout.trim()).toMatch(/^function \/.*\/node_modules\/booblik\/src\/client\/index\.ts$/);
    expect(run([app.file("node_modules/.bin/booblik-cli"), "--version"], app.path).stdout).toStartWith(
      "booblik-cli ",
    );
    // The clone's dist/client (built by its `bun install`, or by packing above) came along: Node works too.
    expectNodeClient(app.path);
  });

  test("under Node against a broker: produce, consume with CRC checks, groups, errors, compression", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"));
    // A zstd batch written from Bun, for the Node consumer to read (or refuse by name).
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    await client.createTopic("from-bun-zstd");
    const zstd = new Producer(client, { compression: "zstd" });
    await zstd.send("from-bun-zstd", ["z1", "z2"]);
    await zstd.close();
    client.close();

    fs.copyFileSync(path.join(import.meta.dir, "node-checks.mjs"), project.file("node-checks.mjs"));
    const { stdout } = run([NODE!, "node-checks.mjs", String(broker.port), "from-bun-zstd"], project.path);
    const out = JSON.parse(stdout);

    expect(out.bun).toBeNull();
    expect(out.crc32cImplementation).toBe("portable");
    const expected = [0, 1, 15, 16, 17, 255, 4096, 65_537].map((size) => {
      const bytes = new Uint8Array(size);
      for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
      expect(crc32c(bytes, 0, size)).toBe(crc32cPortable(bytes, 0, size));
      return crc32c(bytes, 0, size);
    });
    expect(out.crcs).toEqual(expected);

    expect(out.consumed).toBe(2000);
    expect(out.consumedSet).toBe(2000);
    expect(out.committed).toBe(10);
    // Partition 1 was never committed: −1.
    expect(out.fetchedOffsets).toEqual([
      [0, 10],
      [1, -1],
    ]);
    expect(out.damaged).toStartWith("CORRUPT_RECORD: ");
    expect(out.unknownTopic).toEqual(["UNKNOWN_TOPIC_OR_PARTITION", false]);
    expect(out.outOfRange).toEqual(["OFFSET_OUT_OF_RANGE", true]);
    expect(out.refused[0]).toBe("CONNECTION_ERROR");
    expect(out.refused[1]).toContain("connection refused");

    const nodeMajor = Number(out.node.split(".")[0]);
    const nodeMinor = Number(out.node.split(".")[1]);
    const nodeHasZstd =
      nodeMajor > 23 || (nodeMajor === 23 && nodeMinor >= 8) || (nodeMajor === 22 && nodeMinor >= 15);
    expect(out.zstdAvailable).toBe(nodeHasZstd);
    if (nodeHasZstd) {
      expect(out.zstdProduce).toBe("ok");
      expect(out.zstdConsume).toEqual(["z1", "z2"]);
    } else {
      for (const message of [out.zstdProduce, out.zstdConsume]) {
        expect(message).toStartWith("INVALID_ARGUMENT: ");
        expect(message).toContain("zstd (4) is not available in this runtime");
        expect(message).toContain(`this is Node.js ${out.node}`);
      }
    }
  });

  test("every docs/client.md example that needs no embedded broker runs under Node", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.file("data"));
    const text = fs.readFileSync(path.join(ROOT, "docs/client.md"), "utf8");
    const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
    // The embedded Broker is Bun-only (storage through bun:ffi): not part of booblik/client.
    const clientBlocks = blocks.filter((block) => !/\bBroker\b[,\s}]/.test(block.split("\n")[0]!));
    expect(clientBlocks.length).toBeGreaterThanOrEqual(5);
    const transpiler = new Bun.Transpiler({ loader: "ts" });
    for (const [index, block] of clientBlocks.entries()) {
      const script = project.file(`example-${index}.mjs`);
      fs.writeFileSync(
        script,
        transpiler.transformSync(block.replaceAll(`from "booblik"`, `from "booblik/client"`)),
      );
      run([NODE!, script], project.path, { BOOBLIK_PORT: String(broker.port), TMPDIR: dir.path });
    }
  });
});
