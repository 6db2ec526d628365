/**
 * The PTY floor of /api/execute: a bare `bash -i` in a pseudo-terminal (locally with node-pty, as the
 * broker opens one; on Docker a `docker exec` with a TTY in the workspace broker's own container, the
 * engine's own way and the broker's fallback), with no shell integration, no HTTP and no broker. One
 * operation types `true` and Enter and waits for the next prompt.
 */
import * as pty from '@lydell/node-pty';
import Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/dockerBackend';
import { WORKSPACE_DEPLOYMENT } from '../protocol';

const PROMPT = '@@> ';
const ENV = { PS1: PROMPT, HISTFILE: '/dev/null', TERM: 'xterm-256color', PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };
const ARGS = ['--norc', '--noprofile', '-i'];

export interface PtyFloor {
  /** Types `true` and Enter; resolves at the next prompt. */
  op(): Promise<void>;
  close(): Promise<void>;
}

async function openTerminal(backend: 'local' | 'docker'): Promise<{ write(s: string): void; onData(f: (c: Buffer) => void): void; close(): void }> {
  if (backend === 'local') {
    const term = pty.spawn('bash', ARGS, { name: ENV.TERM, cols: 120, rows: 32, cwd: '/tmp', env: ENV, encoding: null });
    return {
      write: (s) => term.write(Buffer.from(s) as unknown as string),
      onData: (f) => term.onData((d: string | Buffer) => f(Buffer.from(d))),
      close: () => term.kill('SIGKILL'),
    };
  }
  const docker = new Dockerode();
  const [info] = await docker.listContainers({ filters: { label: [`${LABEL_DEPLOYMENT}=${WORKSPACE_DEPLOYMENT}`] } });
  if (!info) throw new Error('no container of the workspace broker to open a PTY floor in');
  const exec = await docker.getContainer(info.Id).exec({
    Cmd: ['bash', ...ARGS], AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: true, Env: Object.entries(ENV).map(([k, v]) => `${k}=${v}`), WorkingDir: '/tmp',
  });
  const socket = (await exec.start({ hijack: true, stdin: true, Tty: true })) as Duplex;
  await exec.resize({ h: 32, w: 120 });
  return { write: (s) => socket.write(s), onData: (f) => socket.on('data', f), close: () => (socket.write('exit\r'), socket.destroy()) };
}

export async function openPtyFloor(backend: 'local' | 'docker'): Promise<PtyFloor> {
  const term = await openTerminal(backend);
  let seen = '';
  let waiter: (() => void) | null = null;
  term.onData((chunk) => {
    seen = (seen + chunk.toString('latin1')).slice(-64);
    if (waiter && seen.endsWith(PROMPT)) {
      const w = waiter;
      waiter = null;
      seen = '';
      w();
    }
  });
  const untilPrompt = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no prompt within 10 s (last: ${JSON.stringify(seen)})`)), 10_000);
      waiter = () => {
        clearTimeout(timer);
        resolve();
      };
      if (seen.endsWith(PROMPT)) waiter();
    });
  await untilPrompt();
  return {
    op: () => {
      const p = untilPrompt();
      term.write('true\r');
      return p;
    },
    close: async () => term.close(),
  };
}
