/**
 * Reading one setting from the environment: integers, seconds, sizes, flags and port ranges, each
 * checked, with a ConfigError that names the variable and what it accepts.
 */

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

/** Reads `name`, falling back to its alias (the name the pool API's clients set); the broker's own name wins when both are set. */
export function pick(env: Env, name: string, alias?: string): { name: string; raw: string } | undefined {
  const own = env[name];
  if (own !== undefined && own.trim() !== '') return { name, raw: own.trim() };
  if (alias) {
    const aliased = env[alias];
    if (aliased !== undefined && aliased.trim() !== '') return { name: alias, raw: aliased.trim() };
  }
  return undefined;
}

export function int(env: Env, name: string, dflt: number, opts: { min?: number; max?: number; alias?: string } = {}): number {
  const v = pick(env, name, opts.alias);
  if (!v) return dflt;
  const min = opts.min ?? 1;
  if (!/^\d+$/.test(v.raw)) throw new ConfigError(`${v.name} must be an integer >= ${min}, got '${v.raw}'`);
  const n = Number(v.raw);
  if (n < min || (opts.max !== undefined && n > opts.max)) {
    throw new ConfigError(`${v.name} must be between ${min} and ${opts.max ?? 'unbounded'}, got ${n}`);
  }
  return n;
}

/** Seconds (a positive float, as the pool API's timeouts are) converted to milliseconds. */
export function seconds(env: Env, name: string, dfltSeconds: number, alias?: string): number {
  const v = pick(env, name, alias);
  if (!v) return dfltSeconds * 1000;
  const n = Number(v.raw);
  if (!/^\d+(\.\d+)?$/.test(v.raw) || !Number.isFinite(n) || n <= 0) {
    throw new ConfigError(`${v.name} must be a positive number of seconds, got '${v.raw}'`);
  }
  return Math.round(n * 1000);
}

/** Docker-style sizes: 512m, 2g, 1024k, or plain bytes. */
export function bytes(env: Env, name: string, dflt: number, opts: { zeroIsOff?: boolean; minBytes?: number } = {}): number {
  const v = pick(env, name);
  if (!v) return dflt;
  if (opts.zeroIsOff && v.raw === '0') return 0;
  const m = /^(\d+(?:\.\d+)?)([kmg]?)b?$/i.exec(v.raw);
  if (!m) throw new ConfigError(`${name} must be a size like 512m or 2g, got '${v.raw}'`);
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2].toLowerCase() as '' | 'k' | 'm' | 'g'];
  const n = Math.round(Number(m[1]) * unit);
  if (opts.minBytes !== undefined) {
    if (n < opts.minBytes) throw new ConfigError(`${name} must be at least ${opts.minBytes} bytes, got '${v.raw}'`);
  } else if (n < 6 * 1024 * 1024) {
    throw new ConfigError(`${name} must be at least 6m (Docker's minimum), got '${v.raw}'`);
  }
  return n;
}

export function positiveFloat(env: Env, name: string, dflt: number): number {
  const v = pick(env, name);
  if (!v) return dflt;
  const n = Number(v.raw);
  if (!/^\d+(\.\d+)?$/.test(v.raw) || n <= 0) throw new ConfigError(`${name} must be a positive number, got '${v.raw}'`);
  return n;
}

/** `FIRST-LAST` (or one port): the sandboxes' ports. */
export function portRange(env: Env, name: string, dflt: { first: number; last: number }): { first: number; last: number } {
  const v = pick(env, name);
  if (!v) return dflt;
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(v.raw);
  const first = m ? Number(m[1]) : NaN;
  const last = m ? Number(m[2] ?? m[1]) : NaN;
  if (!m || first < 1 || last > 65535 || first > last) throw new ConfigError(`${name} must be a port range like 8001-8099 (1 to 65535, first <= last), got '${v.raw}'`);
  return { first, last };
}

export function flag(env: Env, name: string, dflt = false): boolean {
  const v = (env[name] ?? '').trim().toLowerCase();
  if (v === '') return dflt;
  if (v === '0' || v === 'false' || v === 'no') return false;
  if (v === '1' || v === 'true' || v === 'yes') return true;
  throw new ConfigError(`${name} must be 1 or 0, got '${env[name]}'`);
}
