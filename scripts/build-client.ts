/**
 * Builds the client library for Node.js ≥ 20 (and any bundler): `bun run build:client` writes
 * dist/client/index.js (one ES module, `--target=node`; lz4js and snappyjs stay imports, they are the
 * package's dependencies) and dist/client/types (declarations from `tsc --emitDeclarationOnly`, with
 * their relative `.ts` specifiers rewritten to `.js`, which every TypeScript module resolution reads).
 * dist/ is not committed: `npm pack` / `bun pm pack` run this first (package.json "prepack").
 *
 * Usage: bun scripts/build-client.ts [outdir]   (default dist/client; the Node test builds into a temp dir)
 */
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dir, "..");
const outdir = path.resolve(process.argv[2] ?? path.join(root, "dist/client"));
fs.rmSync(outdir, { recursive: true, force: true });

const built = await Bun.build({
  entrypoints: [path.join(root, "src/client/index.ts")],
  outdir,
  target: "node",
  format: "esm",
  packages: "external",
});
if (!built.success) {
  for (const log of built.logs) console.error(log);
  process.exit(1);
}

const tsc = Bun.spawnSync(
  [
    process.execPath,
    path.join(root, "node_modules/typescript/bin/tsc"),
    "-p",
    path.join(root, "tsconfig.client.json"),
    "--outDir",
    path.join(outdir, "types"),
  ],
  { cwd: root, stdout: "inherit", stderr: "inherit" },
);
if (tsc.exitCode !== 0) process.exit(tsc.exitCode ?? 1);

function rewrite(directory: string): void {
  for (const entry of fs.readdirSync(directory, { withFileTypes: true })) {
    const file = path.join(directory, entry.name);
    if (entry.isDirectory()) rewrite(file);
    else if (entry.name.endsWith(".d.ts")) {
      const text = fs.readFileSync(file, "utf8");
      fs.writeFileSync(file, text.replace(/((?:from\s+|import\()["']\.{1,2}\/[^"']*?)\.ts(["'])/g, "$1.js$2"));
    }
  }
}
rewrite(path.join(outdir, "types"));
console.log(`client library built into ${path.relative(process.cwd(), outdir) || "."}`);
