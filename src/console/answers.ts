/**
 * The console API's JSON answers, shared by its routes (console-http.ts) and its logins
 * (console-auth.ts): never cached, errors as `{"error": "…"}` plus any fields the page reads.
 */
export const JSON_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
};

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
}

export function problem(status: number, message: string, extra: Record<string, unknown> = {}): Response {
  return json({ error: message, ...extra }, status);
}
