/**
 * Test harness: a real broker on 127.0.0.1:0 with a real backend, and a small undici client.
 * The backend comes from BROKER_TEST_BACKEND (local by default), so one suite runs against each.
 */
import os from 'node:os';
import path from 'node:path';
import { request, Agent } from 'undici';
import { loadConfig } from '../../src/config/config';
import { Broker, createBackend, type BrokerOverrides } from '../../src/broker';
import { configureLogger } from '../../src/common/logger';
import type { SessionBackend } from '../../src/core/ports/backend';
import { LocalBackend } from '../../src/backends/local/localBackend';
import { eventually } from '../../devtools/eventually';
import type { HttpResult } from '../../devtools/httpCall';

// The waits and answers the dev tools (devtools/) use too: every test takes them from here.
export { eventually, type HttpResult };

export interface TestBroker {
  url: string;
  broker: Broker;
  backend: SessionBackend;
  /** The local backend's instance id (its shells carry BROKER_SESSION_TAG=<instance>-...); null otherwise. */
  localInstance: string | null;
  /** Sessions the pool was configured with. */
  total: number;
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  postRaw(path: string, raw: string | Buffer, headers?: Record<string, string>): Promise<HttpResult>;
  /** A POST the caller can abort (a client that goes away while it waits). */
  postAbortable(path: string, body: unknown, signal: AbortSignal): Promise<HttpResult>;
  get(path: string): Promise<HttpResult>;
  acquire(body?: unknown): Promise<string>;
  exec(id: string, command: string, timeout?: number): Promise<ExecBody>;
  /** The whole answer, termination facts asked for. */
  execFull(id: string, command: string, timeout?: number, extra?: Record<string, unknown>): Promise<ExecBody & ExecFacts>;
  release(id: string): Promise<void>;
  health(): Promise<Health>;
  metrics(): Promise<string>;
  /** Waits until the pool is healed: full, healthy, every session AVAILABLE (waitFullPool). */
  waitAllAvailable(timeoutMs?: number): Promise<Health>;
  /** Any method, path, body and headers, as sent (for tests of malformed requests). */
  request(method: string, path: string, body?: string | Buffer, headers?: Record<string, string>): Promise<HttpResult>;
  close(): Promise<void>;
}

export interface ExecBody {
  status: 'Success' | 'Failed';
  stdout: string;
  stderr: string;
  return_code: number;
  truncated?: boolean;
}

/** The termination facts an execute answer carries after the four base fields (docs/pool.md, For rollout clients). */
export interface ExecFacts {
  timed_out: boolean;
  interrupted: boolean;
  signal: string | null;
  oom_killed: boolean | null;
  duration_ms: number;
  cpu_ms: number | null;
  max_rss_kb: number | null;
  truncated: boolean;
  truncated_bytes: { stdout: number; stderr: number };
  /** With a network of its own (docker, isolated): what its egress policy refused during the command. */
  egress_refused?: number | null;
  egress_refused_to?: string[] | null;
}

export interface Health {
  status: 'healthy' | 'degraded' | 'unhealthy';
  total_sessions: number;
  available_sessions: number;
  in_use_sessions: number;
  cleaning_sessions: number;
  broken_sessions: number;
  healthy_containers: number;
  unhealthy_containers: number;
  /** After the first eight fields (docs/monitoring.md, GET /health). */
  queue_length: number;
  acquire_wait_p50_ms: number | null;
  reclaimed_sessions: { idle_timeout: number; lease_ttl: number; operator: number };
}

export const testBackend = (process.env.BROKER_TEST_BACKEND ?? 'local') as 'local' | 'docker';

let brokersStarted = 0;

/**
 * A deployment name (the label of a test's containers): `name`, prefixed by BROKER_TEST_RUN when it is
 * set. .ci/run sets it, so that after a crash it removes its own run's containers and no one else's
 * on a shared engine.
 */
export function testDeployment(name: string): string {
  const run = process.env.BROKER_TEST_RUN;
  return run ? `${run}-${name}` : name;
}

/** A local backend's root of working directories, of this test process only. */
export function testLocalRoot(name: string): string {
  return path.join(os.tmpdir(), `bash-broker-${process.pid}-${name}`);
}

export async function startTestBroker(env: Record<string, string> = {}, overrides: BrokerOverrides = {}): Promise<TestBroker> {
  const config = loadConfig({
    BROKER_BACKEND: testBackend,
    BROKER_CONTAINERS: '2',
    BROKER_SESSIONS_PER_CONTAINER: '2',
    BROKER_ACQUIRE_TIMEOUT: '10',
    BROKER_SHUTDOWN_GRACE: '2',
    PORT: '0',
    HOST: '127.0.0.1',
    // Its own deployment name: a broker sweeps the containers of its deployment that it did not
    // start, so two test brokers (or a test and a developer's broker) must never share one.
    BROKER_DEPLOYMENT: testDeployment(`test-${process.pid}-${++brokersStarted}`),
    // Its own local working roots: a local backend removes its root when it closes, and the default
    // root is one per process, so a test's second broker closing would take the first one's HOMEs.
    BROKER_LOCAL_ROOT: testLocalRoot(String(brokersStarted)),
    ...(process.env.BROKER_IMAGE ? { BROKER_IMAGE: process.env.BROKER_IMAGE } : {}),
    ...(process.env.BROKER_NETWORK_MODE ? { BROKER_NETWORK_MODE: process.env.BROKER_NETWORK_MODE } : {}),
    // Every suite can run with per-lease isolation on (the default) or off (BROKER_SESSION_ISOLATION=0 npx jest ...).
    ...(process.env.BROKER_SESSION_ISOLATION ? { BROKER_SESSION_ISOLATION: process.env.BROKER_SESSION_ISOLATION } : {}),
    // Quiet unless asked: BROKER_LOG_LEVEL=debug npx jest ... shows the broker's log.
    BROKER_LOG_LEVEL: process.env.BROKER_LOG_LEVEL ?? 'warn',
    ...env,
  });
  configureLogger(config.logLevel);
  // Built here rather than inside Broker so tests can name what the backend started.
  const backend = overrides.backend ?? createBackend(config);
  const broker = new Broker(config, { ...overrides, backend });
  const address = await broker.start();
  await broker.warm();
  const url = `http://127.0.0.1:${address.port}`;
  const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 256 });

  async function call(
    method: string,
    path: string,
    body?: string | Buffer,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<HttpResult> {
    const res = await request(url + path, { method: method as 'GET', body, headers, dispatcher, signal, headersTimeout: 0, bodyTimeout: 0 });
    const text = await res.body.text();
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      /* not JSON: tests assert on text */
    }
    return { status: res.statusCode, headers: res.headers, text, json };
  }

  const jsonHeaders = { 'content-type': 'application/json' };
  const tb: TestBroker = {
    url,
    broker,
    backend,
    request: (method, path, body, headers) => call(method, path, body, headers),
    localInstance: backend instanceof LocalBackend ? backend.instance : null,
    total: config.containers * config.sessionsPerContainer,
    post: (path, body, headers) => call('POST', path, body === undefined ? undefined : JSON.stringify(body), { ...jsonHeaders, ...headers }),
    postRaw: (path, raw, headers) => call('POST', path, raw, headers),
    postAbortable: (path, body, signal) => call('POST', path, JSON.stringify(body), jsonHeaders, signal),
    get: (path) => call('GET', path),
    async acquire(body = {}) {
      const r = await tb.post('/session/acquire', body);
      if (r.status !== 200) throw new Error(`acquire failed: ${r.status} ${r.text}`);
      return r.json.session_id as string;
    },
    async exec(id, command, timeout) {
      const r = await tb.post(`/session/${id}/execute`, timeout === undefined ? { command } : { command, timeout });
      if (r.status !== 200) throw new Error(`execute failed: ${r.status} ${r.text}`);
      return r.json as ExecBody;
    },
    async execFull(id, command, timeout, extra = {}) {
      const r = await tb.post(`/session/${id}/execute`, timeout === undefined ? { command, facts: true, ...extra } : { command, timeout, facts: true, ...extra });
      if (r.status !== 200) throw new Error(`execute failed: ${r.status} ${r.text}`);
      return r.json as ExecBody & ExecFacts;
    },
    async release(id) {
      const r = await tb.post(`/session/${id}/release`);
      if (r.status !== 200) throw new Error(`release failed: ${r.status} ${r.text}`);
    },
    async health() {
      return (await tb.get('/health')).json as Health;
    },
    async metrics() {
      return (await tb.get('/metrics')).text;
    },
    waitAllAvailable: (timeoutMs = 20_000) => waitFullPool(tb, timeoutMs),
    async close() {
      await broker.close();
      await dispatcher.close();
    },
  };
  return tb;
}

/**
 * The one heal-wait: until /health shows a full, healthy pool, every session AVAILABLE but `inUse`
 * held ones, none cleaning or broken, every container answering ('healthy' implies all of them).
 * Returns the last /health.
 */
export async function waitFullPool(
  tb: { health(): Promise<Health>; total: number },
  timeoutMs: number,
  { inUse = 0 }: { inUse?: number } = {},
): Promise<Health> {
  let last: Health | null = null;
  await eventually(
    async () => {
      last = await tb.health();
      return (
        last.status === 'healthy' &&
        last.total_sessions === tb.total &&
        last.in_use_sessions === inUse &&
        last.available_sessions === tb.total - inUse &&
        last.cleaning_sessions === 0 &&
        last.broken_sessions === 0 &&
        last.unhealthy_containers === 0
      );
    },
    timeoutMs,
    () => `a full, healthy pool with ${inUse} in use (last /health: ${JSON.stringify(last)})`,
  );
  return last!;
}

/**
 * The one lease fixture: acquires a session (with `body`, if given), runs `use` on it and releases
 * it whatever happens.
 */
export async function withLease<T>(tb: Pick<TestBroker, 'acquire' | 'release'>, use: (id: string) => Promise<T>, body?: unknown): Promise<T> {
  const id = await tb.acquire(body);
  try {
    return await use(id);
  } finally {
    await tb.release(id);
  }
}

/**
 * Sum of the samples of `name` in Prometheus text whose labels include every pair of `labels`
 * (0 when there is none).
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}

/** Waits until `promise` settles and tells whether it did, without ever rejecting. */
export function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  return { promise, settled: () => done };
}

export function b64(text: string | Buffer): string {
  return Buffer.from(text).toString('base64');
}
