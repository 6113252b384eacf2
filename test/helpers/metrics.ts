/** Reading one value out of a Prometheus text scrape, as a test checks it. */
export function metricValue(text: string, name: string): number {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const match = new RegExp(`^${escaped} (\\S+)$`, "m").exec(text);
  if (match === null) throw new Error(`no ${name} in\n${text}`);
  return Number(match[1]);
}
