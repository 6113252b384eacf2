/**
 * Command-line arguments of the benchmark scripts and of the long harnesses (`bun run torture`,
 * `torture:power-loss`, `torture:kafka`): `[section] [--name=value | --name value | --switch]…`,
 * and `--help`.
 *
 * One parser for all of them, and a strict one: an unknown section or option, a missing value, or a
 * number that is not a number (or not a whole number where one is asked) exits with code 2 and the
 * usage line; `--help` prints the usage and exits 0. Each script used to parse for itself and
 * ignore what it did not know, so `--seconds 3` (space form) ran the defaults, or no section at all,
 * and still printed a header that looked like the asked-for run; `bun run torture --help` started
 * the default 1,000 cycles in /tmp, and `--cycles ten` ran none and passed (2026-12-02).
 */

export interface BenchArgsSpec<Name extends string> {
  usage: string;
  /** Allowed sections, the first being the default; undefined: the script takes none. */
  sections?: readonly string[];
  /** Option names (without `--`) and their defaults ("" for one that is unset unless given). */
  options: Record<Name, string>;
  /** Options that take no value. */
  switches?: readonly string[];
}

export interface BenchArgs<Name extends string> {
  section: string;
  text(name: Name): string;
  /** The option as a finite number; exits with the usage line otherwise. */
  number(name: Name): number;
  /** The option as a whole number ≥ `min` (undefined when unset: ""); exits with the usage line otherwise. */
  integer(name: Name, min?: number): number | undefined;
  /** Whether the switch was given. */
  has(name: string): boolean;
}

export function parseBenchArgs<Name extends string>(
  spec: BenchArgsSpec<Name>,
  argv: readonly string[] = process.argv.slice(2),
): BenchArgs<Name> {
  const refuse = (reason: string): never => {
    console.error(`${reason}\nusage: ${spec.usage}`);
    process.exit(2);
  };
  const values = new Map<string, string>(Object.entries(spec.options));
  const switches = new Set<string>();
  let section: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i]!;
    if (argument === "--help" || argument === "-h") {
      console.log(`usage: ${spec.usage}`);
      process.exit(0);
    }
    if (!argument.startsWith("--")) {
      if (spec.sections === undefined || !spec.sections.includes(argument)) {
        refuse(`unknown section ${JSON.stringify(argument)}`);
      }
      if (section !== undefined) refuse(`one section at a time (got ${section} and ${argument})`);
      section = argument;
      continue;
    }
    const equals = argument.indexOf("=");
    const name = equals < 0 ? argument.slice(2) : argument.slice(2, equals);
    if (spec.switches?.includes(name)) {
      if (equals >= 0) refuse(`--${name} takes no value`);
      switches.add(name);
      continue;
    }
    if (!values.has(name)) refuse(`unknown option --${name}`);
    const value = equals < 0 ? argv[++i] : argument.slice(equals + 1);
    if (value === undefined || value === "" || (equals < 0 && value.startsWith("--")))
      refuse(`--${name} needs a value`);
    values.set(name, value!);
  }
  return {
    section: section ?? spec.sections?.[0] ?? "",
    text: (name) => values.get(name)!,
    number: (name) => {
      const value = Number(values.get(name));
      if (!Number.isFinite(value)) refuse(`--${name} must be a number, got ${values.get(name)}`);
      return value;
    },
    integer: (name, min = 0) => {
      const text = values.get(name)!;
      if (text === "") return undefined;
      const value = Number(text);
      if (!Number.isSafeInteger(value) || value < min)
        refuse(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(text)}`);
      return value;
    },
    has: (name) => switches.has(name),
  };
}
