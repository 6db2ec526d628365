/**
 * Named, prepared pools (BROKER_POOLS): an acquire that names a pool gets one of its
 * sessions with the pool's files, startup commands and environment already applied (they ran before
 * the acquire was sent), a recycled session is prepared again, an unknown pool is a clear 400 that
 * leases nothing, and /health and /metrics count each pool. The default pool stays as the pool API has it.
 */
import { startTestBroker, testBackend, b64, eventually, metricValue, withLease, type TestBroker } from '../helpers/broker';

const image = testBackend === 'docker' ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'prepared-image';

/** Microseconds since the epoch, as bash's ${EPOCHREALTIME/./} gives them (an image's `date` may lack %N). */
function nowUs(): bigint {
  return BigInt(Date.now()) * 1_000n;
}

describe('prepared pools', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    const pools = {
      // One slot: every lease of it is the same slot, rebuilt (and prepared again) in between.
      prep: {
        image,
        containers: 1,
        sessions_per_container: 1,
        fresh_container: false,
        files: { 'data/in.txt': b64('hello from the pool') },
        startup_commands: ['echo ${EPOCHREALTIME/./} > .prepared-at; echo ran >> .prep-log', 'export PREP_VAR=from-startup'],
        env: { POOL_ENV: 'pool-value' },
      },
      // A preparation that fails: its session never becomes AVAILABLE, and /health says so.
      bad: { image, containers: 1, sessions_per_container: 1, fresh_container: false, startup_commands: ['echo nope >&2; exit 3'] },
    };
    tb = await startTestBroker({ BROKER_POOLS: JSON.stringify(pools) });
  });
  afterAll(async () => {
    await tb?.close();
  });

  it('a session of a named pool comes prepared: files, startup commands (run before the acquire was sent) and env', async () => {
    await eventually(async () => (await tb.get('/health')).json.pools.prep.available_sessions === 1, 60_000, 'the prep pool warm');
    const sentUs = nowUs();
    await withLease(
      tb,
      async (id) => {
        const r = await tb.exec(id, 'cat .prep-log; echo "$PREP_VAR $POOL_ENV"; cat data/in.txt; echo; cat .prepared-at');
        const [log, vars, file, preparedAt] = r.stdout.split('\n');
        expect({ log, vars, file, status: r.status }).toEqual({ log: 'ran', vars: 'from-startup pool-value', file: 'hello from the pool', status: 'Success' });
        expect(BigInt(preparedAt)).toBeLessThan(sentUs);
        // Later calls on the id reach the pool that leased it.
        expect((await tb.exec(id, 'echo "$PREP_VAR"')).stdout).toBe('from-startup\n');
      },
      { pool: 'prep' },
    );
  });

  it('a recycled session is prepared again, in the background, before its next lease', async () => {
    const first = await withLease(tb, async (id) => (await tb.exec(id, 'cat .prepared-at; echo changed > data/in.txt; export PREP_VAR=dirty')).stdout.trim(), { pool: 'prep' });
    const releasedUs = nowUs();
    await eventually(async () => (await tb.get('/health')).json.pools.prep.available_sessions === 1, 60_000, 'the prep slot rebuilt');
    const sentUs = nowUs();
    await withLease(
      tb,
      async (id) => {
        const r = await tb.exec(id, 'cat .prep-log; echo "$PREP_VAR"; cat data/in.txt; echo; cat .prepared-at');
        const [log, prepVar, file, preparedAt] = r.stdout.split('\n');
        expect({ log, prepVar, file }).toEqual({ log: 'ran', prepVar: 'from-startup', file: 'hello from the pool' });
        expect(BigInt(preparedAt)).toBeGreaterThan(BigInt(first));
        expect(BigInt(preparedAt)).toBeGreaterThan(releasedUs);
        expect(BigInt(preparedAt)).toBeLessThan(sentUs);
      },
      { pool: 'prep' },
    );
  });

  it('the default pool is untouched: no preparation, no pool env', async () => {
    await withLease(tb, async (id) => {
      const r = await tb.exec(id, 'ls -A; echo "[${POOL_ENV-}]"');
      expect(r.stdout).toBe('[]\n');
    });
  });

  it('an unknown pool is a 400 naming the pools there are, and leases nothing', async () => {
    const before = (await tb.get('/health')).json;
    const r = await tb.post('/session/acquire', { pool: 'nope' });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ code: 'unknown_pool', detail: "Unknown pool 'nope': this broker has 'default', 'prep', 'bad' (BROKER_POOLS)" });
    const bad = await tb.post('/session/acquire', { pool: 7 });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toBe("'pool' must be a pool name (a non-empty string), got a number");
    const after = (await tb.get('/health')).json;
    expect(after.in_use_sessions).toBe(before.in_use_sessions);
    expect(after.pools.prep.in_use_sessions).toBe(0);
  });

  it('/health and /metrics count each pool; a pool whose preparation fails shows broken sessions and degrades the broker', async () => {
    await eventually(async () => (await tb.get('/health')).json.pools.bad.broken_sessions === 1, 60_000, 'the bad pool broken');
    await eventually(async () => (await tb.get('/health')).json.pools.prep.available_sessions === 1, 60_000, 'the prep slot rebuilt');
    // The earlier cases' releases may still be cleaning in the default pool.
    await eventually(async () => (await tb.get('/health')).json.pools.default.available_sessions === tb.total, 60_000, 'the default pool full again');
    const health = (await tb.get('/health')).json;
    expect(health.status).toBe('degraded');
    expect(health.total_sessions).toBe(tb.total); // the default pool's fields, as before
    expect(health.pools.default).toMatchObject({ total_sessions: tb.total, image: expect.any(String) });
    expect(health.pools.prep).toMatchObject({ status: 'healthy', image, total_sessions: 1, available_sessions: 1, broken_sessions: 0 });
    expect(health.pools.bad).toMatchObject({ status: 'unhealthy', total_sessions: 1, available_sessions: 0, broken_sessions: 1 });
    const metrics = await tb.metrics();
    expect(metricValue(metrics, 'broker_pool_sessions', { pool: 'prep', state: 'available' })).toBe(1);
    expect(metricValue(metrics, 'broker_pool_sessions', { pool: 'bad', state: 'broken' })).toBe(1);
    expect(metricValue(metrics, 'broker_pool_sessions', { pool: 'default', state: 'available' })).toBe(tb.total);
  });
});
