/**
 * Per-lease isolation of the docker backend's sessions (BROKER_SESSION_ISOLATION,
 * BROKER_SESSION_DISK_BYTES, BROKER_SESSION_SHARED_PATHS, BROKER_SESSION_NETWORK): each session's
 * bash sees an overlay of its container's root with a private upper layer, dropped at release, and
 * has a network namespace of its own (docs/isolation.md).
 */
import { isIP } from 'node:net';
import { bytes, ConfigError, flag, type Env } from './envValues';

export interface IsolationConfig {
  /** Each session in a mount namespace of its own over its container's root (docker; BROKER_SESSION_ISOLATION, on unless `0`). */
  enabled: boolean;
  /** BROKER_SESSION_ISOLATION was set: the local backend, which cannot isolate, says so only then (not for the default). */
  asked: boolean;
  /** The size of each session's private tmpfs (its upper layer, /dev/shm), bytes: past it, ENOSPC. */
  diskBytes: number;
  /** Container paths every session of the container shares on purpose (a package cache); none by default. */
  sharedPaths: string[];
  /**
   * BROKER_SESSION_NETWORK (or a pool's `network`): each session's network. `full` (the default): a
   * namespace of its own reaching what its container reaches; `none`: its own loopback alone;
   * `shared`: its container's network, as without isolation (no namespace, no policy to change).
   */
  network: SessionNetwork;
  /**
   * BROKER_EGRESS_DNS: the DNS servers (`address` or `address:port`, comma-separated) that sessions
   * with egress rules have their names resolved by (docs/network.md); empty: the broker's own.
   */
  egressDns: string[];
  /**
   * BROKER_SESSION_REWIND (on unless `0`): the release of a lease that changed only its view (files,
   * IPC objects) rolls the view back to the image's in the session's own namespaces (isolation/
   * sessionRewind.c); off: such a release starts a new session in new namespaces.
   */
  rewind?: boolean;
}

export const SESSION_NETWORKS = ['full', 'none', 'shared'] as const;
export type SessionNetwork = (typeof SESSION_NETWORKS)[number];

/** A session network's name, or null for anything else. */
export function sessionNetwork(raw: unknown): SessionNetwork | null {
  return SESSION_NETWORKS.find((n) => n === raw) ?? null;
}

/** Paths a session must never share: its own view of the kernel, its devices, the working directories. */
const NOT_SHARABLE = /^\/(proc|sys|dev|tmp\/s)(\/|$)/;

/**
 * `containerMemoryBytes`: a session's tmpfs pages are charged to its container's memory, so its size
 * is held to half of it (a quarter by default, at most 1 GiB): past it the session's writes get
 * ENOSPC before the OOM killer picks one of the container's processes.
 */
export function loadIsolationConfig(env: Env, containerMemoryBytes = 1024 ** 3): IsolationConfig {
  const sharedPaths = (env.BROKER_SESSION_SHARED_PATHS ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of sharedPaths) {
    // Written into the container's mount table as is: no spaces, no '..', nothing a shell would read.
    if (!/^(\/[A-Za-z0-9_.-]+)+$/.test(p) || p.split('/').includes('..') || NOT_SHARABLE.test(p)) {
      throw new ConfigError(`BROKER_SESSION_SHARED_PATHS: '${p}' must be an absolute path of letters, digits, '_', '.' and '-', not '/', nor under /proc, /sys, /dev or /tmp/s`);
    }
  }
  const diskBytes = bytes(env, 'BROKER_SESSION_DISK_BYTES', Math.min(1024 ** 3, Math.floor(containerMemoryBytes / 4)), { minBytes: 1024 * 1024 });
  if (diskBytes > containerMemoryBytes / 2) {
    throw new ConfigError(`BROKER_SESSION_DISK_BYTES must be at most half of BROKER_CONTAINER_MEMORY (${containerMemoryBytes} bytes): a session's files are charged to its container's memory`);
  }
  const asked = (env.BROKER_SESSION_ISOLATION ?? '').trim() !== '';
  const rawNetwork = (env.BROKER_SESSION_NETWORK ?? '').trim() || 'full';
  const network = sessionNetwork(rawNetwork);
  if (!network) throw new ConfigError(`BROKER_SESSION_NETWORK must be one of ${SESSION_NETWORKS.join(', ')}, got '${rawNetwork}'`);
  const egressDns = (env.BROKER_EGRESS_DNS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const server of egressDns) {
    const [address, port, extra] = server.split(':');
    if (isIP(address ?? '') !== 4 || extra !== undefined || (port !== undefined && !/^\d{1,5}$/.test(port))) throw new ConfigError(`BROKER_EGRESS_DNS: '${server}' must be an IPv4 address, with ':port' or not`);
  }
  // On by default: a lease's writes are its own unless the deployment says otherwise (`0`).
  return { enabled: flag(env, 'BROKER_SESSION_ISOLATION', true), asked, diskBytes, sharedPaths, network, egressDns, rewind: flag(env, 'BROKER_SESSION_REWIND', true) };
}
