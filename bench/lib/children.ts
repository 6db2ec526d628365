/**
 * The orchestrator's helper processes: the client (runs jobs, answers JSON over IPC), the no-op HTTP
 * servers and the shell server. They run compiled (dist-bench/, ensureBenchBuilt), not under ts-node,
 * whose `repl` and `domain` modules would slow their event emitters beside a broker that has neither.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Job, JobReply } from '../protocol';
import { REPO_DIR, type TlsFiles } from './brokerProcess';

/** Where ensureBenchBuilt puts the compiled bench. */
const HELPER_DIR = path.join(REPO_DIR, 'dist-bench', 'bench');

function forkHelper(script: string, args: string[] = []): ChildProcess {
  return fork(path.join(HELPER_DIR, script.replace(/\.ts$/, '.js')), args, {
    execArgv: [],
    env: { ...process.env, BROKER_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced', // structured clone: a NaN (no samples) stays a number, not null
  });
}

/** Waits for the child's first IPC message, or fails if it exits or stays silent `timeoutMs`. */
function firstMessage<T>(child: ChildProcess, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${child.spawnfile} did not start within ${timeoutMs} ms`)), timeoutMs);
    child.once('message', (m) => {
      clearTimeout(timer);
      resolve(m as T);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`helper process exited with ${code} before it was ready`));
    });
  });
}

/** Ends a helper: disconnect (it exits on its own), then SIGKILL after a bound. */
async function endChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.disconnect();
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export class ClientProcess {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: JobReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(`client job failed: ${m.error}`));
    });
    child.on('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`client process exited (${code})`));
      this.pending.clear();
    });
  }

  static async start(): Promise<ClientProcess> {
    const child = forkHelper('client/main.ts');
    await firstMessage(child, 60_000);
    return new ClientProcess(child);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Runs one job; a job that overruns `timeoutMs` fails the run (the caller then stops everything). */
  run<T>(job: Job, timeoutMs: number): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`client job ${job.kind} overran ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.send({ id, job });
    });
  }

  /** Closing raw shells and floor containers can take a while on a loaded engine. */
  close(): Promise<void> {
    return endChild(this.child, 120_000);
  }
}

export class NoopServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    /** How long closing may take: the shell server removes its container first. */
    private readonly closeGraceMs: number,
  ) {}

  /** `http`: bare node:http answering `{}`; `app`: the broker's app (request seam and routers) over a stub pool; `relay`: node:http relaying to `cat` (noopServer.ts). */
  static async start(mode: 'http' | 'app' | 'relay'): Promise<NoopServer> {
    const child = forkHelper('noopServer.ts', [mode]);
    const { port } = await firstMessage<{ port: number }>(child, 60_000);
    return new NoopServer(child, `http://127.0.0.1:${port}`, 5_000);
  }

  /** The least relay (node:http + one undici Client) in front of `upstream`, `headers` added to every request (cluster/leastProxy.ts). */
  static async startLeastProxy(upstream: string, headers: Record<string, string>, tls?: TlsFiles): Promise<NoopServer> {
    const child = forkHelper('cluster/leastProxy.ts', [upstream, JSON.stringify(headers), ...(tls ? [JSON.stringify(tls)] : [])]);
    const { port } = await firstMessage<{ port: number }>(child, 60_000);
    return new NoopServer(child, `http://127.0.0.1:${port}`, 5_000);
  }

  /** node:http around one BashSession on the bench's backend (shellServer.ts). */
  static async startShell(backend: 'local' | 'docker', image: string): Promise<NoopServer> {
    const child = forkHelper('shellServer.ts', [backend, image]);
    try {
      const { port } = await firstMessage<{ port: number }>(child, 120_000);
      return new NoopServer(child, `http://127.0.0.1:${port}`, 120_000);
    } catch (err) {
      await endChild(child, 120_000);
      throw err;
    }
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  close(): Promise<void> {
    return endChild(this.child, this.closeGraceMs);
  }
}
