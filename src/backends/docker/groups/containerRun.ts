/**
 * One process run to its end in a container (a sandbox's tool): a `docker exec` without a TTY, its
 * stdin written and closed, stdout and stderr apart (demux.ts), its exit code from the exec's
 * inspection. The time limit is coreutils' `timeout` inside the container (TERM, then KILL a second
 * later), so the process itself is what ends, not just the broker's wait; a stream that still has
 * not closed a while after that is cut.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import type { ToolRun } from '../../../core/ports/containers';
import { DockerDemuxer } from '../shells/demux';

/** Each stream keeps at most this much (a tool's answer is for an agent to read). */
const MAX_STREAM_BYTES = 4 * 1024 * 1024;
/** After the in-container timeout and its kill: how long the stream may take to close. */
const CLOSE_GRACE_MS = 10_000;
/** coreutils `timeout`'s exit status when it stopped the command. */
const TIMED_OUT_STATUS = 124;

export async function runInContainer(container: Dockerode.Container, argv: string[], stdin: string, timeoutMs: number, workdir: string): Promise<ToolRun> {
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const exec = await container.exec({
    Cmd: ['timeout', '-k', '1', String(seconds), ...argv],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    WorkingDir: workdir,
  });
  const socket = (await exec.start({ hijack: true, stdin: true })) as Duplex;
  const out: Record<'stdout' | 'stderr', Buffer[]> = { stdout: [], stderr: [] };
  const size = { stdout: 0, stderr: 0 };
  const demux = new DockerDemuxer((stream, chunk) => {
    if (size[stream] >= MAX_STREAM_BYTES) return;
    out[stream].push(chunk);
    size[stream] += chunk.length;
  });
  let cut = false;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      cut = true;
      socket.destroy();
    }, seconds * 1000 + CLOSE_GRACE_MS);
    socket.on('data', (c: Buffer) => demux.push(c));
    socket.on('error', () => undefined); // 'close' follows
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.write(stdin);
    socket.end(); // EOF on the process's stdin (the engine closes its write side)
  });
  const info = await exec.inspect().catch(() => null);
  const exitCode = info && !info.Running ? info.ExitCode : null;
  const text = (stream: 'stdout' | 'stderr'): string => Buffer.concat(out[stream]).toString('utf8') + (size[stream] >= MAX_STREAM_BYTES ? `\n[... cut at ${MAX_STREAM_BYTES} bytes]\n` : '');
  return { stdout: text('stdout'), stderr: text('stderr'), exitCode, timedOut: cut || (exitCode !== null && exitCode === TIMED_OUT_STATUS) };
}
