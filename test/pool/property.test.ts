/**
 * Property-based tests (fast-check) over the HTTP layer of a real broker (2x2 pool, port 0), on the
 * local backend and, in the "docker" jest project, on Docker.
 *
 * Properties, for random bodies / paths / methods / headers / query strings:
 *  (1) no 5xx but the documented 503 (never a 500), and every >= 400 is JSON with a string `detail`;
 *  (2) the broker never crashes: /health answers after every request;
 *  (3) nothing leaks: after any request but a successful acquire, /health has the same in_use and
 *      total counts as before (a successful acquire, when a random body happens to be valid, is
 *      released here and then the counts must be back too);
 *  (4) execute of random safe shell snippets answers exactly what `bash -c` answers (local backend:
 *      compared with a real `bash --norc -c`; both backends: compared with a model of the snippets).
 * No timing assertions; every property is bounded to a few hundred fast requests.
 */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { startTestBroker, testBackend, withLease, type TestBroker, type HttpResult } from '../helpers/broker';
import { deepNesting, invalidUtf8 } from '../helpers/fuzzInputs';

const RUNS = 150;
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const params = { numRuns: RUNS, seed: SEED, endOnFailure: true } as const;

/** The three pool routes, as poolRoutes.ts matches them. */
const ROUTE = /^\/session\/(?:(acquire)|([^/?#]+)\/(execute|release))\/?(?:\?.*)?$/;

interface Req {
  method: string;
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

describe(`HTTP properties (${testBackend})`, () => {
  let tb: TestBroker;
  let held: string; // a leased session, target of the random execute bodies

  beforeAll(async () => {
    tb = await startTestBroker();
    held = await tb.acquire();
  });
  afterAll(async () => {
    await tb?.close();
  });

  function send(r: Req): Promise<HttpResult> {
    return tb.request(r.method, r.path, r.body, r.headers);
  }

  /** Properties (1)-(3) for one request; `what` names it in failure messages. */
  async function checkRequest(r: Req): Promise<void> {
    const before = await tb.health();
    const res = await send(r);
    const what = `${r.method} ${r.path} -> ${res.status} ${res.text.slice(0, 300)}`;
    // (1) no undocumented 5xx; errors are JSON with a string detail
    if (res.status >= 500 && res.status !== 503) throw new Error(`undocumented ${res.status}: ${what}`);
    if (res.status >= 400 && r.method !== 'HEAD') {
      if (!/application\/json/.test(String(res.headers['content-type']))) throw new Error(`non-JSON error: ${what}`);
      const detail = (res.json as { detail?: unknown } | undefined)?.detail;
      if (typeof detail !== 'string') throw new Error(`error without a string detail: ${what}`);
    }
    // a valid random acquire body: give the session back
    const pathOnly = r.path.split('?')[0];
    const m = ROUTE.exec(r.path);
    if (r.method === 'POST' && m?.[1] && res.status === 200) {
      const id = (res.json as { session_id?: unknown }).session_id;
      if (typeof id !== 'string' || !/^[0-9a-f]{32}$/.test(id)) throw new Error(`acquire 200 without a session_id: ${what}`);
      await tb.release(id);
    }
    // (2) still answering, (3) nothing leaked
    const after = await tb.health();
    if (!after || typeof after.in_use_sessions !== 'number') throw new Error(`/health stopped answering after ${what}`);
    if (after.total_sessions !== before.total_sessions || after.in_use_sessions !== before.in_use_sessions) {
      throw new Error(`sessions changed (${JSON.stringify(before)} -> ${JSON.stringify(after)}) after ${what} [${pathOnly}]`);
    }
  }

  // ---- arbitraries ----------------------------------------------------------------------------

  /** A value of any JSON-able type but a string: a wrong type for `command`. */
  const notString = fc.oneof(
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }),
  );
  const notPositiveNumber = fc.oneof(
    fc.string(),
    fc.boolean(),
    fc.integer({ max: 0 }),
    fc.double({ max: 0, noNaN: true }),
    fc.constant(1e12),
    fc.array(fc.integer(), { maxLength: 2 }),
    fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 }),
  );

  /** Random bodies, as raw bytes/strings. */
  const anyBody: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
    fc.constant(undefined),
    fc.json({ maxDepth: 4 }),
    fc.anything({ maxDepth: 3 }).map((v) => {
      try {
        return JSON.stringify(v) ?? 'undefined';
      } catch {
        return String(v);
      }
    }),
    fc.string({ maxLength: 60 }),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    invalidUtf8('{"files":{"x":"', '"}}'),
    deepNesting,
    fc.constantFrom('{', '}', '[', '"', 'nul', 'NaN', '1e999', '-', '{"a":1,}', '\ufeff{}', ' ', '\n\t'),
  );

  /** Acquire bodies with a field of the wrong type, or files that must be refused. */
  const badAcquire = fc.oneof(
    fc.record({ files: fc.oneof(notString.filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)), fc.string()) }),
    fc.record({ files: fc.dictionary(fc.string({ minLength: 1 }), notString.filter((v) => v !== null), { minKeys: 1, maxKeys: 3 }) }),
    fc.record({
      files: fc.dictionary(
        fc.oneof(
          fc.constantFrom('', '/etc/x', '\\x', '../x', 'a/../../x', '.', 'a/', './', 'a\0b', '..'),
          fc.string().map((s) => '/' + s),
          fc.string().map((s) => '../' + s),
        ),
        fc.constant('aGk='),
        { minKeys: 1, maxKeys: 2 },
      ),
    }),
    fc.record({ files: fc.constant({ a: 'aGk=', 'a/b': 'aGk=' }) }),
    fc.record({ files: fc.dictionary(fc.constantFrom('f', 'g/h'), fc.string({ minLength: 1 }).filter((s) => /[^A-Za-z0-9+/=\s]/.test(s))) }),
    fc.record({ startup_commands: fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.dictionary(fc.string(), fc.string())) }),
    // lists that are NOT all strings, so nothing random is ever run
    fc.record({
      startup_commands: fc
        .array(fc.oneof(fc.string(), notString), { minLength: 1, maxLength: 4 })
        .filter((a) => a.some((c) => typeof c !== 'string')),
    }),
    fc.record({ startup_commands: fc.constant(['echo a\0b']) }),
    fc.record({ files: fc.constant({ ok: 'aGk=' }), startup_commands: fc.constant([1]) }),
  );

  /** Execute bodies that are never valid (so no random text is ever run as a command). */
  const badExecute = fc.oneof(
    fc.record({ command: notString }, { requiredKeys: [] }),
    fc.record({ command: fc.constantFrom('echo a\0b', '\0'), timeout: fc.option(fc.double({ min: 0.1, max: 5, noNaN: true })) }),
    fc.record({ command: fc.constant('true'), timeout: notPositiveNumber }),
    fc.record({ timeout: fc.double() }),
  );
  const isValidExecute = (text: string | Buffer | undefined): boolean => {
    if (text === undefined) return false;
    try {
      const v = JSON.parse(text.toString());
      return v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.command === 'string';
    } catch {
      return false;
    }
  };

  const methods = fc.oneof(
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
    fc.constantFrom('PROPFIND', 'MKCOL', 'SEARCH', 'PURGE', 'LOCK', 'UNLOCK', 'COPY', 'MOVE', 'REPORT', 'NOTIFY', 'QUERY'),
  );

  const segment = fc.oneof(
    fc.constantFrom('session', 'acquire', 'execute', 'release', 'health', 'metrics', '..', '.', '', '%zz', '%', '%2', '%2F', '%2e%2e', '%00', '%C3%28', '%ff'),
    fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', 'undefined', 'null', '0'),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
    fc.string({ unit: 'grapheme', maxLength: 8 }).map(encodeURIComponent),
    fc.stringMatching(/^[A-Za-z0-9\-._~!$&'()*+,;=:@]{1,12}$/),
    fc.integer({ min: 100, max: 4000 }).map((n) => 'a'.repeat(n)),
    fc.stringMatching(/^[0-9a-f]{32}$/),
  );
  const query = fc.oneof(
    fc.constant(''),
    fc.constant('?'),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }).map((d) => '?' + new URLSearchParams(d).toString()),
    fc.constantFrom('?%zz', '?a=%', '?&&', '?a[b]=1', '?__proto__[x]=1', '??', '?#'),
  );
  const path = fc.oneof(
    fc.tuple(fc.array(segment, { maxLength: 5 }), fc.boolean()).map(([segs, slash]) => '/' + segs.join('/') + (slash ? '/' : '')),
    fc.tuple(segment, fc.constantFrom('execute', 'release', 'acquire', 'execute/x', '')).map(([id, tail]) => `/session/${id}/${tail}`),
    fc.constantFrom('/session/acquire', '/session/acquire/', '/health', '/metrics', '/session', '/session/', '//session/acquire'),
  );

  const headerName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/).filter(
    (h) => !['content-length', 'transfer-encoding', 'host', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer'].includes(h.toLowerCase()),
  );
  const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,40}$/).map((s) => s.trim());
  const headers = fc.record(
    {
      'content-type': fc.oneof(
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', ''),
        headerValue,
      ),
      'content-encoding': fc.constantFrom('gzip', 'deflate', 'br', 'identity'),
      authorization: headerValue,
      accept: headerValue,
      extra: fc.dictionary(headerName, headerValue, { maxKeys: 3 }),
    },
    { requiredKeys: [] },
  ).map(({ extra, ...rest }) => ({ ...(extra ?? {}), ...rest }) as Record<string, string>);

  // ---- properties (1)-(3) -----------------------------------------------------------------------

  it('acquire: random bodies and headers never 500, never leak a session', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(anyBody, badAcquire.map((o) => JSON.stringify(o))),
        headers,
        query,
        async (body, hdrs, q) => checkRequest({ method: 'POST', path: '/session/acquire' + q, body, headers: hdrs }),
      ),
      params,
    );
  });

  it('execute on a leased session: random invalid bodies are 4xx JSON and leave the session usable', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(anyBody, badExecute.map((o) => JSON.stringify(o))).filter((b) => !isValidExecute(b)),
        headers,
        query,
        async (body, hdrs, q) => {
          await checkRequest({ method: 'POST', path: `/session/${held}/execute${q}`, body, headers: hdrs });
        },
      ),
      params,
    );
    // still the same, working session
    expect((await tb.exec(held, 'echo still-here')).stdout).toBe('still-here\n');
  });

  it('random methods, paths, query strings and headers never 500 and never touch the pool', async () => {
    const heldPaths = fc
      .tuple(fc.constantFrom('execute', 'execute/', 'release', 'release/', 'x', 'execute/x'), query)
      .map(([tail, q]) => `/session/${held}/${tail}${q}`);
    await fc.assert(
      fc.asyncProperty(
        methods,
        fc.oneof(path, heldPaths),
        query,
        fc.oneof(fc.constant(undefined), fc.constantFrom('', '{}', '[]', '{"command":1}', '{"timeout":-1}', 'junk', '\xff')),
        headers,
        async (method, p, q, body, hdrs) => {
          const full = p.includes('?') ? p : p + q;
          const m = ROUTE.exec(full);
          // never release the held session, and never run a random command in it
          if (method === 'POST' && m?.[2] !== undefined) {
            let id: string | null = null;
            try {
              id = decodeURIComponent(m[2]);
            } catch {
              /* %zz and friends: the broker answers 400 */
            }
            fc.pre(id !== held);
          }
          // GET/HEAD with a body is refused by undici itself
          const sendBody = method === 'GET' || method === 'HEAD' ? undefined : body;
          await checkRequest({ method, path: full, body: sendBody, headers: hdrs });
        },
      ),
      params,
    );
  });

  it('release: random ids answer 4xx JSON and touch no session', async () => {
    await fc.assert(
      fc.asyncProperty(segment.filter((s) => s !== '' && s !== '.' && s !== '..'), fc.option(fc.constantFrom('{}', 'x', '[]')), async (id, body) => {
        fc.pre(id !== held);
        await checkRequest({ method: 'POST', path: `/session/${id}/release`, body: body ?? undefined });
      }),
      params,
    );
  });

  // ---- property (4) ---------------------------------------------------------------------------

  /** A text that survives a UTF-8 round trip and a bash word: no NUL, no lone surrogate. */
  const text = fc
    .oneof(
      fc.string({ maxLength: 20 }),
      fc.string({ unit: 'grapheme', maxLength: 10 }),
      fc.constantFrom('\\', "'", '"', '$HOME', '`x`', '\\n', 'a\nb', '\t', '*', '~', '!', 'é', '😀', '\r\n', '%s', '%'),
    )
    .filter((s) => !s.includes('\0') && Buffer.from(s, 'utf8').toString('utf8') === s);
  const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

  interface Snip {
    cmd: string;
    out: string;
    err: string;
    rc: number;
    exits?: boolean;
  }
  let varN = 0;
  const fmtPiece = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9 .,:;!?()\-_=+]{1,6}$/).map((s) => ({ f: s, o: s })),
    fc.constantFrom({ f: '\\n', o: '\n' }, { f: '\\t', o: '\t' }, { f: '\\\\', o: '\\' }, { f: '%%', o: '%' }, { f: '\\"', o: '"' }),
  );
  const snippet: fc.Arbitrary<Snip> = fc.oneof(
    text.filter((t) => !/^-[neE]+$/.test(t)).map((t) => ({ cmd: `echo ${q(t)}`, out: t + '\n', err: '', rc: 0 })),
    text.filter((t) => !/^-[neE]+$/.test(t)).map((t) => ({ cmd: `echo ${q(t)} >&2`, out: '', err: t + '\n', rc: 0 })),
    text.map((t) => ({ cmd: `printf '%s' ${q(t)}`, out: t, err: '', rc: 0 })),
    fc.array(fmtPiece, { minLength: 1, maxLength: 5 }).map((ps) => ({
      cmd: `printf -- ${q(ps.map((p) => p.f).join(''))}`,
      out: ps.map((p) => p.o).join(''),
      err: '',
      rc: 0,
    })),
    fc.constant({ cmd: 'true', out: '', err: '', rc: 0 }),
    fc.constant({ cmd: 'false', out: '', err: '', rc: 1 }),
    fc.integer({ min: 0, max: 255 }).map((n) => ({ cmd: `(exit ${n})`, out: '', err: '', rc: n })),
    fc.integer({ min: 0, max: 255 }).map((n) => ({ cmd: `exit ${n}`, out: '', err: '', rc: n, exits: true })),
    text.map((t) => {
      const v = `PBT_V${++varN}`;
      return { cmd: `${v}=${q(t)}; printf '%s|' "$${v}"`, out: t + '|', err: '', rc: 0 };
    }),
  );
  /** Snippets joined by `;` or newlines; the model stops at the first top-level `exit`. */
  const script = fc.tuple(fc.array(snippet, { minLength: 1, maxLength: 5 }), fc.constantFrom('; ', '\n')).map(([snips, sep]) => {
    let out = '';
    let err = '';
    let rc = 0;
    for (const s of snips) {
      out += s.out;
      err += s.err;
      rc = s.rc;
      if (s.exits) break;
    }
    return { cmd: snips.map((s) => s.cmd).join(sep), out, err, rc };
  });

  it('execute of random safe snippets answers exactly what bash -c answers', async () => {
    await withLease(tb, (id) =>
      fc.assert(
        fc.asyncProperty(script, async (s) => {
          const r = await tb.exec(id, s.cmd);
          const got = { stdout: r.stdout, stderr: r.stderr, return_code: r.return_code, status: r.status };
          expect(got).toEqual({ stdout: s.out, stderr: s.err, return_code: s.rc, status: s.rc === 0 ? 'Success' : 'Failed' });
          if (testBackend === 'local') {
            const b = spawnSync('bash', ['--norc', '-c', s.cmd], { encoding: 'utf8', timeout: 10_000 });
            expect(got).toEqual({ stdout: b.stdout, stderr: b.stderr, return_code: b.status, status: b.status === 0 ? 'Success' : 'Failed' });
          }
        }),
        params,
      ),
    );
  });
});
