/**
 * Core's relay for one task sandbox: an HTTP server on a unix socket in the sandbox's directory,
 * the only way out of a container that has no network. It forwards, by path prefix,
 *   /anthropic/...  to BROKER_ANTHROPIC_BASE_URL
 *   /openai/...     to BROKER_OPENAI_BASE_URL
 *   /git/...        to BROKER_GIT_BASE_URL when that is a git server
 * and nothing else.
 *
 * The LLM keys never enter the sandbox: its daemon holds this relay's capability instead (a random
 * token, one per sandbox, that only this relay's socket takes) and sends it where a key would go. On a
 * model route the relay checks it, drops it, and attaches the provider's key as read at this call
 * (`x-api-key` for Anthropic, `Authorization: Bearer` for OpenAI): a rotated key is used from the
 * next call on. A call without the capability is refused (401) and goes nowhere.
 *
 * Requests and answers are otherwise streamed through untouched (an SSE answer is piped chunk by
 * chunk, never buffered) but for the Host and hop-by-hop headers. The log says that a call was made
 * (debug: the task, the route, the answer's status and its time) or refused (warn: a call without
 * the capability comes from inside the sandbox and is worth an operator's look), and never a header
 * or a body.
 */
import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { KeyName, TaskKeys } from '../../../config/taskConfig';
import { logger } from '../../../common/logger';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host']);

/** Where a route goes, and, for a model route, the key it gets and the header that carries it. */
export interface RelayRoute {
  base: string;
  key?: { name: KeyName; header: 'x-api-key' | 'authorization' };
}

export const ANTHROPIC_KEY: RelayRoute['key'] = { name: 'ANTHROPIC_API_KEY', header: 'x-api-key' };
export const OPENAI_KEY: RelayRoute['key'] = { name: 'OPENAI_API_KEY', header: 'authorization' };

export class TaskRelay {
  private readonly server: http.Server;
  private readonly capability: Buffer;

  /** `task`: the task sandbox's id, for the log; `routes`: prefix (`/anthropic`) -> where it goes; `capability`: what this sandbox's daemon sends in place of a key. */
  constructor(
    private readonly task: string,
    private readonly routes: Record<string, RelayRoute>,
    capability: string,
    private readonly keys: TaskKeys,
  ) {
    this.capability = Buffer.from(capability);
    this.server = http.createServer((req, res) => this.forward(req, res));
  }

  listen(socketPath: string): Promise<void> {
    fs.rmSync(socketPath, { force: true });
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(socketPath, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = req.url ?? '/';
    const prefix = Object.keys(this.routes).find((p) => url === p || url.startsWith(`${p}/`) || url.startsWith(`${p}?`));
    if (!prefix) return this.refuse(res, 404, `the relay forwards only ${Object.keys(this.routes).join(', ')}`, null);
    const route = this.routes[prefix];
    const target = new URL(route.base + url.slice(prefix.length));
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    if (route.key) {
      if (!this.holdsCapability(req)) return this.refuse(res, 401, "the relay takes model calls only with this sandbox's capability", prefix, req);
      const key = this.keys.read()[route.key.name];
      if (!key) return this.refuse(res, 401, `the broker holds no ${route.key.name}`, prefix, req);
      delete headers['x-api-key'];
      delete headers.authorization;
      headers[route.key.header] = route.key.header === 'authorization' ? `Bearer ${key}` : key;
    }
    const client = target.protocol === 'https:' ? https : http;
    const startedMs = performance.now();
    const upstream = client.request(target, { method: req.method, headers }, (answer) => {
      logger.debug({ task: this.task, route: prefix, status: answer.statusCode, ms: Math.round(performance.now() - startedMs) }, 'task relay: call answered');
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (err) => {
      if (res.headersSent) res.destroy();
      else this.refuse(res, 502, `the relay could not reach ${target.origin}: ${err.message}`, prefix);
    });
    // The sandbox hung up (an aborted turn): the upstream call ends too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  /** Answers with `{detail}`, and logs it; a request body not forwarded is read and dropped. */
  private refuse(res: http.ServerResponse, status: number, detail: string, route: string | null, req?: http.IncomingMessage): void {
    logger.warn({ task: this.task, route, status, detail }, 'task relay: call refused');
    req?.resume();
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ detail }));
  }

  /** The capability, where a provider's SDK puts its key: `x-api-key`, or `Authorization: Bearer`. */
  private holdsCapability(req: http.IncomingMessage): boolean {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    return [req.headers['x-api-key'], bearer].some((v) => typeof v === 'string' && v.length === this.capability.length && timingSafeEqual(Buffer.from(v), this.capability));
  }
}
