/**
 * Brokers of a cluster as real processes (`npm start`'s command, each with its own environment), on
 * loopback port 0, and a small client for them. A node killed with SIGKILL leaves its local shells
 * orphaned: `kill9()` ends them too (they carry BROKER_SESSION_TAG=<its pid>-), as a host's reboot would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { Agent } from 'undici';
import { httpCall } from './httpCall';
import { pidsWithEnvPrefix } from './procs';
import type { HttpResult } from './broker';

const ROOT = path.resolve(__dirname, '..', '..');

export class BrokerProcess {
  private log = '';
  private exitPromise: Promise<void>;
  private exited = false;

  private constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
    readonly env: Record<string, string>,
  ) {
    this.exitPromise = new Promise((resolve) => proc.once('exit', () => resolve()));
    void this.exitPromise.then(() => (this.exited = true));
  }

  url = '';

  get pid(): number {
    return this.proc.pid!;
  }

  get alive(): boolean {
    return !this.exited;
  }

  get output(): string {
    return this.log;
  }

  /** Starts `src/index.ts` with `env` over the test's environment; resolves once it logs its URL. */
  static async start(name: string, env: Record<string, string>): Promise<BrokerProcess> {
    const proc = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/index.ts'], {
      cwd: ROOT,
      env: { ...process.env, BROKER_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bp = new BrokerProcess(name, proc, env);
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        bp.log = (bp.log + chunk.toString()).slice(-20_000);
        const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(bp.log);
        if (m && bp.url === '') {
          bp.url = m[1];
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      void bp.exitPromise.then(() => reject(new Error(`${name} exited before listening:\n${bp.log}`)));
      setTimeout(() => reject(new Error(`${name} did not listen within 60 s:\n${bp.log}`)), 60_000).unref();
    });
    return bp;
  }

  /** SIGKILL, as a crash; then the local shells it leaves (a dead host's would be gone). */
  async kill9(): Promise<void> {
    if (this.exited) return;
    this.proc.kill('SIGKILL');
    await this.exitPromise;
    for (const pid of pidsWithEnvPrefix(`BROKER_SESSION_TAG=${this.pid}-`)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
  }

  /** SIGTERM (a drain), SIGKILL after 20 s. */
  async stop(): Promise<void> {
    if (this.exited) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 20_000);
    await this.exitPromise;
    clearTimeout(timer);
  }

  /** A local root of its own, removed by the test at its end. */
  static localRoot(name: string): string {
    const dir = path.join(fs.realpathSync(os.tmpdir()), `bash-broker-cluster-${process.pid}-${name}`);
    return dir;
  }
}

const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });

/** One call, its whole answer read. */
export function call(base: string, method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpCall(dispatcher, base + urlPath, method, body, headers);
}

export async function closeClients(): Promise<void> {
  await dispatcher.close();
}
