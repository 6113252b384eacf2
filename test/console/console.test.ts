/**
 * The web console end to end, in a real browser: Debian's Chromium driven by playwright-core, against
 * a broker child process whose data this test writes. Each page must show the numbers the broker
 * has; a chart must move when the test produces; every page's screenshot must have content. One
 * browser for the file (starting Chromium is the slow part).
 *
 * Without /usr/bin/chromium (apt-get install chromium; .ci/run installs it) the browser tests are
 * skipped with that reason; the HTTP-level tests below them still run.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { CONSOLE_STREAMS_MAX } from "../../src/domain/limits.ts";
import { BOOBLIK_VERSION } from "../../src/domain/version.ts";
import { type BrokerProcess, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  expectLabelledControls,
  screenshot as saveScreenshot,
} from "./browser-checks.ts";

setDefaultTimeout(120_000);

const haveChromium = fs.existsSync(CHROMIUM);

const dir = tempDir("booblik-console");
const dataDir = dir.file("data");
const screenshots = dir.file("screenshots");
let broker: BrokerProcess;
let client: BooblikClient;
let base: string;
let browser: Browser | undefined;
/** The first event's timestamp; event i is i seconds later. */
const EVENTS_BASE_MS = Date.UTC(2026, 0, 31, 12, 0, 0);

async function produce(topic: string, partition: number, values: string[]): Promise<void> {
  await new Producer(client).send(topic, values, { partition });
}

beforeAll(async () => {
  fs.mkdirSync(screenshots);
  // A first broker writes the data and stops cleanly, so the console's recovery report has
  // something to say (3 partitions, clean shutdown).
  {
    await using first = await startBroker(dataDir);
    const setup = await BooblikClient.connect({ host: "127.0.0.1", port: first.port });
    try {
      await setup.createTopic("orders", { partitions: 2, durability: "force", segmentBytes: 4096 });
      await setup.createTopic("logs", {
        partitions: 1,
        durability: "append",
        retentionMs: 7 * 86_400_000,
        timestampType: "LogAppendTime",
      });
      const producer = new Producer(setup);
      // 300 records of 23 bytes on orders/0 with 4 KiB segments, in batches of 50: several segments.
      for (let start = 0; start < 300; start += 50) {
        await producer.send(
          "orders",
          Array.from(
            { length: 50 },
            (_, i) => `order ${String(start + i).padStart(4, "0")} ${"x".repeat(12)}`,
          ),
          { partition: 0 },
        );
      }
      await producer.send("orders", ["one", "two", "three"], { partition: 1 });
      await producer.send("logs", ['{"level":"info","msg":"hello"}'], { partition: 0 });
      // 45 records with keys, JSON values, a header and timestamps one second apart, for the
      // record browser; the last one's value is not UTF-8.
      await setup.createTopic("events", { partitions: 1, durability: "append" });
      await producer.send(
        "events",
        Array.from({ length: 45 }, (_, i) => ({
          key: `user-${i}`,
          value: i === 44 ? new Uint8Array([0x61, 0xff, 0x62]) : JSON.stringify({ n: i, kind: "click" }),
          headers: { trace: `t${i}` },
          timestamp: EVENTS_BASE_MS + i * 1000,
        })),
        { partition: 0 },
      );
    } finally {
      setup.close();
    }
    expect(await first.stop()).toBe(0);
  }
  broker = await startBroker(dataDir, ["--metrics-port", "0"]);
  base = `http://127.0.0.1:${metricsPortOf(broker.startLine)}`;
  client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  if (haveChromium) {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  }
});

afterAll(async () => {
  await browser?.close();
  client?.close();
  await broker?.stop();
  if (process.env.BOOBLIK_KEEP_SCREENSHOTS !== undefined)
    fs.cpSync(screenshots, process.env.BOOBLIK_KEEP_SCREENSHOTS, { recursive: true });
  dir[Symbol.dispose]();
});

async function openPage(hash: string, width = 1100, height = 800): Promise<Page> {
  const page = await browser!.newPage({ viewport: { width, height } });
  page.on("pageerror", (error) => {
    throw error;
  });
  await page.goto(`${base}/console/#${hash}`);
  await page.waitForFunction(
    (name) => document.getElementById("main")?.dataset.page === name,
    hash.split("/")[0],
  );
  return page;
}

const text = async (page: Page, selector: string) =>
  (await page.locator(selector).first().textContent()) ?? "";

/** Saves a screenshot under the test's temporary directory and checks it has content. */
const screenshot = (page: Page, name: string) => saveScreenshot(browser!, page, screenshots, name);

/** No horizontal scrolling at this width (the page reflows for a phone). */
async function expectNoHorizontalOverflow(page: Page): Promise<void> {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
}

describe.skipIf(!haveChromium)("in Chromium", () => {
  test("overview: version, data directory, defaults, CRC32C, the recovery report, live charts", async () => {
    const page = await openPage("overview");
    try {
      await page.waitForFunction(() => document.getElementById("fact-version") !== null);
      expect(await text(page, "#fact-version")).toBe(BOOBLIK_VERSION);
      expect(await text(page, "#fact-data-dir")).toBe(dataDir);
      expect(await text(page, "#fact-durability")).toBe("force");
      expect(await text(page, "#fact-write-mode")).toBe("file");
      expect(await text(page, "#fact-segment-size")).toBe("128 MiB");
      expect(await text(page, "#fact-retention-time")).toBe("none");
      expect(broker.startLine).toContain(`CRC32C ${await text(page, "#fact-crc32c")}`);
      expect(await text(page, "#fact-shutdown")).toBe("clean shutdown");
      expect(await text(page, "#fact-rec-topics")).toBe("3");
      expect(await text(page, "#fact-rec-partitions")).toBe("4");
      expect(await text(page, "#fact-ready")).toBe("yes");

      // The produce chart moves when records arrive: produce until a sample shows them (samples
      // come once a second; the condition, not a sleep, ends the loop).
      let sent = 0;
      await waitUntil(
        async () => {
          await produce("orders", 1, [`live ${sent++}`]);
          return page.evaluate(() => Number(document.getElementById("chart-produce")?.dataset.max ?? 0) > 0);
        },
        "a produce rate on the chart",
        20_000,
        50,
      );
      // A line was drawn above the baseline, and the totals follow.
      const highest = await page.evaluate(() => {
        const ys = [...document.querySelectorAll("#chart-produce polyline")].flatMap((line) =>
          (line.getAttribute("points") ?? "").split(" ").map((point) => Number(point.split(",")[1])),
        );
        return Math.min(...ys);
      });
      expect(highest).toBeLessThan(100);
      // This broker's PRODUCE counter started at 0: the total is exactly what the loop sent.
      await page.waitForFunction(
        (expected) => document.getElementById("fact-produced")?.textContent === expected,
        sent.toLocaleString("en-US"),
      );
      // The consume chart moves when the test fetches (orders/0 holds 300 records).
      await waitUntil(
        async () => {
          await client.fetch("orders", 0, 0);
          return page.evaluate(() => Number(document.getElementById("chart-consume")?.dataset.max ?? 0) > 0);
        },
        "a fetch rate on the chart",
        20_000,
        50,
      );
      // Topics are `force`: each produce forced, so the force chart has a latency.
      await page.waitForFunction(() => Number(document.getElementById("chart-force")?.dataset.max ?? 0) > 0);
      // (Its "now" figure is "–" in a second without a force; the axis names the scale in time.)
      expect(await text(page, "#chart-force-top")).toMatch(/^top [\d.]+ m?s$/);
      expect(await page.locator("#chart-force polyline").count()).toBeGreaterThan(0);
      await expectLabelledControls(page);
      await screenshot(page, "overview");
    } finally {
      await page.close();
    }
  });

  test("topics: partitions with their offsets, sizes, segments, settings and rates", async () => {
    const page = await openPage("topics");
    try {
      await page.waitForSelector("#partitions-table");
      const cell = (topic: string, partition: number, field: string) =>
        text(
          page,
          `#partitions-table tr[data-topic="${topic}"][data-partition="${partition}"] [data-field="${field}"]`,
        );
      // orders/0 holds 300 records in several 4 KiB segments.
      expect(await cell("orders", 0, "next-offset")).toBe("300");
      expect(await cell("orders", 0, "log-start")).toBe("0");
      expect(Number(await cell("orders", 0, "segments"))).toBeGreaterThan(1);
      expect(await cell("logs", 0, "next-offset")).toBe("1");
      expect(await cell("logs", 0, "segments")).toBe("1");
      const settings = await page.locator('#settings-table tr[data-topic="logs"] td').allTextContents();
      expect(settings).toEqual([
        "1",
        "append",
        "file",
        "128 MiB",
        "none",
        "7 d",
        "1.00 MiB",
        "LogAppendTime",
      ]);
      const ordersSettings = await page
        .locator('#settings-table tr[data-topic="orders"] td')
        .allTextContents();
      expect(ordersSettings.slice(0, 4)).toEqual(["2", "force", "file", "4.00 KiB"]);
      expect(ordersSettings.at(-1)).toBe("CreateTime");
      // The next offset follows produce, and the rate shows it.
      const before = Number((await cell("orders", 1, "next-offset")).replace(/,/g, ""));
      await produce("orders", 1, ["a", "b", "c", "d", "e"]);
      await page.waitForFunction(
        (expected) =>
          document.querySelector(
            '#partitions-table tr[data-topic="orders"][data-partition="1"] [data-field="next-offset"]',
          )?.textContent === String(expected),
        before + 5,
      );
      expect(await cell("orders", 1, "size")).toMatch(/B$/);
      await screenshot(page, "topics");
    } finally {
      await page.close();
    }
  });

  test("connections: the count and each client address", async () => {
    const page = await openPage("connections");
    try {
      await page.waitForFunction(() => document.getElementById("fact-connection-count")?.textContent === "1");
      expect(await text(page, '#connections-table tr[data-address="127.0.0.1"] td')).toBe("1");
      const second = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
      try {
        await second.metadata();
        await page.waitForFunction(
          () => document.getElementById("fact-connection-count")?.textContent === "2",
        );
        expect(await text(page, '#connections-table tr[data-address="127.0.0.1"] td')).toBe("2");
        await screenshot(page, "connections");
      } finally {
        second.close();
      }
      await page.waitForFunction(() => document.getElementById("fact-connection-count")?.textContent === "1");
    } finally {
      await page.close();
    }
  });

  test("records: key, value, headers and timestamp; pages forward and back by offset; jumps by time", async () => {
    const page = await openPage("records/events/0");
    try {
      const offsets = async () =>
        await page
          .locator("#records-table tbody tr")
          .evaluateAll((rows) => rows.map((row) => Number(row.getAttribute("data-offset"))));
      const pageShows = (first: number, last: number) =>
        page.waitForFunction(
          ([a, b]) => {
            const rows = document.querySelectorAll("#records-table tbody tr");
            return (
              rows.length === b! - a! + 1 &&
              rows[0]?.getAttribute("data-offset") === String(a) &&
              rows[rows.length - 1]?.getAttribute("data-offset") === String(b)
            );
          },
          [first, last],
        );
      await pageShows(0, 19);
      expect(await offsets()).toEqual(Array.from({ length: 20 }, (_, i) => i));
      const cells = await page.locator('#records-table tr[data-offset="3"] > *').allTextContents();
      expect(cells[0]).toBe("3");
      expect(cells[1]).toBe(new Date(EVENTS_BASE_MS + 3000).toISOString());
      expect(cells[2]).toBe("user-3");
      expect(cells[3]).toBe('{"n":3,"kind":"click"}');
      expect(cells[4]).toBe("trace: t3");
      expect(await page.locator("#records-older").isDisabled()).toBe(true);
      await screenshot(page, "records");
      // Forward: 20-39, then the last 5; no newer page after the end.
      await page.click("#records-newer");
      await pageShows(20, 39);
      await page.click("#records-newer");
      await pageShows(40, 44);
      expect(await page.locator("#records-newer").isDisabled()).toBe(true);
      // A value that is not UTF-8 says so and shows hex.
      const binary = await page.locator('#records-table tr[data-offset="44"] td').nth(2).textContent();
      expect(binary).toContain("61 ff 62");
      expect(binary).toContain("not UTF-8 (first bad byte at position 1)");
      // Back: 20-39, then 0-19.
      await page.click("#records-older");
      await pageShows(20, 39);
      await page.click("#records-older");
      await pageShows(0, 19);
      // JSON and hex views of the same page.
      await page.check("#view-json");
      expect(await page.locator('#records-table tr[data-offset="3"] td').nth(2).textContent()).toBe(
        '{\n  "n": 3,\n  "kind": "click"\n}',
      );
      await page.check("#view-hex");
      expect(await page.locator('#records-table tr[data-offset="3"] td').nth(1).textContent()).toBe(
        "00000000  75 73 65 72 2d 33",
      );
      await page.check("#view-text");
      // By time: the first record at or after 30.5 s is offset 31.
      await page.fill("#records-time", new Date(EVENTS_BASE_MS + 30_500).toISOString());
      await page.click("#records-go");
      await pageShows(31, 44);
      // After the last timestamp: nothing, said in words.
      await page.fill("#records-time", String(EVENTS_BASE_MS + 3_600_000));
      await page.click("#records-go");
      await page.waitForFunction(() =>
        document.getElementById("records-status")?.textContent?.startsWith("No records from offset 45"),
      );
      // By offset, typed.
      await page.fill("#records-offset", "7");
      await page.click("#records-go");
      await pageShows(7, 26);
      await expectLabelledControls(page);
    } finally {
      await page.close();
    }
  });

  test("keyboard: the pages are reached with Tab and Enter; a phone width does not scroll sideways", async () => {
    const page = await openPage("overview", 390, 844);
    try {
      await page.waitForSelector("#fact-version");
      await expectNoHorizontalOverflow(page);
      await screenshot(page, "overview-phone");
      // Tab from the top: the skip link, then the navigation in order.
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
      await page.keyboard.press("Tab");
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Topics");
      await page.keyboard.press("Enter");
      await page.waitForFunction(() => document.getElementById("main")?.dataset.page === "topics");
      expect(await text(page, 'nav a[aria-current="page"]')).toBe("Topics");
      await page.waitForSelector("#partitions-table");
      await expectNoHorizontalOverflow(page);
    } finally {
      await page.close();
    }
  });
});

describe("over HTTP", () => {
  const openStreams = async () =>
    ((await (await fetch(`${base}/console/api/overview`)).json()) as { streams: { open: number } }).streams
      .open;

  test("streams are capped; a closed one frees its place", async () => {
    const aborts: AbortController[] = [];
    // The test holds every Response it opened: a fetch Response nothing references is closed when
    // it is garbage-collected (its socket too), and the broker then rightly forgets that stream. A
    // full `bun test` run collected one between the 32nd stream and the 33rd request, which then got
    // 200 (seen 2026-11-30); the Bun.gc below makes that collection happen on every run.
    const held: Response[] = [];
    const open = async (): Promise<Response> => {
      const abort = new AbortController();
      aborts.push(abort);
      const response = await fetch(`${base}/console/api/stream?view=overview`, { signal: abort.signal });
      held.push(response);
      return response;
    };
    // Streams of the browser pages closed above end when their sockets do: wait for that.
    await waitUntil(async () => (await openStreams()) === 0, "the browser pages' streams to end");
    try {
      for (let i = 0; i < CONSOLE_STREAMS_MAX; i++) expect((await open()).status).toBe(200);
      Bun.gc(true);
      expect(await openStreams()).toBe(CONSOLE_STREAMS_MAX);
      const refused = await fetch(`${base}/console/api/stream?view=overview`);
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: string }).error).toContain("too many console streams");
      aborts.pop()!.abort();
      held.pop();
      await waitUntil(
        async () => (await openStreams()) === CONSOLE_STREAMS_MAX - 1,
        "the aborted stream to be forgotten",
      );
      expect((await open()).status).toBe(200);
      expect(await openStreams()).toBe(CONSOLE_STREAMS_MAX);
    } finally {
      for (const abort of aborts) abort.abort();
    }
    await waitUntil(async () => (await openStreams()) === 0, "every stream to be forgotten");
  });

  test("data answers only a loopback Host (DNS rebinding); nothing but GET", async () => {
    const foreign = await fetch(`${base}/console/api/overview`, { headers: { host: "attacker.example:80" } });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: string }).error).toContain("only this machine");
    expect((await fetch(`${base}/console/api/overview`, { headers: { host: "localhost" } })).status).toBe(
      200,
    );
    expect((await fetch(`${base}/console/api/overview`, { method: "POST" })).status).toBe(405);
    expect((await fetch(`${base}/console/api/stream?view=nope`)).status).toBe(400);
  });

  test("the record API names what is wrong", async () => {
    const records = async (query: string) => {
      const response = await fetch(`${base}/console/api/records?${query}`);
      return {
        status: response.status,
        body: (await response.json()) as { error?: string; records?: unknown[] },
      };
    };
    expect(await records("topic=nope&partition=0")).toMatchObject({ status: 404 });
    expect((await records("topic=events&partition=5")).status).toBe(404);
    const badOffset = await records("topic=events&partition=0&offset=-3");
    expect(badOffset.status).toBe(400);
    expect(badOffset.body.error).toBe('offset must be a whole number in [0, 9007199254740991], got "-3"');
    expect((await records("partition=0")).body.error).toBe("topic is required");
    expect((await records("topic=events&partition=0&limit=201")).status).toBe(400);
    // Past the end: an empty page, not an error.
    const after = await records("topic=events&partition=0&offset=1000");
    expect(after.status).toBe(200);
    expect(after.body.records).toEqual([]);
  });

  test("--console off serves no console; the metrics stay", async () => {
    using other = tempDir("booblik-off");
    await using off = await startBroker(other.path, ["--metrics-port", "0", "--console", "off"]);
    const offBase = `http://127.0.0.1:${metricsPortOf(off.startLine)}`;
    expect(off.startLine).not.toContain("(console at");
    expect((await fetch(`${offBase}/console/`)).status).toBe(404);
    expect((await fetch(`${offBase}/console/api/overview`)).status).toBe(404);
    expect((await fetch(`${offBase}/metrics`)).status).toBe(200);
    expect(await off.stop()).toBe(0);
  });
});
