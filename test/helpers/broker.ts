/**
 * Test harness: a real broker on 127.0.0.1:0 with a real backend, and a small undici client.
 * The backend comes from BROKER_TEST_BACKEND (local by default), so one suite runs against each.
 */
import { request, Agent } from 'undici';
import { loadConfig } from '../../src/config/config';
import { Broker, type BrokerOverrides } from '../../src/broker';

export interface TestBroker {
  url: string;
  broker: Broker;
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  postRaw(path: string, raw: string | Buffer, headers?: Record<string, string>): Promise<HttpResult>;
  get(path: string): Promise<HttpResult>;
  acquire(body?: unknown): Promise<string>;
  exec(id: string, command: string, timeout?: number): Promise<ExecBody>;
  close(): Promise<void>;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface ExecBody {
  status: 'Success' | 'Failed';
  stdout: string;
  stderr: string;
  return_code: number;
  truncated?: boolean;
}

export const testBackend = (process.env.BROKER_TEST_BACKEND ?? 'local') as 'local' | 'docker';

export async function startTestBroker(env: Record<string, string> = {}, overrides: BrokerOverrides = {}): Promise<TestBroker> {
  const config = loadConfig({
    BROKER_BACKEND: testBackend,
    BROKER_CONTAINERS: '2',
    BROKER_SESSIONS_PER_CONTAINER: '2',
    BROKER_ACQUIRE_TIMEOUT: '10',
    BROKER_SHUTDOWN_GRACE: '2',
    PORT: '0',
    HOST: '127.0.0.1',
    ...(process.env.BROKER_IMAGE ? { BROKER_IMAGE: process.env.BROKER_IMAGE } : {}),
    ...env,
  });
  const broker = new Broker(config, overrides);
  const address = await broker.start();
  await broker.warm();
  const url = `http://127.0.0.1:${address.port}`;
  const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 256 });

  async function call(method: 'GET' | 'POST', path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<HttpResult> {
    const res = await request(url + path, { method, body, headers, dispatcher, headersTimeout: 0, bodyTimeout: 0 });
    const text = await res.body.text();
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      /* not JSON: tests assert on text */
    }
    return { status: res.statusCode, headers: res.headers, text, json };
  }

  const tb: TestBroker = {
    url,
    broker,
    post: (path, body, headers) =>
      call('POST', path, body === undefined ? undefined : JSON.stringify(body), { 'content-type': 'application/json', ...headers }),
    postRaw: (path, raw, headers) => call('POST', path, raw, headers),
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
    async close() {
      await broker.close();
      await dispatcher.close();
    },
  };
  return tb;
}

/** Polls `probe` until it returns true or `timeoutMs` passes (generous bounds: CI is noisy). */
export async function eventually(probe: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
