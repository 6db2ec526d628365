/**
 * `npm run bench:execd [-- --backend docker] [--n 2000]`: execd's `/command` SSE of `true` against
 * the pool API's execute of `bash -c true` on the same lease of the same broker, interleaved in
 * blocks (client/drive.ts), so that both see the same machine. Both pay one process of the session
 * (execd: a subshell of a warm runner; the pool: bash -c in the lease's shell); what separates them
 * is the SSE framing and execd's bookkeeping. The goal: execd's p50 within 1.5x of the pool's.
 * Writes results/execd-<backend>-latest.json (git-ignored) and prints the figures.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';
import { BrokerProcess, REPO_DIR } from './lib/brokerProcess';
import { ensureBuilt } from './lib/build';
import { runInterleaved, type Op } from './client/drive';

const GOAL_RATIO = 1.5;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

async function main(): Promise<void> {
  const backend = arg('backend', 'local') as 'local' | 'docker';
  const n = Number(arg('n', '2000'));
  const outDir = path.join(__dirname, 'results');
  fs.mkdirSync(path.join(outDir, 'raw'), { recursive: true });
  ensureBuilt(REPO_DIR);
  const broker = await BrokerProcess.start(
    {
      name: 'execd',
      backend,
      containers: 1,
      perContainer: 2,
      image: arg('image', 'bash-broker-sandbox:latest'),
      // A deployment of its own: a broker sweeps its deployment's containers it did not start, and
      // another bench on the same engine would take this one's away mid-run.
      env: { BROKER_DEPLOYMENT: `bench-execd-${process.pid}` },
    },
    path.join(outDir, 'raw'),
  );
  const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
  try {
    await broker.waitWarm(180_000);
    const post = async (p: string, body: unknown): Promise<{ status: number; text: string }> => {
      const res = await request(broker.url + p, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, dispatcher: agent });
      return { status: res.statusCode, text: await res.body.text() };
    };
    const acquired = await post('/session/acquire', {});
    const id = (JSON.parse(acquired.text) as { session_id: string }).session_id;
    const poolExecute: Op = async () => {
      const r = await post(`/session/${id}/execute`, { command: 'bash -c true' });
      if (r.status !== 200 || !r.text.includes('"return_code":0')) throw new Error(`execute: ${r.status} ${r.text}`);
    };
    const execdCommand = (command: string): Op => async () => {
      const r = await post(`/sandboxes/${id}/execd/command`, { command });
      if (r.status !== 200 || !r.text.includes('"execution_complete"')) throw new Error(`execd: ${r.status} ${r.text}`);
    };
    const [pool, execd, execdBash] = await runInterleaved([poolExecute, execdCommand('true'), execdCommand('bash -c true')], n, 500, 600_000);
    const ratio = execd.latency.p50 / pool.latency.p50;
    const result = { backend, n, pool, execd, execdBash, ratioP50: ratio, goalRatio: GOAL_RATIO, met: ratio <= GOAL_RATIO, at: new Date().toISOString() };
    fs.writeFileSync(path.join(outDir, `execd-${backend}-latest.json`), JSON.stringify(result, null, 2));
    const ms = (v: number): string => `${v.toFixed(3)} ms`;
    console.log(`backend ${backend}, ${n} interleaved samples each (errors: pool ${pool.errors}, execd ${execd.errors + execdBash.errors})`);
    console.log(`pool execute of \`bash -c true\`: p50 ${ms(pool.latency.p50)}  p99 ${ms(pool.latency.p99)}`);
    console.log(`execd /command \`true\` (SSE):   p50 ${ms(execd.latency.p50)}  p99 ${ms(execd.latency.p99)}`);
    // The same process cost as the pool's: a fork and an exec of bash (`true` alone is a builtin in a forked subshell).
    console.log(`execd /command \`bash -c true\`:   p50 ${ms(execdBash.latency.p50)}  p99 ${ms(execdBash.latency.p99)}`);
    console.log(`ratio of p50s ${ratio.toFixed(2)}x (goal <= ${GOAL_RATIO}x): ${ratio <= GOAL_RATIO ? 'met' : 'NOT met'}`);
  } finally {
    await agent.close();
    await broker.stop(10_000);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
