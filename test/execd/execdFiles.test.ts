/**
 * OpenSandbox's execd API: execd's files and directories under /sandboxes/{id}/execd, driven by
 * OpenSandbox's own TypeScript SDK (its FilesystemAdapter, unchanged) and, for status codes and
 * headers the SDK hides, by undici with the same wire format. Every effect is checked from inside
 * the sandbox, through its own shell.
 */
import { randomBytes } from 'node:crypto';
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { sdkExecd, type SdkFiles } from '../helpers/execdSdk';

describe('execd files (OpenSandbox SDK)', () => {
  let tb: TestBroker;
  let id: string;
  let home: string;
  let files: SdkFiles;
  const base = (): string => `/sandboxes/${id}/execd`;
  const sh = async (command: string): Promise<string> => {
    const r = await tb.exec(id, command);
    if (r.return_code !== 0) throw new Error(`${command}: ${r.return_code} ${r.stderr}`);
    return r.stdout;
  };

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_EXECD_MAX_UPLOAD_BYTES: '4m', BROKER_EXECD_MAX_REPLACE_BYTES: '1m' });
    id = await tb.acquire();
    home = (await sh('pwd')).trim();
    files = sdkExecd(tb.url, id).files;
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('uploads text and binary files the shell sees byte for byte, with their modes, and downloads them back', async () => {
    const binary = randomBytes(70_000);
    await files.writeFiles([
      { path: `${home}/up/hello.txt`, data: 'héllo\n', mode: 600 },
      { path: `${home}/up/blob.bin`, data: binary },
    ]);
    expect(await sh('cat up/hello.txt; stat -c %a up/hello.txt up/blob.bin')).toBe('héllo\n600\n644\n');
    expect(await sh('od -An -tx1 -N4 up/blob.bin | tr -d " \\n"')).toBe(binary.subarray(0, 4).toString('hex'));
    expect(Buffer.from(await files.readBytes(`${home}/up/blob.bin`)).equals(binary)).toBe(true);
    expect(await files.readFile(`${home}/up/hello.txt`)).toBe('héllo\n');
  });

  it('streams an upload and a download of several MB (the SDK streaming path)', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 7);
    async function* chunks(): AsyncIterable<Uint8Array> {
      for (let at = 0; at < data.length; at += 100_000) yield data.subarray(at, at + 100_000);
    }
    await files.writeFiles([{ path: `${home}/big.bin`, data: chunks() }]);
    expect((await sh('stat -c %s big.bin')).trim()).toBe(String(data.length));
    const parts: Buffer[] = [];
    for await (const c of files.readBytesStream(`${home}/big.bin`)) parts.push(Buffer.from(c));
    expect(Buffer.concat(parts).equals(data)).toBe(true);
  });

  it('answers 413 for an upload over the limit and writes nothing of it', async () => {
    const r = await upload(`${home}/toobig.bin`, randomBytes(4 * 1024 * 1024 + 1));
    expect(r.status).toBe(413);
    expect(r.json).toEqual({ code: 'INVALID_REQUEST_BODY', message: expect.stringContaining('BROKER_EXECD_MAX_UPLOAD_BYTES') });
    expect(await sh('ls -A | grep -c toobig || true')).toBe('0\n');
  });

  it('serves Range: 206 with Content-Range, a suffix range, the whole file without one, 416 for a bad range', async () => {
    await sh("printf 'abcdefghij' > r.txt");
    const path = encodeURIComponent(`${home}/r.txt`);
    const part = await tb.request('GET', `${base()}/files/download?path=${path}`, undefined, { range: 'bytes=2-5' });
    expect([part.status, part.text, part.headers['content-range'], part.headers['content-length']]).toEqual([206, 'cdef', 'bytes 2-5/10', '4']);
    const suffix = await tb.request('GET', `${base()}/files/download?path=${path}`, undefined, { range: 'bytes=-3' });
    expect([suffix.status, suffix.text]).toEqual([206, 'hij']);
    const whole = await tb.request('GET', `${base()}/files/download?path=${path}`);
    expect([whole.status, whole.text, whole.headers['content-disposition']]).toEqual([200, 'abcdefghij', expect.stringContaining('filename="r.txt"')]);
    expect(await files.readFile(`${home}/r.txt`, { range: 'bytes=7-' })).toBe('hij');
    for (const range of ['bytes=10-', 'bytes=5-2', 'lines=1-2']) {
      const bad = await tb.request('GET', `${base()}/files/download?path=${path}`, undefined, { range });
      expect([bad.status, bad.headers['content-range'], bad.json?.code]).toEqual([416, 'bytes */10', 'RANGE_NOT_SATISFIABLE']);
    }
  });

  it('reports file info: type, size, mode, owner, ISO dates', async () => {
    await sh("mkdir -p info && printf '12345' > info/f && chmod 751 info/f");
    const owner = (await sh('id -un')).trim();
    const info = await files.getFileInfo([`${home}/info/f`, `${home}/info`]);
    expect(info[`${home}/info/f`]).toMatchObject({ path: `${home}/info/f`, type: 'file', size: 5, mode: 751, owner });
    expect(info[`${home}/info`]).toMatchObject({ type: 'directory', mode: 755 });
    expect(info[`${home}/info/f`].modifiedAt).toBeInstanceOf(Date);
    expect(Math.abs(info[`${home}/info/f`].modifiedAt!.getTime() - Date.now())).toBeLessThan(10 * 60_000);
  });

  it('creates directories with their mode, lists them in order to a depth, deletes them', async () => {
    await files.createDirectories([{ path: `${home}/tree/a/deep`, mode: 700 }, { path: `${home}/tree/b`, mode: 755 }]);
    await sh('touch tree/a/z.txt tree/a/m.txt tree/top.txt && ln -s a tree/link');
    expect(await sh('stat -c %a tree/a/deep tree/b')).toBe('700\n755\n');
    const one = await files.listDirectory({ path: `${home}/tree` });
    expect(one.map((e) => [e.path.slice(home.length), e.type])).toEqual([
      ['/tree/a', 'directory'],
      ['/tree/b', 'directory'],
      ['/tree/link', 'symlink'],
      ['/tree/top.txt', 'file'],
    ]);
    const two = await files.listDirectory({ path: `${home}/tree`, depth: 2 });
    expect(two.map((e) => e.path.slice(home.length))).toEqual(['/tree/a', '/tree/a/deep', '/tree/a/m.txt', '/tree/a/z.txt', '/tree/b', '/tree/link', '/tree/top.txt']);
    const listLink = await tb.request('GET', `${base()}/directories/list?path=${encodeURIComponent(`${home}/tree/link`)}`);
    expect([listLink.status, listLink.json.code]).toEqual([400, 'INVALID_REQUEST_BODY']);
    await files.deleteDirectories([`${home}/tree/a`]);
    expect(await sh('ls tree')).toBe('b\nlink\ntop.txt\n');
  });

  it('searches with a glob: a bare pattern matches names at any depth, a pattern with a slash the relative path', async () => {
    await sh('mkdir -p s/x/y && touch s/1.txt s/x/2.txt s/x/y/3.txt s/x/y/4.md');
    const names = async (pattern: string): Promise<string[]> => (await files.search({ path: `${home}/s`, pattern })).map((e) => e.path.slice(home.length + 3));
    expect(await names('*.txt')).toEqual(['1.txt', 'x/2.txt', 'x/y/3.txt']);
    expect(await names('x/**/*.md')).toEqual(['x/y/4.md']);
    expect(await names('**')).toEqual(['1.txt', 'x/2.txt', 'x/y/3.txt', 'x/y/4.md']);
  });

  it('moves, changes permissions, replaces content (mode kept, counts reported), deletes files', async () => {
    await sh("printf 'host=localhost:8080\\nback=localhost:8080\\n' > conf && chmod 640 conf");
    await files.moveFiles([{ src: `${home}/conf`, dest: `${home}/conf.yaml` }]);
    const counts = await files.replaceContentsDetailed([{ path: `${home}/conf.yaml`, oldContent: 'localhost:8080', newContent: '0.0.0.0:9090' }]);
    expect(counts).toEqual([{ path: `${home}/conf.yaml`, replacedCount: 2 }]);
    expect(await sh('cat conf.yaml; stat -c %a conf.yaml; ls conf 2>&1 | grep -c "No such" || true')).toBe('host=0.0.0.0:9090\nback=0.0.0.0:9090\n640\n1\n');
    await files.setPermissions([{ path: `${home}/conf.yaml`, mode: 600 }]);
    expect(await sh('stat -c %a conf.yaml')).toBe('600\n');
    const plain = await tb.post(`${base()}/files/replace`, { [`${home}/conf.yaml`]: { old: 'nothing-here', new: 'x' } });
    expect([plain.status, plain.text]).toEqual([200, '']);
    await files.deleteFiles([`${home}/conf.yaml`]);
    expect(await sh('ls conf.yaml 2>&1 | grep -c "No such" || true')).toBe('1\n');
  });

  it('refuses with 403 every path that leaves the working directory: by name, absolute, through a symlink', async () => {
    await sh('ln -sfn /etc etc-link && ln -sfn /etc/hostname host-link');
    const refused = [
      () => files.getFileInfo([`${home}/../x`]),
      () => files.getFileInfo(['/etc/hostname']),
      () => files.getFileInfo([`${home}/etc-link/hostname`]),
      () => files.readBytes(`${home}/host-link`),
      () => files.writeFiles([{ path: `${home}/etc-link/evil`, data: 'x' }]),
      () => files.listDirectory({ path: `${home}/etc-link` }),
      () => files.search({ path: '/etc', pattern: '*' }),
      () => files.createDirectories([{ path: `${home}/etc-link/made`, mode: 755 }]),
      () => files.moveFiles([{ src: `${home}/host-link`, dest: '/tmp/moved' }]),
      () => files.setPermissions([{ path: `${home}/host-link`, mode: 777 }]),
      () => files.deleteDirectories([home]),
    ];
    for (const attempt of refused) await expect(attempt()).rejects.toMatchObject({ statusCode: 403 });
    const raw = await tb.request('GET', `${base()}/files/info?path=${encodeURIComponent('/etc/passwd')}`);
    expect(raw.json).toEqual({ code: 'FORBIDDEN', message: expect.stringContaining('outside') });
    expect(await sh('ls /etc/evil /etc/made 2>&1 | grep -c "No such"')).toBe('2\n');
    // A symlink inside is deleted as a link; what it points to stays.
    await files.deleteFiles([`${home}/host-link`]);
    expect(await sh('test -e /etc/hostname && test ! -e host-link && echo ok')).toBe('ok\n');
  });

  it('answers 404 for a missing file and an unknown sandbox, 400 for bad input, in the {code, message} envelope', async () => {
    const missing = await tb.request('GET', `${base()}/files/info?path=${encodeURIComponent(`${home}/nope`)}`);
    expect([missing.status, missing.json.code]).toEqual([404, 'FILE_NOT_FOUND']);
    await expect(files.readBytes(`${home}/nope`)).rejects.toMatchObject({ statusCode: 404 });
    await expect(files.deleteFiles([`${home}/nope`])).rejects.toMatchObject({ statusCode: 404 });
    const unknown = await tb.request('GET', `/sandboxes/no-such-sandbox/execd/files/info?path=x`);
    expect([unknown.status, unknown.json.code]).toEqual([404, 'NOT_FOUND']);
    const bad = [
      await tb.post(`${base()}/directories`, { [`${home}/m`]: { mode: 999 } }),
      await tb.post(`${base()}/files/mv`, { src: 'a' }),
      await tb.post(`${base()}/files/replace`, { [`${home}/x`]: { old: '', new: 'y' } }),
      await tb.request('GET', `${base()}/files/info`),
      await tb.postRaw(`${base()}/files/upload`, 'not multipart', { 'content-type': 'text/plain' }),
    ];
    expect(bad.map((r) => [r.status, r.json.code])).toEqual(Array(5).fill([400, 'INVALID_REQUEST_BODY']));
  });

  it('an ended lease answers 400 and its files are out of reach', async () => {
    const other = await tb.acquire();
    await tb.release(other);
    const r = await tb.request('GET', `/sandboxes/${other}/execd/files/info?path=x`);
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ code: 'INVALID_REQUEST_BODY', message: expect.stringContaining('not in use') });
  });

  async function upload(path: string, content: Buffer): Promise<{ status: number; json: unknown }> {
    const form = new FormData();
    form.append('metadata', new Blob([JSON.stringify({ path })], { type: 'application/json' }), 'metadata');
    form.append('file', new Blob([content]), 'file');
    const res = await fetch(`${tb.url}${base()}/files/upload`, { method: 'POST', body: form });
    return { status: res.status, json: await res.json().catch(() => null) };
  }
});
