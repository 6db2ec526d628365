/**
 * A path no file system takes (a name over 255 bytes, a whole over 4095, a NUL byte), on every API
 * that takes one: a 400 in the API's own envelope that names the field, and nothing opened, made or
 * leased. An execd session's working directory of a few thousand characters once answered
 * 500 RUNTIME_ERROR after its shell had been opened (ENAMETOOLONG from its `mkdir -p`).
 */
import { startTestBroker, type TestBroker } from '../helpers/broker';

const LONG_NAME = 'a'.repeat(3000);
const LONG_PATH = 'd/'.repeat(2100) + 'x';

describe('paths too long or with NUL bytes: a 400, nothing changed', () => {
  let tb: TestBroker;
  let id: string;
  const execd = (): string => `/sandboxes/${id}/execd`;
  const json = { 'content-type': 'application/json' };
  /**
   * What a refused request must leave as it was: the sandbox's execd shells and what runs in them
   * (its execd's record, made by its first call, says none before it), the pool's counts, the files.
   */
  const state = async (): Promise<unknown> => {
    const h = await tb.health();
    const execdOf = tb.broker.execd.list().find((e) => e.id === id)?.detail ?? '0 command(s) running, 0 bash session(s)';
    return { execd: execdOf, open: tb.broker.execd.openShells(id), pool: [h.in_use_sessions, h.available_sessions], files: (await tb.exec(id, 'find . | sort')).stdout };
  };

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
    id = await tb.acquire();
    await tb.exec(id, 'mkdir -p d; echo kept > d/f.txt');
  }, 120_000);
  afterAll(() => tb?.close(), 60_000);

  it("execd: a session's working directory of 3000 characters is a 400 naming 'cwd', and no shell is opened", async () => {
    const before = await state();
    const r = await tb.request('POST', `${execd()}/session`, JSON.stringify({ cwd: LONG_NAME }), json);
    expect([r.status, r.json.code]).toEqual([400, 'INVALID_REQUEST_BODY']);
    expect(r.json.message).toMatch(/^'cwd' has a name "a+\.\.\." \(3000 bytes\) longer than a name may be \(255 bytes\)$/);
    expect(await state()).toEqual(before);
    // The sandbox still opens a session where asked.
    const ok = await tb.request('POST', `${execd()}/session`, JSON.stringify({ cwd: 'd' }), json);
    expect(ok.status).toBe(200);
    const ran = await tb.request('POST', `${execd()}/session/${ok.json.session_id}/run`, '{"command":"cat f.txt"}', json);
    expect(ran.text).toContain('"text":"kept"');
    expect((await tb.request('DELETE', `${execd()}/session/${ok.json.session_id}`)).status).toBe(200);
  });

  it.each([
    ['POST', '/session', { cwd: `${LONG_NAME}/x` }, "'cwd' has a name"],
    ['POST', '/session', { cwd: 'a\u0000b' }, "'cwd' must not contain NUL bytes"],
    ['POST', '/session', { cwd: LONG_PATH }, "'cwd' is 4201 bytes"],
    // relative: short enough as sent, too long once under the working directory
    ['POST', '/session', { cwd: 'd/'.repeat(2040) }, "'cwd' made absolute is"],
    ['POST', '/command', { command: 'pwd', cwd: LONG_NAME }, "'cwd' has a name"],
    ['GET', `/files/info?path=${LONG_NAME}`, undefined, "'path' has a name"],
    ['GET', `/files/download?path=${LONG_PATH}`, undefined, "'path' is 4201 bytes"],
    ['GET', '/files/download?path=d/f.txt%00x', undefined, 'without NUL bytes'],
    ['DELETE', `/directories?path=${LONG_NAME}`, undefined, "'path' has a name"],
    ['POST', '/directories', { [LONG_NAME]: { mode: 755 } }, 'has a name'],
    ['POST', '/files/mv', [{ src: 'd/f.txt', dest: LONG_NAME }], 'item 0: the path'],
  ])('execd: %s %s is a 400 that says why, and changes nothing', async (method, route, body, why) => {
    const before = await state();
    const r = await tb.request(method, `${execd()}${route}`, body === undefined ? undefined : JSON.stringify(body), json);
    expect([r.status, r.json.code]).toEqual([400, 'INVALID_REQUEST_BODY']);
    expect(r.json.message).toContain(why);
    expect(await state()).toEqual(before);
  });

  it("execd: a session's working directory that cannot be made (a file in its way) is a 400 that says so", async () => {
    const before = await state();
    const r = await tb.request('POST', `${execd()}/session`, JSON.stringify({ cwd: 'd/f.txt/sub' }), json);
    expect([r.status, r.json.code]).toEqual([400, 'INVALID_REQUEST_BODY']);
    expect(r.json.message).toMatch(/^cannot enter .*d\/f\.txt\/sub: .*Not a directory/);
    expect(await state()).toEqual(before);
  });

  it("the pool API: acquire's file paths too long are a 400, nothing leased; acquire_group's pool is the one it names", async () => {
    const before = await state();
    for (const files of [{ [LONG_NAME]: 'aGk=' }, { [`${'d/'.repeat(2040)}x`]: 'aGk=' }]) {
      const r = await tb.post('/session/acquire', { files });
      expect([r.status, r.json.code]).toEqual([400, 'bad_request']);
      expect(r.json.detail).toMatch(/^a file path (in the working directory )?(has a name|is \d+ bytes)/);
    }
    const group = await tb.post('/session/acquire_group', { n: 1, pool: 'nope' });
    expect([group.status, group.json.code]).toEqual([400, 'unknown_pool']);
    expect(await state()).toEqual(before);
  });

  it('the workspace API: a filename too long or with a NUL byte is a 400, nothing written', async () => {
    const before = await state();
    const write = await tb.post('/api/write', { filename: LONG_NAME, content: 'x' });
    const read = await tb.get(`/api/read?filename=${LONG_PATH}`);
    const nul = await tb.get('/api/read-partial?filename=a%00b');
    expect([write, read, nul].map((r) => [r.status, r.json.code])).toEqual([
      [400, 'bad_request'],
      [400, 'bad_request'],
      [400, 'bad_request'],
    ]);
    expect([write.json.detail, read.json.detail, nul.json.detail]).toEqual([expect.stringContaining("'filename' has a name"), expect.stringContaining("'filename' is 4201 bytes"), expect.stringContaining('NUL bytes')]);
    expect(await state()).toEqual(before);
  });
});
