/** /health reports the pool API's fields (and the broker's additive ones); /metrics is Prometheus text that moves. */
import { startTestBroker, metricValue, type TestBroker } from '../helpers/broker';
import { sessionIsolation } from '../helpers/dockerSuite';

const HEALTH_FIELDS = [
  'status',
  'total_sessions',
  'available_sessions',
  'in_use_sessions',
  'cleaning_sessions',
  'broken_sessions',
  'healthy_containers',
  'unhealthy_containers',
];
/** After the first eight fields (docs/monitoring.md, GET /health): backpressure and reclaims by reason. */
// `isolation` where per-lease isolation is asked for (docs/isolation.md).
const ADDITIVE_HEALTH_FIELDS = ['queue_length', 'acquire_wait_p50_ms', 'reclaimed_sessions', ...(sessionIsolation ? ['isolation'] : [])];

describe('/health and /metrics', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker();
  });
  afterAll(async () => {
    await tb.close();
  });

  it('/health on a warm pool: healthy, the pool API fields then the additive ones, counts that add up', async () => {
    const r = await tb.get('/health');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/application\/json/);
    expect(Object.keys(r.json).sort()).toEqual([...HEALTH_FIELDS, ...ADDITIVE_HEALTH_FIELDS].sort());
    expect(r.json).toEqual({
      queue_length: 0,
      acquire_wait_p50_ms: null,
      reclaimed_sessions: { idle_timeout: 0, lease_ttl: 0, operator: 0 },
      status: 'healthy',
      total_sessions: 4,
      available_sessions: 4,
      in_use_sessions: 0,
      cleaning_sessions: 0,
      broken_sessions: 0,
      healthy_containers: 2,
      unhealthy_containers: 0,
      ...(sessionIsolation ? { isolation: expect.objectContaining({ enabled: true, isolated_containers: 2, unisolated_containers: 0, refusal: null }) } : {}),
    });
  });

  it('/health follows leases: in use while held, back to available after release', async () => {
    const a = await tb.acquire();
    const b = await tb.acquire();
    const held = await tb.health();
    expect(held).toMatchObject({ status: 'healthy', total_sessions: 4, in_use_sessions: 2, available_sessions: 2 });
    await tb.release(a);
    await tb.release(b);
    const after = await tb.health();
    expect(after.in_use_sessions).toBe(0);
    expect(after.available_sessions + after.cleaning_sessions).toBe(4);
    expect(await tb.waitAllAvailable()).toMatchObject({ status: 'healthy', available_sessions: 4 });
  });

  it('/metrics is Prometheus text with the broker metrics and a default process metric', async () => {
    const r = await tb.get('/metrics');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    for (const name of [
      'broker_sessions',
      'broker_acquire_wait_seconds',
      'broker_execute_duration_seconds',
      'broker_executes_total',
      'broker_execute_timeouts_total',
      'broker_cleanups_total',
      'broker_cleanup_duration_seconds',
      'broker_sessions_broken_total',
      'broker_containers_replaced_total',
    ]) {
      expect(r.text).toContain(`# TYPE ${name} `);
    }
    expect(r.text).toMatch(/^broker_sessions\{state="available"\} 4$/m);
    expect(r.text).toMatch(/^broker_sessions\{state="in_use"\} 0$/m);
    expect(r.text).toMatch(/^(process_resident_memory_bytes|process_cpu_seconds_total|nodejs_heap_size_used_bytes) \d/m);
  });

  it('counters move after activity', async () => {
    const before = await tb.metrics();
    const id = await tb.acquire();
    await tb.exec(id, 'true');
    await tb.exec(id, 'false');
    await tb.exec(id, 'sleep 60', 0.5);
    const during = await tb.metrics();
    expect(metricValue(during, 'broker_sessions', { state: 'in_use' })).toBe(1);
    await tb.release(id);
    await tb.waitAllAvailable();
    const broken = await tb.acquire();
    await tb.post(`/session/${broken}/execute`, { command: 'kill -9 $$' });
    await tb.release(broken);
    await tb.waitAllAvailable();
    const after = await tb.metrics();

    const grew = (name: string, labels: Record<string, string> = {}): number => metricValue(after, name, labels) - metricValue(before, name, labels);
    expect(grew('broker_acquire_wait_seconds_count', { outcome: 'ok' })).toBe(2);
    expect(grew('broker_executes_total')).toBe(4);
    expect(grew('broker_executes_total', { outcome: 'success' })).toBe(1);
    expect(grew('broker_executes_total', { outcome: 'failed' })).toBe(1);
    expect(grew('broker_executes_total', { outcome: 'timeout' })).toBe(1);
    expect(grew('broker_execute_duration_seconds_count')).toBe(4);
    expect(grew('broker_execute_timeouts_total')).toBe(1);
    expect(grew('broker_cleanups_total', { result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(grew('broker_cleanup_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(grew('broker_sessions_broken_total')).toBe(1);
    expect(metricValue(after, 'broker_sessions', { state: 'available' })).toBe(4);
  });

  it('/health is degraded while a session is broken and healthy again once it is rebuilt', async () => {
    const id = await tb.acquire();
    await tb.post(`/session/${id}/execute`, { command: 'kill -9 $$' });
    // Either we catch it broken (degraded) or it is already rebuilt; both must end healthy.
    const h = await tb.health();
    if (h.broken_sessions > 0) expect(h.status).toBe('degraded');
    await tb.release(id);
    await tb.waitAllAvailable(); // healthy again, and full
  });
});
