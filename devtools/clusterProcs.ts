/**
 * Brokers of a cluster as real processes (the compiled broker, each with its own environment), on
 * loopback port 0, and a small client for them. A node killed with SIGKILL leaves its local shells
 * orphaned: `kill9()` ends them too (they carry BROKER_SESSION_TAG=<its pid>-), as a host's reboot would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import { Agent, type Dispatcher } from 'undici';
import { httpCall, type HttpResult } from './httpCall';
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

export class BrokerProcess {
  private log = '';
  private exitPromise: Promise<void>;
  private exited = false;
  /** How it ended (its exit code, or the signal that killed it); null while it runs. */
  exitStatus: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  private constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
    readonly env: Record<string, string>,
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

  /** Starts the broker with `env` over the test's environment; resolves once it logs its URL. */
  static async start(name: string, env: Record<string, string>): Promise<BrokerProcess> {
    const entry = await compiledEntry();
    const proc = spawn(process.execPath, [entry], {
      cwd: ROOT,
      env: { ...process.env, BROKER_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bp = new BrokerProcess(name, proc, env);
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        bp.log = (bp.log + chunk.toString()).slice(-20_000);
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
/** For https:// nodes: the test's calls straight to a node present a certificate of the cluster (presentToNodes). */
let memberDispatcher: Agent | null = null;

/** PEM files of a client of nodes over mutual TLS. */
export interface MemberCertificate {
  ca: string;
  cert: string;
  key: string;
}

/** The certificate the test's calls to https:// nodes present from now on (null: none, the node refuses the handshake). */
export function presentToNodes(member: MemberCertificate | null): void {
  void memberDispatcher?.close();
  memberDispatcher = member ? new Agent({ keepAliveTimeout: 10_000, connections: 64, connect: tlsFiles(member) }) : null;
}

/** tls.connect's options of a member's PEM files. */
export function tlsFiles(member: MemberCertificate): { ca: Buffer; cert: Buffer; key: Buffer } {
  return { ca: fs.readFileSync(member.ca), cert: fs.readFileSync(member.cert), key: fs.readFileSync(member.key) };
}

/** The test's client for `url`: with the member's certificate for an https:// one. */
export function dispatcherFor(url: string): Dispatcher {
  return url.startsWith('https://') && memberDispatcher ? memberDispatcher : dispatcher;
}

/** One call, its whole answer read. */
export function call(base: string, method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpCall(dispatcherFor(base), base + urlPath, method, body, headers);
}

export async function closeClients(): Promise<void> {
  await Promise.all([dispatcher.close(), memberDispatcher?.close()]);
}

/** A gateway's /health as a client reads it (the nodes it lists, each with its pools). */
export interface GatewayNode {
  node_id: string;
  incarnation: string;
  address: string;
  health: string;
  heartbeat_age_ms: number;
  pools: Record<string, { total: number; available: number; in_use: number; cleaning: number; broken: number }>;
}

export interface GatewayHealth {
  status: string;
  total_sessions: number;
  available_sessions: number;
  store_connected: boolean;
  nodes: GatewayNode[];
}
