/**
 * OpenSandbox's execd API: execd's /metrics and /metrics/watch under /sandboxes/{id}/execd, read with
 * OpenSandbox's own TypeScript SDK (its MetricsAdapter, unchanged) and, for the SSE stream the SDK
 * does not read, with undici. The figures must be the sandbox's: on Docker its container's cgroup
 * (the container's limits, not the host's), locally its session's own processes.
 *
 * @serial a spinning process must reach 25% CPU in its sandbox: beside other suites on 2 cores it got 9%
 */
import os from 'node:os';
import { request } from 'undici';
import { eventually, startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { execdBaseUrl, sdkExecd, type SdkMetrics } from '../helpers/execdSdk';

const MIB = 1024 * 1024;

describe('execd metrics', () => {
  let tb: TestBroker;
  let id: string;
  let metrics: SdkMetrics;

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_CONTAINER_MEMORY: '768m', BROKER_CONTAINER_CPUS: '1' });
    id = await tb.acquire();
    metrics = sdkExecd(tb.url, id).metrics;
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it("reports plausible figures, the sandbox's own: its container's limits on Docker, the host's locally", async () => {
    const m = await metrics.getMetrics();
    expect(m.cpuCount).toBeGreaterThan(0);
    expect(m.memoryUsedMiB).toBeGreaterThan(0);
    expect(m.memoryUsedMiB).toBeLessThanOrEqual(m.memoryTotalMiB);
    expect(m.cpuUsedPercentage).toBeGreaterThanOrEqual(0);
    expect(m.cpuUsedPercentage).toBeLessThanOrEqual(100);
    expect(Math.abs(m.timestamp - Date.now())).toBeLessThan(60_000);
    const raw = await tb.get(`/sandboxes/${id}/execd/metrics`);
    if (testBackend === 'docker') {
      expect(raw.json).toMatchObject({ scope: 'container cgroup', cpu_count: 1, mem_total_mib: 768 });
    } else {
      expect(raw.json).toMatchObject({ scope: expect.stringMatching(/^local session processes/), cpu_count: os.availableParallelism() });
      expect(raw.json.mem_total_mib).toBeCloseTo(os.totalmem() / MIB, 0);
      // A shell and little else: far below the host's use.
      expect(raw.json.mem_used_mib).toBeLessThan(200);
    }
  });

  it('memory rises while a process in the sandbox holds 150 MB, and falls once it ends', async () => {
    const before = (await metrics.getMetrics()).memoryUsedMiB;
    const pid = (await tb.exec(id, "(v=$(head -c 150000000 /dev/zero | tr '\\0' x); sleep 600) >/dev/null 2>&1 & echo $!")).stdout.trim();
    let last = before;
    await eventually(async () => (last = (await metrics.getMetrics()).memoryUsedMiB) >= before + 120, 60_000, () => `memory up by 120 MiB from ${before} (last ${last})`);
    await tb.exec(id, `pkill -P ${pid}; kill ${pid}; wait ${pid} 2>/dev/null; true`);
    await eventually(async () => (last = (await metrics.getMetrics()).memoryUsedMiB) < before + 60, 60_000, () => `memory back near ${before} (last ${last})`);
  });

  it('CPU use rises while a process in the sandbox spins', async () => {
    const pid = (await tb.exec(id, '(while :; do :; done) >/dev/null 2>&1 & echo $!')).stdout.trim();
    try {
      let last = 0;
      await eventually(async () => (last = (await metrics.getMetrics()).cpuUsedPercentage) >= 25, 60_000, () => `CPU use of 25% or more (last ${last}%)`);
    } finally {
      await tb.exec(id, `kill ${pid}`);
    }
  });

  it('watch streams a report a second as SSE until the client leaves; an unknown sandbox is a 404 before any stream', async () => {
    const controller = new AbortController();
    const res = await request(`${execdBaseUrl(tb.url, id)}/metrics/watch`, { signal: controller.signal });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const reports: { timestamp: number; mem_used_mib: number; cpu_count: number }[] = [];
    let buffered = '';
    try {
      for await (const chunk of res.body) {
        buffered += chunk.toString();
        for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const data = frame.split('\n').find((l) => l.startsWith('data: '));
          if (data) reports.push(JSON.parse(data.slice(6)));
        }
        if (reports.length >= 3) break;
      }
    } finally {
      controller.abort();
    }
    expect(reports).toHaveLength(3);
    for (const r of reports) expect(r).toMatchObject({ cpu_count: expect.any(Number), mem_used_mib: expect.any(Number), timestamp: expect.any(Number) });
    expect(reports[1].timestamp).toBeGreaterThan(reports[0].timestamp);
    expect(reports[2].timestamp).toBeGreaterThan(reports[1].timestamp);
    const unknown = await tb.get('/sandboxes/nope/execd/metrics/watch');
    expect([unknown.status, unknown.json.code]).toEqual([404, 'NOT_FOUND']);
  });
});
