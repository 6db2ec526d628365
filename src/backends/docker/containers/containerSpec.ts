/**
 * What a session container is made of: image, entrypoint, labels and limits, as the engine's create
 * options. Pure: no engine call here.
 */
import type Dockerode from 'dockerode';
import type { BrokerConfig } from '../../../config/config';
import { spawnerScript } from '../shells/fifoSpawner';
import { containerLabels, LABEL_DEPLOYMENT } from './labels';

export type ContainerSpecOptions = Pick<
  BrokerConfig['docker'],
  'image' | 'deployment' | 'cpus' | 'memoryBytes' | 'pidsLimit' | 'networkMode' | 'tmpBytes'
> & {
  /** Per-lease isolation (isolation/isolationScript.ts); absent: off. */
  isolation?: BrokerConfig['docker']['isolation'];
  /** A named pool's environment (BROKER_POOLS): every process in the container gets it. */
  env?: Readonly<Record<string, string>>;
};

/** `bind`: the pipes' directory to mount (fifo transport), or null. */
export function containerCreateOptions(
  name: string,
  options: ContainerSpecOptions,
  instance: string,
  bind: string | null,
  abortSignal: AbortSignal,
): Dockerode.ContainerCreateOptions & { abortSignal: AbortSignal } {
  return {
    abortSignal,
    name,
    Image: options.image,
    // Only bash is required of the image. Its entrypoint spawns shells on the broker's pipes, or
    // (without them) idles reading a stdin that stays open.
    Entrypoint: ['bash', '-c', spawnerScript(options.isolation)],
    Cmd: [],
    OpenStdin: true,
    Tty: false,
    Env: options.env ? Object.entries(options.env).map(([k, v]) => `${k}=${v}`) : undefined,
    Labels: containerLabels(options.deployment, 'pool', instance),
    HostConfig: {
      // An init as pid 1 reaps the orphans the cleanup kills; with the entrypoint bash as pid 1
      // they stayed zombies for good.
      Init: true,
      NanoCpus: Math.round(options.cpus * 1e9),
      Memory: options.memoryBytes,
      PidsLimit: options.pidsLimit,
      NetworkMode: options.networkMode,
      // Isolation: the spawner mounts each session's root and makes its network; the sessions' shells drop these capabilities.
      CapAdd: options.isolation?.enabled ? ['SYS_ADMIN', ...(options.isolation.network !== 'shared' ? ['NET_ADMIN'] : [])] : undefined,
      Binds: bind ? [bind] : undefined,
      Mounts: options.tmpBytes > 0 ? [tmpVolume(options.tmpBytes, options.deployment)] : undefined,
    },
  };
}

/**
 * /tmp (the working directories) on a tmpfs of its own size, so a disk filler gets ENOSPC there
 * instead of filling the engine's disk. An anonymous volume of the local driver rather than
 * HostConfig.Tmpfs: putArchive (files on acquire) cannot write into a container's tmpfs mounts,
 * but does into its volumes. Removed with the container (`v: true`).
 */
export function tmpVolume(sizeBytes: number, deployment: string): Dockerode.MountSettings {
  return {
    Type: 'volume',
    Source: '', // anonymous: one per container, removed with it
    Target: '/tmp',
    VolumeOptions: {
      NoCopy: true,
      Labels: { [LABEL_DEPLOYMENT]: deployment },
      DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs', o: `size=${sizeBytes},mode=1777` } },
    },
  };
}
