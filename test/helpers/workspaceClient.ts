/**
 * Test clients of the workspace API: real `ws` WebSockets that record what they get, and waits on
 * states (an event seen, a socket closed), never on timing.
 */
import WebSocket from 'ws';
import { eventually, type TestBroker } from './broker';

export type Event = { seq_id?: number; type: string } & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface EventClient {
  socket: WebSocket;
  events: Event[];
  /** Waits until an event matches and returns the first that does. */
  waitFor(match: (e: Event) => boolean, what?: string, timeoutMs?: number): Promise<Event>;
  close(): void;
}

export interface TerminalClient {
  socket: WebSocket;
  /** Everything received, as latin1 (one char per byte, so bytes can be checked). */
  bytes(): Buffer;
  text(): string;
  waitForText(text: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

export function wsUrl(tb: Pick<TestBroker, 'url'>, path: string): string {
  return tb.url.replace(/^http/, 'ws') + path;
}

/**
 * `onMessage` is attached before the handshake ends: the first messages (a replay) can arrive in the
 * same read as the handshake's answer, before a listener attached after 'open' would exist.
 */
export function openSocket(url: string, headers: Record<string, string> = {}, onMessage?: (data: Buffer) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    if (onMessage) socket.on('message', onMessage);
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode} ${body}`), { status: res.statusCode, body })));
    });
  });
}

export async function openEvents(tb: Pick<TestBroker, 'url'>, path = '/ws/workspace'): Promise<EventClient> {
  const events: Event[] = [];
  const socket = await openSocket(wsUrl(tb, path), {}, (data) => events.push(JSON.parse(data.toString('utf8'))));
  return {
    socket,
    events,
    async waitFor(match, what = 'an event', timeoutMs = 30_000) {
      await eventually(() => events.some(match), timeoutMs, () => `${what}; got ${JSON.stringify(events.slice(-10))}`);
      return events.find(match)!;
    },
    close: () => socket.close(),
  };
}

export async function openTerminal(tb: Pick<TestBroker, 'url'>, path = '/ws/workspace/terminal'): Promise<TerminalClient> {
  const chunks: Buffer[] = [];
  const socket = await openSocket(wsUrl(tb, path), {}, (data) => chunks.push(data));
  const bytes = (): Buffer => Buffer.concat(chunks);
  return {
    socket,
    bytes,
    text: () => bytes().toString('utf8'),
    async waitForText(text, timeoutMs = 30_000) {
      await eventually(() => bytes().toString('utf8').includes(text), timeoutMs, () => `'${text}' on the terminal; got ${JSON.stringify(bytes().toString('utf8').slice(-500))}`);
    },
    close: () => socket.close(),
  };
}

/**
 * `command` through the default workspace's /api/execute: its answer (throws on any other status than
 * 200). A command typed into the terminal just before is a job until its end mark is read, which can
 * come after its output: while the workspace answers 409 workspace_busy, it is asked again (a
 * test that wants the 409 posts itself).
 */
export async function workspaceExecute(tb: Pick<TestBroker, 'post'>, command: string, busyBoundMs = 60_000): Promise<{ returncode: number | null; stdout: string }> {
  const until = Date.now() + busyBoundMs;
  let r = await tb.post('/api/execute', { command });
  while (r.status === 409 && r.json?.code === 'workspace_busy' && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    r = await tb.post('/api/execute', { command });
  }
  if (r.status !== 200) throw new Error(`execute failed: ${r.status} ${r.text}`);
  return r.json;
}

/** The exit event of `jobId`, from the logs (polled until it is there). */
export async function exitOf(tb: Pick<TestBroker, 'get'>, jobId: string, prefix = '', timeoutMs = 30_000): Promise<Event> {
  let found: Event | undefined;
  await eventually(
    async () => {
      const r = await tb.get(`${prefix}/api/workspace/logs?offset=-1000&limit=1000`);
      found = (r.json as Event[]).find((e) => e.type === 'exit' && e.job_id === jobId);
      return found !== undefined;
    },
    timeoutMs,
    `the exit event of job ${jobId}`,
  );
  return found!;
}

/** Output lines of one job, from the logs. */
export async function linesOf(tb: Pick<TestBroker, 'get'>, jobId: string, prefix = ''): Promise<string[]> {
  const r = await tb.get(`${prefix}/api/workspace/logs?offset=-1000&limit=1000`);
  return (r.json as Event[]).filter((e) => e.type === 'output' && e.job_id === jobId).map((e) => e.line as string);
}

/** A small pool (2 x 2) whose health checks notice a lost container or shell within a second or two: for workspace fault suites. */
export const QUICK_HEALTH_POOL: Readonly<Record<string, string>> = {
  BROKER_CONTAINERS: '2',
  BROKER_SESSIONS_PER_CONTAINER: '2',
  BROKER_HEALTH_INTERVAL: '0.5',
  BROKER_CONTAINER_PING_TIMEOUT: '2',
};

/** The default workspace watched from its first event on by `viewerCount` event sockets, and by one terminal. */
export async function watchWorkspace(tb: TestBroker, viewerCount = 1): Promise<{ first: Event; viewers: EventClient[]; terminal: TerminalClient }> {
  const [first] = (await tb.get('/api/workspace/logs?offset=0&limit=1')).json as Event[];
  const viewers: EventClient[] = [];
  for (let i = 0; i < viewerCount; i++) viewers.push(await openEvents(tb, `/ws/workspace?since=${first.seq_id}`));
  return { first, viewers, terminal: await openTerminal(tb) };
}

/** The id of the pool container the default workspace's shell runs in (a container's hostname is its short id; Docker). */
export async function workspaceContainer(tb: TestBroker): Promise<string> {
  const r = await tb.post('/api/execute', { command: 'echo host=$HOSTNAME' });
  if (r.status !== 200) throw new Error(`execute answered ${r.status}: ${r.text}`);
  const host = /host=([0-9a-f]{12})/.exec(r.json.stdout)?.[1];
  const entry = tb.broker.pool.containers.find((c) => host && c.ref?.id.startsWith(host));
  if (!entry?.ref) throw new Error(`no pool container has the workspace's hostname (${r.json.stdout})`);
  return entry.ref.id;
}
