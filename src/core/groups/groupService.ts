/**
 * The group service of sandbox groups: one sandbox group at a time, its database, and its sandboxes, each
 * a dedicated container with enforced limits, its tools, a terminal, and a Sandbox API on a port
 * of its own. No HTTP and no Docker here: containers come through the containers' port (`{ kind: 'group' }`)
 * (null on a backend without them: 501), listeners through GroupEndpoints, the database engine
 * through a VectorStoreOpener.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BrokerError, brokerError, errorMessage, ShuttingDownError } from '../../common/errors';
import { nodeScopedId } from '../../common/ids';
import { logger } from '../../common/logger';
import { hostCapacity, resolveCompute, type ComputeDefaults, type ResolvedCompute, type SandboxLimits } from './computeLimits';
import { GroupDatabase, type DatabaseGrant } from './groupDatabase';
import { loadPopulation } from './populationConfig';
import type { ContainerStarts, SocketForward } from '../ports/containers';
import type { SessionBackend } from '../ports/backend';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import type { VectorStoreOpener } from '../ports/vectorStore';
import { GroupSandbox, type SandboxTimings } from './groupSandbox';
import { PortInUseError, type Closable, type GroupEndpoints } from '../ports/groupEndpoints';
import { Group, type RunningSandbox } from './group';
import { readTools, type GroupStartRequest, type SandboxStartRequest, type Tools } from './requests';
import { TOOL_RUNNER_FILE, TOOL_RUNNER_PY } from './toolRunner';

export class NeedsDockerError extends brokerError('not_implemented', 'needs_docker', (backend: string) => `sandbox groups need the docker backend (BROKER_BACKEND=docker): each sandbox is a dedicated container with enforced limits, which the ${backend} backend cannot make`) {}

export class GroupConflictError extends BrokerError {
  constructor(detail: string, code = 'group_running') {
    super('busy', code, detail);
  }
}

export class SandboxNotFoundError extends brokerError('not_found', 'sandbox_not_found', (id: string) => `Sandbox not found: ${id}`) {}

export interface GroupServiceOptions {
  sandboxPorts: { first: number; last: number };
  /** Where groups keep their files on the host (BROKER_GROUP_DIR). */
  hostRoot: string;
  defaults: ComputeDefaults;
  timings: SandboxTimings;
  /** The broker's directory of live sandboxes, where each group sandbox is one while it runs. */
  directory?: SandboxDirectory;
}

export interface SandboxStarted {
  sandbox_url: string;
  limits: { cpu_cores: number; memory_bytes: number; disk_bytes: number; disk_enforcement: string };
  warnings: string[];
}

/** Where a sandbox reaches an attachment inside itself (its own loopback; the first one gets this port). */
const FIRST_FORWARD_PORT = 7700;

export class GroupService {
  private group: Group | null = null;
  /** A group start or stop under way: a second one is a 409, not a race. */
  private transition: Promise<unknown> | null = null;
  private closed = false;
  /** The sweep of what an earlier broker of this deployment left (once; a group start waits for it). */
  private swept: Promise<void> | null = null;

  private readonly containers: ContainerStarts | null;

  /**
   * `backend`: the one that starts the sandboxes' containers (and serves execd's shells in them), or
   * null on a backend that starts none (501).
   */
  constructor(
    private readonly backend: SessionBackend | null,
    private readonly openStore: VectorStoreOpener,
    private readonly endpoints: GroupEndpoints,
    private readonly options: GroupServiceOptions,
  ) {
    this.containers = backend?.containers ?? null;
  }

  async startGroup(request: GroupStartRequest): Promise<void> {
    const population = request.populationFile && request.database ? await loadPopulation(request.populationFile, request.database.namespaces) : null;
    if (request.populationFile && !request.database) throw new BrokerError('invalid', 'bad_request', "'initial_database_population_config' needs 'database_access' (a database to fill)");
    this.needContainers(); // 501 on a backend without containers, before anything else
    if (this.closed) throw new ShuttingDownError();
    if (this.group || this.transition) throw new GroupConflictError('a sandbox group is already running (or starting): POST /group/stop first');
    const id = nodeScopedId(randomBytes(6).toString('hex'));
    const hostDir = path.join(this.options.hostRoot, id);
    const start = (async () => {
      await this.sweepStale();
      await fs.mkdir(hostDir, { recursive: true, mode: 0o700 });
      let database: GroupDatabase | null = null;
      try {
        if (request.database) {
          const store = await this.openStore(path.join(hostDir, 'database'));
          database = new GroupDatabase(store, request.database);
          for (const [ns, docs] of population ?? []) await store.upsert(ns, docs);
        }
      } catch (err) {
        await database?.store.close().catch(() => undefined);
        await fs.rm(hostDir, { recursive: true, force: true });
        throw err;
      }
      this.group = new Group(id, hostDir, database, this.options.directory, this.backend);
    })();
    this.transition = start;
    try {
      await start;
    } finally {
      this.transition = null;
    }
  }

  /**
   * Removes what an earlier broker of this deployment left (a crash stops no group): its sandbox
   * containers, the mounts of their disks and its groups' directories. Once, from the broker's start
   * (and the first group start waits for it); a failure is logged, and the next group start tries again.
   */
  sweepStale(): Promise<void> {
    if (!this.containers) return Promise.resolve();
    const containers = this.containers;
    this.swept ??= (async () => {
      const removed = await containers.sweep({ kind: 'group', hostRoot: this.options.hostRoot });
      const dirs = await fs.readdir(this.options.hostRoot).catch(() => [] as string[]);
      await Promise.all(dirs.map((d) => fs.rm(path.join(this.options.hostRoot, d), { recursive: true, force: true })));
      if (removed + dirs.length > 0) logger.info({ containers: removed, directories: dirs.length }, 'removed the sandbox groups an earlier broker left');
    })().catch((err: unknown) => {
      this.swept = null;
      logger.warn({ err: errorMessage(err) }, 'sweeping the sandbox groups an earlier broker left failed');
    });
    return this.swept;
  }

  /** Stops the group and everything in it; without a group, nothing to do. */
  async stopGroup(): Promise<void> {
    while (this.transition) await this.transition.catch(() => undefined);
    const group = this.group;
    if (!group) return;
    this.group = null;
    const stop = group.stop();
    this.transition = stop;
    try {
      await stop;
    } finally {
      this.transition = null;
    }
  }

  async startSandbox(request: SandboxStartRequest): Promise<SandboxStarted> {
    // Bad input first (400, on any backend), then what the broker cannot do (501), then conflicts (409).
    const compute = resolveCompute(request.compute, await hostCapacity(this.options.hostRoot), this.options.defaults);
    const tools = await readTools(request.tools);
    const containers = this.needContainers();
    const group = this.group;
    if (!group || group.stopping) throw new GroupConflictError('no sandbox group is running: POST /group/start first', 'group_not_started');
    const grants = this.grants(group, request);
    if (group.sandboxes.has(request.id) || group.starting.has(request.id)) throw new GroupConflictError(`sandbox ${request.id} already exists`, 'sandbox_exists');
    group.starting.add(request.id);
    return group.track(this.launch(group, request, compute, tools, grants, containers));
  }

  /** The start itself: every step it took is undone if a later one fails (or the group stops meanwhile). */
  private async launch(group: Group, request: SandboxStartRequest, compute: ResolvedCompute, tools: Tools, grants: DatabaseGrant[], containers: ContainerStarts): Promise<SandboxStarted> {
    const undo: Closable[] = [];
    let port = -1;
    try {
      const hostDir = path.join(group.hostDir, 'sandboxes', request.id);
      const socketDir = grants.length > 0 ? path.join(hostDir, 'sockets') : null;
      if (socketDir) await fs.mkdir(socketDir, { recursive: true, mode: 0o755 });
      const forwards: SocketForward[] = [];
      const env: Record<string, string> = { SANDBOX_ID: request.id };
      for (const [i, grant] of grants.entries()) {
        // Named by position: a database's name is the user's and may be long (a socket's path is bounded).
        const hostSocketPath = path.join(socketDir!, `db${i}.sock`);
        undo.push(await this.endpoints.serveDatabase(grant, hostSocketPath));
        forwards.push({ name: grant.name, hostSocketPath, port: FIRST_FORWARD_PORT + i });
        Object.assign(env, attachmentEnv(grant, FIRST_FORWARD_PORT + i));
      }
      const files = [{ name: TOOL_RUNNER_FILE, content: Buffer.from(TOOL_RUNNER_PY) }, ...tools.files];
      const container = await containers.start({ kind: 'group', group: { sandboxId: request.id, groupId: group.id, limits: compute.limits, hostDir, files, socketDir, forwards, env } });
      undo.push({ close: () => container.remove() });
      const sandbox = new GroupSandbox(request.id, container, tools.names, this.options.timings);
      undo.push(sandbox);
      await sandbox.start();
      const listener = await this.listen(group, sandbox);
      port = listener.port;
      undo.push(listener.closable);
      if (group.stopping || this.group !== group) throw new GroupConflictError('the group was stopped while the sandbox started', 'group_not_started');
      const running: RunningSandbox = { sandbox, port, url: this.endpoints.sandboxUrl(port), listeners: [listener.closable, ...undo.slice(0, grants.length)] };
      group.admit(request.id, running);
      return { sandbox_url: running.url, limits: describeLimits(compute.limits, container.diskEnforcement), warnings: compute.warnings };
    } catch (err) {
      for (const step of undo.reverse()) await step.close().catch(() => undefined);
      if (port >= 0) group.ports.delete(port);
      throw err;
    } finally {
      group.starting.delete(request.id);
    }
  }

  /** A running sandbox of the running group `groupId` (its Sandbox API on the broker's own port), or 404. */
  sandbox(groupId: string, id: string): GroupSandbox {
    const group = this.group;
    const running = group?.id === groupId ? group.sandboxes.get(id) : undefined;
    if (!running) throw new SandboxNotFoundError(group?.id === groupId ? id : `${id} of group ${groupId}`);
    return running.sandbox;
  }

  /** The running group's id (a node's minted id names the node), or null. */
  get groupId(): string | null {
    return this.group?.id ?? null;
  }

  async stopSandbox(id: string): Promise<void> {
    const group = this.group;
    if (!group?.sandboxes.has(id)) throw new SandboxNotFoundError(id);
    await group.stopSandbox(id);
  }

  /**
   * The running group, in a line (the dashboard lists it before the sandboxes, which it finds in the
   * broker's directory); none: no group.
   */
  list(): { kind: string; id: string; detail: string }[] {
    const group = this.group;
    if (!group) return [];
    const state = group.stopping ? 'stopping' : `${group.sandboxes.size} sandbox(es), ${group.starting.size} starting`;
    return [{ kind: 'sandbox group', id: group.id, detail: state }];
  }

  /** The broker's shutdown: the group goes with it. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stopGroup();
  }

  private needContainers(): ContainerStarts {
    if (!this.containers) throw new NeedsDockerError('local');
    return this.containers;
  }

  private grants(group: Group, request: SandboxStartRequest): DatabaseGrant[] {
    if (request.attachments.size > 0 && !group.database) throw new BrokerError('invalid', 'bad_request', "'attached_databases' names a database, but the group was started without 'database_access'");
    return [...request.attachments].map(([name, access]) => group.database!.grant(name, access));
  }

  /** The first free port of the range: ours are skipped, someone else's is found by trying it. */
  private async listen(group: Group, sandbox: GroupSandbox): Promise<{ port: number; closable: Closable }> {
    const { first, last } = this.options.sandboxPorts;
    for (let port = first; port <= last; port++) {
      if (group.ports.has(port)) continue;
      group.ports.add(port);
      try {
        return { port, closable: await this.endpoints.serveSandbox(sandbox, port) };
      } catch (err) {
        group.ports.delete(port);
        if (!(err instanceof PortInUseError)) throw err;
      }
    }
    throw new BrokerError('unavailable', 'no_sandbox_port', `every port of BROKER_SANDBOX_PORTS (${first}-${last}) is taken; stop a sandbox or widen the range`);
  }
}

/** `<NAME>_URL` (inside the sandbox), `<NAME>_TOKEN`, `<NAME>_NAMESPACES`, `<NAME>_ACCESS`. */
function attachmentEnv(grant: DatabaseGrant, port: number): Record<string, string> {
  const prefix = grant.name.toUpperCase();
  return {
    [`${prefix}_URL`]: `http://127.0.0.1:${port}`,
    [`${prefix}_TOKEN`]: grant.token,
    [`${prefix}_NAMESPACES`]: grant.namespaces.join(','),
    [`${prefix}_ACCESS`]: grant.access,
  };
}

function describeLimits(limits: SandboxLimits, diskEnforcement: string): SandboxStarted['limits'] {
  return { cpu_cores: limits.cpuCores, memory_bytes: limits.memoryBytes, disk_bytes: limits.diskBytes, disk_enforcement: diskEnforcement };
}
