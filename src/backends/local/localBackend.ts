/**
 * The embedded local backend: bash processes on this host. A "container" is a working root
 * directory (the HOME of its sessions). Sessions are confined as processes (a cgroup, or the /proc
 * walk); their files are the host's own, unless BROKER_SESSION_ISOLATION is set and the broker is
 * root: then each session gets mount, pid and IPC namespaces of its own over an overlay of the
 * host's root (localIsolation.ts). Either way this backend is for development, tests and trusted
 * single-user runs: its sessions are the host's root processes. Docker is for the rest.
 */
import fs from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { randomBytes } from 'node:crypto';
import type { ContainerStarts, DedicatedContainerSpec } from '../../core/ports/containers';
import { poolAndLifecycleStarts } from '../poolAndLifecycleStarts';
import type { ContainerHealth, ContainerRef, IsolationReport, OpenShellOptions, Terminals, SessionBackend, ShellProcess, TerminalOptions, TerminalProcess, WorkdirFile } from '../../core/ports/backend';
import { NotSupportedError } from '../../common/errors';
import { hostEnv, type BrokerConfig, type HostEnv } from '../../config/config';
import { findBash } from './bashPath';
import { CgroupTree } from './cgroup';
import { LocalShell } from './localShell';
import { LocalTerminal } from './localTerminal';
import { localFiles } from './localFiles';
import { LocalMeter } from './localMeter';
import { LocalIsolation, type IsolatedSpawn } from './localIsolation';

/** Removals running at once: half of libuv's default thread pool, the other half stays for acquires. */
const REMOVALS_AT_ONCE = 2;

export interface LocalBackendOptions {
  root: BrokerConfig['localRoot'];
  cgroups: BrokerConfig['localCgroups'];
  /** BrokerConfig's hostEnv; without it, config.ts resolves it from this process's environment. */
  hostEnv?: HostEnv;
  /** A named pool's environment (BROKER_POOLS), on top of the base one in every shell and terminal. */
  env?: Readonly<Record<string, string>>;
  /** BROKER_SESSION_ISOLATION set explicitly to on: given where the broker is root, else said at start and in /health. */
  isolation?: boolean;
  /** BROKER_SESSION_DISK_BYTES: each isolated session's private tmpfs. */
  isolationDiskBytes?: number;
}

/** An isolated session's size when none is given (BROKER_SESSION_DISK_BYTES's own default at most). */
const DEFAULT_DISK_BYTES = 256 * 1024 * 1024;

/** The environment a session starts with: nothing of the broker's own (tokens stay out). */
function baseEnv(home: string, host: HostEnv): Record<string, string> {
  const env: Record<string, string> = { PATH: host.path, HOME: home, TERM: 'dumb', LANG: host.lang, SHELL: '/bin/bash' };
  if (host.tz) env.TZ = host.tz;
  return env;
}

export class LocalBackend implements SessionBackend {
  readonly kind = 'local';
  readonly files = localFiles;
  readonly terminals: Terminals = { open: (container, options) => this.openTerminal(container, options) };
  /** A pool's container and a lifecycle sandbox's are each a directory of their own here. */
  readonly containers: ContainerStarts = poolAndLifecycleStarts(this.kind, (index) => this.startPool(index), (spec) => this.startDedicated(spec));
  readonly instance = `${process.pid}-${randomBytes(4).toString('hex')}`;
  readonly meter = new LocalMeter(
    (slotId) => (this.cgroups ? this.cgroups.slotPath(slotId) : null),
    (slotId) => `BROKER_SESSION_TAG=${this.instance}-${slotId}-`,
  );
  private readonly cgroups: CgroupTree | null;
  private generation = 0;
  /** Working directories not removed yet: they live outside the roots, so close() must sweep them. */
  private readonly workdirs = new Set<string>();
  private readonly hostEnv: HostEnv;
  /** bash's absolute path on the broker's PATH, found once (see bashPath.ts). */
  private readonly bash: string;
  /** Working directory removals: no slot waits for them (removeWorkdir). */
  private readonly removals = new PQueue({ concurrency: REMOVALS_AT_ONCE });
  /** The environment of each dedicated sandbox's root, by root (`dedicated`). */
  private readonly dedicatedEnv = new Map<string, Readonly<Record<string, string>>>();
  private readonly sessionIsolation: LocalIsolation;
  /** Live roots ("containers"), for /health's isolation counts. */
  private readonly roots = new Set<string>();
  /** `<root>/<slot id>` → the slot's newest session shell: its extra shells and terminals join its namespaces. */
  private readonly sessionShells = new Map<string, LocalShell>();

  constructor(private readonly options: LocalBackendOptions) {
    this.hostEnv = options.hostEnv ?? hostEnv();
    this.bash = findBash(this.hostEnv.path);
    this.cgroups = options.cgroups === 'auto' ? CgroupTree.create(this.instance) : null;
    this.sessionIsolation = new LocalIsolation({ asked: options.isolation === true, diskBytes: options.isolationDiskBytes ?? DEFAULT_DISK_BYTES, root: options.root });
  }

  /** Before any root starts: per-lease isolation set up and checked, when asked for (it logs loudly when it cannot be given). */
  async init(): Promise<void> {
    await this.sessionIsolation.prepare();
  }

  /** /health's `isolation`: asked for, and given or not. */
  readonly isolation = {
    status: (): IsolationReport => this.sessionIsolation.status(this.roots.size),
  };

  get confinement(): 'cgroup' | 'procfs' {
    return this.cgroups ? 'cgroup' : 'procfs';
  }

  private async startPool(index: number): Promise<ContainerRef> {
    const dir = path.join(this.options.root, `c${index}`);
    await fs.mkdir(dir, { recursive: true });
    this.roots.add(dir);
    return { id: dir, name: `local-${index}` };
  }

  /**
   * A lifecycle sandbox's own "container": a fresh working root whose shells get its environment.
   * There is no image here (nor entry process or limits): docs/lifecycle.md says what an image means locally.
   */
  private async startDedicated(spec: DedicatedContainerSpec): Promise<ContainerRef> {
    const dir = path.join(this.options.root, `sbx-${spec.owner}`);
    await fs.mkdir(dir, { recursive: true });
    this.roots.add(dir);
    this.dedicatedEnv.set(dir, spec.env);
    return { id: dir, name: `local-sbx-${spec.owner}` };
  }

  /** Sessions here are host processes: what they listen on is the host's loopback. */
  async containerAddress(): Promise<string | null> {
    return '127.0.0.1';
  }

  async removeContainer(container: ContainerRef): Promise<void> {
    this.dedicatedEnv.delete(container.id);
    this.roots.delete(container.id);
    for (const key of this.sessionShells.keys()) if (key.startsWith(`${container.id}/`)) this.sessionShells.delete(key);
    await fs.rm(container.id, { recursive: true, force: true });
  }

  async checkContainer(container: ContainerRef): Promise<ContainerHealth> {
    return existsSync(container.id) ? { healthy: true } : { healthy: false, reason: `working root ${container.id} is gone` };
  }

  async openShell(container: ContainerRef, options: OpenShellOptions): Promise<ShellProcess> {
    if (options.pty) throw new NotSupportedError('the local backend does not open PTY sessions yet');
    this.generation++;
    const isolated = options.companionOf === undefined ? this.sessionIsolation.spawn(options.workdir) : this.joinSession(container, options.companionOf);
    const shell = new LocalShell({
      cwd: container.id,
      env: { ...baseEnv(container.id, this.hostEnv), ...this.options.env, ...this.dedicatedEnv.get(container.id) },
      bash: this.bash,
      tag: `BROKER_SESSION_TAG=${this.instance}-${options.slotId}-${this.generation}`,
      cgroup: this.cgroups ? this.cgroups.slotPath(options.slotId) : null,
      isolated: isolated ?? undefined,
    });
    try {
      await shell.started();
    } catch (err) {
      await shell.close();
      // A mount of the table may have gone from the host: the next session gets a table made anew.
      await this.sessionIsolation.remakeTemplate();
      throw err;
    }
    if (isolated && options.companionOf === undefined) this.sessionShells.set(`${container.id}/${options.slotId}`, shell);
    return shell;
  }

  /**
   * Isolated: an extra shell of the session in slot `slotId` (execd's, a workspace's terminal) joins
   * its namespaces, so it sees that session's files; where that session's shell is gone there is no
   * view to join, and it gets a fresh one of its own. Null: isolation is off.
   */
  private joinSession(container: ContainerRef, slotId: string, kind: 'shell' | 'terminal' = 'shell'): IsolatedSpawn | null {
    const owner = this.sessionShells.get(`${container.id}/${slotId}`)?.hostBashPid ?? -1;
    // A terminal has no view to open in: its slot is lost, and its workspace moves to another.
    if (owner <= 0 && kind === 'terminal' && this.sessionIsolation.isolates) throw new Error(`the session shell of slot ${slotId} is gone`);
    if (owner <= 0) return this.sessionIsolation.spawn(undefined);
    return kind === 'terminal' ? this.sessionIsolation.terminal(owner) : this.sessionIsolation.join(owner);
  }

  /** A workspace's terminal: in the slot's cgroup, so the slot's cleanup also finds what it left. */
  private async openTerminal(container: ContainerRef, options: TerminalOptions): Promise<TerminalProcess> {
    const tag = `BROKER_SESSION_TAG=${this.instance}-${options.slotId}-t${++this.generation}`;
    const [key, value] = [tag.slice(0, tag.indexOf('=')), tag.slice(tag.indexOf('=') + 1)];
    return new LocalTerminal({
      bash: this.bash,
      cwd: options.cwd,
      env: { ...baseEnv(options.cwd, this.hostEnv), ...this.options.env, TERM: 'xterm-256color', ...options.env, [key]: value },
      cols: options.cols,
      rows: options.rows,
      tag,
      cgroup: this.cgroups ? this.cgroups.slotPath(options.slotId) : null,
      isolated: this.joinSession(container, options.slotId, 'terminal') ?? undefined,
    });
  }

  async prepareWorkdir(_container: ContainerRef, dir: string, files: readonly WorkdirFile[]): Promise<void> {
    this.workdirs.add(dir);
    await fs.mkdir(dir, { recursive: true });
    for (const file of files) {
      const target = path.join(dir, file.path);
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(target, file.content);
    }
  }

  /**
   * Queued, a few at a time: a recursive rm of a big directory is many calls on libuv's small thread
   * pool, which an acquire's file writes share. Most directories are empty or nearly: `rmdir` first
   * (one call) and the recursive walk only when it finds files.
   */
  removeWorkdir(_container: ContainerRef, dir: string): Promise<void> {
    return this.removals.add(() => this.removeDir(dir));
  }

  workdirGone(_container: ContainerRef, dir: string): boolean {
    return !existsSync(dir);
  }

  async close(): Promise<void> {
    this.cgroups?.close();
    this.removals.clear();
    // Leases still held, or released but not cleaned yet when the pool stopped its workers.
    await Promise.all([...this.workdirs].map((dir) => this.removeDir(dir).catch(() => undefined)));
    await fs.rm(this.options.root, { recursive: true, force: true }).catch(() => undefined);
  }

  private async removeDir(dir: string): Promise<void> {
    const emptied = await fs.rmdir(dir).then(
      () => true,
      (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
    );
    if (!emptied) await fs.rm(dir, { recursive: true, force: true, maxRetries: 2 });
    this.workdirs.delete(dir);
  }
}
