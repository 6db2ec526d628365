/**
 * The task API on the local backend: task sandboxes need Docker, so a valid request is a clear 501;
 * a bad one is a 400 first (nothing is started either way), and the token rules are the broker's.
 * @backend local
 */
import { startTestBroker, type TestBroker } from '../helpers/broker';

describe('task sandboxes on the local backend', () => {
  let tb: TestBroker;
  let locked: TestBroker;

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_BACKEND: 'local', BROKER_GIT_BASE_URL: '/nonexistent' });
    locked = await startTestBroker({ BROKER_BACKEND: 'local', BROKER_TOKEN: 'tok' });
  });

  afterAll(async () => {
    await tb?.close();
    await locked?.close();
  });

  it('answers a valid POST /sandboxes 501, saying what is needed', async () => {
    const r = await tb.post('/sandboxes', { repo: 'acme/demo', prompt: 'hi' });
    expect(r.status).toBe(501);
    expect(r.json).toEqual({ code: 'tasks_not_available', detail: expect.stringMatching(/need the Docker backend \(BROKER_BACKEND=docker\)/) });
  });

  it.each([
    ['/sandboxes/task-1', 'GET'],
    ['/sandboxes/task-1/stream/control', 'GET'],
    ['/sandboxes/task-1/stream/coding', 'GET'],
    ['/sandboxes/task-1/abort', 'POST'],
    ['/sandboxes/task-1', 'DELETE'],
  ])('answers %s (%s) 501 too', async (path, method) => {
    const r = await tb.request(method, path);
    expect(r.status).toBe(501);
    expect(JSON.parse(r.text).code).toBe('tasks_not_available');
  });

  it.each([
    [{}, /'repo' must be "org\/name"/],
    [{ repo: 'no-slash' }, /'repo' must be "org\/name"/],
    [{ repo: 'acme/demo', prompt: 42 }, /'prompt' must be a non-empty string/],
    [{ repo: 'acme/demo', image: 'x' }, /unknown field 'image'/],
  ])('answers a bad body %j 400 before anything else', async (body, detail) => {
    const r = await tb.post('/sandboxes', body);
    expect(r.status).toBe(400);
    expect(r.json.detail).toMatch(detail);
  });

  it('answers bad JSON and a bad follow-up 400', async () => {
    expect((await tb.postRaw('/sandboxes', '{oops', { 'content-type': 'application/json' })).status).toBe(400);
    const r = await tb.post('/sandboxes/task-1/prompt', { text: 'wrong field' });
    expect(r.status).toBe(400);
    expect(r.json.detail).toMatch(/'message' must be a non-empty string/);
  });

  it('needs the token like every other route', async () => {
    expect((await locked.post('/sandboxes', { repo: 'acme/demo' })).status).toBe(401);
    expect((await locked.request('GET', '/sandboxes/task-1/stream/control')).status).toBe(401);
    expect((await locked.post('/sandboxes', { repo: 'acme/demo' }, { authorization: 'Bearer tok' })).status).toBe(501);
  });
});
