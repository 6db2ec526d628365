/**
 * A private etcd for tests and scripts: its own data directory in a temp folder and free loopback
 * ports, never a system etcd. `stop()` ends the process and keeps its data (a test of the store
 * going away starts it again on the same ports); `destroy()` ends it and removes the directory.
 *
 * With `tls`, it serves its clients over mutual TLS only (certificates made in its directory,
 * etcdPki.ts): `clientEnv()` gives a broker what it needs to reach it. Its health is then read on a
 * plain-http metrics port of its own, which serves nothing else.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { eventually } from './eventually';
import { freePort } from './freePort';
import { makeEtcdPki, type EtcdPki } from './etcdPki';

export { freePort };

export class TestEtcd {
  private proc: ChildProcess | null = null;
  private log = '';

  private constructor(
    readonly dataDir: string,
    readonly clientPort: number,
    readonly peerPort: number,
    /** Where /health answers: the client port, or a metrics port of its own under TLS. */
    readonly healthPort: number,
    readonly pki: EtcdPki | null,
  ) {}

  get endpoint(): string {
    return `${this.pki ? 'https' : 'http'}://127.0.0.1:${this.clientPort}`;
  }

  /** A broker's settings to reach this store (endpoints, and under TLS its CA and a client certificate). */
  clientEnv(): Record<string, string> {
    const env: Record<string, string> = { BROKER_ETCD_ENDPOINTS: this.endpoint };
    if (this.pki) Object.assign(env, { BROKER_ETCD_CA: this.pki.ca, BROKER_ETCD_CERT: this.pki.clientCert, BROKER_ETCD_KEY: this.pki.clientKey });
    return env;
  }

  /** etcdctl's arguments to reach this store as a member of the cluster would. */
  etcdctlArgs(): string[] {
    const tls = this.pki ? ['--cacert', this.pki.ca, '--cert', this.pki.clientCert, '--key', this.pki.clientKey] : [];
    return ['--endpoints', this.endpoint, ...tls];
  }

  /** Starts one; a port taken between its choice and etcd's bind is chosen again. */
  static async start(options: { tls?: boolean } = {}): Promise<TestEtcd> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-etcd-'));
      const clientPort = await freePort();
      const pki = options.tls ? makeEtcdPki(path.join(dir, 'pki')) : null;
      const etcd = new TestEtcd(dir, clientPort, await freePort(), pki ? await freePort() : clientPort, pki);
      try {
        await etcd.run();
        return etcd;
      } catch (err) {
        lastError = err;
        await etcd.destroy();
      }
    }
    throw lastError;
  }

  /** (Re)starts the process on its ports and data, and waits until it answers. */
  async run(): Promise<void> {
    if (this.proc) return;
    const client = this.endpoint;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const proc = spawn(
      'etcd',
      [
        '--name', 'test',
        '--data-dir', path.join(this.dataDir, 'data'),
        '--listen-client-urls', client,
        '--advertise-client-urls', client,
        '--listen-peer-urls', peer,
        '--initial-advertise-peer-urls', peer,
        '--initial-cluster', `test=${peer}`,
        ...(this.pki
          ? [
              '--cert-file', this.pki.serverCert,
              '--key-file', this.pki.serverKey,
              '--trusted-ca-file', this.pki.ca,
              '--client-cert-auth',
              '--listen-metrics-urls', `http://127.0.0.1:${this.healthPort}`,
            ]
          : []),
        '--logger', 'zap',
        '--log-level', 'error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.proc = proc;
    proc.stderr!.on('data', (chunk: Buffer) => (this.log = (this.log + chunk.toString()).slice(-8000)));
    let exited = false;
    proc.once('exit', () => {
      exited = true;
      if (this.proc === proc) this.proc = null;
    });
    await eventually(
      async () => {
        if (exited) throw new Error(`etcd exited at start: ${this.log}`);
        try {
          const r = await fetch(`http://127.0.0.1:${this.healthPort}/health`);
          return r.ok && ((await r.json()) as { health?: string }).health === 'true';
        } catch {
          return false;
        }
      },
      30_000,
      () => `etcd on ${client} to answer (log: ${this.log})`,
    );
  }

  /** Ends the process (TERM, then KILL after 5 s); its data stays. */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
    this.proc = null;
  }

  get running(): boolean {
    return this.proc !== null;
  }

  async destroy(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}
