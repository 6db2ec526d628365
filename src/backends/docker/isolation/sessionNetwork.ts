/**
 * The container's side of its sessions' networks (isolation/sessionNet.c makes each session's):
 * once per container, from the engine's host, its network forwards and masquerades the sessions'
 * range (100.64.0.0/10) out of its own interface, and refuses traffic from one session's veth to
 * another's and the packets a session's egress rules marked refused (egressFilter.ts): a refusal,
 * never a drop, so the sender learns at once. Then a session of policy `full`
 * reaches what the container reaches, and no session reaches a neighbour's servers.
 *
 * Done by the host's `nsenter` and `iptables-restore` in the container's network namespace: the
 * image needs no iptables, and the container's sessions could not change the rules (no
 * CAP_NET_ADMIN). One process per container start, none per session. Needs what the pipe transport
 * and the per-session cgroups need: the broker on the engine's host, as root. Where it cannot (no
 * such tools, not root), sessions of policy `full` share their container's network instead, and the
 * broker says so (log and /health); sessions of policy `none` still get their own loopback.
 */
import type Dockerode from 'dockerode';
import { execFile } from 'node:child_process';
import dns from 'node:dns';
import type { Duplex } from 'node:stream';
import { promisify } from 'node:util';
import { BackendError, BadRequestError, BrokerError, errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';
import type { SessionNetwork } from '../../../config/isolationConfig';
import type { ContainerRef } from '../../../core/ports/backend';
import type { NetworkReport } from '../../../core/ports/sessionNetworks';
import type { SessionNetworkMode } from '../shells/channel';
import { DockerDemuxer } from '../shells/demux';
import { FIFO_MOUNT, type FifoSpawner } from '../shells/fifoSpawner';
import { SESSION_INIT_COPY, SESSION_INIT_NAME } from './isolationScript';
import { checkRules, type EgressRule } from '../../../core/network/egressRules';
import type { EgressPolicy, EgressState } from '../../../core/ports/sessionNetworks';
import { REFUSED_DSCP } from './egressFilter';
import { SessionEgress } from './sessionEgress';

const run = promisify(execFile);

/** The sessions' addresses (sessionNet.c's NET_BASE and NET_PAIRS): shared address space, no engine network's. */
export const SESSION_RANGE = '100.64.0.0/10';
/** The container's ends of the sessions' veths (sessionNet.c names them `bkr<N>`). */
const VETHS = 'bkr+';

const RULES = `*nat
-A POSTROUTING -s ${SESSION_RANGE} ! -d ${SESSION_RANGE} -j MASQUERADE
COMMIT
*filter
-A FORWARD -i ${VETHS} -o ${VETHS} -j REJECT --reject-with icmp-admin-prohibited
-A FORWARD -i ${VETHS} -m dscp --dscp 0x${REFUSED_DSCP.toString(16)} -j REJECT --reject-with icmp-admin-prohibited
COMMIT
`;

/** Forwarding and NAT for the sessions of the container whose init is host process `hostPid`; null when done, else why not. */
export async function routeSessions(hostPid: number): Promise<string | null> {
  const script = `echo 1 >/proc/sys/net/ipv4/ip_forward && iptables-restore -w --noflush <<'EOF'\n${RULES}EOF`;
  try {
    await run('nsenter', ['-t', String(hostPid), '-n', 'sh', '-c', script], { timeout: 10_000 });
    return null;
  } catch (err) {
    return `the broker could not route its sessions in the container's network (it needs nsenter and iptables-restore on the engine's host, as root): ${errorMessage(err).split('\n')[0]}`;
  }
}

/** A container's networks for its sessions, as decided at its connect. */
interface ContainerNetwork {
  /** Sessions get namespaces of their own (the session init made one at the container's start). */
  own: boolean;
  /** Their egress is routed (routeSessions): policy `full` is a namespace of its own; else the container's. */
  routed: boolean;
  /** The host's address on the container's network (its gateway): where its sessions' resolvers listen; null: none. */
  gateway?: string | null;
}

/** What a change of a live session's network needs of its shell. */
export interface NetworkedShell {
  readonly containerPid: number;
  readonly alive: boolean;
  /** Its session's network changed during the lease: its slot's next lease gets a new session (its pool's policy). */
  networkChanged: boolean;
  /** The network it has now (at its start, then as changed). */
  network: SessionNetworkMode;
  /** Its bash's host pid (its network namespace from the engine's host); null: unknown. */
  readonly hostPid: number | null;
  /** Its egress rules, when a change gave it some (closed with the shell). */
  egress: SessionEgress | null;
}

/**
 * The backend's side of the sessions' networks: per container, whether its sessions get namespaces
 * of their own and whether `full` is routed; each session's mode at its start; changes during a
 * lease; and what /health reports.
 */
export class SessionNetworks {
  private readonly containers = new Map<string, ContainerNetwork>();
  private readonly refusalsLogged = new Set<string>();
  private lastRefusal: string | null = null;

  constructor(
    /** The pool's policy (BROKER_SESSION_NETWORK or its `network`). */
    readonly policy: SessionNetwork,
    private readonly docker: Dockerode,
    /** Each container holds one session and is replaced after its lease (a pool of whole containers). */
    private readonly wholeContainers = false,
    /** The upstream DNS servers of sessions with egress rules (BROKER_EGRESS_DNS; empty: the broker's own). */
    private readonly egressDns: readonly string[] = [],
  ) {}

  /** At a container's connect: routes its sessions when they can have networks of their own. */
  async connect(ref: ContainerRef, spawner: FifoSpawner | null): Promise<void> {
    if (this.policy === 'shared') return void this.containers.set(ref.id, { own: false, routed: false });
    if (!spawner?.isolatesNetwork) {
      this.refuse(ref, 'the container cannot give its sessions network namespaces of their own (it needs per-lease isolation through the session init, and CAP_NET_ADMIN)');
      return void this.containers.set(ref.id, { own: false, routed: false });
    }
    const info = await this.docker.getContainer(ref.id).inspect();
    const refusal = await routeSessions(info.State.Pid);
    if (refusal) this.refuse(ref, refusal);
    const gateway = Object.values(info.NetworkSettings?.Networks ?? {}).find((n) => n.Gateway)?.Gateway ?? null;
    this.containers.set(ref.id, { own: true, routed: refusal === null, gateway });
  }

  /** The network a new session of this container starts in, for its pool's policy. */
  modeOf(containerId: string): SessionNetworkMode {
    const c = this.containers.get(containerId);
    if (!c?.own) return 'shared';
    return this.policy === 'none' ? 'none' : c.routed ? 'full' : 'shared';
  }

  /**
   * A live session's policy changed (`none` or `full`), with egress rules or none: its veth removed
   * or added by the session init, run in the container (a `docker exec`), and its filter written
   * (sessionEgress.ts) before a veth comes and after one goes, so no moment lets through more than
   * either policy. A 409 where the session shares its container's network (no namespace of its own,
   * or `full` not routed there).
   */
  async change(ref: ContainerRef, shell: NetworkedShell | null, policy: EgressPolicy, rules: readonly EgressRule[] = []): Promise<void> {
    const c = this.containers.get(ref.id);
    if (!c?.own && this.wholeContainers && policy === 'none' && rules.length === 0) return this.disconnect(ref);
    const veth = policy === 'full' || rules.length > 0;
    if (!c?.own || (veth && !c.routed)) throw conflict(`this session shares its container's network: its policy cannot change${rules.length > 0 ? ' and it can hold no egress rules' : ''} (${this.lastRefusal ?? `BROKER_SESSION_NETWORK is ${this.policy}`})`);
    if (!shell?.alive) throw conflict('the session has no live shell whose network could change');
    const checked = checkRules(rules, 'egress');
    if (typeof checked === 'string') throw new BadRequestError(checked);
    if (rules.length > 0) {
      if (shell.hostPid === null) throw conflict("the broker cannot reach this session's network namespace from the engine's host: it can hold no egress rules");
      const egress = shell.egress ?? new SessionEgress(shell.hostPid, c.gateway ?? null, () => (this.egressDns.length > 0 ? [...this.egressDns] : dns.getServers()));
      try {
        await egress.set(policy === 'none' ? 'deny' : 'allow', checked);
      } catch (err) {
        if (!shell.egress) egress.close();
        throw conflict(`the broker could not hold this session's egress rules (it needs the engine's host: nsenter and iptables-restore as root, and its address on the container's network): ${errorMessage(err).split('\n')[0]}`);
      }
      shell.egress = egress;
    }
    if ((shell.network === 'full') !== veth) await this.setVeth(ref, shell, veth ? 'full' : 'none');
    if (rules.length === 0 && shell.egress) {
      const egress = shell.egress;
      shell.egress = null;
      await egress.clear();
    }
    shell.networkChanged = true;
  }

  private async setVeth(ref: ContainerRef, shell: NetworkedShell, mode: 'none' | 'full'): Promise<void> {
    const out = await execInContainer(this.docker.getContainer(ref.id), ['bash', '-c', NET_CHANGE, 'bkr-net', String(shell.containerPid), mode]);
    if (out.exitCode === 108) throw conflict(`this session shares its container's network: its policy cannot change`);
    if (out.exitCode !== 0) throw new BackendError(`could not change the session's network (exit ${out.exitCode}): ${out.stderr.trim() || 'no message'}`);
    shell.network = mode;
  }

  /** The egress of a session in force: its own network's, else its container's (none when it is on no network). */
  async current(ref: ContainerRef, shell: NetworkedShell | null): Promise<EgressState> {
    if (shell?.alive && shell.egress) {
      const { defaultAction, rules } = shell.egress.state();
      return { policy: defaultAction === 'deny' ? 'none' : 'full', rules, own: true };
    }
    if (shell?.alive && shell.network !== 'shared') return { policy: shell.network, rules: [], own: true };
    const info = await this.docker.getContainer(ref.id).inspect();
    const networks = Object.keys(info.NetworkSettings?.Networks ?? {}).filter((n) => n !== 'none');
    return { policy: networks.length > 0 ? 'full' : 'none', rules: [], own: false };
  }

  /**
   * A container that is its one session's alone, and replaced after its lease (a pool of whole
   * containers, `fresh_container`), with egress denied: the engine disconnects it from every
   * network, which leaves its loopback alone. Its replacement starts connected as its pool says.
   */
  private async disconnect(ref: ContainerRef): Promise<void> {
    const info = await this.docker.getContainer(ref.id).inspect();
    for (const name of Object.keys(info.NetworkSettings?.Networks ?? {})) {
      if (name === 'host') throw conflict("a container on the host's network cannot be taken off it");
      if (name !== 'none') await this.docker.getNetwork(name).disconnect({ Container: ref.id, Force: true });
    }
  }

  forget(containerId: string): void {
    this.containers.delete(containerId);
  }

  status(): NetworkReport {
    let own = 0;
    let routed = 0;
    for (const c of this.containers.values()) {
      if (c.own) own++;
      if (c.routed) routed++;
    }
    return { policy: this.policy, ownNetworkContainers: own, routedContainers: routed, sharedNetworkContainers: this.containers.size - own, refusal: own < this.containers.size || routed < own ? this.lastRefusal : null };
  }

  private refuse(ref: ContainerRef, why: string): void {
    this.lastRefusal = why;
    if (this.refusalsLogged.has(why)) return;
    this.refusalsLogged.add(why);
    logger.error({ container: ref.name, reason: why }, `SESSIONS SHARE THEIR CONTAINER'S NETWORK: BROKER_SESSION_NETWORK is ${this.policy}, but this container cannot give its sessions networks of their own as that asks`);
  }
}

/** The session init's `net` request, by the copy the spawner made or the pipes directory's. */
const NET_CHANGE = `for i in ${SESSION_INIT_COPY} ${FIFO_MOUNT}/${SESSION_INIT_NAME}; do [[ -f $i ]] && exec "$i" net "$1" "$2"; done
builtin echo 'no session init in this container' >&2; builtin exit 108`;

/** A change the session's state refuses (409, as another execute on it would be). */
function conflict(detail: string): BrokerError {
  return new BrokerError('busy', 'network_unchangeable', detail);
}

/** Runs `cmd` in the container; its exit code and stderr. */
async function execInContainer(container: Dockerode.Container, cmd: string[]): Promise<{ exitCode: number; stderr: string }> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: false, WorkingDir: '/' });
  const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
  let stderr = '';
  const demux = new DockerDemuxer((which, chunk) => {
    if (which === 'stderr') stderr = (stderr + chunk.toString('utf8')).slice(0, 4096);
  });
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (c: Buffer) => demux.push(c));
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  const { ExitCode } = await exec.inspect();
  return { exitCode: ExitCode ?? -1, stderr };
}
