/**
 * A local-backend broker run as a separate process, CONFINED (see confine.sh for the layout): pid 1 of
 * its own pid namespace, its own mount namespace with a small private tmpfs on /tmp, cgroups with
 * pids/memory/cpu limits (confineCgroups.ts). For the abuse suite, whose commands (fork bomb,
 * `kill -9 -1` as root, memory hog, disk filler) would otherwise hit this host and everything else
 * running on it. Host-side views (pids, namespaces) read this host's /proc; the broker is reached
 * over loopback (no network namespace).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Agent } from 'undici';
import { httpCall } from '../../devtools/httpCall';
import { eventually, type Health, type HttpResult } from './broker';
import { createConfineGroups, type ConfineGroups, type ConfineLimits } from './confineCgroups';
import type { AbuseBroker } from './abuseCases';
import { cmdline, procAlive } from '../../devtools/procs';
import { compiledEntry } from '../../devtools/brokerProcess';

const REPO = path.resolve(__dirname, '../..');
const CONFINE_SH = path.join(__dirname, 'confine.sh');
const REAPER_SOURCE = path.join(__dirname, 'initReaper.c');
const REAPER_PRELOAD = path.join(__dirname, 'initReaper.ts');
const START_MS = 60_000;
const STOP_MS = 20_000;

export interface ConfineOptions extends ConfineLimits {
  tmpMiB: number;
  containers: number;
  sessionsPerContainer: number;
}

/** A process of the namespace, seen from the host. */
export interface NsProcess {
  hostPid: number;
  /** Host pid of its parent (0 for the broker: its parent is outside the namespace). */
  ppid: number;
  comm: string;
  cmdline: string;
  /** Its pid inside the namespace, as the sessions' /proc shows it. */
  nsPid: number;
  /** /proc state letter: R, S, D, Z (zombie), ... */
  state: string;
}

export interface ConfinedBroker extends AbuseBroker {
  url: string;
  groups: ConfineGroups;
  /** Host pids: `unshare` (host side) and the broker (node, pid 1 of the namespace). */
  hostPids: { unshare: number; broker: number };
  /** The namespace's pid and mount namespace inodes, and this process's own, for comparison. */
  ns: { pid: string; mnt: string };
  hostNs: { pid: string; mnt: string };
  /** Every process of the namespace, zombies included. */
  processes(): NsProcess[];
  /** `p` as the broker sees it: its /tmp is private, the host reaches it through /proc/<pid>/root. */
  insidePath(p: string): string;
  /** Log lines the broker wrote (pino JSON on stdout, anything else on stderr). */
  output(): string;
  /** Stops the broker (SIGTERM, then SIGKILL: it is the namespace's init) and removes the cgroups. */
  stop(): Promise<void>;
}

function nsInode(pid: number, kind: string): string {
  return fs.readlinkSync(`/proc/${pid}/ns/${kind}`);
}

function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function statusField(pid: number, field: string): string {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'latin1')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return (line ?? '').slice(field.length + 1).trim();
}

/** Host processes (zombies included) whose pid namespace is `inode`. */
function processesIn(inode: string): NsProcess[] {
  const found: NsProcess[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      if (nsInode(pid, 'pid') !== inode) continue;
      // NSpid: the host pid, then the pid inside the namespace.
      const nsPids = statusField(pid, 'NSpid').split(/\s+/).map(Number);
      found.push({
        hostPid: pid,
        ppid: Number(statusField(pid, 'PPid')),
        comm: fs.readFileSync(`/proc/${pid}/comm`, 'latin1').trim(),
        cmdline: cmdline(pid),
        nsPid: nsPids[1],
        state: statusField(pid, 'State').charAt(0),
      });
    } catch {
      /* exited meanwhile */
    }
  }
  return found;
}

function httpClient(url: string): Pick<AbuseBroker, 'post'> & { get(p: string): Promise<HttpResult>; close(): Promise<void> } {
  const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });
  const call = (method: 'GET' | 'POST', p: string, body?: unknown): Promise<HttpResult> => httpCall(dispatcher, url + p, method, body, { 'content-type': 'application/json' });
  return { post: (p, body) => call('POST', p, body), get: (p) => call('GET', p), close: () => dispatcher.close() };
}

/** Compiles the init reaper addon outside /tmp (the broker's /tmp is a fresh tmpfs that hides the host's). */
function buildReaper(dir: string): string {
  const out = path.join(dir, 'initReaper.node');
  const r = spawnSync('gcc', ['-shared', '-fPIC', '-O2', '-I/usr/include/node', REAPER_SOURCE, '-o', out], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot build the init reaper (gcc and /usr/include/node are needed): ${r.error?.message ?? r.stderr}`);
  return out;
}

function brokerEnv(options: ConfineOptions, groups: ConfineGroups, reaper: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: '/tmp',
    CONFINE_PROCS_FILES: groups.procsFiles.join(' '),
    CONFINE_TMP_MIB: String(options.tmpMiB),
    CONFINE_REAPER_ADDON: reaper,
    BROKER_BACKEND: 'local',
    BROKER_LOCAL_CGROUPS: 'auto',
    BROKER_CONTAINERS: String(options.containers),
    BROKER_SESSIONS_PER_CONTAINER: String(options.sessionsPerContainer),
    BROKER_ACQUIRE_TIMEOUT: '10',
    BROKER_SHUTDOWN_GRACE: '2',
    BROKER_HEALTH_INTERVAL: '0.5',
    HOST: '127.0.0.1',
    PORT: '0',
  };
}

export async function startConfinedBroker(options: ConfineOptions): Promise<ConfinedBroker> {
  if (process.getuid?.() !== 0) throw new Error('the confined local abuse suite needs root (namespaces, cgroups, mounts)');
  const name = `bash-broker-abuse-${process.pid}`;
  const buildDir = fs.mkdtempSync(path.join('/var/tmp', `${name}-`));
  let groups: ConfineGroups | null = null;
  let child: ChildProcess | null = null;
  let log = '';
  const cleanUp = (): void => {
    fs.rmSync(buildDir, { recursive: true, force: true });
    groups?.remove();
  };
  try {
    const reaper = buildReaper(buildDir);
    groups = createConfineGroups(name, options);
    // ts-node for the reaper's preload only: the broker is the compiled one (brokerProcess.ts says why).
    const node = [process.execPath, '-r', 'ts-node/register/transpile-only', '-r', REAPER_PRELOAD, await compiledEntry()];
    child = spawn(CONFINE_SH, ['outer', ...node], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: brokerEnv(options, groups, reaper) });
    const proc = child;
    proc.stdout!.on('data', (c: Buffer) => (log += c.toString()));
    proc.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    let port = 0;
    await eventually(
      () => {
        if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`the confined broker exited:\n${log}`);
        const m = /broker listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
        port = m ? Number(m[1]) : 0;
        return port > 0;
      },
      START_MS,
      () => `the confined broker to listen (output so far:\n${log})`,
    );
    const unshare = proc.pid!;
    const [broker] = childrenOf(unshare);
    if (!broker || cmdline(broker).split(' ')[0] !== process.execPath) {
      throw new Error(`unexpected process tree: unshare ${unshare} -> ${broker} (${cmdline(broker)})`);
    }
    const ns = { pid: nsInode(broker, 'pid'), mnt: nsInode(broker, 'mnt') };
    const url = `http://127.0.0.1:${port}`;
    const http = httpClient(url);
    const total = options.containers * options.sessionsPerContainer;
    const confineGroups = groups;
    let stopped: Promise<void> | null = null;

    const cb: ConfinedBroker = {
      url,
      groups: confineGroups,
      total,
      hostPids: { unshare, broker },
      ns,
      hostNs: { pid: nsInode(process.pid, 'pid'), mnt: nsInode(process.pid, 'mnt') },
      post: http.post,
      async acquire() {
        const r = await http.post('/session/acquire', {});
        if (r.status !== 200) throw new Error(`acquire failed: ${r.status} ${r.text}`);
        return r.json.session_id as string;
      },
      async release(id) {
        const r = await http.post(`/session/${id}/release`);
        if (r.status !== 200) throw new Error(`release failed: ${r.status} ${r.text}`);
      },
      health: async () => (await http.get('/health')).json as Health,
      async waitAllAvailable(timeoutMs = 20_000) {
        let last: Health | null = null;
        await eventually(
          async () => {
            last = await cb.health();
            return last.available_sessions === total && last.status === 'healthy';
          },
          timeoutMs,
          () => `every session available (last /health: ${JSON.stringify(last)})`,
        );
        return last!;
      },
      processes: () => processesIn(ns.pid),
      insidePath: (p) => path.join(`/proc/${broker}/root`, p),
      output: () => log,
      stop() {
        stopped ??= (async () => {
          await http.close();
          // The broker drains and exits on SIGTERM; as the namespace's init, its exit makes the kernel
          // kill whatever is left in the namespace. SIGKILL if it hangs.
          if (proc.exitCode === null && proc.signalCode === null) {
            process.kill(broker, 'SIGTERM');
            const timer = setTimeout(() => {
              if (procAlive(broker)) process.kill(broker, 'SIGKILL');
            }, STOP_MS);
            await exited;
            clearTimeout(timer);
          }
          cleanUp();
        })();
        return stopped;
      },
    };
    await cb.waitAllAvailable(START_MS);
    return cb;
  } catch (err) {
    for (const pid of child?.pid ? childrenOf(child.pid) : []) process.kill(pid, 'SIGKILL');
    if (child && child.exitCode === null && child.signalCode === null) await new Promise((r) => child!.once('exit', r));
    try {
      cleanUp();
    } catch (cleanupErr) {
      throw new Error(`${(err as Error).message}\n(and cleanup failed: ${(cleanupErr as Error).message})`, { cause: cleanupErr });
    }
    throw err;
  }
}
