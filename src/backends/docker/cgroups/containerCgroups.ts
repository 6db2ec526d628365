/**
 * Where a container's sessions get cgroups of their own on the engine's host: their pids limit
 * (sessionPids.ts), and their CPU and memory accounting and limits (sessionUsage.ts). Each is said
 * once when the host cannot give it (in the log; the limits also in /health).
 */
import { logger } from '../../../common/logger';
import type { BrokerConfig } from '../../../config/config';
import type { SessionLimitsReport } from '../../../core/ports/sessionNetworks';
import { ContainerPids, readPidsMount } from './sessionPids';
import { ContainerUsage, readUsageMounts, type UsageMounts } from './sessionUsage';

export class ContainerCgroups {
  /** The host's cgroup v1 pids mount, when per-session pids limits are wanted; see sessionPids.ts. */
  private readonly pidsMount: string | null;
  /** Whether the first container's answer about per-session pids limits was logged. */
  private pidsLogged = false;
  /** Why sessions lack their memory and CPU limits (null: they have them), as the last container showed; logged once. */
  private limitRefusal: string | null = null;
  private limitsLogged = false;
  /** The host's cgroup v1 cpuacct, memory and cpu mounts (sessionUsage.ts), read once. */
  private readonly usageMounts: UsageMounts = readUsageMounts();

  constructor(private readonly options: Pick<BrokerConfig['docker'], 'sessionPidsLimit' | 'pidsLimit' | 'sessionLimits'>) {
    this.pidsMount = options.sessionPidsLimit > 0 ? readPidsMount() : null;
  }

  limitsReport(): SessionLimitsReport {
    return { ...this.options.sessionLimits, refusal: this.limitRefusal };
  }

  /** The container's per-session cpuacct, memory and cpu cgroups (their limits: sessionUsage.ts); why not, said once. */
  usage(containerId: string): ContainerUsage | null {
    const usage = ContainerUsage.locate(this.usageMounts, containerId, this.options.sessionLimits);
    const refusal = usage ? usage.limitRefusal() : 'no cgroup v1 hierarchy holds the container\'s cgroup (cgroup v2, or a broker not on the engine\'s host)';
    this.limitRefusal = refusal;
    if (refusal && !this.limitsLogged) logger.warn(`per-session memory and CPU limits are off: ${refusal}; one session's memory hog or CPU burner weighs on its neighbours`);
    this.limitsLogged = true;
    return usage;
  }

  /** The container's per-session pids cgroups, or null (said once, with the reason). */
  pids(containerId: string): ContainerPids | null {
    const max = this.options.sessionPidsLimit;
    if (max <= 0) return null;
    const pids = ContainerPids.locate(this.pidsMount, containerId, max);
    if (!this.pidsLogged) {
      this.pidsLogged = true;
      if (typeof pids === 'string') logger.warn(`per-session pids limits are off: ${pids}; a fork bomb can take the forks of its container's other sessions`);
      else logger.info({ sessionPidsLimit: max, containerPidsLimit: this.options.pidsLimit }, 'per-session pids limits are on');
    }
    return typeof pids === 'string' ? null : pids;
  }
}
