/**
 * The fuzzer's template frames (fixtures/*.json) with their API key, version and source, the
 * (key, version) pairs booblik advertises (src/kafka/handler.ts's ADVERTISED_VERSIONS, what ApiVersions
 * answers, made of src/kafka/apis.ts's CODEC_VERSIONS), and a table of which pairs have templates from where. `bun test/kafka/fuzz-templates.ts`
 * prints the table.
 */
import fs from "node:fs";
import path from "node:path";
import { KAFKA_API_NAMES } from "../../src/kafka/apis.ts";
import { ADVERTISED_VERSIONS } from "../../src/kafka/handler.ts";

export interface VersionTemplate {
  api: string;
  apiKey: number;
  apiVersion: number;
  /** Which client sent it, or how it was built. */
  source: string;
  /** The frame without its int32 size prefix, as the handler receives it. */
  hex: string;
}

const FIXTURES = path.join(import.meta.dir, "fixtures");

/**
 * fuzz-templates.json (kafkajs and hand-built: capture-fuzz-templates.ts), fuzz-templates-versions.json
 * (every advertised version: capture-client-templates.ts) and captured-requests.json (kcat's, whose
 * entries carry no key or version: read from the frame).
 */
export const TEMPLATE_FILES = [
  "fuzz-templates.json",
  "fuzz-templates-versions.json",
  "captured-requests.json",
];

export function readTemplates(files = TEMPLATE_FILES): VersionTemplate[] {
  const templates: VersionTemplate[] = [];
  for (const file of files) {
    const list = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), "utf8")) as {
      hex: string;
      source?: string;
      client?: string;
      command?: string;
    }[];
    for (const entry of list) {
      const frame = Buffer.from(entry.hex, "hex");
      const apiKey = frame.readInt16BE(0);
      templates.push({
        api: KAFKA_API_NAMES[apiKey] ?? `unknown ${apiKey}`,
        apiKey,
        apiVersion: frame.readInt16BE(2),
        source: entry.source ?? `${entry.client} \`${entry.command}\``,
        hex: entry.hex,
      });
    }
  }
  return templates;
}

/** Every (key, version) booblik advertises in ApiVersions. */
export function advertisedPairs(): { apiKey: number; apiVersion: number }[] {
  const pairs: { apiKey: number; apiVersion: number }[] = [];
  for (const [apiKey, range] of ADVERTISED_VERSIONS)
    for (let version = range.min; version <= range.max; version++)
      pairs.push({ apiKey, apiVersion: version });
  return pairs.sort((a, b) => a.apiKey - b.apiKey || a.apiVersion - b.apiVersion);
}

/** The advertised pairs without a template. */
export function missingPairs(templates = readTemplates()): { apiKey: number; apiVersion: number }[] {
  return advertisedPairs().filter(
    (pair) => !templates.some((t) => t.apiKey === pair.apiKey && t.apiVersion === pair.apiVersion),
  );
}

/** One line per advertised (key, version): its templates' count and sources (shortened). */
export function coverageTable(templates = readTemplates()): string {
  const short = (source: string) =>
    source.startsWith("re-encoded")
      ? `re-encoded from ${/from: (\S+ \S+)/.exec(source)?.[1] ?? "?"}`
      : source.startsWith("hand-built")
        ? "hand-built"
        : source.split(" (")[0]!.replace(/ `.*/, "");
  const lines = ["api (key) version: templates (sources)"];
  for (const pair of advertisedPairs()) {
    const of = templates.filter((t) => t.apiKey === pair.apiKey && t.apiVersion === pair.apiVersion);
    const sources = [...new Set(of.map((t) => short(t.source)))].join("; ");
    lines.push(
      `${KAFKA_API_NAMES[pair.apiKey]} (${pair.apiKey}) v${pair.apiVersion}: ${of.length}${of.length === 0 ? "  MISSING" : ` (${sources})`}`,
    );
  }
  const advertised = advertisedPairs().length;
  lines.push(
    `${advertised - missingPairs(templates).length} of ${advertised} advertised (key, version) pairs have a template`,
  );
  return lines.join("\n");
}

if (import.meta.main) console.log(coverageTable());
