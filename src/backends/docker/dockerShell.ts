/**
 * A session's bash as a long-lived `docker exec` over a hijacked stream (Tty false), demultiplexed
 * here. Signals and kills go through the container's control shell (controlShell.ts), using the
 * bash's pid inside the container, learned by a handshake before the session is handed out.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import type { ShellListener, ShellProcess } from '../../core/backend';
import { DockerDemuxer } from './demux';
import type { ControlShell } from './controlShell';

export const SHELL_CMD = ['bash', '--norc', '--noprofile', '--noediting', '-i'];
const HANDSHAKE_TIMEOUT_MS = 20_000;

export interface DockerShellOptions {
  container: Dockerode.Container;
  control: ControlShell;
  /** Environment of a fresh shell (the container's own, plus the session tag). */
  env: string[];
  tag: string;
}

export class DockerShell implements ShellProcess {
  description = 'docker exec bash';
  private listener: ShellListener | null = null;
  private socket: Duplex | null = null;
  private pid = 0;
  private ended = false;
  private closePromise: Promise<void> | null = null;
  private handshake: ((pid: number) => void) | null = null;
  private handshakeBuffer = '';

  private constructor(private options: DockerShellOptions) {}

  static async open(options: DockerShellOptions): Promise<DockerShell> {
    const shell = new DockerShell(options);
    await shell.attach();
    return shell;
  }

  private async attach(): Promise<void> {
    const exec = await this.options.container.exec({
      Cmd: SHELL_CMD,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Env: this.options.env,
      WorkingDir: '/',
    });
    const socket = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    this.socket = socket;
    const demux = new DockerDemuxer((stream, chunk) => {
      if (this.handshake) this.onHandshakeData(stream, chunk);
      else this.listener?.onData(stream, chunk);
    });
    socket.on('data', (c: Buffer) => demux.push(c));
    socket.on('error', () => undefined); // 'close' follows and reports the end
    socket.on('close', () => this.onEnd('the docker exec stream closed (bash or its container died)'));
    this.pid = await this.askPid();
    this.description = `docker exec bash pid ${this.pid} in ${this.options.container.id.slice(0, 12)}`;
  }

  /** `exec.inspect().Pid` is a host pid (and 0 at first: FINDINGS gotcha 4); we need bash's own. */
  private askPid(): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('bash in the container did not answer')), HANDSHAKE_TIMEOUT_MS);
      this.handshake = (pid) => {
        clearTimeout(timer);
        this.handshake = null;
        if (pid > 1) resolve(pid);
        else reject(new Error('bash ended during the handshake'));
      };
      this.socket!.write("PS1=;builtin printf '\\n__bkpid=%d\\n' $$\n");
    });
  }

  private onHandshakeData(stream: string, chunk: Buffer): void {
    if (stream !== 'stdout') return;
    this.handshakeBuffer += chunk.toString('latin1');
    const m = /\n__bkpid=(\d+)\n/.exec(this.handshakeBuffer);
    if (m) this.handshake?.(Number(m[1]));
  }

  setListener(listener: ShellListener): void {
    this.listener = listener;
  }

  write(text: string): void {
    if (!this.ended) this.socket?.write(text);
  }

  interrupt(): void {
    if (!this.ended && this.pid > 1) this.options.control.signalGroup(this.pid, 'INT');
  }

  killStartedSince(sinceEpochMs: number): Promise<number> {
    return this.options.control.kill(this.pid, Math.max(0, Date.now() - sinceEpochMs), this.options.tag, true);
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    if (!this.ended && this.pid > 1) {
      // Escapees first and bash with them: a child holding stdout would keep the stream open (gotcha 3).
      await this.options.control.kill(this.pid, -1, this.options.tag, false).catch(() => 0);
    }
    this.socket?.destroy();
  }

  private onEnd(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.handshake?.(0);
    this.listener?.onExit({ code: null, signal: null, reason });
  }
}
