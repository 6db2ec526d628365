/**
 * deploy/k8s against the code and against itself (no Kubernetes API server runs here, so nothing is
 * applied): every variable a broker container is given is one the configuration reads, and the
 * whole environment of a node and of a gateway, as Kubernetes would assemble it, passes the real
 * configuration; the listen port is the container's port and its probes'; Services select the pods
 * that carry their target ports; the images are the project's own; both tokens come from the
 * Secret; each side's TLS Secret is mounted whole and read-only, and names the files the broker is
 * given; the store's endpoints and Prometheus' discovery (over the nodes' TLS) name the Services
 * that serve them.
 * With kubectl on PATH, `kubectl kustomize` renders the same objects (it needs no server).
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';
import { loadConfig } from '../../src/config/config';
import { configVariables } from '../helpers/configVariables';
import { builtImages, commandExists, credentialsFiles, promtoolCheckConfig, REPO } from '../helpers/deployFiles';

const DIR = path.join(REPO, 'deploy', 'k8s');
const SECRET_TEMPLATE = 'secret.example.yaml';
const SECRET_NAME = 'bash-broker-tokens';
/** The broker image by the name the manifests use; kustomization.yaml gives it its tag. */
const BROKER_IMAGE_NAME = 'bash-broker';
/** Variables the configuration reads that must come from the Secret, never from a value. */
const SECRET_VARIABLES: Record<string, string> = { BROKER_CLUSTER_TOKEN: 'cluster-token', BROKER_TOKEN: 'client-token' };

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects, read as parsed YAML */
type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [key: string]: any };
type EnvVar = { name: string; value?: string; valueFrom?: any };
type Container = { name: string; image: string; env?: EnvVar[]; envFrom?: { configMapRef?: { name: string } }[]; ports?: { name?: string; containerPort: number }[]; [key: string]: any };
/* eslint-enable @typescript-eslint/no-explicit-any */

function parseAll(file: string): K8sObject[] {
  return YAML.parseAllDocuments(fs.readFileSync(path.join(DIR, file), 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS() as K8sObject;
  });
}

const kustomization = YAML.parse(fs.readFileSync(path.join(DIR, 'kustomization.yaml'), 'utf8')) as {
  namespace: string;
  resources: string[];
  images: { name: string; newName?: string; newTag?: string }[];
};
const objects = kustomization.resources.flatMap(parseAll);
const [secret, ...tlsSecrets] = parseAll(SECRET_TEMPLATE);
/** Each side's TLS Secret (the cluster's CA, its certificate and key), by the role that mounts it. */
const TLS_SECRETS: Record<string, string> = { node: 'bash-broker-cluster-tls-node', gateway: 'bash-broker-cluster-tls-gateway' };
const TLS_VARIABLES = ['BROKER_CLUSTER_CA', 'BROKER_CLUSTER_CERT', 'BROKER_CLUSTER_KEY'];
const ofKind = (kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
const byName = (kind: string, name: string): K8sObject => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/k8s`);
  return found;
};
const workloads = objects.filter((o) => ['Deployment', 'DaemonSet', 'StatefulSet'].includes(o.kind));
const containersOf = (workload: K8sObject): Container[] => workload.spec.template.spec.containers;
const brokerWorkloads = workloads.filter((w) => containersOf(w).some((c) => c.image === BROKER_IMAGE_NAME));
const brokerContainer = (workload: K8sObject): Container => containersOf(workload).find((c) => c.image === BROKER_IMAGE_NAME)!;
const roleOf = (workload: K8sObject): string | undefined => brokerContainer(workload).env?.find((e) => e.name === 'BROKER_ROLE')?.value;
const workloadOfRole = (role: string): K8sObject => {
  const found = brokerWorkloads.find((w) => roleOf(w) === role);
  if (!found) throw new Error(`no broker workload of BROKER_ROLE=${role}`);
  return found;
};

/** The value Kubernetes would give a fieldRef (made-up values of the right shape). */
const FIELD_VALUES: Record<string, string> = { 'status.hostIP': '10.0.0.5', 'status.podIP': '10.1.0.7', 'metadata.name': 'pod-0', 'spec.nodeName': 'host-a' };
const SECRET_VALUES = { 'cluster-token': 'a-cluster-token-of-the-k8s-test', 'client-token': 'a-client-token-of-the-k8s-test' };

/** A container's environment as the kubelet assembles it: ConfigMaps first, then env in order, $(NAME) expanded from what came before. */
function environmentOf(container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) Object.assign(env, byName('ConfigMap', from.configMapRef!.name).data);
  for (const v of container.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
    else if (v.valueFrom?.fieldRef) env[v.name] = FIELD_VALUES[v.valueFrom.fieldRef.fieldPath];
    else if (v.valueFrom?.secretKeyRef) env[v.name] = SECRET_VALUES[v.valueFrom.secretKeyRef.key as keyof typeof SECRET_VALUES];
  }
  return env;
}

/** A workload's Secret volumes by where its broker container mounts them: the Secret's name, and the mount. */
function secretMounts(workload: K8sObject): Map<string, { secretName: string; readOnly?: boolean; subPath?: string }> {
  const volumes = new Map<string, string>();
  for (const v of workload.spec.template.spec.volumes ?? []) if (v.secret) volumes.set(v.name, v.secret.secretName);
  const mounts = new Map<string, { secretName: string; readOnly?: boolean; subPath?: string }>();
  for (const m of brokerContainer(workload).volumeMounts ?? []) {
    const secretName = volumes.get(m.name);
    if (secretName) mounts.set(m.mountPath, { secretName, readOnly: m.readOnly, subPath: m.subPath });
  }
  return mounts;
}

/**
 * A broker's environment with each file of a mounted Secret stood in by a file of a temporary
 * directory (the configuration checks the files are readable), after checking the Secret's
 * template has the key the file names.
 */
function withMountedFiles(workload: K8sObject, env: Record<string, string>, dir: string): Record<string, string> {
  const out = { ...env };
  for (const [mountPath, { secretName }] of secretMounts(workload)) {
    const template = tlsSecrets.find((t) => t.metadata.name === secretName);
    for (const [name, value] of Object.entries(env)) {
      if (!value.startsWith(`${mountPath}/`)) continue;
      const key = value.slice(mountPath.length + 1);
      expect({ variable: name, secret: secretName, key: Object.keys(template?.stringData ?? {}).includes(key) }).toEqual({ variable: name, secret: secretName, key: true });
      out[name] = path.join(dir, `${secretName}-${key}`);
      fs.writeFileSync(out[name], '');
    }
  }
  return out;
}

describe('deploy/k8s', () => {
  const read = configVariables();
  const files = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-k8s-'));
  afterAll(() => fs.rmSync(files, { recursive: true, force: true }));

  it('lists every manifest in its kustomization, the Secret template aside, and each parses as objects of the namespace', () => {
    const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources, SECRET_TEMPLATE].sort()).toEqual(files.sort());
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ConfigMap/bash-broker-cluster',
      'ConfigMap/bash-broker-node',
      'ConfigMap/bash-broker-prometheus',
      'DaemonSet/bash-broker-node',
      'Deployment/bash-broker-gateway',
      'Namespace/bash-broker',
      'Service/bash-broker-etcd',
      'Service/bash-broker-gateway',
      'Service/bash-broker-gateway-pods',
      'StatefulSet/bash-broker-etcd',
    ]);
    expect(kustomization.namespace).toBe('bash-broker');
    expect(byName('Namespace', kustomization.namespace)).toBeDefined();
    for (const o of [...objects, secret, ...tlsSecrets]) expect([undefined, kustomization.namespace]).toContain(o.metadata.namespace);
  });

  it('runs nodes as a DaemonSet and gateways as a Deployment, over the one broker image, the gateways with no privilege', () => {
    expect(workloadOfRole('node').kind).toBe('DaemonSet');
    expect(workloadOfRole('gateway').kind).toBe('Deployment');
    expect(brokerWorkloads).toHaveLength(2);
    // A gateway needs no host access and writes no file (tried: the image as user 1000, read-only, no capabilities).
    expect(brokerContainer(workloadOfRole('gateway')).securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(workloadOfRole('gateway').spec.template.spec.hostNetwork).toBeUndefined();
  });

  it('gives broker containers only variables the configuration reads', () => {
    expect(read.size).toBeGreaterThan(70); // the extraction found the configuration
    for (const workload of brokerWorkloads) {
      const container = brokerContainer(workload);
      const names = [
        ...(container.env ?? []).map((e) => e.name),
        ...(container.envFrom ?? []).flatMap((f) => Object.keys(byName('ConfigMap', f.configMapRef!.name).data)),
      ];
      expect(names.length).toBeGreaterThan(5);
      expect({ workload: workload.metadata.name, unknown: names.filter((n) => !read.has(n)) }).toEqual({ workload: workload.metadata.name, unknown: [] });
    }
  });

  it("assembles, for a node and for a gateway, an environment the broker's configuration accepts, in the role meant", () => {
    const environment = (role: string): Record<string, string> => withMountedFiles(workloadOfRole(role), environmentOf(brokerContainer(workloadOfRole(role))), files);
    const node = loadConfig(environment('node'));
    expect(node.cluster).toMatchObject({ role: 'node', nodeAddress: `https://${FIELD_VALUES['status.hostIP']}:8180`, clusterToken: SECRET_VALUES['cluster-token'] });
    expect(node.cluster.clusterTls).not.toBeNull();
    expect(node).toMatchObject({ backend: 'docker', host: FIELD_VALUES['status.hostIP'], port: 8180, token: null });
    const gateway = loadConfig(environment('gateway'));
    expect(gateway.cluster).toMatchObject({ role: 'gateway', clusterToken: SECRET_VALUES['cluster-token'] });
    expect(gateway.cluster.clusterTls).not.toBeNull();
    expect(gateway).toMatchObject({ host: '0.0.0.0', port: 8180, token: SECRET_VALUES['client-token'] });
    // A $(NAME) that named nothing defined before it would stay as it is.
    for (const w of brokerWorkloads) expect(Object.values(environmentOf(brokerContainer(w))).filter((v) => /\$\(/.test(v))).toEqual([]);
  });

  it('takes both tokens from the Secret, whose template has their keys, and never from a value or a ConfigMap', () => {
    expect(secret).toMatchObject({ kind: 'Secret', metadata: { name: SECRET_NAME } });
    for (const workload of brokerWorkloads) {
      const env = brokerContainer(workload).env ?? [];
      for (const [variable, key] of Object.entries(SECRET_VARIABLES)) {
        const v = env.find((e) => e.name === variable);
        if (variable === 'BROKER_TOKEN' && roleOf(workload) === 'node') {
          expect(v).toBeUndefined(); // a node takes the cluster token only
          continue;
        }
        expect(v?.valueFrom?.secretKeyRef).toEqual({ name: SECRET_NAME, key });
        expect(Object.keys(secret.stringData)).toContain(key);
      }
    }
    for (const map of ofKind('ConfigMap')) for (const variable of Object.keys(SECRET_VARIABLES)) expect(Object.keys(map.data)).not.toContain(variable);
    // The template's placeholders cannot start a cluster (a cluster token needs 16 characters).
    expect(() => loadConfig({ BROKER_ROLE: 'node', BROKER_ETCD_ENDPOINTS: 'http://e:2379', BROKER_CLUSTER_TOKEN: secret.stringData['cluster-token'] })).toThrow(/BROKER_CLUSTER_TOKEN/);
  });

  it('opens the port the broker listens on (PORT) as the container port its probes and Services use, named for its scheme', () => {
    for (const workload of brokerWorkloads) {
      const container = brokerContainer(workload);
      const port = Number(environmentOf(container).PORT);
      // A node serves HTTPS (mutual TLS), a gateway HTTP.
      const scheme = roleOf(workload) === 'node' ? 'https' : 'http';
      expect(container.ports).toEqual([{ name: scheme, containerPort: port }]);
      for (const probe of ['readinessProbe', 'livenessProbe']) {
        const target = container[probe]?.httpGet?.port ?? container[probe]?.tcpSocket?.port;
        expect([port, scheme]).toContain(target);
      }
    }
  });

  it("mounts each side's TLS Secret whole and read-only, and gives the broker the files it holds", () => {
    for (const workload of brokerWorkloads) {
      const role = roleOf(workload)!;
      const env = brokerContainer(workload).env ?? [];
      const mounts = [...secretMounts(workload).entries()].filter(([, m]) => m.secretName === TLS_SECRETS[role]);
      // No subPath: a subPath mount is never updated, and certificates are renewed by updating the Secret.
      expect(mounts.map(([, m]) => ({ readOnly: m.readOnly, subPath: m.subPath }))).toEqual([{ readOnly: true, subPath: undefined }]);
      const [mountPath] = mounts[0];
      for (const variable of TLS_VARIABLES) expect(env.find((e) => e.name === variable)?.value).toMatch(new RegExp(`^${mountPath}/`));
      const template = tlsSecrets.find((t) => t.metadata.name === TLS_SECRETS[role]);
      expect(Object.keys(template?.stringData ?? {}).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    }
    // The gateway's user reads its key through the pod's group.
    const gatewayPod = workloadOfRole('gateway').spec.template.spec;
    expect(gatewayPod.securityContext.fsGroup).toBe(brokerContainer(workloadOfRole('gateway')).securityContext.runAsUser);
  });

  it('selects with every Service the pods that carry its target ports, and every workload its own pods', () => {
    for (const workload of workloads) {
      expect(workload.spec.template.metadata.labels).toMatchObject(workload.spec.selector.matchLabels);
    }
    for (const service of ofKind('Service')) {
      const selected = workloads.filter((w) => Object.entries(service.spec.selector as Record<string, string>).every(([k, v]) => w.spec.template.metadata.labels[k] === v));
      expect({ service: service.metadata.name, selected: selected.length }).toEqual({ service: service.metadata.name, selected: 1 });
      const ports = containersOf(selected[0]).flatMap((c) => c.ports ?? []);
      for (const p of service.spec.ports) {
        const target = p.targetPort ?? p.port;
        expect(ports.some((cp) => cp.name === target || cp.containerPort === target)).toBe(true);
      }
    }
  });

  it('names only images the project builds, each tagged by the kustomization', () => {
    const built = builtImages();
    expect(built).toContain('bash-broker:latest');
    expect(built).toContain('bash-broker-etcd:latest');
    const images = workloads.flatMap((w) => containersOf(w).map((c) => c.image));
    expect(new Set(images)).toEqual(new Set(['bash-broker', 'bash-broker-etcd']));
    for (const image of images) {
      const mapping = kustomization.images.find((i) => i.name === image);
      expect({ image, tagged: mapping && built.has(`${mapping.newName ?? image}:${mapping.newTag}`) }).toEqual({ image, tagged: true });
    }
    // The session containers' image, which each host's engine must hold.
    expect(built).toContain(environmentOf(brokerContainer(workloadOfRole('node'))).BROKER_IMAGE);
  });

  it('points the brokers at the etcd it runs, and a node at the host paths it mounts', () => {
    const endpoint = new URL(environmentOf(brokerContainer(workloadOfRole('gateway'))).BROKER_ETCD_ENDPOINTS);
    const etcdService = byName('Service', 'bash-broker-etcd');
    const etcd = byName('StatefulSet', 'bash-broker-etcd');
    expect(endpoint.hostname).toBe(`${etcd.metadata.name}-0.${etcdService.metadata.name}.${kustomization.namespace}.svc`);
    expect(etcd.spec.serviceName).toBe(etcdService.metadata.name);
    expect(etcdService.spec.ports.find((p: { name: string }) => p.name === 'client').port).toBe(Number(endpoint.port));
    expect(containersOf(etcd)[0].command.join(' ')).toContain(`--advertise-client-urls=http://$(POD_NAME).${etcdService.metadata.name}.${kustomization.namespace}.svc:${endpoint.port}`);

    const node = workloadOfRole('node');
    const pod = node.spec.template.spec;
    expect(pod).toMatchObject({ hostNetwork: true, hostPID: true, dnsPolicy: 'ClusterFirstWithHostNet' });
    const mounts = Object.fromEntries((brokerContainer(node).volumeMounts as { name: string; mountPath: string }[]).map((m) => [m.mountPath, m.name]));
    const hostPaths = Object.fromEntries((pod.volumes as { name: string; hostPath?: { path: string } }[]).flatMap((v) => (v.hostPath ? [[v.name, v.hostPath.path]] : [])));
    // The pipes' directory is the same path on the host and in the pod, and the one the node uses.
    const fifoDir = environmentOf(brokerContainer(node)).BROKER_DOCKER_FIFO_DIR;
    for (const at of ['/var/run/docker.sock', fifoDir, '/sys/fs/cgroup']) expect(hostPaths[mounts[at]]).toBe(at);
    // Shutdown: the node's grace for running commands fits in the pod's.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(environmentOf(brokerContainer(node)).BROKER_SHUTDOWN_GRACE));
  });

  it("has Prometheus find every node through a gateway's /cluster/targets and scrape it over TLS, with the tokens of the Secret", () => {
    const config = YAML.parse(byName('ConfigMap', 'bash-broker-prometheus').data['prometheus.yml']);
    const jobs = Object.fromEntries(config.scrape_configs.map((j: { job_name: string }) => [j.job_name, j]));
    const nodes = jobs['bash-broker-nodes-tls'];
    const sd = new URL(nodes.http_sd_configs[0].url);
    const gatewayService = byName('Service', 'bash-broker-gateway');
    expect(sd.hostname).toBe(`${gatewayService.metadata.name}.${kustomization.namespace}.svc`);
    expect(Number(sd.port)).toBe(gatewayService.spec.ports[0].port);
    expect(sd.pathname).toBe('/cluster/targets');
    expect(nodes.authorization.credentials_file).toMatch(/\/cluster-token$/);
    expect(nodes.http_sd_configs[0].authorization.credentials_file).toMatch(/\/client-token$/);
    // The nodes over HTTPS: the CA and a client certificate of it, files of the gateways' TLS Secret.
    expect(nodes.scheme).toBe('https');
    const gatewayTls = tlsSecrets.find((t) => t.metadata.name === TLS_SECRETS.gateway)!;
    for (const key of ['ca_file', 'cert_file', 'key_file']) expect(Object.keys(gatewayTls.stringData)).toContain(path.basename(nodes.tls_config[key]));
    expect(jobs['bash-broker-gateways'].authorization.credentials_file).toMatch(/\/client-token$/);
    for (const file of credentialsFiles(config)) expect(Object.keys(secret.stringData)).toContain(path.basename(file));
    // Every gateway by its own address: the headless Service of the gateway pods, on their port.
    const pods = byName('Service', 'bash-broker-gateway-pods');
    expect(pods.spec.clusterIP).toBe('None');
    expect(pods.spec.selector).toEqual(gatewayService.spec.selector);
    expect(jobs['bash-broker-gateways'].dns_sd_configs[0]).toMatchObject({ names: [`${pods.metadata.name}.${kustomization.namespace}.svc`], type: 'A', port: brokerContainer(workloadOfRole('gateway')).ports![0].containerPort });
  });

  (commandExists('promtool') ? it : it.skip)('promtool accepts the scrape configuration', () => {
    const r = promtoolCheckConfig(byName('ConfigMap', 'bash-broker-prometheus').data['prometheus.yml']);
    expect(r).toMatchObject({ status: 0, output: expect.stringMatching(/SUCCESS/) });
  });

  // kubectl kustomize renders offline; `kubectl apply --dry-run=client` needs an API server even so
  // (it asks the server which kinds exist), so it cannot run here.
  (commandExists('kubectl') ? it : it.skip)('kubectl kustomize renders the same objects, in the namespace, with the tagged image', () => {
    const r = spawnSync('kubectl', ['kustomize', DIR], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    const rendered = YAML.parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject);
    expect(rendered.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort());
    for (const o of rendered) if (o.kind !== 'Namespace') expect(o.metadata.namespace).toBe(kustomization.namespace);
    const images = rendered.filter((o) => o.spec?.template).flatMap((o) => containersOf(o).map((c) => c.image));
    expect(images.sort()).toEqual(['bash-broker-etcd:latest', 'bash-broker:latest', 'bash-broker:latest']);
  });
});
