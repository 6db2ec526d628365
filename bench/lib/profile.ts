/** Top self-time functions of a V8 .cpuprofile (what `node --cpu-prof` writes on exit). */
import fs from 'node:fs';
import path from 'node:path';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileEntry {
  fn: string;
  where: string;
  selfMs: number;
  /** Share of the busy time (idle excluded). */
  pct: number;
}

export interface ProfileSummary {
  file: string;
  busyMs: number;
  idleMs: number;
  gcPct: number;
  top: ProfileEntry[];
  /** Self time by where the code lives, % of busy. */
  areas: Record<string, number>;
}

/** Which layer a function belongs to: the broker, Node's core, a dependency, native code, GC. */
function area(fn: string, where: string): string {
  if (fn === '(garbage collector)') return 'GC';
  if (fn.startsWith('(')) return 'V8 (program)';
  if (!where) return 'native (syscalls: writev, writeUtf8String, spawn, ...)';
  if (where.startsWith('dist/')) return 'broker code (dist/)';
  if (where.startsWith('node:')) return 'node core (http, net, streams, events, child_process)';
  return `dependency: ${where.split('/')[0]}`;
}

function shortUrl(url: string, repoDir: string): string {
  const file = url.replace(/^file:\/\//, '');
  if (file.startsWith(repoDir)) return path.relative(repoDir, file).replace(/^node_modules\//, '');
  return file || '(native)';
}

export function summarizeProfile(file: string, repoDir: string, topN: number): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byNode = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, { fn: string; where: string; us: number }>();
  let idleUs = 0;
  let busyUs = 0;
  let gcUs = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const frame = byNode.get(id);
    if (!frame) return;
    if (frame.functionName === '(idle)') return void (idleUs += us);
    busyUs += us;
    if (frame.functionName === '(garbage collector)') gcUs += us;
    const fn = frame.functionName || '(anonymous)';
    const where = frame.url ? `${shortUrl(frame.url, repoDir)}:${frame.lineNumber + 1}` : '';
    const key = `${fn}@${where}`;
    const entry = self.get(key) ?? { fn, where, us: 0 };
    entry.us += us;
    self.set(key, entry);
  });
  const areas: Record<string, number> = {};
  for (const e of self.values()) {
    const a = area(e.fn, e.where);
    areas[a] = (areas[a] ?? 0) + (100 * e.us) / Math.max(1, busyUs);
  }
  for (const [a, pct] of Object.entries(areas)) {
    if (!a.startsWith('dependency: ') || pct >= 1) continue;
    delete areas[a];
    areas['other dependencies'] = (areas['other dependencies'] ?? 0) + pct;
  }
  const top = [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, topN)
    .map((e) => ({ fn: e.fn, where: e.where, selfMs: e.us / 1000, pct: (100 * e.us) / Math.max(1, busyUs) }));
  return { file: path.relative(repoDir, file), busyMs: busyUs / 1000, idleMs: idleUs / 1000, gcPct: (100 * gcUs) / Math.max(1, busyUs), top, areas };
}
