/**
 * Images on demand when things go wrong, against a real registry and engine: a tag the registry does
 * not have, credentials it refuses, the registry stopped in the middle of a pull, and a disk budget
 * too small for every image (docs/images.md, Failure answers and Disk). Each waiter gets the same
 * clear answer, no partial pool is left, and the next acquire tries again.
 * @backend docker
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeDocker } from '../helpers/dockerSuite';
import { TestRegistry } from '../../devtools/registry';
import { eventually, type HttpResult, type TestBroker } from '../helpers/broker';
import { engineHas, imagePoolContainers, pullsFailed, pullsOk, startImageBroker, imageSuite } from '../helpers/imageBroker';
import { dockerEngine } from '../../src/backends/docker/containers/engine';

const MIB = 1024 * 1024;

describeDocker('images on demand: failures', () => {
  const suite = imageSuite();
  let registry: TestRegistry;
  let tb: TestBroker;
  beforeAll(() => {
    registry = suite.registry();
  });
  const coldImage = (reg: TestRegistry, repository: string, bytes?: number): Promise<string> => suite.coldImage(reg, repository, bytes);

  async function imageView(broker: TestBroker, image: string): Promise<{ acquires_waiting: number } | undefined> {
    return (await broker.get('/images')).json.images.find((v: { image: string }) => v.image === image);
  }

  async function noPoolLeft(broker: TestBroker, image: string): Promise<void> {
    expect(await imagePoolContainers(broker)).toEqual([]);
    const view = (await broker.get('/images')).json.images.find((v: { image: string }) => v.image === image);
    expect(view?.containers ?? 0).toBe(0);
    expect(await engineHas(image)).toBe(false);
  }

  it('fails every waiter of a tag the registry does not have with one 404 that names it, and tries again on the next acquire', async () => {
    await coldImage(registry, 'tasks/known');
    const image = `${registry.address}/tasks/known:nope`;
    tb = suite.use(await startImageBroker(registry.address));
    // The registry frozen until all three acquires wait on the pull: else a fast 404 fails the first
    // pull before a slow request arrives, and that one rightly tries again.
    registry.pause();
    let answers: HttpResult[];
    try {
      const pending = [1, 2, 3].map(() => tb.post('/session/acquire', { image }));
      await eventually(async () => imageView(tb, image).then((v) => v?.acquires_waiting === 3), 60_000, 'three acquires waiting on the pull');
      registry.resume();
      answers = await Promise.all(pending);
    } finally {
      registry.resume();
    }
    for (const a of answers) {
      expect(a.status).toBe(404);
      expect(a.json.code).toBe('image_not_found');
      expect(a.json.detail).toContain(image);
    }
    expect(await pullsFailed(tb)).toBe(1);
    await noPoolLeft(tb, image);
    expect((await tb.get('/images')).json.images.find((v: { image: string }) => v.image === image)).toMatchObject({ state: 'failed', error: { code: 'image_not_found' } });
    const again = await tb.post('/session/acquire', { image });
    expect(again.status).toBe(404);
    expect(await pullsFailed(tb)).toBe(2);
  });

  describe('a registry that wants credentials', () => {
    let locked: TestRegistry;
    let image: string;
    beforeAll(async () => {
      locked = await TestRegistry.start({ auth: { username: 'rl', password: 'right-secret-7' } });
      image = await coldImage(locked, 'tasks/locked');
    }, 180_000);
    afterAll(async () => {
      await locked?.destroy();
    });

    it.each([
      ['none configured', {}],
      ['a wrong password', { BROKER_REGISTRY_AUTH: '' }],
    ])('refuses the pull with %s: 403 registry_denied to every waiter, nothing left', async (what, env) => {
      const auth = what === 'a wrong password' ? { BROKER_REGISTRY_AUTH: JSON.stringify({ [locked.address]: { username: 'rl', password: 'wrong' } }) } : env;
      tb = suite.use(await startImageBroker(locked.address, auth));
      const answers = await Promise.all([1, 2].map(() => tb.post('/session/acquire', { image })));
      for (const a of answers) {
        expect(a.status).toBe(403);
        expect(a.json.code).toBe('registry_denied');
        expect(a.json.detail).toContain(image);
        expect(a.json.detail).not.toContain('wrong');
      }
      await noPoolLeft(tb, image);
    });

    it("pulls with the node's own credentials, which never reach the sandbox", async () => {
      tb = suite.use(await startImageBroker(locked.address, { BROKER_REGISTRY_AUTH: JSON.stringify({ [locked.address]: { username: 'rl', password: 'right-secret-7' } }) }));
      const r = await tb.post('/session/acquire', { image });
      expect(r.status).toBe(200);
      const seen = await tb.exec(r.json.session_id, 'env; cat /proc/1/environ 2>/dev/null | tr "\\0" "\\n"; grep -rs right-secret /etc /root /tmp 2>/dev/null | head -1');
      expect(seen.stdout).not.toContain('right-secret-7');
      const inspect = await dockerEngine().getContainer((await imagePoolContainers(tb))[0].replace(/^\//, '')).inspect();
      expect(JSON.stringify(inspect.Config.Env)).not.toContain('right-secret-7');
      expect((await tb.get('/images')).text).not.toContain('right-secret-7');
    });
  });

  it('fails every waiter with 503 and Retry-After when the registry stops in the middle of a pull, and pulls again once it is back', async () => {
    // A proxy in front of the registry: the first large blob it relays stops the registry mid-transfer.
    let cut = false;
    const proxy = http.createServer((req, res) => {
      const upstream = http.request({ host: '127.0.0.1', port: registry.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        const big = Number(up.headers['content-length'] ?? 0) > 4 * MIB;
        if (!cut && big && req.url?.includes('/blobs/')) {
          cut = true;
          up.once('data', (chunk: Buffer) => {
            res.write(chunk);
            void registry.stop().then(() => res.destroy());
          });
          return;
        }
        up.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyAddress = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const pushedRef = await coldImage(registry, 'tasks/big', 24 * MIB);
      const image = pushedRef.replace(registry.address, proxyAddress);
      tb = suite.use(await startImageBroker(proxyAddress, { BROKER_IMAGE_PULL_STALL: '3' }));
      const answers = await Promise.all([1, 2, 3].map(() => tb.post('/session/acquire', { image })));
      expect(cut).toBe(true);
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.json.code).toBe('registry_unavailable');
        expect(a.json.detail).toContain(image);
        expect(Number(a.headers['retry-after'])).toBeGreaterThan(0);
      }
      await noPoolLeft(tb, image);
      await registry.run();
      const again = await tb.post('/session/acquire', { image });
      expect(again.status).toBe(200);
      expect(again.json.image_cost.kind).toBe('pulled');
      suite.forget(image);
    } finally {
      if (!registry.running) await registry.run();
      proxy.close();
    }
  });

  it('evicts the least recently used image no pool uses when a pull would pass the budget, keeps the one in use, and refuses one that cannot fit', async () => {
    const base = (await dockerEngine().getImage('bash-broker-test:latest').inspect()).Size;
    const [a, b, c] = [await coldImage(registry, 'evict/a', 2 * MIB), await coldImage(registry, 'evict/b', 2 * MIB), await coldImage(registry, 'evict/c', 2 * MIB)];
    const huge = await coldImage(registry, 'evict/huge', 16 * MIB);
    // Room for the base and two task layers, not three.
    const budget = base + 5 * MIB;
    tb = suite.use(await startImageBroker(registry.address, { BROKER_IMAGE_ALLOW: `${registry.address}/evict/*`, BROKER_IMAGE_DISK: String(budget), BROKER_IMAGE_POOL_IDLE: '1' }));
    const held = await tb.post('/session/acquire', { image: a });
    expect(held.status).toBe(200);
    const passing = await tb.post('/session/acquire', { image: b });
    expect(passing.status).toBe(200);
    await tb.release(passing.json.session_id);
    // b's pool goes idle and closes: nothing uses b any more.
    await eventually(async () => (await imagePoolContainers(tb)).length === 1, 30_000, "b's pool to close");
    const third = await tb.post('/session/acquire', { image: c });
    expect(third.status).toBe(200);
    expect(await engineHas(b)).toBe(false);
    expect(await engineHas(a)).toBe(true);
    const report = (await tb.get('/images')).json;
    expect(report.evictions).toBeGreaterThanOrEqual(1);
    expect(report.disk_used_bytes).toBeLessThanOrEqual(budget);
    expect((await tb.exec(held.json.session_id, 'bash /repo/run-tests.sh')).stdout).toBe('ok evict/a:v1\n');
    const tooBig = await tb.post('/session/acquire', { image: huge });
    expect(tooBig.status).toBe(507);
    expect(tooBig.json.code).toBe('image_too_large');
    expect(tooBig.json.detail).toContain(huge);
    expect(await engineHas(huge)).toBe(false);
    expect(await engineHas(a)).toBe(true);
    expect(await pullsOk(tb)).toBe(3);
  });
});
