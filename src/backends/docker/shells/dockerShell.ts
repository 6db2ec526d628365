/**
 * A session's bash in a container, over a channel (channel.ts: a long-lived `docker exec`, or pipes
 * the container's entrypoint spawned it on). Signals and kills go through the container's control
 * shell (controlShell.ts), using the bash's pid inside the container, learned by a handshake before
 * the session is handed out.
 */
import type { ShellListener, ShellProcess, UsageCounters } from '../../../core/ports/backend';
import type { CgroupUsage } from '../../cgroupCounters';
import { NO_USAGE } from '../../../core/session/commandFacts';
import { SHELL_INIT_SCRIPT, ansiCQuote } from '../../../core/session/framing';
import { FRESH_ANSWER, RECYCLE_TIMEOUT_MS, freshInCwd, recycleExecLine, StdoutExpectation } from '../../shellRecycle';
import type { ChannelOpener, ChannelRequest, SessionNetworkMode, ShellChannel } from './channel';
import type { ControlShell } from '../control/controlShell';
import type { SessionCgroup } from '../cgroups/sessionCgroup';
import { sessionWorkdirId } from '../isolation/sessionIsolation';
import { egressRefusals } from '../isolation/egressRefusals';
import { privateDiskFull } from '../isolation/privateDisk';
import { REWIND_LAUNCHER, reuseView, settleRewind } from '../isolation/viewReuse';
import type { SessionEgress } from '../isolation/sessionEgress';

const HANDSHAKE_TIMEOUT_MS = 20_000;
/** How long a recycle waits for bash to take its ^C before writing the exec line (it is due within microseconds). */
const INTERRUPT_TAKEN_MS = 50;
/**
 * How long a recycle gives a bash that is still running, with nothing else in its cgroup, to fall
 * asleep at its prompt before it sends a ^C: one that just printed its last answer usually gets there
 * within a few ms (~10% of releases under load caught it running), and a ^C costs a signal, a sweep
 * and a wait for bash to take it.
 */
const SETTLE_MS = 5;

export interface DockerShellOptions {
  /** The container's way of opening a bash (exec or fifo). */
  openChannel: ChannelOpener;
  /** For messages and the description. */
  containerId: string;
  control: ControlShell;
  /** Extra environment of the bash (the session tag); the container's own comes with it. */
  env: string[];
  tag: string;
  /**
   * In namespaces of its own (isolation/isolationScript.ts): the channel request's `isolated`. Such a
   * shell is recycled in place only when its session's init says the lease left its view untouched
   * and has moved the view's working directory to the next lease's (isolation/sessionReuse.c).
   */
  isolated?: ChannelRequest['isolated'];
  /**
   * Given: an isolated shell whose lease changed only its view (files, IPC objects) is rewound at
   * its release, its view rolled back to the image's in its own namespaces (isolation/
   * sessionRewind.c), and this is called for each. Absent: such a shell is replaced by a new one.
   */
  rewound?: () => void;
}


export class DockerShell implements ShellProcess {
  description = 'docker bash';
  private listener: ShellListener | null = null;
  private channel: ShellChannel | null = null;
  private pid = 0;
  private ended = false;
  private closePromise: Promise<void> | null = null;
  private readonly expectation = new StdoutExpectation();
  /** `export -p` of the first shell: what a recycled shell must get back after `exec -c`. */
  private exportsScript = '';
  /** bash's absolute path (its $BASH at the handshake): the recycle's exec must not depend on the lease's PATH. */
  private bashPath = 'bash';
  private readonly baseTag: string;
  private recycles = 0;
  /** The session's own pids cgroup on the engine's host (sessionPids.ts), once bash was moved there. */
  private cgroup: SessionCgroup | null = null;
  /** The session's cpuacct and memory counters (sessionUsage.ts), for termination facts; null: unknown. */
  private counters: CgroupUsage | null = null;
  /** A timed-out command was interrupted or killed since the last recycle: bash may not be at its prompt. */
  private escalated = false;
  /** An isolated shell's lease's working directory id, which its view binds in (moved by each reuse in place). */
  private workdir: string | null;
  /** Its session's network policy changed during the lease (isolation/sessionNetwork.ts): a new session takes its slot at release. */
  networkChanged = false;
  /** Its session's network now (isolation/sessionNetwork.ts): at its start, then as changed. */
  network: SessionNetworkMode;
  /** Its session's egress rules and their resolver, once a change gave it some (isolation/sessionEgress.ts). */
  egress: SessionEgress | null = null;

  private constructor(private options: DockerShellOptions) {
    this.baseTag = options.tag;
    this.workdir = options.isolated?.workdirId ?? null;
    this.network = options.isolated?.network ?? 'shared';
    // Live before bash starts: the collector never takes this session's processes for an escapee's.
    options.control.addTag(options.tag);
  }

  static async open(options: DockerShellOptions): Promise<DockerShell> {
    const shell = new DockerShell(options);
    try {
      await shell.attach();
    } catch (err) {
      shell.channel?.destroy();
      options.control.dropTag(options.tag);
      throw err;
    }
    return shell;
  }

  private async attach(): Promise<void> {
    this.channel = await this.options.openChannel({
      env: this.options.env,
      isolated: this.options.isolated,
      sink: {
        onData: (stream, chunk) => {
          if (this.expectation.active) this.expectation.feed(stream, chunk);
          else this.listener?.onData(stream, chunk);
        },
        onEnd: (reason) => this.onEnd(reason),
      },
    });
    // `exec.inspect().Pid` is a host pid, and can be 0 right after start (exec.start resolves before
    // the process exists); we need bash's own pid, inside the container: it says it itself. An
    // isolated bash is in a pid namespace of its own, nested in the container's, where $$ is its pid:
    // its setup put its pid in the container in BROKER_SHELL_PID (which the session keeps).
    const m = await this.expectation.wait(
      /\n__bkpid=(\d+) (\S+)\n([\s\S]*)\n__bkend\n/,
      () => this.write("PS1=;builtin printf '\\n__bkpid=%d %s\\n' ${BROKER_SHELL_PID:-$$} \"$BASH\";builtin export -p;builtin printf '\\n__bkend\\n'\n"),
      HANDSHAKE_TIMEOUT_MS,
    );
    if (!m) throw new Error('bash in the container did not answer');
    this.pid = Number(m[1]);
    this.bashPath = m[2];
    this.exportsScript = m[3];
    this.description = `docker ${this.channel.transport} bash pid ${this.pid} in ${this.options.containerId.slice(0, 12)}`;
  }

  /**
   * bash was moved into its own pids cgroup (before it started anything): kills can then be decided
   * and done from the host (killForRecycle, close).
   */
  useCgroup(cgroup: SessionCgroup): void {
    this.cgroup = cgroup;
  }

  /** bash was moved into cgroups of its own in the cpuacct and memory hierarchies (sessionUsage.ts). */
  useCounters(counters: CgroupUsage): void {
    this.counters = counters;
  }

  get hostPid(): number | null {
    return this.cgroup?.shellHostPid ?? null;
  }

  usage(resetPeak: boolean): UsageCounters {
    // An isolated session's refusals are counted in its own network (isolation/egressRefusals.ts).
    const counters = { ...(this.counters?.read(resetPeak) ?? NO_USAGE), ...(this.cgroup && (this.options.isolated?.network ?? 'shared') !== 'shared' ? egressRefusals(this.cgroup.shellHostPid) : {}) };
    // A command's end (no reset): an isolated session's private disk is looked at too.
    return this.isolated && !resetPeak ? { ...counters, diskFull: privateDiskFull(this.cgroup?.shellHostPid) } : counters;
  }


  /** Whether it runs in namespaces of its own (isolation): its pid namespace is nested in the container's. */
  get isolated(): boolean {
    return this.options.isolated !== undefined;
  }

  /** The working directory id its isolated view binds in now (null: none, or not isolated). */
  get workdirId(): string | null {
    return this.workdir;
  }

  /** Its bash still runs (as far as the broker knows). */
  get alive(): boolean {
    return !this.ended && this.pid > 1;
  }

  /** bash's pid inside the container (0 before the handshake). */
  get containerPid(): number {
    return this.pid;
  }

  setListener(listener: ShellListener): void {
    this.listener = listener;
  }

  write(text: string): void {
    if (!this.ended) this.channel?.write(text);
  }

  interrupt(stillWanted?: () => boolean): Promise<void> | void {
    this.escalated = true;
    if (!this.ended && this.pid > 1) return this.options.control.signalGroup(this.pid, 'INT', stillWanted);
  }

  describe(): Promise<string> {
    return this.pid > 1 ? this.options.control.describeTree(this.pid) : Promise.resolve('no pid');
  }

  killStartedSince(sinceEpochMs: number): Promise<number> {
    this.escalated = true;
    return this.options.control.kill(this.pid, sinceEpochMs, this.options.tag, true);
  }

  /**
   * A pristine shell in this same process, without a new shell (a `docker exec` is ~60 ms): kill everything the
   * lease started but bash, close the files it opened, then `exec -c` a fresh bash in the same process
   * (same pipes, same pid) in `cwd`, and give it back the exec's original environment with a new
   * tag, and the framing's init. False when that cannot be done (bash ignores ^C in a builtin loop,
   * for one); then close and reopen.
   *
   * An isolated shell only when its lease left its view untouched, or changed only its view and
   * rewinds are on: after the kill, its session's init checks that nothing the lease did survives
   * an exec there (or rolls the view back to the image's) and moves the view's working directory
   * to `cwd` (isolation/viewReuse.ts); any other answer is a false here, and the slot gets a new shell in new
   * namespaces as before.
   */
  async recycle(cwd: string, cwdReady: Promise<void> = Promise.resolve()): Promise<boolean> {
    if (this.ended || this.pid <= 1) return false;
    const nextWorkdir = this.isolated ? sessionWorkdirId(cwd) : null;
    if (this.isolated && (!nextWorkdir || !this.channel?.control?.usable || this.networkChanged)) return false;
    const killed = await this.killForRecycle();
    if (this.ended) return false;
    await cwdReady;
    const reuse = nextWorkdir ? await reuseView(this.channel?.control, nextWorkdir, this.options.rewound !== undefined, this.description) : 'ok';
    if (reuse === null) return false;
    // The file routes of the next lease's directory run in this view from now on (sessionIsolation.ts viewOf).
    if (nextWorkdir) this.workdir = nextWorkdir;
    const nextTag = this.nextTag;
    this.options.control.addTag(nextTag);
    const restore = `${this.exportsScript}\nbuiltin export ${nextTag};builtin umask 0022\n${SHELL_INIT_SCRIPT}`;
    const line = recycleExecLine(ansiCQuote(cwd), this.bashPath, restore, reuse === 'rewound' ? REWIND_LAUNCHER : '');
    const answer = await this.expectation.wait(FRESH_ANSWER, () => this.write(line), RECYCLE_TIMEOUT_MS);
    if (!freshInCwd(answer) || this.ended) return false;
    // The fresh bash is in the fresh view: the init detaches the last one and puts the fresh one where the session's extra shells and file routes enter.
    if (reuse === 'rewound' && !(await settleRewind(this.channel?.control, this.description))) return false;
    if (reuse === 'rewound') this.options.rewound?.();
    this.recycles++;
    // A lease that left processes behind may have left one its kill missed (forked after the
    // snapshot): collect at the next ping. One that left none (most) costs no collection.
    // An isolated shell's spawn tag is also its session init's (its waiter and its namespace's pid 1
    // carry it in their environment): it stays live while the shell lives, or the collector would
    // end the namespace. No process of a lease carries it past a reuse: the init refuses one while
    // any process of the session but bash lives.
    if (!(this.isolated && this.options.tag === this.baseTag)) this.options.control.dropTag(this.options.tag, killed > 0);
    this.options = { ...this.options, tag: nextTag };
    return true;
  }

  /** A request to the session's init (isolation/sessionSnapshot.c's `snap`); null where no init answers. */
  askInit(request: string, timeoutMs: number): Promise<string | null> {
    return this.channel?.control?.ask(request, timeoutMs) ?? Promise.resolve(null);
  }

  /**
   * The recycle's kill: ^C to bash's group (a foreground builtin loop would never read the exec
   * line) and SIGKILL to everything the lease started but bash. Returns how many it killed.
   * With the session's cgroup this is decided and done from the host (killFromHost); without it
   * (cgroup v2, a remote engine, a bash that could not be moved), in the container, on its signal lane.
   */
  async killForRecycle(): Promise<number> {
    const escalated = this.escalated;
    this.escalated = false;
    const fromHost = this.cgroup ? await this.killFromHost(this.cgroup, escalated) : null;
    if (fromHost !== null) return fromHost;
    this.options.control.signalGroup(this.pid, 'INT');
    return this.options.control.kill(this.pid, -1, this.options.tag, true);
  }

  /**
   * The kill from the engine's host, in Node: no request on the container's one signal lane, whose
   * `__bk_kill` scans every /proc/N/stat in bash (~0.5 ms a process, and 8 sessions' cleanups wait
   * for each other there). Null when the cgroup cannot tell (gone with its container, or bash no
   * longer in it): the in-container path then decides as before.
   *
   * The usual lease leaves nothing running: its cgroup charges one task, bash, asleep at its prompt
   * (the session is not executing), and nothing else can appear there before the exec line is
   * written. Then there is nothing to kill and no ^C to send (a bash still running alone is given
   * SETTLE_MS to fall asleep first). Otherwise, ^C first, as a terminal would: a bash not asleep (a
   * builtin loop after a command that printed its own end marker), one
   * whose last command timed out (its escalation's ^Cs and kills may have left it mid-line), or one
   * with children (in the foreground, their death would only let bash go on with the line).
   */
  private async killFromHost(cgroup: SessionCgroup, escalated: boolean): Promise<number | null> {
    let tasks = cgroup.tasks();
    let state = cgroup.shellState();
    if (tasks === 1 && state === 'R' && !escalated) {
      state = await cgroup.settled(SETTLE_MS);
      tasks = cgroup.tasks();
    }
    if (state === null || !(tasks >= 1)) return null;
    if (tasks === 1 && state === 'S' && !escalated) return 0;
    cgroup.interruptShell();
    const sweep = await cgroup.sweep(true).catch(() => null);
    let killed = sweep?.killed ?? 0;
    // New members kept appearing through every pass (or the cgroup went away meanwhile): the
    // in-container kill, whose tree, group and tag cover the same processes, takes over.
    if (!sweep || sweep.remaining > 0) killed += await this.options.control.kill(this.pid, -1, this.options.tag, true);
    // The exec line is written next: bash must have taken the ^C, or it would discard what it read of the line.
    await cgroup.interruptTaken(INTERRUPT_TAKEN_MS);
    return killed;
  }

  /** The tag the next recycle gives its fresh bash. */
  private get nextTag(): string {
    return `${this.baseTag}.${this.recycles + 1}`;
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    const { control, tag } = this.options;
    if (this.pid > 1) {
      // Escapees first and bash with them: a child holding stdout would keep the stream open (gotcha 3).
      // With the session's cgroup, from the host: every member, bash included, and also the jobs of
      // a bash that already died (reparented to init, they stay in the cgroup).
      const swept = this.cgroup ? await this.cgroup.sweep(false).catch(() => null) : null;
      // Without it (or when the sweep could not finish): in the container. A bash that already died
      // (kill -9 $$, exec, set -e) leaves its jobs reparented to init: only the tag finds them then,
      // and its pid may already be another process's, so no tree (root -1).
      // What this misses (the kill timed out; a child forked after its snapshot) the collector takes:
      // dropping the tag below asks for a collection at the next health ping.
      if (!swept || swept.remaining > 0) await control.kill(this.ended ? -1 : this.pid, -1, tag, false).catch(() => undefined);
    }
    this.cgroup?.close();
    this.egress?.close();
    control.dropTag(tag);
    this.counters?.close();
    // A recycle that timed out may have left the next tag on a bash that is now gone; a reused isolated shell kept its spawn's.
    control.dropTag(this.nextTag);
    if (this.options.tag !== this.baseTag) control.dropTag(this.baseTag);
    this.channel?.destroy();
  }

  private onEnd(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.expectation.cancel();
    this.listener?.onExit({ code: null, signal: null, reason });
  }
}
