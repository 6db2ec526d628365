/**
 * Diagnosis of one episode level: a broker as shipped (`node dist/index.js`), C clients looping
 * acquire, 5 x `echo $i`, release for a window, and where the CPU went meanwhile: the broker, this
 * client, the containers' cgroups (sessions, control lanes and their forks), dockerd and the shims,
 * and processes created. Optionally the broker under `--cpu-prof`, or `perf record -a` of the window.
 *
 *   node -r ts-node/register/transpile-only bench/episodeDiag.ts --backend docker --conc 64 [--secs 8] [--prof] [--perf]
 *
 * Not part of `npm run bench`: no floor, no verdict. A tool to find where an episode's time goes.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrokerProcess, REPO_DIR } from './lib/brokerProcess';
import { BrokerHttp } from './client/brokerHttp';
import { processesCreated } from './lib/forks';
import { sessionCpuMeter } from './lib/sessionCpu';
import { ensureBuilt } from './lib/build';
import { BENCH_DEPLOYMENT } from './protocol';
import { nowMs, summarize } from './lib/stats';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const has = (name: string): boolean => process.argv.includes(`--${name}`);

/** utime + stime of a process and its reaped children, ms. */
function procCpuMs(pid: number): number {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const s = f.slice(f.lastIndexOf(')') + 2).split(' ');
    const tick = 1000 / 100;
    return (Number(s[11]) + Number(s[12]) + Number(s[13]) + Number(s[14])) * tick;
  } catch {
    return 0;
  }
}

/** CPU ms of every live process whose comm matches, summed (reaped children included). */
function commCpuMs(re: RegExp): number {
  let sum = 0;
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = fs.readFileSync(`/proc/${d}/stat`, 'latin1');
      const comm = f.slice(f.indexOf('(') + 1, f.lastIndexOf(')'));
      if (re.test(comm)) sum += procCpuMs(Number(d));
    } catch {
      /* gone */
    }
  }
  return sum;
}

/**
 * CPU ms (reaped children included) of the live processes of the containers `ids`, by role: the
 * session shells (in a bkr-* pids cgroup), the control lanes (bash with an empty session tag: the
 * fs lane's reaped `mkdir`/`rm` count here), the rest (entrypoint, its wrappers, docker-init).
 */
function containerRoles(ids: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const id of ids) {
    let procs: string[];
    try {
      procs = fs.readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cgroup.procs`, 'latin1').split('\n').filter(Boolean);
    } catch {
      continue;
    }
    for (const pid of procs) {
      try {
        const cgroup = fs.readFileSync(`/proc/${pid}/cgroup`, 'latin1');
        const env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
        const role = /:pids:.*\/bkr-/.test(cgroup) ? 'sessions' : /(^|\0)BROKER_SESSION_TAG=(\0|$)/.test(env) ? 'control lanes' : 'rest';
        out.set(role, (out.get(role) ?? 0) + procCpuMs(Number(pid)));
      } catch {
        /* gone meanwhile */
      }
    }
  }
  return out;
}

function machineBusyMs(): number {
  const cpu = fs.readFileSync('/proc/stat', 'latin1').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3] + cpu[4];
  return ((cpu.reduce((a, b) => a + b, 0) - idle) * 1000) / 100;
}

async function main(): Promise<void> {
  const backend = arg('backend', 'docker') as 'local' | 'docker';
  const conc = Number(arg('conc', '64'));
  const secs = Number(arg('secs', '8'));
  const containers = Number(arg('containers', String(Math.ceil(conc / 8))));
  const clients = has('idle') ? 0 : conc;
  ensureBuilt(REPO_DIR);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'episode-diag-'));
  const nodeFlags = has('prof') ? ['--cpu-prof', '--cpu-prof-dir', logDir, '--cpu-prof-name', 'broker.cpuprofile'] : has('perf') ? ['--perf-basic-prof'] : [];
  nodeFlags.push(...arg('node-flags', '').split(' ').filter(Boolean)); // e.g. --node-flags '--trace-deopt'
  const env: Record<string, string> = {};
  for (const kv of arg('env', '').split(',').filter(Boolean)) env[kv.split('=')[0]] = kv.slice(kv.indexOf('=') + 1);
  const broker = await BrokerProcess.start({ name: 'diag', backend, containers, perContainer: 8, image: 'bash-broker-sandbox:latest', nodeFlags, env, entry: has('dist') ? path.resolve(arg('dist', ''), 'index.js') : undefined }, logDir);
  try {
    await broker.waitWarm(180_000);
    const http = new BrokerHttp(broker.url, conc);
    let stop = false;
    let done = 0;
    const episodeMs: number[] = [];
    const loop = async (): Promise<void> => {
      while (!stop) {
        const t0 = nowMs();
        const id = await http.acquire();
        for (let i = 1; i <= 5; i++) {
          const r = await http.execute(id, `echo ${i}`);
          if (r.stdout !== `${i}\n`) throw new Error(`bad answer ${JSON.stringify(r)}`);
        }
        await http.release(id);
        done++;
        episodeMs.push(nowMs() - t0);
      }
    };
    const loops = Array.from({ length: clients }, loop);
    await new Promise((r) => setTimeout(r, 1500)); // ramp
    const ids = backend === 'docker' ? (await listContainerIds()) : [];
    const meter = backend === 'docker' ? sessionCpuMeter({ containerIds: ids }) : null;
    const strace = has('strace') ? spawn('timeout', ['-s', 'INT', String(secs), 'strace', '-c', '-f', '-o', path.join(logDir, 'strace.txt'), '-p', String(broker.pid)], { stdio: 'ignore' }) : null;
    const perf = has('perf') ? spawn('perf', ['record', '-p', String(broker.pid), '-g', '-o', path.join(logDir, 'perf.data'), '--', 'sleep', String(secs)], { stdio: 'ignore' }) : null;
    const rolesA = containerRoles(ids);
    const a = { t: nowMs(), done, forks: processesCreated(), broker: procCpuMs(broker.pid), self: procCpuMs(process.pid), sessions: meter?.read() ?? NaN, dockerd: commCpuMs(/^dockerd$/), shims: commCpuMs(/^containerd/), busy: machineBusyMs() };
    episodeMs.length = 0;
    await new Promise((r) => setTimeout(r, secs * 1000));
    const rolesB = containerRoles(ids);
    const b = { t: nowMs(), done, forks: processesCreated(), broker: procCpuMs(broker.pid), self: procCpuMs(process.pid), sessions: meter?.read() ?? NaN, dockerd: commCpuMs(/^dockerd$/), shims: commCpuMs(/^containerd/), busy: machineBusyMs() };
    const metricsText = await broker.metrics();
    stop = true;
    await Promise.all(loops);
    await http.close();
    const n = clients === 0 ? secs : b.done - a.done; // idle: per second
    const per = (x: number): string => `${(x / n).toFixed(3)} ms`;
    const s = summarize(episodeMs);
    console.log(
      JSON.stringify({
        backend,
        build: arg('dist', 'dist'),
        conc,
        episodesPerSec: +((n * 1000) / (b.t - a.t)).toFixed(1),
        episodeP50: +s.p50.toFixed(1),
        perEpisode: {
          broker: per(b.broker - a.broker),
          client: per(b.self - a.self),
          containers: per(b.sessions - a.sessions),
          dockerd: per(b.dockerd - a.dockerd),
          shims: per(b.shims - a.shims),
          machineBusy: per(b.busy - a.busy),
          forks: ((b.forks - a.forks) / n).toFixed(2),
        },
        containerRoles: Object.fromEntries([...rolesB].map(([k, v]) => [k, per(v - (rolesA.get(k) ?? 0))])),
        // Since the broker started: a recycle that timed out closes the shell and opens a new one.
        recycles: Object.fromEntries([...metricsText.matchAll(/^broker_shell_recycles_total\{result="(\w+)"\} (\d+)/gm)].map((m) => [m[1], Number(m[2])])),
        load: os.loadavg()[0].toFixed(1),
        logDir,
      }),
    );
    // Either may have ended already: its 'exit' would never come again.
    for (const child of [perf, strace]) if (child && child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
  } finally {
    await broker.stop(30_000);
  }
}

async function listContainerIds(): Promise<string[]> {
  const { default: Dockerode } = await import('dockerode');
  const list = await new Dockerode().listContainers({ filters: { label: [`io.bash-broker.deployment=${BENCH_DEPLOYMENT}`] } });
  return list.map((c) => c.Id);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
