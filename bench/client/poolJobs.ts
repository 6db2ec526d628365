/** The pool-level figures: acquire, whole episodes, release-to-AVAILABLE, and the output flood. */
import type { EpisodeResult, EpisodeVariant, FloodResult, OpenLoopResult, SeqResult } from '../protocol';
import { nowMs, sleep, summarize } from '../lib/stats';
import { forkWindow, idleForkRate } from '../lib/forks';
import { processCpuWindow, sessionCpuMeter, sessionCpuOf, windowDelta } from '../lib/sessionCpu';
import { runClosedLoop, type Op } from './drive';
import { BrokerHttp } from './brokerHttp';

const EXECUTES_PER_EPISODE = 5;

/** Acquires `poolSize` free sessions one by one, releases them, waits until all are back; `rounds` times. */
export async function acquireFree(url: string, poolSize: number, rounds: number, maxMs: number): Promise<SeqResult> {
  const http = new BrokerHttp(url, 1);
  const deadline = nowMs() + maxMs;
  const samples: number[] = [];
  let errors = 0;
  try {
    for (let r = 0; r < rounds && nowMs() < deadline; r++) {
      const ids: string[] = [];
      for (let k = 0; k < poolSize; k++) {
        const t0 = nowMs();
        ids.push(await http.acquire());
        samples.push(nowMs() - t0);
      }
      for (const id of ids) await http.release(id);
      if (!(await waitAvailable(http, poolSize, deadline))) errors++;
    }
  } finally {
    await http.close();
  }
  const latency = summarize(samples);
  return { latency, opsPerSec: 1000 / latency.mean, errors };
}

async function waitAvailable(http: BrokerHttp, want: number, deadline: number): Promise<boolean> {
  while (nowMs() < deadline) {
    if ((await http.health()).available_sessions >= want) return true;
    await sleep(20);
  }
  return false;
}

interface EpisodeDetail {
  acquireMs: number;
  executeMs: number[];
  releaseMs: number;
}

/** One episode on `http`: acquire (timed), `echo 1` .. `echo 5` (each checked), release. */
async function oneEpisode(http: BrokerHttp, signal?: AbortSignal): Promise<EpisodeDetail> {
  const t0 = nowMs();
  const id = await http.acquire(signal); // aborted when the window is over: it may wait long
  const acquireMs = nowMs() - t0;
  const executeMs: number[] = [];
  let releaseMs: number;
  try {
    for (let i = 1; i <= EXECUTES_PER_EPISODE; i++) {
      const s = nowMs();
      const r = await http.execute(id, `echo ${i}`);
      if (r.stdout !== `${i}\n` || r.return_code !== 0) throw new Error(`episode: echo ${i} gave rc ${r.return_code} '${r.stdout}'`);
      executeMs.push(nowMs() - s);
    }
  } finally {
    const s = nowMs();
    await http.release(id);
    releaseMs = nowMs() - s;
  }
  return { acquireMs, executeMs, releaseMs };
}

/**
 * The same episode in 5 requests (the additive API, docs/pool.md "For rollout clients"): `echo 1` as the
 * acquire's startup command, `echo 2` .. `echo 4`, then `echo 5` with `"release": true`. Its
 * acquire time includes the first command; there is no release request.
 */
async function fewerRequestsEpisode(http: BrokerHttp, signal?: AbortSignal): Promise<EpisodeDetail> {
  const t0 = nowMs();
  const acquired = await http.acquireWith({ startup_commands: ['echo 1'] }, signal);
  const acquireMs = nowMs() - t0;
  const first = acquired.startup_results?.[0];
  const id = acquired.session_id;
  const executeMs: number[] = [];
  let released = false;
  try {
    if (first?.stdout !== '1\n' || first.return_code !== 0) throw new Error(`episode: startup echo 1 gave ${JSON.stringify(first)}`);
    for (let i = 2; i <= EXECUTES_PER_EPISODE; i++) {
      const s = nowMs();
      const last = i === EXECUTES_PER_EPISODE;
      const r = await http.execute(id, `echo ${i}`, 30, last ? { release: true } : {});
      released = last && r.released === true;
      if (r.stdout !== `${i}\n` || r.return_code !== 0 || (last && !released)) throw new Error(`episode: echo ${i} gave ${JSON.stringify(r)}`);
      executeMs.push(nowMs() - s);
    }
  } finally {
    if (!released) await http.release(id);
  }
  return { acquireMs, executeMs, releaseMs: 0 };
}

const EPISODES: Record<EpisodeVariant, { run: (http: BrokerHttp, signal?: AbortSignal) => Promise<EpisodeDetail>; requests: number }> = {
  plain: { run: oneEpisode, requests: EXECUTES_PER_EPISODE + 2 },
  fewer: { run: fewerRequestsEpisode, requests: EXECUTES_PER_EPISODE },
};

/**
 * `concurrency` clients, each looping: acquire, `echo 1` .. `echo 5`, release. `countForks`: the
 * processes the machine created during the window, per episode (lib/forks.ts).
 */
export async function episodes(
  url: string,
  concurrency: number,
  rampMs: number,
  durationMs: number,
  drainMs: number,
  countForks = false,
  sessionCgroups?: { containerIds: string[] } | { localInstance: string },
  brokerPid?: number,
  variant: EpisodeVariant = 'plain',
): Promise<EpisodeResult> {
  const http = new BrokerHttp(url, concurrency);
  const { run, requests } = EPISODES[variant];
  const episode: Op<EpisodeDetail> = (signal) => run(http, signal);
  try {
    // Rollout clients keep their connections: open all of them first, so the window sees steady state.
    const c0 = nowMs();
    const connect = await Promise.allSettled(Array.from({ length: concurrency }, () => http.health()));
    const connectMs = nowMs() - c0;
    const connectErrors = connect.filter((c) => c.status === 'rejected').length;
    const idlePerSec = countForks ? await idleForkRate(1000) : 0;
    const window = countForks ? forkWindow(rampMs, durationMs) : null;
    const meter = sessionCgroups ? sessionCpuMeter(sessionCgroups) : null;
    const cpuWindow = meter ? windowDelta(rampMs, durationMs, () => meter.read()) : null;
    const processWindow = processCpuWindow(rampMs, durationMs, brokerPid);
    const loop = await runClosedLoop(Array.from({ length: concurrency }, () => episode), { rampMs, durationMs, drainMs });
    const forks = window?.done(loop.completed, idlePerSec);
    const sessionCpu = sessionCpuOf(meter, cpuWindow, loop.completed);
    const processCpu = processWindow.done(loop.completed);
    const { details, ...result } = loop;
    return {
      ...result,
      ...(forks ? { forks } : {}),
      ...(sessionCpu ? { sessionCpu } : {}),
      ...(processCpu ? { processCpu } : {}),
      requestsPerEpisode: requests,
      connectMs,
      connectErrors,
      executesPerSec: result.opsPerSec * EXECUTES_PER_EPISODE,
      acquire: summarize(details.map((d) => d.acquireMs)),
      execute: summarize(details.flatMap((d) => d.executeMs)),
      release: summarize(details.map((d) => d.releaseMs)),
    };
  } finally {
    await http.close();
  }
}

/**
 * Episodes arriving on their own at `ratePerSec` for `durationMs` (open loop: an arrival does not
 * wait for earlier episodes), each on a connection of its own (up to `maxOutstanding`; an arrival
 * beyond that is dropped and counted). Acquire latency is then the wait a rollout sees below
 * saturation, which a closed loop at saturation cannot show (there it is Little's law).
 */
export async function episodesOpen(url: string, ratePerSec: number, arrivals: 'poisson' | 'fixed', durationMs: number, maxOutstanding: number, drainMs: number): Promise<OpenLoopResult> {
  const http = new BrokerHttp(url, maxOutstanding);
  const acquire: number[] = [];
  const episode: number[] = [];
  let started = 0;
  let dropped = 0;
  let errors = 0;
  let firstError: string | undefined;
  const running = new Set<Promise<void>>();
  const meanGapMs = 1000 / ratePerSec;
  try {
    // Warm connections first, as a rollout client keeps them.
    await Promise.allSettled(Array.from({ length: Math.min(maxOutstanding, 64) }, () => http.health()));
    const t0 = nowMs();
    let next = t0;
    while (next < t0 + durationMs) {
      const wait = next - nowMs();
      if (wait > 0) await sleep(wait);
      if (running.size >= maxOutstanding) dropped++;
      else {
        started++;
        const s = nowMs();
        const p: Promise<void> = oneEpisode(http).then(
          (d) => {
            acquire.push(d.acquireMs);
            episode.push(nowMs() - s);
          },
          (err: Error) => {
            errors++;
            firstError ??= err.message;
          },
        );
        running.add(p);
        void p.finally(() => running.delete(p));
      }
      // Poisson arrivals: exponential gaps of mean 1 / rate.
      next += arrivals === 'poisson' ? -Math.log(1 - Math.random()) * meanGapMs : meanGapMs;
    }
    const windowMs = nowMs() - t0;
    const drained = await Promise.race([Promise.all([...running]).then(() => true), sleep(drainMs).then(() => false)]);
    if (!drained) {
      errors++;
      firstError ??= `${running.size} episodes had not finished ${drainMs} ms after the last arrival`;
    }
    return {
      ratePerSec,
      arrivals,
      windowMs,
      started,
      completed: episode.length,
      dropped,
      errors,
      firstError,
      opsPerSec: (episode.length * 1000) / windowMs,
      acquire: summarize(acquire),
      episode: summarize(episode),
    };
  } finally {
    await http.close();
  }
}

/** On a 1x1 pool: acquire (timed), `true`, release, `n` times; each timed acquire waits for the recycle. */
export async function releaseToAvailable(url: string, n: number, maxMs: number): Promise<SeqResult> {
  const http = new BrokerHttp(url, 1);
  const deadline = nowMs() + maxMs;
  const samples: number[] = [];
  let errors = 0;
  try {
    for (let i = 0; i <= n && nowMs() < deadline; i++) {
      const t0 = nowMs();
      const id = await http.acquire();
      if (i > 0) samples.push(nowMs() - t0); // the first acquire found a warm session, not a recycled one
      await http.executeChecked(id, 'true', 0).catch(() => errors++);
      await http.release(id);
    }
  } finally {
    await http.close();
  }
  const latency = summarize(samples);
  return { latency, opsPerSec: 1000 / latency.mean, errors };
}

/** `sessions` leases each print `bytesPerSession` NUL bytes at once; the broker must cap, not hoard. */
export async function flood(url: string, sessions: number, bytesPerSession: number, timeoutS: number): Promise<FloodResult> {
  const http = new BrokerHttp(url, sessions);
  const ids: string[] = [];
  let errors = 0;
  let truncated = 0;
  let responseBytes = 0;
  let firstError: string | undefined;
  try {
    for (let i = 0; i < sessions; i++) ids.push(await http.acquire());
    const t0 = nowMs();
    await Promise.all(
      ids.map(async (id) => {
        try {
          const r = await http.execute(id, `head -c ${bytesPerSession} /dev/zero`, timeoutS);
          if (r.return_code !== 0) throw new Error(`flood: rc ${r.return_code} ${r.stderr.slice(0, 100)}`);
          responseBytes += r.stdout.length;
          if (r.truncated) truncated++;
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }),
    );
    return { sessions, bytesPerSession, wallMs: nowMs() - t0, responseBytes, truncated, errors, firstError };
  } finally {
    await Promise.all(ids.map((id) => http.release(id).catch(() => undefined)));
    await http.close();
  }
}
