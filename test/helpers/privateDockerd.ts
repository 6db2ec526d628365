/**
 * A private dockerd for tests that must stop and restart "the" Docker daemon without touching the
 * shared engine on /var/run/docker.sock (other containers, other tests run there).
 *
 * Everything it owns lives under one temp dir (/tmp/bash-broker-privd-<pid>-<rand>): its API socket,
 * --data-root, --exec-root (where dockerd starts its OWN managed containerd: no use of
 * /run/containerd), pidfile and log. Its own containerd namespaces keep even the runc state dirs
 * (/run/containerd/runc/<namespace>) apart from the shared engine's. No bridge and no iptables, in its
 * own network namespace: it must not touch the host's network, so its containers need NetworkMode none.
 *
 * Robust to leftovers: each dir records its owner (pid + start time); cleanupLeftovers() destroys
 * dirs whose owner is gone (a crashed or killed test run). teardown() always ends with the same
 * host-side destruction, so it works whatever state the daemon was left in.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { destroyDir } from '../../devtools/privateDockerdCleanup';
import { startTimeOf } from '../../devtools/procs';

const DIR_PREFIX = 'bash-broker-privd-';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 45_000;

/** Destroys private-daemon dirs whose owning process is gone. Returns the dirs it removed. */
export async function cleanupLeftovers(): Promise<string[]> {
  const removed: string[] = [];
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), name);
    let owner: { pid: number; start: string } | null = null;
    try {
      owner = JSON.parse(fs.readFileSync(path.join(dir, 'owner.json'), 'utf8'));
    } catch {
      // No owner record: a run died while creating the dir, or another one is creating it right now.
      if (Date.now() - fs.statSync(dir).mtimeMs < 60_000) continue;
    }
    if (owner && startTimeOf(owner.pid) === owner.start) continue; // its test run is alive
    await destroyDir(dir);
    removed.push(dir);
  }
  return removed;
}

export class PrivateDockerd {
  readonly dir: string;
  readonly socketPath: string;
  /** For DOCKER_HOST / `docker -H`. */
  readonly host: string;
  readonly docker: Dockerode;
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  constructor() {
    // Short: containerd's sockets live under it and a unix socket path is limited to 107 bytes.
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    fs.writeFileSync(path.join(this.dir, 'owner.json'), JSON.stringify({ pid: process.pid, start: startTimeOf(process.pid) }));
    fs.writeFileSync(path.join(this.dir, 'daemon.json'), '{}'); // never /etc/docker/daemon.json
    this.socketPath = path.join(this.dir, 'docker.sock');
    this.host = `unix://${this.socketPath}`;
    this.docker = new Dockerode({ socketPath: this.socketPath });
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** (Re)starts dockerd on the same roots and waits until it answers. */
  async start(): Promise<void> {
    if (this.running) throw new Error('private dockerd already running');
    const d = this.dir;
    const log = fs.openSync(path.join(d, 'dockerd.log'), 'a');
    // live-restore stays off (dockerd's default, and the shared engine's here): what we test.
    const args = [
      ...['-H', this.host, '--data-root', `${d}/data`, '--exec-root', `${d}/exec`, '--pidfile', `${d}/dockerd.pid`],
      ...['--config-file', `${d}/daemon.json`, '--containerd-namespace', 'bbprivd', '--containerd-plugins-namespace', 'bbprivd-plugins'],
      ...['--bridge=none', '--iptables=false', '--ip6tables=false', '--ip-masq=false', '--userland-proxy=false'],
    ];
    // Own session: a ^C to the test's terminal must not reach it before teardown does its work.
    // Own network namespace (unshare execs dockerd in place, same pid): with --bridge=none dockerd
    // DELETES the host's docker0 at start (removeDefaultBridgeInterface), breaking the shared engine.
    const child = spawn('unshare', ['--net', '--', 'dockerd', ...args], { detached: true, stdio: ['ignore', log, log] });
    fs.closeSync(log);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`private dockerd exited at start:\n${this.logTail()}`);
      if (await this.docker.ping().then(() => true, () => false)) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`private dockerd did not answer within ${START_TIMEOUT_MS} ms:\n${this.logTail()}`);
  }

  /** Sends `signal` to dockerd and waits until it exited (SIGTERM: its graceful shutdown). */
  async stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    if (!this.running) return;
    this.child!.kill(signal);
    const bounded = await Promise.race([this.exited.then(() => true), delay(STOP_TIMEOUT_MS).then(() => false)]);
    if (!bounded) {
      this.child!.kill('SIGKILL');
      await this.exited;
      throw new Error(`private dockerd ignored ${signal} for ${STOP_TIMEOUT_MS} ms; SIGKILLed`);
    }
  }

  /** Copies an image from the shared engine (`docker save | docker -H <private> load`). */
  async loadImage(ref: string): Promise<void> {
    const env = { ...process.env };
    delete env.DOCKER_HOST; // `docker save` reads the shared engine, whatever the test set
    await promisify(execFile)('bash', ['-o', 'pipefail', '-c', 'docker save "$1" | docker -H "$2" load -q', '_', ref, this.host], {
      env,
      timeout: 120_000,
    });
  }

  /**
   * Runs `fn` with DOCKER_HOST pointing at this daemon, restored before returning. dockerode reads
   * DOCKER_HOST when it is constructed, so `fn` must construct its client synchronously.
   */
  withDockerHost<T>(fn: () => T): T {
    const before = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = this.host;
    try {
      return fn();
    } finally {
      if (before === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = before;
    }
  }

  /** Removes its containers, stops it, and deletes everything under its dir. Safe in any state. */
  async teardown(): Promise<void> {
    if (this.running) {
      const all = await this.docker.listContainers({ all: true }).catch(() => []);
      await Promise.all(all.map((c) => this.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
      await this.stop('SIGTERM').catch(() => undefined);
    }
    await destroyDir(this.dir);
  }

  logTail(lines = 30): string {
    try {
      return fs.readFileSync(path.join(this.dir, 'dockerd.log'), 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** Unref'd: a bound must not hold the test process open. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
