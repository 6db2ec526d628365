/**
 * The workspace API's files: /api/write, /api/read, /api/read-partial act inside the workspace's
 * container, against its directory, and never outside it.
 */
import { startTestBroker, b64, type TestBroker } from '../helpers/broker';

describe('workspace: files', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_WORKSPACE_MAX_READ_BYTES: '4096' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  const run = async (command: string): Promise<string> => {
    const r = await tb.post('/api/execute', { command });
    expect(r.json.returncode).toBe(0);
    return r.json.stdout as string;
  };

  it('writes a file the shell sees, in the workspace directory, parents made', async () => {
    const w = await tb.post('/api/write', { filename: 'dir/sub/hello.txt', content: 'héllo\n' });
    expect(w.status).toBe(200);
    expect(w.json).toMatchObject({ filename: 'dir/sub/hello.txt', bytes_written: 7, path: expect.stringMatching(/\/dir\/sub\/hello\.txt$/) });
    expect(await run('cat dir/sub/hello.txt')).toBe('héllo\n');
    expect(w.json.path).toBe(`${(await run('pwd')).trim()}/dir/sub/hello.txt`);
  });

  it('reads what the shell wrote, whole: text as utf-8, other bytes as base64', async () => {
    await run("printf 'from the shell\\n' > made.txt; printf '\\377\\000\\001' > bin.dat");
    expect((await tb.get('/api/read?filename=made.txt')).json).toMatchObject({ filename: 'made.txt', size: 15, content: 'from the shell\n', encoding: 'utf-8' });
    expect((await tb.get('/api/read?filename=bin.dat')).json).toMatchObject({ size: 3, content: b64(Buffer.from([0xff, 0, 1])), encoding: 'base64' });
  });

  it('writes base64 content byte for byte', async () => {
    expect((await tb.post('/api/write', { filename: 'b.bin', content: b64(Buffer.from([0, 0xfe, 0x41])), encoding: 'base64' })).status).toBe(200);
    expect(await run('od -An -tx1 b.bin | tr -d " \\n"; echo')).toBe('00fe41\n');
    expect((await tb.post('/api/write', { filename: 'x', content: 'y', encoding: 'latin1' })).status).toBe(400);
    expect((await tb.post('/api/write', { filename: 'x', content: '%%%', encoding: 'base64' })).status).toBe(400);
  });

  it('reads part of a file: bytes from an offset, the total size, whether more follows', async () => {
    await tb.post('/api/write', { filename: 'abc.txt', content: 'abcdefghij' });
    expect((await tb.get('/api/read-partial?filename=abc.txt&offset=2&limit=3')).json).toMatchObject({
      offset: 2,
      length: 3,
      total_size: 10,
      has_more: true,
      content: 'cde',
      encoding: 'utf-8',
    });
    expect((await tb.get('/api/read-partial?filename=abc.txt&offset=7&limit=100')).json).toMatchObject({ length: 3, has_more: false, content: 'hij' });
    expect((await tb.get('/api/read-partial?filename=abc.txt&offset=50')).json).toMatchObject({ length: 0, total_size: 10, has_more: false, content: '' });
    expect((await tb.get('/api/read-partial?filename=abc.txt&offset=-1')).status).toBe(400);
  });

  it('answers 413 for a whole read past the bound; read-partial pages through it', async () => {
    await run('head -c 5000 /dev/zero | tr "\\0" z > big.txt');
    const r = await tb.get('/api/read?filename=big.txt');
    expect(r.status).toBe(413);
    expect(r.json.code).toBe('payload_too_large');
    const part = (await tb.get('/api/read-partial?filename=big.txt&offset=0&limit=100000')).json;
    expect(part).toMatchObject({ length: 4096, total_size: 5000, has_more: true });
  });

  it('answers 404 for a missing file, 400 for a directory', async () => {
    const missing = await tb.get('/api/read?filename=nope.txt');
    expect(missing.status).toBe(404);
    expect(missing.json.code).toBe('file_not_found');
    await run('mkdir -p adir');
    expect((await tb.get('/api/read?filename=adir')).status).toBe(400);
    expect((await tb.post('/api/write', { filename: 'adir', content: 'x' })).status).toBe(400);
    expect((await tb.get('/api/read')).status).toBe(400);
  });

  it('refuses with 403 a path that leaves the workspace directory, by name or through a symlink', async () => {
    for (const filename of ['../escape.txt', '/etc/passwd', 'a/../../x', '.']) {
      expect((await tb.get(`/api/read?filename=${encodeURIComponent(filename)}`)).status).toBe(403);
      expect((await tb.post('/api/write', { filename, content: 'x' })).status).toBe(403);
    }
    await run('ln -sf /etc/passwd link-out; ln -sfn /tmp dir-out');
    const r = await tb.get('/api/read?filename=link-out');
    expect(r.status).toBe(403);
    expect(r.json.code).toBe('forbidden');
    expect((await tb.post('/api/write', { filename: 'dir-out/planted.txt', content: 'x' })).status).toBe(403);
    expect((await tb.post('/api/write', { filename: 'link-out', content: 'x' })).status).toBe(403);
    expect(await run('test -e /tmp/planted.txt && echo planted || echo clean')).toBe('clean\n');
  });

  it('acts in a named workspace against its own directory', async () => {
    const id = (await tb.post('/workspaces')).json.workspace_id as string;
    try {
      await tb.post(`/workspaces/${id}/api/write`, { filename: 'only-here.txt', content: 'named' });
      expect((await tb.get(`/workspaces/${id}/api/read?filename=only-here.txt`)).json.content).toBe('named');
      expect((await tb.get('/api/read?filename=only-here.txt')).status).toBe(404);
      expect((await tb.get('/workspaces/nope/api/read?filename=x')).status).toBe(404);
    } finally {
      await tb.request('DELETE', `/workspaces/${id}`);
    }
  });
});
