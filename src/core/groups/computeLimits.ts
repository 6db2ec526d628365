/**
 * A sandbox's `compute_resources` made into limits the container engine enforces, and what it
 * cannot: `memory_bandwidth_gbps` is accepted and named in a warning, never pretended. The
 * check itself is pure: the host's capacity comes in as numbers (hostCapacity reads them).
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import { BadRequestError } from '../../common/errors';

export interface HostCapacity {
  cpuCores: number;
  memoryBytes: number;
  /** Free bytes where the sandboxes' disks are made. */
  diskBytes: number;
}

/** This host's cores, memory and the free disk at `diskDir` (made if missing): what no sandbox may exceed. */
export async function hostCapacity(diskDir: string): Promise<HostCapacity> {
  await fs.mkdir(diskDir, { recursive: true });
  const stat = await fs.statfs(diskDir);
  return { cpuCores: os.cpus().length, memoryBytes: os.totalmem(), diskBytes: stat.bavail * stat.bsize };
}

export interface SandboxLimits {
  /** CPU quota in cores (a CFS quota of cores x the period). */
  cpuCores: number;
  memoryBytes: number;
  /** The size of the one filesystem the sandbox can write to. */
  diskBytes: number;
}

export type ComputeDefaults = SandboxLimits;

export const SUPPORTED_UNITS = ['absolute', 'relative'] as const;
const GIB = 1024 ** 3;
/** Docker's floor for a memory limit; an ext4 filesystem much smaller than this has no room for files. */
const MIN_MEMORY_BYTES = 6 * 1024 * 1024;
const MIN_DISK_BYTES = 16 * 1024 * 1024;
/** Docker's finest CPU quota. */
const MIN_CPU_CORES = 0.01;
const KNOWN_FIELDS = new Set(['cpu_cores', 'ram_gb', 'disk_gb', 'memory_bandwidth_gbps', 'unit']);

export interface ResolvedCompute {
  limits: SandboxLimits;
  warnings: string[];
}

/**
 * `unit: "absolute"` (the default): cores and GiB. `unit: "relative"`: fractions (0 to 1] of the
 * host's cores, memory and free disk. Missing figures take the defaults; null, a negative, zero or
 * non-numeric figure, an unknown unit or field, or more than the host has is a 400.
 */
export function resolveCompute(raw: unknown, host: HostCapacity, defaults: ComputeDefaults): ResolvedCompute {
  if (raw === undefined) return { limits: { ...defaults }, warnings: [] };
  // null is not "absent": the API publishes an object, and a client that sends null meant something else.
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new BadRequestError(`'compute_resources' must be an object, got ${JSON.stringify(raw)}`);
  const fields = raw as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !KNOWN_FIELDS.has(k));
  if (unknown.length > 0) throw new BadRequestError(`'compute_resources' has unknown fields: ${unknown.join(', ')} (known: ${[...KNOWN_FIELDS].join(', ')})`);
  const unit = fields.unit ?? 'absolute';
  if (typeof unit !== 'string' || !(SUPPORTED_UNITS as readonly string[]).includes(unit)) {
    throw new BadRequestError(`'compute_resources.unit' must be one of ${SUPPORTED_UNITS.join(', ')}, got ${JSON.stringify(unit)}`);
  }
  const relative = unit === 'relative';
  const figure = (name: string, hostAmount: number, perUnit: number, dflt: number, min: number, what: string): number => {
    const value = fields[name];
    if (value === undefined || value === null) return dflt;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new BadRequestError(`'compute_resources.${name}' must be a number, got ${JSON.stringify(value)}`);
    if (value <= 0) throw new BadRequestError(`'compute_resources.${name}' must be positive, got ${value}`);
    if (relative && value > 1) throw new BadRequestError(`'compute_resources.${name}' is a fraction of the host with unit "relative": at most 1, got ${value}`);
    const amount = relative ? value * hostAmount : value * perUnit;
    if (amount > hostAmount) throw new BadRequestError(`'compute_resources.${name}' asks for ${value}${relative ? '' : ` (${describe(amount, perUnit)})`} but the host has ${describe(hostAmount, perUnit)} ${what}`);
    if (amount < min) throw new BadRequestError(`'compute_resources.${name}' is below the smallest limit the engine takes (${describe(min, perUnit)})`);
    return amount;
  };
  const limits: SandboxLimits = {
    cpuCores: figure('cpu_cores', host.cpuCores, 1, defaults.cpuCores, MIN_CPU_CORES, 'CPU cores'),
    memoryBytes: Math.round(figure('ram_gb', host.memoryBytes, GIB, defaults.memoryBytes, MIN_MEMORY_BYTES, 'of memory')),
    diskBytes: Math.round(figure('disk_gb', host.diskBytes, GIB, defaults.diskBytes, MIN_DISK_BYTES, 'of free disk')),
  };
  const warnings: string[] = [];
  if (fields.memory_bandwidth_gbps !== undefined && fields.memory_bandwidth_gbps !== null) {
    const bw = fields.memory_bandwidth_gbps;
    if (typeof bw !== 'number' || !Number.isFinite(bw) || bw <= 0) throw new BadRequestError(`'compute_resources.memory_bandwidth_gbps' must be a positive number, got ${JSON.stringify(bw)}`);
    warnings.push(`memory_bandwidth_gbps (${bw}) is not enforced: Docker has no memory-bandwidth limit (cgroups offer none); the sandbox shares the host's memory bandwidth`);
  }
  return { limits, warnings };
}

function describe(amount: number, perUnit: number): string {
  if (perUnit === 1) return `${Math.round(amount * 100) / 100}`;
  return `${Math.round((amount / GIB) * 100) / 100} GiB`;
}
