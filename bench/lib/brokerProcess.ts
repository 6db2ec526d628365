/**
 * The broker under test, as it runs in production: `node dist/index.js` in its own process, configured
 * through the environment only. Started per pool size, stopped with SIGTERM (escalated to SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';
import { nowMs, sleep } from './stats';
import { metricValue } from './metricsText';
import { BENCH_DEPLOYMENT } from '../protocol';
import { freePort } from '../../devtools/freePort';

/** The repository: the nearest directory up with a package.json (bench/lib, or dist-bench/bench/lib compiled). */
export const REPO_DIR = repoRoot(__dirname);

function repoRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export interface BrokerSpec {
  name: string;
  backend: 'local' | 'docker';
  containers: number;
  perContainer: number;
  image: string;
  env?: Record<string, string>;
  nodeFlags?: string[];
  /** The broker's entry script; default dist/index.js (a diagnosis may compare another build). */
  entry?: string;
  /** A node of a cluster over mutual TLS: it serves HTTPS, and the bench's calls present this client certificate. */
  clientTls?: TlsFiles;
}

/** PEM files of a client over mutual TLS: the CA to check the server with, and a certificate and key. */
export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/** undici's connect options of `files` (read once). */
export function tlsConnect(files: TlsFiles): { ca: Buffer; cert: Buffer; key: Buffer } {
  return { ca: fs.readFileSync(files.ca), cert: fs.readFileSync(files.cert), key: fs.readFileSync(files.key) };
}

export interface HealthBody {
  status: string;
  total_sessions: number;
  available_sessions: number;
  /** While the pool's first fill runs. */
  warmup?: { ready_sessions: number; target_sessions: number; sessions_per_second: number | null; seconds_left: number | null };
}

/** The caller's environment without any broker setting of its own, plus the spec's. */
function brokerEnv(spec: BrokerSpec, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(BROKER_|SWEREX_|PORT$|HOST$)/.test(k)) env[k] = v;
  return {
    ...env,
    HOST: '127.0.0.1',
    PORT: String(port),
    BROKER_BACKEND: spec.backend,
    BROKER_CONTAINERS: String(spec.containers),
    BROKER_SESSIONS_PER_CONTAINER: String(spec.perContainer),
    BROKER_LOG_LEVEL: 'warn',
    BROKER_DEPLOYMENT: BENCH_DEPLOYMENT,
    BROKER_IMAGE: spec.image,
    ...spec.env,
  };
}

export class BrokerProcess {
  private readonly agent: Agent;
  private exited = false;
  private readonly exitPromise: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly spec: BrokerSpec,
    readonly url: string,
    readonly spawnedAtMs: number,
    readonly logPath: string,
  ) {
    this.agent = new Agent({ connections: 2, keepAliveTimeout: 10_000, connect: spec.clientTls ? tlsConnect(spec.clientTls) : undefined });
    this.exitPromise = new Promise((resolve) =>
      child.once('exit', () => {
        this.exited = true;
        resolve();
      }),
    );
  }

  static async start(spec: BrokerSpec, logDir: string): Promise<BrokerProcess> {
    const port = await freePort();
    const logPath = path.join(logDir, `broker-${spec.backend}-${spec.name}.log`);
    const log = fs.openSync(logPath, 'w');
    const spawnedAt = nowMs();
    const entry = spec.entry ?? path.join(REPO_DIR, 'dist', 'index.js');
    // Another build runs from its own checkout, as it would be deployed.
    const child = spawn(process.execPath, [...(spec.nodeFlags ?? []), entry], {
      cwd: repoRoot(path.dirname(entry)),
      env: brokerEnv(spec, port),
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    return new BrokerProcess(child, spec, `${spec.clientTls ? 'https' : 'http'}://127.0.0.1:${port}`, spawnedAt, logPath);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get total(): number {
    return this.spec.containers * this.spec.perContainer;
  }

  /** Polls /health until every session is AVAILABLE; returns ms from spawn to then. */
  /** `onHealth` sees every /health read meanwhile (its `warmup` says how far the fill is). */
  async waitWarm(timeoutMs: number, onHealth?: (h: HealthBody) => void): Promise<number> {
    const deadline = nowMs() + timeoutMs;
    while (nowMs() < deadline) {
      if (this.exited) throw new Error(`broker ${this.spec.name} exited during warm-up; see ${this.logPath}:\n${this.logTail()}`);
      const h = await this.health().catch(() => null);
      if (h) onHealth?.(h);
      if (h && h.available_sessions >= this.total) return nowMs() - this.spawnedAtMs;
      await sleep(h ? 100 : 25);
    }
    throw new Error(`broker ${this.spec.name} was not warm within ${timeoutMs} ms; see ${this.logPath}`);
  }

  async health(): Promise<HealthBody> {
    const res = await request(`${this.url}/health`, { dispatcher: this.agent });
    return (await res.body.json()) as HealthBody;
  }

  async metrics(): Promise<string> {
    const res = await request(`${this.url}/metrics`, { dispatcher: this.agent });
    return res.body.text();
  }

  /** process_resident_memory_bytes as the broker reports it on /metrics. */
  async rssBytes(): Promise<number> {
    return metricValue(await this.metrics(), 'process_resident_memory_bytes');
  }

  /** VmRSS and VmHWM (peak RSS since start) from /proc, readable even while the broker is busy. */
  procMemory(): { rssBytes: number; hwmBytes: number } {
    const status = fs.readFileSync(`/proc/${this.pid}/status`, 'latin1');
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM') };
  }

  /** Awaits `work` while sampling VmRSS every 100 ms; returns its result and the highest sample. */
  async peakRssDuring<T>(work: Promise<T>): Promise<{ result: T; peak: number }> {
    let peak = 0;
    const read = (): void => {
      try {
        peak = Math.max(peak, this.procMemory().rssBytes);
      } catch {
        /* the broker exited: the work reports it */
      }
    };
    const timer = setInterval(read, 100);
    try {
      const result = await work;
      read();
      return { result, peak };
    } finally {
      clearInterval(timer);
    }
  }

  logTail(lines = 20): string {
    try {
      return fs.readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** SIGTERM (the broker drains and, on docker, removes its containers), SIGKILL after `timeoutMs`. */
  async stop(timeoutMs: number): Promise<{ stopMs: number; killed: boolean }> {
    const t0 = nowMs();
    let killed = false;
    await this.agent.close().catch(() => undefined);
    if (!this.exited) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => {
        killed = true;
        this.child.kill('SIGKILL');
      }, timeoutMs);
      await this.exitPromise;
      clearTimeout(timer);
    }
    return { stopMs: nowMs() - t0, killed };
  }
}
