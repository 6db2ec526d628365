/**
 * containers/monitoring/ checked with the tools that will read it: promtool checks the scrape config
 * and the alert rules and runs the rules' unit tests (alerts.test.yml); a real Prometheus scrapes a
 * live broker with the shipped config and answers the pool size through its HTTP API, with every
 * alert rule evaluating cleanly; a real Prometheus finds the nodes of a live cluster through its
 * gateway's /cluster/targets and scrapes them with the cluster token, over plain HTTP and over mutual
 * TLS (the CA and a client certificate of it); every metric the Grafana
 * dashboard and the rules name exists in a broker's or a gateway's /metrics; the compose profiles
 * mount files that exist. Needs Debian's `prometheus`
 * (apt-get install -y prometheus): without it the suite fails under CI and is skipped loudly elsewhere.
 * @backend local
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';
import os from 'node:os';
import { eventually, startTestBroker, withLease, type TestBroker } from '../helpers/broker';
import { CLIENT_TOKEN, CLUSTER_TOKEN, SESSIONS_PER_NODE, TestCluster } from '../helpers/cluster';
import { closeClients } from '../../devtools/clusterProcs';
import { promtoolCheckConfig } from '../helpers/deployFiles';
import { GatewayMetrics } from '../../src/cluster/gateway/gatewayMetrics';
import { Membership } from '../../src/cluster/gateway/membership';
import {
  ALERT_RULES,
  MONITORING_DIR,
  PROMETHEUS_CONFIG,
  exposedSampleNames,
  metricNamesIn,
  missingPrometheusTools,
  startPrometheus,
  type RunningPrometheus,
} from '../helpers/prometheus';

const DASHBOARD = path.join(MONITORING_DIR, 'grafana', 'dashboards', 'bash-broker.json');
const REPO = path.join(MONITORING_DIR, '..', '..');

interface DashboardPanel {
  title: string;
  type: string;
  targets?: { expr: string }[];
}

function promtool(...args: string[]): { status: number | null; output: string } {
  const r = spawnSync('promtool', args, { encoding: 'utf8', cwd: path.dirname(PROMETHEUS_CONFIG), timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Every PromQL expression of the dashboard (panels and template queries) and of the alert rules. */
function monitoringQueries(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: DashboardPanel[]; templating: { list: { name: string; definition?: string }[] } };
  const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `dashboard panel "${p.title}"`, expr: t.expr })));
  for (const v of dashboard.templating.list) if (v.definition) queries.push({ where: `dashboard variable ${v.name}`, expr: v.definition });
  const rules = YAML.parse(fs.readFileSync(ALERT_RULES, 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
  for (const rule of rules.groups.flatMap((g) => g.rules)) queries.push({ where: `alert ${rule.alert}`, expr: rule.expr });
  return queries;
}

/** Every alert of alerts.yml, all groups. */
function alertNames(): string[] {
  const rules = YAML.parse(fs.readFileSync(ALERT_RULES, 'utf8')) as { groups: { rules: { alert: string }[] }[] };
  return rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort();
}

const missing = missingPrometheusTools();
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';

if (missing.length === 0) {
  describe('monitoring files (Prometheus, alert rules, Grafana)', () => {
    it('promtool accepts the scrape config and the rules, and the rules pass their unit tests', () => {
      // The token file the nodes' job reads is the cluster's (a compose volume), not on this machine.
      const config = promtoolCheckConfig(fs.readFileSync(PROMETHEUS_CONFIG, 'utf8'), path.dirname(PROMETHEUS_CONFIG));
      if (config.status !== 0) throw new Error(`promtool check config exited ${config.status}:\n${config.output}`);
      expect(config.output).toMatch(/SUCCESS/);
      for (const args of [['check', 'rules', ALERT_RULES], ['test', 'rules', 'alerts.test.yml']]) {
        const r = promtool(...args);
        if (r.status !== 0) throw new Error(`promtool ${args.join(' ')} exited ${r.status}:\n${r.output}`);
        expect(r.output).toMatch(/SUCCESS/);
      }
    });

    it('the compose profile `monitoring` runs Prometheus and Grafana over files that exist', () => {
      const compose = YAML.parse(fs.readFileSync(path.join(REPO, 'docker-compose.yml'), 'utf8')) as {
        services: Record<string, { profiles?: string[]; volumes?: string[] }>;
      };
      for (const name of ['prometheus', 'grafana']) {
        const service = compose.services[name];
        expect(service?.profiles).toEqual(['monitoring']);
        for (const volume of service.volumes ?? []) {
          const source = volume.split(':')[0];
          if (source.startsWith('./')) expect(fs.existsSync(path.join(REPO, source))).toBe(true);
        }
      }
      expect(compose.services.broker.profiles).toBeUndefined(); // the broker still starts without the profile
      const provisioning = path.join(MONITORING_DIR, 'grafana', 'provisioning');
      const datasource = YAML.parse(fs.readFileSync(path.join(provisioning, 'datasources', 'prometheus.yml'), 'utf8'));
      expect(datasource.datasources[0]).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' });
      const provider = YAML.parse(fs.readFileSync(path.join(provisioning, 'dashboards', 'bash-broker.yml'), 'utf8'));
      expect(provider.providers[0].options.path).toBe('/var/lib/grafana/dashboards');
    });

    describe('against a live broker', () => {
      let tb: TestBroker;
      let prometheus: RunningPrometheus | null = null;
      beforeAll(async () => {
        tb = await startTestBroker();
        // Labelled series (acquire and execute outcomes, cleanups) exist once something happened.
        await withLease(tb, async (id) => void (await tb.exec(id, 'true')));
        await tb.waitAllAvailable();
      });
      afterAll(async () => {
        await prometheus?.stop();
        await tb?.close();
      });

      it("every metric the dashboard and the alert rules use is in a broker's or a gateway's /metrics", async () => {
        const exposed = exposedSampleNames(await tb.metrics());
        for (const name of exposedSampleNames(await new GatewayMetrics(new Membership()).registry.metrics())) exposed.add(name);
        const queries = monitoringQueries();
        const used = new Set(queries.flatMap((q) => metricNamesIn(q.expr)));
        expect(used.size).toBeGreaterThanOrEqual(12);
        const unknown = queries.flatMap((q) => metricNamesIn(q.expr).filter((n) => !exposed.has(n)).map((n) => `${n} (${q.where})`));
        expect(unknown).toEqual([]);
      });

      it('a real Prometheus scrapes it with the shipped config: the pool size by query, every rule healthy', async () => {
        const target = new URL(tb.url).host;
        prometheus = await startPrometheus(target);
        const p = prometheus;
        let last = '';
        await eventually(
          async () => {
            try {
              const r = await p.query('sum(broker_sessions{job="bash-broker"})');
              last = JSON.stringify(r);
              return r.length === 1 && Number(r[0].value[1]) === tb.total;
            } catch (err) {
              last = String(err);
              return false;
            }
          },
          60_000,
          () => `Prometheus to answer the pool size ${tb.total} (last answer: ${last}); its output:\n${p.output()}`,
        );
        const up = await p.query('up{job="bash-broker"}');
        expect(up).toEqual([expect.objectContaining({ metric: expect.objectContaining({ instance: target }), value: [expect.any(Number), '1'] })]);
        const available = await p.query('broker_sessions{state="available"}');
        expect(Number(available[0].value[1])).toBe(tb.total);
        // Every alert rule evaluated against real series without an error.
        let rules: Awaited<ReturnType<RunningPrometheus['rules']>> = [];
        await eventually(
          async () => {
            rules = await p.rules();
            return rules.flatMap((g) => g.rules).every((r) => r.health === 'ok');
          },
          30_000,
          () => `every rule healthy: ${JSON.stringify(rules)}`,
        );
        expect(rules.flatMap((g) => g.rules).map((r) => r.name).sort()).toEqual(alertNames());
      });
    });

    describe('against a live cluster', () => {
      let cluster: TestCluster;
      let prometheus: RunningPrometheus | null = null;
      const tokens = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-tokens-'));
      beforeAll(async () => {
        // The shipped scrape config reaches nodes over plain HTTP with the cluster token as bearer.
        cluster = await TestCluster.start(['n1', 'n2'], 1, undefined, { nodeTls: false });
      }, 240_000);
      afterAll(async () => {
        await prometheus?.stop();
        await cluster?.stop();
        fs.rmSync(tokens, { recursive: true, force: true });
      }, 120_000);

      it("a real Prometheus finds every node through the gateway's /cluster/targets and scrapes it with the cluster token", async () => {
        const clientTokenFile = path.join(tokens, 'client-token');
        const clusterTokenFile = path.join(tokens, 'cluster-token');
        fs.writeFileSync(clientTokenFile, CLIENT_TOKEN);
        fs.writeFileSync(clusterTokenFile, CLUSTER_TOKEN);
        const gateway = new URL(cluster.gateways[0].url).host;
        prometheus = await startPrometheus({ gateway: { target: gateway, clientTokenFile, clusterTokenFile } });
        const p = prometheus;
        let last = '';
        const query = async (promql: string) => {
          const r = await p.query(promql);
          last = `${promql}: ${JSON.stringify(r)}`;
          return r;
        };
        await eventually(
          async () => {
            try {
              const pools = await query('sum by (node) (broker_sessions{job="bash-broker-nodes", state="available"})');
              if (!(pools.length === 2 && pools.every((s) => Number(s.value[1]) === SESSIONS_PER_NODE))) return false;
              const nodesUp = await query('broker_gateway_nodes_up{job="bash-broker-gateways", health="healthy"}');
              return nodesUp.length === 1 && nodesUp[0].metric.instance === gateway && nodesUp[0].value[1] === '2';
            } catch (err) {
              last = String(err);
              return false;
            }
          },
          60_000,
          () => `Prometheus to scrape both nodes' pools and the gateway's count of them (last answer: ${last}); its output:\n${p.output()}`,
        );
        const up = await p.query('up{job="bash-broker-nodes"}');
        expect(up.map((s) => [s.metric.node, s.metric.instance, s.value[1]]).sort()).toEqual(
          ['n1', 'n2'].map((id) => [id, new URL(cluster.nodes.get(id)!.url).host, '1']),
        );
        // Every rule, the cluster's too, evaluates against real series without an error, and none fires.
        let rules: Awaited<ReturnType<RunningPrometheus['rules']>> = [];
        await eventually(
          async () => {
            rules = await p.rules();
            return rules.flatMap((g) => g.rules).length === alertNames().length && rules.flatMap((g) => g.rules).every((r) => r.health === 'ok');
          },
          30_000,
          () => `every rule healthy: ${JSON.stringify(rules)}`,
        );
        const active = rules.flatMap((g) => g.rules as { name: string; state?: string }[]).filter((r) => r.state !== 'inactive');
        expect(active.map((r) => `${r.name} ${r.state}`)).toEqual([]);
      });
    });

    describe('against a live cluster over mutual TLS', () => {
      let cluster: TestCluster;
      let prometheus: RunningPrometheus | null = null;
      const tokens = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-tokens-'));
      beforeAll(async () => {
        cluster = await TestCluster.start(['n1'], 1);
      }, 240_000);
      afterAll(async () => {
        await prometheus?.stop();
        await cluster?.stop();
        // The test's HTTP clients, shared with the cluster above: closed after the last one.
        await closeClients();
        fs.rmSync(tokens, { recursive: true, force: true });
      }, 120_000);

      it('a real Prometheus scrapes HTTPS-only nodes with the TLS job: the cluster CA, a client certificate of it and the cluster token', async () => {
        const clientTokenFile = path.join(tokens, 'client-token');
        const clusterTokenFile = path.join(tokens, 'cluster-token');
        fs.writeFileSync(clientTokenFile, CLIENT_TOKEN);
        fs.writeFileSync(clusterTokenFile, CLUSTER_TOKEN);
        const pki = cluster.etcd.pki!;
        const gateway = new URL(cluster.gateways[0].url).host;
        const node = new URL(cluster.nodes.get('n1')!.url);
        expect(node.protocol).toBe('https:');
        prometheus = await startPrometheus({ gateway: { target: gateway, clientTokenFile, clusterTokenFile, tls: { ca: pki.clusterCa, cert: pki.gatewayCert, key: pki.gatewayKey } } });
        const p = prometheus;
        let last = '';
        await eventually(
          async () => {
            try {
              const pools = await p.query('sum by (node) (broker_sessions{job="bash-broker-nodes-tls", state="available"})');
              last = JSON.stringify(pools);
              return pools.length === 1 && pools[0].metric.node === 'n1' && Number(pools[0].value[1]) === SESSIONS_PER_NODE;
            } catch (err) {
              last = String(err);
              return false;
            }
          },
          60_000,
          () => `Prometheus to scrape the node's pool over TLS (last answer: ${last}); its output:\n${p.output()}`,
        );
        const up = await p.query('up{job=~"bash-broker-nodes.*"}');
        // The https:// node is the TLS job's alone: the plain job keeps http:// targets only.
        expect(up.map((s) => [s.metric.job, s.metric.node, s.metric.instance, s.value[1]])).toEqual([['bash-broker-nodes-tls', 'n1', node.host, '1']]);
      });
    });
  });
} else if (ci) {
  describe('monitoring files (Prometheus, alert rules, Grafana)', () => {
    it('needs promtool and prometheus', () => {
      throw new Error(`CI must run this suite: ${missing.join(' and ')} not found (apt-get install -y prometheus)`);
    });
  });
} else {
  describe(`monitoring files -- SKIPPED: ${missing.join(' and ')} not found`, () => {
    it('warns that the suite did not run', () => {
      console.warn(`*** monitoring.test.ts SKIPPED: ${missing.join(' and ')} not found; install Debian's package: apt-get install -y prometheus ***`);
    });
  });
}
