/**
 * The daemon's HTTP API, for Core only (it listens on a unix socket in a directory only Core and
 * this sandbox share):
 *   GET  /health       {"status":"ok","instance","state","lastSeq"}
 *   POST /credentials  {"capability"} (the relay's, in place of a key)   204
 *   POST /init         {"repo","prompt","model","clone":{path|relay}}     202, progress on /events
 *   POST /prompt       {"message"}                                        202 {"queued","held"}
 *   POST /abort                                                           202
 *   GET  /events?after=N  newline-delimited envelopes {"seq","event"}, replayed after N, then live
 * Errors: {"detail"} with 400 (bad body), 404, 409 (state).
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseCapability } from './secrets';
import { StateError, type InitRequest, type TaskDaemon } from './taskDaemon';

const MAX_BODY_BYTES = 1024 * 1024;
const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function createDaemonServer(daemon: TaskDaemon): http.Server {
  const instance = randomUUID();
  return http.createServer((req, res) => {
    serve(daemon, instance, req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : err instanceof StateError ? 409 : 500;
      const detail = err instanceof Error ? err.message : String(err);
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ detail }));
    });
  });
}

async function serve(daemon: TaskDaemon, instance: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://taskd');
  const route = `${req.method} ${url.pathname}`;
  switch (route) {
    case 'GET /health':
      return json(res, 200, { status: 'ok', instance, state: daemon.state, lastSeq: daemon.log.last });
    case 'POST /credentials': {
      const body = await readJson(req);
      let capability;
      try {
        capability = parseCapability(body);
      } catch (err) {
        throw new HttpError(400, (err as Error).message);
      }
      await daemon.setCapability(capability);
      res.writeHead(204).end();
      return;
    }
    case 'POST /init':
      daemon.init(parseInit(await readJson(req)));
      return json(res, 202, { state: daemon.state });
    case 'POST /prompt': {
      const body = (await readJson(req)) as { message?: unknown };
      if (typeof body?.message !== 'string' || body.message.trim() === '') throw new HttpError(400, "'message' must be a non-empty string");
      return json(res, 202, daemon.prompt(body.message));
    }
    case 'POST /abort':
      await daemon.abort();
      return json(res, 202, { state: daemon.state });
    case 'GET /events':
      return streamEvents(daemon, instance, Number(url.searchParams.get('after') ?? '0'), req, res);
    default:
      throw new HttpError(404, `no route ${route}`);
  }
}

function parseInit(body: unknown): InitRequest {
  const b = body as Partial<InitRequest> | null;
  if (typeof b?.repo !== 'string' || !REPO.test(b.repo) || b.repo.split('/').some((p) => p === '.' || p === '..')) {
    throw new HttpError(400, "'repo' must be 'org/name'");
  }
  if (typeof b.prompt !== 'string' || b.prompt.trim() === '') throw new HttpError(400, "'prompt' must be a non-empty string");
  if (typeof b.model !== 'string' || !b.model.includes('/')) throw new HttpError(400, "'model' must be 'provider/model-id'");
  const clone = b.clone as { path?: unknown; relay?: unknown } | undefined;
  if (typeof clone?.path === 'string') return { repo: b.repo, prompt: b.prompt, model: b.model, clone: { path: clone.path } };
  if (typeof clone?.relay === 'string' && clone.relay.startsWith('/')) return { repo: b.repo, prompt: b.prompt, model: b.model, clone: { relay: clone.relay } };
  throw new HttpError(400, "'clone' must be {\"path\": ...} or {\"relay\": \"/...\"}");
}

async function streamEvents(daemon: TaskDaemon, instance: string, after: number, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (!Number.isInteger(after) || after < 0) throw new HttpError(400, "'after' must be an integer >= 0");
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'X-Taskd-Instance': instance });
  res.flushHeaders();
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  let seq = after;
  // Events the journal's bound already dropped: say so, so Core can tell its clients.
  if (daemon.log.oldest > seq + 1 && seq < daemon.log.last) {
    res.write(JSON.stringify({ seq: daemon.log.oldest - 1, event: { type: 'daemon_error', timestamp: Date.now(), message: `events ${seq + 1}..${daemon.log.oldest - 1} were dropped by the daemon's journal bound` } }) + '\n');
  }
  while (!gone.signal.aborted) {
    const batch = daemon.log.after(seq);
    if (batch.length === 0) {
      await daemon.log.next(gone.signal);
      continue;
    }
    const text = batch.map((e) => JSON.stringify(e)).join('\n') + '\n';
    seq = batch[batch.length - 1].seq;
    if (!res.write(text)) await new Promise<void>((resolve) => { res.once('drain', resolve); gone.signal.addEventListener('abort', () => resolve(), { once: true }); });
  }
  void req;
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, `the body is over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') return resolve(null);
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new HttpError(400, 'the body is not valid JSON'));
      }
    });
    req.on('error', reject);
  });
}
