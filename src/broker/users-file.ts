/**
 * The users file: who may log in, as SCRAM credentials (salt, iterations, StoredKey, ServerKey per
 * mechanism), never a password. The broker reads it at start and on SIGHUP; `booblik-cli users`
 * edits it offline.
 *
 *   { "version": 1,
 *     "users": { "alice": { "SCRAM-SHA-256": { "salt": "<base64>", "iterations": 4096,
 *                                             "storedKey": "<base64>", "serverKey": "<base64>" },
 *                           "SCRAM-SHA-512": { … } } } }
 *
 * Invariants: written atomically (temporary file, fsync, rename, directory fsync) with mode 0600,
 * so a crash leaves the old or the new file and no other user can read it at any moment; a file that
 * does not parse is an error naming what is wrong, never "no users" (which would lock everyone out
 * or, worse, be mistaken for an open broker).
 */
import { readTextFile, writeFileAtomicallyNow } from "../../ffi/file.ts";
import {
  deriveCredential,
  SCRAM_MECHANISMS,
  type ScramCredential,
  type ScramMechanism,
} from "../auth/scram.ts";
import { InvalidArgumentError } from "../domain/errors.ts";

const USERS_FILE_VERSION = 1;
/** Names a person can type and a log line can show; no ',' or '=' (SCRAM escapes them anyway). */
const USER_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

export type Users = Map<string, Map<ScramMechanism, ScramCredential>>;

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

function bytesField(value: unknown, what: string): Uint8Array {
  if (typeof value !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length === 0) {
    throw new InvalidArgumentError(`${what} must be base64`);
  }
  return new Uint8Array(Buffer.from(value, "base64"));
}

/** Parses a users file's text; `where` names it in errors. */
export function parseUsers(text: string, where: string): Users {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`${where} is not JSON: ${(error as Error).message}`);
  }
  const file = parsed as { version?: unknown; users?: unknown };
  if (file === null || typeof file !== "object" || file.version !== USERS_FILE_VERSION) {
    throw new InvalidArgumentError(`${where}: expected {"version": ${USERS_FILE_VERSION}, "users": {…}}`);
  }
  if (file.users === null || typeof file.users !== "object" || Array.isArray(file.users)) {
    throw new InvalidArgumentError(`${where}: "users" must be an object`);
  }
  const users: Users = new Map();
  for (const [name, entry] of Object.entries(file.users as Record<string, unknown>)) {
    if (!USER_NAME.test(name))
      throw new InvalidArgumentError(`${where}: user name ${JSON.stringify(name)} is not allowed`);
    if (entry === null || typeof entry !== "object")
      throw new InvalidArgumentError(`${where}: user ${name} must be an object`);
    const credentials = new Map<ScramMechanism, ScramCredential>();
    for (const [mechanism, value] of Object.entries(entry as Record<string, unknown>)) {
      if (!(SCRAM_MECHANISMS as readonly string[]).includes(mechanism)) {
        throw new InvalidArgumentError(
          `${where}: user ${name}: unknown mechanism ${JSON.stringify(mechanism)}`,
        );
      }
      const c = value as { salt?: unknown; iterations?: unknown; storedKey?: unknown; serverKey?: unknown };
      const what = `${where}: user ${name} ${mechanism}`;
      if (typeof c.iterations !== "number" || !Number.isInteger(c.iterations) || c.iterations < 1) {
        throw new InvalidArgumentError(`${what}: iterations must be a positive integer`);
      }
      credentials.set(mechanism as ScramMechanism, {
        salt: bytesField(c.salt, `${what} salt`),
        iterations: c.iterations,
        storedKey: bytesField(c.storedKey, `${what} storedKey`),
        serverKey: bytesField(c.serverKey, `${what} serverKey`),
      });
    }
    users.set(name, credentials);
  }
  return users;
}

/** Reads the users file at `path`; a missing file is an error (a typo must not open the broker). */
export function readUsersFile(path: string): Users {
  const text = readTextFile(path);
  if (text === undefined) throw new InvalidArgumentError(`users file ${path} does not exist`);
  return parseUsers(text, `users file ${path}`);
}

/** Reads it, or an empty set when it does not exist yet (for `users add`). */
export function readUsersFileOrEmpty(path: string): Users {
  return readTextFile(path) === undefined ? new Map() : readUsersFile(path);
}

export function writeUsersFile(path: string, users: Users): void {
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of [...users.keys()].sort()) {
    const entry: Record<string, unknown> = {};
    for (const [mechanism, c] of users.get(name)!) {
      entry[mechanism] = {
        salt: base64(c.salt),
        iterations: c.iterations,
        storedKey: base64(c.storedKey),
        serverKey: base64(c.serverKey),
      };
    }
    out[name] = entry;
  }
  writeFileAtomicallyNow(
    path,
    `${JSON.stringify({ version: USERS_FILE_VERSION, users: out }, null, 2)}\n`,
    `${path}.tmp`,
    0o600,
  );
}

/**
 * Adds (or replaces) a user with credentials for `mechanisms` (by default every one), each with
 * `iterations` PBKDF2 rounds (SCRAM_ITERATIONS_DEFAULT unless given; fewer than
 * SCRAM_ITERATIONS_MIN is refused).
 */
export function setUser(
  users: Users,
  name: string,
  password: string,
  mechanisms: readonly ScramMechanism[] = SCRAM_MECHANISMS,
  iterations?: number,
): void {
  if (!USER_NAME.test(name)) {
    throw new InvalidArgumentError(
      `user name must be 1-64 characters of A-Z a-z 0-9 . _ @ -, got ${JSON.stringify(name)}`,
    );
  }
  if (password.length === 0) throw new InvalidArgumentError("the password must not be empty");
  users.set(
    name,
    new Map(
      mechanisms.map((mechanism) => [
        mechanism,
        deriveCredential(mechanism, password, undefined, iterations),
      ]),
    ),
  );
}
