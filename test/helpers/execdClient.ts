/**
 * Clients of a sandbox's execd (`/sandboxes/<id>/execd`): OpenSandbox's own TypeScript SDK, its
 * execd-level adapters built exactly as the SDK's Sandbox builds them, and a raw SSE reader for the
 * routes whose SDK (the code interpreter's) is not installed here, speaking the same wire format.
 */
import { request } from 'undici';
import { SandboxApiException } from '@alibaba-group/opensandbox';
import type * as Internal from '@alibaba-group/opensandbox/dist/internal';

// The SDK's `./internal` entry is only reachable through its package exports, which TypeScript's
// node10 resolution does not read: the types come from the file, the code through jest's resolver.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = require('@alibaba-group/opensandbox/internal') as typeof Internal;

export interface ExecdSdk {
  baseUrl: string;
  commands: Internal.CommandsAdapter;
  health: Internal.HealthAdapter;
}

export function execdBase(brokerUrl: string, sandboxId: string): string {
  return `${brokerUrl}/sandboxes/${sandboxId}/execd`;
}

export function execdSdk(brokerUrl: string, sandboxId: string, headers: Record<string, string> = {}): ExecdSdk {
  const baseUrl = execdBase(brokerUrl, sandboxId);
  const client = sdk.createExecdClient({ baseUrl, headers });
  return { baseUrl, commands: new sdk.CommandsAdapter(client, { baseUrl, headers }), health: new sdk.HealthAdapter(client) };
}

export type WireEvent = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface SseRun {
  status: number;
  /** Events so far (all of them once `done` resolved). */
  events: WireEvent[];
  /** The JSON error body of a non-200 answer. */
  error: WireEvent | null;
  done: Promise<void>;
}

/** POSTs `body` and reads the answer's SSE events as they come (every `data:` line is one JSON event). */
export async function startSse(url: string, body: unknown): Promise<SseRun> {
  const res = await request(url, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const run: SseRun = { status: res.statusCode, events: [], error: null, done: Promise.resolve() };
  if (res.statusCode !== 200) {
    run.error = (await res.body.json()) as WireEvent;
    return run;
  }
  run.done = (async () => {
    let buf = '';
    for await (const chunk of res.body) {
      buf += (chunk as Buffer).toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.startsWith('data: ')) run.events.push(JSON.parse(line.slice(6)) as WireEvent);
      }
    }
  })();
  return run;
}

/** The whole stream of one POST. */
export async function sse(url: string, body: unknown): Promise<SseRun> {
  const run = await startSse(url, body);
  await run.done;
  return run;
}

/** The stream's events without pings, and its output of one stream joined. */
export function meaningful(events: WireEvent[]): WireEvent[] {
  return events.filter((e) => e.type !== 'ping');
}

export function textOf(events: WireEvent[], stream: 'stdout' | 'stderr'): string {
  return events
    .filter((e) => e.type === stream)
    .map((e) => e.text as string)
    .join('');
}

/** The SandboxApiException an SDK call rejects with (a resolve or any other error fails the test). */
export async function sdkError(promise: Promise<unknown>): Promise<SandboxApiException> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandboxApiException);
  return err as SandboxApiException;
}
