/**
 * Checks the console's browser tests run on every page: a screenshot with content, labelled
 * controls, readable text contrast (WCAG 2.2 AA, 1.4.3) and targets large enough to touch
 * (WCAG 2.2 AA, 2.5.8). Each works on the rendered page (computed styles and layout boxes), so it
 * checks what a user gets, not what the stylesheet meant.
 */
import { expect } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** WCAG AA contrast for normal text; the check applies it to all text (large text needs only 3:1). */
export const CONTRAST_MIN = 4.5;
/** WCAG 2.5.8 (AA): a pointer target is at least 24 × 24 CSS pixels. */
export const TARGET_MIN_PX = 24;

/**
 * Saves a screenshot as `dir/name.png` and checks it has content: decoded in the browser, at least
 * 2 % of its pixels differ from its most common colour (a blank or error-free white page fails).
 */
export async function screenshot(browser: Browser, page: Page, dir: string, name: string): Promise<void> {
  const file = path.join(dir, `${name}.png`);
  const png = await page.screenshot({ path: file, fullPage: true });
  expect(fs.statSync(file).size).toBeGreaterThan(0);
  const checker = await browser.newPage();
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

/** Every form control has an accessible name (a label, aria-label, or its own text). */
export async function expectLabelledControls(page: Page): Promise<void> {
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

/**
 * Every visible element that holds text directly has a contrast ratio of at least CONTRAST_MIN
 * between its computed colour and the colour behind it (its own background, else the nearest
 * ancestor's that is not transparent, blended over white). Disabled controls are exempt (WCAG
 * 1.4.3 exempts inactive components). Returns how many elements were checked, so a caller can see
 * the check saw the page.
 */
export async function expectReadableContrast(page: Page): Promise<number> {
  const { checked, failures } = await page.evaluate((minimum) => {
    type Rgba = [number, number, number, number];
    const parse = (css: string): Rgba => {
      const numbers = css.match(/[\d.]+/g)?.map(Number) ?? [0, 0, 0];
      return [numbers[0]!, numbers[1]!, numbers[2]!, numbers[3] ?? 1];
    };
    const over = (top: Rgba, bottom: Rgba): Rgba => {
      const a = top[3];
      return [
        top[0] * a + bottom[0] * (1 - a),
        top[1] * a + bottom[1] * (1 - a),
        top[2] * a + bottom[2] * (1 - a),
        1,
      ];
    };
    const background = (element: Element): Rgba => {
      const layers: Rgba[] = [];
      for (let at: Element | null = element; at !== null; at = at.parentElement) {
        const colour = parse(getComputedStyle(at).backgroundColor);
        if (colour[3] > 0) layers.push(colour);
        if (colour[3] >= 1) break;
      }
      let result: Rgba = [255, 255, 255, 1];
      for (const layer of layers.reverse()) result = over(layer, result);
      return result;
    };
    const luminance = ([r, g, b]: Rgba) => {
      const channel = (c: number) => {
        const s = c / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    };
    const failures: string[] = [];
    let checked = 0;
    for (const element of document.body.querySelectorAll("*")) {
      const hasText = [...element.childNodes].some(
        (node) => node.nodeType === Node.TEXT_NODE && node.textContent!.trim() !== "",
      );
      if (!hasText || element.closest("svg") !== null) continue;
      if ((element as HTMLButtonElement).disabled === true) continue;
      const box = element.getBoundingClientRect();
      const style = getComputedStyle(element);
      if (box.width === 0 || box.height === 0 || style.visibility === "hidden") continue;
      // The skip link sits off-screen until focused.
      if (box.right < 0 || box.bottom < 0) continue;
      const back = background(element);
      const fore = over(parse(style.color), back);
      const [light, dark] = [luminance(fore), luminance(back)].sort((a, b) => b - a) as [number, number];
      const ratio = (light + 0.05) / (dark + 0.05);
      checked++;
      if (ratio < minimum) {
        failures.push(
          `${element.tagName.toLowerCase()} "${element.textContent!.trim().slice(0, 40)}": ${style.color} on ${back.join(",")} = ${ratio.toFixed(2)}:1`,
        );
      }
    }
    return { checked, failures };
  }, CONTRAST_MIN);
  expect(failures).toEqual([]);
  expect(checked).toBeGreaterThan(0);
  return checked;
}

/**
 * Every visible link, button and form control is at least TARGET_MIN_PX in both directions. A
 * control inside its <label> is measured by the label (a click on the label operates it). Links
 * inside running text (a <p> of several words) are exempt, as WCAG 2.5.8's "inline" exception says.
 */
export async function expectTouchTargets(page: Page): Promise<number> {
  const { checked, failures } = await page.evaluate((minimum) => {
    const failures: string[] = [];
    let checked = 0;
    for (const element of document.querySelectorAll("a[href], button, input, select, textarea")) {
      const style = getComputedStyle(element);
      let box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || style.visibility === "hidden") continue;
      if (box.right < 0 || box.bottom < 0) continue;
      if (element.tagName === "A" && element.parentElement?.tagName === "P") {
        const sentence = element.parentElement.textContent ?? "";
        if (sentence.trim() !== element.textContent?.trim()) continue;
      }
      const label = element.closest("label");
      if (label !== null) box = label.getBoundingClientRect();
      checked++;
      if (box.width < minimum || box.height < minimum) {
        failures.push(
          `${element.outerHTML.slice(0, 80)}: ${box.width.toFixed(1)} × ${box.height.toFixed(1)} px`,
        );
      }
    }
    return { checked, failures };
  }, TARGET_MIN_PX);
  expect(failures).toEqual([]);
  expect(checked).toBeGreaterThan(0);
  return checked;
}
