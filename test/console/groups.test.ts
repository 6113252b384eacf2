/**
 * The console's consumer-group pages end to end, in Debian's Chromium (playwright-core), against a
 * broker child process with a Kafka listener: a native group committing through the client
 * library's OFFSET_COMMIT and a kafkajs group with a live member. Lag must appear when a group
 * falls behind and clear when it catches up, on the listing, the group's page (numbers and bar) and
 * its lag chart. Also: every page of the console passes the contrast and touch-target checks
 * (browser-checks.ts) and is reachable by keyboard.
 *
 * Without /usr/bin/chromium the browser tests are skipped with that reason; the HTTP-level and
 * decoder tests still run.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import fs from "node:fs";
import { Kafka, type Consumer as KafkaConsumer, logLevel } from "kafkajs";
import { type Browser, chromium, type Page } from "playwright-core";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { decodeConsumerAssignment } from "../../src/console/groups.ts";
import { type BrokerProcess, metricsPortOf, startBroker } from "../helpers/broker-process.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  expectLabelledControls,
  expectReadableContrast,
  expectTouchTargets,
  screenshot,
} from "./browser-checks.ts";

setDefaultTimeout(120_000);

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.log("console/groups.test.ts: browser tests skipped: no /usr/bin/chromium");

const dir = tempDir("booblik-console-groups");
const screenshots = dir.file("screenshots");
let broker: BrokerProcess;
let client: BooblikClient;
let base: string;
let kafkaPort: number;
let browser: Browser | undefined;
let kafkaConsumer: KafkaConsumer | undefined;

beforeAll(async () => {
  fs.mkdirSync(screenshots);
  broker = await startBroker(dir.file("data"), ["--metrics-port", "0", "--kafka-port", "0"]);
  base = `http://127.0.0.1:${metricsPortOf(broker.startLine)}`;
  const kafkaLine = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka line");
  kafkaPort = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(kafkaLine)?.[1]);
  client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  await client.createTopic("clicks", { partitions: 2, durability: "force" });
  await client.createTopic("audit", { partitions: 1, durability: "force" });
  const producer = new Producer(client);
  await producer.send(
    "clicks",
    Array.from({ length: 100 }, (_, i) => `click ${i}`),
    { partition: 0 },
  );
  await producer.send(
    "clicks",
    Array.from({ length: 10 }, (_, i) => `late click ${i}`),
    { partition: 1 },
  );
  await producer.send(
    "audit",
    Array.from({ length: 5 }, (_, i) => `audit ${i}`),
    { partition: 0 },
  );
  if (haveChromium) {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  }
});

afterAll(async () => {
  await kafkaConsumer?.disconnect();
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

/** Waits until the element's text is `expected` (the page updates once a second). */
const textBecomes = (page: Page, selector: string, expected: string) =>
  page.waitForFunction(([s, e]) => document.querySelector(s!)?.textContent === e, [selector, expected], {
    timeout: 30_000,
  });

const offsetCell = (partition: number, field: string) =>
  `#offsets-table tr[data-topic="clicks"][data-partition="${partition}"] [data-field="${field}"]`;

describe.skipIf(!haveChromium)("in Chromium", () => {
  test("a native group: lag appears when it falls behind and clears when it catches up", async () => {
    // The client library's OFFSET_COMMIT: 40 of 100 on partition 0, all 10 on partition 1.
    await client.commitOffsets("native-app", [
      { topic: "clicks", partition: 0, offset: 40 },
      { topic: "clicks", partition: 1, offset: 10 },
    ]);
    const list = await openPage("groups");
    try {
      const row = '#groups-table tr[data-group="native-app"]';
      await textBecomes(list, `${row} [data-field="lag"]`, "60");
      expect(await list.locator(`${row} [data-field="state"]`).textContent()).toBe("Empty");
      expect(await list.locator(`${row} [data-field="members"]`).textContent()).toBe("0");
      expect(await list.locator(`${row} [data-field="partitions"]`).textContent()).toBe("2");
      await screenshot(browser!, list, screenshots, "groups");
      // Keyboard: the group's link is reached with Tab and followed with Enter, though the table
      // is redrawn every second (each Tab waits for a redraw, so focus must survive it).
      let presses = 0;
      while (!(await list.evaluate(() => document.activeElement?.textContent === "native-app"))) {
        expect(++presses).toBeLessThan(20);
        await list.keyboard.press("Tab");
      }
      // Through two redraws of the listing, focus stays on the link.
      for (let redraw = 0; redraw < 2; redraw++) {
        await list.evaluate(
          () =>
            new Promise<void>((resolve) => {
              const observer = new MutationObserver(() => {
                observer.disconnect();
                resolve();
              });
              observer.observe(document.getElementById("groups")!, { childList: true });
            }),
        );
        expect(await list.evaluate(() => document.activeElement?.textContent)).toBe("native-app");
      }
      await list.keyboard.press("Enter");
      await list.waitForSelector("#offsets-table");
      expect(await list.locator("#group-name").textContent()).toBe("native-app");
    } finally {
      await list.close();
    }

    const page = await openPage("groups/native-app");
    try {
      await page.waitForSelector("#offsets-table");
      expect(await page.locator(offsetCell(0, "committed")).textContent()).toBe("40");
      expect(await page.locator(offsetCell(0, "next-offset")).textContent()).toBe("100");
      expect(await page.locator(offsetCell(0, "lag")).textContent()).toBe("60");
      expect(await page.locator(offsetCell(1, "lag")).textContent()).toBe("0");
      expect(await page.locator("#group-members-none").count()).toBe(1);
      // The bar of the laggiest partition is full, the caught-up one's empty; both are labelled.
      const bars = await page
        .locator("#offsets-table [role=meter]")
        .evaluateAll((meters) =>
          meters.map((m) => [
            m.getAttribute("aria-label"),
            m.getAttribute("aria-valuenow"),
            (m.firstElementChild as HTMLElement).style.width,
          ]),
        );
      expect(bars).toEqual([
        ["Lag of clicks / 0", "60", "100%"],
        ["Lag of clicks / 1", "0", "0%"],
      ]);
      // The lag chart draws the group's lag of the seconds since the sampler started.
      await page.waitForFunction(() => document.getElementById("chart-lag")?.dataset.last === "60");

      // It falls behind: 30 more records on partition 0.
      await new Producer(client).send(
        "clicks",
        Array.from({ length: 30 }, (_, i) => `more ${i}`),
        { partition: 0 },
      );
      await textBecomes(page, offsetCell(0, "lag"), "90");
      await textBecomes(page, "#fact-group-lag", "90");
      await page.waitForFunction(() => document.getElementById("chart-lag")?.dataset.last === "90");
      await screenshot(browser!, page, screenshots, "group-behind");

      // It catches up: a commit of the end of both partitions.
      await client.commitOffsets("native-app", [{ topic: "clicks", partition: 0, offset: 130 }]);
      await textBecomes(page, offsetCell(0, "lag"), "0");
      await textBecomes(page, "#fact-group-lag", "0");
      await page.waitForFunction(() => document.getElementById("chart-lag")?.dataset.last === "0");
      // The chart still shows the lag of the last minutes.
      expect(await page.evaluate(() => document.getElementById("chart-lag")?.dataset.max)).toBe("90");
      expect(await page.locator("#chart-lag polyline").count()).toBeGreaterThan(0);
      const widths = await page
        .locator("#offsets-table .bar-fill")
        .evaluateAll((fills) => fills.map((f) => (f as HTMLElement).style.width));
      expect(widths).toEqual(["0%", "0%"]);
      await expectLabelledControls(page);
    } finally {
      await page.close();
    }
  });

  test("a Kafka group: members with client id, host and assignment; lag while paused, none after", async () => {
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${kafkaPort}`],
      logLevel: logLevel.NOTHING,
      clientId: "billing-service",
    });
    const consumer = kafka.consumer({
      groupId: "billing",
      sessionTimeout: 10_000,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    kafkaConsumer = consumer;
    const seen = new Set<string>();
    await consumer.connect();
    await consumer.subscribe({ topic: "audit", fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(message.value!.toString());
      },
    });
    await waitUntil(() => seen.size === 5, "the 5 audit records", 60_000);
    const page = await openPage("groups/billing");
    try {
      const member = "#members-table tbody tr";
      await page.waitForSelector(member, { timeout: 60_000 });
      expect(await page.locator(`${member} [data-field="client-id"]`).textContent()).toBe("billing-service");
      expect(await page.locator(`${member} [data-field="host"]`).textContent()).toBe("/127.0.0.1");
      expect(await page.locator(`${member} [data-field="assignment"]`).textContent()).toBe("audit: 0");
      // kafkajs has no static membership: a dynamic member, of a generation the coordinator counted.
      expect(await page.locator(`${member} [data-field="instance-id"]`).textContent()).toBe("–");
      expect(Number(await page.locator("#fact-group-generation").textContent())).toBeGreaterThanOrEqual(1);
      expect(await page.locator("#fact-group-state").textContent()).toBe("Stable");
      expect(await page.locator("#fact-group-protocol-type").textContent()).toBe("consumer");
      const audit = '#offsets-table tr[data-topic="audit"][data-partition="0"] [data-field="lag"]';
      await textBecomes(page, audit, "0");

      // Paused, it falls behind by what is produced meanwhile; resumed, it commits and catches up.
      consumer.pause([{ topic: "audit" }]);
      await new Producer(client).send(
        "audit",
        Array.from({ length: 7 }, (_, i) => `audit late ${i}`),
        { partition: 0 },
      );
      await textBecomes(page, audit, "7");
      await page.waitForFunction(() => document.getElementById("chart-lag")?.dataset.last === "7");
      await screenshot(browser!, page, screenshots, "group-kafka");
      consumer.resume([{ topic: "audit" }]);
      await textBecomes(page, audit, "0");
      await page.waitForFunction(() => document.getElementById("chart-lag")?.dataset.last === "0");
      expect(seen.size).toBe(12);
    } finally {
      await page.close();
    }
    // The listing shows it with its member.
    const list = await openPage("groups");
    try {
      const row = '#groups-table tr[data-group="billing"]';
      await textBecomes(list, `${row} [data-field="members"]`, "1");
      expect(await list.locator(`${row} [data-field="state"]`).textContent()).toBe("Stable");
      expect(await list.locator(`${row} [data-field="protocol-type"]`).textContent()).toBe("consumer");
    } finally {
      await list.close();
    }
  });

  test("every page: text contrast at least 4.5:1 and targets at least 24 px, on a laptop and a phone", async () => {
    for (const [width, height] of [
      [1100, 800],
      [390, 844],
    ] as const) {
      for (const hash of [
        "overview",
        "topics",
        "records/clicks/0",
        "groups",
        "groups/native-app",
        "connections",
      ]) {
        const page = await openPage(hash, width, height);
        try {
          // Each page's own content is there (not just "Loading…").
          const ready: Record<string, string> = {
            overview: "#facts-recovery",
            topics: "#partitions-table",
            records: "#records-table",
            groups: hash.includes("/") ? "#offsets-table" : "#groups-table",
            connections: "#facts-connections",
          };
          await page.waitForSelector(ready[hash.split("/")[0]!]!);
          await expectReadableContrast(page);
          await expectTouchTargets(page);
          await expectLabelledControls(page);
          if (hash === "groups/native-app" && width < 500) {
            const overflow = await page.evaluate(
              () => document.documentElement.scrollWidth - window.innerWidth,
            );
            expect(overflow).toBeLessThanOrEqual(0);
            await screenshot(browser!, page, screenshots, "group-phone");
          }
        } finally {
          await page.close();
        }
      }
    }
  });
});

describe("over HTTP", () => {
  test("the groups API lists native and Kafka groups; a group names what is missing", async () => {
    await client.commitOffsets("http-only", [{ topic: "clicks", partition: 1, offset: 4 }]);
    const rows = (await (await fetch(`${base}/console/api/groups`)).json()) as {
      group: string;
      lag: number;
    }[];
    expect(rows.find((row) => row.group === "http-only")).toMatchObject({ lag: 6 });
    const detail = await fetch(`${base}/console/api/group?group=http-only`);
    expect(detail.status).toBe(200);
    const body = (await detail.json()) as { offsets: unknown[]; generationId: number | null };
    expect(body.offsets).toEqual([
      expect.objectContaining({ topic: "clicks", partition: 1, committedOffset: 4, nextOffset: 10, lag: 6 }),
    ]);
    expect(body.generationId).toBeNull(); // only committed offsets: no live members
    const missing = await fetch(`${base}/console/api/group?group=nobody`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toBe('no consumer group "nobody"');
    expect((await fetch(`${base}/console/api/group`)).status).toBe(400);
    expect((await fetch(`${base}/console/api/stream?view=group`)).status).toBe(400);
  });
});

describe("decodeConsumerAssignment", () => {
  // ConsumerProtocolAssignment v0 as kafkajs 2.2.4 writes it: version 0, one topic "audit" with
  // partitions 0 and 2, user data of 0 bytes.
  const bytes = new Uint8Array([
    0, 0, 0, 0, 0, 1, 0, 5, 0x61, 0x75, 0x64, 0x69, 0x74, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0,
  ]);

  test("reads topics and partitions", () => {
    expect(decodeConsumerAssignment(bytes)).toEqual([{ topic: "audit", partitions: [0, 2] }]);
  });

  test("gives up, without throwing, on bytes that are not the format", () => {
    expect(decodeConsumerAssignment(new Uint8Array(0))).toBeUndefined();
    for (let cut = 0; cut < 25; cut++)
      expect(decodeConsumerAssignment(bytes.subarray(0, cut))).toBeUndefined();
    // A topic count far beyond the bytes.
    expect(decodeConsumerAssignment(new Uint8Array([0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0]))).toBeUndefined();
    // A topic name that is not UTF-8.
    const bad = bytes.slice();
    bad[8] = 0xff;
    expect(decodeConsumerAssignment(bad)).toBeUndefined();
  });
});
