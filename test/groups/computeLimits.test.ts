/**
 * A group sandbox's `compute_resources` made into limits (computeLimits.ts): absent takes the
 * defaults; null, a wrong type, a bad figure or unit, an unknown field or more than the host has is
 * a 400 that names it.
 * @backend any
 */
import { resolveCompute } from '../../src/core/groups/computeLimits';
import { BadRequestError } from '../../src/common/errors';

const GIB = 1024 ** 3;
const host = { cpuCores: 2, memoryBytes: 8 * GIB, diskBytes: 20 * GIB };
const defaults = { cpuCores: 1, memoryBytes: GIB, diskBytes: GIB };

describe('resolveCompute', () => {
  it('takes the defaults when compute_resources is absent', () => {
    expect(resolveCompute(undefined, host, defaults)).toEqual({ limits: defaults, warnings: [] });
  });

  it.each([
    [null, /must be an object, got null/],
    ['2 cores', /must be an object/],
    [[1], /must be an object/],
    [{ cpu_cores: -1 }, /cpu_cores' must be positive/],
    [{ cpu_cores: '1' }, /cpu_cores' must be a number/],
    [{ unit: 'percent' }, /unit' must be one of/],
    [{ gpus: 1 }, /unknown fields: gpus/],
  ])('refuses %j with a 400 naming it', (raw, message) => {
    const call = (): unknown => resolveCompute(raw, host, defaults);
    expect(call).toThrow(BadRequestError);
    expect(call).toThrow(message);
  });

  it('reads absolute figures as cores and GiB', () => {
    expect(resolveCompute({ cpu_cores: 0.5, ram_gb: 2, disk_gb: 1 }, host, defaults).limits).toEqual({ cpuCores: 0.5, memoryBytes: 2 * GIB, diskBytes: GIB });
  });
});
