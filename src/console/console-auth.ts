/**
 * Logins to the web console when the broker has users (--users-file): the same users and passwords
 * as the native and Kafka listeners (docs/security.md), checked against their stored SCRAM
 * credentials (src/auth/scram.ts verifyPassword, through auth/password-checks.ts). The page logs in once (POST /console/api/login
 * with a user and a password as JSON) and gets a session cookie; scripts may send HTTP Basic with
 * every request instead.
 *
 * Owns: the sessions, the login and logout answers, the failure counter and the audit lines of the
 * console's logins.
 *
 * Invariants:
 * - A session is a random 256-bit token, kept only in this process's memory and in an HttpOnly,
 *   SameSite=Strict cookie scoped to /console/ (Secure when the listener speaks TLS): page scripts
 *   cannot read it, other sites' pages cannot send it, a restart ends every session.
 * - A session ends after CONSOLE_SESSION_IDLE_MS unused, CONSOLE_SESSION_LIFETIME_MS after its
 *   login, at logout, and at its next use once its user is gone from the users file or has another
 *   password (SIGHUP rereads the file): the check compares the credential it logged in with.
 * - At most CONSOLE_SESSIONS_MAX sessions: a login past it forgets the least recently used.
 * - Every failed login (form or Basic) is counted, audited, and answered after the per-address delay
 *   that the other listeners share (src/auth/login-delays.ts), so guessing through the console is as
 *   slow as through the protocols. The answer never says whether the user exists.
 * - Passwords travel only inside TLS or over loopback: console-http.ts refuses other peers on a
 *   plain listener before this runs.
 */
import { randomBytes } from "node:crypto";
import type { LoginDelays } from "../auth/login-delays.ts";
import { passwordChecks } from "../auth/password-checks.ts";
import type { Users } from "../broker/users-file.ts";
import {
  CONSOLE_LOGIN_BODY_BYTES_MAX,
  CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX,
  CONSOLE_SESSION_IDLE_MS,
  CONSOLE_SESSION_LIFETIME_MS,
  CONSOLE_SESSIONS_MAX,
  PASSWORD_CHECKS_WAITING_MAX,
} from "../domain/limits.ts";
import { JSON_HEADERS, problem } from "./answers.ts";

export const CONSOLE_SESSION_COOKIE = "booblik_console";

export interface ConsoleAuthOptions {
  /** The users as last read (SIGHUP rereads the file). */
  users: () => Users;
  loginDelays: LoginDelays;
  audit: (line: string) => void;
  /** The listener speaks TLS: cookies are marked Secure. */
  secure: boolean;
  nowMs?: () => number;
}

interface Session {
  user: string;
  /** The first stored key of the user's credentials at login: a new password ends the session. */
  credentialKey: string;
  createdAtMs: number;
  lastUsedAtMs: number;
}

/** The outcome of checking a request: the user it acts for, or the answer that refuses it. */
export type ConsoleAuthResult = { user: string } | { refusal: Response };

export class ConsoleAuth {
  /** Failed logins through the console (booblik_authentication_failures_total{listener="console"}). */
  failures = 0;
  /** Map order is least recently used first: a use moves a session to the end. */
  private readonly sessions = new Map<string, Session>();
  /** Per address, the end of its last login check (`check` chains them). */
  private readonly checking = new Map<string, Promise<void>>();
  /** Per address, how many logins are in that chain (CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX). */
  private readonly queued = new Map<string, number>();
  private readonly nowMs: () => number;

  constructor(private readonly options: ConsoleAuthOptions) {
    this.nowMs = options.nowMs ?? (() => Date.now());
  }

  get openSessions(): number {
    return this.sessions.size;
  }

  /** The user a request acts for (its session cookie, or HTTP Basic), or the refusal to send. */
  async authenticate(request: Request, peer: string): Promise<ConsoleAuthResult> {
    const token = cookieValue(request.headers.get("cookie"), CONSOLE_SESSION_COOKIE);
    if (token !== undefined) {
      const user = this.sessionUser(token);
      if (user !== undefined) return { user };
    }
    const basic = basicCredentials(request.headers.get("authorization"));
    if (basic !== undefined) {
      const checked = await this.check(basic.user, basic.password, peer, request.signal);
      if (checked === true) return { user: basic.user };
      if (checked === "busy" || checked === "gone" || checked === "full")
        return { refusal: notChecked(checked, peer) };
      return { refusal: await this.failed(peer, basic.user, "HTTP Basic", checked.delayMs) };
    }
    return {
      refusal: loginRequired(
        request,
        token === undefined ? "log in first" : "the session ended: log in again",
      ),
    };
  }

  /** The user of a live session, or undefined; a use keeps the session alive. */
  sessionUser(token: string): string | undefined {
    const session = this.sessions.get(token);
    if (session === undefined) return undefined;
    const now = this.nowMs();
    const credentials = this.options.users().get(session.user);
    if (
      now - session.lastUsedAtMs > CONSOLE_SESSION_IDLE_MS ||
      now - session.createdAtMs > CONSOLE_SESSION_LIFETIME_MS ||
      credentials === undefined ||
      credentialKeyOf(credentials) !== session.credentialKey
    ) {
      this.sessions.delete(token);
      return undefined;
    }
    session.lastUsedAtMs = now;
    this.sessions.delete(token);
    this.sessions.set(token, session);
    return session.user;
  }

  /** POST /console/api/login, body {"user": …, "password": …}: sets the session cookie. */
  async login(request: Request, peer: string): Promise<Response> {
    const origin = request.headers.get("origin");
    if (origin !== null && !sameOrigin(origin, request)) {
      return problem(403, `a login from another site (Origin ${origin}) is refused`);
    }
    const body = await readBounded(request, CONSOLE_LOGIN_BODY_BYTES_MAX);
    if (body === undefined) {
      return problem(413, `a login body holds at most ${CONSOLE_LOGIN_BODY_BYTES_MAX} bytes`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return problem(400, 'a login is JSON: {"user": "…", "password": "…"}');
    }
    const { user, password } = (parsed ?? {}) as { user?: unknown; password?: unknown };
    if (typeof user !== "string" || typeof password !== "string" || user === "") {
      return problem(400, 'a login is JSON: {"user": "…", "password": "…"}');
    }
    const checked = await this.check(user, password, peer, request.signal);
    if (checked === "busy" || checked === "gone" || checked === "full") return notChecked(checked, peer);
    if (checked !== true) return this.failed(peer, user, "login", checked.delayMs);
    const credentials = this.options.users().get(user)!;
    const token = randomBytes(32).toString("base64url");
    const now = this.nowMs();
    this.sessions.set(token, {
      user,
      credentialKey: credentialKeyOf(credentials),
      createdAtMs: now,
      lastUsedAtMs: now,
    });
    for (const oldest of this.sessions.keys()) {
      if (this.sessions.size <= CONSOLE_SESSIONS_MAX) break;
      this.sessions.delete(oldest);
    }
    this.options.audit(`booblik: audit: user ${JSON.stringify(user)} from ${peer} (console): logged in`);
    return new Response(JSON.stringify({ user }), {
      headers: { ...JSON_HEADERS, "set-cookie": this.cookie(token, CONSOLE_SESSION_LIFETIME_MS / 1000) },
    });
  }

  /** POST /console/api/logout: ends the request's session and clears the cookie. */
  logout(request: Request): Response {
    const token = cookieValue(request.headers.get("cookie"), CONSOLE_SESSION_COOKIE);
    if (token !== undefined) this.sessions.delete(token);
    return new Response(null, { status: 204, headers: { "set-cookie": this.cookie("", 0) } });
  }

  /**
   * Checks a login: true, or the failure's delay (the failure is remembered). One check at a time
   * per address, each after the address's hold (LoginDelays.holdMs): the password check runs on the
   * thread pool, so without the chain every login that waited would be checked at once when the
   * hold ran out. A login that waits for a failure's hold takes a place among the address's
   * waiters ("busy" when they are all taken); one whose client went away meanwhile ("gone": `signal`
   * aborted) checks nothing, so it neither holds the address again nor delays the logins behind it.
   */
  private check(
    user: string,
    password: string,
    peer: string,
    signal: AbortSignal,
  ): Promise<true | { delayMs: number } | "busy" | "gone" | "full"> {
    const delays = this.options.loginDelays;
    const queued = this.queued.get(peer) ?? 0;
    if (queued >= CONSOLE_LOGIN_QUEUE_PER_ADDRESS_MAX) return Promise.resolve("busy");
    this.queued.set(peer, queued + 1);
    const previous = this.checking.get(peer) ?? Promise.resolve();
    const mine = previous.then(async (): Promise<true | { delayMs: number } | "busy" | "gone" | "full"> => {
      // One at a time per address, after its hold (LoginDelays.waitTurn); a login whose client
      // went away checks nothing.
      const turn = await delays.waitTurn(
        peer,
        () => signal.aborted,
        (ms) => Bun.sleep(ms), // the address's login delay, not a wait for a condition
      );
      if (turn !== "go") return turn;
      // One check at a time in the process (auth/password-checks.ts).
      const checked = passwordChecks.check(this.options.users().get(user), password);
      if (checked === undefined) return "full";
      delays.beginCheck(peer);
      try {
        if (await checked) return true;
        return { delayMs: delays.failed(peer) };
      } finally {
        delays.endCheck(peer);
      }
    });
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    void settled.then(() => {
      const left = (this.queued.get(peer) ?? 1) - 1;
      if (left <= 0) this.queued.delete(peer);
      else this.queued.set(peer, left);
    });
    this.checking.set(peer, settled);
    void settled.then(() => {
      if (this.checking.get(peer) === settled) this.checking.delete(peer);
    });
    return mine;
  }

  private async failed(peer: string, user: string, how: string, delayMs: number): Promise<Response> {
    this.failures++;
    this.options.audit(
      `booblik: audit: from ${peer} (console): ${how} as ${JSON.stringify(user)} failed: unknown user or wrong password`,
    );
    await Bun.sleep(delayMs); // the per-address delay of a failed login, not a wait for a condition
    return problem(401, "authentication failed: unknown user or wrong password", { login: true });
  }

  private cookie(token: string, maxAgeSeconds: number): string {
    return (
      `${CONSOLE_SESSION_COOKIE}=${token}; Path=/console/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict` +
      (this.options.secure ? "; Secure" : "")
    );
  }
}

/**
 * 401 for a request without a login. Scripts (no Sec-Fetch-Site header: curl, wget, monitoring) get
 * the standard Basic challenge; a browser's requests do not, so that the page shows its own login
 * form instead of the browser's password dialog.
 */
function loginRequired(request: Request, why: string): Response {
  const headers: Record<string, string> = { ...JSON_HEADERS };
  if (request.headers.get("sec-fetch-site") === null) {
    headers["www-authenticate"] = 'Basic realm="booblik console", charset="UTF-8"';
  }
  return new Response(
    JSON.stringify({
      error: `${why}: this broker has users (--users-file); log in with one of them`,
      login: true,
    }),
    { status: 401, headers },
  );
}

function credentialKeyOf(credentials: ReadonlyMap<string, { storedKey: Uint8Array }>): string {
  const first = credentials.values().next().value;
  return first === undefined ? "" : Buffer.from(first.storedKey).toString("base64");
}

export function cookieValue(header: string | null, name: string): string | undefined {
  if (header === null) return undefined;
  for (const part of header.split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

function basicCredentials(header: string | null): { user: string; password: string } | undefined {
  if (header === null || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon <= 0) return { user: decoded, password: "" };
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The Origin header names the host the request was sent to (same scheme, host and port). */
function sameOrigin(origin: string, request: Request): boolean {
  try {
    const url = new URL(request.url);
    const host = request.headers.get("host");
    return new URL(origin).host === (host ?? url.host);
  } catch {
    return false;
  }
}

/** The body as text, or undefined when it is longer than `maxBytes` (read no further). */
async function readBounded(request: Request, maxBytes: number): Promise<string | undefined> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > maxBytes) return undefined;
  if (request.body === null) return "";
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of request.body) {
    length += chunk.byteLength;
    if (length > maxBytes) return undefined;
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/**
 * The answer to a login that was not checked: too many of its address wait, too many password
 * checks wait in the process, or its client left.
 */
function notChecked(why: "busy" | "gone" | "full", peer: string): Response {
  if (why === "busy")
    return problem(
      429,
      `too many logins from ${peer} are waiting for the delay after its failed ones; try again later`,
    );
  if (why === "full")
    return problem(
      429,
      `too many password checks are waiting (${PASSWORD_CHECKS_WAITING_MAX}); the login was not checked; try again later`,
    );
  return problem(499, "the client went away while its login waited");
}
