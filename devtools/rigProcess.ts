/**
 * The processes of a cluster rig (clusterRig.ts): each started detached (its own session, its output
 * appended to a log file), so it outlives the command that started it (`scripts/cluster.sh up`
 * returns, the rig runs on) and a ^C to a terminal does not reach it. Each carries one environment
 * entry, BROKER_RIG_MEMBER=<rig dir>#<name>#, by which any later command finds it again (a pid file
 * could name a reused pid): `down` finds every process of the rig, whoever started it.
 */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { pidsWithEnvPrefix } from './procs';

const MARK = 'BROKER_RIG_MEMBER';

/** The environment entry of member `name` of the rig in `dir`; `name` '' matches every member. */
export function memberMark(dir: string, name: string): string {
  return `${MARK}=${dir}#${name}${name === '' ? '' : '#'}`;
}

/** Live pids of member `name` of the rig in `dir` ('' for all its members); zombies are not live. */
export function memberPids(dir: string, name = ''): number[] {
  return pidsWithEnvPrefix(memberMark(dir, name));
}

export interface MemberSpawn {
  dir: string;
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  log: string;
  cwd?: string;
}

/** Starts a member detached; its pid. */
export function spawnMember({ dir, name, command, args, env, log, cwd }: MemberSpawn): number {
  const out = fs.openSync(log, 'a');
  const [key, value] = splitEntry(memberMark(dir, name));
  const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', out, out], env: { ...inheritedEnv(), ...env, [key]: value } });
  fs.closeSync(out);
  child.unref();
  if (child.pid === undefined) throw new Error(`${name}: ${command} did not start`);
  return child.pid;
}

/**
 * This process's environment without the broker's settings and DOCKER_HOST: a member's settings are
 * the rig's alone, whatever the shell that runs the rig exported (a BROKER_TOKEN there must not
 * reach a node, which takes the cluster token).
 */
function inheritedEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BROKER_') && k !== 'DOCKER_HOST'));
}

function splitEntry(entry: string): [string, string] {
  const at = entry.indexOf('=');
  return [entry.slice(0, at), entry.slice(at + 1)];
}

/** Sends `signal` to every live process of member `name`; how many it reached. */
export function signalMember(dir: string, name: string, signal: NodeJS.Signals): number {
  let reached = 0;
  for (const pid of memberPids(dir, name)) {
    try {
      process.kill(pid, signal);
      reached++;
    } catch {
      /* gone meanwhile */
    }
  }
  return reached;
}

/**
 * Until `probe` returns a value other than undefined or false; that value. Fails naming `what` (and
 * what `detail` says then) at the deadline.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, what: string, detail: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail() === '' ? '' : ` (${detail()})`}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once no process of the member is left. */
export async function stopMember(dir: string, name: string, graceMs: number): Promise<void> {
  if (signalMember(dir, name, 'SIGTERM') === 0) return;
  try {
    await waitFor(() => memberPids(dir, name).length === 0, graceMs, `${name} to stop`);
  } catch {
    signalMember(dir, name, 'SIGKILL');
    await waitFor(() => memberPids(dir, name).length === 0, 10_000, `${name} to die of SIGKILL`);
  }
}

/** SIGKILL (a crash); resolves once it is gone. */
export async function killMember(dir: string, name: string): Promise<void> {
  signalMember(dir, name, 'SIGKILL');
  await waitFor(() => memberPids(dir, name).length === 0, 10_000, `${name} to die of SIGKILL`);
}

/** The last `lines` lines of a log file. */
export function logTail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
