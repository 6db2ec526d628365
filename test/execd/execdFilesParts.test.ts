/**
 * Pure parts of execd's files and metrics: Range and mode parsing, byte-wise replace, and where a
 * cgroup's counters are on cgroup v1, v2 and the hybrid layout (over a directory tree laid out as
 * each kernel lays out its cgroup filesystems).
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { offsetLimitRange, parseMode, parseRange, modeAsDecimalDigits } from '../../src/core/execd/execdPaths';
import { replaceAll } from '../../src/core/execd/execdFiles';
import { report } from '../../src/core/execd/execdMetrics';
import { cgroupDirs, readCgroupUsage } from '../../src/backends/cgroupUsage';
import type { MountEntry } from '../../src/backends/docker/cgroups/mountinfo';

describe('Range', () => {
  it('reads one bytes range: closed, open, suffix; a last byte past the end is cut', () => {
    expect(parseRange('bytes=2-5', 10)).toEqual({ offset: 2, length: 4, partial: true });
    expect(parseRange('bytes=7-', 10)).toEqual({ offset: 7, length: 3, partial: true });
    expect(parseRange('bytes=-3', 10)).toEqual({ offset: 7, length: 3, partial: true });
    expect(parseRange('bytes=-30', 10)).toEqual({ offset: 0, length: 10, partial: true });
    expect(parseRange('bytes=8-100', 10)).toEqual({ offset: 8, length: 2, partial: true });
    expect(parseRange(undefined, 10)).toEqual({ offset: 0, length: 10, partial: false });
    expect(parseRange('bytes=0-1,4-5', 10)).toEqual({ offset: 0, length: 10, partial: false });
  });

  it('refuses with 416 what the file cannot satisfy or what is no byte range', () => {
    for (const bad of ['bytes=10-', 'bytes=5-2', 'bytes=-0', 'items=1-2', 'bytes=x-', 'bytes=0-0']) {
      const size = bad === 'bytes=0-0' ? 0 : 10;
      expect(() => parseRange(bad, size)).toThrow(expect.objectContaining({ kind: 'unsatisfiable', headers: { 'Content-Range': `bytes */${size}` } }));
    }
  });

  it("takes the SDK's offset and limit as a range", () => {
    expect(offsetLimitRange('2', '3', 10)).toEqual({ offset: 2, length: 3, partial: true });
    expect(offsetLimitRange('8', null, 10)).toEqual({ offset: 8, length: 2, partial: true });
    expect(offsetLimitRange(null, null, 10)).toBeNull();
    expect(() => offsetLimitRange('11', null, 10)).toThrow(expect.objectContaining({ kind: 'unsatisfiable' }));
    expect(() => offsetLimitRange('-1', null, 10)).toThrow(expect.objectContaining({ kind: 'invalid' }));
  });
});

describe('mode', () => {
  it("reads OpenSandbox's octal digits written as an integer, and writes them back", () => {
    expect(parseMode(755, 'm')).toBe(0o755);
    expect(parseMode(1777, 'm')).toBe(0o1777);
    expect(parseMode('600', 'm')).toBe(0o600);
    for (const bad of [758, 77777, -1, 7.5, null, '']) expect(() => parseMode(bad, 'm')).toThrow(/octal/);
    expect(modeAsDecimalDigits(0o4755)).toBe(4755);
    expect(modeAsDecimalDigits(0o644)).toBe(644);
  });
});

describe('replaceAll', () => {
  it('replaces every occurrence byte for byte and counts them', () => {
    const r = replaceAll(Buffer.from('a-b-c'), Buffer.from('-'), Buffer.from('::'));
    expect([r.replaced.toString(), r.count]).toEqual(['a::b::c', 2]);
    const bin = replaceAll(Buffer.from([0xff, 0, 0xff]), Buffer.from([0xff]), Buffer.from([1, 2]));
    expect([...bin.replaced]).toEqual([1, 2, 0, 1, 2]);
    expect(replaceAll(Buffer.from('aaa'), Buffer.from('aa'), Buffer.from('b')).count).toBe(1);
  });
});

describe('metrics report', () => {
  it('is CPU time over wall time over CPUs, capped at 100, and never negative', () => {
    const sample = (cpuUsageUs: number) => ({ scope: 's', cpuCount: 2, cpuUsageUs, memoryLimitBytes: 1024 ** 3, memoryUsedBytes: 256 * 1024 ** 2 });
    const r = report({ sample: sample(0), atMs: 1000 }, { sample: sample(1_000_000), atMs: 2000 });
    expect(r).toEqual({ cpu_count: 2, cpu_used_pct: 50, mem_total_mib: 1024, mem_used_mib: 256, timestamp: 2000, scope: 's' });
    expect(report({ sample: sample(5), atMs: 0 }, { sample: sample(1), atMs: 10 }).cpu_used_pct).toBe(0);
  });
});

describe('cgroup counters on every layout', () => {
  let root: string;
  beforeEach(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'cgroup-layout-'))));
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const put = (dir: string, files: Record<string, string>): void => {
    fs.mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  };
  const v1 = (name: string, mountRoot = '/'): MountEntry => ({ root: mountRoot, mountPoint: path.join(root, name), fstype: 'cgroup', superOptions: ['rw', ...name.split(',')] });
  const v2 = (at: string): MountEntry => ({ root: '/', mountPoint: path.join(root, at), fstype: 'cgroup2', superOptions: ['rw'] });

  it('v1 (and hybrid: v1 controllers win over an empty cgroup2)', () => {
    put(path.join(root, 'cpuacct/docker/c1'), { 'cpuacct.usage': '5000000000' });
    put(path.join(root, 'cpu/docker/c1'), { 'cpu.cfs_quota_us': '50000', 'cpu.cfs_period_us': '100000' });
    put(path.join(root, 'memory/docker/c1'), { 'memory.usage_in_bytes': String(300 * 1024 ** 2), 'memory.limit_in_bytes': String(512 * 1024 ** 2), 'memory.stat': 'cache 1\ntotal_inactive_file 104857600\n' });
    put(path.join(root, 'unified/docker/c1'), { 'cpu.stat': 'usage_usec 1\n' });
    const proc = '12:memory:/docker/c1\n4:cpu:/docker/c1\n3:cpuacct:/docker/c1\n0::/docker/c1\n';
    const dirs = cgroupDirs(proc, [v1('cpu'), v1('cpuacct'), v1('memory'), v2('unified')]);
    expect(dirs.cpu?.version).toBe(1);
    expect(readCgroupUsage(dirs)).toEqual({ cpuUsageUs: 5_000_000, quotaCpus: 0.5, memoryUsedBytes: 200 * 1024 ** 2, memoryLimitBytes: 512 * 1024 ** 2 });
  });

  it('v2, with "max" as no limit, and a mount whose root is a group (a cgroup namespace)', () => {
    put(path.join(root, 'fs/c2'), { 'cpu.stat': 'usage_usec 7000\nuser_usec 1\n', 'cpu.max': 'max 100000', 'memory.current': '4096', 'memory.max': 'max', 'memory.stat': 'inactive_file 1024\n' });
    const dirs = cgroupDirs('0::/ns/c2\n', [{ root: '/ns', mountPoint: path.join(root, 'fs'), fstype: 'cgroup2', superOptions: [] }]);
    expect(readCgroupUsage(dirs)).toEqual({ cpuUsageUs: 7000, quotaCpus: null, memoryUsedBytes: 3072, memoryLimitBytes: null });
  });

  it('a v1 unlimited memory, and a v2 group without the memory controller', () => {
    put(path.join(root, 'cpu,cpuacct/g'), { 'cpuacct.usage': '1000', 'cpu.cfs_quota_us': '-1', 'cpu.cfs_period_us': '100000' });
    put(path.join(root, 'memory/g'), { 'memory.usage_in_bytes': '10', 'memory.limit_in_bytes': '9223372036854771712', 'memory.stat': '' });
    const usage = readCgroupUsage(cgroupDirs('3:cpu,cpuacct:/g\n2:memory:/g\n', [v1('cpu,cpuacct'), v1('memory')]));
    expect(usage).toEqual({ cpuUsageUs: 1, quotaCpus: null, memoryUsedBytes: 10, memoryLimitBytes: null });
    put(path.join(root, 'u/g'), { 'cpu.stat': 'usage_usec 3\n' });
    const bare = cgroupDirs('0::/g\n', [v2('u')]);
    expect([bare.memory, readCgroupUsage(bare).memoryUsedBytes]).toEqual([null, null]);
  });
});
