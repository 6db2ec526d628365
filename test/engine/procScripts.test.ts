/**
 * The control shell's kill (`__bk_kill`, procScripts.ts) on real processes of this host: it needs
 * only bash and /proc, so it runs here as it runs in a container. An isolated session's bash runs
 * under its session init, which carries the session's tag and starts in the same clock tick as a
 * shell opened just before the command was typed: the kill of "what the shell started since" must
 * take the command and keep the shell and every process above it.
 * @backend any
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONTROL_SCRIPT } from '../../src/backends/docker/control/procScripts';

const TAG = `BROKER_SESSION_TAG=procscripts-${process.pid}`;

function childrenOf(pid: number): number[] {
  const text = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text ? text.split(/\s+/).map(Number) : [];
}

const alive = (pid: number): boolean => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return !/^\d+ \(.*\) [ZX]/.test(stat);
};
const exists = (pid: number): boolean => fs.existsSync(`/proc/${pid}`) && alive(pid);

async function until<T>(what: string, probe: () => T | undefined): Promise<T> {
  for (let i = 0; i < 1000; i++) {
    const found = probe();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never: ${what}`);
}

/** Runs `__bk_kill` in a bash of its own (without the tag); its printed count. */
function bkKill(root: number, sinceEpochMs: number, keepRoot: boolean): number {
  const r = spawnSync('bash', ['-c', `${CONTROL_SCRIPT}\n__bk_kill ${root} ${sinceEpochMs} '${TAG}' ${keepRoot ? 1 : 0}`], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`__bk_kill: ${r.status} ${r.stderr}`);
  return Number(r.stdout.trim());
}

/** Blocks for ever with builtins: a read on a FIFO nobody writes (so a shell outlives its killed child). */
const BLOCK = 'exec 3<>"$FIFO"; read -r -u 3';

describe('__bk_kill (the control shell kill)', () => {
  let outer: ChildProcess | null = null;
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'procscripts-'));
    spawnSync('mkfifo', [path.join(dir, 'fifo')]);
    env = { ...process.env, FIFO: path.join(dir, 'fifo') };
  });
  afterEach(() => {
    if (outer?.pid) spawnSync('bash', ['-c', `kill -9 -- -${outer.pid} 2>/dev/null; true`]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the root and its ancestors (the session init above bash) even when they started after the threshold', async () => {
    const since = Date.now() - 5_000; // all three below started after it
    // outer (as a session init would be) > shell (the root: the session's bash) > sleep (the job)
    outer = spawn('bash', ['-c', `bash -c 'sleep 300 & ${BLOCK}' & ${BLOCK}`], { env: { ...env, BROKER_SESSION_TAG: TAG.split('=')[1] }, detached: true, stdio: 'ignore' });
    const top = outer.pid!;
    const shell = await until('the inner shell', () => childrenOf(top)[0]);
    const job = await until('the job', () => childrenOf(shell)[0]);

    expect(bkKill(shell, since, true)).toBe(1);
    await until('the job killed', () => (exists(job) ? undefined : true));
    expect(exists(shell)).toBe(true);
    expect(exists(top)).toBe(true);
  });

  it('with KEEP_ROOT 0 takes the root as well, and still not what is above it unless the tag says so', async () => {
    outer = spawn('bash', ['-c', `BROKER_SESSION_TAG=other bash -c 'sleep 300 & ${BLOCK}' & ${BLOCK}`], { env: { ...env, BROKER_SESSION_TAG: 'none' }, detached: true, stdio: 'ignore' });
    const top = outer.pid!;
    const shell = await until('the inner shell', () => childrenOf(top)[0]);
    const job = await until('the job', () => childrenOf(shell)[0]);
    expect(bkKill(shell, -1, false)).toBe(2);
    await until('the shell and its job killed', () => (exists(job) || exists(shell) ? undefined : true));
    expect(exists(top)).toBe(true);
  });
});
