/**
 * Settings of images on demand (docs/images.md): which repositories an acquire may name
 * (BROKER_IMAGE_ALLOW), the node's registry credentials (BROKER_REGISTRY_AUTH,
 * BROKER_REGISTRY_AUTH_FILE, read here once), the disk budget, the pulls' time limits and the
 * limits of image pools (their container size, ceiling, idle time and the node's budget).
 */
import fs from 'node:fs';
import path from 'node:path';
import { bytes, ConfigError, int, seconds, type Env } from './envValues';
import type { RegistryCredentials } from '../core/ports/imageStore';

export interface ImageConfig {
  /** Globs of `registry/repository` an acquire may name; empty: on-demand images are off. */
  allow: string[];
  /** Credentials by registry host (`registry.local:5000`, `docker.io`). */
  credentials: Record<string, RegistryCredentials>;
  diskBytes: number;
  pullTimeoutMs: number;
  pullStallMs: number;
  sessionsPerContainer: number;
  maxContainersPerImage: number;
  poolIdleMs: number;
  /** Every pool's containers and sessions on the node (the configured pools' included). */
  nodeMaxContainers: number;
  nodeMaxSessions: number;
  /** Images a node's cluster record names in full (the rest in its Bloom filter). */
  clusterTop: number;
}

/** What the node's configured pools already take of its budget. */
export interface ConfiguredSize {
  containers: number;
  sessions: number;
  sessionsPerContainer: number;
}

export function loadImageConfig(env: Env, configured: ConfiguredSize): ImageConfig {
  const allow = (env.BROKER_IMAGE_ALLOW ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const pattern of allow) {
    if (!/^[A-Za-z0-9._:*?\-/[\]{}!]+$/.test(pattern)) throw new ConfigError(`BROKER_IMAGE_ALLOW: '${pattern}' is not a pattern of registry/repository (letters, digits, . _ - : / and glob characters)`);
  }
  const sessionsPerContainer = int(env, 'BROKER_IMAGE_SESSIONS_PER_CONTAINER', configured.sessionsPerContainer, { max: 1024 });
  const nodeMaxContainers = int(env, 'BROKER_NODE_MAX_CONTAINERS', configured.containers + 16, { max: 100_000 });
  const nodeMaxSessions = int(env, 'BROKER_NODE_MAX_SESSIONS', configured.sessions + 16 * sessionsPerContainer, { max: 10_000_000 });
  if (allow.length > 0 && (nodeMaxContainers <= configured.containers || nodeMaxSessions < configured.sessions + sessionsPerContainer)) {
    throw new ConfigError(
      `BROKER_NODE_MAX_CONTAINERS (${nodeMaxContainers}) and BROKER_NODE_MAX_SESSIONS (${nodeMaxSessions}) leave image pools no room: the configured pools take ${configured.containers} containers and ${configured.sessions} sessions`,
    );
  }
  return {
    allow,
    credentials: loadCredentials(env),
    diskBytes: bytes(env, 'BROKER_IMAGE_DISK', 20 * 1024 ** 3, { minBytes: 1024 * 1024 }),
    pullTimeoutMs: seconds(env, 'BROKER_IMAGE_PULL_TIMEOUT', 600),
    pullStallMs: seconds(env, 'BROKER_IMAGE_PULL_STALL', 60),
    sessionsPerContainer,
    maxContainersPerImage: int(env, 'BROKER_IMAGE_MAX_CONTAINERS_PER_IMAGE', 4, { max: 4096 }),
    poolIdleMs: seconds(env, 'BROKER_IMAGE_POOL_IDLE', 300),
    nodeMaxContainers,
    nodeMaxSessions,
    clusterTop: int(env, 'BROKER_CLUSTER_IMAGES_TOP', 32, { min: 0, max: 1024 }),
  };
}

/** BROKER_REGISTRY_AUTH_FILE's `auths`, then BROKER_REGISTRY_AUTH over them. */
function loadCredentials(env: Env): Record<string, RegistryCredentials> {
  const out: Record<string, RegistryCredentials> = {};
  const file = (env.BROKER_REGISTRY_AUTH_FILE ?? '').trim();
  if (file !== '') {
    if (!path.isAbsolute(file)) throw new ConfigError(`BROKER_REGISTRY_AUTH_FILE must be an absolute path, got '${file}'`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ConfigError(`BROKER_REGISTRY_AUTH_FILE: ${file} is not a readable JSON file (${(err as Error).message})`);
    }
    const auths = (parsed as { auths?: unknown }).auths;
    if (!isObject(auths)) throw new ConfigError(`BROKER_REGISTRY_AUTH_FILE: ${file} has no "auths" object (a Docker config.json)`);
    for (const [host, entry] of Object.entries(auths)) out[registryHost(host)] = credentialsOf(entry, `BROKER_REGISTRY_AUTH_FILE auths.${host}`);
  }
  const raw = (env.BROKER_REGISTRY_AUTH ?? '').trim();
  if (raw !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new ConfigError('BROKER_REGISTRY_AUTH must be a JSON object of registry host -> {"username", "password"}');
    }
    if (!isObject(parsed)) throw new ConfigError('BROKER_REGISTRY_AUTH must be a JSON object of registry host -> {"username", "password"}');
    for (const [host, entry] of Object.entries(parsed)) out[registryHost(host)] = credentialsOf(entry, `BROKER_REGISTRY_AUTH.${host}`);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A config.json key may be a URL (`https://index.docker.io/v1/`): its host, as references name it. */
function registryHost(key: string): string {
  const host = key.replace(/^https?:\/\//, '').replace(/\/.*$/, '');
  return host === 'index.docker.io' || host === 'registry-1.docker.io' ? 'docker.io' : host;
}

/** `{"username", "password"}` or config.json's `{"auth": base64("user:password")}`. */
function credentialsOf(entry: unknown, where: string): RegistryCredentials {
  if (!isObject(entry)) throw new ConfigError(`${where} must be an object with username and password (or auth)`);
  if (typeof entry.username === 'string' && typeof entry.password === 'string') return { username: entry.username, password: entry.password };
  if (typeof entry.auth === 'string') {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  throw new ConfigError(`${where} must have a username and a password, or an auth of base64 "user:password"`);
}
