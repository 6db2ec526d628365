/**
 * The soak's HTTP client: one keep-alive undici connection per concurrent client, every answer
 * returned with its status (classification is the caller's), and every request abortable — by the
 * caller (a client that disconnects) and by the run (hard stop after the drain).
 */
import { setMaxListeners } from 'node:events';
import { Pool, errors as undiciErrors } from 'undici';
import { nowMs } from '../lib/stats';

export interface Answer {
  status: number;
  // The broker's JSON, checked field by field by the caller.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  ms: number;
  /** The Retry-After header, when the answer had one (every 503 must). */
  retryAfter?: string;
}

/** The request ended without an answer: aborted by us, or a network failure (then an error). */
export class NoAnswer extends Error {
  constructor(
    readonly aborted: boolean,
    readonly code: string,
  ) {
    super(aborted ? 'aborted' : `no answer: ${code}`);
  }
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export class SoakHttp {
  private readonly pool: Pool;
  /** Aborted by cutAll() (the end of the drain): every request open then is cut, later ones are not. */
  private cut = SoakHttp.cutController();

  constructor(url: string, connections: number) {
    // Timeouts above the longest legitimate wait (an acquire queued up to BROKER_ACQUIRE_TIMEOUT).
    this.pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 30_000, headersTimeout: 180_000, bodyTimeout: 180_000 });
  }

  post(path: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
    return this.send('POST', path, JSON.stringify(body), signal);
  }

  delete(path: string): Promise<Answer> {
    return this.send('DELETE', path, undefined);
  }

  /**
   * What ends a facade's resource (a workspace's DELETE, a group sandbox's stop): never cut by
   * cutAll(). A workspace has no idle reclaim, so an end cut before it reached the broker would leave
   * the workspace, and its slot, for ever; the broker answers an end at once, so it does not hang.
   */
  end(method: 'POST' | 'DELETE', path: string, body?: unknown): Promise<Answer> {
    return this.send(method, path, body === undefined ? undefined : JSON.stringify(body), undefined, false);
  }

  get(path: string): Promise<Answer> {
    return this.send('GET', path, undefined);
  }

  private async send(method: 'GET' | 'POST' | 'DELETE', path: string, body: string | undefined, signal?: AbortSignal, cuttable = true): Promise<Answer> {
    const t0 = nowMs();
    const cut = cuttable ? [this.cut.signal] : [];
    const combined = AbortSignal.any([...(signal ? [signal] : []), ...cut]);
    try {
      const res = await this.pool.request({ path, method, headers: JSON_HEADERS, body, signal: combined });
      const text = await res.body.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* kept as text: the caller reports a non-JSON answer */
      }
      const retryAfter = res.headers['retry-after'];
      return { status: res.statusCode, body: parsed, ms: nowMs() - t0, ...(typeof retryAfter === 'string' ? { retryAfter } : {}) };
    } catch (err) {
      if (combined.aborted || err instanceof undiciErrors.RequestAbortedError) throw new NoAnswer(true, 'aborted');
      throw new NoAnswer(false, (err as { code?: string }).code ?? (err as Error).name);
    }
  }

  cutAll(): void {
    this.cut.abort();
    this.cut = SoakHttp.cutController();
  }

  /** Every open request listens on it (through AbortSignal.any): hundreds at once, not a leak. */
  private static cutController(): AbortController {
    const c = new AbortController();
    setMaxListeners(0, c.signal);
    return c;
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
