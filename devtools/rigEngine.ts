/**
 * One Docker engine of a cluster rig, as on a host of its own: a dockerd with its own data root, exec
 * root (where it starts its own containerd), pidfile, API socket, containerd namespace and bridge,
 * everything under one directory.
 *
 * It runs in a network namespace of its own (`unshare --net`, which execs dockerd in place: same pid).
 * Why: several dockerds in one network namespace share its iptables chains and its `docker0`, and
 * one that starts rewrites what the others (the machine's own engine among them) set up. In its own
 * namespace it gets a bridge the rig names and addresses (`bbr-<rig>-<n>`, a /24 of its own), made
 * there before dockerd starts and gone with the namespace; its containers reach each other over it
 * and nothing outside. The node broker beside it reaches it over its unix socket and the containers'
 * pipes, as on a real host; the broker never needs the containers' network.
 *
 * With a registry link, a forwarder (scripts/socket-forward.js) started in the namespace before
 * dockerd listens on the registry's loopback address there and forwards to a unix socket of the rig,
 * which the rig forwards to the registry: the engine pulls `<registry>/<repo>:<tag>` over plain HTTP
 * as from any registry on loopback. It ends with dockerd.
 *
 * Whatever state it was left in (SIGKILLed, its containers outliving it), `destroy()` ends with the
 * host-side cleanup of privateDockerdCleanup.ts, confined to its directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { destroyDir } from './privateDockerdCleanup';
import { cmdline, procAlive } from './procs';
import { logTail, memberPids, spawnMember, waitFor } from './rigProcess';
import { docker } from './taskImage';

/** The forwarder at each end of a registry link (rigRegistry.ts): in an engine's namespace, and on the machine's side. */
export const FORWARDER = path.join(__dirname, '..', 'scripts', 'socket-forward.js');
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 45_000;
const START_ATTEMPTS = 3;

class ExitedAtStart extends Error {}

export interface EngineSpec {
  /** The rig's directory; the engine's is `<rig>/e<index>`. */
  rigDir: string;
  /** A short id of the rig, in the bridge's and the containerd namespace's names. */
  rigId: string;
  /** 1-based. */
  index: number;
  /** The bridge's address and prefix, e.g. 172.29.1.1/24. */
  bridgeCidr: string;
  /** A registry on the machine's loopback (`127.0.0.1:<port>`) to reach through `socket`, a unix socket the rig forwards to it. */
  registryLink?: { address: string; socket: string };
}

export class RigEngine {
  readonly name: string;
  readonly dir: string;
  readonly socketPath: string;
  /** For DOCKER_HOST and `docker -H`. */
  readonly host: string;
  /** An interface name: 15 characters at most. */
  readonly bridge: string;
  readonly docker: Dockerode;

  constructor(readonly spec: EngineSpec) {
    this.name = `e${spec.index}`;
    this.dir = path.join(spec.rigDir, this.name);
    this.socketPath = path.join(this.dir, 'docker.sock');
    this.host = `unix://${this.socketPath}`;
    this.bridge = `bbr-${spec.rigId}-${spec.index}`.slice(0, 15);
    // Bounded: an engine that accepts a connection and never answers must fail a wait, not hang it.
    this.docker = new Dockerode({ socketPath: this.socketPath, timeout: 30_000 });
  }

  /** The subnet's addresses start with this (the bridge's /24 without its last number). */
  get subnetPrefix(): string {
    return this.spec.bridgeCidr.split('/')[0].split('.').slice(0, 3).join('.') + '.';
  }

  private get log(): string {
    // Beside its directory, not in it: a destroyed engine's log is still there to read.
    return path.join(this.spec.rigDir, `${this.name}.log`);
  }

  /** dockerd's pid while it runs: its pidfile, checked against its command line (pids are reused). */
  get pid(): number | null {
    try {
      const pid = Number(fs.readFileSync(path.join(this.dir, 'dockerd.pid'), 'utf8').trim());
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return null;
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(this.socketPath) ? pid : null;
    } catch {
      return null;
    }
  }

  /**
   * (Re)starts dockerd on its roots, in a new network namespace with its bridge; waits until it
   * answers. A dockerd that exits at start is started again, twice at most: on a loaded machine its
   * containerd can miss dockerd's fixed start timeout ("timeout waiting for containerd to start").
   */
  async start(): Promise<void> {
    if (this.pid !== null) throw new Error(`engine ${this.name} already runs`);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.launch();
      } catch (err) {
        if (!(err instanceof ExitedAtStart) || attempt === START_ATTEMPTS) throw err;
        await this.waitContainerdGone();
      }
    }
  }

  private async launch(): Promise<void> {
    const d = this.dir;
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'daemon.json'), '{}'); // never /etc/docker/daemon.json
    const ns = `bbrig-${this.spec.rigId}-${this.name}`;
    const dockerd = [
      'dockerd',
      ...['-H', this.host, '--data-root', `${d}/data`, '--exec-root', `${d}/exec`, '--pidfile', `${d}/dockerd.pid`],
      ...['--config-file', `${d}/daemon.json`, '--containerd-namespace', ns, '--containerd-plugins-namespace', `${ns}-plugins`],
      // The namespace has no way out: nothing to masquerade or publish, no chain to keep.
      ...['--bridge', this.bridge, '--iptables=false', '--ip6tables=false', '--ip-masq=false', '--userland-proxy=false'],
    ];
    const b = this.bridge;
    const link = this.spec.registryLink;
    const ready = path.join(d, 'registry-link.ready');
    fs.rmSync(ready, { force: true });
    // The forwarder is sh's child, so dockerd's once sh execs it: --exit-with-parent ends it with dockerd.
    const forward = link ? `"${process.execPath}" "${FORWARDER}" "${link.address}=${link.socket}" --ready-file "${ready}" --exit-with-parent & ` : '';
    const setup = `ip link set lo up && ip link add ${b} type bridge && ip addr add ${this.spec.bridgeCidr} dev ${b} && ip link set ${b} up && { ${forward}exec "$@"; }`;
    const pid = spawnMember({ dir: this.spec.rigDir, name: this.name, command: 'unshare', args: ['--net', '--', 'sh', '-c', setup, 'sh', ...dockerd], env: {}, log: this.log });
    await waitFor(
      async () => {
        if (!procAlive(pid)) throw new ExitedAtStart(`engine ${this.name} exited at start:\n${logTail(this.log)}`);
        if (link && !fs.existsSync(ready)) return false;
        return this.docker.ping().then(() => true, () => false);
      },
      START_TIMEOUT_MS,
      `engine ${this.name} to answer on ${this.socketPath}`,
      () => logTail(this.log, 10),
    );
  }

  /** The engine's own containerd (started by dockerd under its exec root) and its registry forwarder: they end with dockerd. */
  private companionPids(): number[] {
    return memberPids(this.spec.rigDir, this.name).filter((pid) => cmdline(pid).startsWith('containerd ') || cmdline(pid).includes(FORWARDER));
  }

  /**
   * Until the engine's containerd is gone: it dies with dockerd, but not at once, and one still
   * alive holds the engine's containerd database, so a new dockerd's containerd cannot start.
   */
  private async waitContainerdGone(): Promise<void> {
    try {
      await waitFor(() => this.companionPids().length === 0, STOP_TIMEOUT_MS, `engine ${this.name}'s containerd to end with its dockerd`);
    } catch {
      for (const pid of this.companionPids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone meanwhile */
        }
      }
      await waitFor(() => this.companionPids().length === 0, 10_000, `engine ${this.name}'s containerd to die of SIGKILL`);
    }
  }

  /**
   * Sends `signal` to dockerd alone (SIGKILL: the engine killed; its containers outlive it) and
   * waits until it is gone, its containerd with it.
   */
  async stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const pid = this.pid;
    if (pid === null) return;
    process.kill(pid, signal);
    try {
      await waitFor(() => this.pid === null, STOP_TIMEOUT_MS, `engine ${this.name} to exit on ${signal}`);
    } catch (err) {
      if (signal === 'SIGKILL') throw err;
      process.kill(pid, 'SIGKILL');
      await waitFor(() => this.pid === null, 10_000, `engine ${this.name} to die of SIGKILL`);
    }
    await this.waitContainerdGone();
  }

  /** Pulls `ref` from the registry it reaches (its link) and names it `name` too; how long the pull took. */
  async pull(ref: string, name: string): Promise<number> {
    const t0 = Date.now();
    await docker(['pull', '-q', ref], { dockerHost: this.host });
    const pullMs = Date.now() - t0;
    if (name !== ref) await docker(['tag', ref, name], { dockerHost: this.host });
    return pullMs;
  }

  /** Every container on this engine (running or not), by id. */
  async containerIds(): Promise<string[]> {
    return (await this.docker.listContainers({ all: true })).map((c) => c.Id);
  }

  /** Removes its containers, stops it, and deletes its directory with whatever is left under it. Safe in any state. */
  async destroy(): Promise<void> {
    if (this.pid !== null) {
      const ids = await this.containerIds().catch(() => []);
      await Promise.all(ids.map((id) => this.docker.getContainer(id).remove({ force: true, v: true }).catch(() => undefined)));
      await this.stop('SIGTERM').catch(() => undefined);
    }
    await destroyDir(this.dir);
  }
}
