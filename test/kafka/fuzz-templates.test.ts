/**
 * The fuzzer's templates (fuzz-templates.ts) cover every (API key, version) booblik advertises
 * (handler.ts's ADVERTISED_VERSIONS, the ranges ApiVersions answers, from apis.ts's CODEC_VERSIONS):
 * a version added there without a template fails here until `bun test/kafka/capture-client-templates.ts`
 * is run again.
 */
import { expect, test } from "bun:test";
import { isKafkaApiKey, KAFKA_API_NAMES } from "../../src/kafka/apis.ts";
import { ADVERTISED_VERSIONS } from "../../src/kafka/handler.ts";
import { advertisedPairs, coverageTable, missingPairs, readTemplates } from "./fuzz-templates.ts";

test("every advertised (API key, version) has a fuzz template", () => {
  const templates = readTemplates();
  const missing = missingPairs(templates).map((p) => `${KAFKA_API_NAMES[p.apiKey]} v${p.apiVersion}`);
  if (missing.length > 0) console.log(coverageTable(templates));
  expect(missing).toEqual([]);
  // The advertised set is ADVERTISED_VERSIONS itself, not a copy: every API of apis.ts, all versions.
  const total = [...ADVERTISED_VERSIONS.values()].reduce((sum, r) => sum + r.max - r.min + 1, 0);
  expect(advertisedPairs().length).toBe(total);
  expect(ADVERTISED_VERSIONS.size).toBe(Object.keys(KAFKA_API_NAMES).length);
});

test("every template names an API and version booblik serves", () => {
  const outside = readTemplates().filter((t) => {
    const range = isKafkaApiKey(t.apiKey) ? ADVERTISED_VERSIONS.get(t.apiKey) : undefined;
    return range === undefined || t.apiVersion < range.min || t.apiVersion > range.max;
  });
  expect(outside.map((t) => `${t.api} v${t.apiVersion} (${t.source})`)).toEqual([]);
});
