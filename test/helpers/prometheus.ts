/**
 * A real Prometheus (Debian's `prometheus` package) for tests: the shipped config pointed at a test
 * broker, a temporary data directory, a one-second scrape, and its HTTP API. Every process started
 * here is stopped by stop() (TERM, then KILL after a bound) and its directory removed.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { request } from 'undici';
import YAML from 'yaml';

export const MONITORING_DIR = path.join(__dirname, '..', '..', 'containers', 'monitoring');
export const PROMETHEUS_CONFIG = path.join(MONITORING_DIR, 'prometheus', 'prometheus.yml');
export const ALERT_RULES = path.join(MONITORING_DIR, 'prometheus', 'alerts.yml');

const STOP_BOUND_MS = 10_000;

/** Which of promtool and prometheus are missing from PATH. */
export function missingPrometheusTools(): string[] {
  return ['promtool', 'prometheus'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
}

export interface RunningPrometheus {
  url: string;
  /** An instant query's vector: [{metric, value: [time, "number"]}]. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** The rules API's groups (each rule with its `health` and `lastError`). */
  rules(): Promise<{ name: string; rules: { name: string; health: string; lastError?: string }[] }[]>;
  output(): string;
  stop(): Promise<void>;
}

/** A free TCP port on loopback (Prometheus cannot report the one it got for :0). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The shipped prometheus.yml, its scrape job pointed at `target` (host:port), every second. */
export function testConfig(target: string): string {
  const config = YAML.parse(fs.readFileSync(PROMETHEUS_CONFIG, 'utf8'));
  config.global = { ...config.global, scrape_interval: '1s', evaluation_interval: '1s' };
  config.rule_files = [ALERT_RULES];
  const job = config.scrape_configs.find((j: { job_name: string }) => j.job_name === 'bash-broker');
  if (!job) throw new Error(`${PROMETHEUS_CONFIG} has no bash-broker scrape job`);
  job.static_configs = [{ targets: [target] }];
  return YAML.stringify(config);
}

export async function startPrometheus(target: string): Promise<RunningPrometheus> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-prometheus-'));
  const configFile = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(configFile, testConfig(target));
  const port = await freePort();
  const child = spawn(
    'prometheus',
    [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;

  async function api<T>(pathAndQuery: string): Promise<T> {
    const res = await request(url + pathAndQuery);
    const body = (await res.body.json()) as { status: string; data: T; error?: string };
    if (res.statusCode !== 200 || body.status !== 'success') throw new Error(`${pathAndQuery}: ${res.statusCode} ${body.error ?? ''}`);
    return body.data;
  }

  return {
    url,
    output: () => output,
    async query(promql) {
      const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`);
      return data.result;
    },
    async rules() {
      return (await api<{ groups: Awaited<ReturnType<RunningPrometheus['rules']>> }>('/api/v1/rules')).groups;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), STOP_BOUND_MS);
        await exited;
        clearTimeout(killer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The metric names a PromQL text uses, of the broker and of the Node process (prom-client's defaults):
 * names of Prometheus' own (`up`) and functions are not metrics of /metrics.
 */
export function metricNamesIn(promql: string): string[] {
  return [...promql.matchAll(/\b((?:broker|process|nodejs)_[a-zA-Z0-9_]+)\b/g)].map((m) => m[1]);
}

/** The sample names /metrics can show: every family's name, and a histogram's _bucket, _sum and _count. */
export function exposedSampleNames(metricsText: string): Set<string> {
  const names = new Set<string>();
  for (const m of metricsText.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1]);
    if (m[2] === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(m[1] + suffix);
  }
  return names;
}
