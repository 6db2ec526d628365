/**
 * A real Prometheus (Debian's `prometheus` package) for tests: the shipped config pointed at a test
 * broker or a test cluster's gateway, a temporary data directory, a one-second scrape, and its HTTP
 * API. Every process started here is stopped by stop() (TERM, then KILL after a bound) and its
 * directory removed.
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

/**
 * What a test Prometheus scrapes: a standalone broker (job bash-broker), and a cluster's gateway with
 * the files of its client token and of the cluster token (jobs bash-broker-gateways and
 * bash-broker-nodes), and the cluster's TLS files for nodes over mutual TLS (bash-broker-nodes-tls).
 * A job without its target is left out.
 */
export interface ScrapeTargets {
  broker?: string;
  /** `tls`: the cluster's CA and a client certificate of it, for nodes over mutual TLS (job bash-broker-nodes-tls). */
  gateway?: { target: string; clientTokenFile: string; clusterTokenFile: string; tls?: { ca: string; cert: string; key: string } };
}

interface ScrapeJob {
  job_name: string;
  static_configs?: { targets: string[] }[];
  dns_sd_configs?: unknown[];
  http_sd_configs?: { url: string; authorization?: { type?: string; credentials_file: string } }[];
  authorization?: { type?: string; credentials_file: string };
  tls_config?: { ca_file: string; cert_file: string; key_file: string };
}

/**
 * The shipped prometheus.yml, every second, its jobs pointed at `targets`: the broker's static
 * target; the gateways' job at the one gateway (its name does not resolve here) with its token; the
 * nodes' discovery kept, at the gateway's address, with both tokens from their files.
 */
export function testConfig(targets: ScrapeTargets | string): string {
  const { broker, gateway } = typeof targets === 'string' ? { broker: targets, gateway: undefined } : targets;
  const config = YAML.parse(fs.readFileSync(PROMETHEUS_CONFIG, 'utf8'));
  config.global = { ...config.global, scrape_interval: '1s', evaluation_interval: '1s' };
  config.rule_files = [ALERT_RULES];
  const jobs = config.scrape_configs as ScrapeJob[];
  const job = (name: string): ScrapeJob => {
    const found = jobs.find((j) => j.job_name === name);
    if (!found) throw new Error(`${PROMETHEUS_CONFIG} has no ${name} scrape job`);
    return found;
  };
  const kept: ScrapeJob[] = [];
  if (broker) kept.push({ ...job('bash-broker'), static_configs: [{ targets: [broker] }] });
  if (gateway) {
    const client = { type: 'Bearer', credentials_file: gateway.clientTokenFile };
    const gateways = { ...job('bash-broker-gateways'), static_configs: [{ targets: [gateway.target] }], authorization: client };
    delete gateways.dns_sd_configs;
    kept.push(gateways);
    const clusterToken = { type: 'Bearer', credentials_file: gateway.clusterTokenFile };
    const atGateway = (nodes: ScrapeJob): ScrapeJob['http_sd_configs'] =>
      nodes.http_sd_configs!.map((c) => {
        const url = new URL(c.url);
        url.host = gateway.target;
        return { ...c, url: url.toString(), refresh_interval: '1s', authorization: client };
      });
    const nodes = job('bash-broker-nodes');
    kept.push({ ...nodes, http_sd_configs: atGateway(nodes), authorization: clusterToken });
    if (gateway.tls) {
      const tlsNodes = job('bash-broker-nodes-tls');
      const tls_config = { ca_file: gateway.tls.ca, cert_file: gateway.tls.cert, key_file: gateway.tls.key };
      kept.push({ ...tlsNodes, http_sd_configs: atGateway(tlsNodes), authorization: clusterToken, tls_config });
    }
  }
  config.scrape_configs = kept;
  return YAML.stringify(config);
}

export async function startPrometheus(targets: ScrapeTargets | string): Promise<RunningPrometheus> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-prometheus-'));
  const configFile = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(configFile, testConfig(targets));
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
