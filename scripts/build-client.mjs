/**
 * Builds the client library for Node.js ≥ 20 (and any bundler) into dist/client: one ES module per
 * source file of the client's import graph (src/client, src/record, src/protocol, src/domain,
 * ffi/crc32c…), with declarations beside them, both emitted by the TypeScript compiler
 * (tsconfig.client.json; relative `.ts` specifiers become `.js`). lz4js and snappyjs stay imports:
 * they are the package's dependencies.
 *
 * Plain JavaScript on purpose: npm runs package.json "prepare" (scripts/prepare.mjs, which calls
 * this) when an application depends on booblik through a git URL, on a machine that may have Node.js
 * and no Bun (npm installs booblik's devDependencies, TypeScript among them, into its temporary
 * clone first). dist/ is not committed.
 *
 * Usage: node scripts/build-client.mjs [outdir]   (or bun; default dist/client)
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Builds into `outdir`; throws with the reason when it cannot. */
export function buildClient(outdir = path.join(root, "dist/client")) {
  let tsc;
  try {
    // typescript's "exports" do not list bin/tsc: resolve its package.json, then the bin beside it.
    const manifest = createRequire(path.join(root, "package.json")).resolve("typescript/package.json");
    tsc = path.join(path.dirname(manifest), "bin/tsc");
  } catch {
    throw new Error(
      "building booblik/client for Node.js needs TypeScript, a devDependency of booblik: run `bun install` " +
        "(or `npm install`) without --production in the clone, or install with --ignore-scripts where the " +
        "Node.js build is not wanted (the Bun-only broker and the Dockerfile need none)",
    );
  }
  fs.rmSync(outdir, { recursive: true, force: true });
  // process.execPath: node under npm, bun under `bun run`; both run tsc's JavaScript entry.
  const built = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.client.json"), "--outDir", outdir], {
    cwd: root,
    stdio: "inherit",
  });
  if (built.status !== 0) throw new Error(`tsc -p tsconfig.client.json exited ${built.status ?? built.signal}`);
  rewriteDeclarations(outdir);
}

/**
 * The declarations keep the sources' `.ts` specifiers (rewriteRelativeImportExtensions rewrites only
 * the JavaScript); `.js` is what every TypeScript module resolution reads.
 */
function rewriteDeclarations(directory) {
  for (const entry of fs.readdirSync(directory, { withFileTypes: true })) {
    const file = path.join(directory, entry.name);
    if (entry.isDirectory()) rewriteDeclarations(file);
    else if (entry.name.endsWith(".d.ts")) {
      const text = fs.readFileSync(file, "utf8");
      fs.writeFileSync(file, text.replace(/((?:from\s+|import\()["']\.{1,2}\/[^"']*?)\.ts(["'])/g, "$1.js$2"));
    }
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outdir = path.resolve(process.argv[2] ?? path.join(root, "dist/client"));
  try {
    buildClient(outdir);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
  console.log(`client library built into ${path.relative(process.cwd(), outdir) || "."}`);
}
