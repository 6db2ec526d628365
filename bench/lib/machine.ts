/** What the figures were measured on, and which code: printed above every results table. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import Dockerode from 'dockerode';

export interface Machine {
  cpuModel: string;
  cores: number;
  ramGiB: number;
  kernel: string;
  node: string;
  docker: string;
  bash: string;
  gitCommit: string;
  gitDirty: boolean;
  loadAvgAtStart: number[];
}

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

async function dockerVersion(): Promise<string> {
  try {
    const v = await new Dockerode().version();
    return `${v.Version} (API ${v.ApiVersion})`;
  } catch {
    return 'no engine reachable';
  }
}

export async function describeMachine(repoDir: string): Promise<Machine> {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    ramGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    docker: await dockerVersion(),
    bash: run('bash', ['-c', 'echo $BASH_VERSION'], repoDir),
    gitCommit: run('git', ['rev-parse', '--short', 'HEAD'], repoDir),
    gitDirty: run('git', ['status', '--porcelain', '--', 'src'], repoDir) !== '',
    loadAvgAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}
