import { parseArgs } from 'node:util';

/** A benchmark's flags: each is a value (`--runs 5`) or a switch (`--profile`). */
export type FlagSpec = Record<string, { type: 'string' | 'boolean'; help: string }>;

type Parsed<T extends FlagSpec> = { [K in keyof T]?: T[K]['type'] extends 'boolean' ? boolean : string };

/**
 * Parses a benchmark's command line with node's parseArgs (an unknown flag or a missing value is an
 * error that names it); `--help` prints the usage and each flag's help, then exits.
 */
export function benchFlags<T extends FlagSpec>(command: string, spec: T, argv = process.argv.slice(2)): Parsed<T> {
  const usage = () =>
    [`usage: ${command} [flags]`, ...Object.entries(spec).map(([name, flag]) => `  --${name}${flag.type === 'string' ? ' VALUE' : ''}  ${flag.help}`)].join('\n');
  let parsed: { values: Record<string, string | boolean | undefined> };
  try {
    parsed = parseArgs({ args: argv, options: { ...spec, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false });
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage()}`);
    process.exit(2);
  }
  if (parsed.values.help) {
    console.log(usage());
    process.exit(0);
  }
  return parsed.values as Parsed<T>;
}

/** A positive whole number; accepts 1_000_000, 100k and 1M. */
export function count(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Math.floor(Number(text.replace(/_/g, '').replace(/k$/i, '000').replace(/m$/i, '000000')));
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${flag} wants a positive number, got ${text}`);
  return value;
}

/** A comma-separated list of positive whole numbers (see count). */
export function counts(text: string | undefined, flag: string, fallback: number[]): number[] {
  return text === undefined ? fallback : text.split(',').map((part) => count(part.trim(), flag, 0));
}

/** A non-negative number (fractions allowed), for warm-up counts and depths. */
export function amount(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${flag} wants a number of at least 0, got ${text}`);
  return value;
}

/** A comma-separated list of names, each one of `allowed`. */
export function names<N extends string>(text: string | undefined, flag: string, allowed: readonly N[], fallback: N[]): N[] {
  if (text === undefined) return fallback;
  const listed = text.split(',').map((part) => part.trim()).filter(Boolean);
  const unknown = listed.filter((name) => !allowed.includes(name as N));
  if (unknown.length) throw new Error(`--${flag}: unknown ${unknown.join(', ')}; choose from ${allowed.join(', ')}`);
  return listed as N[];
}
