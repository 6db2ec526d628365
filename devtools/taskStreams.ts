/**
 * A task API client for tests: a real SSE reader (undici, the frames parsed as any EventSource
 * would: `id:`, `data:`, comments), bare repos to clone, and waits on what arrives.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { request, Agent } from 'undici';

export interface StreamEnvelope {
  cursor: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  event: { type: string; timestamp: number; [field: string]: any };
}

export interface SseFrame {
  id?: string;
  data?: string;
  comment?: string;
}

/** One open SSE stream: frames as they come, until `close()` or the server ends it. */
export class SseReader {
  readonly frames: SseFrame[] = [];
  readonly received: Array<{ envelope: StreamEnvelope; atMs: number }> = [];
  ended = false;
  status = 0;
  private readonly controller = new AbortController();
  private readonly dispatcher = new Agent({ bodyTimeout: 0, headersTimeout: 0 });
  private done: Promise<void> = Promise.resolve();

  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const reader = new SseReader();
    const res = await request(url, { headers: { accept: 'text/event-stream', ...headers }, signal: reader.controller.signal, dispatcher: reader.dispatcher });
    reader.status = res.statusCode;
    reader.done = reader.consume(res.body);
    return reader;
  }

  get envelopes(): StreamEnvelope[] {
    return this.received.map((r) => r.envelope);
  }

  types(): string[] {
    return this.envelopes.map((e) => e.event.type);
  }

  /** Waits until `probe` holds of what arrived (generous bound: CI is noisy). */
  async until(probe: (envelopes: StreamEnvelope[]) => boolean, what: string, timeoutMs = 60_000): Promise<StreamEnvelope[]> {
    const deadline = Date.now() + timeoutMs;
    while (!probe(this.envelopes)) {
      if (this.ended) throw new Error(`the stream ended before ${what}; got ${this.types().join(', ')}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${this.types().join(', ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.envelopes;
  }

  untilType(type: string, match: (e: StreamEnvelope) => boolean = () => true): Promise<StreamEnvelope> {
    return this.until((es) => es.some((e) => e.event.type === type && match(e)), `a ${type} event`).then((es) => es.find((e) => e.event.type === type && match(e))!);
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done.catch(() => undefined);
    await this.dispatcher.close().catch(() => undefined);
  }

  /** Waits for the server to end the stream. */
  async finished(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error('the stream did not end');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private async consume(body: AsyncIterable<Buffer>): Promise<void> {
    let buffered = '';
    try {
      for await (const chunk of body) {
        buffered += chunk.toString('utf8');
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          this.frame(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
        }
      }
    } catch {
      /* aborted by close() */
    } finally {
      this.ended = true;
    }
  }

  private frame(text: string): void {
    const frame: SseFrame = {};
    for (const line of text.split('\n')) {
      if (line.startsWith(':')) frame.comment = line.slice(1).trim();
      else if (line.startsWith('id: ')) frame.id = line.slice(4);
      else if (line.startsWith('data: ')) frame.data = (frame.data === undefined ? '' : frame.data + '\n') + line.slice(6);
    }
    this.frames.push(frame);
    // Sub-millisecond wall-clock time of arrival (the bench compares it with the daemon's timestamps).
    if (frame.data !== undefined) this.received.push({ envelope: JSON.parse(frame.data) as StreamEnvelope, atMs: performance.timeOrigin + performance.now() });
  }
}

/** `<base>/<org>/<name>.git`, a bare repo with `files` in its one commit. */
export function makeBareRepo(base: string, repo: string, files: Record<string, string>): string {
  fs.mkdirSync(base, { recursive: true });
  const work = fs.mkdtempSync(path.join(base, '.work-'));
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(work, name)), { recursive: true });
    fs.writeFileSync(path.join(work, name), content);
  }
  const git = (args: string[], cwd = work): void => void execFileSync('git', args, { cwd, stdio: 'ignore' });
  git(['init', '-q', '-b', 'main']);
  git(['add', '.']);
  git(['-c', 'user.email=t@example.com', '-c', 'user.name=test', 'commit', '-qm', 'init']);
  const bare = path.join(base, `${repo}.git`);
  fs.mkdirSync(path.dirname(bare), { recursive: true });
  git(['clone', '-q', '--bare', work, bare], base);
  fs.rmSync(work, { recursive: true, force: true });
  return bare;
}

/** Cursors 1..n without a gap or a repeat. */
export function consecutive(envelopes: StreamEnvelope[], from = 1): boolean {
  return envelopes.every((e, i) => e.cursor === from + i);
}
