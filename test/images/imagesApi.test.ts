/**
 * The images API's surface on a node that pulls nothing (the default: BROKER_IMAGE_ALLOW unset), on
 * either backend: an image a configured pool runs is served from it with its cost; any other is
 * refused with the answer that says why; malformed references are 400s; POST /images is refused
 * and GET /images says the node pulls nothing (docs/images.md).
 */
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';

describe('images API without on-demand images', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker();
  });
  afterAll(async () => {
    await tb?.close();
  });

  it("serves the default pool's own image from the default pool, with its cost", async () => {
    const image = tb.broker.config.docker.image;
    const r = await tb.post('/session/acquire', { image });
    expect(r.status).toBe(200);
    expect(r.json.image_cost).toEqual({ kind: 'warm', wait_ms: expect.any(Number) });
    expect(tb.broker.pool.knows(r.json.session_id)).toBe(true);
    expect((await tb.exec(r.json.session_id, 'echo hi')).stdout).toBe('hi\n');
    await tb.release(r.json.session_id);
    const group = await tb.post('/session/acquire_group', { image, n: 2 });
    expect(group.status).toBe(200);
    expect(group.json.sessions).toHaveLength(2);
    expect(group.json.image_cost.kind).toBe('warm');
    for (const s of group.json.sessions) await tb.release(s.session_id);
  });

  it('gives a retry with the same request_id the first answer', async () => {
    const body = { image: tb.broker.config.docker.image, request_id: 'img-retry-1' };
    const first = await tb.post('/session/acquire', body);
    const retry = await tb.post('/session/acquire', body);
    expect(retry.json.session_id).toBe(first.json.session_id);
    const conflict = await tb.post('/session/acquire', { ...body, image: 'other/image:v1' });
    expect(conflict.status).toBe(409);
    await tb.release(first.json.session_id);
  });

  it('refuses another image: 501 on the local backend, 403 on docker (nothing is allowed)', async () => {
    const r = await tb.post('/session/acquire', { image: 'registry.local:5000/swe/task-1:v1' });
    if (testBackend === 'local') {
      expect(r.status).toBe(501);
    } else {
      expect(r.status).toBe(403);
      expect(r.json.code).toBe('image_not_allowed');
      expect(r.json.detail).toContain('BROKER_IMAGE_ALLOW');
    }
    expect(r.json.detail).toContain('registry.local:5000/swe/task-1:v1');
  });

  it('refuses image with pool, and a malformed image, with 400s', async () => {
    expect((await tb.post('/session/acquire', { image: tb.broker.config.docker.image, pool: 'default' })).status).toBe(400);
    for (const image of ['NOPE', 'a b', '', 'x'.repeat(513), 'a@sha256:00', 7, ['a']]) {
      const r = await tb.post('/session/acquire', { image });
      expect(r.status).toBe(400);
      expect(r.json.code).toBe('bad_request');
    }
  });

  it('answers POST /images 501 and GET /images with nothing pulled', async () => {
    const warm = await tb.post('/images', { images: [{ image: 'registry.local:5000/swe/task-1:v1', sessions: 2 }] });
    expect(warm.status).toBe(501);
    const bad = await tb.post('/images', { images: [{ image: 'BAD' }] });
    expect(bad.status).toBe(400);
    expect((await tb.post('/images', { images: [] })).status).toBe(400);
    expect((await tb.post('/images', { pictures: [] })).status).toBe(400);
    const list = await tb.get('/images');
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ on_demand: false, pulls_in_flight: 0, images: [] });
    expect((await tb.health()) as unknown as Record<string, unknown>).not.toHaveProperty('images');
  });
});
