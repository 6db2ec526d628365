/**
 * `npm run bench [-- --backend docker] [--quick]`: measures the built broker (node dist/index.js, one
 * process per pool size) against its floors in one run, from a separate client process, and writes
 * results/<backend>-latest.{json,md,svg} (or -quick.* for --quick). See bench/README.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { parseArgs, type Plan } from './lib/plan';
import { ensureBenchBuilt, ensureBuilt } from './lib/build';
import { describeMachine } from './lib/machine';
import { ClientProcess, NoopServer } from './lib/children';
import { REPO_DIR } from './lib/brokerProcess';
import { BenchContext } from './lib/context';
import { emptyResults, evaluateTargets, type Results } from './lib/results';
import { renderMarkdown } from './lib/report';
import { renderChart } from './lib/chart';
import { sweepBenchContainers } from './lib/containers';
import { singlePhase } from './phases/single';
import { poolPhases, releasePhase } from './phases/pool';
import { profilePhase } from './phases/profile';
import { workspacePhase } from './phases/workspace';

async function checkDocker(image: string): Promise<void> {
  const docker = new Dockerode();
  await docker.ping().catch((err: Error) => Promise.reject(new Error(`no Docker engine reachable (${err.message})`)));
  await docker
    .getImage(image)
    .inspect()
    .catch(() => Promise.reject(new Error(`image ${image} not found; build it with scripts/docker-images.sh or pass --image`)));
}

/** Why the docker backend cannot be measured here, or null when it can. */
function dockerMissing(image: string): Promise<string | null> {
  return checkDocker(image).then(
    () => null,
    (err: Error) => err.message,
  );
}

async function runPhases(ctx: BenchContext): Promise<void> {
  const { phases } = ctx.plan;
  if (phases.has('core')) await singlePhase(ctx);
  if (phases.has('release')) await releasePhase(ctx);
  if (!ctx.plan.quick) await poolPhases(ctx);
  if (phases.has('profile')) await profilePhase(ctx);
  if (phases.has('workspace')) await workspacePhase(ctx, () => dockerMissing(ctx.plan.image));
}

/** `--only workspace` measures both backends, and is named for that, not for `--backend`; it draws no chart. */
function writeResults(plan: Plan, results: Results, failed: boolean): string {
  const workspaceOnly = plan.phases.size === 1 && plan.phases.has('workspace');
  const name = `${workspaceOnly ? 'workspace' : plan.backend}-${plan.quick ? 'quick' : 'latest'}${failed ? '-failed' : ''}`;
  const base = path.join(plan.outDir, name);
  fs.writeFileSync(`${base}.json`, JSON.stringify(results, null, 2) + '\n');
  fs.writeFileSync(`${base}.md`, renderMarkdown(results));
  if (!workspaceOnly) fs.writeFileSync(`${base}.svg`, renderChart(results) + '\n');
  return base;
}

async function main(): Promise<number> {
  const plan = parseArgs(process.argv.slice(2), __dirname);
  ensureBuilt(REPO_DIR);
  ensureBenchBuilt(REPO_DIR);
  const logDir = path.join(plan.outDir, 'raw');
  fs.mkdirSync(logDir, { recursive: true });
  if (plan.backend === 'docker') await checkDocker(plan.image);
  const startedAt = new Date();
  const results = emptyResults({
    backend: plan.backend,
    mode: plan.quick ? 'quick' : 'full',
    image: plan.backend === 'docker' ? plan.image : null,
    startedAt: startedAt.toISOString(),
    machine: await describeMachine(REPO_DIR),
  });
  const [noop, app, relay, client] = await Promise.all([NoopServer.start('http'), NoopServer.start('app'), NoopServer.start('relay'), ClientProcess.start()]);
  const ctx = new BenchContext(plan, client, { noop, app, relay }, results, logDir);
  const shutdown = async (): Promise<void> => {
    ctx.progress.stop();
    await ctx.stopBroker().catch(() => undefined);
    await Promise.all([client.close(), noop.close(), app.close(), relay.close()]);
    const left = plan.backend === 'docker' ? await sweepBenchContainers(new Dockerode()) : 0;
    if (left > 0) results.notes.push(`${left} containers of this bench were left behind and removed at the end`);
  };
  process.once('SIGINT', () => {
    console.error('\nbench: interrupted; stopping the broker, the client and their containers');
    void shutdown().finally(() => process.exit(130));
  });
  let failed = false;
  try {
    await runPhases(ctx);
  } catch (err) {
    failed = true;
    results.notes.push(`the run failed: ${(err as Error).message.split('\n')[0]}`);
    console.error(`bench: ${(err as Error).stack}`);
  } finally {
    await shutdown();
  }
  results.durationS = (Date.now() - startedAt.getTime()) / 1000;
  results.targets = evaluateTargets(results);
  // A workspace-only run lists the targets it measured, not every other phase's as unmeasured.
  if (plan.phases.size === 1 && plan.phases.has('workspace')) results.targets = results.targets.filter((t) => t.pass !== null || t.value !== '-');
  const base = writeResults(plan, results, failed);
  const md = renderMarkdown(results);
  console.log('\n' + md.slice(md.indexOf('## Targets'), md.indexOf('## Single operations')).trim());
  console.log(`\nbench: ${results.durationS.toFixed(0)} s; results in ${path.relative(process.cwd(), base)}.{json,md}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`bench: ${err.message}`);
    process.exit(2);
  },
);
