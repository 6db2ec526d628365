/**
 * The broker's own shells in a container, in two lanes (controlLane.ts), so that a kill never waits
 * behind something that can hang:
 *
 * - the signal lane, opened with the container: interrupts (urgent, ahead of the queue), kills
 *   (procScripts.ts `__bk_kill`) and health pings. Bash builtins only: it never forks, so a
 *   container at its pids limit cannot stall it, and the kills that free the pids get through.
 * - the fs lane, opened on its first use (again on first use after a failure): `mkdir -p`
 *   and `rm -rf`, which fork. Each first checks, with
 *   builtins, that the container's pids cgroup has room (`__bk_room`): at the limit bash would retry
 *   the fork for ~15 s and then abort the whole input line, end marker included. A request that
 *   still overruns its deadline discards the fs lane's bash (killed through the signal lane) and the
 *   next request opens a new one.
 *
 * Against a new `docker exec` per operation (~60-80 ms of dockerd), a lane answers in ~1 ms.
 */
import { BackendError } from '../../../common/errors';
import { logger } from '../../../common/logger';
import type { ChannelOpener } from '../shells/channel';
import { ControlLane } from './controlLane';
import { CONTROL_SCRIPT, FS_SCRIPT, GC_SCRIPT } from './procScripts';
import { redactFileContents } from '../files/laneFiles';

const CONTROL_TIMEOUT_MS = 10_000;
const LANE_OPEN_TIMEOUT_MS = 20_000;
/** A signal-lane request past its deadline may finish for this long before the lane is replaced. */
const SIGNAL_DISCARD_GRACE_MS = 60_000;

/** What an fs-lane command prints last when it ran to its end; anything else is a failure. */
const FS_OK = '__bk_fs_ok';
/** Printed by a batch (fsBatch) when its `mkdir -p` succeeded, and when its `rm -rf` did. */
const FS_MADE = '__bk_fs_made';
const FS_REMOVED = '__bk_fs_removed';

/** The container's pids cgroup is (nearly) full: the fs op was not tried, no fork was attempted. */
export class PidsLimitError extends BackendError {
  constructor(container: string, what: string) {
    super(`container ${container} is at its pids limit: ${what} not attempted; retry later`);
  }
}

/** Health pings between two collections when nothing asked for one (a safety net, ~1 min at 5 s). */
const COLLECT_EVERY_PINGS = 12;

export class ControlShell {
  private closed = false;
  /**
   * The session tags (`BROKER_SESSION_TAG=...`) of this container's live shells. Any other tag found
   * on a process marks an escapee of an ended session: `collect` kills it (procScripts.ts `__bk_gc`).
   */
  private readonly liveTags = new Set<string>();
  /** A shell ended (or a recycle killed something) since the last collection: collect at the next health ping. */
  private collectDue = false;
  private collecting = false;
  private pingsSinceCollect = 0;
  /** When the signal lane last answered anything (a ping, a kill): the container's sign of life. */
  private lastAnswerAtMs = Date.now();
  private signalsAsked = 0;

  private constructor(
    private readonly signals: ControlLane,
    private readonly fsLane: ControlLane,
    private readonly shortId: string,
  ) {}

  static async open(containerId: string, openChannel: ChannelOpener): Promise<ControlShell> {
    const shortId = containerId.slice(0, 12);
    // FS_SCRIPT too: `__bk_room` (builtins only) says whether a refused shell spawn may wait for room.
    const signals = new ControlLane({ openChannel, name: `signal lane of ${shortId}`, initScript: CONTROL_SCRIPT + GC_SCRIPT + FS_SCRIPT, discardGraceMs: SIGNAL_DISCARD_GRACE_MS });
    const fsLane = new ControlLane({
      openChannel,
      name: `fs lane of ${shortId}`,
      initScript: FS_SCRIPT,
      // A directory made for a slot's next lease names a session id not leased yet, and a file's
      // bytes may be a credential: neither is ever in a log.
      redact: (command) => redactFileContents(command).replace(/\/tmp\/s\/[0-9a-z][0-9a-z.-]*/g, '/tmp/s/<id>'),
      // Its bash (and whatever it forked, an `rm` say) must not linger: a kill is a builtin job.
      onDiscard: (pid) => void signals.run(`__bk_kill ${pid} -1 '' 0`, CONTROL_TIMEOUT_MS).catch(() => undefined),
    });
    const control = new ControlShell(signals, fsLane, shortId);
    try {
      // Only the signal lane now: it is required (health pings, kills). The fs lane opens on its
      // first request, the first acquire in this container (a few ms, once): 128 fewer bash
      // processes during a 1024-session warm-up, which is CPU-bound on Docker's own work.
      await signals.warm(LANE_OPEN_TIMEOUT_MS);
    } catch (err) {
      await control.close();
      throw err;
    }
    return control;
  }

  /** The fs lane runs nothing and has nothing queued (a batched `rm -rf` can take seconds). */
  get fsLaneIdle(): boolean {
    return this.fsLane.idle;
  }

  /** False once closed, or when the signal lane's bash is gone and could not be reopened. */
  get alive(): boolean {
    return !this.closed && this.signals.usable;
  }

  /**
   * `stillWanted`: asked when the signal's turn comes; false drops it (its reason is gone). Settles
   * (never rejects) once the lane carried it out, dropped it, or gave up on it.
   */
  signalGroup(pid: number, signal: 'INT' | 'KILL', stillWanted?: () => boolean): Promise<void> {
    const command = `builtin kill -${signal} -- -${pid} 2>/dev/null || builtin kill -${signal} ${pid} 2>/dev/null; :`;
    return this.signal(command, CONTROL_TIMEOUT_MS, true, stillWanted).then(
      () => undefined,
      () => undefined,
    );
  }

  /** `__bk_fgint`: SIGINT to the foreground group of `pid`'s terminal when a command owns it; true when sent. */
  async interruptForeground(pid: number): Promise<boolean> {
    return (await this.signal(`__bk_fgint ${pid}`, CONTROL_TIMEOUT_MS, true)).trim() === '1';
  }

  /** Whether the container's pids cgroup has room for a few more processes (`__bk_room`: builtins, no fork). */
  async hasRoom(): Promise<boolean> {
    return (await this.signal('__bk_room && builtin echo 1 || builtin echo 0', CONTROL_TIMEOUT_MS, true)).trim() === '1';
  }

  /** `__bk_nspid`: the container's pid of the process with `tag` whose pid in its own (nested) pid namespace is `nsPid`; 0: none. */
  async containerPidOf(nsPid: number, tag: string): Promise<number> {
    return Number((await this.signal(`__bk_nspid ${nsPid} ${quote(tag)}`, CONTROL_TIMEOUT_MS)).trim()) || 0;
  }

  /** A process and its children as /proc shows them (`__bk_ps`): for the log, when a shell did not answer. */
  async describeTree(pid: number): Promise<string> {
    return (await this.signal(`__bk_ps ${pid}`, CONTROL_TIMEOUT_MS)).trim();
  }

  /** `sinceEpochMs` -1 kills regardless of start time. */
  async kill(rootPid: number, sinceEpochMs: number, tag: string, keepRoot: boolean): Promise<number> {
    const out = await this.signal(`__bk_kill ${rootPid} ${Math.round(sinceEpochMs)} ${quote(tag)} ${keepRoot ? 1 : 0}`, CONTROL_TIMEOUT_MS);
    return Number(out.trim()) || 0;
  }

  /**
   * Urgent like an interrupt: a queue of kills on a busy container is not a container that does not
   * answer. After an answer, collects what ended sessions left when one is due (or every
   * COLLECT_EVERY_PINGS pings, whatever happened).
   */
  async ping(timeoutMs: number): Promise<void> {
    await this.signal(':', timeoutMs, true);
    if (++this.pingsSinceCollect >= COLLECT_EVERY_PINGS) this.collectDue = true;
    if (this.collectDue && !this.collecting) void this.collect();
  }

  /** Requests asked of the signal lane so far (pings, ^Cs, kills, collections): for tests and benches. */
  get signalRequests(): number {
    return this.signalsAsked;
  }

  /** How long ago the signal lane last answered a request (any request, not only pings). */
  get silentForMs(): number {
    return Date.now() - this.lastAnswerAtMs;
  }

  /** A shell with this tag is about to start (or a recycled one to take it): its processes are a session's. */
  addTag(tag: string): void {
    this.liveTags.add(tag);
  }

  /**
   * No shell has this tag any more; whatever still carries it is an escapee. `collectNow`: collect at
   * the next health ping (a shell that ended; a recycle just killed its tag's processes itself and
   * leaves stragglers to the periodic collection).
   */
  dropTag(tag: string, collectNow = true): void {
    if (this.liveTags.delete(tag) && collectNow) this.collectDue = true;
  }

  /** Kills every process that carries a session tag no live shell has (procScripts.ts `__bk_gc`). */
  async collect(): Promise<number> {
    this.collecting = true;
    this.collectDue = false;
    this.pingsSinceCollect = 0;
    try {
      // Written now, with the tags live now: a process started after this line is spared.
      const line = `__bk_gc ${Date.now()} ${[...this.liveTags].map(quote).join(' ')}`;
      const killed = Number((await this.signal(line, CONTROL_TIMEOUT_MS)).trim()) || 0;
      if (killed > 0) {
        logger.info({ container: this.shortId, killed }, 'killed processes left behind by ended sessions');
        // A victim's own children may have been forked after the snapshot: look again next time.
        this.collectDue = true;
      }
      return killed;
    } catch {
      this.collectDue = true;
      return -1;
    } finally {
      this.collecting = false;
    }
  }

  /**
   * One fs-lane command: `rm -rf -- removes...`, then `mkdir -p -- makes...` (either list may be
   * empty), and which of the two succeeded. Merging is fsBatch.ts's. Throws a BackendError when the
   * lane failed, a PidsLimitError (nothing tried, no fork) at the pids limit.
   */
  async fsBatch(makes: readonly string[], removes: readonly string[], timeoutMs: number): Promise<{ made: boolean; removed: boolean }> {
    // Removals first: the answer comes at the end either way, and a full /tmp gets its space back
    // before the creation needs some.
    const parts: string[] = [];
    if (removes.length > 0) parts.push(`rm -rf -- ${removes.map(quote).join(' ')} && builtin echo ${FS_REMOVED};`);
    if (makes.length > 0) parts.push(`mkdir -p -- ${makes.map(quote).join(' ')} && builtin echo ${FS_MADE};`);
    // Counts, not names: a directory made for a slot's next lease names a session id not leased yet.
    const what = `mkdir of ${makes.length} and rm -rf of ${removes.length} working directories`;
    const out = await this.fs(parts.join(' '), what, timeoutMs);
    return { made: out.includes(FS_MADE), removed: out.includes(FS_REMOVED) };
  }

  /**
   * Runs laneFiles.ts's `writeFilesCommand` (files written with builtins) on the fs lane. Throws a
   * BackendError when the lane failed, a PidsLimitError at the pids limit.
   */
  async writeFiles(command: string, fileCount: number, timeoutMs: number): Promise<void> {
    await this.fs(`${command} &&`, `writing ${fileCount} files`, timeoutMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.fsLane.close(), this.signals.close()]);
  }

  /** A request on the signal lane; its answer is the container's latest sign of life. */
  private async signal(command: string, timeoutMs: number, urgent = false, stillWanted?: () => boolean): Promise<string> {
    this.signalsAsked++;
    const out = await this.signals.run(command, timeoutMs, urgent, stillWanted);
    this.lastAnswerAtMs = Date.now();
    return out;
  }

  /** `command` on the fs lane if the container has room for its forks; its output (ending in FS_OK). */
  private async fs(command: string, what: string, timeoutMs: number): Promise<string> {
    const out = await this.fsLane.run(`if __bk_room; then ${command} builtin echo ${FS_OK}; else builtin echo __bk_fs_full; fi`, timeoutMs);
    if (out.includes(FS_OK)) return out;
    if (out.includes('__bk_fs_full')) throw new PidsLimitError(this.shortId, what);
    throw new BackendError(`${what} failed in container ${this.shortId}`);
  }
}

function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
