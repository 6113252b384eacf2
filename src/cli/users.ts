/**
 * `booblik-cli users add|remove|list`: edits the broker's users file (src/broker/users-file.ts)
 * offline, and the CLI's own login (`--user`) for every command that talks to a broker.
 *
 * Passwords never come from the command line: anyone on the machine can read a process's argv
 * (`ps`, /proc/<pid>/cmdline). They come from `--password-file <path>`, the BOOBLIK_PASSWORD
 * environment variable (readable only by the same user and root), or, for `users add` only, stdin
 * (the CLI's stdin carries records for `produce`, so a login never reads it). A `--password` flag
 * is refused with that reason rather than taken as "unknown option".
 *
 * The file is rewritten the way the broker's own code writes it (writeUsersFile: temporary file,
 * fsync, rename, directory fsync, mode 0600), so a broker rereading it on SIGHUP sees the old or the
 * new file, never a part. One edit at a time: two `users` commands on the same file at once can
 * lose one of the two changes (each reads, changes and replaces the whole file).
 */
import fs from "node:fs";
import { SCRAM_MECHANISMS, type ScramMechanism } from "../auth/scram.ts";
import { readUsersFile, readUsersFileOrEmpty, setUser, writeUsersFile } from "../broker/users-file.ts";
import { InvalidArgumentError } from "../domain/errors.ts";
import { SCRAM_ITERATIONS_MIN } from "../domain/limits.ts";
import { parseInteger } from "../domain/units.ts";
import { table } from "./output.ts";

export interface CliArguments {
  positional: string[];
  flags: Map<string, string>;
}

/** Makes the error main.ts reports as a usage error (exit 2). */
export type UsageErrorOf = (message: string) => Error;

export const PASSWORD_FROM_ARGV =
  "passwords are never taken from the command line (any user of the machine can read it in ps): " +
  "use --password-file <path> or the BOOBLIK_PASSWORD environment variable";

/**
 * The global options of the CLI's login, added to every command's allowed options. "password" is
 * among them only so that loginOptions refuses it with the reason, not as an unknown option.
 */
export const LOGIN_FLAGS = ["user", "password-file", "mechanism", "password"];

/**
 * Reads a password file: its text without one trailing newline (what `echo secret > file` and
 * editors leave). A password of several lines, or an empty one, is refused.
 */
function passwordOfText(text: string, where: string, usage: UsageErrorOf): string {
  const password = text.replace(/\r?\n$/, "");
  if (password.includes("\n"))
    throw usage(`${where} holds more than one line: the password must be one line`);
  if (password.length === 0) throw usage(`${where} is empty: a password must not be empty`);
  return password;
}

function passwordFromFileOrEnv(flags: Map<string, string>, usage: UsageErrorOf): string | undefined {
  const file = flags.get("password-file");
  if (file !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (error) {
      throw usage(
        `--password-file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
    return passwordOfText(text, `--password-file ${file}`, usage);
  }
  const fromEnv = process.env.BOOBLIK_PASSWORD;
  if (fromEnv !== undefined) {
    if (fromEnv.length === 0) throw usage("BOOBLIK_PASSWORD is empty: a password must not be empty");
    return fromEnv;
  }
  return undefined;
}

function mechanismFlag(flags: Map<string, string>, usage: UsageErrorOf): ScramMechanism | undefined {
  const text = flags.get("mechanism");
  if (text === undefined) return undefined;
  if (!(SCRAM_MECHANISMS as readonly string[]).includes(text)) {
    throw usage(`--mechanism must be one of ${SCRAM_MECHANISMS.join(", ")}, got ${JSON.stringify(text)}`);
  }
  return text as ScramMechanism;
}

/**
 * The CLI's login for commands that talk to a broker: `--user <name>` (or BOOBLIK_USER) with the
 * password from `--password-file` or BOOBLIK_PASSWORD, and `--mechanism` (SCRAM-SHA-256 unless
 * given). Nothing when no user is named. Read before connecting, so a missing password is a usage
 * error (exit 2), not a failed login.
 */
export function loginOptions(
  parsed: CliArguments,
  usage: UsageErrorOf,
): { user?: string; password?: string; mechanism?: ScramMechanism } {
  if (parsed.flags.has("password")) throw usage(PASSWORD_FROM_ARGV);
  const user = parsed.flags.get("user") ?? (process.env.BOOBLIK_USER || undefined);
  const mechanism = mechanismFlag(parsed.flags, usage);
  if (user === undefined) {
    if (parsed.flags.has("password-file") || mechanism !== undefined)
      throw usage("--password-file and --mechanism need --user (or BOOBLIK_USER)");
    return {};
  }
  if (user.length === 0) throw usage("--user must not be empty");
  const password = passwordFromFileOrEnv(parsed.flags, usage);
  if (password === undefined) {
    throw usage(`--user ${user} needs a password: --password-file <path> or BOOBLIK_PASSWORD`);
  }
  return { user, password, ...(mechanism === undefined ? {} : { mechanism }) };
}

/** `users add`: the password from --password-file, BOOBLIK_PASSWORD, or stdin (not a terminal). */
async function passwordToSet(flags: Map<string, string>, usage: UsageErrorOf): Promise<string> {
  const fromFileOrEnv = passwordFromFileOrEnv(flags, usage);
  if (fromFileOrEnv !== undefined) return fromFileOrEnv;
  if (process.stdin.isTTY === true) {
    // Typed at a terminal, it would be echoed on the screen: no prompt without echo here (yet).
    throw usage(
      "users add reads the password from stdin, a file or the environment, not a terminal: " +
        "`booblik-cli users add NAME < file`, --password-file <path> or BOOBLIK_PASSWORD",
    );
  }
  return passwordOfText(await new Response(Bun.stdin.stream()).text(), "the password on stdin", usage);
}

/** `booblik-cli users add|remove|list`; returns the exit code. */
export async function usersCommand(parsed: CliArguments, usage: UsageErrorOf): Promise<number> {
  if (parsed.flags.has("password")) throw usage(PASSWORD_FROM_ARGV);
  const action = parsed.positional[1];
  if (action === undefined || !["add", "remove", "list"].includes(action)) {
    throw usage(
      action === undefined
        ? "missing users action: add, remove or list (see --help)"
        : `unknown users action ${action} (add, remove, list)`,
    );
  }
  for (const name of parsed.flags.keys()) {
    const allowed =
      name === "users-file" ||
      name === "json" ||
      (action === "add" && ["mechanism", "iterations", "password-file"].includes(name));
    if (!allowed) throw usage(`unknown option --${name} for users ${action}`);
  }
  const file = parsed.flags.get("users-file") ?? (process.env.BOOBLIK_USERS_FILE || undefined);
  if (file === undefined) {
    throw usage("users needs --users-file <path> (or BOOBLIK_USERS_FILE): the file the broker reads");
  }
  const json = parsed.flags.has("json");
  const say = (object: unknown, human: string) => console.log(json ? JSON.stringify(object, null, 2) : human);
  const reload = "a broker started with this file rereads it on SIGHUP (kill -HUP <broker pid>)";

  if (action === "list") {
    const users = readUsersFile(file);
    const rows = [...users.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, credentials]) => ({
        name,
        mechanisms: [...credentials.keys()],
        iterations: [...new Set([...credentials.values()].map((c) => c.iterations))],
      }));
    say(
      rows,
      rows.length === 0
        ? "no users"
        : table(
            ["user", "mechanisms", "iterations"],
            rows.map((row) => [row.name, row.mechanisms.join(", "), row.iterations.join(", ")]),
          ),
    );
    return 0;
  }

  const name = parsed.positional[2];
  if (name === undefined) throw usage(`missing user name: booblik-cli users ${action} <name>`);
  if (parsed.positional.length > 3)
    throw usage(`users ${action} takes one name, got ${parsed.positional.length - 2}`);

  if (action === "remove") {
    const users = readUsersFile(file);
    if (!users.delete(name)) throw new InvalidArgumentError(`no user ${JSON.stringify(name)} in ${file}`);
    writeUsersFile(file, users);
    const empty =
      users.size === 0
        ? "; it has no users left: a broker does not start with it, and one that rereads it lets nobody log in"
        : "";
    say(
      { removed: name, users: users.size, file },
      `removed user ${name} from ${file} (${users.size} left${empty}); ${reload}`,
    );
    return 0;
  }

  const mechanism = mechanismFlag(parsed.flags, usage);
  const iterationsText = parsed.flags.get("iterations");
  let iterations: number | undefined;
  if (iterationsText !== undefined) {
    try {
      iterations = parseInteger("--iterations", iterationsText, SCRAM_ITERATIONS_MIN, 2 ** 31 - 1);
    } catch (error) {
      if (error instanceof InvalidArgumentError) throw usage(error.message);
      throw error;
    }
  }
  // The file is read (and checked) before the password: a broken file is reported before any typing.
  const users = readUsersFileOrEmpty(file);
  const password = await passwordToSet(parsed.flags, usage);
  const replaced = users.has(name);
  try {
    setUser(users, name, password, mechanism === undefined ? SCRAM_MECHANISMS : [mechanism], iterations);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw usage(error.message);
    throw error;
  }
  writeUsersFile(file, users);
  const mechanisms = [...users.get(name)!.keys()];
  say(
    { [replaced ? "replaced" : "added"]: name, mechanisms, users: users.size, file },
    `${replaced ? "replaced" : "added"} user ${name} (${mechanisms.join(", ")}) in ${file} (mode 0600, ${users.size === 1 ? "1 user" : `${users.size} users`}); ${reload}`,
  );
  return 0;
}

export const USERS_HELP = `  users add <name> [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]
                [--password-file F]     add (or replace) a user of the broker's users file; the
                                        password from --password-file, BOOBLIK_PASSWORD or stdin,
                                        never the command line; both mechanisms unless one is named
  users remove <name>                   remove a user
  users list                            names and mechanisms (never a secret)
                                        users commands work offline on --users-file <path>
                                        (BOOBLIK_USERS_FILE); the broker rereads it on SIGHUP`;

export const LOGIN_HELP = `  --user NAME          log in as NAME (BOOBLIK_USER) with SCRAM; the password from
                       --password-file F or BOOBLIK_PASSWORD (never the command line);
                       --mechanism SCRAM-SHA-256 (default) | SCRAM-SHA-512
  --tls-ca FILE        speak TLS to a broker started with --tls-cert, trusting the CA in
                       FILE (BOOBLIK_TLS_CA); --tls-servername NAME if its certificate
                       names it otherwise than --broker`;
