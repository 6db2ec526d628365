/**
 * Drives a task sandbox through Core (the broker) only: creates one and streams its events, sends
 * follow-ups, or just streams from a cursor. Run it with the repository's node:
 *
 *   node -r ts-node/register/transpile-only scripts/sandbox-task.ts --repo=org/name --prompt="fix the bug"
 *   node -r ts-node/register/transpile-only scripts/sandbox-task.ts --id=task-abc --prompt="now add tests"
 *   node -r ts-node/register/transpile-only scripts/sandbox-task.ts --id=task-abc --cursor=42
 *
 * --repo: create (name with --name), then print both streams until the agent's first run ends.
 * --id with --prompt: send a follow-up and print until its run ends. --id with --cursor (or alone):
 * print both streams after that cursor until the sandbox ends (Ctrl-C leaves). When stdin is a
 * terminal (or with --interactive), each line typed after a run ends is sent as the next prompt.
 * --url / BROKER_URL (default http://127.0.0.1:8180) and --token / BROKER_TOKEN reach the broker;
 * --raw prints each envelope as JSON instead. Exit: 0 done, 1 the sandbox failed, 2 usage.
 */
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { describeEvent, endsTheRun, type Envelope } from './taskCliPrint';

type StreamName = 'control' | 'coding';
const FATAL = new Set(['repo_clone_error', 'sandbox_terminated']);

const { values: args } = parseArgs({
  options: {
    repo: { type: 'string' },
    prompt: { type: 'string' },
    name: { type: 'string' },
    id: { type: 'string' },
    cursor: { type: 'string' },
    url: { type: 'string' },
    token: { type: 'string' },
    interactive: { type: 'boolean', default: false },
    raw: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const baseUrl = (args.url ?? process.env.BROKER_URL ?? 'http://127.0.0.1:8180').replace(/\/+$/, '');
const token = args.token ?? process.env.BROKER_TOKEN ?? '';
const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};

function usage(message: string): never {
  console.error(`sandbox-task: ${message}\nusage: --repo=org/name [--prompt=...] [--name=...] | --id=ID --prompt=... | --id=ID [--cursor=N]  [--url=...] [--token=...] [--interactive] [--raw]`);
  process.exit(2);
}

async function call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(baseUrl + path, { method, headers: { ...auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json.detail ?? text}`);
  return json;
}

/** Both streams of a sandbox, followed from a cursor each; reconnects with Last-Event-ID if dropped. */
class Follower {
  private readonly cursors: Record<StreamName, number>;
  private readonly controller = new AbortController();
  private waiters: Array<(e: Envelope, stream: StreamName) => boolean> = [];
  private ended = false;
  failed = false;

  constructor(
    private readonly id: string,
    from: Record<StreamName, number>,
  ) {
    this.cursors = { ...from };
    for (const stream of ['control', 'coding'] as const) void this.follow(stream);
  }

  /** Resolves once both streams are printed up to `target` (or the sandbox ended). */
  async caughtUp(target: Record<StreamName, number>): Promise<void> {
    while (!this.ended && (this.cursors.control < target.control || this.cursors.coding < target.coding)) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Resolves with the first event (after now) `match` accepts, or null when the sandbox ends first. */
  waitFor(match: (e: Envelope, stream: StreamName) => boolean): Promise<Envelope | null> {
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter = (e: Envelope, stream: StreamName): boolean => {
        if (FATAL.has(e.event.type) && stream === 'control') {
          resolve(match(e, stream) ? e : null);
          return true;
        }
        if (!match(e, stream)) return false;
        resolve(e);
        return true;
      };
      this.waiters.push(waiter);
    });
  }

  stop(): void {
    this.controller.abort();
  }

  private deliver(stream: StreamName, envelope: Envelope): void {
    this.cursors[stream] = envelope.cursor;
    if (args.raw) console.log(JSON.stringify({ stream, ...envelope }));
    else {
      const line = describeEvent(stream, envelope);
      if (line) console.log(line);
    }
    if (stream === 'control' && FATAL.has(envelope.event.type)) {
      this.failed = envelope.event.type === 'repo_clone_error';
      this.ended = envelope.event.type === 'sandbox_terminated' || this.failed;
    }
    this.waiters = this.waiters.filter((w) => !w(envelope, stream));
  }

  private async follow(stream: StreamName): Promise<void> {
    while (!this.controller.signal.aborted) {
      try {
        const res = await fetch(`${baseUrl}/sandboxes/${this.id}/stream/${stream}`, {
          headers: { ...auth, accept: 'text/event-stream', 'last-event-id': String(this.cursors[stream]) },
          signal: this.controller.signal,
        });
        if (!res.ok || !res.body) throw new Error(`${res.status} ${await res.text()}`);
        let buffered = '';
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buffered += Buffer.from(chunk).toString('utf8');
          let end: number;
          while ((end = buffered.indexOf('\n\n')) >= 0) {
            const data = buffered
              .slice(0, end)
              .split('\n')
              .filter((l) => l.startsWith('data: '))
              .map((l) => l.slice(6))
              .join('\n');
            buffered = buffered.slice(end + 2);
            if (data) this.deliver(stream, JSON.parse(data) as Envelope);
          }
        }
        return; // the server ended it: the sandbox is gone
      } catch (err) {
        if (this.controller.signal.aborted) return;
        console.error(`sandbox-task: ${stream} stream dropped (${(err as Error).message}); resuming after #${this.cursors[stream]}`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}

/** Sends `message` and waits for the end of a run after it (not one replayed from before). */
async function promptAndWait(follower: Follower, id: string, message: string): Promise<void> {
  const before = ((await call('GET', `/sandboxes/${id}`)).cursors as Record<StreamName, number>).coding;
  const ended = follower.waitFor((e, stream) => stream === 'coding' && e.cursor > before && endsTheRun(e));
  await call('POST', `/sandboxes/${id}/prompt`, { message });
  await ended;
  // The two streams arrive over two connections: the control events of this run (its prompt_queued)
  // may still be on their way when the coding stream's run has ended. Print up to where both are now.
  const now = (await call('GET', `/sandboxes/${id}`)).cursors as Record<StreamName, number>;
  await follower.caughtUp(now);
}

async function interact(follower: Follower, id: string): Promise<void> {
  if (!(process.stdin.isTTY || args.interactive) || follower.failed) return;
  const lines = readline.createInterface({ input: process.stdin, output: process.stdout, prompt: 'prompt> ', terminal: Boolean(process.stdin.isTTY) });
  lines.prompt();
  for await (const line of lines) {
    if (line.trim()) await promptAndWait(follower, id, line.trim());
    if (follower.failed) break;
    lines.prompt();
  }
  lines.close();
}

async function main(): Promise<void> {
  if (args.help) usage('help');
  if (args.repo && args.id) usage('give --repo (a new sandbox) or --id (an existing one), not both');
  if (!args.repo && !args.id) usage('give --repo or --id');
  if (args.cursor !== undefined && !/^\d+$/.test(args.cursor)) usage(`--cursor must be an integer >= 0, got '${args.cursor}'`);
  let follower: Follower;
  let id: string;
  if (args.repo) {
    const run = { repo: args.repo, ...(args.prompt ? { prompt: args.prompt } : {}), ...(args.name ? { name: args.name } : {}) };
    const record = await call('POST', '/sandboxes', run);
    id = String(record.id);
    console.log(`sandbox ${id} created for ${args.repo}`);
    follower = new Follower(id, { control: 0, coding: 0 });
    await follower.waitFor((e, stream) => stream === 'coding' && endsTheRun(e));
  } else {
    id = args.id!;
    const record = await call('GET', `/sandboxes/${id}`);
    const cursors = record.cursors as Record<StreamName, number>;
    if (args.prompt) {
      follower = new Follower(id, cursors);
      await promptAndWait(follower, id, args.prompt);
    } else {
      const from = Number(args.cursor ?? '0');
      follower = new Follower(id, { control: from, coding: from });
      await follower.caughtUp(cursors);
      if (!process.stdin.isTTY && !args.interactive) await follower.waitFor((e) => e.event.type === 'sandbox_terminated');
    }
  }
  await interact(follower, id);
  follower.stop();
  const record = await call('GET', `/sandboxes/${id}`).catch(() => null);
  const cursors = record?.cursors as Record<StreamName, number> | undefined;
  if (cursors) console.log(`sandbox ${id}: follow it again with --id=${id} --cursor=${Math.min(cursors.control, cursors.coding)}`);
  process.exit(follower.failed ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(`sandbox-task: ${(err as Error).message}`);
  process.exit(1);
});
