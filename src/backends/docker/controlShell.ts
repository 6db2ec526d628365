/**
 * One extra bash per container that the broker keeps for itself: it signals and kills session
 * processes (procScripts.ts) and answers health pings, in ~1 ms instead of a new docker exec (~60-80 ms).
 * It is itself framed like a session (BashSession), so the protocol is the one already tested.
 */
import type Dockerode from 'dockerode';
import { BashSession, ShellDiedError } from '../../core/bashSession';
import type { ShellListener, ShellProcess } from '../../core/backend';
import { DockerDemuxer } from './demux';
import { CONTROL_SCRIPT } from './procScripts';
import { SHELL_CMD } from './dockerShell';
import type { Duplex } from 'node:stream';

const CONTROL_TIMEOUT_MS = 10_000;

/** The control shell's own transport: a plain exec; it never needs signals or recycling. */
class ControlTransport implements ShellProcess {
  readonly description: string;
  private listener: ShellListener | null = null;
  constructor(private readonly socket: Duplex, containerId: string) {
    this.description = `control shell of ${containerId.slice(0, 12)}`;
    const demux = new DockerDemuxer((s, c) => this.listener?.onData(s, c));
    socket.on('data', (c: Buffer) => demux.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => this.listener?.onExit({ code: null, signal: null, reason: 'control shell stream closed' }));
  }
  setListener(l: ShellListener): void {
    this.listener = l;
  }
  write(text: string): void {
    this.socket.write(text);
  }
  interrupt(): void {}
  async killStartedSince(): Promise<number> {
    return 0;
  }
  async close(): Promise<void> {
    this.socket.destroy();
  }
}

export class ControlShell {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly session: BashSession) {}

  static async open(container: Dockerode.Container): Promise<ControlShell> {
    const exec = await container.exec({ Cmd: SHELL_CMD, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false });
    const socket = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    const session = new BashSession(new ControlTransport(socket, container.id));
    await session.start();
    const control = new ControlShell(session);
    await control.run(CONTROL_SCRIPT);
    return control;
  }

  get alive(): boolean {
    return this.session.alive;
  }

  /** Commands on the control shell run one at a time (a BashSession runs one command at once). */
  run(command: string, timeoutMs = CONTROL_TIMEOUT_MS): Promise<string> {
    const next = this.queue.then(async () => {
      const r = await this.session.execute(command, { timeoutMs, maxOutputBytes: 64 * 1024 });
      if (r.timedOut) throw new Error(`control command timed out: ${command.slice(0, 60)}`);
      return r.stdout;
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  signalGroup(pid: number, signal: 'INT' | 'KILL'): void {
    void this.run(`builtin kill -${signal} -- -${pid} 2>/dev/null || builtin kill -${signal} ${pid} 2>/dev/null; :`).catch(() => undefined);
  }

  /** `sinceEpochMs` -1 kills regardless of start time. */
  async kill(rootPid: number, sinceEpochMs: number, tag: string, keepRoot: boolean): Promise<number> {
    const out = await this.run(`__bk_kill ${rootPid} ${Math.round(sinceEpochMs)} ${quote(tag)} ${keepRoot ? 1 : 0}`);
    return Number(out.trim()) || 0;
  }

  async ping(timeoutMs: number): Promise<void> {
    await this.run(':', timeoutMs);
  }

  async close(): Promise<void> {
    await this.session.close().catch((err) => {
      if (!(err instanceof ShellDiedError)) throw err;
    });
  }
}

function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
