/**
 * The soak's command line: how long, how many clients, how big a pool, and the broker settings it
 * runs under. Every bound (duration, drain, settle) is here, so a run always ends.
 */
export interface SoakPlan {
  /** The command line that ran it (for the report). */
  command: string;
  quick: boolean;
  /** Load phase only; warm-up, drain and the end checks come on top. */
  durationS: number;
  clients: number;
  containers: number;
  perContainer: number;
  image: string;
  outDir: string;
  seed: number;
  /** Abuse includes fork bursts against the pids limit (--no-fork-burst leaves them out). */
  forkBurst: boolean;
  /** After the load stops, clients may finish the episode they are in for this long, then are aborted. */
  drainS: number;
  /** The broker's settings for the run (BROKER_*), chosen so that every path is reached in minutes. */
  broker: {
    maxOutputBytes: number;
    idleTimeoutS: number;
    acquireTimeoutS: number;
    pidsLimit: number;
    memory: string;
    /** More BROKER_* settings from `--env NAME=VALUE` (repeatable), e.g. to compare one setting's effect. */
    extra: Record<string, string>;
  };
  /**
   * Sized (the default; `--sized` says so explicitly): the mix's capacity measured first
   * (capacity.ts), then the mix open-loop at 70% of it for `durationS`, then an overload at 150% for
   * `overloadS`, then a recovery step at 50%. With `--closed`: the closed-loop mix of `clients` clients.
   */
  sized: boolean;
  capacityStepS: number;
  overloadS: number;
  recoveryS: number;
  /** Warm sandboxes for the SDK's episodes (a warm pool of whole containers). */
  warmSlots: number;
  /** The tasks' image (the sized mix runs tasks with a stub model). */
  taskImage: string;
  /** Samples of RSS, fds and /health every this many ms; /metrics every 5 samples. */
  sampleEveryMs: number;
}

const USAGE = `usage: npm run soak -- [--quick] [--duration S] [--clients N] [--containers N] [--per-container N]
                         [--image IMG] [--seed N] [--out DIR] [--no-fork-burst] [--env BROKER_X=VALUE]...
                         [--sized (the default) | --closed] [--overload S] [--capacity-step S]`;

const OPTIONS = ['overload', 'capacity-step', 'duration', 'clients', 'containers', 'per-container', 'image', 'seed', 'out'];

function positiveInt(opts: Map<string, string>, name: string, dflt: number): number {
  const raw = opts.get(name);
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got '${raw}'\n${USAGE}`);
  return n;
}

export function parseSoakArgs(argv: string[], soakDir: string): SoakPlan {
  const opts = new Map<string, string>();
  const extra: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') opts.set('quick', '1');
    else if (a === '--env' && i + 1 < argv.length) {
      const m = /^(BROKER_[A-Z0-9_]+)=(.*)$/.exec(argv[++i]);
      if (!m) throw new Error(`--env takes BROKER_NAME=VALUE, got '${argv[i]}'\n${USAGE}`);
      extra[m[1]] = m[2];
    }
    else if (a === '--no-fork-burst') opts.set('no-fork-burst', '1');
    else if (a === '--sized') opts.delete('closed');
    else if (a === '--closed') opts.set('closed', '1');
    else if (a === '--help' || a === '-h') throw new Error(USAGE);
    else if (a.startsWith('--') && OPTIONS.includes(a.slice(2)) && i + 1 < argv.length) opts.set(a.slice(2), argv[++i]);
    else throw new Error(`unknown argument '${a}'\n${USAGE}`);
  }
  const quick = opts.has('quick');
  const sized = !opts.has('closed');
  return {
    command: ['npm run soak', ...(argv.length ? ['--', ...argv] : [])].join(' '),
    quick,
    durationS: positiveInt(opts, 'duration', quick ? 60 : sized ? 600 : 360),
    sized,
    // Long enough for tasks (seconds to tens of seconds each) to pile up as they do at a steady load.
    capacityStepS: positiveInt(opts, 'capacity-step', quick ? 15 : 60),
    overloadS: positiveInt(opts, 'overload', quick ? 30 : 90),
    recoveryS: quick ? 15 : 30,
    warmSlots: 4,
    taskImage: process.env.BROKER_TASK_IMAGE ?? 'bash-broker-task:latest',
    clients: positiveInt(opts, 'clients', quick ? 120 : 300),
    containers: positiveInt(opts, 'containers', quick ? 16 : 32),
    perContainer: positiveInt(opts, 'per-container', 8),
    image: opts.get('image') ?? 'bash-broker-sandbox:latest',
    outDir: opts.get('out') ?? `${soakDir}/../results`,
    seed: positiveInt(opts, 'seed', Math.floor(Math.random() * 1e9) + 1),
    forkBurst: !opts.has('no-fork-burst'),
    // A sized phase's tasks and group sandboxes take seconds each: a longer drain than the pool's.
    drainS: sized ? 90 : 30,
    broker: {
      maxOutputBytes: 1024 * 1024,
      // Long enough that no working client is reclaimed between two calls under load (execute p99
      // stays under ~2 s here), short enough that abandoned leases come back several times a minute.
      idleTimeoutS: 12,
      acquireTimeoutS: 60,
      // 8 sessions with a few sleepers each stay far below it; a fork burst of 300 is held at it.
      pidsLimit: 256,
      memory: '512m',
      extra,
    },
    sampleEveryMs: 2000,
  };
}
