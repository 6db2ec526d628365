/**
 * What the orchestrator (run.ts) asks of the client process (client/main.ts) over IPC, and what comes
 * back. Every latency is in milliseconds; every job is bounded in time and in count.
 */

/**
 * This run's id, in every deployment name below: the orchestrator's pid, handed to the processes it
 * forks through the environment. A backend's start sweeps its deployment's containers of other
 * instances, so two runs on one engine (a shared machine) with the same names removed each other's
 * containers, and one run's sessions' CPU counted the other's.
 */
export const BENCH_RUN = (process.env.BENCH_RUN_ID ??= String(process.pid));

/**
 * Deployment labels: the brokers under test are "bench-<run>", the floors' containers
 * "bench-floor-<run>", the docker exec floor's "bench-floor-exec-<run>", and the shell server's
 * (shellServer.ts) "bench-floor-shell-<run>" (no two raw backends can share one, as above).
 */
export const BENCH_DEPLOYMENT = `bench-${BENCH_RUN}`;
export const FLOOR_DEPLOYMENT = `bench-floor-${BENCH_RUN}`;
export const FLOOR_EXEC_DEPLOYMENT = `bench-floor-exec-${BENCH_RUN}`;
export const SHELL_FLOOR_DEPLOYMENT = `bench-floor-shell-${BENCH_RUN}`;
/** The episode floor's containers (client/episodeFloor.ts). */
export const EPISODE_FLOOR_DEPLOYMENT = `bench-floor-episodes-${BENCH_RUN}`;
/**
 * The workspace phase's brokers (phases/workspace.ts): a deployment of their own, so that another
 * broker of this run starting on the engine, which sweeps its deployment's containers of other
 * instances, does not remove theirs in the middle of a measurement.
 */
export const WORKSPACE_DEPLOYMENT = `bench-workspace-${BENCH_RUN}`;

/**
 * How a raw session reaches its bash: the backend's default (local: pipes to a child; docker: named
 * pipes into the container, the broker's own transport), or, docker only, a `docker exec` attach
 * stream through the engine: the floor the execute target names for the docker backend.
 */
export type RawTransport = 'default' | 'exec';

/** Where a command goes: the broker over HTTP, the no-op HTTP server, or a raw BashSession (no HTTP). */
/** `extras`: every execute with a request_id and `facts: true`, on a lease with a lease_ttl (docs/pool.md, For rollout clients). */
export type Target = { via: 'broker'; url: string; extras?: boolean } | { via: 'noop'; url: string } | { via: 'raw'; transport: RawTransport };

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
  /** Processes created during the window (fork/clone count), machine-wide and net of the idle rate. */
  forks?: ForkCount;
  sessionCpu?: SessionCpu;
  /** The broker's and this client's own CPU in the same window (lib/cpuAccount.ts ownCpuMs), per episode. */
  processCpu?: ProcessCpu;
  /** Requests per episode: 7 plain (acquire, 5 executes, release); 5 with `fewer` (EpisodeVariant). */
  requestsPerEpisode: number;
}

/**
 * How an episode talks to the broker. `plain`: acquire, `echo 1` .. `echo 5`, release (7 requests,
 * the pool API's own routes only; the headline). `fewer`: acquire with `echo 1` as its startup command, `echo 2` ..
 * `echo 4`, then `echo 5` with `"release": true` (5 requests: the additive API).
 */
export type EpisodeVariant = 'plain' | 'fewer';

/** utime + stime of the broker and of the client process during a window, ms per episode (no reaped children). */
export interface ProcessCpu {
  brokerMsPerEpisode?: number;
  clientMsPerEpisode: number;
}

/** CPU of the sessions' processes during the window, from their cgroups (lib/sessionCpu.ts), per episode. */
export interface SessionCpu {
  where: string;
  /** Cores used during the window. */
  cores: number;
  msPerEpisode: number;
}

/**
 * Processes the machine created (the `processes` line of /proc/stat: every fork and clone, threads
 * included) during a measured window, with the machine's rate just before the job, when nothing of
 * the bench ran, subtracted. Machine-wide: other users' work is in it (read with the load average).
 */
export interface ForkCount {
  /** Processes created during the window. */
  created: number;
  /** The machine's background rate measured just before the job, per second. */
  idlePerSec: number;
  /** (created - idlePerSec x window) / episodes completed in the window. */
  perEpisode: number;
}

/**
 * The episode floor: N loops, each holding one bash on the backend's own transport (local: pipes to
 * a spawned bash; docker: the broker's named pipes into the container), each episode `exec -c`-ing
 * a fresh bash in place (the broker's recycle line, src/backends/shellRecycle.ts) and then running
 * `true` 5 times, one round trip each. No HTTP, no pool, no kill, no workdir.
 */
export interface EpisodeFloorResult extends ConcResult {
  /** The fresh bash: exec line written to its announcement read, ms. */
  exec: LatencySummary;
  /** One `true` round trip, ms. */
  command: LatencySummary;
  /** Sessions opened, and how long opening them took (containers included on docker). */
  sessions: number;
  openMs: number;
  forks?: ForkCount;
  sessionCpu?: SessionCpu;
  /** The client process's own CPU in the window (it drives the raw shells), per episode. */
  processCpu?: ProcessCpu;
}

/**
 * Episodes arriving on their own (open loop): arrivals at `ratePerSec` (Poisson or fixed interval),
 * each one acquire, 5 x `echo $i`, release, whatever the earlier ones are doing. An arrival when
 * `maxOutstanding` are still running is dropped and counted: the run stays bounded.
 */
export interface OpenLoopResult {
  ratePerSec: number;
  arrivals: 'poisson' | 'fixed';
  windowMs: number;
  started: number;
  completed: number;
  dropped: number;
  errors: number;
  firstError?: string;
  /** Completed episodes per second of the window. */
  opsPerSec: number;
  acquire: LatencySummary;
  episode: LatencySummary;
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

/** One round of a flood in a workspace with `viewers` viewers (client/workspaceJobs.ts). */
export interface WsFloodRound {
  viewers: number;
  /** The job's duration from its exit event: start mark to end mark, as the broker read the terminal. */
  durationMs: number;
  /** From the POST /api/execute to the exit event seen in the logs (client side). */
  wallMs: number;
  /** The flood's bytes / durationMs. */
  bytesPerSec: number;
  /** What the viewer that got least received (terminal: bytes; events: messages). */
  viewerBytesMin: number;
  viewerMessagesMin: number;
  viewerMessagesMax: number;
  /** Viewers the broker cut during the round (behind, and they did not catch up in time). */
  dropped: number;
  /** Viewers whose last bytes hold the flood's end marker: they are current. */
  current: number;
  /** Times a viewer fell behind and caught up (a redraw, or a `dropped` notice), from the broker's /metrics. */
  resyncs: number;
  /** CPU during the round, ms: the broker's (its process_cpu_seconds_total) and the viewer process's. */
  brokerCpuMs: number;
  viewersCpuMs: number;
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
  /** `sessionCgroups`: whose CPU counts as the sessions' (lib/sessionCpu.ts). */
  | {
      kind: 'episodes';
      url: string;
      concurrency: number;
      rampMs: number;
      durationMs: number;
      drainMs: number;
      countForks?: boolean;
      sessionCgroups?: { containerIds: string[] } | { localInstance: string };
      /** The broker's pid, for its CPU in the window. */
      brokerPid?: number;
      variant?: EpisodeVariant;
    }
  | { kind: 'releaseToAvailable'; url: string; n: number; maxMs: number }
  | { kind: 'flood'; url: string; sessions: number; bytesPerSession: number; timeoutS: number }
  | { kind: 'dockerStart'; image: string; count: number; concurrency: number }
  | { kind: 'episodeFloor'; backend: 'local' | 'docker'; image: string; concurrency: number; perContainer: number; rampMs: number; durationMs: number }
  /** The episode floor's shells kept open across windows (episodeFloorRun), until episodeFloorClose. */
  | { kind: 'episodeFloorOpen'; backend: 'local' | 'docker'; image: string; concurrency: number; perContainer: number }
  | { kind: 'episodeFloorRun'; rampMs: number; durationMs: number }
  | { kind: 'episodeFloorClose' }
  | { kind: 'wsExecCompare'; url: string; backend: 'local' | 'docker'; n: number; warmup: number; maxMs: number }
  | { kind: 'wsEcho'; url: string; n: number; warmup: number; maxMs: number }
  | { kind: 'wsFlood'; url: string; command: string; floodBytes: number; viewerKind: 'terminal' | 'events'; counts: number[]; timeoutS: number }
  | { kind: 'episodesOpen'; url: string; ratePerSec: number; arrivals: 'poisson' | 'fixed'; durationMs: number; maxOutstanding: number; drainMs: number };

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
