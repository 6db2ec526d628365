/**
 * A container's CPU and memory, for execd's /metrics: from the container's own cgroup on the
 * engine's host (cgroupUsage.ts, found through its init process's /proc/<pid>/cgroup), a few file
 * reads. Where the broker cannot see the engine's /proc (it runs in a container of its own, or talks
 * to a remote engine), the engine's stats API reads the same cgroup for it (one round trip).
 */
import type Dockerode from 'dockerode';
import fs from 'node:fs';
import os from 'node:os';
import type { ContainerRef, ResourceMeter, ResourceSample } from '../../../core/ports/backend';
import { BackendError, errorMessage } from '../../../common/errors';
import { cgroupDirs, hostCpus, readCgroupUsage, type CgroupDirs } from '../../cgroupUsage';
import { readMountinfo } from './mountinfo';

interface Located {
  /** null: the broker cannot see this container's cgroup; the stats API stands in. */
  dirs: CgroupDirs | null;
  /** The container's CPU limit (NanoCpus), null without one. */
  limitCpus: number | null;
}

interface EngineStats {
  cpu_stats?: { cpu_usage?: { total_usage?: number }; online_cpus?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
}

export class DockerMeter implements ResourceMeter {
  /** By container id: where its cgroup is does not change while it runs. */
  private readonly located = new Map<string, Promise<Located>>();

  constructor(private readonly docker: Dockerode) {}

  async sample(ref: ContainerRef): Promise<ResourceSample> {
    const at = await this.locate(ref);
    if (at.dirs) {
      try {
        const usage = readCgroupUsage(at.dirs);
        return {
          scope: 'container cgroup',
          cpuCount: at.limitCpus ?? usage.quotaCpus ?? hostCpus(),
          cpuUsageUs: usage.cpuUsageUs,
          memoryLimitBytes: usage.memoryLimitBytes ?? os.totalmem(),
          memoryUsedBytes: usage.memoryUsedBytes ?? 0,
        };
      } catch {
        this.located.delete(ref.id); // restarted, or removed: look again (or fail) below
        return this.engineSample(ref, at.limitCpus);
      }
    }
    return this.engineSample(ref, at.limitCpus);
  }

  /** Forgets a removed container. */
  forget(containerId: string): void {
    this.located.delete(containerId);
  }

  private locate(ref: ContainerRef): Promise<Located> {
    let found = this.located.get(ref.id);
    if (!found) {
      found = this.find(ref);
      this.located.set(ref.id, found);
      found.catch(() => this.located.delete(ref.id));
    }
    return found;
  }

  private async find(ref: ContainerRef): Promise<Located> {
    let info: Dockerode.ContainerInspectInfo;
    try {
      info = await this.docker.getContainer(ref.id).inspect();
    } catch (err) {
      throw new BackendError(`cannot measure container ${ref.name}: ${errorMessage(err)}`);
    }
    const nano = info.HostConfig?.NanoCpus ?? 0;
    const limitCpus = nano > 0 ? nano / 1e9 : null;
    let procCgroup: string;
    try {
      procCgroup = fs.readFileSync(`/proc/${info.State.Pid}/cgroup`, 'latin1');
    } catch {
      return { dirs: null, limitCpus };
    }
    const dirs = cgroupDirs(procCgroup, readMountinfo());
    return { dirs: dirs.cpu ? dirs : null, limitCpus };
  }

  private async engineSample(ref: ContainerRef, limitCpus: number | null): Promise<ResourceSample> {
    let stats: EngineStats;
    try {
      const options = { stream: false, 'one-shot': true } as unknown as { stream: false };
      stats = (await this.docker.getContainer(ref.id).stats(options)) as EngineStats;
    } catch (err) {
      throw new BackendError(`cannot measure container ${ref.name}: ${errorMessage(err)}`);
    }
    const mem = stats.memory_stats ?? {};
    const inactive = mem.stats?.total_inactive_file ?? mem.stats?.inactive_file ?? 0;
    return {
      scope: 'container cgroup (engine stats API)',
      cpuCount: limitCpus ?? stats.cpu_stats?.online_cpus ?? hostCpus(),
      cpuUsageUs: (stats.cpu_stats?.cpu_usage?.total_usage ?? 0) / 1000,
      memoryLimitBytes: mem.limit ?? os.totalmem(),
      memoryUsedBytes: Math.max(0, (mem.usage ?? 0) - inactive),
    };
  }
}
