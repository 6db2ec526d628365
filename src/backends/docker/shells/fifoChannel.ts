/**
 * A shell's channel over the named pipes the fifo spawner (fifoSpawner.ts) opened for it: its stdin
 * written, its stdout and stderr read, and the init's control pipes when it has them. It ends once,
 * for the first reason: the spawner saw bash exit, its output closed, or the broker closed it.
 */
import net from 'node:net';
import type { ChannelSink, ShellChannel } from './channel';
import type { SessionControl } from '../isolation/sessionControl';

export class FifoChannel implements ShellChannel {
  readonly transport = 'fifo';
  readonly control: SessionControl | null;
  private ended = false;
  private readonly input: net.Socket;
  private readonly outputs: net.Socket[];

  constructor(
    inFd: number,
    outFd: number,
    errFd: number,
    private readonly sink: ChannelSink,
    private readonly onEnded: () => void,
    private readonly statusGraceMs: number,
    control: SessionControl | null,
  ) {
    this.control = control;
    this.input = new net.Socket({ fd: inFd, readable: false, writable: true });
    this.input.on('error', () => undefined);
    this.outputs = (['stdout', 'stderr'] as const).map((stream, i) => {
      const socket = new net.Socket({ fd: i === 0 ? outFd : errFd, readable: true, writable: false });
      socket.on('data', (chunk: Buffer) => sink.onData(stream, chunk));
      socket.on('error', () => undefined);
      // EOF on stdout: no process holds it any more (fd 98, the framing's copy, included).
      if (i === 0) socket.on('close', () => this.outputClosed());
      return socket;
    });
  }

  write(data: string | Buffer): void {
    if (!this.ended) this.input.write(data);
  }

  private outputClosed(): void {
    const reason = "the shell's output closed (bash and its jobs are gone)";
    if (this.statusGraceMs > 0) setTimeout(() => this.end(reason), this.statusGraceMs).unref();
    else this.end(reason);
  }

  destroy(): void {
    this.end('closed by the broker');
  }

  end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.input.destroy();
    for (const s of this.outputs) s.destroy();
    this.control?.close();
    this.onEnded();
    this.sink.onEnd(reason);
  }
}
