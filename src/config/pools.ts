/**
 * BROKER_POOLS: named warm pools beside the default one, each with its own image and size, and what
 * its sessions are prepared with before they become AVAILABLE (files in the working directory,
 * startup commands, environment). The value is JSON, or the path of a JSON file (anything that does
 * not start with `{` or `[`). docs/pool.md ("Named and prepared pools") shows the format.
 */
import fs from 'node:fs';
import { BrokerError, errorMessage } from '../common/errors';
import { parseStartupCommands, parseWorkdirFiles } from '../core/session/sessionInput';
import type { WorkdirFile } from '../core/ports/backend';
import { SESSION_NETWORKS, sessionNetwork, type SessionNetwork } from './isolationConfig';
import { bytes } from './envValues';

export interface PoolSpec {
  name: string;
  /** Docker: the image of its containers. Local: a name only (docs/lifecycle.md: what an image means locally). */
  image: string;
  containers: number;
  sessionsPerContainer: number;
  /** Written into every session's working directory before it becomes AVAILABLE. */
  files: WorkdirFile[];
  /** Run in every session, in order, before it becomes AVAILABLE (a non-zero exit marks it BROKEN). */
  startupCommands: string[];
  /** Set in the environment of its containers (Docker) or shells (local). */
  env: Record<string, string>;
  /**
   * Every release replaces the session's container with a fresh one (in the background), so no lease
   * sees what an earlier one left outside its working directory. Default: on for one session per
   * container (the pools the lifecycle API serves sandboxes from), off otherwise.
   */
  freshContainer: boolean;
  /** Its sessions' network (docker, isolated: docs/isolation.md); absent: BROKER_SESSION_NETWORK's. */
  network?: SessionNetwork;
  /** Each of its sessions' memory and CPUs (docker: cgroups/sessionUsage.ts); absent: BROKER_SESSION_MEMORY's and BROKER_SESSION_CPUS'. */
  sessionLimits?: { memoryBytes?: number; cpus?: number };
}

export const POOL_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KNOWN_FIELDS = ['image', 'containers', 'sessions_per_container', 'files', 'startup_commands', 'env', 'fresh_container', 'network', 'session_memory', 'session_cpus'];
/** The largest pool, as BROKER_CONTAINERS and BROKER_SESSIONS_PER_CONTAINER bound the default one. */
const MAX_CONTAINERS = 4096;
const MAX_SESSIONS_PER_CONTAINER = 1024;

export class PoolConfigError extends Error {}

/** `raw`: BROKER_POOLS as given (trimmed); `defaultImage`: BROKER_IMAGE, for pools that name none. */
export function parsePools(raw: string | undefined, defaultImage: string, maxCommandBytes: number): PoolSpec[] {
  if (raw === undefined || raw.trim() === '') return [];
  const text = raw.trim();
  let json: string;
  if (text.startsWith('{') || text.startsWith('[')) {
    json = text;
  } else {
    try {
      json = fs.readFileSync(text, 'utf8');
    } catch (err) {
      throw new PoolConfigError(`BROKER_POOLS names the file '${text}', which cannot be read (${errorMessage(err)}); give JSON or a readable file`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    throw new PoolConfigError(`BROKER_POOLS is not valid JSON (${errorMessage(err)})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new PoolConfigError('BROKER_POOLS must be a JSON object of pool name -> pool, e.g. {"py": {"image": "python:3.12", "containers": 4}}');
  }
  return Object.entries(parsed as Record<string, unknown>).map(([name, value]) => parsePool(name, value, defaultImage, maxCommandBytes));
}

function parsePool(name: string, value: unknown, defaultImage: string, maxCommandBytes: number): PoolSpec {
  const where = `BROKER_POOLS.${name}`;
  if (!POOL_NAME.test(name)) throw new PoolConfigError(`BROKER_POOLS: pool name '${name}' must be 1-32 of a-z, 0-9, '_', '-' (starting with a letter or digit)`);
  if (name === 'default') throw new PoolConfigError("BROKER_POOLS: 'default' names the pool of BROKER_CONTAINERS and BROKER_IMAGE; choose another name");
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new PoolConfigError(`${where} must be an object`);
  const pool = value as Record<string, unknown>;
  const unknown = Object.keys(pool).filter((k) => !KNOWN_FIELDS.includes(k));
  if (unknown.length > 0) throw new PoolConfigError(`${where}: unknown field(s) ${unknown.join(', ')}; known: ${KNOWN_FIELDS.join(', ')}`);
  const image = pool.image ?? defaultImage;
  if (typeof image !== 'string' || image.trim() === '') throw new PoolConfigError(`${where}.image must be a non-empty string`);
  const containers = count(pool.containers, 1, MAX_CONTAINERS, `${where}.containers`);
  const sessionsPerContainer = count(pool.sessions_per_container, 1, MAX_SESSIONS_PER_CONTAINER, `${where}.sessions_per_container`);
  let prepared;
  try {
    const limits = { defaultTimeoutSeconds: 30, maxTimeoutSeconds: 30, maxCommandBytes };
    prepared = { files: parseWorkdirFiles(pool.files), startupCommands: parseStartupCommands(pool.startup_commands, limits) };
  } catch (err) {
    throw new PoolConfigError(`${where}: ${err instanceof BrokerError ? err.detail : errorMessage(err)}`);
  }
  const fresh = pool.fresh_container ?? sessionsPerContainer === 1;
  if (typeof fresh !== 'boolean') throw new PoolConfigError(`${where}.fresh_container must be true or false`);
  // A fresh container for one lease would take the others' sessions with the old one.
  if (fresh && sessionsPerContainer > 1) throw new PoolConfigError(`${where}.fresh_container needs sessions_per_container 1 (got ${sessionsPerContainer})`);
  const network = pool.network === undefined ? undefined : sessionNetwork(pool.network);
  if (network === null) throw new PoolConfigError(`${where}.network must be one of ${SESSION_NETWORKS.join(', ')}, got ${JSON.stringify(pool.network)}`);
  return { name, image: image.trim(), containers, sessionsPerContainer, files: prepared.files, startupCommands: prepared.startupCommands, env: envOf(pool.env, where), freshContainer: fresh, ...(network ? { network } : {}), ...sessionLimitsOf(pool, where) };
}

/** `session_memory` (bytes, or a size like "512m"; 0: none) and `session_cpus` (cores, above 0). */
function sessionLimitsOf(pool: Record<string, unknown>, where: string): Pick<PoolSpec, 'sessionLimits'> {
  if (pool.session_memory === undefined && pool.session_cpus === undefined) return {};
  const limits: NonNullable<PoolSpec['sessionLimits']> = {};
  if (pool.session_memory !== undefined) {
    if (typeof pool.session_memory !== 'number' && typeof pool.session_memory !== 'string') throw new PoolConfigError(`${where}.session_memory must be bytes or a size like "512m"`);
    try {
      limits.memoryBytes = bytes({ session_memory: String(pool.session_memory) }, 'session_memory', 0, { zeroIsOff: true });
    } catch (err) {
      throw new PoolConfigError(`${where}.${errorMessage(err)}`);
    }
  }
  if (pool.session_cpus !== undefined) {
    if (typeof pool.session_cpus !== 'number' || !(pool.session_cpus > 0)) throw new PoolConfigError(`${where}.session_cpus must be a number of cores above 0, got ${JSON.stringify(pool.session_cpus)}`);
    limits.cpus = pool.session_cpus;
  }
  return { sessionLimits: limits };
}

function count(value: unknown, dflt: number, max: number, where: string): number {
  if (value === undefined) return dflt;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) throw new PoolConfigError(`${where} must be an integer between 1 and ${max}, got ${JSON.stringify(value)}`);
  return value;
}

function envOf(value: unknown, where: string): Record<string, string> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new PoolConfigError(`${where}.env must be an object of NAME -> string`);
  const env: Record<string, string> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (!ENV_NAME.test(key)) throw new PoolConfigError(`${where}.env: '${key}' is not a valid variable name`);
    if (typeof v !== 'string' || v.includes('\0')) throw new PoolConfigError(`${where}.env.${key} must be a string without NUL bytes`);
    env[key] = v;
  }
  return env;
}
