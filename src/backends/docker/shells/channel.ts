/**
 * How the broker talks to one bash in a container: bytes in, stdout and stderr out, and one notice
 * when the bash (with everything holding its output) is gone. Two transports implement it:
 *
 * - exec (this file): a long-lived `docker exec` over a hijacked stream, demultiplexed here. Works
 *   wherever the engine is; each one costs dockerd and runc ~60 ms to open (runc's exec of the
 *   first command is most of it).
 * - fifo (fifoSpawner.ts): the container's own entrypoint spawns the bash on named pipes the broker
 *   shares with the engine's host. No dockerd work per shell: what lets 1024 sessions warm as fast as
 *   their containers start.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import type { StreamName } from '../../../core/ports/backend';
import { DockerDemuxer } from './demux';
import type { SessionControl } from '../isolation/sessionControl';

export const SHELL_CMD = ['bash', '--norc', '--noprofile', '--noediting', '-i'];

export interface ChannelSink {
  onData(stream: StreamName, chunk: Buffer): void;
  /** Once: the bash exited, or its streams closed, or the channel was destroyed. */
  onEnd(reason: string): void;
}

export interface ShellChannel {
  readonly transport: 'exec' | 'fifo';
  /** An isolated session's requests to its init (isolation/sessionControl.ts); absent or null: none. */
  readonly control?: SessionControl | null;
  write(data: string | Buffer): void;
  /**
   * Closes the broker's side: an idle bash reads EOF and exits; a running command goes on to its
   * end (closing a stream signals nothing), so callers kill what runs first.
   */
  destroy(): void;
}

/** A session's network (isolation/sessionNet.c): its container's, or one of its own with no egress or the container's. */
export type SessionNetworkMode = 'shared' | 'none' | 'full';

export interface ChannelRequest {
  /** Extra environment of the bash (`NAME=value`), on top of the container's own. */
  env: string[];
  sink: ChannelSink;
  /**
   * fifo: when the output closes first, how long to wait for the exit status before ending without
   * it (a workspace's terminal reports it; a session's shell needs none: 0, the default).
   */
  statusGraceMs?: number;
  /**
   * A session's shell in namespaces of its own (isolation/isolationScript.ts), where the container
   * isolates: `workdir` the lease's working directory id (null: none), `joinPid` a session bash's pid
   * in the container whose namespaces it shares instead (0: new ones), `network` the network a new
   * session gets (isolation/sessionNet.c; absent: its container's). Absent: a plain bash.
   */
  isolated?: { workdirId: string | null; joinPid: number; network?: SessionNetworkMode };
  /**
   * fifo, isolated through the session init: a workspace's terminal that the init opens in the
   * joined view and relays (isolation/sessionEnter.c), rather than a bash.
   */
  pty?: boolean;
}

/** Opens a bash in one container; each container has one (docker backend: exec or fifo). */
export type ChannelOpener = (request: ChannelRequest) => Promise<ShellChannel>;

export function execChannelOpener(container: Dockerode.Container): ChannelOpener {
  return async ({ env, sink }) => {
    const exec = await container.exec({
      Cmd: SHELL_CMD,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Env: env,
      WorkingDir: '/',
    });
    const socket = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    return new ExecChannel(socket, sink);
  };
}

class ExecChannel implements ShellChannel {
  readonly transport = 'exec';
  private ended = false;

  constructor(
    private readonly socket: Duplex,
    sink: ChannelSink,
  ) {
    const demux = new DockerDemuxer((stream, chunk) => sink.onData(stream, chunk));
    socket.on('data', (c: Buffer) => demux.push(c));
    socket.on('error', () => undefined); // 'close' follows and reports the end
    socket.on('close', () => {
      if (this.ended) return;
      this.ended = true;
      sink.onEnd('the docker exec stream closed (bash or its container died)');
    });
  }

  write(data: string | Buffer): void {
    if (!this.ended) this.socket.write(data);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
