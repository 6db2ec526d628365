/**
 * A workspace's terminal on the fifo transport: a bash spawned on the broker's named pipes (as a
 * session's is) execs `script` (util-linux), which opens a pseudo-terminal in the container and runs
 * the workspace's `bash -i` in it. Keys and output then cross one relay (script) instead of the
 * engine's two (dockerd and the container's shim): on this machine a write to a `docker exec` stream
 * cost ~0.7 ms of the broker's time under load, a write to a pipe ~0.3 ms.
 *
 * Before bash starts, script's child prints the terminal's device on a line of its own: the window
 * is resized with `stty -F <device>` from a second, short-lived spawn (the kernel then signals the
 * terminal's foreground job, as for any terminal). When `script` is missing (an image without
 * util-linux), the open fails before anything is shown and the caller falls back to `docker exec`.
 *
 * In a container whose sessions start through the broker's session init (isolation/), the init
 * opens the terminal instead (`pty`, isolation/sessionEnter.c): in the view of the session the
 * workspace holds, with nothing of the image's but bash. It prints the device line as script's
 * child does, and takes a new window size in the keys' stream (a byte 0xFF, which UTF-8 text never
 * holds, then `COLS ROWS`): no spawn and no `stty` per resize.
 */
import type { TerminalOptions, TerminalProcess } from '../../../core/ports/backend';
import { TaggedTerminal } from './taggedTerminal';
import type { ChannelOpener, ChannelRequest, ShellChannel } from '../shells/channel';
import type { ControlShell } from '../control/controlShell';
import { BackendError } from '../../../common/errors';

const OPEN_TIMEOUT_MS = 20_000;
/** The exit status follows the output's end by a moment on another pipe. */
const STATUS_GRACE_MS = 1_000;
/** What script's child prints first: the terminal's device, alone on its line. */
const DEVICE_LINE = /^(\/dev\/pts\/\d+)\r?\n/;

/** `$'...'`: bash's ANSI-C quoting of any text (no fork, unlike a `base64 -d`). */
function ansiC(text: string): string {
  return `$'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\r/g, '\\r')}'`;
}

function sq(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The session init's window size, in the keys' stream (sessionEnter.c). */
function windowSize(cols: number, rows: number): Buffer {
  return Buffer.concat([Buffer.from([0xff]), Buffer.from(`${cols} ${rows}\n`)]);
}

/**
 * Opens the terminal, or throws (`script` missing, the spawn failed) with nothing left running.
 * `isolated`: its bash and its `stty`s join an isolated session's namespaces (that view's /dev/pts).
 * `pty`: the session init opens it there (the spawner announced `iso init`), not `script`.
 */
export async function openFifoTerminal(
  open: ChannelOpener,
  control: ControlShell,
  options: TerminalOptions,
  tag: string,
  isolated?: ChannelRequest['isolated'],
  pty = false,
): Promise<TerminalProcess> {
  control.addTag(tag);
  const terminal = new FifoTerminal(open, control, tag, isolated, pty && isolated !== undefined);
  try {
    await terminal.start(options);
    return terminal;
  } catch (err) {
    await terminal.close();
    throw err;
  }
}

class FifoTerminal extends TaggedTerminal {
  description = 'docker terminal on pipes';
  private channel: ShellChannel | null = null;
  private device: string | null = null;
  private head = '';
  private exit: { code: number | null; reason: string } | null = null;
  private readonly dataListeners: ((chunk: Buffer) => void)[] = [];
  private readonly exitListeners: ((exit: { code: number | null; reason: string }) => void)[] = [];
  private started: { resolve: () => void; reject: (err: Error) => void } | null = null;
  private readonly early: Buffer[] = [];

  constructor(
    private readonly open: ChannelOpener,
    control: ControlShell,
    tag: string,
    private readonly isolated: ChannelRequest['isolated'],
    private readonly pty: boolean,
  ) {
    super(control, tag, isolated !== undefined);
  }

  async start(options: TerminalOptions): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => (this.started = { resolve, reject }));
    this.channel = await this.open({
      env: [this.tag],
      isolated: this.isolated,
      pty: this.pty,
      sink: { onData: (stream, chunk) => stream === 'stdout' && this.received(chunk), onEnd: (reason) => this.onChannelEnd(reason) },
      statusGraceMs: STATUS_GRACE_MS,
    });
    const env = Object.entries({ TERM: 'xterm-256color', ...options.env }).map(([k, v]) => `${k}=${ansiC(v)}`);
    if (this.pty) {
      // The init reads its size and its shell's command line, runs `bash -c` that line in the terminal, and prints the device.
      this.channel.write(`${options.cols} ${options.rows} cd -- ${sq(options.cwd)} && export ${env.join(' ')} && exec bash --norc --noprofile -i\n`);
    } else {
      // BROKER_SHELL_PID (an isolated shell's pid in the container) is the spawned bash's, which becomes script, not the terminal's bash.
      const inner = `tty; stty cols ${options.cols} rows ${options.rows}; unset BROKER_SHELL_PID; exec bash --norc --noprofile -i`;
      // The spawned bash reads this line, then becomes script; its prompts go to stderr, which is ignored.
      this.channel.write(`cd -- ${sq(options.cwd)} && command -v script >/dev/null && export ${env.join(' ')} && exec script -qfec ${sq(inner)} /dev/null; exit 127\n`);
    }
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new BackendError('the terminal did not start within 20 s')), OPEN_TIMEOUT_MS)));
    try {
      await Promise.race([ready, expired]);
    } finally {
      clearTimeout(timer);
    }
    this.description = `docker terminal on pipes, ${this.device}`;
  }

  /** The pipe takes text (UTF-8): keys are UTF-8, and a byte sequence that is not would be replaced (so no key holds the init's 0xFF). */
  protected send(data: string | Buffer): void {
    this.channel?.write(typeof data === 'string' ? data : data.toString('utf8'));
  }

  protected destroyStream(): void {
    this.channel?.destroy();
  }

  /** In the keys' stream to the session init; else `stty -F` from a spawn of its own, carrying the tag (the collector leaves it be). */
  protected async applySize(cols: number, rows: number): Promise<void> {
    if (this.pty) this.channel?.write(windowSize(cols, rows));
    else if (this.device) await this.stty(this.device, cols, rows);
  }

  private async stty(device: string, cols: number, rows: number): Promise<void> {
    let finished!: () => void;
    const ended = new Promise<void>((resolve) => (finished = resolve));
    const ch = await this.open({ env: [this.tag], isolated: this.isolated, sink: { onData: () => undefined, onEnd: () => finished() } });
    ch.write(`stty -F ${device} cols ${cols} rows ${rows}; exit\n`);
    await ended;
  }

  onData(listener: (chunk: Buffer) => void): void {
    this.dataListeners.push(listener);
    // What came with the device line or right after it, before anyone listened (the first prompt).
    for (const chunk of this.early.splice(0)) listener(chunk);
  }

  onExit(listener: (exit: { code: number | null; reason: string }) => void): void {
    if (this.exit) listener(this.exit);
    else this.exitListeners.push(listener);
  }

  private received(chunk: Buffer): void {
    if (this.device === null) {
      this.head += chunk.toString('latin1');
      const m = DEVICE_LINE.exec(this.head);
      if (!m) return;
      this.device = m[1];
      const rest = Buffer.from(this.head.slice(m[0].length), 'latin1');
      this.head = '';
      this.started?.resolve();
      if (rest.length === 0) return;
      chunk = rest;
    }
    if (this.dataListeners.length === 0) this.early.push(chunk);
    for (const listener of this.dataListeners) listener(chunk);
  }

  private onChannelEnd(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    const status = /status (\d+)/.exec(reason)?.[1];
    const code = status === undefined ? null : Number(status);
    if (this.device === null) {
      const why = this.pty ? `the session init opened no terminal (${reason})` : code === 127 ? 'no `script` (util-linux) in the container' : `the terminal ended before it started (${reason})`;
      this.started?.reject(new BackendError(why));
      return;
    }
    this.exit = { code, reason: code === null ? reason : `bash exited with status ${code}` };
    for (const listener of this.exitListeners) listener(this.exit);
  }
}
