/**
 * npm run soak: hundreds of clients churn episodes against a Docker-backend broker (its own process,
 * its own deployment label, loopback, a free port), with timeouts, floods, abuse, disconnects and
 * abandoned leases mixed in. Then the load stops and the run checks what must hold afterwards: the
 * pool full again, nothing leaked in the containers, memory flat, no container or process left.
 * Exit code 1 when any check fails. Results in bench/results/soak-{latest,quick}.{json,md}.
 */
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { BrokerProcess, REPO_DIR } from '../lib/brokerProcess';
import { ensureBuilt } from '../lib/build';
import { describeMachine } from '../lib/machine';
import { nowMs, sleep } from '../lib/stats';
import { cpuPressureSomeUs, pressureShare } from '../lib/cpuPressure';
import { parseSoakArgs, type SoakPlan } from './plan';
import { SoakHttp } from './http';
import { Tally } from './tally';
import { ReclaimWatch } from './reclaimWatch';
import { runLoad } from './load';
import { gaveUpOutsideTheLoad, runSized, sizedChecks } from './sized';
import { mixFixtures, type MixFixtures } from './mixFixtures';
import { Monitor, fdKinds, memoryVerdict, openFds } from './monitor';
import { ProgressLine, warmupText } from '../lib/progress';

const BROKER_COUNTERS = ['broker_executes_total', 'broker_execute_timeouts_total', 'broker_cleanups_total', 'broker_sessions_broken_total', 'broker_sessions_reclaimed_total'];
import { deploymentContainers } from './leaks';
import { endRun } from './ending';
import { countersByLabel, renderMarkdown, writeResults, type SoakResults } from './report';
import { allChecks, healthFigures, memoryBoundBytes, SETTLE_SLACK_MS } from './verdicts';

const SOAK_DEPLOYMENT = 'soak';
const IDLE_SETTLE_MS = 11_000;

/** The load's bar and counts at the foot of a terminal (none in CI or into a file). */
const progress = new ProgressLine();

function log(line: string): void {
  progress.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
}

function brokerEnv(plan: SoakPlan, mix: MixFixtures | null): Record<string, string> {
  const b = plan.broker;
  return {
    BROKER_DEPLOYMENT: SOAK_DEPLOYMENT,
    BROKER_MAX_OUTPUT_BYTES: String(b.maxOutputBytes),
    BROKER_SESSION_IDLE_TIMEOUT: String(b.idleTimeoutS),
    BROKER_ACQUIRE_TIMEOUT: String(b.acquireTimeoutS),
    BROKER_CONTAINER_PIDS_LIMIT: String(b.pidsLimit),
    BROKER_CONTAINER_MEMORY: b.memory,
    // No session needs a network; and the shared engine's default bridge is not always there.
    BROKER_NETWORK_MODE: 'none',
    // A warm pool of whole containers for the SDK's sandboxes (the sized mix creates them).
    ...(plan.sized ? { BROKER_POOLS: JSON.stringify({ warm: { image: plan.image, containers: plan.warmSlots, sessions_per_container: 1 } }) } : {}),
    // Group sandboxes and tasks: the stub model, the repo, their files and ports (mixFixtures.ts).
    ...(mix ? mix.env : {}),
    ...b.extra,
  };
}

async function main(): Promise<number> {
  const plan = parseSoakArgs(process.argv.slice(2), __dirname);
  ensureBuilt(REPO_DIR);
  const logDir = path.join(plan.outDir, 'raw');
  fs.mkdirSync(logDir, { recursive: true });
  const docker = new Dockerode();
  const t0 = nowMs();
  const startedAt = new Date().toISOString();
  const machine = await describeMachine(REPO_DIR);
  log(`soak: ${plan.containers} x ${plan.perContainer} sessions, ${plan.clients} clients, ${plan.durationS} s, seed ${plan.seed}`);
  const mix = plan.sized ? await mixFixtures(plan.taskImage, plan.image) : null;
  const spec = { name: 'soak', backend: 'docker' as const, containers: plan.containers, perContainer: plan.perContainer, image: plan.image, env: brokerEnv(plan, mix) };
  const broker = await BrokerProcess.start(spec, logDir);
  let stopped: { stopMs: number; killed: boolean } | null = null;
  const stopBroker = async (): Promise<{ stopMs: number; killed: boolean }> => (stopped ??= await broker.stop(60_000));
  process.once('SIGINT', () => {
    log('interrupted: stopping the broker and removing its containers');
    void stopBroker()
      .then(() => deploymentContainers(docker, SOAK_DEPLOYMENT))
      .then((left) => Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined))))
      .finally(() => void (mix?.close() ?? Promise.resolve()).finally(() => process.exit(130)));
  });
  try {
    const warmUpMs = await broker.waitWarm(300_000, (h) => {
      const { warmup } = h;
      if (warmup) progress.set(() => warmupText('soak broker', warmup));
    });
    progress.stop();
    log(`warm in ${(warmUpMs / 1000).toFixed(1)} s (log: ${broker.logPath})`);
    // Two health passes first: each keeps one keep-alive socket per container to dockerd afterwards
    // (Node's global agent, reused every BROKER_HEALTH_INTERVAL), which is not a leak.
    await sleep(IDLE_SETTLE_MS);
    const idle = { rss: broker.procMemory().rssBytes, fds: openFds(broker.pid), fdKinds: fdKinds(broker.pid) };
    return await soak(plan, broker, docker, { warmUpMs, idle, startedAt, machine, t0, mix }, stopBroker);
  } finally {
    progress.stop();
    await stopBroker();
    await mix?.close();
  }
}

interface RunInfo {
  warmUpMs: number;
  idle: { rss: number; fds: number; fdKinds: Record<string, number> };
  startedAt: string;
  machine: SoakResults['machine'];
  t0: number;
  mix: MixFixtures | null;
}

async function soak(plan: SoakPlan, broker: BrokerProcess, docker: Dockerode, info: RunInfo, stopBroker: () => Promise<{ stopMs: number; killed: boolean }>): Promise<number> {
  const tally = new Tally();
  const http = new SoakHttp(broker.url, plan.clients + 8);
  // The pool sweeps idle leases every idle/4 s (at most 15 s): idle + one sweep + slack.
  const idleMs = plan.broker.idleTimeoutS * 1000;
  const reclaims = new ReclaimWatch(http, tally, idleMs + Math.min(idleMs / 4, 15_000) + SETTLE_SLACK_MS);
  let loadStart = nowMs();
  let pressureAtStart = cpuPressureSomeUs();
  const monitor = new Monitor(broker, () => loadStart);
  monitor.start(plan.sampleEveryMs);
  const episode = { maxOutputBytes: plan.broker.maxOutputBytes, forkBurst: plan.forkBurst };
  let sized: SoakResults['sized'] = undefined;
  let loadS: number;
  if (plan.sized) {
    const group = await http.post('/group/start', {});
    if (group.status !== 200) throw new Error(`the group did not start: HTTP ${group.status} ${JSON.stringify(group.body)}`);
    const facade = { url: broker.url, http, tally, image: plan.image };
    const marks = { loadStarted: (): void => void ((loadStart = nowMs()), (pressureAtStart = cpuPressureSomeUs())), loadS: 0 };
    sized = await runSized({ plan, http, tally, reclaims, facade, episode, marks, log });
    loadS = marks.loadS;
  } else {
    await runLoad(http, tally, reclaims, { clients: plan.clients, durationMs: plan.durationS * 1000, drainMs: plan.drainS * 1000, seed: plan.seed, episode }, log, progress);
    loadS = (nowMs() - loadStart) / 1000;
  }
  const cpuPressure = pressureShare(pressureAtStart, cpuPressureSomeUs(), loadS * 1000);
  log(`load done: ${tally.outcome('episodes ended')} episodes, ${tally.errorCount} unexpected; probing ${reclaims.waiting} abandoned leases`);
  const end = await endRun({ plan, deployment: SOAK_DEPLOYMENT, broker, docker, http, monitor, reclaims, stopBroker, log, groupDir: info.mix?.groupDir ?? null });
  const summary = tally.summary();
  const executes = Object.entries(summary.latencyMs).filter(([op]) => op.startsWith('execute')).reduce((n, [, l]) => n + l.n, 0);
  const memory = memoryVerdict(monitor.samples, plan.sized ? loadS : loadS - plan.drainS, info.idle.rss, memoryBoundBytes(info.idle.rss));
  const brokerCounters = Object.fromEntries(BROKER_COUNTERS.map((name) => [name, countersByLabel(end.metricsText, name)]));
  const checks = [...allChecks({ plan, summary, end, memory, reclaims, brokerCounters, idleFds: info.idle.fds, deployment: SOAK_DEPLOYMENT, gaveUpElsewhere: sized ? gaveUpOutsideTheLoad(sized) : 0 }), ...(sized ? sizedChecks(sized) : [])];
  const results: SoakResults = {
    plan, machine: info.machine, startedAt: info.startedAt, warmUpMs: info.warmUpMs, loadS, totalS: (nowMs() - info.t0) / 1000,
    episodes: tally.outcome('episodes ended'), executes, tally: summary, memory,
    fds: { idleWarm: info.idle.fds, settled: end.settledFds, idleWarmKinds: info.idle.fdKinds, settledKinds: end.settledFdKinds }, health: healthFigures(monitor.samples),
    cpuPressure, brokerCounters, reclaims: { abandoned: reclaims.abandoned, verified: reclaims.verified }, settleMs: end.settled.ms, stop: end.stop, checks,
    samples: monitor.samples,
    sized,
  };
  const base = writeResults(results);
  console.log('\n' + renderMarkdown(results).split('\n## Broker')[0]);
  log(`results in ${path.relative(process.cwd(), base)}.{json,md}`);
  return checks.every((c) => c.pass) ? 0 : 1;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: Error) => {
      console.error(`soak: ${err.stack ?? err.message}`);
      process.exit(2);
    },
  );
}
