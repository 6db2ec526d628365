/**
 * Errors: malformed requests get a 4xx JSON {"detail": ...} that says what is wrong,
 * and a rejected request changes nothing: no session held, nothing written, nothing run.
 *
 * A bad request is refused before any backend sees it, so one backend proves it:
 * @backend any
 */
import { randomBytes } from 'node:crypto';
import { startTestBroker, b64, type TestBroker, type HttpResult } from '../helpers/broker';

function expect4xx(r: HttpResult, detail: RegExp): void {
  expect(r.status).toBeGreaterThanOrEqual(400);
  expect(r.status).toBeLessThan(500);
  expect(r.headers['content-type']).toMatch(/application\/json/);
  expect(typeof r.json?.detail).toBe('string');
  expect(r.json.detail).toMatch(detail);
}

describe('request validation', () => {
  let tb: TestBroker;
  let id: string;
  beforeAll(async () => {
    tb = await startTestBroker();
    id = await tb.acquire();
  });
  afterAll(async () => {
    await tb.release(id);
    await tb.close();
  });

  /** A rejected request holds no session: /health counts are exactly what they were. */
  async function expectNoSessionTaken(run: () => Promise<void>): Promise<void> {
    const before = await tb.health();
    await run();
    expect(await tb.health()).toEqual(before);
  }

  describe('execute', () => {
    it.each([
      ['invalid JSON', '{"command": "echo hi"', /not valid JSON/],
      ['truncated JSON', '{', /not valid JSON/],
      ['a JSON array', '["echo hi"]', /must be a JSON object/],
      ['a JSON string', '"echo hi"', /must be a JSON object/],
      ['a JSON number', '42', /must be a JSON object/],
      ['JSON null', 'null', /must be a JSON object/],
      ['an empty body', '', /must be a JSON object/],
    ])('rejects %s', async (_name, raw, detail) => {
      await expectNoSessionTaken(async () => {
        expect4xx(await tb.postRaw(`/session/${id}/execute`, raw, { 'content-type': 'application/json' }), detail);
      });
    });

    it.each([
      ['a missing command', {}, /'command' is required/],
      ['a numeric command', { command: 42 }, /'command' must be a string/],
      ['a null command', { command: null }, /'command' must be a string/],
      ['a list as command', { command: ['echo', 'hi'] }, /'command' must be a string/],
      ['a command with a NUL byte', { command: 'echo a\u0000b' }, /NUL/],
      ['a string timeout', { command: 'touch ran', timeout: '5' }, /'timeout' must be a number/],
      ['a boolean timeout', { command: 'touch ran', timeout: true }, /'timeout' must be a number/],
      ['a list timeout', { command: 'touch ran', timeout: [1] }, /'timeout' must be a number/],
      ['a zero timeout', { command: 'touch ran', timeout: 0 }, /'timeout' must be positive/],
      ['a negative timeout', { command: 'touch ran', timeout: -1 }, /'timeout' must be positive/],
      ['an absurd timeout', { command: 'touch ran', timeout: 1e12 }, /'timeout' must be at most/],
    ])('rejects %s and runs nothing', async (_name, body, detail) => {
      await expectNoSessionTaken(async () => {
        expect4xx(await tb.post(`/session/${id}/execute`, body), detail);
      });
      expect(await tb.exec(id, 'ls -A')).toMatchObject({ stdout: '' });
    });

    it('accepts an integer, a float and a null timeout', async () => {
      for (const timeout of [5, 2.5, null]) {
        const r = await tb.post(`/session/${id}/execute`, { command: 'echo ok', timeout });
        expect(r.status).toBe(200);
        expect(r.json.stdout).toBe('ok\n');
      }
    });

    it('reads the body as JSON whatever the content type says', async () => {
      const r = await tb.postRaw(`/session/${id}/execute`, JSON.stringify({ command: 'echo typed' }), { 'content-type': 'text/plain' });
      expect(r.status).toBe(200);
      expect(r.json.stdout).toBe('typed\n');
    });
  });

  describe('acquire', () => {
    it.each([
      ['invalid JSON', '{"files": {', /not valid JSON/],
      ['a JSON array', '[]', /must be a JSON object/],
      ['a JSON string', '"x"', /must be a JSON object/],
      ['JSON null', 'null', /must be a JSON object/],
    ])('rejects %s', async (_name, raw, detail) => {
      await expectNoSessionTaken(async () => {
        expect4xx(await tb.postRaw('/session/acquire', raw, { 'content-type': 'application/json' }), detail);
      });
    });

    it.each([
      ['startup_commands as a string', { startup_commands: 'echo hi' }, /'startup_commands' must be a list of strings/],
      ['startup_commands as an object', { startup_commands: { a: 'echo' } }, /'startup_commands' must be a list of strings/],
      ['a number among startup_commands', { startup_commands: ['echo ok', 5] }, /startup_commands\[1\]' must be a string/],
      ['a null among startup_commands', { startup_commands: [null] }, /startup_commands\[0\]' must be a string/],
      ['files as a list', { files: ['a.txt'] }, /'files' must be an object/],
      ['files as a string', { files: 'a.txt' }, /'files' must be an object/],
    ])('rejects %s', async (_name, body, detail) => {
      await expectNoSessionTaken(async () => {
        expect4xx(await tb.post('/session/acquire', body), detail);
      });
    });

    it('rejects bad file paths and contents, writes none of the request\'s files, and runs no startup command', async () => {
      const tag = randomBytes(6).toString('hex');
      const ok = { [`ok-${tag}.txt`]: b64('fine'), [`sub-${tag}/ok.txt`]: b64('fine') };
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ ...ok, [`bad-${tag}.txt`]: 'not base64!!' }, /not valid base64/],
        [{ ...ok, [`bad-${tag}.txt`]: 'YWJj=' }, /not valid base64/],
        [{ ...ok, [`bad-${tag}.txt`]: 42 }, /must be a base64 string/],
        [{ ...ok, [`/tmp/abs-${tag}.txt`]: b64('x') }, /must be relative/],
        [{ ...ok, [`../up-${tag}.txt`]: b64('x') }, /must not contain '\.\.'/],
        [{ ...ok, [`a/../../up2-${tag}.txt`]: b64('x') }, /must not contain '\.\.'/],
        [{ ...ok, [`dir-${tag}/..`]: b64('x') }, /must not contain '\.\.'/],
        [{ ...ok, '': b64('x') }, /must not be empty/],
        [{ ...ok, [`dir-${tag}/`]: b64('x') }, /does not name a file/],
        [{ ...ok, [`clash-${tag}`]: b64('x'), [`clash-${tag}/inner`]: b64('y') }, /both a file and the directory/],
      ];
      for (const [files, detail] of cases) {
        await expectNoSessionTaken(async () => {
          const r = await tb.post('/session/acquire', { files, startup_commands: [`touch /tmp/s/ran-${tag}`] });
          expect4xx(r, detail);
        });
      }
      // Nothing of any rejected request exists anywhere it could have landed (seen from a session).
      const found = await tb.exec(id, `find /tmp/s /tmp -maxdepth 3 -name '*${tag}*' 2>/dev/null; true`);
      expect(found.stdout).toBe('');
    });

    it('takes a path starting with ./ and normalises it inside the working directory', async () => {
      const r = await tb.post('/session/acquire', { files: { './a//b/./c.txt': b64('ok') } });
      expect(r.status).toBe(200);
      const sid = r.json.session_id;
      expect((await tb.exec(sid, 'cat a/b/c.txt')).stdout).toBe('ok');
      await tb.release(sid);
    });
  });

  describe('routes', () => {
    it('answers unknown routes with a JSON 404', async () => {
      const r = await tb.get('/no/such/route');
      expect(r.status).toBe(404);
      expect(r.json.detail).toMatch(/Not Found/);
    });

    it('does not take GET for pool operations', async () => {
      const r = await tb.get('/session/acquire');
      expect(r.status).toBe(404);
      expect(typeof r.json.detail).toBe('string');
    });

    it('release accepts any body (or none)', async () => {
      const sid = await tb.acquire();
      const r = await tb.postRaw(`/session/${sid}/release`, '');
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ status: 'released' });
    });
  });
});
