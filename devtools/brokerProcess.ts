/**
 * The broker as a process of its own, started the one way every test, script and bench of this tree
 * starts it: the compiled entry (`node dist-cluster/index.js`, as its image runs it), its environment
 * given, on the port its environment names (0 by default), ready once it logs the address it listens
 * on. A node killed with SIGKILL leaves its local shells orphaned: `kill9()` ends them too (they
 * carry BROKER_SESSION_TAG=<its pid>-), as a host's reboot would; `signal()` leaves them, for a test
 * that checks what a crash leaves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import { pidsWithEnvPrefix } from './procs';
import { underDirLock } from './dirLock';

const ROOT = path.resolve(__dirname, '..');
const execFileAsync = promisify(execFile);
/** The broker compiled as its image runs it (`node dist/index.js`), apart from a developer's dist/. */
const COMPILED = path.join(ROOT, 'dist-cluster');

let compiled: Promise<string> | null = null;

/**
 * The entry point, compiled once per suite (incrementally: a later suite's build only checks).
 * Why not ts-node as `npm start`: it transpiles the whole tree in every process, 10 s per start on
 * an idle machine of this kind and over a minute with four at once under load; compiled, a start
 * takes under 2 s. Test processes building at once (jest's workers) take turns (underDirLock).
 * Every test that starts the broker as a process starts this one.
 */
export function compiledEntry(): Promise<string> {
  // `npm test` (test/run.js) builds it once before the suites start and names it here, so that no
  // suite pays even the incremental build's check (seconds of CPU each, beside every other suite).
  const prebuilt = process.env.BROKER_TEST_COMPILED_ENTRY;
  if (prebuilt) return Promise.resolve(prebuilt);
  compiled ??= (async () => {
    await underDirLock(COMPILED, 600_000, async () => {
      const tsc = require.resolve('typescript/bin/tsc');
      // Asynchronous, so the lock's holder keeps refreshing it while tsc runs.
      await execFileAsync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', COMPILED, '--incremental', '--tsBuildInfoFile', path.join(COMPILED, '.tsbuildinfo')], { cwd: ROOT, timeout: 600_000 });
    });
    return path.join(COMPILED, 'index.js');
  })();
  return compiled;
}

export interface BrokerStartOptions {
  /** false: the broker's environment is `env` alone, none of the caller's. Default true. */
  inheritEnv?: boolean;
  /** Flags for node before the entry (a preload). */
  nodeFlags?: string[];
  /** The command line to run, made from the node command line of the broker (a confining wrapper). */
  wrap?: (node: string[]) => string[];
  /** How much of its output `output` keeps, in characters (its end); default 20,000. */
  logChars?: number;
}

export class BrokerProcess {
  private log = '';
  private exitPromise: Promise<void>;
  private exited = false;
  /** How it ended (its exit code, or the signal that killed it); null while it runs. */
  exitStatus: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  private constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
    readonly env: NodeJS.ProcessEnv,
  ) {
    this.exitPromise = new Promise((resolve) =>
      proc.once('exit', (code, signal) => {
        this.exitStatus = { code, signal };
        resolve();
      }),
    );
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

  /**
   * Starts the broker with `env` over the test's environment (or, with `inheritEnv: false`, over
   * nothing); resolves once it logs its URL. `wrap` runs it under another command (its argv: the
   * node command line of the broker, to run as the wrapper's own).
   */
  static async start(name: string, env: NodeJS.ProcessEnv, options: BrokerStartOptions = {}): Promise<BrokerProcess> {
    const node = [process.execPath, ...(options.nodeFlags ?? []), await compiledEntry()];
    const [file, ...args] = options.wrap ? options.wrap(node) : node;
    const proc = spawn(file, args, {
      cwd: ROOT,
      env: { ...(options.inheritEnv === false ? {} : process.env), BROKER_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bp = new BrokerProcess(name, proc, env);
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        bp.log = (bp.log + chunk.toString()).slice(-(options.logChars ?? 20_000));
        const m = /listening on (https?:\/\/[0-9.]+:\d+)/.exec(bp.log);
        if (m && bp.url === '') {
          bp.url = m[1];
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      void bp.exitPromise.then(() => reject(new Error(`${name} exited before listening:\n${bp.log}`)));
      setTimeout(() => reject(new Error(`${name} did not listen within 120 s:\n${bp.log}`)), 120_000).unref();
    }).catch(async (err: unknown) => {
      await bp.kill9();
      throw err;
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

  /** `sig`, and its exit: nothing else (what a crash leaves is the test's to check). */
  async signal(sig: NodeJS.Signals): Promise<void> {
    if (this.exited) return;
    this.proc.kill(sig);
    await this.exitPromise;
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
