/**
 * Images on demand beyond the pool API, against a real registry and engine: POST /images keeps an
 * image warm ahead of a run (pulled in the background, its pool started, progress in GET /images),
 * and the lifecycle API's create of an allowed image is a lease of its image pool, whose image.auth
 * may only name the node's own credentials and whose pause is refused (docs/images.md).
 * @backend docker
 */
import { describeDocker } from '../helpers/dockerSuite';
import { TestRegistry } from '../../devtools/registry';
import { pushTaskImage, removeImage } from '../../devtools/taskImage';
import { eventually, type TestBroker } from '../helpers/broker';
import { imagePoolContainers, pullsOk, startImageBroker } from '../helpers/imageBroker';

describeDocker('images on demand: warm-ups and lifecycle sandboxes', () => {
  let registry: TestRegistry;
  let tb: TestBroker;
  let warmed: string;
  let sandboxImage: string;

  beforeAll(async () => {
    registry = await TestRegistry.start();
    warmed = (await pushTaskImage(registry, 'tasks/warmed', 'v1', { keepLocal: false })).ref;
    sandboxImage = (await pushTaskImage(registry, 'tasks/sandbox', 'v1', { keepLocal: false })).ref;
    tb = await startImageBroker(registry.address);
  }, 240_000);

  afterAll(async () => {
    await tb?.close();
    for (const ref of [warmed, sandboxImage]) if (ref) await removeImage(ref).catch(() => false);
    await registry?.destroy();
  });

  it('keeps an image warm ahead of a run: pulled in the background, its sessions free for the first acquire', async () => {
    const asked = await tb.post('/images', { images: [{ image: warmed, sessions: 4 }] });
    expect(asked.status).toBe(202);
    expect(asked.json.images).toEqual([expect.objectContaining({ image: warmed, sessions: 4 })]);
    await eventually(async () => {
      const v = (await tb.get('/images')).json.images.find((i: { image: string }) => i.image === warmed);
      return v?.warmup?.state === 'warm' && v.warm_sessions === 4;
    }, 90_000, 'the warm-up to finish with 4 free sessions');
    expect(await pullsOk(tb)).toBe(1);
    const r = await tb.post('/session/acquire', { image: warmed });
    expect(r.status).toBe(200);
    expect(r.json.image_cost.kind).toBe('warm');
    await tb.release(r.json.session_id);
    // A warm-up of an image that is not allowed is refused whole, before anything starts.
    const refused = await tb.post('/images', { images: [{ image: warmed }, { image: `${registry.address}/other/x:v1` }] });
    expect(refused.status).toBe(403);
    expect(await pullsOk(tb)).toBe(1);
  });

  it("creates a lifecycle sandbox of an allowed image as a lease of its pool; image.auth names only the node's credentials; pause is refused", async () => {
    const headers = { 'content-type': 'application/json' };
    const body = { image: { uri: sandboxImage }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: {} };
    const created = await tb.request('POST', '/v1/sandboxes', JSON.stringify(body), headers);
    expect(created.status).toBe(202);
    const id = created.json.id as string;
    const file = await tb.get(`/sandboxes/${id}/execd/files/download?path=${encodeURIComponent('/repo/README')}`);
    expect(file.status).toBe(200);
    expect(file.text).toContain('tasks/sandbox:v1');
    const view = (await tb.get('/images')).json.images.find((i: { image: string }) => i.image === sandboxImage);
    expect(view).toMatchObject({ leased_sessions: 1 });
    const pause = await tb.request('POST', `/v1/sandboxes/${id}/pause`, undefined, {});
    expect(pause.status).toBe(409);
    expect((await tb.request('DELETE', `/v1/sandboxes/${id}`)).status).toBe(204);
    const containers = (await imagePoolContainers(tb)).length;

    const named = await tb.request('POST', '/v1/sandboxes', JSON.stringify({ ...body, image: { uri: sandboxImage, auth: { username: 'someone', password: 'theirs' } } }), headers);
    expect(named.status).toBe(403);
    expect(named.json.message).toContain('image.auth');
    const dedicatedWithAuth = await tb.request('POST', '/v1/sandboxes', JSON.stringify({ ...body, image: { uri: 'bash-broker-test:latest', auth: { username: 'u' } } }), headers);
    expect(dedicatedWithAuth.status).toBe(501);
    // The refused creates started nothing.
    expect(await imagePoolContainers(tb)).toHaveLength(containers);
  });
});
