/**
 * A shell's kernel counters for the termination facts of its commands (core/session/commandFacts.ts): CPU
 * time, peak memory charge and OOM kills of the cgroup(s) that hold it and everything it starts.
 * Each file is opened once and re-read in place (pread at offset 0 makes the kernel render it anew):
 * an execute reads them twice, and an open per read would cost ~3x the system calls.
 *
 * cgroup v2 and v1 differ in names and units, so the caller says which files to use:
 * - CPU: v2 `cpu.stat` (`usage_usec`, there in every v2 cgroup, with or without the cpu controller)
 *   or v1 `cpuacct.usage` (nanoseconds);
 * - peak memory: v2 `memory.peak` (reset per file descriptor by a write, kernel 6.12 and later) or v1
 *   `memory.max_usage_in_bytes` (reset by writing 0). A peak that could not be reset is the peak since
 *   the cgroup was made, no command's: it is reported as unknown (null);
 * - OOM kills: v2 `memory.events` or v1 `memory.oom_control` (`oom_kill`, kernel 4.13 and later).
 */
import fs from 'node:fs';
import type { UsageCounters } from '../core/ports/backend';

export interface UsageFiles {
  cpu?: { path: string; unit: 'cpu.stat' | 'ns' };
  memoryPeak?: string;
  oom?: string;
}

/** Enough for every file read here (cpu.stat and memory.events are a few lines). */
const READ_BYTES = 512;

export class CgroupUsage {
  private readonly buf = Buffer.alloc(READ_BYTES);
  private cpuFd: number | null;
  private peakFd: number | null;
  private oomFd: number | null;
  /** False once a reset of the peak failed: the peak is then no command's own. */
  private peakResettable = true;

  constructor(private readonly files: UsageFiles) {
    this.cpuFd = open(files.cpu?.path, 'r');
    this.peakFd = open(files.memoryPeak, 'r+');
    this.oomFd = open(files.oom, 'r');
  }

  /** Whether any counter can be read at all. */
  get any(): boolean {
    return this.cpuFd !== null || this.peakFd !== null || this.oomFd !== null;
  }

  read(resetPeak: boolean): UsageCounters {
    if (resetPeak && this.peakFd !== null) this.resetPeak(this.peakFd);
    return {
      cpuUsec: this.cpuUsec(),
      memoryPeakBytes: this.peakFd !== null && this.peakResettable ? this.number(this.peakFd) : null,
      oomKills: this.oomFd !== null ? this.field(this.oomFd, 'oom_kill') : null,
    };
  }

  close(): void {
    for (const fd of [this.cpuFd, this.peakFd, this.oomFd]) if (fd !== null) fs.closeSync(fd);
    this.cpuFd = this.peakFd = this.oomFd = null;
  }

  private cpuUsec(): number | null {
    if (this.cpuFd === null) return null;
    if (this.files.cpu!.unit === 'cpu.stat') return this.field(this.cpuFd, 'usage_usec');
    const ns = this.number(this.cpuFd);
    return ns === null ? null : ns / 1000;
  }

  private resetPeak(fd: number): void {
    try {
      // v1: "0" resets max_usage_in_bytes to the current usage; v2: any write resets this fd's peak.
      fs.writeSync(fd, '0', 0);
    } catch {
      this.peakResettable = false;
    }
  }

  private text(fd: number): string | null {
    try {
      const n = fs.readSync(fd, this.buf, 0, READ_BYTES, 0);
      return this.buf.toString('latin1', 0, n);
    } catch {
      return null; // the cgroup is gone (its container was removed)
    }
  }

  private number(fd: number): number | null {
    const t = this.text(fd);
    const n = t === null ? NaN : Number(t.trim());
    return Number.isFinite(n) ? n : null;
  }

  /** `name value` lines (cpu.stat, memory.events, memory.oom_control). */
  private field(fd: number, name: string): number | null {
    const t = this.text(fd);
    if (t === null) return null;
    const at = t.indexOf(`${name} `);
    if (at < 0 || (at > 0 && t[at - 1] !== '\n')) return null;
    const n = parseInt(t.slice(at + name.length + 1), 10);
    return Number.isFinite(n) ? n : null;
  }
}

function open(file: string | undefined, flags: 'r' | 'r+'): number | null {
  if (!file) return null;
  try {
    return fs.openSync(file, flags);
  } catch {
    return null;
  }
}

/** The files of one cgroup v2 directory: cpu always, memory where its controller is enabled. */
export function v2UsageFiles(dir: string): UsageFiles {
  const memory = fs.existsSync(`${dir}/memory.peak`);
  return {
    cpu: { path: `${dir}/cpu.stat`, unit: 'cpu.stat' },
    memoryPeak: memory ? `${dir}/memory.peak` : undefined,
    oom: memory ? `${dir}/memory.events` : undefined,
  };
}

/** The files of cgroup v1 directories of the cpuacct and memory hierarchies (either may be missing). */
export function v1UsageFiles(cpuacctDir: string | null, memoryDir: string | null): UsageFiles {
  return {
    cpu: cpuacctDir ? { path: `${cpuacctDir}/cpuacct.usage`, unit: 'ns' } : undefined,
    memoryPeak: memoryDir ? `${memoryDir}/memory.max_usage_in_bytes` : undefined,
    oom: memoryDir ? `${memoryDir}/memory.oom_control` : undefined,
  };
}
