/**
 * One client's episode: acquire (plain, with files and startup commands, or given up by the client),
 * a check that nothing of an earlier lease is there, a random run of steps, then release — or not:
 * some clients walk away and leave the lease to the broker's idle reclaim.
 */
import { NoAnswer, type Answer } from './http';
import { Lease, type ClientCtx } from './lease';
import { abuseStep, disconnectStep, floodStep, timeoutStep, type StepEnd } from './steps';
import { Unexpected } from './tally';
import { GAVE_UP_OUTCOME } from './verdicts';
import { sleep } from '../lib/stats';

/** Relative weights of the steps; `verify` re-checks the state, `set` changes it. */
const STEPS = { set: 30, verify: 30, timeout: 12, flood: 5, disconnect: 4, abuse: 5 } as const;
const ACQUIRES = { plain: 80, withFiles: 15, clientGivesUp: 5 } as const;
const ABANDON_CHANCE = 0.02;
const MAX_STEPS = 8;

export interface EpisodeOptions {
  maxOutputBytes: number;
  forkBurst: boolean;
}

function sessionIdOf(a: Answer, kind: string): string {
  const id = a.body?.session_id;
  // A 503 is the broker's clear "no session in time"; without Retry-After it is not clear enough.
  if (a.status === 503 && a.retryAfter === undefined) throw new Unexpected(`${kind}: HTTP 503 without Retry-After`, JSON.stringify(a.body).slice(0, 300));
  if (a.status !== 200 || typeof id !== 'string' || !/^[0-9a-f]{32}$/.test(id)) {
    throw new Unexpected(`${kind}: HTTP ${a.status}${a.body?.code ? ` ${a.body.code}` : ''}`, JSON.stringify(a.body).slice(0, 300));
  }
  return id;
}

/** Null when the client gave up waiting (it disconnected; the broker must drop it from the queue). */
async function acquire(c: ClientCtx): Promise<Lease | null> {
  const how = c.rnd.weighted(ACQUIRES);
  if (how === 'withFiles') return acquireWithFiles(c);
  const abort = new AbortController();
  const timer = how === 'clientGivesUp' ? setTimeout(() => abort.abort(), c.rnd.int(0, 300)) : null;
  try {
    const a = await c.http.post('/session/acquire', {}, abort.signal);
    c.tally.latency('acquire', a.ms);
    const lease = new Lease(c, sessionIdOf(a, 'acquire'));
    await lease.verify('fresh lease');
    return lease;
  } catch (err) {
    if (err instanceof NoAnswer && err.aborted && abort.signal.aborted) {
      c.tally.count(GAVE_UP_OUTCOME);
      return null;
    }
    throw err;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** Files (base64) and startup commands: the file is there, the startup state holds. */
async function acquireWithFiles(c: ClientCtx): Promise<Lease> {
  const t = c.rnd.token();
  const body = { files: { 'in/seed.txt': Buffer.from(`seed-${t}\n`).toString('base64') }, startup_commands: [`export SOAK_E=s${t}`, 'cd in'] };
  const a = await c.http.post('/session/acquire', body);
  c.tally.latency('acquire with files', a.ms);
  const lease = new Lease(c, sessionIdOf(a, 'acquire with files'));
  const ok = { status: 'Success', stdout: '', stderr: '', return_code: 0 };
  if (JSON.stringify(a.body.startup_results) !== JSON.stringify([ok, ok])) {
    throw new Unexpected('acquire with files: wrong startup_results', JSON.stringify(a.body.startup_results));
  }
  lease.exported = `s${t}`;
  lease.dir = '/in';
  await lease.verify('fresh lease with files', { command: 'cat seed.txt; ', stdout: `seed-${t}\n` });
  return lease;
}

async function step(lease: Lease, options: EpisodeOptions): Promise<StepEnd> {
  const kind = lease.c.rnd.weighted(STEPS);
  switch (kind) {
    case 'set':
      await lease.setState();
      return 'continue';
    case 'verify':
      await lease.verify('verify state');
      return 'continue';
    case 'timeout':
      return timeoutStep(lease);
    case 'flood':
      return floodStep(lease, options.maxOutputBytes);
    case 'disconnect':
      return disconnectStep(lease);
    case 'abuse':
      return abuseStep(lease, options.forkBurst);
  }
}

/** Runs one episode; every unexpected answer is tallied as an error, and the lease given back. */
export async function runEpisode(c: ClientCtx, options: EpisodeOptions): Promise<void> {
  let lease: Lease | null = null;
  try {
    lease = await acquire(c);
    if (!lease) return;
    const steps = c.rnd.int(1, MAX_STEPS);
    for (let i = 0; i < steps; i++) {
      if ((await step(lease, options)) === 'ended') return;
      await sleep(c.rnd.int(0, 30)); // a model thinking
    }
    if (c.rnd.chance(ABANDON_CHANCE)) {
      c.reclaims.add(lease.id);
      return;
    }
    await lease.release();
  } catch (err) {
    if (err instanceof NoAnswer && err.aborted) {
      c.tally.count('cut at the end of the drain');
      return;
    }
    if (err instanceof Unexpected) c.tally.error(err.kind, `${lease ? `lease ${lease.id}: ` : ''}${err.message}`);
    else if (err instanceof NoAnswer) c.tally.error(`no answer: ${err.code}`, lease ? `lease ${lease.id}` : 'acquire');
    else c.tally.error(`soak bug: ${(err as Error).name}`, (err as Error).stack ?? String(err));
    // Best effort: the lease goes back to the pool (its answer is not checked, the error is already counted).
    if (lease) await c.http.post(`/session/${lease.id}/release`, {}).catch(() => undefined);
  } finally {
    c.tally.count('episodes ended');
  }
}
