/**
 * One command, three ways to run it: through the broker (a leased session per worker), through the
 * no-op HTTP server (the same request, answered `{}`), or on a raw BashSession (no HTTP at all) over
 * one of the raw transports.
 */
import { loadConfig } from '../../src/config/config';
import type { RawTransport, Target } from '../protocol';
import type { Op } from './drive';
import { BrokerHttp } from './brokerHttp';
import type { RawSet } from './raw';

/** Shaped like an execute; the node:http no-op ignores the path, the express one routes it. */
export const NOOP_PATH = '/session/00000000000000000000000000000000/execute';

export interface Runners {
  ops: Op[];
  close(): Promise<void>;
}

/** The broker's default output cap, so raw sessions capture as much as the broker does. */
const MAX_OUTPUT_BYTES = loadConfig({}).maxOutputBytes;

export async function openRunners(target: Target, count: number, command: string, expectBytes: number, raw: ReadonlyMap<RawTransport, RawSet>): Promise<Runners> {
  switch (target.via) {
    case 'broker':
      return brokerRunners(target.url, count, command, expectBytes, target.extras === true);
    case 'noop': {
      const http = new BrokerHttp(target.url, count);
      const body = { command, timeout: 30 };
      const op: Op = async () => void (await http.post(NOOP_PATH, body));
      return { ops: Array.from({ length: count }, () => op), close: () => http.close() };
    }
    case 'raw':
      return rawRunners(raw.get(target.transport) ?? null, count, command, expectBytes);
  }
}

async function brokerRunners(url: string, count: number, command: string, expectBytes: number, extras: boolean): Promise<Runners> {
  const http = new BrokerHttp(url, count);
  const ids: string[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(ids.map((id) => http.release(id).catch(() => undefined)));
    await http.close();
  };
  try {
    for (let i = 0; i < count; i++) ids.push(extras ? (await http.post<{ session_id: string }>('/session/acquire', { lease_ttl: 600 })).session_id : await http.acquire());
  } catch (err) {
    await close();
    throw err;
  }
  let step = 0;
  const withExtras = (id: string) => () => http.executeChecked(id, command, expectBytes, { request_id: `bench-${id}-${step++}`, facts: true });
  return { ops: ids.map((id) => (extras ? withExtras(id) : () => http.executeChecked(id, command, expectBytes))), close };
}

function rawRunners(raw: RawSet | null, count: number, command: string, expectBytes: number): Runners {
  if (!raw || raw.sessions.length < count) throw new Error(`raw target needs ${count} open sessions, has ${raw?.sessions.length ?? 0}`);
  const ops = raw.sessions.slice(0, count).map((session) => async () => {
    const r = await session.execute(command, { timeoutMs: 30_000, maxOutputBytes: MAX_OUTPUT_BYTES });
    if (r.returnCode !== 0 || r.stdout.length !== expectBytes) {
      throw new Error(`raw '${command.slice(0, 40)}': rc ${r.returnCode}, ${r.stdout.length} bytes of stdout`);
    }
  });
  return { ops, close: async () => undefined };
}
