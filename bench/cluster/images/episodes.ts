/**
 * The episodes of the images bench (run.ts), through a gateway: an episode by image (acquire naming
 * the task's image, its commands, one of which writes in the task's repository, release), and the
 * same episode today's way (a lifecycle sandbox of the image in a dedicated container: a create
 * with resourceLimits, its commands through execd, its delete). Images are drawn from a Zipf-like
 * popularity with a seeded generator, so two runs draw the same sequence.
 */
import { Agent } from 'undici';
import { httpCall, type HttpResult } from '../../../devtools/httpCall';
import { nowMs } from '../../lib/stats';

/** The commands of an episode (the second writes in the repository). */
export const EPISODE_COMMANDS = ['cat /repo/README > /dev/null', 'echo step >> /repo/NOTES', 'ls /repo | wc -l', 'bash /repo/run-tests.sh'];

export interface EpisodeSample {
  image: string;
  /** Since the phase started (ms): when the episode began, and when its acquire answered. */
  startMs: number;
  acquiredAtMs: number;
  acquireMs: number;
  /** image_cost.kind, the X-Broker-Placement header, the node the session id names. */
  cost: string;
  placement: string;
  node: string;
  episodeMs: number;
  error: string | null;
}

export class GatewayClient {
  readonly agent = new Agent({ connections: 512, keepAliveTimeout: 60_000, headersTimeout: 0, bodyTimeout: 0 });

  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  call(method: string, path: string, body?: unknown): Promise<HttpResult> {
    return httpCall(this.agent, this.url + path, method, body, { authorization: `Bearer ${this.token}` });
  }
}

/** A Zipf-like sampler over `n` ranks (rank i drawn with weight 1/(i+1)^s), seeded. */
export function zipfSampler(n: number, s: number, seed: number): () => number {
  const cumulative: number[] = [];
  let total = 0;
  for (let i = 0; i < n; i++) cumulative.push((total += 1 / Math.pow(i + 1, s)));
  let state = seed >>> 0;
  const random = (): number => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** One episode by image: acquire, the commands, release. */
export async function episodeByImage(client: GatewayClient, image: string, phaseStartMs: number, acquireTimeoutS: number): Promise<EpisodeSample> {
  const startMs = nowMs();
  const sample: EpisodeSample = { image, startMs: startMs - phaseStartMs, acquiredAtMs: 0, acquireMs: 0, cost: '', placement: '', node: '', episodeMs: 0, error: null };
  try {
    const a = await client.call('POST', '/session/acquire', { image, acquire_timeout: acquireTimeoutS });
    sample.acquireMs = nowMs() - startMs;
    sample.acquiredAtMs = nowMs() - phaseStartMs;
    if (a.status !== 200) throw new Error(`acquire ${a.status} ${a.text.slice(0, 200)}`);
    const id = a.json.session_id as string;
    sample.cost = a.json.image_cost?.kind ?? '';
    sample.placement = String(a.headers['x-broker-placement'] ?? '');
    sample.node = id.split('.')[0];
    for (const command of EPISODE_COMMANDS) {
      const r = await client.call('POST', `/session/${id}/execute`, { command });
      if (r.status !== 200 || r.json.return_code !== 0) throw new Error(`execute ${r.status} ${r.text.slice(0, 200)}`);
    }
    const rel = await client.call('POST', `/session/${id}/release`);
    if (rel.status !== 200) throw new Error(`release ${rel.status}`);
  } catch (err) {
    sample.error = (err as Error).message;
  }
  sample.episodeMs = nowMs() - startMs;
  return sample;
}

/** One episode today's way: a dedicated container of the image (lifecycle create with limits), the commands through execd, delete. */
export async function episodeInContainer(client: GatewayClient, image: string, phaseStartMs: number): Promise<EpisodeSample> {
  const startMs = nowMs();
  const sample: EpisodeSample = { image, startMs: startMs - phaseStartMs, acquiredAtMs: 0, acquireMs: 0, cost: 'container', placement: '', node: '', episodeMs: 0, error: null };
  try {
    const body = { image: { uri: image }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: { cpu: '1', memory: '512Mi' } };
    const c = await client.call('POST', '/v1/sandboxes', body);
    sample.acquireMs = nowMs() - startMs;
    sample.acquiredAtMs = nowMs() - phaseStartMs;
    if (c.status !== 202) throw new Error(`create ${c.status} ${c.text.slice(0, 200)}`);
    const id = c.json.id as string;
    sample.node = id.split('.')[0];
    try {
      for (const command of EPISODE_COMMANDS) {
        const r = await client.call('POST', `/sandboxes/${id}/execd/command`, { command });
        if (r.status !== 200) throw new Error(`execd command ${r.status} ${r.text.slice(0, 200)}`);
      }
    } finally {
      await client.call('DELETE', `/v1/sandboxes/${id}`);
    }
  } catch (err) {
    sample.error = (err as Error).message;
  }
  sample.episodeMs = nowMs() - startMs;
  return sample;
}

/** `total` episodes from `clients` closed-loop clients; `episode(i)` runs the i-th. */
export async function closedLoop(total: number, clients: number, episode: (i: number) => Promise<EpisodeSample>): Promise<{ samples: EpisodeSample[]; wallMs: number }> {
  const samples: EpisodeSample[] = [];
  let next = 0;
  const startMs = nowMs();
  await Promise.all(
    Array.from({ length: Math.min(clients, total) }, async () => {
      while (next < total) samples.push(await episode(next++));
    }),
  );
  return { samples, wallMs: nowMs() - startMs };
}
