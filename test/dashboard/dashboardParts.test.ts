/**
 * The dashboard's pure parts: per-second series and their percentiles, replacements noticed from the
 * fleet's entries, the observer tee, the sandboxes listed from the broker's directory, and the
 * OpenAPI path and key conversions.
 * @backend any
 */
import { SecondSeries, SECONDS_KEPT } from '../../src/core/dashboard/secondSeries';
import { ContainerWatch } from '../../src/core/dashboard/containerWatch';
import { teeObservers } from '../../src/core/dashboard/observerTee';
import { PoolActivity } from '../../src/core/dashboard/poolActivity';
import { NOOP_OBSERVER, type PoolObserver } from '../../src/core/ports/observer';
import { ContainerEntry } from '../../src/core/pool/slot';
import { buildOpenApi, openApiPath } from '../../src/http/openApiDocument';
import { SandboxDirectory } from '../../src/core/sandbox/sandboxDirectory';
import { OWN_API_ONLY, SHELL_AND_FILES, type Sandbox, type SandboxKind } from '../../src/core/sandbox/sandbox';
import { sandboxLines } from '../../src/core/dashboard/sandboxLines';

const T0 = 1_700_000_000_000; // a whole second

describe('SecondSeries', () => {
  it('counts per whole second, oldest first, the current second left out', () => {
    const s = new SecondSeries();
    s.record(1, false, T0 + 100);
    s.record(3, true, T0 + 900);
    s.record(2, false, T0 + 1_500);
    const { counts, flagged, maxMs } = s.series(T0 + 2_100, 3);
    expect(counts).toEqual([0, 2, 1]);
    expect(flagged).toEqual([0, 1, 0]);
    expect(maxMs).toEqual([null, 3, 2]);
    expect(s.series(T0 + 2_100).counts).toHaveLength(SECONDS_KEPT - 1);
  });

  it('forgets a second once the ring comes round to it again', () => {
    const s = new SecondSeries();
    s.record(5, false, T0);
    s.record(7, false, T0 + SECONDS_KEPT * 1_000);
    expect(s.percentiles([0.5], 1, T0 + SECONDS_KEPT * 1_000)).toEqual([7]);
    expect(s.series(T0 + (SECONDS_KEPT + 1) * 1_000).counts.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('gives percentiles of the window, nulls without samples, and stays fair beyond its sample size', () => {
    const s = new SecondSeries();
    expect(s.percentiles([0.5, 0.99], 10, T0)).toEqual([null, null]);
    for (let i = 1; i <= 1_000; i++) s.record(i, false, T0 + 500);
    const [p50, p99] = s.percentiles([0.5, 0.99], 10, T0 + 900) as number[];
    // A reservoir of 128 out of 1..1000: the median near 500, the p99 near the top.
    expect(p50).toBeGreaterThan(250);
    expect(p50).toBeLessThan(750);
    expect(p99).toBeGreaterThan(800);
    expect(s.series(T0 + 1_000, 1).counts).toEqual([1_000]);
  });
});

describe('ContainerWatch', () => {
  it('lists each replacement once, with its reason, newest first', () => {
    const a = new ContainerEntry(0);
    const b = new ContainerEntry(1);
    const watch = new ContainerWatch();
    expect(watch.look('default', [a, b], T0)).toEqual([]);
    b.replaced = { count: 1, lastReason: 'container is not running' };
    expect(watch.look('default', [a, b], T0 + 1)).toEqual([{ atMs: T0 + 1, pool: 'default', container: 1, reason: 'container is not running' }]);
    expect(watch.look('default', [a, b], T0 + 2)).toEqual([]);
    a.replaced = { count: 1, lastReason: 'replaced by an operator' };
    watch.look('default', [a, b], T0 + 3);
    expect(watch.replacements.map((r) => r.container)).toEqual([0, 1]);
  });
});

describe('teeObservers', () => {
  it("calls every observer's method, skipping those an extra lacks", () => {
    const calls: string[] = [];
    const primary: PoolObserver = { ...NOOP_OBSERVER, executed: (ms, outcome) => void calls.push(`primary ${ms} ${outcome}`) };
    const tee = teeObservers(primary, { executed: (ms) => void calls.push(`extra ${ms}`) }, {});
    tee.executed(3, 'success');
    tee.broken('x');
    expect(calls).toEqual(['primary 3 success', 'extra 3']);
    expect(Object.keys(tee).sort()).toEqual(Object.keys(NOOP_OBSERVER).sort());
  });

  it('feeds the activity: failures, timeouts and errors newest first', () => {
    const activity = new PoolActivity();
    const tee = teeObservers(NOOP_OBSERVER, activity);
    tee.executed(2, 'success');
    tee.executed(4, 'error');
    tee.acquireWaited(10_000, 'timeout');
    expect(activity.executesTotal).toBe(2);
    expect(activity.errors.map((e) => e.kind)).toEqual(['acquire_timeout', 'execute_error']);
  });
});

describe('OpenAPI document', () => {
  it('turns route patterns into OpenAPI paths', () => {
    expect(openApiPath('/session/:sessionId/execute')).toBe('/session/{sessionId}/execute');
    expect(openApiPath('/sandboxes/:id/port/:port/*rest')).toBe('/sandboxes/{id}/port/{port}/{rest}');
    expect(openApiPath('/health')).toBe('/health');
  });

  it('takes security from the registered route, adds a 401 to guarded ones, and lists what no API describes', () => {
    const doc = { tag: 't', description: 'd', errors: 'pool' as const, operations: { 'GET /a': { summary: 'a', responses: { 200: { description: 'ok' } } }, 'GET /b': { summary: 'b', responses: {} } } };
    const routes = [
      { method: 'GET', path: '/a', public: true, router: 'r' },
      { method: 'GET', path: '/b', public: false, router: 'r' },
      { method: 'POST', path: '/c', public: false, router: 'r' },
    ];
    const { document, undocumented } = buildOpenApi([doc], routes, '1');
    const paths = document.paths as Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
    expect(paths['/a'].get.security).toEqual([]);
    expect(paths['/a'].get.responses['401']).toBeUndefined();
    expect(paths['/b'].get.security).toBeUndefined();
    expect(paths['/b'].get.responses['401']).toBeDefined();
    expect(undocumented).toEqual(['POST /c']);
  });
});

describe('sandboxLines', () => {
  const sandbox = (id: string, kind: SandboxKind, describe?: () => string): Sandbox => ({
    id,
    kind,
    capabilities: kind === 'group' ? OWN_API_ONLY : SHELL_AND_FILES,
    ended: new AbortController().signal,
    handle: () => {
      throw new Error('not asked for');
    },
    describe,
  });

  it('lists every kind from the directory, in claim order, with what execd holds; an idle pool lease is left out', () => {
    const directory = new SandboxDirectory();
    directory.register(sandbox('lease-idle', 'pool'), false);
    directory.register(sandbox('lease-busy', 'pool'), false);
    directory.register(sandbox('ws1', 'workspace', () => 'in /tmp/s/x/'));
    directory.register(sandbox('g1/a', 'group', () => 'of group g1, http://127.0.0.1:1'));
    directory.register(sandbox('task-1', 'task', () => 'running, acme/demo'));
    const held: Record<string, string> = { 'lease-busy': '1 command(s) running, 0 bash session(s)', 'task-1': '0 command(s) running, 1 bash session(s)' };
    expect(sandboxLines(directory, (id) => held[id] ?? null)).toEqual([
      { kind: 'pool', id: 'lease-busy', detail: 'execd: 1 command(s) running, 0 bash session(s)' },
      { kind: 'workspace', id: 'ws1', detail: 'in /tmp/s/x/' },
      { kind: 'group', id: 'g1/a', detail: 'of group g1, http://127.0.0.1:1' },
      { kind: 'task', id: 'task-1', detail: 'running, acme/demo; execd: 0 command(s) running, 1 bash session(s)' },
    ]);
  });
});
