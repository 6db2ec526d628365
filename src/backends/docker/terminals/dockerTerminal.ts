/**
 * A workspace's bash in a container, in a real pseudo-terminal: a `docker exec` with Tty: true (the
 * engine allocates the PTY; its stream is the terminal's raw bytes, not multiplexed), resized through
 * the exec's resize call. Its processes carry a tag, so the control shell's collector leaves them be
 * while it lives and kills every one of them when it closes.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import type { TerminalOptions, TerminalProcess } from '../../../core/ports/backend';
import { TaggedTerminal } from './taggedTerminal';
import type { ControlShell } from '../control/controlShell';
import type { ChannelRequest } from '../shells/channel';
import { inSessionView } from '../isolation/sessionView';
import { errorMessage } from '../../../common/errors';

const BASH = ['bash', '--norc', '--noprofile', '-i'];

/**
 * The exec's command: bash, or, joining an isolated session's namespaces (`isolated.joinPid` its
 * shell's pid in the container, isolation/sessionView.ts), bash in the working directory (entering
 * the mount namespace puts the process at its root).
 */
function terminalCommand(cwd: string, isolated?: ChannelRequest['isolated']): string[] {
  if (!isolated) return BASH;
  return inSessionView(isolated.joinPid, ['bash', '-c', `cd -- "$1" && exec ${BASH.join(' ')}`, 'bkr-terminal', cwd]);
}

export async function openDockerTerminal(
  container: Dockerode.Container,
  control: ControlShell,
  options: TerminalOptions,
  tag: string,
  isolated?: ChannelRequest['isolated'],
): Promise<TerminalProcess> {
  control.addTag(tag); // before bash starts: the collector must never take it for an escapee
  try {
    const env = Object.entries({ TERM: 'xterm-256color', ...options.env }).map(([k, v]) => `${k}=${v}`);
    const exec = await container.exec({
      Cmd: terminalCommand(options.cwd, isolated),
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
      Env: [...env, tag],
      WorkingDir: options.cwd,
    });
    const socket = (await exec.start({ hijack: true, stdin: true, Tty: true })) as Duplex;
    const terminal = new DockerTerminal(exec, socket, control, tag, isolated !== undefined);
    terminal.resize(options.cols, options.rows);
    return terminal;
  } catch (err) {
    control.dropTag(tag);
    throw err;
  }
}

class DockerTerminal extends TaggedTerminal {
  readonly description: string;
  private readonly exitListeners: ((exit: { code: number | null; reason: string }) => void)[] = [];

  constructor(
    private readonly exec: Dockerode.Exec,
    private readonly socket: Duplex,
    control: ControlShell,
    tag: string,
    namespaced: boolean,
  ) {
    super(control, tag, namespaced);
    this.description = `docker terminal exec ${exec.id.slice(0, 12)}`;
    socket.on('error', () => undefined); // 'close' follows
    socket.once('close', () => void this.onClose());
  }

  protected send(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The engine refuses a resize after the exec ended: nothing to do then. */
  protected async applySize(cols: number, rows: number): Promise<void> {
    await this.exec.resize({ h: rows, w: cols });
  }

  protected destroyStream(): void {
    this.socket.destroy();
  }

  onData(listener: (chunk: Buffer) => void): void {
    this.socket.on('data', (chunk: Buffer) => listener(chunk));
  }

  onExit(listener: (exit: { code: number | null; reason: string }) => void): void {
    this.exitListeners.push(listener);
  }

  /** The stream closed: bash is gone; its exit code comes from the exec's inspection. */
  private async onClose(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    let code: number | null = null;
    let reason = 'the terminal exec stream closed';
    try {
      const info = await this.exec.inspect();
      code = info.ExitCode ?? null;
      reason = `bash exited with status ${code}`;
    } catch (err) {
      reason += ` (${errorMessage(err)})`;
    }
    for (const listener of this.exitListeners) listener({ code, reason });
  }
}
