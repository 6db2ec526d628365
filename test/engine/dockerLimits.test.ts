/**
 * The parsing behind per-session pids limits (src/backends/docker/cgroups/sessionPids.ts; the real thing is
 * test/engine/sessionPids.test.ts) and the Docker containment settings' validation.
 * @backend any
 */
import { containerCgroupCandidates, innermostPid, pidsV1Mount } from '../../src/backends/docker/cgroups/sessionPids';
import { loadConfig } from '../../src/config/config';

describe('sessionPids parsing', () => {
  it('finds the cgroup v1 pids mount, and nothing on a cgroup v2 host or inside a container namespace', () => {
    const v1 = [
      '30 23 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '35 23 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    ].join('\n');
    expect(pidsV1Mount(v1)).toBe('/sys/fs/cgroup/pids');
    expect(pidsV1Mount('29 23 0:25 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate')).toBeNull();
    // A mount of only a sub-tree (a broker in a container) does not show containers' cgroups by their host paths.
    expect(pidsV1Mount('35 23 0:31 /docker/abc /sys/fs/cgroup/pids ro - cgroup cgroup rw,pids')).toBeNull();
    // Optional fields before the separator are skipped.
    expect(pidsV1Mount('35 23 0:31 / /cg/pids rw shared:9 master:2 - cgroup cgroup rw,pids')).toBe('/cg/pids');
  });

  it('names the cgroupfs and systemd drivers\' paths', () => {
    expect(containerCgroupCandidates('/m', 'abc')).toEqual(['/m/docker/abc', '/m/system.slice/docker-abc.scope']);
  });

  it('reads the innermost pid of NSpid', () => {
    expect(innermostPid('Name:\tbash\nNSpid:\t6790\t8\nNSpgid:\t1\n')).toBe(8);
    expect(innermostPid('Name:\tbash\nNSpid:\t6790\n')).toBe(6790);
    expect(innermostPid('Name:\tbash\n')).toBeNull();
  });
});

describe('BROKER_SESSION_PIDS_LIMIT', () => {
  it('defaults to a quarter of the container limit (at least 16), 0 turns it off, more than the container limit is refused', () => {
    expect(loadConfig({}).docker.sessionPidsLimit).toBe(256);
    expect(loadConfig({ BROKER_CONTAINER_PIDS_LIMIT: '32' }).docker.sessionPidsLimit).toBe(16);
    expect(loadConfig({ BROKER_SESSION_PIDS_LIMIT: '0' }).docker.sessionPidsLimit).toBe(0);
    expect(() => loadConfig({ BROKER_CONTAINER_PIDS_LIMIT: '64', BROKER_SESSION_PIDS_LIMIT: '65' })).toThrow(/must not exceed BROKER_CONTAINER_PIDS_LIMIT \(64\)/);
    expect(() => loadConfig({ BROKER_SESSION_PIDS_LIMIT: 'many' })).toThrow(/BROKER_SESSION_PIDS_LIMIT must be an integer/);
  });
});

describe('BROKER_CONTAINER_TMP_SIZE', () => {
  it('is off by default, takes a size, and must leave the container half its memory', () => {
    expect(loadConfig({}).docker.tmpBytes).toBe(0);
    expect(loadConfig({ BROKER_CONTAINER_TMP_SIZE: '0' }).docker.tmpBytes).toBe(0);
    expect(loadConfig({ BROKER_CONTAINER_TMP_SIZE: '256m' }).docker.tmpBytes).toBe(256 * 1024 * 1024);
    expect(() => loadConfig({ BROKER_CONTAINER_MEMORY: '256m', BROKER_CONTAINER_TMP_SIZE: '200m' })).toThrow(/at most half of BROKER_CONTAINER_MEMORY/);
    expect(() => loadConfig({ BROKER_CONTAINER_TMP_SIZE: 'lots' })).toThrow(/must be a size like 512m/);
  });
});
