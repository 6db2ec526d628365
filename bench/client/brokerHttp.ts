/**
 * A keep-alive undici client of the pool API, as a rollout client uses it: JSON bodies,
 * one connection per concurrent caller, every answer checked.
 */
import { Pool } from 'undici';

export interface ExecuteBody {
  status: string;
  stdout: string;
  stderr: string;
  return_code: number;
  truncated?: boolean;
  /** The execute asked for `release` (the additive API). */
  released?: boolean;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export class BrokerHttp {
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;

  /**
   * `headers`: sent with every call besides the JSON content type (a node of a cluster wants its
   * token); `connect`: TLS options for an https:// node that wants a client certificate.
   */
  constructor(url: string, connections: number, headers: Record<string, string> = {}, connect?: { ca: Buffer; cert: Buffer; key: Buffer }) {
    this.pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 30_000, headersTimeout: 300_000, bodyTimeout: 300_000, connect });
    this.headers = { ...JSON_HEADERS, ...headers };
  }

  async post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    const res = await this.pool.request({ path, method: 'POST', headers: this.headers, body: JSON.stringify(body), signal });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`POST ${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  }

  async acquire(signal?: AbortSignal): Promise<string> {
    return (await this.post<{ session_id: string }>('/session/acquire', {}, signal)).session_id;
  }

  /** An acquire with a body (startup commands, say): the whole answer. */
  acquireWith(body: Record<string, unknown>, signal?: AbortSignal): Promise<{ session_id: string; startup_results?: ExecuteBody[] }> {
    return this.post('/session/acquire', body, signal);
  }

  execute(sessionId: string, command: string, timeoutS = 30, extra: Record<string, unknown> = {}): Promise<ExecuteBody> {
    return this.post<ExecuteBody>(`/session/${sessionId}/execute`, { command, timeout: timeoutS, ...extra });
  }

  /** Runs `command` and checks it succeeded with `expectBytes` bytes of stdout. */
  async executeChecked(sessionId: string, command: string, expectBytes: number, extra?: Record<string, unknown>): Promise<void> {
    const r = await this.execute(sessionId, command, 30, extra);
    if (r.return_code !== 0 || r.stdout.length !== expectBytes) {
      throw new Error(`execute '${command.slice(0, 40)}': rc ${r.return_code}, ${r.stdout.length} bytes of stdout (want ${expectBytes})`);
    }
  }

  async release(sessionId: string): Promise<void> {
    await this.post('/session/' + sessionId + '/release', {});
  }

  async health(): Promise<{ available_sessions: number; total_sessions: number }> {
    const res = await this.pool.request({ path: '/health', method: 'GET' });
    return (await res.body.json()) as { available_sessions: number; total_sessions: number };
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
