/**
 * Command-line arguments of the benchmark scripts: `[section] [--name=value | --name value]…`.
 *
 * One parser for all of them, and a strict one: an unknown section or option, or a number that is
 * not a number, exits with code 2 and the usage line. Each script used to parse for itself and
 * ignore what it did not know, so `--seconds 3` (space form) ran the defaults, or no section at all,
 * and still printed a header that looked like the asked-for run.
 */

export interface BenchArgsSpec<Name extends string> {
  usage: string;
  /** Allowed sections, the first being the default; undefined: the script takes none. */
  sections?: readonly string[];
  /** Option names (without `--`) and their defaults. */
  options: Record<Name, string>;
}

export interface BenchArgs<Name extends string> {
  section: string;
  text(name: Name): string;
  /** The option as a finite number; exits with the usage line otherwise. */
  number(name: Name): number;
}

export function parseBenchArgs<Name extends string>(
  spec: BenchArgsSpec<Name>,
  argv: string[] = process.argv.slice(2),
): BenchArgs<Name> {
  const refuse = (reason: string): never => {
    console.error(`${reason}\nusage: ${spec.usage}`);
    process.exit(2);
  };
  const values = new Map<string, string>(Object.entries(spec.options));
  let section: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i]!;
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
    if (!values.has(name)) refuse(`unknown option --${name}`);
    const value = equals < 0 ? argv[++i] : argument.slice(equals + 1);
    if (value === undefined || value === "") refuse(`--${name} needs a value`);
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
  };
}
