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
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { CONSOLE_STREAMS_MAX } from "../../src/domain/limits.ts";
import { BOOBLIK_VERSION } from "../../src/domain/version.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(120_000);

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = fs.existsSync(CHROMIUM);
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

const dir = tempDir("booblik-console");
const dataDir = dir.file("data");
const screenshots = dir.file("screenshots");
let broker: BrokerProcess;
let client: BooblikClient;
let base: string;
let browser: Browser | undefined;

/** The metrics (and console) port from the start line. */
function metricsPortOf(startLine: string): number {
  return Number(/metrics on [^:]+:(\d+)/.exec(startLine)?.[1]);
}

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
      await setup.createTopic("logs", { partitions: 1, durability: "append", retentionMs: 7 * 86_400_000 });
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

/**
 * Saves a screenshot under the test's temporary directory and checks it has content: decoded in the
 * browser, at least 2 % of its pixels differ from its most common colour (a blank or error-free
 * white page fails).
 */
async function screenshot(page: Page, name: string): Promise<void> {
  const file = path.join(screenshots, `${name}.png`);
  const png = await page.screenshot({ path: file, fullPage: true });
  expect(fs.statSync(file).size).toBeGreaterThan(0);
  const checker = await browser!.newPage();
  try {
    const inkFraction = await checker.evaluate(async (base64) => {
      const image = new Image();
      image.src = `data:image/png;base64,${base64}`;
      await image.decode();
      const canvas = document.createElement("canvas");
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext("2d")!;
      context.drawImage(image, 0, 0);
      const pixels = context.getImageData(0, 0, image.width, image.height).data;
      const counts = new Map<number, number>();
      for (let i = 0; i < pixels.length; i += 4) {
        const colour = (pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!;
        counts.set(colour, (counts.get(colour) ?? 0) + 1);
      }
      const background = Math.max(...counts.values());
      return 1 - background / (pixels.length / 4);
    }, png.toString("base64"));
    expect(inkFraction).toBeGreaterThan(0.02);
  } finally {
    await checker.close();
  }
}

/** No horizontal scrolling at this width (the page reflows for a phone). */
async function expectNoHorizontalOverflow(page: Page): Promise<void> {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
}

/** Every form control has an accessible name (a label, or aria-label). */
async function expectLabelledControls(page: Page): Promise<void> {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("input, select, button")]
      .filter((element) => {
        const control = element as HTMLInputElement;
        return (
          (control.labels?.length ?? 0) === 0 &&
          !control.getAttribute("aria-label") &&
          !control.textContent?.trim()
        );
      })
      .map((element) => element.outerHTML),
  );
  expect(unlabelled).toEqual([]);
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
      expect(await text(page, "#fact-rec-topics")).toBe("2");
      expect(await text(page, "#fact-rec-partitions")).toBe("3");
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
      // Topics are `force`: each produce forced, so the force chart has a latency.
      await page.waitForFunction(() => Number(document.getElementById("chart-force")?.dataset.max ?? 0) > 0);
      expect(await text(page, "#chart-force-now")).toMatch(/ms|s$/);
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
      const described = await client.metadata(["orders", "logs"]);
      expect(described.topics.length).toBe(2);
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
      expect(settings).toEqual(["1", "append", "file", "128 MiB", "none", "7 d", "1.00 MiB"]);
      const ordersSettings = await page
        .locator('#settings-table tr[data-topic="orders"] td')
        .allTextContents();
      expect(ordersSettings.slice(0, 4)).toEqual(["2", "force", "file", "4.00 KiB"]);
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
    // Streams of the browser pages closed above end when their sockets do: wait for that.
    await waitUntil(async () => (await openStreams()) === 0, "the browser pages' streams to end");
    try {
      for (let i = 0; i < CONSOLE_STREAMS_MAX; i++) {
        const abort = new AbortController();
        aborts.push(abort);
        const response = await fetch(`${base}/console/api/stream?view=overview`, { signal: abort.signal });
        expect(response.status).toBe(200);
      }
      const refused = await fetch(`${base}/console/api/stream?view=overview`);
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: string }).error).toContain("too many console streams");
      aborts.pop()!.abort();
      await waitUntil(
        async () => (await openStreams()) === CONSOLE_STREAMS_MAX - 1,
        "the aborted stream to be forgotten",
      );
      const again = new AbortController();
      aborts.push(again);
      expect((await fetch(`${base}/console/api/stream?view=overview`, { signal: again.signal })).status).toBe(
        200,
      );
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
