/**
 * docker-compose.yml's profile `cluster` (etcd, two nodes and a gateway on one engine) against the
 * code and against itself: every variable a broker service is given is one the configuration reads,
 * and each service's environment, as Compose interpolates it with its defaults, passes the real
 * configuration in the role meant; the nodes are apart (ids, addresses, deployments); the ports,
 * the store's address, the images and the token's one source agree; Prometheus reads the nodes'
 * token where the profile writes it and finds the nodes at the gateway. With Compose on PATH,
 * `config` accepts the file with the profile.
 * @backend any
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';
import { loadConfig } from '../../src/config/config';
import { configVariables } from '../helpers/configVariables';
import { builtImages, commandExists, REPO } from '../helpers/deployFiles';

const COMPOSE_FILE = path.join(REPO, 'docker-compose.yml');
const PROMETHEUS_CONFIG = path.join(REPO, 'containers', 'monitoring', 'prometheus', 'prometheus.yml');
const TOKEN_STAND_IN = 'a-cluster-token-of-the-compose-test';

interface Service {
  profiles?: string[];
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}

// Compose files are YAML 1.1 for merge keys (`<<: *anchor`), which the profile's services share.
const compose = YAML.parse(fs.readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;
const inCluster = Object.keys(services).filter((name) => services[name].profiles?.includes('cluster'));
const brokers = inCluster.filter((name) => services[name].environment?.BROKER_ROLE !== undefined);
const ofRole = (role: string): string[] => brokers.filter((name) => services[name].environment!.BROKER_ROLE === role);

/** `${NAME:-default}` as Compose reads it with nothing set in the shell. */
function interpolated(value: string): string {
  return String(value).replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1');
}

/** A service's environment as its broker sees it: the defaults, and the token its entrypoint reads. */
function environmentOf(name: string): Record<string, string> {
  const env = Object.fromEntries(Object.entries(services[name].environment ?? {}).map(([k, v]) => [k, interpolated(v)]));
  return { ...env, BROKER_CLUSTER_TOKEN: TOKEN_STAND_IN };
}

/** The named volume mounted at `at` in a service, if any. */
function volumeAt(name: string, at: string): string | undefined {
  return (services[name].volumes ?? []).map((v) => v.split(':')).find(([, target]) => target === at)?.[0];
}

describe('docker-compose.yml profile `cluster`', () => {
  it('runs etcd, two nodes and a gateway, and leaves the default services as they were', () => {
    expect(inCluster.sort()).toEqual(['cluster-secret', 'etcd', 'gateway', 'node-1', 'node-2']);
    expect(ofRole('node').sort()).toEqual(['node-1', 'node-2']);
    expect(ofRole('gateway')).toEqual(['gateway']);
    expect(services.broker.profiles).toBeUndefined();
    expect(services.sandbox.profiles).toBeUndefined();
  });

  it('gives its brokers only variables the configuration reads', () => {
    const read = configVariables();
    for (const name of brokers) {
      const names = Object.keys(services[name].environment!);
      expect(names.length).toBeGreaterThan(5);
      expect({ name, unknown: names.filter((n) => !read.has(n)) }).toEqual({ name, unknown: [] });
    }
  });

  it("gives each an environment the broker's configuration accepts in its role, the nodes apart from each other", () => {
    const nodes = ofRole('node').map((name) => ({ name, config: loadConfig(environmentOf(name)) }));
    for (const { name, config } of nodes) {
      expect(config.cluster).toMatchObject({ role: 'node', nodeAddress: `http://${name}:${config.port}`, clusterToken: TOKEN_STAND_IN });
      expect(config).toMatchObject({ backend: 'docker', host: '0.0.0.0' });
      expect(config.docker.deployment).not.toBe(loadConfig(environmentOf('broker')).docker.deployment);
    }
    expect(new Set(nodes.map((n) => n.config.cluster.nodeId)).size).toBe(nodes.length);
    expect(new Set(nodes.map((n) => n.config.docker.deployment)).size).toBe(nodes.length);
    const gateway = loadConfig(environmentOf('gateway'));
    expect(gateway.cluster).toMatchObject({ role: 'gateway', clusterToken: TOKEN_STAND_IN, keyPrefix: nodes[0].config.cluster.keyPrefix });
    for (const { config } of nodes) expect(config.cluster.etcdEndpoints).toEqual(gateway.cluster.etcdEndpoints);
  });

  it('reads the cluster token from the volume the profile fills, never from a value', () => {
    const tokenFile = /\$\$\(cat ([^)]+)\)/;
    for (const name of brokers) {
      expect(Object.keys(services[name].environment!)).not.toContain('BROKER_CLUSTER_TOKEN');
      const entrypoint = services[name].entrypoint!.join(' ');
      expect(entrypoint).toMatch(new RegExp(`BROKER_CLUSTER_TOKEN=${tokenFile.source}`));
      const file = tokenFile.exec(entrypoint)![1];
      expect(volumeAt(name, path.dirname(file))).toBe('cluster-secret');
      expect(services[name].depends_on?.['cluster-secret']).toEqual({ condition: 'service_completed_successfully' });
    }
    expect(volumeAt('cluster-secret', '/run/bash-broker-cluster')).toBe('cluster-secret');
    expect(services['cluster-secret'].entrypoint!.join(' ')).toContain('/run/bash-broker-cluster/token');
    expect(Object.keys(compose.volumes)).toContain('cluster-secret');
  });

  it('publishes the gateway on loopback at its listen port, apart from the broker, and no node', () => {
    const [published] = services.gateway.ports!;
    const [host, hostPort, containerPort] = published.split(':');
    expect(host).toBe('127.0.0.1');
    expect(Number(containerPort)).toBe(loadConfig(environmentOf('gateway')).port);
    expect(services.broker.ports!.map((p) => p.split(':')[1])).not.toContain(hostPort);
    for (const name of ofRole('node')) expect(services[name].ports).toBeUndefined();
  });

  it('points the brokers at the etcd service, on the port it listens on, after it is healthy', () => {
    const endpoint = new URL(loadConfig(environmentOf('gateway')).cluster.etcdEndpoints[0]);
    expect(endpoint.hostname).toBe('etcd');
    const listen = services.etcd.command!.find((a) => a.startsWith('--listen-client-urls='))!;
    expect(new URL(listen.split('=')[1]).port).toBe(endpoint.port);
    for (const name of brokers) expect(services[name].depends_on?.etcd).toEqual({ condition: 'service_healthy' });
  });

  it('uses images the project builds', () => {
    const built = builtImages();
    for (const name of brokers) {
      expect(built).toContain(services[name].image);
      expect(built).toContain(environmentOf(name).BROKER_IMAGE ?? services[name].image);
    }
    // etcd's image is built here, from containers/etcd on Debian's packages.
    expect(services.etcd.build).toBe('containers/etcd');
    expect(fs.existsSync(path.join(REPO, 'containers', 'etcd', 'Dockerfile'))).toBe(true);
  });

  it('has Prometheus (profile monitoring) find the gateway and the nodes, with the token the profile writes', () => {
    const config = YAML.parse(fs.readFileSync(PROMETHEUS_CONFIG, 'utf8')) as {
      scrape_configs: { job_name: string; dns_sd_configs?: { names: string[]; port: number }[]; http_sd_configs?: { url: string }[]; authorization?: { credentials_file: string } }[];
    };
    const job = (name: string) => config.scrape_configs.find((j) => j.job_name === name)!;
    const gatewayPort = loadConfig(environmentOf('gateway')).port;
    expect(job('bash-broker-gateways').dns_sd_configs![0]).toMatchObject({ names: ['gateway'], port: gatewayPort });
    const sd = new URL(job('bash-broker-nodes').http_sd_configs![0].url);
    expect([sd.hostname, Number(sd.port), sd.pathname]).toEqual(['gateway', gatewayPort, '/cluster/targets']);
    const tokenFile = job('bash-broker-nodes').authorization!.credentials_file;
    expect(volumeAt('prometheus', path.dirname(tokenFile))).toBe('cluster-secret');
    expect(services['cluster-secret'].entrypoint!.join(' ')).toContain(tokenFile);
  });

  const composeCommand = commandExists('docker-compose') ? ['docker-compose'] : null;
  (composeCommand ? it : it.skip)('Compose accepts the file with the profile', () => {
    const r = spawnSync(composeCommand![0], [...composeCommand!.slice(1), '-f', COMPOSE_FILE, '--profile', 'cluster', '--profile', 'monitoring', 'config', '--services'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual([...Object.keys(services)].sort());
  });
});
