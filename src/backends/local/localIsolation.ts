/**
 * Per-lease filesystem isolation on the local backend, where the broker is root and the kernel
 * allows overlayfs and the namespaces: each session's bash starts through the session init
 * (docker/isolation/sessionInit.c, built at start by sessionInitBuild.ts) in mount, pid and IPC
 * namespaces of its own, on an overlay of the host's root with a private tmpfs as its upper layer.
 * The template and mount table the init reads are made here, once per backend, from the host's
 * mounts (hostSessionTable.ts); nothing in them depends on the local root a session runs in. A
 * session whose setup fails (a mount of the table gone from the host since) has them made again
 * for the next one.
 *
 * Beyond CAP_SYS_ADMIN (which the init drops), a local session's bash runs with the capabilities a
 * Docker container gets by default, less CAP_MKNOD: here, unlike in a container, no device cgroup
 * stands between a root process and the host's disks, and CAP_DAC_READ_SEARCH (open_by_handle_at),
 * CAP_SYS_PTRACE (a process's /proc/<pid>/root leads to the host's root from the init's), CAP_MKNOD
 * (the host's disk as a device node) and CAP_SYS_MODULE would each lead out of the session's root.
 *
 * Only when BROKER_SESSION_ISOLATION is set explicitly (its default "on" is the docker backend's).
 * Where it cannot be given (not root, no C compiler, no setpriv, a kernel that refuses the mounts),
 * sessions run on the host's filesystem as without it, and it says so loudly: in the log at start and
 * in /health.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { IsolationReport } from '../../core/ports/backend';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';
import { buildSessionInit } from '../docker/isolation/sessionInitBuild';
import { hostSessionTable, parseMountinfo } from './hostSessionTable';

const run = promisify(execFile);

/** Where each session's tmpfs is mounted in its new mount namespace before its root is moved over `/` (the host's own stays untouched). */
const STAGE = '/dev/shm';
/** Device nodes (and links) copied into each session's /dev, as the container case has them. */
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty', 'fd', 'stdin', 'stdout', 'stderr', 'ptmx'];
/** Docker's default capabilities less CAP_MKNOD (see above): the bounding set of a session's bash. */
const CAPS = ['chown', 'dac_override', 'fsetid', 'fowner', 'net_raw', 'setgid', 'setuid', 'setfcap', 'setpcap', 'net_bind_service', 'sys_chroot', 'kill', 'audit_write'];
/** The probe's shell exits with this: a whole session set up, started and ended once. */
const PROBE_STATUS = 7;
const PROBE_TIMEOUT_MS = 30_000;
/** A lease's working directory (sessionWorkdir): the one directory of the host bound into its session. */
const WORKDIR = /^\/tmp\/s\/([0-9a-z][0-9a-z.-]*)\/?$/;

export interface LocalIsolationOptions {
  /** BROKER_SESSION_ISOLATION was set to on (explicitly). */
  asked: boolean;
  /** BROKER_SESSION_DISK_BYTES: each session's tmpfs. */
  diskBytes: number;
  /** The backend's root: the session init's build and the template live there (root's own, no session writes it). */
  root: string;
}

/** How a session shell is started: the argv before bash's own, and how deep below the spawned process bash runs. */
export interface IsolatedSpawn {
  prefix: string[];
  /** 2 for a new session (its waiter, the namespace's init, then bash), 1 to join one (the waiter, then bash). */
  depth: 1 | 2;
}

export class LocalIsolation {
  private init: string | null = null;
  private template: string | null = null;
  /** Templates made so far: each new one gets a new directory (a session's init may still be copying the last). */
  private templates = 0;
  private remaking: Promise<void> | null = null;
  private setpriv: string | null = null;
  private nsenter: string | null = null;
  private refusal: string | null = null;

  constructor(private readonly options: LocalIsolationOptions) {}

  get isolates(): boolean {
    return this.init !== null;
  }

  /** Builds the session init and the template, then starts and ends one session: on, or why not (logged loudly). */
  async prepare(): Promise<void> {
    if (!this.options.asked) return;
    try {
      this.refusal = await this.tryPrepare();
    } catch (err) {
      this.refusal = `its setup failed: ${errorMessage(err)}`;
    }
    if (this.refusal !== null) {
      this.init = null;
      logger.error({ reason: this.refusal }, 'SESSIONS ARE NOT ISOLATED: BROKER_SESSION_ISOLATION is on, but this local backend cannot give its sessions filesystems of their own; they share the host\'s files, as with isolation off');
    } else {
      logger.info({ diskBytes: this.options.diskBytes }, 'local sessions are isolated: each on an overlay of the host\'s root with a private tmpfs');
    }
  }

  private async tryPrepare(): Promise<string | null> {
    if (process.getuid?.() !== 0) return 'the broker is not root: the local backend isolates only as root (mount namespaces and overlayfs)';
    const [setpriv, nsenter] = await run('bash', ['-c', 'type -P setpriv nsenter']).then(({ stdout }) => stdout.trim().split('\n'), () => []);
    if (!setpriv || !nsenter) return "util-linux's setpriv and nsenter are not on the broker's PATH (they limit each session's capabilities, and open its terminals)";
    await fs.promises.mkdir(this.options.root, { recursive: true, mode: 0o755 });
    const built = await buildSessionInit(this.options.root);
    if (built.path === null) return `the session init could not be built: ${built.why}`;
    [this.init, this.template, this.setpriv, this.nsenter] = [built.path, await this.makeTemplate(), setpriv, nsenter];
    const probe = await run(built.path, [...this.sessionPrefix('-').slice(1), 'bash', '--norc', '--noprofile', '-c', `exit ${PROBE_STATUS}`], { timeout: PROBE_TIMEOUT_MS }).then(
      () => 0,
      (err: { code?: unknown; stderr?: string }) => (err.code === PROBE_STATUS ? PROBE_STATUS : `${String(err.code)}: ${(err.stderr ?? '').trim().slice(0, 300)}`),
    );
    return probe === PROBE_STATUS ? null : `a session could not be set up (the kernel refused its namespaces or mounts; status ${probe})`;
  }

  /** The directories and device nodes every session's tmpfs starts with, and its mount table. */
  private async makeTemplate(): Promise<string> {
    const template = path.join(this.options.root, `.session-template-${++this.templates}`);
    await fs.promises.rm(template, { recursive: true, force: true });
    const mountinfo = await fs.promises.readFile('/proc/self/mountinfo', 'utf8');
    const table = hostSessionTable({
      mounts: parseMountinfo(mountinfo),
      stage: STAGE,
      kindOf: (target) => {
        const stat = fs.statSync(target.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))), { throwIfNoEntry: false });
        return stat ? (stat.isDirectory() ? 'dir' : 'file') : null;
      },
    });
    for (const dir of ['u/tmp/s', 'w', 'r', 'h', 'd/pts', 'd/shm', 'd/mqueue', ...table.dirs]) await fs.promises.mkdir(path.join(template, dir), { recursive: true, mode: 0o755 });
    for (const dir of ['u/tmp', 'd/shm', 'd/mqueue']) await fs.promises.chmod(path.join(template, dir), 0o1777);
    // Device nodes: Node cannot make them; cp -a copies them as nodes.
    await run('cp', ['-a', ...DEVICES.map((d) => `/dev/${d}`).filter((d) => fs.existsSync(d) || isLink(d)), path.join(template, 'd')]);
    await fs.promises.writeFile(path.join(template, 'fstab'), `${table.lines.join('\n')}\n`, { mode: 0o600 });
    // The one before last: no init reads it any more.
    await fs.promises.rm(path.join(this.options.root, `.session-template-${this.templates - 2}`), { recursive: true, force: true });
    return template;
  }

  /** After a session's setup failed: the template and table made again from the host's mounts as they are now (once at a time). */
  remakeTemplate(): Promise<void> {
    if (!this.template) return Promise.resolve();
    this.remaking ??= this.makeTemplate()
      .then((template) => void (this.template = template))
      .catch((err: unknown) => logger.warn({ err: errorMessage(err) }, 'could not make the isolated sessions\' template again'))
      .finally(() => (this.remaking = null));
    return this.remaking;
  }

  /**
   * The spawn of a session's shell: `workdir` its lease's working directory (bound in), or `-`.
   * Null when isolation is off.
   */
  spawn(workdir: string | undefined): IsolatedSpawn | null {
    if (!this.init) return null;
    const id = workdir === undefined ? null : (WORKDIR.exec(workdir)?.[1] ?? null);
    return { prefix: this.sessionPrefix(id ?? '-'), depth: 2 };
  }

  private sessionPrefix(workdirId: string): string[] {
    return [this.init ?? '', 'session', this.template ?? '', STAGE, String(this.options.diskBytes), workdirId, '--', ...this.dropCaps()];
  }

  /** The spawn of an extra shell (execd's, a terminal) in the namespaces of the session whose bash is host pid `bashPid`. */
  join(bashPid: number): IsolatedSpawn | null {
    if (!this.init || !this.setpriv) return null;
    return { prefix: [this.init, 'join', String(bashPid), '--', ...this.dropCaps()], depth: 1 };
  }

  /**
   * A workspace terminal's spawn in the namespaces of the session whose bash is host pid `bashPid`:
   * through nsenter, whose child stays in the terminal's foreground process group (the session
   * init's join puts its shell in a group of its own, where an interactive bash on a terminal would
   * stop itself waiting for the foreground).
   */
  terminal(bashPid: number): IsolatedSpawn | null {
    if (!this.init || !this.nsenter) return null;
    return { prefix: [this.nsenter, '-t', String(bashPid), '-p', '-i', '-m', '--', ...this.dropCaps()], depth: 1 };
  }

  private dropCaps(): string[] {
    return [this.setpriv ?? 'setpriv', '--bounding-set', ['-all', ...CAPS.map((c) => `+${c}`)].join(','), '--inh-caps', '-all', '--'];
  }

  /** /health's `isolation`, over the backend's `containers` local roots. */
  status(containers: number): IsolationReport {
    const asked = this.options.asked;
    return {
      enabled: asked,
      isolatedContainers: this.isolates ? containers : 0,
      unisolatedContainers: asked && !this.isolates ? Math.max(containers, 1) : 0,
      refusal: asked && !this.isolates ? (this.refusal ?? 'not prepared yet') : null,
      diskBytesPerSession: this.isolates ? this.options.diskBytes : 0,
      sharedPaths: [],
    };
  }
}

function isLink(p: string): boolean {
  return fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() === true;
}
