/** Output: stdout and stderr exact and apart, nothing added, lost or mixed between commands. */
import { randomBytes } from 'node:crypto';
import { startTestBroker, eventually, withLease, type TestBroker } from '../helpers/broker';
import { existsOutside } from '../helpers/dockerFaults';

describe('command output framing', () => {
  let tb: TestBroker;
  let id: string;
  beforeAll(async () => {
    // One container, two sessions: a second lease can look at the first one's directory.
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
  });
  beforeEach(async () => {
    id = await tb.acquire();
  });
  afterEach(async () => {
    await tb.release(id);
  });
  afterAll(async () => {
    await tb.close();
  });

  it('adds no newline and loses none', async () => {
    expect(await tb.exec(id, 'printf abc')).toEqual({ status: 'Success', stdout: 'abc', stderr: '', return_code: 0 });
    expect((await tb.exec(id, 'printf "abc\\n\\n\\n"')).stdout).toBe('abc\n\n\n');
    expect((await tb.exec(id, 'printf "\\n"')).stdout).toBe('\n');
    expect(await tb.exec(id, 'printf err >&2')).toEqual({ status: 'Success', stdout: '', stderr: 'err', return_code: 0 });
    expect(await tb.exec(id, '')).toEqual({ status: 'Success', stdout: '', stderr: '', return_code: 0 });
  });

  it('keeps stdout and stderr apart, each in order', async () => {
    const r = await tb.exec(id, 'for i in 1 2 3; do echo "out$i"; echo "err$i" >&2; done');
    expect(r).toEqual({ status: 'Success', stdout: 'out1\nout2\nout3\n', stderr: 'err1\nerr2\nerr3\n', return_code: 0 });
  });

  it('keeps whitespace, carriage returns, tabs and escape sequences byte for byte', async () => {
    const r = await tb.exec(id, "printf '  lead\\r\\n\\ttab\\x1b[31mred\\x1b[0m  trail  '");
    expect(r.stdout).toBe('  lead\r\n\ttab\x1b[31mred\x1b[0m  trail  ');
  });

  it('returns megabytes intact', async () => {
    const r = await tb.exec(id, "head -c 3000000 /dev/zero | tr '\\0' a; head -c 1000000 /dev/zero | tr '\\0' b >&2");
    expect(r.status).toBe('Success');
    expect(r.stdout.length).toBe(3_000_000);
    expect(r.stdout).toBe('a'.repeat(3_000_000));
    expect(r.stderr).toBe('b'.repeat(1_000_000));
    expect(r.truncated).toBeUndefined();
  });

  it('streams a large answer exactly: control bytes (6 JSON characters each), a surrogate pair on a slice edge, over the cap', async () => {
    // 65535 'a' put the emoji's two UTF-16 halves across the 64 Ki-character slice boundary of the
    // streamed answer; the NUL bytes make its JSON ~6x the output. The cap keeps 2 MB of 3.07 MB.
    const small = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_MAX_OUTPUT_BYTES: '2000000' });
    const prefix = "head -c 65535 /dev/zero | tr '\\0' a; printf '\\xf0\\x9f\\x98\\x80'; ";
    try {
      const sid = await small.acquire();
      const r = await small.post(`/session/${sid}/execute`, { command: `${prefix}head -c 3000000 /dev/zero` });
      expect(r.headers['transfer-encoding']).toBe('chunked'); // streamed, not built whole
      const dropped = 65535 + 4 + 3_000_000 - 2_000_000;
      expect(r.json.truncated).toBe(true);
      expect(r.json.stdout).toBe('a'.repeat(65535) + '\u{1F600}' + '\0'.repeat(1_000_000 - 65539) + `\n[... ${dropped} bytes truncated ...]\n` + '\0'.repeat(1_000_000));
      expect(r.json.return_code).toBe(0);
      // Under the cap: all of it, through the same streamed path.
      const all = await small.post(`/session/${sid}/execute`, { command: `${prefix}head -c 1200000 /dev/zero` });
      expect(all.headers['transfer-encoding']).toBe('chunked');
      expect(all.json.stdout).toBe('a'.repeat(65535) + '\u{1F600}' + '\0'.repeat(1_200_000));
      expect(all.json.truncated).toBeUndefined();
    } finally {
      await small.close();
    }
  });

  it('returns a large varied output in order (line numbers 1..200000)', async () => {
    const r = await tb.exec(id, 'seq 1 200000');
    const lines = r.stdout.split('\n');
    expect(lines.length).toBe(200001);
    expect(lines[0]).toBe('1');
    expect(lines[199999]).toBe('200000');
    expect(lines[200000]).toBe('');
    expect(lines.every((l, i) => i === 200000 || l === String(i + 1))).toBe(true);
  });

  it('never breaks the JSON on invalid UTF-8, and keeps valid UTF-8', async () => {
    const r = await tb.post(`/session/${id}/execute`, { command: "printf '\\xff\\xfe'; printf 'ok \\xc3\\xa9 \\xe2\\x9c\\x93' >&2" });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/application\/json/);
    expect(r.json.stdout).toBe('\ufffd\ufffd');
    expect(r.json.stderr).toBe('ok é ✓');
    const cut = await tb.exec(id, "printf 'x\\xe2\\x9c'");
    expect(cut.stdout).toBe('x\ufffd');
  });

  it('output a background job prints between commands is dropped, not given to the next command', async () => {
    // The helper is in the same container: it can watch this session's directory.
    await withLease(tb, async (helper) => {
      await tb.exec(id, '(sleep 0.3; echo late; echo late-err >&2; touch printed) &');
      // Watch from the other session, so no command runs in this one while the job prints.
      await eventually(() => existsOutside(tb, helper, `/tmp/s/${id}/printed`), 20_000, 'job printed');
      expect(await tb.exec(id, 'echo next')).toEqual({ status: 'Success', stdout: 'next\n', stderr: '', return_code: 0 });
    });
  });

  it('a background job that outlives its command does not hold the command open', async () => {
    const r = await tb.exec(id, 'sleep 30 & echo started', 20);
    expect(r).toMatchObject({ status: 'Success', stdout: 'started\n', return_code: 0 });
    // Interactive bash announces the job ("[1] <pid>") on stderr, as in a terminal; nothing else.
    expect(r.stderr).toMatch(/^(\[1\] \d+\n)?$/);
    expect((await tb.exec(id, 'kill %1; wait; echo reaped')).stdout).toBe('reaped\n');
  });

  it('output that looks like markers cannot confuse the framing', async () => {
    for (let i = 0; i < 5; i++) {
      const hex = randomBytes(8).toString('hex');
      const fake = `${hex}s ${hex}e0\\n e0\\n s e 0\\n`;
      const r = await tb.exec(id, `printf '${fake}'; printf '${fake}' >&2; echo done`);
      expect(r).toEqual({ status: 'Success', stdout: fake.replace(/\\n/g, '\n') + 'done\n', stderr: fake.replace(/\\n/g, '\n'), return_code: 0 });
    }
    expect((await tb.exec(id, "printf 'e0\\n'; printf 'e1\\n' >&2; exit 4")).stdout).toBe('e0\n');
  });

  it.each([
    ['__bs', 's', 's'],
    ['__bs 0123456789abcdef', '0123456789abcdefs', '0123456789abcdefs'],
    ['__be', 'e0\n', 'e\n'],
    ['__be 0', '0e0\n', '0e\n'],
    ['__be 0123456789abcdef 7', '0123456789abcdefe7\n', '0123456789abcdefe\n'],
    ['__bs; __be', 'se0\n', 'se\n'],
  ])('a command calling the framing function `%s` gets its output as plain output', async (call, out, err) => {
    const r = await tb.exec(id, `echo before; ${call}; echo after`, 10);
    expect(r).toEqual({ status: 'Success', stdout: `before\n${out}after\n`, stderr: err, return_code: 0 });
    expect(await tb.exec(id, 'echo next')).toEqual({ status: 'Success', stdout: 'next\n', stderr: '', return_code: 0 });
  });

  it('answers 409 (or runs both apart) when two executes hit one session at once', async () => {
    await tb.exec(id, 'X=shared');
    const [a, b] = await Promise.all([
      tb.post(`/session/${id}/execute`, { command: 'sleep 0.5; echo "first $X"' }),
      tb.post(`/session/${id}/execute`, { command: 'echo "second $X"' }),
    ]);
    const statuses = [a.status, b.status].sort();
    if (statuses[0] === 200 && statuses[1] === 200) {
      expect(a.json.stdout).toBe('first shared\n');
      expect(b.json.stdout).toBe('second shared\n');
    } else {
      expect(statuses).toEqual([200, 409]);
      const ok = a.status === 200 ? a : b;
      const busy = a.status === 409 ? a : b;
      expect(ok.json.stdout).toBe(ok === a ? 'first shared\n' : 'second shared\n');
      expect(busy.json.detail).toMatch(/already executing/);
    }
    expect((await tb.exec(id, 'echo "after $X"')).stdout).toBe('after shared\n');
  });

  it('a burst of concurrent executes on one session never mixes outputs', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => tb.post(`/session/${id}/execute`, { command: `sleep 0.1; echo "run${i}"; echo "err${i}" >&2` })),
    );
    let ran = 0;
    results.forEach((r, i) => {
      expect([200, 409]).toContain(r.status);
      if (r.status === 200) {
        ran++;
        expect(r.json).toEqual({ status: 'Success', stdout: `run${i}\n`, stderr: `err${i}\n`, return_code: 0 });
      }
    });
    expect(ran).toBeGreaterThanOrEqual(1);
  });
});
