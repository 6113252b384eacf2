/**
 * Minimal SVG charts for benchmark results: no dependency, no external service. A line chart of
 * several series over a shared x axis, with axis labels and a legend.
 */

export interface Series {
  name: string;
  points: [number, number][];
}

const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function formatTick(value: number): string {
  if (value >= 1e6) return `${+(value / 1e6).toFixed(2)}M`;
  if (value >= 1e3) return `${+(value / 1e3).toFixed(1)}K`;
  return `${+value.toFixed(2)}`;
}

export function lineChart(options: {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  logX?: boolean;
  width?: number;
  height?: number;
}): string {
  const width = options.width ?? 900;
  const height = options.height ?? 420;
  const left = 80;
  const right = 220;
  const top = 40;
  const bottom = 50;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const all = options.series.flatMap((series) => series.points);
  const xs = all.map(([x]) => (options.logX ? Math.log10(x) : x));
  const xMin = Math.min(...xs, options.logX ? 0 : 0);
  const xMax = Math.max(...xs, xMin + 1);
  const yMax = niceMax(Math.max(...all.map(([, y]) => y), 0));
  const sx = (x: number) => left + (((options.logX ? Math.log10(x) : x) - xMin) / (xMax - xMin)) * plotWidth;
  const sy = (y: number) => top + plotHeight - (y / yMax) * plotHeight;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${left}" y="22" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>`,
    `<line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotHeight}" stroke="#333"/>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const y = (yMax * i) / 5;
    parts.push(
      `<line x1="${left}" y1="${sy(y)}" x2="${left + plotWidth}" y2="${sy(y)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${sy(y) + 4}" text-anchor="end">${formatTick(y)}</text>`,
    );
  }
  for (let i = 0; i <= 6; i++) {
    const raw = xMin + ((xMax - xMin) * i) / 6;
    const x = options.logX ? 10 ** raw : raw;
    parts.push(
      `<text x="${sx(x)}" y="${top + plotHeight + 18}" text-anchor="middle">${formatTick(x)}</text>`,
    );
  }
  parts.push(
    `<text x="${left + plotWidth / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text x="18" y="${top + plotHeight / 2}" text-anchor="middle" transform="rotate(-90 18 ${top + plotHeight / 2})">${escapeXml(options.yLabel)}</text>`,
  );
  options.series.forEach((series, index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    const path = series.points
      .map(([x, y], i) => `${i === 0 ? "M" : "L"}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`)
      .join(" ");
    parts.push(`<path d="${path}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    const legendY = top + 10 + index * 18;
    parts.push(
      `<line x1="${left + plotWidth + 15}" y1="${legendY}" x2="${left + plotWidth + 35}" y2="${legendY}" stroke="${colour}" stroke-width="3"/>`,
      `<text x="${left + plotWidth + 40}" y="${legendY + 4}">${escapeXml(series.name)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n");
}
