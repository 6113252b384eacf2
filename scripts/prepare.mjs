/**
 * package.json "prepare": what npm runs in a git dependency's temporary clone before packing it, what
 * `npm pack` and `bun pm pack` run before packing, and what `bun install` / `npm install` run in a
 * clone. Plain JavaScript so that Node.js alone runs it (an application on Node that depends on
 * booblik through a git URL has no Bun).
 *
 * 1. Builds booblik/client for Node.js into dist/client (scripts/build-client.mjs).
 * 2. In a clone with node_modules, links node_modules/.bin/booblik-cli to src/cli/main.ts, so that
 *    `bunx booblik-cli` runs this clone's CLI without asking the npm registry (whose `booblik-cli`
 *    is someone else's package). This link used to come from a workspace package (src/cli) listed
 *    as a devDependency `workspace:*`, which broke `bun add <path of a clone>`: Bun 1.4.4 resolves a
 *    folder dependency's devDependencies too, and `workspace:*` resolves only inside this clone.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildClient } from "./build-client.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

try {
  buildClient();
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

const bin = path.join(root, "node_modules/.bin");
if (fs.existsSync(path.join(root, "node_modules"))) {
  fs.mkdirSync(bin, { recursive: true });
  const link = path.join(bin, "booblik-cli");
  fs.rmSync(link, { force: true });
  fs.symlinkSync(path.relative(bin, path.join(root, "src/cli/main.ts")), link);
}
