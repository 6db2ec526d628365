/**
 * A bench's command line: node's own `util.parseArgs` (strict: an unknown option or a missing value
 * is an error), with each option declared once as a number in a range, a word of a set, a text, a
 * path or a flag. The usage line is made from the same declarations, so the two cannot drift.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';

export type OptionSpec =
  | { kind: 'int'; min: number; max?: number; what?: string }
  | { kind: 'word'; of: readonly string[] }
  | { kind: 'text'; what: string }
  | { kind: 'path'; what: string }
  | { kind: 'flag' };

type ValueOf<S extends OptionSpec> = S extends { kind: 'int' } ? number : S extends { kind: 'flag' } ? boolean : string;
export type OptionValues<T extends Record<string, OptionSpec>> = { [K in keyof T]?: ValueOf<T[K]> };

function placeholder(spec: OptionSpec): string {
  switch (spec.kind) {
    case 'int':
      return ` ${spec.what ?? 'N'}`;
    case 'word':
      return ` ${spec.of.join('|')}`;
    case 'text':
    case 'path':
      return ` ${spec.what}`;
    case 'flag':
      return '';
  }
}

export function usageOf(command: string, specs: Record<string, OptionSpec>): string {
  return `usage: ${command} [-- ${Object.entries(specs).map(([name, spec]) => `--${name}${placeholder(spec)}`).join(' ')}]`;
}

/**
 * The options given in `argv` (those not given are absent: the caller's plan holds the defaults),
 * each checked against its declaration; a bad one throws naming it, with the usage line.
 */
export function benchOptions<T extends Record<string, OptionSpec>>(command: string, argv: string[], specs: T): OptionValues<T> {
  const usage = usageOf(command, specs);
  const options = Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, { type: spec.kind === 'flag' ? ('boolean' as const) : ('string' as const) }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${usage}`, { cause: err });
  }
  const out: Record<string, string | number | boolean> = {};
  for (const [name, raw] of Object.entries(values)) {
    if (raw === undefined) continue;
    const spec = specs[name];
    if (spec.kind === 'flag') out[name] = raw === true;
    else if (spec.kind === 'int') {
      const n = Number(raw);
      const max = spec.max ?? Number.MAX_SAFE_INTEGER;
      if (!Number.isInteger(n) || n < spec.min || n > max) throw new Error(`--${name}: an integer from ${spec.min}${spec.max === undefined ? ' up' : ` to ${spec.max}`}, got '${String(raw)}'\n${usage}`);
      out[name] = n;
    } else if (spec.kind === 'word') {
      if (!spec.of.includes(String(raw))) throw new Error(`--${name}: one of ${spec.of.join(', ')}, got '${String(raw)}'\n${usage}`);
      out[name] = String(raw);
    } else out[name] = spec.kind === 'path' ? path.resolve(String(raw)) : String(raw);
  }
  return out as OptionValues<T>;
}
