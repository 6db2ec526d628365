/**
 * The bench's verdicts (bench/lib/results.ts): the execute target is judged against the floor of each
 * backend (local: a bash pipe; docker: a docker exec stream), and the stricter docker
 * comparison against the broker's own pipes is reported beside it, never judged. The episode
 * targets are judged against the episode floor of the same run.
 * @backend any
 */
import { emptyResults, episodeFloorRate, episodeRatio, episodeTargets, evaluateTargets, type Results } from '../../bench/lib/results';
import type { EpisodeFloorResult, LatencySummary, OpenLoopResult, SeqResult, WsFloodRound } from '../../bench/protocol';
import { workspaceTargets, type WorkspaceFigures } from '../../bench/lib/workspaceResults';

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

describe('the episode targets', () => {
  const lat = (p50: number, p99 = p50): LatencySummary => ({ n: 100, p50, p90: p50, p99, mean: p50, max: p99 });
  const conc = (opsPerSec: number) => ({ concurrency: 64, windowMs: 6000, completed: opsPerSec * 6, opsPerSec, latency: lat(100), errors: 0 });
  const floor = (opsPerSec: number, perEpisode = 0): EpisodeFloorResult => ({
    ...conc(opsPerSec),
    exec: lat(50),
    command: lat(0.2),
    sessions: 64,
    openMs: 300,
    forks: { created: 0, idlePerSec: 0, perEpisode },
  });
  const entry = (c: number, broker: number, floorRate?: number, open?: Partial<OpenLoopResult>): Results['episodes'][number] => ({
    concurrency: c,
    containers: c / 8,
    sessions: c,
    result: { ...conc(broker), connectMs: 10, connectErrors: 0, executesPerSec: broker * 5, acquire: lat(5), execute: lat(1), release: lat(1), forks: { created: 0, idlePerSec: 0, perEpisode: 2 }, requestsPerEpisode: 7 },
    cleanup: { count: 0, meanMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0 },
    listenOverflows: 0,
    eventLoopLagMs: { p99: 10, max: 10 },
    ...(floorRate === undefined ? {} : { floor: floor(floorRate, 0) }),
    ...(open ? { openLoop: { ratePerSec: broker / 2, arrivals: 'poisson', windowMs: 10_000, started: 100, completed: 100, dropped: 0, errors: 0, opsPerSec: broker / 2, acquire: lat(5, 50), episode: lat(20), ...open } } : {}),
  });
  const rows = (r: Results) => episodeTargets(r);
  const find = (r: Results, prefix: string) => rows(r).filter((t) => t.name.startsWith(prefix));
  const run = (...episodes: Results['episodes']) => {
    const r = results('docker', { broker: 0.5, raw: 0.1, noop: 0.2 });
    r.episodes = episodes;
    return r;
  };

  it('holds episodes/s to 70% of the floor at 64 and at 256', () => {
    const [at64, at256] = find(run(entry(64, 71, 100), entry(256, 69, 100)), 'episodes/s at ');
    expect(at64).toEqual(expect.objectContaining({ name: 'episodes/s at 64 at once', limit: '70.0/s', pass: true }));
    expect(at64.value).toBe('71.0/s (0.71x floor 100.0/s)');
    expect(at256.pass).toBe(false);
  });

  it('holds the broker to the mean of the floor run before it and the one after it', () => {
    const e = entry(64, 71, 120);
    e.floorAfter = floor(80);
    const [at64] = find(run(e), 'episodes/s at 64');
    expect(at64).toEqual(expect.objectContaining({ value: '71.0/s (0.71x floor 100.0/s (120.0 before, 80.0 after))', limit: '70.0/s', pass: true }));
    expect(episodeFloorRate(e)).toBe(100);
  });

  it('is not judged without a floor', () => {
    const [at64, at256] = find(run(entry(64, 71)), 'episodes/s at ');
    expect(at64).toEqual(expect.objectContaining({ value: '71.0/s', pass: null }));
    expect(at256).toEqual(expect.objectContaining({ value: '-', pass: null }));
  });

  it('lets throughput fall from 64 to 256 no more than the floor does', () => {
    const [scale] = find(run(entry(64, 100, 140), entry(256, 70, 90)), 'episodes/s from 64 to 256');
    expect(scale).toEqual(expect.objectContaining({ value: '0.70x (1.09 of the floor\'s)', limit: '0.64x', pass: true }));
    expect(find(run(entry(64, 100, 140), entry(256, 50, 90)), 'episodes/s from')[0].pass).toBe(false);
    // Within the run's resolution: 0.62x against the floor's 0.64x (0.96 of it) passes, 0.60x (0.93) does not.
    expect(find(run(entry(64, 100, 140), entry(256, 62, 90)), 'episodes/s from')[0].pass).toBe(true);
    expect(find(run(entry(64, 100, 140), entry(256, 60, 90)), 'episodes/s from')[0].pass).toBe(false);
    expect(find(run(entry(64, 100, 140)), 'episodes/s from')[0].pass).toBeNull();
  });

  it('judges open-loop acquire on p50 and p99, and fails a run that dropped arrivals', () => {
    const ok = find(run(entry(64, 100, 140, {})), 'acquire p50 / p99, open loop');
    expect(ok).toEqual([expect.objectContaining({ value: '5.0 / 50.0 ms', limit: '20 / 100 ms', pass: true })]);
    expect(find(run(entry(64, 100, 140, { acquire: lat(21, 50) })), 'acquire p50')[0].pass).toBe(false);
    expect(find(run(entry(64, 100, 140, { acquire: lat(5, 101) })), 'acquire p50')[0].pass).toBe(false);
    expect(find(run(entry(64, 100, 140, { dropped: 3 })), 'acquire p50')[0]).toEqual(expect.objectContaining({ value: '5.0 / 50.0 ms (0 errors, 3 dropped)', pass: false }));
    expect(find(run(entry(64, 100, 140)), 'acquire, open loop')[0].pass).toBeNull();
  });

  it('reports processes per episode beside the floor, never judged', () => {
    const [p] = find(run(entry(64, 100, 140)), 'processes created per episode at 64');
    expect(p).toEqual(expect.objectContaining({ value: '2.00', limit: 'floor 0.00', pass: null }));
  });

  it('reports the sessions\' CPU per episode beside the floor\'s when measured', () => {
    const e = entry(64, 100, 140);
    expect(find(run(e), "sessions' CPU")).toEqual([]);
    e.result.sessionCpu = { where: 'x', cores: 0.5, msPerEpisode: 9.5 };
    e.floor!.sessionCpu = { where: 'y', cores: 0.5, msPerEpisode: 2.25 };
    expect(find(run(e), "sessions' CPU per episode at 64")[0]).toEqual(expect.objectContaining({ value: '9.50 ms', limit: 'floor 2.25 ms', pass: null }));
  });

  it('holds CPU per episode to the floor\'s: its client + sessions over the broker + client + sessions, mean of the floor runs', () => {
    const e = entry(64, 100, 140);
    expect(find(run(e), 'CPU per episode at 64')[0]).toEqual(expect.objectContaining({ value: '-', pass: null }));
    e.result.sessionCpu = { where: 'x', cores: 1, msPerEpisode: 2.75 };
    e.result.processCpu = { brokerMsPerEpisode: 0.75, clientMsPerEpisode: 0.5 };
    e.floor!.sessionCpu = { where: 'y', cores: 1, msPerEpisode: 2.5 };
    e.floor!.processCpu = { clientMsPerEpisode: 0.25 };
    e.floorAfter = { ...floor(120), sessionCpu: { where: 'y', cores: 1, msPerEpisode: 2.75 }, processCpu: { clientMsPerEpisode: 0.25 } };
    // Floor: (2.75 + 3.00) / 2 = 2.875 ms; the broker's 4.00 ms: 0.72x.
    expect(find(run(e), 'CPU per episode at 64')[0]).toEqual(expect.objectContaining({ value: '4.00 ms (0.75 + 0.50 + 2.75): 0.72x', limit: 'floor 2.88 ms', pass: true }));
    e.result.processCpu = { brokerMsPerEpisode: 1.0, clientMsPerEpisode: 0.5 };
    expect(find(run(e), 'CPU per episode at 64')[0].pass).toBe(false);
    // The 5-request episodes are reported beside them, never judged.
    e.fewer = { ...e.result, opsPerSec: 110, requestsPerEpisode: 5, processCpu: { brokerMsPerEpisode: 0.5, clientMsPerEpisode: 0.375 } };
    const fewer = find(run(e), 'episodes/s at 64 at once, 5 requests');
    expect(fewer).toEqual([expect.objectContaining({ value: '110.0/s (0.85x floor 130.0/s (140.0 before, 120.0 after))', pass: null })]);
    expect(find(run(e), 'CPU per episode at 64 at once, 5 requests')[0]).toEqual(expect.objectContaining({ value: '3.63 ms (0.50 + 0.38 + 2.75): 0.79x', pass: null }));
  });

  it('with rounds, judges the median of the rounds\' own ratios, for episodes/s and for CPU per episode', () => {
    const withCpu = <T extends EpisodeFloorResult | Results['episodes'][number]['result']>(r: T, client: number, sessions: number, broker?: number): T => ({
      ...r,
      sessionCpu: { where: 'x', cores: 1, msPerEpisode: sessions },
      processCpu: { clientMsPerEpisode: client, ...(broker === undefined ? {} : { brokerMsPerEpisode: broker }) },
    });
    const e = entry(64, 70, 100);
    const plain = e.result;
    // Rounds: 60/100 (0.60x), 90/100 (0.90x), 80/100 (0.80x): median 0.80x. CPU: 2/4, 3/4, 3/3.
    e.rounds = [
      { floor: withCpu(floor(100), 0.5, 1.5), plain: withCpu({ ...plain, opsPerSec: 60 }, 1, 2, 1) },
      { floor: withCpu(floor(100), 0.5, 2.5), plain: withCpu({ ...plain, opsPerSec: 90 }, 1, 2, 1) },
      { floor: withCpu(floor(100), 0.5, 2.5), plain: withCpu({ ...plain, opsPerSec: 80 }, 0.5, 2, 0.5) },
    ];
    expect(episodeRatio(e)).toBeCloseTo(0.8);
    const [eps] = find(run(e), 'episodes/s at 64 at once');
    expect(eps).toEqual(expect.objectContaining({ value: '0.80x, median of 3 rounds (broker / floor episodes/s: 60.0 / 100.0, 90.0 / 100.0, 80.0 / 100.0)', limit: '0.70x', pass: true }));
    const [cpu] = find(run(e), 'CPU per episode at 64 at once');
    expect(cpu.value).toMatch(/^0\.75x, median of 3 rounds/);
    expect(cpu.pass).toBe(true);
    e.rounds![2].plain = withCpu({ ...plain, opsPerSec: 50 }, 1, 3, 1);
    expect(find(run(e), 'episodes/s at 64 at once')[0].pass).toBe(false);
    expect(find(run(e), 'CPU per episode at 64 at once')[0].pass).toBe(false);
  });

  it('sits in the targets table', () => {
    const names = evaluateTargets(run(entry(64, 71, 100))).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['episodes/s at 64 at once', 'episodes/s at 256 at once', 'episodes/s from 64 to 256 at once']));
  });
});

describe('the workspace targets', () => {
  const lat = (p50: number): SeqResult => seq(p50).seq;
  const round = (viewers: number, bytesPerSec: number, dropped = 0, current = viewers - dropped): WsFloodRound => ({
    viewers, durationMs: 1000, wallMs: 1100, bytesPerSec, viewerBytesMin: 8_100_000, viewerMessagesMin: 100_000, viewerMessagesMax: 100_000, dropped, current, resyncs: 0, brokerCpuMs: 300, viewersCpuMs: 200,
  });
  const figures = (exec: number, echo: number, rounds: WsFloodRound[]): WorkspaceFigures => ({
    execute: { workspace: lat(exec), pool: lat(0.5) },
    echo: lat(echo),
    floods: [{ viewerKind: 'terminal', command: 'yes', floodBytes: 8_000_000, rounds }],
    memory: { workspaces: 8, brokerRssBeforeBytes: 0, brokerRssAfterBytes: 0, brokerPerWorkspaceBytes: 1e5, terminalPssPerWorkspaceBytes: 6e5, terminalRssPerWorkspaceBytes: 4e6, terminalProcesses: 8 },
  });
  const verdicts = (w: WorkspaceFigures) => workspaceTargets({ docker: w }).map((t) => t.pass);

  it('passes within 2x the pool execute, a 5 ms echo on docker, 90% of one viewer with every viewer complete', () => {
    expect(verdicts(figures(1.0, 4.9, [round(1, 10e6), round(50, 9.1e6)]))).toEqual([true, true, true, null]);
  });

  it('fails over 2x, over 5 ms, under 90%, when a viewer was cut, or when one did not end on the flood\'s last line', () => {
    expect(verdicts(figures(1.01, 5.1, [round(1, 10e6), round(50, 8.9e6)]))).toEqual([false, false, false, null]);
    expect(verdicts(figures(1.0, 1, [round(1, 10e6), round(50, 10e6, 1)]))[2]).toBe(false);
    expect(verdicts(figures(1.0, 1, [round(1, 10e6), round(50, 10e6, 0, 49)]))[2]).toBe(false);
  });

  it('counts viewers that caught up (a redraw) as complete, and says how many', () => {
    const caughtUp = { ...round(50, 9.5e6), resyncs: 12, viewerBytesMin: 300_000 };
    const [target] = workspaceTargets({ docker: figures(1.0, 1, [round(1, 10e6), caughtUp]) }).filter((t) => t.name.startsWith('flood'));
    expect(target.pass).toBe(true);
    expect(target.value).toContain('12 catch-ups (redraws), least got 300000 bytes');
  });

  it('reports the events viewers\' flood without judging it', () => {
    const w = figures(1.0, 1, [round(1, 10e6), round(50, 5e6)]);
    w.floods = [{ ...w.floods[0], viewerKind: 'events' }];
    const [target] = workspaceTargets({ docker: w }).filter((t) => t.name.startsWith('flood'));
    expect(target).toEqual(expect.objectContaining({ name: 'flood throughput, 50 events viewers (docker, reported)', pass: null }));
  });

  it('judges the echo on docker only', () => {
    expect(workspaceTargets({ local: figures(1.0, 9, [round(1, 1), round(50, 1)]) })[1].pass).toBeNull();
  });
});
