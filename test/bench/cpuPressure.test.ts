/**
 * bench/lib/cpuPressure.ts: the kernel's CPU pressure and runnable-task figures, parsed from their real formats.
 * @backend any
 */
import { cpuPressureSomeUs, pressureShare, runnableTasks } from '../../bench/lib/cpuPressure';

describe('cpuPressure', () => {
  it("reads the 'some' total of /proc/pressure/cpu, and null without PSI", () => {
    const text = 'some avg10=98.63 avg60=85.80 avg300=61.21 total=12668071601\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n';
    expect(cpuPressureSomeUs(text)).toBe(12668071601);
    expect(cpuPressureSomeUs('')).toBeNull();
  });

  it('reads the runnable tasks of /proc/loadavg', () => {
    expect(runnableTasks('108.62 28.62 27.63 161/1318 5098\n')).toBe(161);
    expect(runnableTasks('')).toBeNull();
  });

  it('turns two readings into the share of the wall time, clamped to [0, 1]', () => {
    expect(pressureShare(1_000_000, 3_000_000, 4_000)).toBeCloseTo(0.5);
    expect(pressureShare(0, 9_000_000, 4_000)).toBe(1);
    expect(pressureShare(null, 5, 1000)).toBeNull();
  });

  it('reads this machine when it has PSI (a number of microseconds that only grows)', () => {
    const first = cpuPressureSomeUs();
    if (first === null) {
      console.warn('no /proc/pressure/cpu on this kernel: the soak reports no CPU pressure figure');
      return;
    }
    expect(Number.isInteger(first)).toBe(true);
    expect(cpuPressureSomeUs() as number).toBeGreaterThanOrEqual(first);
  });
});
