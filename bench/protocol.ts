/**
 * What the orchestrator (run.ts) asks of the client process (client/main.ts) over IPC, and what comes
 * back. Every latency is in milliseconds; every job is bounded in time and in count.
 */

/**
 * Deployment labels: the brokers under test are "bench", the floors' containers "bench-floor", the
 * docker exec floor's "bench-floor-exec", and the shell server's (shellServer.ts) "bench-floor-shell"
 * (a backend's start sweeps its deployment's containers of other instances, so no two raw backends
 * can share one).
 */
export const BENCH_DEPLOYMENT = 'bench';
export const FLOOR_DEPLOYMENT = 'bench-floor';
export const FLOOR_EXEC_DEPLOYMENT = 'bench-floor-exec';
export const SHELL_FLOOR_DEPLOYMENT = 'bench-floor-shell';

/**
 * How a raw session reaches its bash: the backend's default (local: pipes to a child; docker: named
 * pipes into the container, the broker's own transport), or, docker only, a `docker exec` attach
 * stream through the engine: the floor issue #4 names for the docker backend.
 */
export type RawTransport = 'default' | 'exec';

/** Where a command goes: the broker over HTTP, the no-op HTTP server, or a raw BashSession (no HTTP). */
export type Target = { via: 'broker'; url: string } | { via: 'noop'; url: string } | { via: 'raw'; transport: RawTransport };

export interface LatencySummary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

/** One operation after another on one session: latency, and its inverse as throughput. */
export interface SeqResult {
  latency: LatencySummary;
  opsPerSec: number;
  errors: number;
}

/** `concurrency` closed-loop workers; only operations that end inside the window count. */
export interface ConcResult {
  concurrency: number;
  windowMs: number;
  completed: number;
  opsPerSec: number;
  latency: LatencySummary;
  errors: number;
  firstError?: string;
}

export interface EpisodeResult extends ConcResult {
  /** Time to open `concurrency` keep-alive connections at once (GET /health on each), before the loop. */
  connectMs: number;
  connectErrors: number;
  executesPerSec: number;
  acquire: LatencySummary;
  execute: LatencySummary;
  release: LatencySummary;
}

export interface FloodResult {
  sessions: number;
  bytesPerSession: number;
  wallMs: number;
  responseBytes: number;
  truncated: number;
  errors: number;
  firstError?: string;
}

export interface DockerStartResult {
  count: number;
  concurrency: number;
  createStartMs: number;
  removeMs: number;
  /** Where the machine's CPU went during the create+start (cores, by category: bench/lib/cpuAccount.ts). */
  cpu: Record<string, number>;
}

export interface RawOpenResult {
  sessions: number;
  openMs: number;
}

export type Job =
  | { kind: 'seq'; target: Target; command: string; expectBytes: number; n: number; warmup: number; maxMs: number }
  /** Like 'seq', but one operation on each target in turn, so all of them see the same machine. */
  | { kind: 'seqCompare'; targets: Target[]; command: string; expectBytes: number; n: number; warmup: number; maxMs: number }
  | { kind: 'conc'; target: Target; command: string; expectBytes: number; concurrency: number; rampMs: number; durationMs: number }
  | { kind: 'rawOpen'; backend: 'local' | 'docker'; transport: RawTransport; containers: number; perContainer: number; image: string; concurrency: number }
  | { kind: 'rawClose' }
  | { kind: 'rawRespawn'; n: number; maxMs: number }
  | { kind: 'acquireFree'; url: string; poolSize: number; rounds: number; maxMs: number }
  | { kind: 'episodes'; url: string; concurrency: number; rampMs: number; durationMs: number; drainMs: number }
  | { kind: 'releaseToAvailable'; url: string; n: number; maxMs: number }
  | { kind: 'flood'; url: string; sessions: number; bytesPerSession: number; timeoutS: number }
  | { kind: 'dockerStart'; image: string; count: number; concurrency: number };

export type JobRequest = { id: number; job: Job };
export type JobReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/** The commands of the single-command figures, with the stdout length that proves each ran. */
export const COMMANDS = {
  true: { command: 'true', expectBytes: 0 },
  echo: { command: 'echo hello', expectBytes: 6 },
  out64k: { command: "head -c 65536 /dev/zero | tr '\\0' a", expectBytes: 65536 },
  out1m: { command: "head -c 1048576 /dev/zero | tr '\\0' a", expectBytes: 1048576 },
} as const;
export type CommandName = keyof typeof COMMANDS;
