/**
 * Style and layering rules checked mechanically (Kafka's import-control, TigerBeetle's tidy.zig).
 *
 * The layer table below is the architecture: think hard before adding an edge. An arrow means "may
 * import". The record codec sits below both storage and protocol because the same bytes live on
 * disk and on the wire (DESIGN invariant 4); it may use ffi/ only for CRC32C.
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "../..");

const LAYERS: Record<string, string[]> = {
  "src/domain": ["src/domain"],
  // SCRAM's math and message exchange, sans I/O: the broker verifies, the client proves.
  "src/auth": ["src/auth", "src/domain"],
  ffi: ["ffi", "src/domain"],
  "src/record": ["src/record", "src/domain", "ffi/crc32c.ts"],
  "src/storage": ["src/storage", "src/record", "src/domain", "ffi"],
  "src/broker": ["src/broker", "src/storage", "src/record", "src/auth", "src/domain", "ffi"],
  "src/protocol": ["src/protocol", "src/record", "src/domain", "ffi/crc32c.ts"],
  // The server sees partitions, not segments: fetches get a FileLease from the broker layer. It keeps
  // ffi for the socket side of I/O (sendfile, pread of one byte for the drain probe) and CRC32C's name.
  "src/server": [
    "src/server",
    "src/console",
    "src/broker",
    "src/protocol",
    "src/record",
    "src/auth",
    "src/domain",
    "ffi",
  ],
  // The web console: read-only pages over the broker, served on the metrics listener (which imports
  // it). It sees the TCP server only through a narrow interface of its own, so it never imports
  // src/server; its page (src/console/app) imports only format.ts and api-types.ts. Its logins use
  // the listeners' password check and login delays (src/auth).
  "src/console": ["src/console", "src/broker", "src/record", "src/auth", "src/domain", "ffi"],
  // The Kafka wire listener: its own codec (sans I/O) and sockets, over the same broker layer as the
  // native server; it never imports the native protocol or server.
  "src/kafka": ["src/kafka", "src/broker", "src/record", "src/auth", "src/domain", "ffi"],
  "src/client": ["src/client", "src/protocol", "src/record", "src/auth", "src/domain", "ffi/crc32c.ts"],
  // What an entry point imports first, to report a wrong setting read while the modules load.
  "src/start-guard.ts": ["src/domain"],
  "src/broker-guard.ts": ["src/start-guard.ts"],
};
/** Composition roots: they may import anything, and nothing imports them. */
const ROOTS = ["src/cli", "src/main.ts", "src/index.ts"];

function sourceFiles(directory: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, directory), { withFileTypes: true })) {
    const relative = path.join(directory, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(relative));
    else if (entry.name.endsWith(".ts")) out.push(relative);
  }
  return out;
}

function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), "utf8");
  const specifiers: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)[^"'`;]*?from\s*["']([^"']+)["']/g)) {
    specifiers.push(match[1]!);
  }
  for (const match of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) specifiers.push(match[1]!);
  return specifiers;
}

function layerOf(file: string): string | undefined {
  return Object.keys(LAYERS)
    .filter((layer) => file === layer || file.startsWith(`${layer}/`))
    .sort((a, b) => b.length - a.length)[0];
}

const files = [...sourceFiles("src"), ...sourceFiles("ffi")];

test("imports follow the layer table; nothing imports a composition root", () => {
  const violations: string[] = [];
  for (const file of files) {
    const layer = layerOf(file);
    const isRoot = ROOTS.some((root) => file === root || file.startsWith(`${root}/`));
    for (const specifier of importsOf(file)) {
      if (!specifier.startsWith(".")) continue;
      const target = path.relative(ROOT, path.resolve(ROOT, path.dirname(file), specifier));
      if (ROOTS.some((root) => target === root || target.startsWith(`${root}/`)) && !isRoot) {
        violations.push(`${file} imports the composition root ${target}`);
        continue;
      }
      if (isRoot || layer === undefined) continue;
      const allowed = LAYERS[layer]!;
      if (!allowed.some((prefix) => target === prefix || target.startsWith(`${prefix}/`))) {
        violations.push(`${file} (${layer}) may not import ${target}`);
      }
    }
  }
  expect(violations).toEqual([]);
});

test("only ffi/ imports bun:ffi; the protocol codec does no I/O", () => {
  const violations: string[] = [];
  for (const file of files) {
    for (const specifier of importsOf(file)) {
      if (specifier === "bun:ffi" && !file.startsWith("ffi/")) violations.push(`${file} imports bun:ffi`);
      if (
        file.startsWith("src/protocol/") &&
        (specifier.startsWith("node:") || specifier.startsWith("bun"))
      ) {
        violations.push(`${file} imports ${specifier}`);
      }
    }
  }
  expect(violations).toEqual([]);
});

test("no `any`, no console.log in library code, no FIXME", () => {
  const violations: string[] = [];
  for (const file of files) {
    const text = fs.readFileSync(path.join(ROOT, file), "utf8");
    const lines = text.split("\n");
    lines.forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, "");
      if (/(:\s*any\b|\bas any\b|<any>)/.test(code)) violations.push(`${file}:${i + 1} uses any`);
      if (/FIXME/.test(line)) violations.push(`${file}:${i + 1} has a FIXME`);
      const mayPrint = ROOTS.some((root) => file === root || file.startsWith(`${root}/`));
      if (!mayPrint && /console\.log\(/.test(code))
        violations.push(`${file}:${i + 1} prints with console.log`);
    });
  }
  expect(violations).toEqual([]);
});

test("every storage and protocol file opens with a comment saying what it owns", () => {
  const missing = files
    .filter((file) => /^(src\/(storage|protocol|record)|ffi)\//.test(file))
    .filter((file) => !fs.readFileSync(path.join(ROOT, file), "utf8").trimStart().startsWith("/**"));
  expect(missing).toEqual([]);
});

test("storage reaches files through the Disk seam (src/storage/disk.ts), so tests can inject faults", () => {
  // inspect.ts (the offline verifier) and migrate-format1.ts (the offline converter behind
  // `booblik-cli migrate`) read and write files directly: neither runs inside a broker. disk.ts is the
  // seam itself. `ioError` only builds an error value and calls nothing.
  const exempt = new Set(["src/storage/disk.ts", "src/storage/inspect.ts", "src/storage/migrate-format1.ts"]);
  const violations: string[] = [];
  for (const file of files.filter((name) => name.startsWith("src/storage/") && !exempt.has(name))) {
    const text = fs.readFileSync(path.join(ROOT, file), "utf8");
    for (const match of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*["'][./]*ffi\/file\.ts["']/g)) {
      const names = match[1]!
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name !== "");
      for (const name of names)
        if (name !== "ioError") violations.push(`${file} imports ${name} from ffi/file.ts`);
    }
  }
  expect(violations).toEqual([]);
});
