/**
 * What the rollout extras cost an execute: `true` on the broker plain, and with a request_id (the
 * retry window), `facts: true` (the cgroup counters read before and after) on a lease with a
 * lease_ttl, interleaved one operation each in turn, as a pair of their own. Target: p50 with the
 * extras at most 1.05 x plain.
 */
import type { SeqResult, Target } from '../protocol';
import type { BenchContext } from '../lib/context';

const SEQ_MAX_MS = 20_000;
const SLACK_MS = 90_000;
export const EXTRAS_P50_LIMIT = 1.05;

export async function rolloutExtras(ctx: BenchContext, brokerUrl: string): Promise<void> {
  const { n, warmup } = ctx.plan.seq.true;
  const targets: Target[] = [
    { via: 'broker', url: brokerUrl },
    { via: 'broker', url: brokerUrl, extras: true },
  ];
  const job = { kind: 'seqCompare', targets, command: 'true', expectBytes: 0, n, warmup, maxMs: SEQ_MAX_MS } as const;
  const [plain, extras] = await ctx.job<SeqResult[]>(job, SEQ_MAX_MS + SLACK_MS);
  ctx.results.rolloutExtras = { plain, extras };
  const ratio = extras.latency.p50 / plain.latency.p50;
  ctx.log(
    `execute true plain / with request_id + facts + lease_ttl: p50 ${plain.latency.p50.toFixed(3)} / ${extras.latency.p50.toFixed(3)} ms ` +
      `(${ratio.toFixed(3)} x, target <= ${EXTRAS_P50_LIMIT})${plain.errors + extras.errors > 0 ? `  !! ${plain.errors + extras.errors} errors` : ''}`,
  );
}
