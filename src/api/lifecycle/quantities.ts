/**
 * Kubernetes-style resource quantities, as OpenSandbox's resourceLimits give them: cpu in cores or
 * millicores ("500m" is half a core: the container's CPU quota), memory in bytes with a binary
 * ("512Mi") or decimal ("500M") suffix (the container's memory limit).
 */
import { BadRequestError } from '../../common/errors';

/** The engine refuses less (Docker's minimum memory limit). */
const MIN_MEMORY_BYTES = 6 * 1024 * 1024;
const MIN_CPUS = 0.01;

const MEMORY_UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** Cores: "500m" -> 0.5, "2" -> 2, "1.5" -> 1.5; between 0.01 and the host's CPUs (the engine refuses more). */
export function parseCpus(raw: string, hostCpus: number): number {
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(raw.trim());
  if (!m) throw new BadRequestError(`resourceLimits.cpu must be cores ("2", "0.5") or millicores ("500m"), got '${raw}'`);
  const cpus = m[2] === 'm' ? Number(m[1]) / 1000 : Number(m[1]);
  if (cpus < MIN_CPUS || cpus > hostCpus) throw new BadRequestError(`resourceLimits.cpu must be between ${MIN_CPUS} and ${hostCpus} cores (this host's), got '${raw}'`);
  return cpus;
}

/** Bytes: "512Mi" -> 536870912, "1G" -> 1e9, "1048576" -> 1048576; at least 6 MiB. */
export function parseMemoryBytes(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(raw.trim());
  if (!m) throw new BadRequestError(`resourceLimits.memory must be bytes with an optional suffix (Ki, Mi, Gi, Ti, k, M, G, T), e.g. "512Mi", got '${raw}'`);
  const bytes = Math.round(Number(m[1]) * MEMORY_UNITS[m[2] ?? '']);
  if (bytes < MIN_MEMORY_BYTES) throw new BadRequestError(`resourceLimits.memory must be at least 6Mi (the engine's minimum), got '${raw}'`);
  return bytes;
}
