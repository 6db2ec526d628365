/**
 * Images on demand against a real registry (Debian's docker-registry on loopback) and a real engine:
 * an acquire by image pulls once on a cold node and not at all on a warm one, concurrent first
 * acquires share one pull, later acquires are warm, and a bad, huge or hostile reference is a 400
 * with nothing started (docs/images.md).
 * @backend docker
 */
import { describeDocker } from '../helpers/dockerSuite';
import type { TestRegistry } from '../../devtools/registry';
import { pullImage } from '../../devtools/taskImage';
import type { TestBroker } from '../helpers/broker';
import { engineHas, imagePoolContainers, pullsOk, startImageBroker, imageSuite } from '../helpers/imageBroker';

describeDocker('images on demand', () => {
  const suite = imageSuite();
  let registry: TestRegistry;
  let tb: TestBroker;
  beforeAll(() => {
    registry = suite.registry();
  });

  /** A task image in the registry and not on the engine (a cold node's view). */
  const coldImage = (name: string): Promise<string> => suite.coldImage(registry, `tasks/${name}`);

  it('pulls an image once on a cold node, serves its tests, and is warm for the next acquire', async () => {
    const image = await coldImage('cold');
    expect(await engineHas(image)).toBe(false);
    tb = suite.use(await startImageBroker(registry.address));
    const first = await tb.post('/session/acquire', { image });
    expect(first.status).toBe(200);
    expect(first.json.image_cost.kind).toBe('pulled');
    expect(first.json.image_cost.wait_ms).toBeGreaterThan(0);
    const run = await tb.exec(first.json.session_id, 'bash /repo/run-tests.sh');
    expect(run.stdout).toBe('ok tasks/cold:v1\n');
    await tb.release(first.json.session_id);
    const second = await tb.post('/session/acquire', { image });
    expect(second.status).toBe(200);
    expect(second.json.image_cost.kind).toBe('warm');
    await tb.release(second.json.session_id);
    expect(await pullsOk(tb)).toBe(1);
    const listed = (await tb.get('/images')).json;
    const view = listed.images.find((v: { image: string }) => v.image === image);
    expect(view).toMatchObject({ state: 'held', containers: 1, uses: 2 });
    expect(view.disk_bytes).toBeGreaterThan(1024 * 1024);
    const health = await tb.health();
    expect((health as unknown as { images: { images_held: number; pools: Record<string, unknown> } }).images.pools[image]).toMatchObject({ containers: 1 });
  });

  it('does not pull on a warm node: the image on the engine is started at once', async () => {
    const image = await coldImage('warm');
    await pullImage(image);
    tb = suite.use(await startImageBroker(registry.address));
    const r = await tb.post('/session/acquire', { image });
    expect(r.status).toBe(200);
    expect(r.json.image_cost.kind).toBe('started');
    expect((await tb.exec(r.json.session_id, 'bash /repo/run-tests.sh')).stdout).toBe('ok tasks/warm:v1\n');
    expect(await pullsOk(tb)).toBe(0);
  });

  it('shares one pull among concurrent first acquires, and grows the pool for them', async () => {
    const image = await coldImage('shared');
    tb = suite.use(await startImageBroker(registry.address));
    const answers = await Promise.all([1, 2, 3, 4].map(() => tb.post('/session/acquire', { image })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => a.json.image_cost.kind)).toEqual(['pulled', 'pulled', 'pulled', 'pulled']);
    expect(await pullsOk(tb)).toBe(1);
    expect(new Set(answers.map((a) => a.json.session_id)).size).toBe(4);
    // Four sessions at once from containers of two: the pool grew to two containers at least.
    const view = (await tb.get('/images')).json.images.find((v: { image: string }) => v.image === image);
    expect(view.containers).toBeGreaterThanOrEqual(2);
    expect(view.leased_sessions).toBe(4);
  });

  it('serves an acquire_group of one image whole, from the pool of that image', async () => {
    const image = await coldImage('group');
    tb = suite.use(await startImageBroker(registry.address));
    const r = await tb.post('/session/acquire_group', { image, n: 3 });
    expect(r.status).toBe(200);
    expect(r.json.sessions).toHaveLength(3);
    expect(r.json.image_cost.kind).toBe('pulled');
    for (const s of r.json.sessions) expect((await tb.exec(s.session_id, 'cat /repo/README')).stdout).toContain('tasks/group:v1');
  });

  it('sends an image a configured pool runs to that pool, and leaves clients that name no image as they were', async () => {
    tb = suite.use(await startImageBroker(registry.address));
    const plain = await tb.post('/session/acquire', {});
    expect(plain.status).toBe(200);
    expect(plain.json.image_cost).toBeUndefined();
    await tb.release(plain.json.session_id);
    const byImage = await tb.post('/session/acquire', { image: tb.broker.config.docker.image });
    expect(byImage.status).toBe(200);
    expect(byImage.json.image_cost.kind).toBe('warm');
    expect(tb.broker.pool.knows(byImage.json.session_id)).toBe(true);
    expect(await imagePoolContainers(tb)).toEqual([]);
  });

  it.each([
    ['upper case in a path', 'tasks/X'],
    ['a shell command', '$(touch /tmp/pwned)'],
    ['a huge reference', 'a'.repeat(600)],
    ['path traversal', '../../etc/passwd'],
    ['a newline', 'ubuntu\nlatest'],
    ['an empty string', ''],
    ['a number', 42],
    ['a bad digest', 'ubuntu@sha256:1234'],
  ])('refuses %s as image with a 400 and starts nothing', async (_what, image) => {
    tb = suite.use(await startImageBroker(registry.address));
    const r = await tb.post('/session/acquire', { image });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('bad_request');
    expect(r.json.detail).toContain("'image'");
    const group = await tb.post('/session/acquire_group', { image, n: 1 });
    expect(group.status).toBe(400);
    // Images earlier tests pulled are held (the engine has them); none has a pool, none is pulling.
    const report = (await tb.get('/images')).json;
    expect(report.pulls_in_flight).toBe(0);
    expect(report.images.filter((v: { containers: number }) => v.containers > 0)).toEqual([]);
    expect(await pullsOk(tb)).toBe(0);
    expect(await imagePoolContainers(tb)).toEqual([]);
  });

  it('refuses an image outside the allow-list with a 403 that names it, and pulls nothing', async () => {
    tb = suite.use(await startImageBroker(registry.address));
    const image = `${registry.address}/other/thing:v1`;
    const r = await tb.post('/session/acquire', { image });
    expect(r.status).toBe(403);
    expect(r.json.code).toBe('image_not_allowed');
    expect(r.json.detail).toContain(`${registry.address}/other/thing`);
    expect(await pullsOk(tb)).toBe(0);
    expect(await imagePoolContainers(tb)).toEqual([]);
  });
});
