/**
 * Warm-up progress: while the pool's first fill runs, /health carries a `warmup` object (n of N, rate,
 * time left) beside the pool API's fields, which stay as they are; once every slot was tried it is gone.
 * The fill is held at a gate (shells past the first few wait for the test) so the test sees it running
 * without depending on how fast this machine starts bash.
 * @backend local
 */
import { loadConfig } from '../../src/config/config';
import { Broker, createBackend } from '../../src/broker';
import type { SessionBackend } from '../../src/core/ports/backend';
import { eventually, testLocalRoot } from '../helpers/broker';
import { configureLogger } from '../../src/common/logger';
import { request } from 'undici';

const CONTAINERS = 4;
const PER_CONTAINER = 4;
const FIRST_SHELLS = 5;

/** The real backend, with openShell held after the first `free` calls until `open()`. */
function gatedBackend(real: SessionBackend, free: number): { backend: SessionBackend; open(): void } {
  let opened = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const backend = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'openShell') {
        return async (...args: Parameters<SessionBackend['openShell']>) => {
          if (++opened > free) await gate;
          return target.openShell(...args);
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { backend, open: release };
}

async function health(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(`${url}/health`);
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

describe('warm-up progress', () => {
  let broker: Broker | null = null;
  afterAll(async () => {
    await broker?.close();
  });

  it('/health reports the first fill while it runs, then only the pool API fields', async () => {
    const config = loadConfig({
      BROKER_BACKEND: 'local',
      BROKER_CONTAINERS: String(CONTAINERS),
      BROKER_SESSIONS_PER_CONTAINER: String(PER_CONTAINER),
      BROKER_SHUTDOWN_GRACE: '2',
      PORT: '0',
      HOST: '127.0.0.1',
      BROKER_LOCAL_ROOT: testLocalRoot('warmup'),
      BROKER_LOG_LEVEL: process.env.BROKER_LOG_LEVEL ?? 'warn',
    });
    configureLogger(config.logLevel);
    const gated = gatedBackend(createBackend(config), FIRST_SHELLS);
    broker = new Broker(config, { backend: gated.backend });
    const { port } = await broker.start();
    const url = `http://127.0.0.1:${port}`;
    const target = CONTAINERS * PER_CONTAINER;

    let last: Record<string, unknown> = {};
    await eventually(
      async () => {
        last = (await health(url)).body;
        return (last.warmup as { ready_sessions?: number } | undefined)?.ready_sessions === FIRST_SHELLS;
      },
      30_000,
      () => `warm-up to show ${FIRST_SHELLS} ready sessions (last /health: ${JSON.stringify(last)})`,
    );
    expect(last).toMatchObject({ status: 'degraded', total_sessions: FIRST_SHELLS, available_sessions: FIRST_SHELLS });
    const warmup = last.warmup as Record<string, number | null>;
    expect(warmup).toMatchObject({ target_sessions: target, ready_sessions: FIRST_SHELLS, failed_sessions: 0 });
    expect(warmup.sessions_per_second).toBeGreaterThan(0);
    // The time left is what the rate so far gives for the sessions still to come.
    expect(warmup.seconds_left).toBeCloseTo((target - FIRST_SHELLS) / warmup.sessions_per_second!, 0);
    expect(warmup.elapsed_seconds).toBeGreaterThanOrEqual(0);

    gated.open();
    await broker.warm();
    const after = await health(url);
    expect(after.status).toBe(200);
    expect(after.body).toEqual({
      status: 'healthy',
      total_sessions: target,
      available_sessions: target,
      in_use_sessions: 0,
      cleaning_sessions: 0,
      broken_sessions: 0,
      healthy_containers: CONTAINERS,
      unhealthy_containers: 0,
      // The additive backpressure and reclaim fields stay; only `warmup` is gone.
      queue_length: 0,
      acquire_wait_p50_ms: null,
      reclaimed_sessions: { idle_timeout: 0, lease_ttl: 0, operator: 0 },
    });
  });
});
