/**
 * The console page: hash routing between pages, one live stream (server-sent events) for the page
 * shown, the charts drawn as SVG polylines. Plain DOM and TypeScript, no library: nothing to keep
 * up, nothing fetched at run time (the bundle ships inside the broker).
 */

import type {
  ConnectionRows,
  ConsoleSample,
  GroupDetail,
  GroupRow,
  LagPoint,
  TopicRow,
} from "../api-types.ts";
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

type Page = "overview" | "topics" | "records" | "groups" | "connections";
const PAGES: readonly Page[] = ["overview", "topics", "records", "groups", "connections"];
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

/**
 * Replaces a live region's children (redrawn every second) keeping keyboard focus: a focused link
 * inside it would otherwise be destroyed under the user's keyboard once a second, and focus would
 * fall back to the page. The link with the same href is focused again after the redraw.
 */
function replaceKeepingFocus(target: HTMLElement, ...children: (Node | string)[]): void {
  const focused = document.activeElement;
  const href =
    focused instanceof HTMLAnchorElement && target.contains(focused) ? focused.getAttribute("href") : null;
  target.replaceChildren(...children);
  if (href === null) return;
  for (const link of target.querySelectorAll<HTMLAnchorElement>("a[href]")) {
    if (link.getAttribute("href") === href) {
      link.focus();
      return;
    }
  }
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

/** A data request answered 401: the broker has users and this browser has no live session. */
class LoginRequired extends Error {}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  const body = (await response.json()) as T & { error?: string; login?: boolean };
  if (response.status === 401 && body.login === true) throw new LoginRequired(body.error ?? "log in");
  if (!response.ok) throw new Error(body.error ?? `${response.status} ${response.statusText}`);
  return body;
}

// --- Login (only when the broker has users: docs/console.md "Who can see it") ---------------------

const account = document.getElementById("account") as HTMLElement;

/** Asks who is logged in; shows the login form and returns false when nobody is. */
async function checkSession(): Promise<boolean> {
  try {
    const session = await getJson<{ loginRequired: boolean; user: string | null }>("/console/api/session");
    if (session.user === null) account.replaceChildren();
    else {
      const logout = h("button", { type: "button", class: "logout" }, "Log out");
      logout.addEventListener("click", () => {
        void fetch("/console/api/logout", { method: "POST" }).then(() => checkSession());
      });
      account.replaceChildren(h("span", {}, `Logged in as ${session.user}`), " ", logout);
    }
    return true;
  } catch (error) {
    if (!(error instanceof LoginRequired)) throw error;
    showLogin(error.message);
    return false;
  }
}

function showLogin(message: string): void {
  source?.close();
  source = undefined;
  live.textContent = "";
  account.replaceChildren();
  document.title = "Log in · booblik console";
  const user = h("input", { id: "login-user", name: "user", autocomplete: "username", required: "" });
  const password = h("input", {
    id: "login-password",
    name: "password",
    type: "password",
    autocomplete: "current-password",
    required: "",
  });
  const failure = h("p", { id: "login-error", class: "error", role: "alert" });
  const form = h(
    "form",
    { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Log in"),
    h("p", { class: "note" }, message),
    h("label", { for: "login-user" }, "User"),
    user,
    h("label", { for: "login-password" }, "Password"),
    password,
    h("button", { type: "submit" }, "Log in"),
    failure,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    failure.textContent = "Logging in…";
    void fetch("/console/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        user: (user as HTMLInputElement).value,
        password: (password as HTMLInputElement).value,
      }),
    }).then(async (response) => {
      if (!response.ok) {
        const body = (await response.json().catch(() => ({}))) as { error?: string };
        failure.textContent = body.error ?? `${response.status} ${response.statusText}`;
        (password as HTMLInputElement).value = "";
        password.focus();
        return;
      }
      if (await checkSession()) void start();
    });
  });
  main.replaceChildren(form);
  main.dataset.page = "login";
  user.focus();
}

function openStream(
  view: "overview" | "topics" | "connections" | "groups" | "group",
  handlers: Record<string, (data: unknown) => void>,
  group?: string,
): void {
  source?.close();
  const groupParameter = group === undefined ? "" : `&group=${encodeURIComponent(group)}`;
  source = new EventSource(`/console/api/stream?view=${view}${groupParameter}`);
  live.textContent = "connecting…";
  source.onopen = () => {
    live.textContent = "live";
  };
  source.onerror = () => {
    live.textContent = "disconnected: retrying";
    // A stream refused with 401 (the session ended) is not retried by the browser: ask why.
    if (source?.readyState === EventSource.CLOSED) void checkSession().catch(() => undefined);
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
          ["rec-dropped", "Crash leftovers removed (segment files)", formatCount(r.segmentsDropped)],
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
  replaceKeepingFocus(
    target,
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

// --- Consumer groups -----------------------------------------------------------------------------

function drawGroups(groups: GroupRow[]): void {
  const target = document.getElementById("groups");
  if (target === null) return;
  if (groups.length === 0) {
    target.replaceChildren(h("p", {}, "No consumer groups yet: none has members or committed offsets."));
    return;
  }
  replaceKeepingFocus(
    target,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { id: "groups-table" },
        h("caption", {}, "Consumer groups"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Group"),
            h("th", { scope: "col" }, "State"),
            h("th", { scope: "col" }, "Protocol type"),
            h("th", { scope: "col", class: "num" }, "Members"),
            h("th", { scope: "col", class: "num" }, "Committed partitions"),
            h("th", { scope: "col", class: "num" }, "Lag"),
          ),
        ),
        h(
          "tbody",
          {},
          ...groups.map((group) =>
            h(
              "tr",
              { "data-group": group.group },
              h(
                "th",
                { scope: "row" },
                h("a", { href: `#groups/${encodeURIComponent(group.group)}` }, group.group),
              ),
              h("td", { "data-field": "state" }, group.state),
              h("td", { "data-field": "protocol-type" }, group.protocolType || "–"),
              h("td", { class: "num", "data-field": "members" }, formatCount(group.members)),
              h("td", { class: "num", "data-field": "partitions" }, formatCount(group.committedPartitions)),
              h("td", { class: "num", "data-field": "lag" }, formatCount(group.lag)),
            ),
          ),
        ),
      ),
    ),
  );
}

function showGroups(): void {
  main.replaceChildren(
    h("h1", {}, "Consumer groups"),
    h(
      "p",
      { class: "note" },
      "Kafka groups with members, and every group with committed offsets (Kafka's OffsetCommit or the native OFFSET_COMMIT). Lag is the partitions' next offsets minus the committed offsets.",
    ),
    h("div", { id: "groups" }, "Loading…"),
  );
  openStream("groups", { groups: (data) => drawGroups(data as GroupRow[]) });
}

/** A horizontal bar for a lag, scaled to the group's largest partition lag. */
function lagBar(lag: number | null, largest: number, label: string): HTMLElement {
  const fraction = lag === null || largest === 0 ? 0 : lag / largest;
  return h(
    "div",
    {
      class: "bar",
      role: "meter",
      "aria-label": label,
      "aria-valuemin": "0",
      "aria-valuemax": String(largest),
      "aria-valuenow": String(lag ?? 0),
      "aria-valuetext": lag === null ? "topic gone" : `${formatCount(lag)} records behind`,
    },
    h("div", { class: "bar-fill", style: `width: ${(fraction * 100).toFixed(1)}%` }),
  );
}

function assignmentText(member: GroupDetail["members"][number]): string {
  if (member.assignment === null) {
    return member.assignmentBytes === 0 ? "none yet" : `${formatBytes(member.assignmentBytes)} (not decoded)`;
  }
  if (member.assignment.length === 0) return "nothing";
  return member.assignment.map((a) => `${a.topic}: ${a.partitions.join(", ")}`).join("; ");
}

function drawGroup(detail: GroupDetail | null, groupId: string): void {
  const target = document.getElementById("group-detail");
  if (target === null) return;
  if (detail === null) {
    target.replaceChildren(
      h("p", { role: "status" }, `No group ${groupId} now: it has neither members nor committed offsets.`),
    );
    return;
  }
  const largest = Math.max(0, ...detail.offsets.map((o) => o.lag ?? 0));
  const members =
    detail.members.length === 0
      ? h("p", { id: "group-members-none" }, "No members: nobody consumes in this group now.")
      : h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "members-table" },
            h("caption", {}, "Members"),
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ...["Client id", "Host", "Assignment", "Instance id", "Member id"].map((n) =>
                  h("th", { scope: "col" }, n),
                ),
              ),
            ),
            h(
              "tbody",
              {},
              ...detail.members.map((member) =>
                h(
                  "tr",
                  { "data-member": member.memberId },
                  h("th", { scope: "row", "data-field": "client-id" }, member.clientId),
                  h("td", { "data-field": "host" }, member.clientHost),
                  h("td", { "data-field": "assignment" }, assignmentText(member)),
                  h("td", { "data-field": "instance-id", class: "id" }, member.groupInstanceId ?? "–"),
                  h("td", { "data-field": "member-id", class: "id" }, member.memberId),
                ),
              ),
            ),
          ),
        );
  const offsets =
    detail.offsets.length === 0
      ? h("p", {}, "No committed offsets yet.")
      : h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "offsets-table" },
            h("caption", {}, "Committed offsets and lag"),
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", { scope: "col" }, "Topic / partition"),
                h("th", { scope: "col", class: "num" }, "Committed"),
                h("th", { scope: "col", class: "num" }, "Next offset"),
                h("th", { scope: "col", class: "num" }, "Lag"),
                h("th", { scope: "col", class: "bar-col" }, "Lag bar"),
                h("th", { scope: "col" }, "Committed at (UTC)"),
              ),
            ),
            h(
              "tbody",
              {},
              ...detail.offsets.map((o) =>
                h(
                  "tr",
                  { "data-topic": o.topic, "data-partition": String(o.partition) },
                  h("th", { scope: "row" }, `${o.topic} / ${o.partition}`),
                  h("td", { class: "num", "data-field": "committed" }, formatCount(o.committedOffset)),
                  h(
                    "td",
                    { class: "num", "data-field": "next-offset" },
                    o.nextOffset === null ? "topic gone" : formatCount(o.nextOffset),
                  ),
                  h("td", { class: "num", "data-field": "lag" }, o.lag === null ? "–" : formatCount(o.lag)),
                  h("td", { class: "bar-col" }, lagBar(o.lag, largest, `Lag of ${o.topic} / ${o.partition}`)),
                  h("td", {}, formatTimestamp(o.commitTimestampMs)),
                ),
              ),
            ),
          ),
        );
  setText("fact-group-state", detail.state);
  setText("fact-group-protocol-type", detail.protocolType || "–");
  setText("fact-group-protocol", detail.protocol || "–");
  setText("fact-group-generation", detail.generationId === null ? "–" : String(detail.generationId));
  setText("fact-group-members", formatCount(detail.members.length));
  setText("fact-group-lag", formatCount(detail.lag));
  target.replaceChildren(members, offsets);
}

function drawLagChart(points: readonly LagPoint[]): void {
  const target = document.getElementById("chart-lag");
  if (target === null) return;
  const values = points.map((p) => p.lag);
  const top = niceCeiling(Math.max(0, ...values));
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
        stroke: "var(--lag)",
        "stroke-width": "2",
        "vector-effect": "non-scaling-stroke",
      }),
    ),
  );
  const last = points.at(-1);
  setText("chart-lag-now", last === undefined ? "–" : `${formatCount(last.lag)} records`);
  setText("chart-lag-top", `top ${formatCount(top)}`);
  target.dataset.samples = String(points.length);
  target.dataset.last = String(last?.lag ?? "");
  target.dataset.max = String(Math.max(0, ...values));
}

function showGroup(groupId: string): void {
  let lag: LagPoint[] = [];
  main.replaceChildren(
    h("p", { class: "crumbs" }, h("a", { href: "#groups" }, "← All groups")),
    h("h1", { id: "group-name" }, groupId),
    facts("facts-group", [
      ["group-state", "State", "–"],
      ["group-protocol-type", "Protocol type", "–"],
      ["group-protocol", "Assignor", "–"],
      ["group-generation", "Generation", "–"],
      ["group-members", "Members", "–"],
      ["group-lag", "Total lag (records)", "–"],
    ]),
    h("div", { id: "group-detail" }, "Loading…"),
    h("h2", {}, "Lag over the last five minutes"),
    h(
      "div",
      { class: "charts" },
      chartFigure({
        id: "lag",
        title: "Total lag (records)",
        value: () => null,
        format: () => "",
        colour: "var(--lag)",
      }),
    ),
  );
  openStream(
    "group",
    {
      "lag-history": (data) => {
        lag = data as LagPoint[];
        drawLagChart(lag);
      },
      lag: (data) => {
        lag.push(data as LagPoint);
        if (lag.length > CHART_SLOTS) lag.shift();
        drawLagChart(lag);
      },
      group: (data) => drawGroup(data as GroupDetail | null, groupId),
    },
    groupId,
  );
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
  if (topics instanceof LoginRequired) throw topics;
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
    else if (page === "groups") {
      if (rest[0] === undefined || rest[0] === "") showGroups();
      else showGroup(decodeURIComponent(rest[0]));
    } else await showRecords(rest[0] === undefined ? undefined : decodeURIComponent(rest[0]), rest[1]);
  } catch (error) {
    if (error instanceof LoginRequired) {
      showLogin(error.message);
      return;
    }
    main.replaceChildren(
      h("h1", {}, "Error"),
      h("p", { class: "error", role: "alert" }, (error as Error).message),
    );
  }
  main.dataset.page = page;
}

/** After the session check (and a login, when the broker has users): the page the address names. */
async function start(): Promise<void> {
  await route();
  void getJson<Overview>("/console/api/overview").then(
    (overview) => setText("brand-version", overview.version),
    () => undefined,
  );
}

window.addEventListener("hashchange", () => void route());
void checkSession().then(
  (loggedIn) => (loggedIn ? start() : undefined),
  (error: Error) =>
    main.replaceChildren(h("h1", {}, "Error"), h("p", { class: "error", role: "alert" }, error.message)),
);
