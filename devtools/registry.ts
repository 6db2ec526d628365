/**
 * A private image registry for tests, scripts and the bench: Debian's docker-registry (the reference
 * registry, distribution v2), run by scripts/registry.sh on a free loopback port with a directory of
 * its own (config, storage, log, pid file, htpasswd). Plain HTTP: an engine pulls from 127.0.0.1
 * without any insecure-registries setting. Optional basic auth (htpasswd).
 *
 * `stop()` ends the process and keeps its storage (a test of a registry that goes away, and comes
 * back on the same address with `run()`); `destroy()` ends it and removes its directory. Each
 * directory records its owner (pid and start time): `sweepAbandonedRegistries()` takes down those
 * of a test process that died, and this process's exit kills what it has not destroyed.
 *
 * Images: taskImage.ts builds and pushes them (pushTaskImage), removes them from an engine
 * (removeImage) and pulls them (pullImage).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from './freePort';
import { startTimeOf } from './procs';

const SCRIPT = path.join(__dirname, '..', 'scripts', 'registry.sh');
/** A test's registry lives in `<tmp>/<this><owner pid>-<random>`. */
export const TEST_REGISTRY_PREFIX = 'bash-broker-registry-t';
const OWNER_FILE = 'owner.json';

export interface RegistryAuth {
  username: string;
  password: string;
}

/** What a client of a registry needs: its address, and its credentials if it has any. */
export interface RegistryRef {
  /** `127.0.0.1:<port>`: an image of it is `<address>/<repository>:<tag>`. */
  readonly address: string;
  readonly auth: RegistryAuth | null;
  /** A Docker CLI configuration directory (DOCKER_CONFIG) holding its credentials; null without auth. */
  readonly dockerConfig: string | null;
}

/** The programs a registry needs that PATH lacks (.ci/run installs them: docker-registry, skopeo, apache2-utils). */
export function missingRegistryTools(): string[] {
  return ['docker-registry', 'skopeo', 'htpasswd', 'curl'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
}

const live = new Set<TestRegistry>();
process.once('exit', () => {
  // A suite that failed before its afterAll, or a forced exit: no registry outlives its test process.
  for (const registry of live) registry.killNow();
});

export class TestRegistry implements RegistryRef {
  readonly dockerConfig: string | null;

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly auth: RegistryAuth | null,
  ) {
    this.dockerConfig = auth ? path.join(dir, 'docker') : null;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** The reference of `repository:tag` in this registry. */
  ref(repository: string, tag = 'latest'): string {
    return `${this.address}/${repository}:${tag}`;
  }

  /** Starts one on a free port (chosen again if another process took it before the registry's bind). */
  static async start(options: { auth?: RegistryAuth } = {}): Promise<TestRegistry> {
    const missing = missingRegistryTools();
    if (missing.length > 0) throw new Error(`a test registry needs ${missing.join(', ')} on PATH (.ci/run installs them)`);
    await sweepAbandonedRegistries();
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${TEST_REGISTRY_PREFIX}${process.pid}-`));
      fs.writeFileSync(path.join(dir, OWNER_FILE), JSON.stringify({ pid: process.pid, start: startTimeOf(process.pid) }));
      const registry = new TestRegistry(dir, await freePort(), options.auth ?? null);
      try {
        if (registry.auth && registry.dockerConfig) writeDockerConfig(registry.dockerConfig, registry.address, registry.auth);
        await registry.run();
        live.add(registry);
        return registry;
      } catch (err) {
        lastError = err;
        await registry.destroy();
      }
    }
    throw lastError;
  }

  /** (Re)starts the registry on its port and storage; resolves once it answers. */
  async run(): Promise<void> {
    await this.script('start');
  }

  /** Ends the registry process (SIGTERM, then SIGKILL after 10 s); its storage stays. */
  async stop(): Promise<void> {
    await this.script('stop');
  }

  get running(): boolean {
    return this.pid() !== null;
  }

  /** Stops it and removes its directory. */
  async destroy(): Promise<void> {
    live.delete(this);
    await this.stop().catch(() => this.killNow());
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** Whether the registry has `repository:tag` (a manifest HEAD, with its credentials). */
  async has(repository: string, tag = 'latest'): Promise<boolean> {
    return registryHas(this, repository, tag);
  }

  /**
   * Freezes the registry process (SIGSTOP): its connections stay open and answer nothing, so a pull
   * waits, neither done nor failed, until `resume`. What a test needs to have several acquires join
   * one pull whatever the machine's speed.
   */
  pause(): void {
    const pid = this.pid();
    if (pid === null) throw new Error('the registry is not running');
    process.kill(pid, 'SIGSTOP');
  }

  resume(): void {
    const pid = this.pid();
    if (pid !== null) process.kill(pid, 'SIGCONT');
  }

  /** Synchronous: for the exit hook, where nothing asynchronous runs any more. */
  killNow(): void {
    const pid = this.pid();
    if (pid !== null) process.kill(pid, 'SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private pid(): number | null {
    return registryPid(this.dir);
  }

  private async script(command: 'start' | 'stop'): Promise<void> {
    const env: NodeJS.ProcessEnv = { ...process.env, REGISTRY_DIR: this.dir, REGISTRY_PORT: String(this.port) };
    delete env.REGISTRY_USER;
    delete env.REGISTRY_PASSWORD;
    if (this.auth) Object.assign(env, { REGISTRY_USER: this.auth.username, REGISTRY_PASSWORD: this.auth.password });
    try {
      await promisify(execFile)('bash', [SCRIPT, command], { env, timeout: 30_000 });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`registry.sh ${command} (${this.dir}): ${e.stderr?.trim() || e.message}`, { cause: err });
    }
  }
}

/** The registry process of directory `dir` while it runs (its pid file, checked against its command line). */
function registryPid(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'registry.pid'), 'utf8').trim());
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return null;
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(`${dir}/config.yml`) ? pid : null;
  } catch {
    return null;
  }
}

/** Kills the registries of test processes that are gone and removes their directories; those directories. */
export async function sweepAbandonedRegistries(parent = os.tmpdir()): Promise<string[]> {
  const swept: string[] = [];
  for (const name of fs.readdirSync(parent).filter((n) => n.startsWith(TEST_REGISTRY_PREFIX))) {
    const dir = path.join(parent, name);
    let owner: { pid: number; start: string | null };
    try {
      owner = JSON.parse(fs.readFileSync(path.join(dir, OWNER_FILE), 'utf8')) as typeof owner;
    } catch {
      continue; // being made right now
    }
    if (startTimeOf(owner.pid) === owner.start) continue;
    const pid = registryPid(dir);
    if (pid !== null) process.kill(pid, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    swept.push(dir);
  }
  return swept;
}

/** Writes a Docker CLI configuration directory (for DOCKER_CONFIG) that holds `auth` for `address`. */
export function writeDockerConfig(dir: string, address: string, auth: RegistryAuth): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const encoded = Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ auths: { [address]: { auth: encoded } } }), { mode: 0o600 });
}

/** The Authorization header of a registry's credentials, if it has any. */
export function basicAuthHeader(auth: RegistryAuth | null): Record<string, string> {
  return auth ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` } : {};
}

/** Whether `registry` has `repository:tag`: a HEAD of its manifest (any schema the registry stores). */
export async function registryHas(registry: RegistryRef, repository: string, tag: string): Promise<boolean> {
  const accept = [
    'application/vnd.docker.distribution.manifest.v2+json',
    'application/vnd.docker.distribution.manifest.list.v2+json',
    'application/vnd.oci.image.manifest.v1+json',
    'application/vnd.oci.image.index.v1+json',
  ].join(', ');
  const r = await fetch(`http://${registry.address}/v2/${repository}/manifests/${tag}`, {
    method: 'HEAD',
    headers: { accept, ...basicAuthHeader(registry.auth) },
    signal: AbortSignal.timeout(10_000),
  });
  if (r.status === 200) return true;
  if (r.status === 404) return false;
  throw new Error(`registry ${registry.address}: HEAD ${repository}:${tag} answered ${r.status}`);
}
