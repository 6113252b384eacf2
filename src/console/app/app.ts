/**
 * The console page: hash routing between pages, one live stream (server-sent events) for the page
 * shown, the charts drawn as SVG polylines. Plain DOM and TypeScript, no library: nothing to keep
 * up, nothing fetched at run time (the bundle ships inside the broker).
 */

import type { ConnectionRows, ConsoleSample, TopicRow } from "../api-types.ts";
import {
  bytesFromBase64,
  chartLines,
  FIELD_VIEWS,
  type FieldView,
  formatBytes,
  formatCount,
  formatDurationSeconds,
  formatMilliseconds,
  formatRate,
  formatSettingMs,
  formatTimestamp,
  niceCeiling,
  renderField,
} from "../format.ts";

type Page = "overview" | "topics" | "records" | "connections";
const PAGES: readonly Page[] = ["overview", "topics", "records", "connections"];
/** Samples a chart spans: five minutes at one a second (CONSOLE_HISTORY_SAMPLES). */
const CHART_SLOTS = 300;
const CHART_WIDTH = 300;
const CHART_HEIGHT = 100;

const main = document.getElementById("main") as HTMLElement;
const live = document.getElementById("live") as HTMLElement;
let source: EventSource | undefined;
let samples: ConsoleSample[] = [];
/** When the broker process started (ms since the epoch), for the uptime the samples refresh. */
let startedAtMs = Date.now();

/** Builds an element: h("td", { class: "num" }, "12"). */
function h(
  tag: string,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) element.append(child);
  return element;
}

function svg(tag: string, attributes: Record<string, string>): SVGElement {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  return element;
}

function setText(id: string, text: string): void {
  const element = document.getElementById(id);
  if (element !== null) element.textContent = text;
}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  const body = (await response.json()) as T & { error?: string };
  if (!response.ok) throw new Error(body.error ?? `${response.status} ${response.statusText}`);
  return body;
}

function openStream(
  view: "overview" | "topics" | "connections",
  handlers: Record<string, (data: unknown) => void>,
): void {
  source?.close();
  source = new EventSource(`/console/api/stream?view=${view}`);
  live.textContent = "connecting…";
  source.onopen = () => {
    live.textContent = "live";
  };
  source.onerror = () => {
    live.textContent = "disconnected: retrying";
  };
  for (const [name, handler] of Object.entries(handlers)) {
    source.addEventListener(name, (event) => handler(JSON.parse((event as MessageEvent<string>).data)));
  }
}

// --- Overview ------------------------------------------------------------------------------------

interface Overview {
  version: string;
  startedAtMs: number;
  uptimeSeconds: number;
  ready: boolean;
  dataDir: string | null;
  crc32c: string;
  defaults: {
    durability: string;
    flushIntervalMs: number;
    writeMode: string;
    segmentBytes: number;
    maxRecordBytes: number;
    retentionBytes: number | null;
    retentionMs: number | null;
  } | null;
  recovery: {
    topics: number;
    partitions: number;
    segments: number;
    cleanShutdown: boolean;
    segmentsScanned: number;
    bytesScanned: number;
    bytesCut: number;
    segmentsDropped: number;
    readOnlyPartitions: number;
    durationMs: number;
  } | null;
  readOnlyPartitions: number;
}

function facts(id: string, rows: [string, string, string][]): HTMLElement {
  const list = h("dl", { class: "facts", id });
  for (const [key, label, value] of rows) {
    list.append(h("dt", {}, label), h("dd", { id: `fact-${key}` }, value));
  }
  return list;
}

interface ChartSpec {
  id: string;
  title: string;
  value: (sample: ConsoleSample) => number | null;
  format: (value: number | null) => string;
  colour: string;
}

const CHARTS: ChartSpec[] = [
  {
    id: "produce",
    title: "Produced records per second",
    value: (s) => s.produceRecordsPerSecond,
    format: (v) => formatRate(v),
    colour: "var(--produce)",
  },
  {
    id: "consume",
    title: "Fetched records per second",
    value: (s) => s.fetchRecordsPerSecond,
    format: (v) => formatRate(v),
    colour: "var(--consume)",
  },
  {
    id: "force",
    title: "Mean force (fdatasync) latency",
    value: (s) => s.forceMeanMs,
    format: formatMilliseconds,
    colour: "var(--force)",
  },
];

function chartFigure(spec: ChartSpec): HTMLElement {
  const svgElement = svg("svg", {
    viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`,
    preserveAspectRatio: "none",
    role: "img",
    id: `chart-${spec.id}`,
    "aria-labelledby": `chart-${spec.id}-title chart-${spec.id}-now`,
  });
  return h(
    "figure",
    { class: "chart" },
    h(
      "figcaption",
      {},
      h("span", { id: `chart-${spec.id}-title` }, spec.title),
      h("span", { class: "now", id: `chart-${spec.id}-now` }, "–"),
    ),
    svgElement as unknown as HTMLElement,
    h(
      "div",
      { class: "axis" },
      h("span", {}, "5 min ago"),
      h("span", { id: `chart-${spec.id}-top` }, ""),
      h("span", {}, "now"),
    ),
  );
}

function drawCharts(): void {
  for (const spec of CHARTS) {
    const target = document.getElementById(`chart-${spec.id}`);
    if (target === null) continue;
    const values = samples.map(spec.value);
    const known = values.filter((v): v is number => v !== null);
    const top = niceCeiling(Math.max(0, ...known));
    target.replaceChildren(
      svg("line", {
        x1: "0",
        y1: String(CHART_HEIGHT),
        x2: String(CHART_WIDTH),
        y2: String(CHART_HEIGHT),
        stroke: "#c9d0d9",
      }),
      ...chartLines(values, CHART_SLOTS, CHART_WIDTH, CHART_HEIGHT, top).map((points) =>
        svg("polyline", {
          points,
          fill: "none",
          stroke: spec.colour,
          "stroke-width": "2",
          "vector-effect": "non-scaling-stroke",
        }),
      ),
    );
    const last = samples.at(-1);
    setText(`chart-${spec.id}-now`, last === undefined ? "–" : spec.format(spec.value(last)));
    setText(`chart-${spec.id}-top`, `top ${spec.format(top)}`);
    target.dataset.samples = String(samples.length);
    target.dataset.max = String(Math.max(0, ...known));
  }
  const last = samples.at(-1);
  if (last !== undefined) {
    setText("fact-produced", formatCount(last.produceRecordsTotal));
    setText("fact-fetched", formatCount(last.fetchRecordsTotal));
    setText("fact-connections", formatCount(last.connections));
    setText("fact-uptime", formatDurationSeconds((last.atMs - startedAtMs) / 1000));
  }
}

async function showOverview(): Promise<void> {
  const overview = await getJson<Overview>("/console/api/overview");
  setText("brand-version", overview.version);
  startedAtMs = overview.startedAtMs;
  const d = overview.defaults;
  const r = overview.recovery;
  main.replaceChildren(
    h("h1", {}, "Overview"),
    facts("facts-broker", [
      ["version", "Version", overview.version],
      ["uptime", "Uptime", formatDurationSeconds(overview.uptimeSeconds)],
      ["ready", "Ready", overview.ready ? "yes" : "not yet"],
      ["data-dir", "Data directory", overview.dataDir ?? "–"],
      ["crc32c", "CRC32C implementation", overview.crc32c],
      ["read-only", "Read-only partitions (disk full)", formatCount(overview.readOnlyPartitions)],
      ["produced", "Records produced since start", "–"],
      ["fetched", "Records fetched since start", "–"],
      ["connections", "Open connections", "–"],
    ]),
    h("h2", {}, "Defaults for new topics"),
    d === null
      ? h("p", {}, "The data directory is still opening.")
      : facts("facts-defaults", [
          ["durability", "Durability", d.durability],
          ["flush-interval", "Force interval (interval policy)", formatSettingMs(d.flushIntervalMs)],
          ["write-mode", "Write path", d.writeMode],
          ["segment-size", "Segment size", formatBytes(d.segmentBytes)],
          ["max-record", "Largest record", formatBytes(d.maxRecordBytes)],
          [
            "retention-size",
            "Retention size",
            d.retentionBytes === null ? "none" : formatBytes(d.retentionBytes),
          ],
          ["retention-time", "Retention time", formatSettingMs(d.retentionMs)],
        ]),
    h("h2", {}, "Recovery at the last start"),
    r === null
      ? h("p", {}, "The data directory is still opening.")
      : facts("facts-recovery", [
          [
            "shutdown",
            "Previous stop",
            r.partitions === 0
              ? "new data directory"
              : r.cleanShutdown
                ? "clean shutdown"
                : "crash: recovered",
          ],
          ["rec-topics", "Topics", formatCount(r.topics)],
          ["rec-partitions", "Partitions", formatCount(r.partitions)],
          ["rec-segments", "Segments", formatCount(r.segments)],
          [
            "rec-scanned",
            "Scanned",
            `${formatCount(r.segmentsScanned)} segments, ${formatBytes(r.bytesScanned)}`,
          ],
          ["rec-cut", "Torn bytes cut", formatCount(r.bytesCut)],
          ["rec-dropped", "Segments dropped after a hole", formatCount(r.segmentsDropped)],
          ["rec-duration", "Took", formatMilliseconds(r.durationMs)],
        ]),
    h("h2", {}, "Live, last five minutes"),
    h("div", { class: "charts" }, ...CHARTS.map(chartFigure)),
  );
  openStream("overview", {
    history: (data) => {
      samples = data as ConsoleSample[];
      drawCharts();
    },
    sample: (data) => {
      samples.push(data as ConsoleSample);
      if (samples.length > CHART_SLOTS) samples.shift();
      drawCharts();
    },
  });
}

// --- Topics --------------------------------------------------------------------------------------

function drawTopics(topics: TopicRow[]): void {
  const target = document.getElementById("topics");
  if (target === null) return;
  if (topics.length === 0) {
    target.replaceChildren(h("p", {}, "No topics yet."));
    return;
  }
  const body = h("tbody");
  const settings = h("tbody");
  for (const topic of topics) {
    const c = topic.config;
    settings.append(
      h(
        "tr",
        { "data-topic": topic.name },
        h("th", { scope: "row" }, topic.name),
        h("td", { class: "num" }, String(c.partitions)),
        h(
          "td",
          {},
          c.durability === "interval" ? `interval (${formatSettingMs(c.flushIntervalMs)})` : c.durability,
        ),
        h("td", {}, c.writeMode),
        h("td", { class: "num" }, formatBytes(c.segmentBytes)),
        h("td", {}, c.retentionBytes === null ? "none" : formatBytes(c.retentionBytes)),
        h("td", {}, formatSettingMs(c.retentionMs)),
        h("td", { class: "num" }, formatBytes(c.maxRecordBytes)),
        h("td", {}, c.timestampType ?? "CreateTime"),
      ),
    );
    for (const p of topic.partitions) {
      body.append(
        h(
          "tr",
          { "data-topic": topic.name, "data-partition": String(p.partition) },
          h("th", { scope: "row" }, `${topic.name} / ${p.partition}`),
          h("td", { class: "num", "data-field": "log-start" }, formatCount(p.logStartOffset)),
          h("td", { class: "num", "data-field": "next-offset" }, formatCount(p.nextOffset)),
          h("td", { class: "num", "data-field": "records" }, formatCount(p.nextOffset - p.logStartOffset)),
          h("td", { class: "num", "data-field": "size" }, formatBytes(p.sizeBytes)),
          h("td", { class: "num", "data-field": "segments" }, formatCount(p.segments)),
          h("td", { class: "num", "data-field": "rate" }, formatRate(p.recordsPerSecond)),
          h(
            "td",
            {},
            h("a", { href: `#records/${encodeURIComponent(topic.name)}/${p.partition}` }, "browse"),
          ),
        ),
      );
    }
  }
  const head = (...names: string[]) =>
    h(
      "thead",
      {},
      h("tr", {}, ...names.map((n, i) => h("th", { scope: "col", class: i === 0 ? "" : "num" }, n))),
    );
  target.replaceChildren(
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { id: "partitions-table" },
        h("caption", {}, "Partitions"),
        head(
          "Topic / partition",
          "Log start",
          "Next offset",
          "Records",
          "On disk",
          "Segments",
          "Rate",
          "Records",
        ),
        body,
      ),
    ),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { id: "settings-table" },
        h("caption", {}, "Settings"),
        head(
          "Topic",
          "Partitions",
          "Durability",
          "Write path",
          "Segment size",
          "Retention size",
          "Retention time",
          "Largest record",
          "Timestamps",
        ),
        settings,
      ),
    ),
  );
}

function showTopics(): void {
  main.replaceChildren(
    h("h1", {}, "Topics"),
    h("p", { class: "note" }, "Rates are offsets appended per second over the last second."),
    h("div", { id: "topics" }, "Loading…"),
  );
  openStream("topics", { topics: (data) => drawTopics(data as TopicRow[]) });
}

// --- Connections ---------------------------------------------------------------------------------

function showConnections(): void {
  main.replaceChildren(
    h("h1", {}, "Connections"),
    facts("facts-connections", [["connection-count", "Open client connections", "–"]]),
    h("div", { id: "connections" }),
  );
  openStream("connections", {
    connections: (data) => {
      const { count, byAddress } = data as ConnectionRows;
      setText("fact-connection-count", formatCount(count));
      const target = document.getElementById("connections");
      if (target === null) return;
      target.replaceChildren(
        byAddress.length === 0
          ? h("p", {}, "No client is connected.")
          : h(
              "div",
              { class: "table-wrap" },
              h(
                "table",
                { id: "connections-table" },
                h("caption", {}, "Per client address"),
                h(
                  "thead",
                  {},
                  h(
                    "tr",
                    {},
                    h("th", { scope: "col" }, "Address"),
                    h("th", { scope: "col", class: "num" }, "Connections"),
                  ),
                ),
                h(
                  "tbody",
                  {},
                  ...byAddress.map((row) =>
                    h(
                      "tr",
                      { "data-address": row.address },
                      h("th", { scope: "row" }, row.address),
                      h("td", { class: "num" }, formatCount(row.connections)),
                    ),
                  ),
                ),
              ),
            ),
      );
    },
  });
}

// --- Records -------------------------------------------------------------------------------------

interface RecordsPage {
  topic: string;
  partition: number;
  logStartOffset: number;
  nextOffset: number;
  /** First offset shown, and the offset after the last shown (the next page's start). */
  fromOffset: number;
  toOffset: number;
  records: {
    offset: number;
    timestamp: number;
    key: string | null;
    value: string | null;
    keyBytes: number;
    valueBytes: number;
    headers: { key: string; value: string | null; valueBytes: number }[];
  }[];
}

let fieldView: FieldView = "text";

function fieldCell(base64: string | null, sizeBytes: number): HTMLElement {
  const bytes = base64 === null ? null : bytesFromBase64(base64);
  const rendered = renderField(bytes, fieldView);
  const cell = h("td", {}, h("pre", {}, rendered.text));
  if (rendered.note !== undefined) cell.append(h("p", { class: "note" }, rendered.note));
  if (bytes !== null && sizeBytes > bytes.length) {
    cell.append(h("p", { class: "note" }, `first ${formatBytes(bytes.length)} of ${formatBytes(sizeBytes)}`));
  }
  return cell;
}

async function showRecords(topicArgument?: string, partitionArgument?: string): Promise<void> {
  const topics = await getJson<{ name: string; partitions: number }[]>("/console/api/topic-names").catch(
    (error: Error) => error,
  );
  if (topics instanceof Error) {
    main.replaceChildren(h("h1", {}, "Records"), h("p", { class: "error", role: "alert" }, topics.message));
    return;
  }
  const topicSelect = h("select", { id: "records-topic", name: "topic" }) as HTMLSelectElement;
  for (const topic of topics) topicSelect.append(h("option", { value: topic.name }, topic.name));
  if (topicArgument !== undefined) topicSelect.value = topicArgument;
  const partitionInput = h("input", {
    id: "records-partition",
    name: "partition",
    type: "number",
    min: "0",
    value: partitionArgument ?? "0",
    inputmode: "numeric",
  }) as HTMLInputElement;
  const offsetInput = h("input", {
    id: "records-offset",
    name: "offset",
    type: "number",
    min: "0",
    placeholder: "oldest",
    inputmode: "numeric",
  }) as HTMLInputElement;
  const timeInput = h("input", {
    id: "records-time",
    name: "time",
    type: "text",
    placeholder: "2026-01-31T12:00:00Z",
  }) as HTMLInputElement;
  const viewFieldset = h("fieldset", {}, h("legend", {}, "Show keys and values as"));
  for (const view of FIELD_VIEWS) {
    const radio = h("input", {
      type: "radio",
      name: "view",
      value: view,
      id: `view-${view}`,
    }) as HTMLInputElement;
    radio.checked = view === fieldView;
    radio.addEventListener("change", () => {
      fieldView = view;
      if (current !== undefined) drawPage(current);
    });
    viewFieldset.append(h("label", { for: `view-${view}` }, radio, view));
  }
  const form = h(
    "form",
    { class: "browse", id: "records-form" },
    h("label", { for: "records-topic" }, "Topic", topicSelect),
    h("label", { for: "records-partition" }, "Partition", partitionInput),
    h("label", { for: "records-offset" }, "From offset", offsetInput),
    h("label", { for: "records-time" }, "Or from time (ISO 8601 or ms)", timeInput),
    h("button", { type: "submit", id: "records-go" }, "Show"),
    viewFieldset,
  );
  const older = h("button", { type: "button", id: "records-older" }, "← Older") as HTMLButtonElement;
  const newer = h("button", { type: "button", id: "records-newer" }, "Newer →") as HTMLButtonElement;
  const status = h("p", { id: "records-status", role: "status", "aria-live": "polite" });
  const table = h("div", { id: "records" });
  main.replaceChildren(
    h("h1", {}, "Records"),
    form,
    h("div", { class: "pager" }, older, newer, status),
    table,
  );
  let current: RecordsPage | undefined;

  const drawPage = (page: RecordsPage) => {
    status.textContent =
      page.records.length === 0
        ? `No records from offset ${formatCount(page.fromOffset)} (partition holds ${formatCount(page.logStartOffset)} to ${formatCount(page.nextOffset - 1)}).`
        : `Offsets ${formatCount(page.records[0]!.offset)} to ${formatCount(page.records.at(-1)!.offset)} of ${formatCount(page.logStartOffset)} to ${formatCount(page.nextOffset - 1)}`;
    older.disabled = page.fromOffset <= page.logStartOffset;
    newer.disabled = page.toOffset >= page.nextOffset;
    const body = h("tbody");
    for (const record of page.records) {
      const headers = h("td", { class: "headers" });
      for (const header of record.headers) {
        const rendered = renderField(header.value === null ? null : bytesFromBase64(header.value), fieldView);
        headers.append(h("div", {}, h("strong", {}, header.key), ": ", h("pre", {}, rendered.text)));
      }
      body.append(
        h(
          "tr",
          { "data-offset": String(record.offset) },
          h("th", { scope: "row", class: "num" }, formatCount(record.offset)),
          h("td", {}, formatTimestamp(record.timestamp)),
          fieldCell(record.key, record.keyBytes),
          fieldCell(record.value, record.valueBytes),
          headers,
        ),
      );
    }
    table.replaceChildren(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "records-table" },
          h("caption", {}, `${page.topic} / ${page.partition}`),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Offset", "Timestamp (UTC)", "Key", "Value", "Headers"].map((n) =>
                h("th", { scope: "col" }, n),
              ),
            ),
          ),
          body,
        ),
      ),
    );
  };

  const load = async (query: Record<string, string>) => {
    const parameters = new URLSearchParams({
      topic: topicSelect.value,
      partition: partitionInput.value || "0",
      ...query,
    });
    status.textContent = "Loading…";
    try {
      current = await getJson<RecordsPage>(`/console/api/records?${parameters}`);
      offsetInput.value = String(current.fromOffset);
      drawPage(current);
    } catch (error) {
      status.textContent = (error as Error).message;
      status.className = "error";
      return;
    }
    status.className = "";
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const time = timeInput.value.trim();
    if (time !== "") {
      const ms = /^\d+$/.test(time) ? Number(time) : Date.parse(time);
      if (Number.isNaN(ms)) {
        status.textContent = `cannot read ${JSON.stringify(time)} as a time: use ISO 8601 (2026-01-31T12:00:00Z) or milliseconds`;
        status.className = "error";
        return;
      }
      timeInput.value = "";
      void load({ timestampMs: String(ms) });
      return;
    }
    void load(offsetInput.value === "" ? {} : { offset: offsetInput.value });
  });
  older.addEventListener("click", () => {
    if (current !== undefined) void load({ before: String(current.fromOffset) });
  });
  newer.addEventListener("click", () => {
    if (current !== undefined) void load({ offset: String(current.toOffset) });
  });
  if (topics.length > 0) await load({});
}

// --- Routing -------------------------------------------------------------------------------------

async function route(): Promise<void> {
  const [name, ...rest] = location.hash.replace(/^#/, "").split("/");
  const page: Page = PAGES.includes(name as Page) ? (name as Page) : "overview";
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a")) {
    if (link.dataset.page === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  source?.close();
  source = undefined;
  live.textContent = "";
  document.title = `${page[0]!.toUpperCase()}${page.slice(1)} · booblik console`;
  try {
    if (page === "overview") await showOverview();
    else if (page === "topics") showTopics();
    else if (page === "connections") showConnections();
    else await showRecords(rest[0] === undefined ? undefined : decodeURIComponent(rest[0]), rest[1]);
  } catch (error) {
    main.replaceChildren(
      h("h1", {}, "Error"),
      h("p", { class: "error", role: "alert" }, (error as Error).message),
    );
  }
  main.dataset.page = page;
}

window.addEventListener("hashchange", () => void route());
void route();
void getJson<Overview>("/console/api/overview").then(
  (overview) => setText("brand-version", overview.version),
  () => undefined,
);
