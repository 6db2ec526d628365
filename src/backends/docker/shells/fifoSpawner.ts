/**
 * The fifo transport: shells spawned by the container's own entrypoint on named pipes, instead of one
 * `docker exec` each (~60 ms of dockerd and runc, and dockerd only makes ~40 a second on 2 cores:
 * 1024 sessions took 30 s on top of their containers' start).
 *
 * The broker makes a directory per container on the engine's host and bind-mounts it read-only at
 * /.bkr (the container can open the pipes in it but create nothing there). The entrypoint
 * (SPAWNER_SCRIPT) reads spawn requests from /.bkr/spawn and answers on /.bkr/events. For each
 * shell the broker makes three pipes with unguessable names, opens its side, asks for the spawn,
 * and unlinks them once both sides hold them. A small wrapper subshell per shell waits for its bash
 * and reports its exit, so a bash that dies while a background job still holds its stdout is noticed
 * at once (with docker exec, dockerd ends such a stream after 2 s).
 *
 * This needs the broker and the engine to share a filesystem (a local engine; in compose, the same
 * host path mounted into the broker). `ready()` tells: the entrypoint announces itself on the pipe
 * only if it sees the broker's pipes. Otherwise the backend falls back to docker exec.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { BackendError, errorMessage } from '../../../common/errors';
import { LineReader } from '../../../common/lineReader';
import { type ChannelRequest, type ShellChannel, SHELL_CMD } from './channel';
import { FifoChannel } from './fifoChannel';
import { FS_SCRIPT } from '../control/procScripts';
import type { FifoStock } from './fifoStock';
import type { IsolationConfig } from '../../../config/isolationConfig';
import { isolationFunctions, SESSION_INIT_NAME } from '../isolation/isolationScript';
import { SessionControl } from '../isolation/sessionControl';

/** Where the directory appears in the container. */
export const FIFO_MOUNT = '/.bkr';
const SPAWN_TIMEOUT_MS = 20_000;
/**
 * A line on the events pipe is short; anything longer is not the spawner's, and is skipped. (The pipe
 * is writable from inside the container: it must never grow the broker's memory.)
 */
const MAX_EVENT_LINE = 256;

/**
 * The container's entrypoint (`bash -c`). With the broker's pipes present it serves spawn requests
 * `<name> <VAR=value>`; without them (a remote engine) it idles on its open stdin as a plain `bash`
 * entrypoint would, and the broker uses docker exec. `set -m` gives each spawned bash its own process
 * group (it leads it, as under docker exec: a ^C to the group reaches its commands and nothing else).
 *
 * It forks only when the container's pids cgroup has room (`__bk_room`, builtins only), and answers
 * `failed` otherwise: at the limit bash retries a fork for ~15 s and then, being non-interactive,
 * EXITS (status 254) — the entrypoint gone, the container and every session in it with it. A
 * neighbour's fork burst held at the limit did exactly that in the soak.
 */
export const SPAWNER_SCRIPT = spawnerScript();

/**
 * SPAWNER_SCRIPT, or with per-lease isolation (isolation/isolationScript.ts): a request then reads
 * `<name> <VAR=value> [<workdir id or -> <pid to join or 0> <network> [1]]`, the shell of a request
 * with the last three starts isolated when the container can, in the network the third names
 * (`shared`, `none`, `full`: isolation/sessionNet.c), and the announcement says whether it can
 * (`ready iso init`, `ready iso` or `ready noiso <why>`; ` net` after `init`: sessions get networks
 * of their own). A final `1` asks for the session init's
 * control pipes `<name>.ctl` and `<name>.ans` (isolation/sessionControl.ts), handed to the init
 * alone; a final `t`, for a workspace's terminal that the session init opens (`iso init` only).
 */
export function spawnerScript(isolation?: IsolationConfig): string {
  const iso = isolation?.enabled ? isolation : null;
  const fields = iso ? 'n v w j m k' : 'n v';
  const isoCheck = iso ? ' && ( -z $w || ( $w =~ ^(-|[0-9a-z][0-9a-z.-]*)$ && $j =~ ^[0-9]+$ && $m =~ ^(shared|none|full)$ ) )' : '';
  const shell = iso ? '__bk_shell "$w" "$j" "$k" "$m"' : SHELL_CMD.join(' ');
  // The session init's control pipes (isolation/sessionControl.ts), when the request asks for them: fds 8 and 9, `k` says so to __bk_shell.
  const control = iso ? '\n      [[ $k == t ]] || { [[ $k == 1 ]] && { exec 8<"$d/$n.ctl" 9<>"$d/$n.ans" && k=8,9 || k=-; } || k=-; }' : '';
  return `${FS_SCRIPT}${iso ? `\n${isolationFunctions(iso, `${FIFO_MOUNT}/${SESSION_INIT_NAME}`)}` : ''}
builtin cd /
d=${FIFO_MOUNT}
if [[ -p $d/spawn && -p $d/events ]] && exec 3<>"$d/spawn" 4<>"$d/events"; then
  builtin set -m
  builtin echo ${iso ? '"ready $__bk_iso${__bk_init:+ init}${__bk_net:+ net}"' : 'ready'} >&4
  while builtin read -r ${fields} <&3; do
    [[ $n =~ ^[0-9a-f]{8,64}$ && $v =~ ^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]*$${isoCheck} ]] || continue
    __bk_room || { builtin echo "failed $n 0" >&4; continue; }
    {
      builtin set -m
      exec 3<&- 5<"$d/$n.in" 6<>"$d/$n.out" 7<>"$d/$n.err" || { builtin echo "failed $n 0" >&4; builtin exit 1; }
      builtin export TERM=dumb "$v"${control}
      ${shell} <&5 >&6 2>&7 4>&- 5<&- 6>&- 7>&- &
      p=$!
      exec 5<&- 6>&- 7>&-${iso ? ' 8<&- 9<&-' : ''}
      builtin echo "spawned $n $p" >&4
      builtin wait "$p"
      builtin echo "exit $n $p $?" >&4
    } 2>/dev/null &
  done
fi
exec 3<&- 4>&-
while builtin read -r _; do :; done
`;
}

interface PendingSpawn {
  resolve: (pid: number) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class FifoSpawner {
  private spawnSocket: net.Socket | null = null;
  private eventsSocket: net.Socket | null = null;
  private readonly events = new LineReader((line) => this.onEvent(line), { maxLineBytes: MAX_EVENT_LINE, overlong: 'skip' });
  private readyWaiter: (() => void) | null = null;
  private readonly pending = new Map<string, PendingSpawn>();
  private readonly channels = new Map<string, FifoChannel>();
  private closed = false;
  /** What the entrypoint announced of per-lease isolation: `iso`, `noiso <why>`, or '' (not asked for). */
  private isolationAnnounced = '';

  private constructor(
    readonly hostDir: string,
    private readonly stock: FifoStock,
  ) {}

  /**
   * Makes the container's directory and its two control pipes; `bind` goes into HostConfig.Binds.
   * `stock` makes the pipes, and must live in `hostRoot` (it moves them into place by rename).
   * `sessionInit`: the isolation's session init (isolation/sessionInitBuild.ts) to offer the container.
   */
  static async create(hostRoot: string, containerName: string, stock: FifoStock, sessionInit: string | null = null): Promise<FifoSpawner> {
    const hostDir = path.join(hostRoot, containerName);
    await makeDirs(hostDir);
    await stock.take([path.join(hostDir, 'spawn'), path.join(hostDir, 'events')]);
    if (sessionInit) await placeFile(sessionInit, path.join(hostDir, SESSION_INIT_NAME));
    return new FifoSpawner(hostDir, stock);
  }

  get bind(): string {
    return `${this.hostDir}:${FIFO_MOUNT}:ro`;
  }

  /** Resolves once the entrypoint announced itself; false when it did not within `timeoutMs`. */
  async ready(timeoutMs: number): Promise<boolean> {
    // Read-write: neither open blocks, and the broker's own end keeps each pipe open.
    this.spawnSocket = new net.Socket({ fd: openFifo(path.join(this.hostDir, 'spawn'), fs.constants.O_RDWR), readable: false, writable: true });
    this.spawnSocket.on('error', () => undefined);
    this.eventsSocket = new net.Socket({ fd: openFifo(path.join(this.hostDir, 'events'), fs.constants.O_RDWR), readable: true, writable: false });
    this.eventsSocket.on('error', () => undefined);
    this.eventsSocket.on('data', (chunk: Buffer) => this.events.push(chunk));
    const announced = new Promise<void>((resolve) => (this.readyWaiter = resolve));
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([announced.then(() => true), expired]);
    } finally {
      clearTimeout(timer);
      this.readyWaiter = null;
    }
  }

  /** Whether this container starts isolated shells (isolation/isolationScript.ts), as its entrypoint said. */
  get isolates(): boolean {
    return this.isolationAnnounced.split(' ')[0] === 'iso';
  }

  /** Whether its isolated sessions start through the session init, which then also opens workspace terminals (`pty` requests). */
  get opensTerminals(): boolean {
    return this.isolates && this.isolationAnnounced.split(' ').includes('init');
  }

  /** Whether its isolated sessions can have networks of their own (isolation/sessionNet.c): the session init made one at the start. */
  get isolatesNetwork(): boolean {
    return this.opensTerminals && this.isolationAnnounced.split(' ').includes('net');
  }

  /** Why this container does not isolate its sessions though isolation was asked for; null when it does or it was not asked. */
  get isolationRefusal(): string | null {
    return this.isolationAnnounced.startsWith('noiso ') ? this.isolationAnnounced.slice('noiso '.length) : null;
  }

  /** `open` as a ChannelOpener. */
  readonly opener = (request: ChannelRequest): Promise<ShellChannel> => this.open(request);

  /** Spawns a bash with `env` (one `NAME=value`, the session tag) and returns its channel. */
  async open({ env, sink, statusGraceMs = 0, isolated, pty }: ChannelRequest): Promise<ShellChannel> {
    if (this.closed || !this.spawnSocket) throw new BackendError('the container is being removed');
    const assignment = env.find((e) => !e.startsWith('TERM=')) ?? 'BROKER_SESSION_TAG=';
    if (!/^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]*$/.test(assignment)) throw new BackendError(`unsupported environment ${assignment}`);
    const name = randomBytes(12).toString('hex');
    const base = path.join(this.hostDir, name);
    // A session's own isolated shell gets control pipes to its init (reuse in place); an extra shell joining one does not.
    const controlled = isolated !== undefined && this.isolates && isolated.joinPid === 0 && isolated.workdirId !== null && !pty;
    const paths = [`${base}.in`, `${base}.out`, `${base}.err`, ...(controlled ? [`${base}.ctl`, `${base}.ans`] : [])];
    const fds: number[] = [];
    let control: SessionControl | null = null;
    try {
      await this.stock.take(paths);
      // Our write ends of stdin and of the init's requests first: the spawner's read-only opens then return at once.
      fds.push(openFifo(paths[0], fs.constants.O_RDWR));
      if (controlled) fds.push(openFifo(paths[3], fs.constants.O_RDWR));
      const spawned = new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(name);
          reject(new BackendError(`the container's spawner did not start a shell within ${SPAWN_TIMEOUT_MS} ms`));
        }, SPAWN_TIMEOUT_MS);
        this.pending.set(name, { resolve, reject, timer });
      });
      const network = this.isolatesNetwork ? (isolated?.network ?? 'shared') : 'shared';
      const isolation = isolated && this.isolates ? ` ${isolated.workdirId ?? '-'} ${isolated.joinPid} ${network}${controlled ? ' 1' : pty ? ' t' : ''}` : '';
      this.spawnSocket.write(`${name} ${assignment}${isolation}\n`);
      await spawned;
      // bash holds the write ends now: read-only opens see EOF only once bash and everything that
      // inherited its output are gone, as a pipe would.
      fds.push(openFifo(paths[1], fs.constants.O_RDONLY), openFifo(paths[2], fs.constants.O_RDONLY));
      // The init holds the answers' write end now (or, started through the setup script, nothing does: EOF, no control).
      if (controlled) control = new SessionControl(fds[1], openFifo(paths[4], fs.constants.O_RDONLY));
    } catch (err) {
      for (const fd of fds) fs.close(fd, () => undefined);
      throw err instanceof BackendError ? err : new BackendError(`could not open a shell over pipes: ${errorMessage(err)}`);
    } finally {
      // Once opened on both sides the names are not needed; nobody else may open them. (A plain
      // unlink: fs.rm would lstat each first; one that never got there fails with ENOENT, ignored.)
      // Synchronous, like openFifo and the stock's renames: a syscall on the pipes' tmpfs.
      for (const p of paths) unlinkQuietly(p);
    }
    const [inFd, outFd, errFd] = controlled ? [fds[0], fds[2], fds[3]] : fds;
    const channel = new FifoChannel(inFd, outFd, errFd, sink, () => this.channels.delete(name), statusGraceMs, control);
    this.channels.set(name, channel);
    return channel;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [name, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new BackendError('the container is being removed'));
      this.pending.delete(name);
    }
    for (const channel of [...this.channels.values()]) channel.end('the container was removed');
    this.spawnSocket?.destroy();
    this.eventsSocket?.destroy();
    await fs.promises.rm(this.hostDir, { recursive: true, force: true }).catch(() => undefined);
  }

  private onEvent(line: string): void {
    if (line === 'ready' || line.startsWith('ready ')) {
      this.isolationAnnounced = line.slice('ready '.length);
      return this.readyWaiter?.();
    }
    const m = /^(spawned|failed|exit) ([0-9a-f]+) (\d+)(?: (\d+))?$/.exec(line);
    if (!m) return;
    if (m[1] !== 'exit') {
      const p = this.pending.get(m[2]);
      if (!p) return;
      this.pending.delete(m[2]);
      clearTimeout(p.timer);
      if (m[1] === 'spawned') p.resolve(Number(m[3]));
      else p.reject(new BackendError("the container's spawner refused the shell (its pids limit is full) or could not open its pipes"));
    } else {
      this.channels.get(m[2])?.end(`bash exited (status ${m[4] ?? '?'})`);
    }
  }
}

/**
 * `mkdir -p` one level at a time: Node's recursive mkdir never settles on some paths (under /proc,
 * seen with Node 20), and a bad BROKER_DOCKER_FIFO_DIR must fail, not hang the start.
 */
async function makeDirs(dir: string): Promise<void> {
  const parts = path.resolve(dir).split(path.sep).filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    try {
      await fs.promises.mkdir(path.sep + parts.slice(0, i).join(path.sep), { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/**
 * A link (the file is built once per host, read-only in every container), or a copy on another
 * filesystem. Without it (the build removed meanwhile) the container isolates through its script.
 */
async function placeFile(from: string, to: string): Promise<void> {
  try {
    await fs.promises.link(from, to);
  } catch {
    await fs.promises.copyFile(from, to).then(() => fs.promises.chmod(to, 0o755)).catch(() => undefined);
  }
}

function unlinkQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    /* never placed (the take failed), or already gone */
  }
}

/**
 * Opens a pipe without following a link and checks it is one (the directory is visible in the
 * container). Synchronously: with O_NONBLOCK neither a read-only nor a read-write open of a pipe
 * waits for the other side, so this is two syscalls; through the thread pool they cost ~20x that
 * (three pipes per shell, ~0.8 s of the broker's warm-up profile).
 */
function openFifo(file: string, mode: number): number {
  const fd = fs.openSync(file, mode | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
  try {
    if (!fs.fstatSync(fd).isFIFO()) throw new BackendError(`${file} is not a named pipe`);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  return fd;
}
