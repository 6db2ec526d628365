/**
 * A cluster of real engines on one machine, as on several hosts: a private etcd, a registry on
 * loopback (Debian's docker-registry, its own unless given one), N Docker engines (rigEngine.ts: each a
 * dockerd of its own), N node brokers (one beside each engine, on a loopback port of its own, its
 * Docker backend on that engine only) and G gateways. Images move through the registry, as between
 * hosts: the rig pushes its images from the machine's engine, and each engine pulls them (under their
 * registry name and their own: a node's BROKER_IMAGE is the plain name). The engines reach the
 * registry through a link (scripts/socket-forward.js, see rigEngine.ts), under the same address. `scripts/cluster.sh` runs it for a person; the cluster-engines suite runs the same code.
 *
 * The store serves its clients over mutual TLS only, with certificates the rig makes with openssl
 * (etcdPki.ts, in `pki/`): every node and gateway presents the cluster's client certificate, as
 * members on several hosts must. Gateways and nodes speak mutual TLS too (BROKER_CLUSTER_CA/CERT/KEY,
 * a CA of their own) unless `nodeTls: false`: the nodes serve HTTPS only.
 *
 * Everything lives under one directory (its record `rig.json`: rigState.ts; the etcd data, the
 * engines' roots, every log), and every process carries the rig's mark (rigProcess.ts), so `down`
 * finds all of it from the directory alone, stops it, and says what it could not remove. What each
 * member runs, with which settings, is rigMembers.ts's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Agent, request } from 'undici';
import type { GatewayHealth } from './clusterProcs';
import { etcdPkiIn, makeEtcdPki, type EtcdPki } from './etcdPki';
import { mountsUnder } from './privateDockerdCleanup';
import { RigEngine } from './rigEngine';
import { refusesConnections } from '../src/cluster/gateway/nodeForwarder';
import { cmdline } from './procs';
import { killMember, logTail, memberPids, spawnMember, stopMember, waitFor } from './rigProcess';
import { distributeImages, registryRef, registrySocket, startRigRegistry, stopRigRegistry } from './rigRegistry';
import { etcdEndpoint, gatewayUrls, newRigState, nodeOf, ownerGone, readRigState, rigIn, TEST_RIG_PREFIX, type RigOptions, type RigState } from './rigState';
import { etcdMember, gatewayMember, memberLog, nodeMember, type RigPlace } from './rigMembers';

const START_TIMEOUT_MS = 120_000;
/** A node drains its leases, then removes its containers (BROKER_SHUTDOWN_GRACE is 5 s here). */
const NODE_STOP_MS = 60_000;

/** What `down` found: see there. Both empty when nothing leaked. */
export interface RigDown {
  leftByMembers: string[];
  left: string[];
}

export class ClusterRig {
  readonly engines: RigEngine[];

  private constructor(
    readonly dir: string,
    readonly state: RigState,
  ) {
    const registryLink = state.registry ? { address: state.registry.address, socket: registrySocket(dir) } : undefined;
    this.engines = Array.from(
      { length: state.engines },
      (_v, i) => new RigEngine({ rigDir: dir, rigId: state.id, index: i + 1, bridgeCidr: `${state.subnetBase}.${i + 1}.1/24`, registryLink }),
    );
  }

  /** Starts a whole rig and waits until every gateway lists every node with its pool warm. */
  static async up(options: RigOptions): Promise<ClusterRig> {
    const dir = path.resolve(options.dir);
    if (rigIn(dir)) throw new Error(`a rig already lives in ${dir}: take it down first`);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const state = await newRigState(dir, options);
    makeEtcdPki(path.join(dir, 'pki'));
    const rig = new ClusterRig(dir, state);
    try {
      await Promise.all([rig.startEtcd(), rig.startRegistry(), ...rig.engines.map((e) => e.start())]);
      await distributeImages(rig.registry, state.images, rig.engines);
      await Promise.all(rig.engines.map((_e, i) => rig.startNode(i + 1)));
      await Promise.all(state.gatewayPorts.map((_p, i) => rig.startGateway(i + 1)));
      await rig.waitReady();
    } catch (err) {
      await rig.down().catch(() => undefined);
      throw err;
    }
    return rig;
  }

  /** The rig whose directory is `dir`. */
  static open(dir: string): ClusterRig {
    return new ClusterRig(path.resolve(dir), readRigState(dir));
  }

  /** Takes down the rigs under `parent` named `<prefix>…` whose owner process is gone (a crashed test run). */
  static async sweepAbandoned(parent = os.tmpdir(), prefix = TEST_RIG_PREFIX): Promise<string[]> {
    const swept: string[] = [];
    for (const name of fs.readdirSync(parent).filter((n) => n.startsWith(prefix))) {
      const dir = path.join(parent, name);
      let state: RigState;
      try {
        state = readRigState(dir);
      } catch {
        continue; // no state: not a rig, or one being made right now
      }
      if (!ownerGone(state)) continue;
      await ClusterRig.open(dir).down();
      swept.push(dir);
    }
    return swept;
  }

  get etcdEndpoint(): string {
    return etcdEndpoint(this.state);
  }

  /** The certificates the rig made (etcdPki.ts): the store's, and its members'. */
  get pki(): EtcdPki {
    return etcdPkiIn(path.join(this.dir, 'pki'));
  }

  /** etcdctl's arguments to reach the store as a member does. */
  etcdctlArgs(): string[] {
    const { ca, clientCert, clientKey } = this.pki;
    return ['--endpoints', this.etcdEndpoint, '--cacert', ca, '--cert', clientCert, '--key', clientKey];
  }

  get clusterToken(): string {
    return this.state.clusterToken;
  }

  get clientToken(): string {
    return this.state.clientToken;
  }

  get gatewayUrls(): string[] {
    return gatewayUrls(this.state);
  }

  /** Node n (1-based): its id, address and engine. */
  node(n: number): { id: string; url: string; engine: RigEngine; deployment: string } {
    return { ...nodeOf(this.state, n), engine: this.engines[n - 1] };
  }

  private get place(): RigPlace {
    return { dir: this.dir, state: this.state, pki: this.pki };
  }

  /** (Re)starts etcd on its ports and data. */
  async startEtcd(): Promise<void> {
    const pid = spawnMember(etcdMember(this.place));
    await this.waitAnswer('etcd', pid, `http://127.0.0.1:${this.state.etcdPorts.metrics}/health`);
  }

  /** Stops etcd (SIGTERM); its data stays for the next start. */
  async stopEtcd(): Promise<void> {
    await stopMember(this.dir, 'etcd', 10_000);
  }

  /** Until `url` answers an HTTP status at all, while `pid` lives (an https:// node's with the gateways' certificate). */
  private async waitAnswer(name: string, pid: number, url: string): Promise<void> {
    const { clusterCa, gatewayCert, gatewayKey } = this.pki;
    const connect = url.startsWith('https://') ? { ca: fs.readFileSync(clusterCa), cert: fs.readFileSync(gatewayCert), key: fs.readFileSync(gatewayKey) } : undefined;
    const client = new Agent({ connect });
    const answers = (): Promise<boolean> =>
      request(url, { dispatcher: client }).then(
        (r) => r.body.dump().then(() => true),
        () => false,
      );
    try {
      await waitFor(
        async () => {
          if (!memberPids(this.dir, name).includes(pid)) throw new Error(`${name} exited at start:\n${logTail(memberLog(this.dir, name))}`);
          return answers();
        },
        START_TIMEOUT_MS,
        `${name} to answer on ${url}`,
        () => logTail(memberLog(this.dir, name), 10),
      );
    } finally {
      await client.close();
    }
  }

  /** The registry the engines pull from (`127.0.0.1:<port>`: rigRegistry.ts). */
  get registry(): string {
    if (!this.state.registry) throw new Error('this rig has no registry (made by an older build)');
    return this.state.registry.address;
  }

  /** `image` as the rig's registry names it. */
  registryRef(image: string): string {
    return registryRef(this.registry, image);
  }

  /** (Re)starts the rig's own registry unless it was given one, and the engines' link to it. */
  async startRegistry(): Promise<void> {
    await startRigRegistry(this.dir, this.state.registry!, (name, pid, url) => this.waitAnswer(name, pid, url));
  }

  /** Stops the engines' link and the rig's own registry (its storage stays for the next start). */
  async stopRegistry(): Promise<void> {
    await stopRigRegistry(this.dir);
  }

  /** (Re)starts node n beside its engine: a restart is a new incarnation of the same node id and deployment. */
  async startNode(n: number): Promise<void> {
    const { id, url, engine } = this.node(n);
    const pid = spawnMember(nodeMember(this.place, n, engine.host));
    await this.waitAnswer(id, pid, `${url}/health`);
  }

  /** SIGTERM: the node leaves the membership, drains, and removes its containers. */
  async stopNode(n: number): Promise<void> {
    await stopMember(this.dir, this.node(n).id, NODE_STOP_MS);
  }

  /**
   * SIGKILL: the node broker dies at once; its containers stay on its engine. Done when its port
   * refuses connections: a dying process is gone from /proc's environ (its memory freed) an instant
   * before its sockets close, and a call in that instant breaks rather than being refused.
   */
  async kill9Node(n: number): Promise<void> {
    const { id, url } = this.node(n);
    await killMember(this.dir, id);
    await waitFor(() => refusesConnections(url), 10_000, `${id}'s port to refuse connections after SIGKILL`);
  }

  async startGateway(g: number): Promise<void> {
    const pid = spawnMember(gatewayMember(this.place, g));
    await this.waitAnswer(`g${g}`, pid, `${this.gatewayUrls[g - 1]}/health`);
  }

  async stopGateway(g: number): Promise<void> {
    await stopMember(this.dir, `g${g}`, 30_000);
  }

  /** A gateway's /health (public). */
  async gatewayView(g: number): Promise<GatewayHealth> {
    return (await (await fetch(`${this.gatewayUrls[g - 1]}/health`)).json()) as GatewayHealth;
  }

  /** Until every gateway lists every node, healthy, its default pool whole and free. */
  async waitReady(timeoutMs = START_TIMEOUT_MS): Promise<void> {
    const want = this.engines.map((_e, i) => this.node(i + 1).id).join(',');
    for (let g = 1; g <= this.state.gateways; g++) {
      let last: GatewayHealth | null = null;
      await waitFor(
        async () => {
          last = await this.gatewayView(g).catch(() => null);
          if (!last) return false;
          const nodes = [...last.nodes].sort((a, b) => a.node_id.localeCompare(b.node_id, 'en', { numeric: true }));
          return nodes.map((n) => n.node_id).join(',') === want && nodes.every((n) => n.health === 'healthy' && n.pools.default?.available === n.pools.default?.total && n.pools.default.total > 0);
        },
        timeoutMs,
        `gateway g${g} to list ${want}, each healthy with its whole pool free`,
        () => JSON.stringify(last?.nodes.map((n) => ({ id: n.node_id, health: n.health, pool: n.pools.default }))),
      );
    }
  }

  /** The node registrations under the rig's prefix in etcd (as an operator would list them). */
  registrations(): string[] {
    const out = execFileSync('etcdctl', [...this.etcdctlArgs(), 'get', '--prefix', `${this.state.prefix}nodes/`, '--keys-only'], {
      encoding: 'utf8',
      env: { ...process.env, ETCDCTL_API: '3' },
      timeout: 10_000,
    });
    return out.split('\n').filter((l) => l.trim() !== '');
  }

  /** Whether member `name` (etcd, e1, n1, g1, …) has a live process. */
  runs(name: string): boolean {
    return memberPids(this.dir, name).length > 0;
  }

  /** One line per part: what runs, where. */
  status(): string[] {
    const running = (name: string) => (this.runs(name) ? 'up' : 'down');
    return [
      `etcd        ${running('etcd').padEnd(5)} ${this.etcdEndpoint} (prefix ${this.state.prefix})`,
      ...(this.state.registry
        ? [`registry    ${(this.state.registry.own ? running('registry') : 'given').padEnd(5)} http://${this.state.registry.address} (the engines' link to it: ${running('registry-link')})`]
        : []),
      ...this.engines.map((e) => `engine ${e.name}   ${(e.pid === null ? 'down' : 'up').padEnd(5)} ${e.host} (bridge ${e.bridge} ${e.spec.bridgeCidr})`),
      ...this.engines.map((_e, i) => {
        const { id, url, engine } = this.node(i + 1);
        return `node ${id}     ${running(id).padEnd(5)} ${url} on engine ${engine.name}`;
      }),
      ...this.gatewayUrls.map((url, i) => `gateway g${i + 1}  ${running(`g${i + 1}`).padEnd(5)} ${url}`),
    ];
  }

  /**
   * Stops everything (nodes first: they leave the membership and remove their containers; then the
   * gateways, the engines, etcd) and removes the directory. Says what the members left for it to
   * remove (containers a stopped node did not remove, registrations it did not end: none unless a
   * node crashed or failed its stop) and what is left after it (processes, mounts, bridges; then the
   * directory is kept, for a second `down` or a look).
   */
  async down(say: (step: string) => void = () => undefined): Promise<RigDown> {
    const leftByMembers: string[] = [];
    say('stopping the nodes (each drains its leases and removes its containers)');
    await Promise.all(this.engines.map((_e, i) => this.stopNode(i + 1)));
    for (const engine of this.engines) {
      if (engine.pid === null) continue;
      const ids = await engine.containerIds().catch(() => []);
      leftByMembers.push(...ids.map((id) => `engine ${engine.name}: container ${id.slice(0, 12)}, left after its node stopped`));
    }
    if (memberPids(this.dir, 'etcd').length > 0) leftByMembers.push(...this.registrations().map((key) => `etcd: registration ${key}, left after its node stopped`));
    say('stopping the gateways');
    await Promise.all(this.gatewayUrls.map((_u, i) => this.stopGateway(i + 1)));
    say('stopping the engines and removing their roots');
    await Promise.all(this.engines.map((e) => e.destroy()));
    say('stopping the registry');
    await this.stopRegistry();
    say('stopping etcd');
    await this.stopEtcd();
    const left = [
      ...memberPids(this.dir).map((pid) => `process ${pid}: ${cmdline(pid)}`),
      ...mountsUnder(this.dir).map((m) => `mount ${m}`),
      // An engine's bridge lives and ends with its network namespace; none may be in the machine's own.
      ...this.engines.filter((e) => hostHasLink(e.bridge)).map((e) => `bridge ${e.bridge} in the machine's network namespace`),
    ];
    if (left.length === 0) fs.rmSync(this.dir, { recursive: true, force: true });
    return { leftByMembers, left };
  }
}

function hostHasLink(name: string): boolean {
  return fs.existsSync(`/sys/class/net/${name}`);
}
