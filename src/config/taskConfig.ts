/**
 * Settings of the task sandboxes: each a container of its own running the task daemon
 * and the Pi coding agent. Resolved with the rest of the configuration (config.ts), validated the same
 * way. The LLM keys are the only secrets here, and the configuration does not hold them: `keys` reads
 * them afresh at each model call the relay makes, so a rotated key takes effect at the next call.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, int, seconds, type Env } from './envValues';

export const KEY_NAMES = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'] as const;
export type KeyName = (typeof KEY_NAMES)[number];
export type TaskCredentials = Partial<Record<KeyName, string>>;

/**
 * Where the relay gets the LLM keys, at each call: `<NAME>_FILE` (a file the operator or a secret
 * manager rewrites to rotate the key), else `<NAME>` of the broker's environment. A function, not a
 * value: the configuration never holds a key, so nothing that prints it can print one.
 */
export interface TaskKeys {
  read(): TaskCredentials;
}

export interface TaskConfig {
  /** BROKER_TASK_IMAGE: Debian with git, node, the daemon and Pi (scripts/docker-images.sh task). */
  image: string;
  /**
   * BROKER_GIT_BASE_URL: where `org/name` is cloned from. A directory of bare repos (`<dir>/org/name.git`
   * or `<dir>/org/name`, mounted read-only into each sandbox) or an http(s) git server (reached
   * through Core's relay); null: unset, POST /sandboxes answers 501 (`tasks_not_available`).
   */
  gitBase: { kind: 'dir'; path: string } | { kind: 'url'; url: string } | null;
  /** BROKER_ANTHROPIC_BASE_URL and BROKER_OPENAI_BASE_URL: where the relay sends the agent's model calls. */
  anthropicBaseUrl: string;
  openaiBaseUrl: string;
  /** BROKER_TASK_MODEL: `provider/model-id` of a model Pi knows. */
  model: string;
  /** BROKER_TASK_READY_TIMEOUT: how long POST /sandboxes waits for the daemon's /health before its 504. */
  readyTimeoutMs: number;
  /** BROKER_TASK_JOURNAL_EVENTS: events each stream of a sandbox keeps for resuming by cursor. */
  journalEvents: number;
  /** BROKER_TASK_KEEPALIVE: seconds of silence before an SSE keep-alive comment. */
  keepAliveMs: number;
  /** BROKER_TASK_SOCKET_DIR: host directory of the per-sandbox directories holding the daemon's and the relay's sockets. */
  socketDir: string;
  /** BROKER_TASK_NETWORK_MODE: the containers' network (`none` by default: all they reach goes through Core). */
  networkMode: string;
  /** BROKER_TASK_MAX_SANDBOXES: task sandboxes alive at once (503 beyond). */
  maxSandboxes: number;
  /** OPENAI_API_KEY and ANTHROPIC_API_KEY (or their _FILE), read at each model call by the relay only. */
  keys: TaskKeys;
}

/** The variable naming each key's file, spelled out (docs/configuration.md is checked against the names read here). */
const KEY_FILE_NAMES: Record<(typeof KEY_NAMES)[number], string> = { ANTHROPIC_API_KEY: 'ANTHROPIC_API_KEY_FILE', OPENAI_API_KEY: 'OPENAI_API_KEY_FILE' };

const MODEL = /^[a-z0-9-]+\/[A-Za-z0-9._:-]+$/;

export function loadTaskConfig(env: Env): TaskConfig {
  for (const name of KEY_NAMES) {
    const file = (env[KEY_FILE_NAMES[name]] ?? '').trim();
    if (file && !path.isAbsolute(file)) throw new ConfigError(`${name}_FILE must be an absolute path, got '${file}'`);
  }
  const keys: TaskKeys = { read: () => readKeys(env) };
  const model = (env.BROKER_TASK_MODEL ?? '').trim() || defaultModel(keys.read());
  if (!MODEL.test(model)) throw new ConfigError(`BROKER_TASK_MODEL must be 'provider/model-id', got '${model}'`);
  const socketDir = (env.BROKER_TASK_SOCKET_DIR ?? '').trim() || '/run/bash-broker-tasks';
  if (!path.isAbsolute(socketDir)) throw new ConfigError(`BROKER_TASK_SOCKET_DIR must be an absolute path, got '${socketDir}'`);
  return {
    image: (env.BROKER_TASK_IMAGE ?? '').trim() || 'bash-broker-task:latest',
    gitBase: gitBase(env.BROKER_GIT_BASE_URL),
    anthropicBaseUrl: httpUrl(env, 'BROKER_ANTHROPIC_BASE_URL', 'https://api.anthropic.com'),
    openaiBaseUrl: httpUrl(env, 'BROKER_OPENAI_BASE_URL', 'https://api.openai.com/v1'),
    model,
    readyTimeoutMs: seconds(env, 'BROKER_TASK_READY_TIMEOUT', 60),
    journalEvents: int(env, 'BROKER_TASK_JOURNAL_EVENTS', 10_000, { min: 16, max: 1_000_000 }),
    keepAliveMs: seconds(env, 'BROKER_TASK_KEEPALIVE', 15),
    socketDir,
    networkMode: (env.BROKER_TASK_NETWORK_MODE ?? '').trim() || 'none',
    maxSandboxes: int(env, 'BROKER_TASK_MAX_SANDBOXES', 16, { max: 4096 }),
    keys,
  };
}

/**
 * The keys as they are now. A key file that cannot be read counts as no key (the relay then refuses
 * the call, saying which key is missing): a file being replaced must not stop the broker.
 */
function readKeys(env: Env): TaskCredentials {
  const out: TaskCredentials = {};
  for (const name of KEY_NAMES) {
    const file = (env[KEY_FILE_NAMES[name]] ?? '').trim();
    let value = env[name] ?? '';
    if (file) {
      try {
        value = fs.readFileSync(file, 'utf8');
      } catch {
        value = '';
      }
    }
    if (value.trim()) out[name] = value.trim();
  }
  return out;
}

/**
 * Anthropic's model, unless only an OpenAI key is given: then OpenAI's (Pi's own default for that
 * provider), since an agent whose provider has no key fails its first prompt.
 */
function defaultModel(credentials: TaskCredentials): string {
  return credentials.OPENAI_API_KEY && !credentials.ANTHROPIC_API_KEY ? 'openai/gpt-5.4' : 'anthropic/claude-sonnet-4-5';
}

function gitBase(raw: string | undefined): TaskConfig['gitBase'] {
  const value = (raw ?? '').trim();
  if (value === '') return null;
  if (/^https?:\/\//.test(value)) return { kind: 'url', url: value.replace(/\/+$/, '') };
  const dir = value.startsWith('file://') ? value.slice('file://'.length) : value;
  if (!path.isAbsolute(dir)) throw new ConfigError(`BROKER_GIT_BASE_URL must be an absolute directory or an http(s) URL, got '${value}'`);
  return { kind: 'dir', path: dir.replace(/\/+$/, '') || '/' };
}

function httpUrl(env: Env, name: string, dflt: string): string {
  const value = (env[name] ?? '').trim();
  if (value === '') return dflt;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got '${value}'`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`${name} must be an http(s) URL, got '${value}'`);
  return value.replace(/\/+$/, '');
}
