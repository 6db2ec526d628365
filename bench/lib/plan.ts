/**
 * Command line and run plan: which phases run and how many samples each takes. `--quick` keeps the
 * core figures and stays under a minute; the full plan adds the big pools, the flood and the profile.
 */
import type { CommandName } from '../protocol';

/**
 * `floor`: the episode floor beside the broker's episodes above 8 (client/episodeFloor.ts); `open`:
 * episodes arriving open-loop at half the closed loop's rate, for acquire latency below saturation;
 * `fewer`: the same episodes in 5 requests instead of 7 (the first command on the acquire, the last
 * one releasing), on the same broker, at the floor's levels. All three run only with `episodes`. `workspace`: the shared PTY workspaces' figures, on both backends
 * whichever `--backend` is (phases/workspace.ts).
 */
export const PHASES = ['core', 'release', 'episodes', 'floor', 'open', 'fewer', 'flood', 'warmup', 'profile', 'workspace'] as const;
export type Phase = (typeof PHASES)[number];

export interface Plan {
  backend: 'local' | 'docker';
  quick: boolean;
  image: string;
  outDir: string;
  phases: Set<Phase>;
  /** Episode concurrencies; the pool is ceil(c / 8) containers x 8 sessions, a broker per size. */
  levels: number[];
  commands: CommandName[];
  seq: Record<CommandName, { n: number; warmup: number }>;
  /** Commands also run by 8 concurrent sessions for throughput. */
  concCommands: CommandName[];
  concMs: number;
  acquireRounds: number;
  releaseN: number;
  episodeWindow(level: number): { rampMs: number; durationMs: number };
  /** At the floor's levels, rounds of [floor, broker(, 5 requests)] windows (phases/pool.ts episodeRounds). */
  episodeRounds: number;
  raw64Ms: number;
  /** The open-loop episodes: their rate is this fraction of the closed loop's at the same level. */
  openLoop: { fraction: number; durationMs: number; arrivals: 'poisson' | 'fixed' };
  flood: { sessions: number; bytesPerSession: number; capBytes: number };
  /** `rounds`: floor and broker warm-ups measured in turn, the target on the median of their ratios. */
  warmup: { containers: number; perContainer: number; rounds: number };
}

const USAGE = `usage: npm run bench -- [--backend local|docker] [--quick] [--image IMG] [--levels 1,8,64,256,1024]
                          [--skip ${PHASES.join(',')}] [--only PHASE,...] [--warmup-rounds N] [--episode-rounds N] [--out DIR]`;

export function parseArgs(argv: string[], benchDir: string): Plan {
  const opts = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') opts.set('quick', '1');
    else if (a === '--help' || a === '-h') throw new Error(USAGE);
    else if (a.startsWith('--') && i + 1 < argv.length) opts.set(a.slice(2), argv[++i]);
    else throw new Error(`unknown argument '${a}'\n${USAGE}`);
  }
  for (const k of opts.keys()) if (!['quick', 'backend', 'image', 'levels', 'skip', 'only', 'out', 'warmup-rounds', 'episode-rounds'].includes(k)) throw new Error(`unknown option --${k}\n${USAGE}`);
  const backend = opts.get('backend') ?? 'local';
  if (backend !== 'local' && backend !== 'docker') throw new Error(`--backend must be local or docker\n${USAGE}`);
  const quick = opts.has('quick');
  const skip = new Set((opts.get('skip') ?? '').split(',').filter(Boolean));
  const only = opts.has('only') ? new Set((opts.get('only') ?? '').split(',').filter(Boolean)) : null;
  for (const s of [...skip, ...(only ?? [])]) if (!(PHASES as readonly string[]).includes(s)) throw new Error(`--skip / --only: unknown phase '${s}'\n${USAGE}`);
  const quickPhases: Phase[] = ['core', 'release'];
  const chosen: Phase[] = only ? PHASES.filter((p) => only.has(p)) : quick ? quickPhases : [...PHASES];
  const phases = new Set<Phase>(chosen.filter((p) => !skip.has(p)));
  const levels = (opts.get('levels') ?? (quick ? '1,8' : '1,8,64,256,1024')).split(',').map(Number);
  if (levels.some((l) => !Number.isInteger(l) || l < 1 || l > 4096)) throw new Error(`--levels: integers 1..4096\n${USAGE}`);
  const warmupRounds = Number(opts.get('warmup-rounds') ?? 5);
  if (!Number.isInteger(warmupRounds) || warmupRounds < 1 || warmupRounds > 9) throw new Error(`--warmup-rounds: an integer 1..9\n${USAGE}`);
  const episodeRounds = Number(opts.get('episode-rounds') ?? (quick ? 1 : 3));
  if (!Number.isInteger(episodeRounds) || episodeRounds < 1 || episodeRounds > 9) throw new Error(`--episode-rounds: an integer 1..9\n${USAGE}`);
  return {
    backend,
    quick,
    image: opts.get('image') ?? 'bash-broker-sandbox:latest',
    outDir: opts.get('out') ?? `${benchDir}/results`,
    phases,
    levels,
    commands: quick ? ['true', 'echo', 'out64k'] : ['true', 'echo', 'out64k', 'out1m'],
    // Warm-up per path before the samples: an HTTP server (the no-op most) reaches its steady state
    // only after several thousand requests (V8 tiering up node's http code): in session 9 the no-op's
    // p50 was ~0.19 ms over its first 2500 requests, ~0.107 after 3000 and 0.085 after 8000, steady
    // from there. With 500 the bench had measured a cold no-op beside a warmer broker.
    seq: quick
      ? { true: { n: 400, warmup: 4000 }, echo: { n: 400, warmup: 300 }, out64k: { n: 100, warmup: 20 }, out1m: { n: 0, warmup: 0 } }
      : { true: { n: 2000, warmup: 8000 }, echo: { n: 2000, warmup: 1000 }, out64k: { n: 500, warmup: 50 }, out1m: { n: 100, warmup: 10 } },
    concCommands: quick ? ['true'] : ['true', 'echo', 'out64k', 'out1m'],
    concMs: quick ? 1500 : 3000,
    acquireRounds: quick ? 5 : 25,
    releaseN: quick ? 25 : 100,
    // The ramp covers a few episodes: on Docker under load one takes 1-5 s, and a window that opens
    // while every client is still in its first episode measures their synchronized start.
    episodeWindow: (level) =>
      quick ? { rampMs: 300, durationMs: 2000 } : level >= 256 ? { rampMs: 5000, durationMs: 12_000 } : level >= 64 ? { rampMs: 3000, durationMs: 8000 } : { rampMs: 1000, durationMs: 6000 },
    episodeRounds,
    raw64Ms: 5000,
    openLoop: { fraction: 0.5, durationMs: quick ? 4000 : 10_000, arrivals: 'poisson' },
    flood: { sessions: 64, bytesPerSession: 50_000_000, capBytes: 65536 },
    warmup: { containers: 128, perContainer: 8, rounds: warmupRounds },
  };
}
