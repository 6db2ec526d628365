/**
 * Core's relay for one task sandbox: an HTTP server on a unix socket in the sandbox's directory,
 * the only way out of a container that has no network. It forwards, by path prefix,
 *   /anthropic/...  to BROKER_ANTHROPIC_BASE_URL
 *   /openai/...     to BROKER_OPENAI_BASE_URL
 *   /git/...        to BROKER_GIT_BASE_URL when that is a git server
 * and nothing else. Requests and answers are streamed through untouched but for the Host and
 * hop-by-hop headers; nothing of them (the API keys are in their headers) is logged.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host']);

export class TaskRelay {
  private readonly server: http.Server;

  /** `routes`: prefix (`/anthropic`) -> upstream base URL. */
  constructor(private readonly routes: Record<string, string>) {
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
    if (!prefix) return refuse(res, 404, `the relay forwards only ${Object.keys(this.routes).join(', ')}`);
    const target = new URL(this.routes[prefix] + url.slice(prefix.length));
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    const client = target.protocol === 'https:' ? https : http;
    const upstream = client.request(target, { method: req.method, headers }, (answer) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (err) => {
      if (res.headersSent) res.destroy();
      else refuse(res, 502, `the relay could not reach ${target.origin}: ${err.message}`);
    });
    // The sandbox hung up (an aborted turn): the upstream call ends too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }
}

function refuse(res: http.ServerResponse, status: number, detail: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ detail }));
}
