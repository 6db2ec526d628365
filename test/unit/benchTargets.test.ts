/**
 * The bench's verdicts (bench/lib/results.ts): the execute target is judged against the floor issue #4
 * names for each backend (local: a bash pipe; docker: a docker exec stream), and the stricter docker
 * comparison against the broker's own pipes is reported beside it, never judged.
 */
import { emptyResults, evaluateTargets, type Results } from '../../bench/lib/results';
import type { LatencySummary, SeqResult } from '../../bench/protocol';

function seq(p50: number): { seq: SeqResult } {
  const latency: LatencySummary = { n: 100, p50, p90: p50, p99: p50, mean: p50, max: p50 };
  return { seq: { latency, opsPerSec: 1000 / p50, errors: 0 } };
}

function results(backend: 'local' | 'docker', p50: { broker: number; raw: number; noop: number; rawExec?: number }): Results {
  const r = emptyResults({ backend, mode: 'quick', image: null, startedAt: '2026-11-24T00:00:00Z', machine: {} as Results['machine'] });
  r.commands.true = {
    broker: seq(p50.broker),
    raw: seq(p50.raw),
    noop: seq(p50.noop),
    ...(p50.rawExec === undefined ? {} : { rawExec: seq(p50.rawExec) }),
  };
  return r;
}

const executeRows = (r: Results) => evaluateTargets(r).filter((t) => t.name.startsWith('execute `true` p50'));

describe('the execute target', () => {
  it('is judged against the raw bash pipe on the local backend', () => {
    expect(executeRows(results('local', { broker: 0.5, raw: 0.1, noop: 0.2 }))).toEqual([
      expect.objectContaining({ rule: '<= raw bash pipe p50 + 1.5 x no-op HTTP p50', value: '0.500 ms', limit: '0.400 ms', pass: false }),
    ]);
    expect(executeRows(results('local', { broker: 0.39, raw: 0.1, noop: 0.2 }))[0].pass).toBe(true);
  });

  it('is judged against the docker exec stream on docker, with the pipes comparison reported, not judged', () => {
    const [target, strict] = executeRows(results('docker', { broker: 0.5, raw: 0.1, noop: 0.2, rawExec: 0.45 }));
    expect(target).toEqual(expect.objectContaining({ rule: '<= raw docker exec stream p50 + 1.5 x no-op HTTP p50', limit: '0.750 ms', pass: true }));
    expect(strict).toEqual(expect.objectContaining({ value: '0.500 ms (over by 25%)', limit: '0.400 ms', pass: null }));
    expect(executeRows(results('docker', { broker: 0.8, raw: 0.1, noop: 0.2, rawExec: 0.45 }))[0].pass).toBe(false);
  });

  it('is not judged on docker when the exec floor was not measured', () => {
    const [target, strict] = executeRows(results('docker', { broker: 0.35, raw: 0.1, noop: 0.2 }));
    expect(target.pass).toBeNull();
    expect(strict.value).toBe('0.350 ms (within)');
  });
});

describe('the least server over the same sessions', () => {
  const leastRow = (r: Results) => evaluateTargets(r).find((t) => t.name.startsWith('the same for the least server'));

  it('gets the execute rule against its own interleaving, reported and never judged', () => {
    const r = results('local', { broker: 0.5, raw: 0.1, noop: 0.2 });
    r.shellFloor = { shell: seq(0.45).seq, raw: seq(0.12).seq, noop: seq(0.2).seq, app: seq(0.25).seq };
    expect(leastRow(r)).toEqual(expect.objectContaining({ value: '0.450 ms (over by 7%)', limit: '0.420 ms', pass: null }));
    r.shellFloor.shell = seq(0.4).seq;
    expect(leastRow(r)?.value).toBe('0.400 ms (within)');
  });

  it('is absent when it was not measured', () => {
    expect(leastRow(results('docker', { broker: 0.35, raw: 0.1, noop: 0.2, rawExec: 0.45 }))).toBeUndefined();
  });
});
