/**
 * Needs no backend:
 * @backend any
 */
import { BadRequestError, PayloadTooLargeError } from '../../src/common/errors';
import { NO_USAGE, commandFacts } from '../../src/core/session/commandFacts';
import { parseAcquire, parseExecute } from '../../src/api/pool/poolInput';
import { checkCommand, checkRelativePath, type CommandLimits } from '../../src/core/session/sessionInput';
import { executeResponse, pythonFloat } from '../../src/api/pool/poolRoutes';
import type { ExecResult } from '../../src/core/session/bashSession';

const limits: CommandLimits = { defaultTimeoutSeconds: 30, maxTimeoutSeconds: 3600, maxCommandBytes: 1000 };
const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Asserts `fn` throws a BadRequestError (400) whose message contains every one of `mentions`. */
function expectBadRequest(fn: () => unknown, ...mentions: string[]): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(BadRequestError);
  const err = caught as BadRequestError;
  expect(err.kind).toBe('invalid');
  for (const m of mentions) expect(err.message).toContain(m);
}

describe('parseExecute', () => {
  it("accepts the pool API's body", () => {
    expect(parseExecute({ command: 'echo hello && pwd', timeout: 30.0 }, limits)).toEqual({ command: 'echo hello && pwd', timeoutSeconds: 30, requestId: null, facts: null, release: false });
  });

  it('defaults the timeout when it is missing or null, and keeps fractions', () => {
    expect(parseExecute({ command: 'pwd && echo $MY_VAR' }, limits)).toEqual({ command: 'pwd && echo $MY_VAR', timeoutSeconds: 30, requestId: null, facts: null, release: false });
    expect(parseExecute({ command: 'x', timeout: null }, limits).timeoutSeconds).toBe(30);
    expect(parseExecute({ command: 'x', timeout: 0.25 }, limits).timeoutSeconds).toBe(0.25);
    expect(parseExecute({ command: 'x', timeout: 3600 }, limits).timeoutSeconds).toBe(3600);
  });

  it('accepts an empty command, unicode and control characters other than NUL, and ignores unknown fields', () => {
    expect(parseExecute({ command: '' }, limits).command).toBe('');
    expect(parseExecute({ command: "échø '✓'\t\x1b[0m\n", extra: 1 }, limits).command).toBe("échø '✓'\t\x1b[0m\n");
  });

  it.each([
    ['no body', undefined],
    ['null', null],
    ['an array', [{ command: 'x' }]],
    ['a string', 'echo hi'],
    ['a number', 5],
  ])('rejects %s as the body', (_name, body) => {
    expectBadRequest(() => parseExecute(body, limits), 'Request body must be a JSON object');
  });

  it.each([
    ['missing', {}],
    ['a number', { command: 5 }],
    ['null', { command: null }],
    ['an array', { command: ['ls'] }],
    ['an object', { command: { cmd: 'ls' } }],
    ['a boolean', { command: true }],
  ])("rejects 'command' that is %s", (_name, body) => {
    expectBadRequest(() => parseExecute(body, limits), "'command'");
  });

  it("rejects a NUL byte in 'command'", () => {
    expectBadRequest(() => parseExecute({ command: 'echo a\0b' }, limits), "'command'", 'NUL');
  });

  it("rejects an oversized 'command' with 413, naming the field and the setting", () => {
    expect(() => parseExecute({ command: 'x'.repeat(1000) }, limits)).not.toThrow();
    const multibyte = 'é'.repeat(501); // 1002 bytes, 501 characters: the limit is in bytes
    for (const command of ['x'.repeat(1001), multibyte]) {
      let caught: unknown;
      try {
        parseExecute({ command }, limits);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(PayloadTooLargeError);
      expect((caught as PayloadTooLargeError).kind).toBe('too_large');
      expect((caught as Error).message).toContain("'command'");
      expect((caught as Error).message).toContain('BROKER_MAX_COMMAND_BYTES');
    }
  });

  it.each([
    ['a string', '30'],
    ['a boolean', true],
    ['an array', [30]],
    ['an object', { seconds: 30 }],
    ['zero', 0],
    ['negative', -1],
    ['above the maximum', 3600.5],
  ])("rejects 'timeout' that is %s", (_name, timeout) => {
    expectBadRequest(() => parseExecute({ command: 'x', timeout }, limits), "'timeout'");
  });

  it("rejects non-finite 'timeout' values (reachable from other callers than JSON)", () => {
    for (const timeout of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expectBadRequest(() => parseExecute({ command: 'x', timeout }, limits), "'timeout'");
    }
  });
});

describe('parseAcquire', () => {
  it("accepts the pool API's body (files + startup_commands)", () => {
    const r = parseAcquire(
      {
        files: { 'script.py': 'cHJpbnQoImhlbGxvIik=', 'data/input.txt': 'c29tZSBkYXRh' },
        startup_commands: ['pip install numpy', 'cd /tmp/work'],
      },
      limits,
    );
    expect(r.startupCommands).toEqual(['pip install numpy', 'cd /tmp/work']);
    expect(r.files.map((f) => [f.path, f.content.toString()])).toEqual([
      ['script.py', 'print("hello")'],
      ['data/input.txt', 'some data'],
    ]);
  });

  it('accepts the quick example {} , an empty body, and null fields', () => {
    const empty = { files: [], startupCommands: [], requestId: null, leaseTtlMs: undefined, acquireTimeoutMs: undefined, fingerprint: expect.any(Function) };
    expect(parseAcquire({}, limits)).toEqual(empty);
    expect(parseAcquire(undefined, limits)).toEqual(empty);
    expect(parseAcquire({ files: null, startup_commands: null }, limits)).toEqual(empty);
    expect(parseAcquire({ files: {}, startup_commands: [] }, limits)).toEqual(empty);
  });

  it('decodes base64 exactly: binary, empty, unpadded, with line breaks (base64.encodebytes)', () => {
    const binary = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x80]);
    const long = 'x'.repeat(100);
    const r = parseAcquire(
      {
        files: {
          'bin.dat': binary.toString('base64'),
          empty: '',
          unpadded: 'YWI', // "ab"
          'wrapped.txt': b64(long).replace(/(.{76})/g, '$1\n') + '\n',
        },
      },
      limits,
    );
    const byPath = Object.fromEntries(r.files.map((f) => [f.path, f.content]));
    expect(byPath['bin.dat'].equals(binary)).toBe(true);
    expect(byPath.empty.length).toBe(0);
    expect(byPath.unpadded.toString()).toBe('ab');
    expect(byPath['wrapped.txt'].toString()).toBe(long);
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a string', '{}'],
  ])('rejects %s as the body', (_name, body) => {
    expectBadRequest(() => parseAcquire(body, limits), 'Request body must be a JSON object');
  });

  it.each([
    ['an array', ['a.txt']],
    ['a string', 'a.txt'],
    ['a number', 1],
    ['a boolean', true],
  ])("rejects 'files' that is %s", (_name, files) => {
    expectBadRequest(() => parseAcquire({ files }, limits), "'files'");
  });

  it.each([
    ['a number', 5, 'base64 string'],
    ['null', null, 'base64 string'],
    ['an object', { data: 'YQ==' }, 'base64 string'],
    ['not base64', 'not base64!', 'not valid base64'],
    ['URL-safe base64', 'a-_b', 'not valid base64'],
    ['a lone trailing character', 'YWJjZ', 'not valid base64'],
    ['padding in the middle', 'YQ==YQ==', 'not valid base64'],
  ])('rejects file content that is %s', (_name, content, what) => {
    expectBadRequest(() => parseAcquire({ files: { 'a.txt': content } }, limits), "files['a.txt']", what);
  });

  it('rejects unsafe file paths, naming the path', () => {
    expectBadRequest(() => parseAcquire({ files: { '../escape': b64('x') } }, limits), "'../escape'");
    expectBadRequest(() => parseAcquire({ files: { '/etc/passwd': b64('x') } }, limits), "'/etc/passwd'");
  });

  it('rejects two keys for one path and a path that is both file and directory', () => {
    expectBadRequest(() => parseAcquire({ files: { a: b64('1'), './a': b64('2') } }, limits), "'a'", 'twice');
    expectBadRequest(() => parseAcquire({ files: { 'd/f': b64('1'), d: b64('2') } }, limits), "'d'", "'d/f'");
    expectBadRequest(() => parseAcquire({ files: { 'd/e/f': b64('1'), 'd/e': b64('2') } }, limits), "'d/e'");
    expect(parseAcquire({ files: { 'd/f': b64('1'), 'd/g': b64('2'), de: b64('3') } }, limits).files).toHaveLength(3);
  });

  it.each([
    ['a string', 'cd /tmp', "'startup_commands'"],
    ['an object', { 0: 'ls' }, "'startup_commands'"],
    ['a number', 3, "'startup_commands'"],
  ])("rejects 'startup_commands' that is %s", (_name, startup_commands, field) => {
    expectBadRequest(() => parseAcquire({ startup_commands }, limits), field);
  });

  it('rejects a bad startup command, naming its index', () => {
    expectBadRequest(() => parseAcquire({ startup_commands: ['ls', 5] }, limits), "'startup_commands[1]'");
    expectBadRequest(() => parseAcquire({ startup_commands: [null] }, limits), "'startup_commands[0]'");
    expectBadRequest(() => parseAcquire({ startup_commands: ['ok', 'ok', 'a\0b'] }, limits), "'startup_commands[2]'", 'NUL');
    expect(() => parseAcquire({ startup_commands: ['x'.repeat(1001)] }, limits)).toThrow(PayloadTooLargeError);
  });
});

describe('checkRelativePath', () => {
  it.each([
    ['a.txt', 'a.txt'],
    ['data/input.txt', 'data/input.txt'],
    ['./a.txt', 'a.txt'],
    ['a//b', 'a/b'],
    ['a/./b', 'a/b'],
    ['.hidden', '.hidden'],
    ['...', '...'],
    ['..foo/bar..', '..foo/bar..'],
    ['with space/ünïcode ✓.txt', 'with space/ünïcode ✓.txt'],
  ])('accepts %j as %j', (key, want) => {
    expect(checkRelativePath(key)).toBe(want);
  });

  it.each([
    ['', 'must not be empty'],
    ['/etc/passwd', 'must be relative'],
    ['\\server\\share', 'must be relative'],
    ['..', "must not contain '..'"],
    ['../x', "must not contain '..'"],
    ['a/../b', "must not contain '..'"],
    ['a/b/..', "must not contain '..'"],
    ['.', 'does not name a file'],
    ['./', 'does not name a file'],
    ['a/', 'does not name a file'],
    ['a/b/', 'does not name a file'],
    ['a\0b', 'NUL'],
  ])('rejects %j (%s)', (key, why) => {
    expectBadRequest(() => checkRelativePath(key), why);
  });
});

describe('pythonFloat', () => {
  it.each([
    [5, '5.0'],
    [0.5, '0.5'],
    [2.25, '2.25'],
    [30, '30.0'],
    [1, '1.0'],
    [0.1, '0.1'],
    [86400, '86400.0'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [1.5e-5, '1.5e-05'],
    [1e16, '1e+16'],
    [1e15, '1000000000000000.0'],
  ])('%p -> %p (what Python str() prints)', (value, want) => {
    expect(pythonFloat(value)).toBe(want);
  });
});

describe('executeResponse', () => {
  const facts = commandFacts(NO_USAGE, NO_USAGE, { status: 0, interrupted: false, durationMs: 1, droppedStdout: 0, droppedStderr: 0 });
  const result = (over: Partial<ExecResult>): ExecResult => ({ stdout: '', stderr: '', returnCode: 0, timedOut: false, truncated: false, facts, ...over });
  /** What a pool API client reads of an answer: its four fields (and truncated when true). */
  const spec = (body: Record<string, unknown>): Record<string, unknown> => {
    const { status, stdout, stderr, return_code: rc, truncated } = body;
    return { status, stdout, stderr, return_code: rc, ...(truncated ? { truncated } : {}) };
  };

  it('shapes a success and a failure as the pool API does', () => {
    expect(spec(executeResponse(result({ stdout: 'hello\n/tmp/work\n' }), 30))).toEqual({ status: 'Success', stdout: 'hello\n/tmp/work\n', stderr: '', return_code: 0 });
    expect(spec(executeResponse(result({ returnCode: 1 }), 30))).toEqual({ status: 'Failed', stdout: '', stderr: '', return_code: 1 });
    expect(executeResponse(result({ returnCode: 2, stderr: 'bash: x: command not found\n' }), 30).stderr).toBe('bash: x: command not found\n');
  });

  it('a timeout with empty stderr is exactly the pool API message', () => {
    expect(spec(executeResponse(result({ timedOut: true, returnCode: -1 }), 5))).toEqual({
      status: 'Failed',
      stdout: '',
      stderr: 'Command timed out after 5.0 seconds',
      return_code: -1,
    });
    expect(executeResponse(result({ timedOut: true, returnCode: -1 }), 0.5).stderr).toBe('Command timed out after 0.5 seconds');
    expect(executeResponse(result({ timedOut: true, returnCode: -1 }), 2.25).stderr).toBe('Command timed out after 2.25 seconds');
  });

  it('a timeout after some stderr puts the message on its own line', () => {
    expect(executeResponse(result({ timedOut: true, returnCode: -1, stderr: 'partial' }), 5).stderr).toBe('partial\nCommand timed out after 5.0 seconds');
    expect(executeResponse(result({ timedOut: true, returnCode: -1, stderr: 'line\n' }), 5).stderr).toBe('line\nCommand timed out after 5.0 seconds');
    expect(executeResponse(result({ timedOut: true, returnCode: -1, stdout: 'out' }), 1).stdout).toBe('out');
  });

  it('is exactly the pool API answer unless the facts are asked for; they come after its fields', () => {
    expect(spec(executeResponse(result({ truncated: true }), 30))).toEqual({ status: 'Success', stdout: '', stderr: '', return_code: 0, truncated: true });
    expect(executeResponse(result({}), 30)).toEqual({ status: 'Success', stdout: '', stderr: '', return_code: 0 });
    expect(executeResponse(result({}), 30, true)).toEqual({
      status: 'Success',
      stdout: '',
      stderr: '',
      return_code: 0,
      timed_out: false,
      interrupted: false,
      signal: null,
      oom_killed: null,
      duration_ms: 1,
      cpu_ms: null,
      max_rss_kb: null,
      truncated: false,
      truncated_bytes: { stdout: 0, stderr: 0 },
    });
  });
});

/** The refusal `fn` throws, as a client reads it: its class and its words; `accepted` when it throws none. */
function outcome(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (err) {
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
}

describe("the pool contract's command and the session's checkCommand (workspaces, execd, BROKER_POOLS)", () => {
  it.each([
    ['a string', 'echo hi'],
    ['empty', ''],
    ['a number', 5],
    ['null', null],
    ['an array', ['ls']],
    ['with a NUL byte', 'a\0b'],
    ['at the size limit', 'é'.repeat(500)],
    ['one byte beyond it', `x${'é'.repeat(500)}`],
  ])('refuse or accept a command that is %s alike, in the same words', (_name, command) => {
    const session = outcome(() => checkCommand(command, 'command', limits));
    expect(outcome(() => parseExecute({ command }, limits))).toBe(session);
    expect(outcome(() => parseAcquire({ startup_commands: ['true', command] }, limits))).toBe(outcome(() => checkCommand(command, 'startup_commands[1]', limits)));
    expect(session === 'accepted').toBe(typeof command === 'string' && !command.includes('\0') && Buffer.byteLength(command) <= limits.maxCommandBytes);
  });
});
