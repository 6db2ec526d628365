/**
 * What every phase shares: the plan, the client and no-op processes, the results being filled, and
 * the broker currently running (one at a time, always stopped, even when a phase fails).
 */
import os from 'node:os';
import type { Job, LatencySummary } from '../protocol';
import type { Plan } from './plan';
import type { Results } from './results';
import type { ClientProcess, NoopServer } from './children';
import Dockerode from 'dockerode';
import { BrokerProcess, type BrokerSpec } from './brokerProcess';
import { benchContainers } from './containers';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/dockerBackend';
import { BENCH_DEPLOYMENT } from '../protocol';
import { cpuBreakdown, snapshotCpu } from './cpuAccount';
import { nowMs } from './stats';
import { bar, clock, ProgressLine, warmupText } from './progress';

/** `backend`: the run's unless given (the workspace phase measures both in one run). */
export type PoolSpec = Omit<BrokerSpec, 'backend' | 'image'> & { backend?: BrokerSpec['backend'] };

export class BenchContext {
  private current: BrokerProcess | null = null;
  private readonly docker = new Dockerode();
  private readonly t0 = nowMs();
  /** A line at the foot of a terminal: the phase, its time, and a bar for a timed job (none in CI). */
  readonly progress = new ProgressLine();
  private phase = { name: '', startMs: nowMs() };

  constructor(
    readonly plan: Plan,
    readonly client: ClientProcess,
    /** The no-op floor (bare node:http), the broker's own app over a stub pool, and the relay to `cat`. */
    readonly http: { noop: NoopServer; app: NoopServer; relay: NoopServer },
    readonly results: Results,
    readonly logDir: string,
  ) {}

  get elapsedS(): number {
    return (nowMs() - this.t0) / 1000;
  }

  mark(name: string): void {
    const loadAvg1m = Math.round(os.loadavg()[0] * 100) / 100;
    this.results.phases.push({ name, atS: Math.round(this.elapsedS * 10) / 10, loadAvg1m });
    this.progress.log(`[${this.elapsedS.toFixed(1).padStart(6)} s] ${name} (load ${loadAvg1m})`);
    this.phase = { name, startMs: nowMs() };
    this.showPhase();
  }

  private showPhase(): void {
    const { name, startMs } = this.phase;
    this.progress.set(() => `${clock(this.elapsedS)} ${name}: ${clock((nowMs() - startMs) / 1000)}`);
  }

  log(line: string): void {
    this.progress.log(`           ${line}`);
  }

  /** Runs a client job; the bound is the job's own duration plus `slackMs`. A timed job shows a bar. */
  async job<T>(job: Job, boundMs: number): Promise<T> {
    const timed = 'durationMs' in job ? job.durationMs + ('rampMs' in job ? job.rampMs : 0) : 0;
    if (timed <= 0) return this.client.run<T>(job, boundMs);
    const startMs = nowMs();
    const { name } = this.phase;
    this.progress.set(() => {
      const ranS = (nowMs() - startMs) / 1000;
      return `${clock(this.elapsedS)} ${bar((ranS * 1000) / timed)} ${clock(ranS)} of ${clock(timed / 1000)} ${name}`;
    });
    try {
      return await this.client.run<T>(job, boundMs);
    } finally {
      this.showPhase();
    }
  }

  /** Runs `fn` and records where the machine's CPU went meanwhile, under `label`. */
  async withCpu<T>(label: string, fn: () => Promise<T>): Promise<T> {
    const containerIds = await this.benchContainerIds();
    const before = snapshotCpu();
    const result = await fn();
    const after = snapshotCpu();
    for (const id of await this.benchContainerIds()) containerIds.add(id);
    const servers = [this.http.noop.pid, this.http.app.pid, this.http.relay.pid];
    // The broker may have started inside `fn` (a warm-up): it is the current one by the end.
    const breakdown = cpuBreakdown(before, after, { broker: this.current?.pid, client: this.client.pid, servers, containerIds });
    // Throughput beside the cores gives CPU per operation (cores / ops per second).
    const opsPerSec = (result as { opsPerSec?: unknown } | undefined)?.opsPerSec;
    if (typeof opsPerSec === 'number') breakdown['ops/s'] = Math.round(opsPerSec);
    this.results.cpu[label] = breakdown;
    return result;
  }

  /**
   * Whose CPU counts as the broker's sessions' (lib/sessionCpu.ts): its containers (deployment
   * "bench-<run>"), or its local instance's cgroup, named after its pid.
   */
  async sessionCgroups(broker: BrokerProcess): Promise<{ containerIds: string[] } | { localInstance: string }> {
    if (this.plan.backend === 'local') return { localInstance: String(broker.pid) };
    const label = `${LABEL_DEPLOYMENT}=${BENCH_DEPLOYMENT}`;
    const list = await this.docker.listContainers({ filters: { label: [label] } }).catch(() => []);
    return { containerIds: list.map((c) => c.Id) };
  }

  /** Ids of the containers of this run (the broker's and the floors'), so others' count as "rest". */
  private async benchContainerIds(): Promise<Set<string>> {
    if (this.plan.backend !== 'docker' && this.current?.spec.backend !== 'docker') return new Set();
    return new Set((await benchContainers(this.docker)).map((c) => c.Id));
  }

  /** Starts a broker for `spec`, waits until every session is AVAILABLE, runs `fn`, stops it. */
  async withBroker<T>(spec: PoolSpec, fn: (broker: BrokerProcess, warmMs: number) => Promise<T>, warmCpuLabel?: string): Promise<T> {
    const backend = spec.backend ?? this.plan.backend;
    const perContainerBoundMs = backend === 'docker' ? 3000 : 500;
    const broker = await BrokerProcess.start({ ...spec, backend, image: this.plan.image }, this.logDir);
    this.current = broker;
    try {
      const warm = (): Promise<number> =>
        broker.waitWarm(60_000 + spec.containers * perContainerBoundMs, (h) => {
          const { warmup } = h;
          if (warmup) this.progress.set(() => `${clock(this.elapsedS)} ${warmupText(`broker ${spec.name}`, warmup)}`);
        }).finally(() => this.showPhase());
      // With a label: where the CPU went from the broker's spawn until it was warm.
      const warmMs = warmCpuLabel ? await this.withCpu(warmCpuLabel, warm) : await warm();
      this.log(`broker ${spec.name}: ${broker.total} sessions warm in ${(warmMs / 1000).toFixed(2)} s (pid ${broker.pid})`);
      return await fn(broker, warmMs);
    } finally {
      await this.stopBroker();
    }
  }

  /** Stops the running broker, if any (also called on SIGINT). */
  async stopBroker(): Promise<void> {
    const broker = this.current;
    if (!broker) return;
    const bound = 30_000 + broker.spec.containers * (broker.spec.backend === 'docker' ? 1000 : 50);
    const { stopMs, killed } = await broker.stop(bound);
    this.current = null;
    if (killed) this.results.notes.push(`broker ${broker.spec.name} did not stop within ${bound} ms of SIGTERM and was killed`);
    else this.log(`broker ${broker.spec.name} stopped in ${(stopMs / 1000).toFixed(1)} s`);
  }
}

export function fmtLatency(l: LatencySummary): string {
  return `p50 ${l.p50.toFixed(3)} ms, p90 ${l.p90.toFixed(3)} ms, p99 ${l.p99.toFixed(3)} ms (n=${l.n})`;
}
