/**
 * Command-line options of the long harnesses (`bun run torture`, `torture:power-loss`,
 * `torture:kafka`): `--name value` or `--name=value`, switches without a value, `--help`.
 *
 * Strict, as bench/lib/args.ts is for the benchmarks: an unknown option, a missing value or a number
 * that is not a whole number ≥ its minimum exits with code 2 and the usage. These harnesses used to
 * skip what they did not know, so `bun run torture --help` started the default 1,000 cycles in
 * /tmp (seen 2026-12-02), and `--cycles ten` ran NaN cycles, that is none, and passed.
 */

export interface HarnessArgsSpec {
  usage: string;
  /** Options that take a value, with their defaults (undefined: none unless given). */
  values: Record<string, string | undefined>;
  /** Options without a value. */
  switches?: readonly string[];
}

export interface HarnessArgs {
  text(name: string): string | undefined;
  /** The option as a whole number ≥ `min`, or its default; exits with the usage otherwise. */
  integer(name: string, min?: number): number | undefined;
  has(name: string): boolean;
}

export function parseHarnessArgs(spec: HarnessArgsSpec, argv: readonly string[]): HarnessArgs {
  const refuse = (reason: string): never => {
    console.error(`${reason}\nusage: ${spec.usage}`);
    process.exit(2);
  };
  const values = new Map<string, string | undefined>(Object.entries(spec.values));
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i]!;
    if (argument === "--help" || argument === "-h") {
      console.log(`usage: ${spec.usage}`);
      process.exit(0);
    }
    if (!argument.startsWith("--")) refuse(`unexpected argument ${JSON.stringify(argument)}`);
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
    values.set(name, value);
  }
  return {
    text: (name) => values.get(name),
    integer: (name, min = 0) => {
      const text = values.get(name);
      if (text === undefined) return undefined;
      const value = Number(text);
      if (!Number.isSafeInteger(value) || value < min)
        refuse(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(text)}`);
      return value;
    },
    has: (name) => switches.has(name),
  };
}
