/**
 * HTTP to a task daemon over the unix socket in its sandbox's directory (the container has no
 * network: see taskContainers.ts). Implements core/tasks' DaemonLink.
 */
import http from 'node:http';
import { LineReader } from '../../../common/lineReader';
import { DaemonCallError, type DaemonEnvelope, type DaemonHealth, type DaemonLink } from '../../../core/ports/taskPorts';

/** Bodies a daemon answers with are small; this bounds a confused one. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export class UnixDaemonLink implements DaemonLink {
  constructor(private readonly socketPath: string) {}

  async health(signal: AbortSignal): Promise<DaemonHealth> {
    const { status, text } = await this.call('GET', '/health', undefined, signal);
    if (status !== 200) throw new DaemonCallError(status, text);
    return JSON.parse(text) as DaemonHealth;
  }

  async post(path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const { status, text } = await this.call('POST', path, JSON.stringify(body), signal);
    if (status < 200 || status >= 300) {
      let detail = text;
      try {
        detail = (JSON.parse(text) as { detail?: string }).detail ?? text;
      } catch {
        /* not JSON: its text */
      }
      throw new DaemonCallError(status, detail);
    }
    return text === '' ? {} : JSON.parse(text);
  }

  async *events(after: number, signal: AbortSignal): AsyncIterable<DaemonEnvelope> {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ socketPath: this.socketPath, path: `/events?after=${after}`, method: 'GET', signal }, resolve);
      req.on('error', reject);
      req.end();
    });
    if (res.statusCode !== 200) {
      res.resume();
      throw new DaemonCallError(res.statusCode ?? 0, 'the event stream was refused');
    }
    // Unbounded, as a daemon's event may carry a whole tool result; a last line left open is no event.
    const lines: string[] = [];
    const reader = new LineReader((line) => lines.push(line));
    for await (const chunk of res as AsyncIterable<Buffer>) {
      reader.push(chunk);
      for (const line of lines.splice(0)) if (line.trim() !== '') yield JSON.parse(line) as DaemonEnvelope;
    }
  }

  private call(method: string, path: string, body: string | undefined, signal?: AbortSignal): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers = body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
      const req = http.request({ socketPath: this.socketPath, path, method, headers, signal }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.length > MAX_ANSWER_BYTES) req.destroy(new Error(`the daemon's answer to ${path} is over ${MAX_ANSWER_BYTES} bytes`));
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
}
